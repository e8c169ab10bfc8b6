//! Extraction in a child process, through the test worker binary (`memvault-ingest-worker`,
//! `serve_worker` plus `--fault NAME`): real files give what they give in process; a clean
//! failure comes back whole; a hang, a CPU spin, a runaway allocation, a panic, an abort, a
//! stack overflow and garbage on stdout each fail that one call with a reason that names
//! it; the next calls work. Time bounds are generous: they check that a child is stopped,
//! not how fast.

#![cfg(unix)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use memvault_ingest::worker::{Worker, WorkerError, WorkerLimits};
use memvault_ingest::{extract, sniff, Extracted, IngestError, Kind, Limits};

const WORKER: &str = env!("CARGO_BIN_EXE_memvault-ingest-worker");

fn files_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/files")
}

fn read_real_file(name: &str) -> Option<Vec<u8>> {
    let path = files_dir().join(name);
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(error) => {
            println!("skipped: {}: {error}", path.display());
            None
        }
    }
}

fn worker(limits: WorkerLimits) -> Worker {
    Worker::new(WORKER, Vec::new(), limits)
}

fn faulty_worker(fault: &str, limits: WorkerLimits) -> Worker {
    Worker::new(WORKER, vec!["--fault".to_owned(), fault.to_owned()], limits)
}

fn in_process(bytes: &[u8], filename: &str) -> Result<Extracted, IngestError> {
    extract(sniff(bytes, Some(filename)), bytes, &Limits::default())
}

fn crash_reason(result: Result<Extracted, WorkerError>) -> String {
    match result {
        Err(WorkerError::Crashed { reason }) => reason,
        other => panic!("expected a crash, got {other:?}"),
    }
}

#[test]
fn real_files_give_in_the_worker_what_they_give_in_process() {
    let worker = worker(WorkerLimits::default());
    for name in [
        "par-known-paragraphs.docx",
        "hare-and-tortoise.eml",
        "test-slides.pptx",
        "any-sheets.xlsx",
        "libre-office-writer.odt",
        "skerryvane-lighthouse.html",
        "pigments.csv",
        "ferry-timetable.json",
        "aldermoor-field-notes.md",
    ] {
        let Some(bytes) = read_real_file(name) else {
            continue;
        };
        let expected = in_process(&bytes, name).unwrap_or_else(|error| panic!("{name}: {error}"));
        let extracted = worker
            .extract(&bytes, Some(name), &Limits::default())
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(!extracted.text.is_empty(), "{name}");
        assert_eq!(extracted, expected, "{name}");
    }
}

#[test]
fn the_extraction_limits_travel_to_the_worker() {
    let Some(bytes) = read_real_file("par-known-paragraphs.docx") else {
        return;
    };
    let limits = Limits {
        max_chars: 20,
        ..Limits::default()
    };
    let extracted = worker(WorkerLimits::default())
        .extract(&bytes, Some("par-known-paragraphs.docx"), &limits)
        .unwrap();
    assert!(extracted.truncated);
    // At most 20: trailing whitespace is trimmed after the cut.
    assert!(extracted.text.chars().count() <= 20, "{:?}", extracted.text);
    assert_eq!(extracted, extract(Kind::Docx, &bytes, &limits).unwrap());
}

#[test]
fn deferred_attachments_come_back_byte_for_byte() {
    let pdf: Vec<u8> = b"%PDF-1.4\n"
        .iter()
        .copied()
        .chain((0..=255_u8).cycle().take(3000))
        .collect();
    let mail = format!(
        "From: a@example.com\r\nTo: b@example.com\r\nSubject: scan\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"b\"\r\n\r\n--b\r\n\
         Content-Type: text/plain\r\n\r\nthe scan is attached\r\n--b\r\n\
         Content-Type: application/pdf; name=\"scan.pdf\"\r\n\
         Content-Disposition: attachment; filename=\"scan.pdf\"\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n{}\r\n--b--\r\n",
        base64_lines(&pdf)
    );
    let expected = in_process(mail.as_bytes(), "scan.eml").unwrap();
    assert_eq!(expected.deferred.len(), 1, "{expected:?}");
    let extracted = worker(WorkerLimits::default())
        .extract(mail.as_bytes(), Some("scan.eml"), &Limits::default())
        .unwrap();
    assert_eq!(extracted, expected);
    assert_eq!(extracted.deferred[0].bytes, pdf);
    assert_eq!(extracted.deferred[0].kind, Kind::Pdf);
}

/// Base64 in 76-character lines, as mail carries it (a tiny encoder: the test does not
/// depend on the crate's base64 dependency).
fn base64_lines(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut encoded = String::new();
    for chunk in bytes.chunks(3) {
        let value = chunk
            .iter()
            .enumerate()
            .fold(0_u32, |value, (index, byte)| {
                value | u32::from(*byte) << (16 - 8 * index)
            });
        for index in 0..4 {
            if index <= chunk.len() {
                let sextet = (value >> (18 - 6 * index)) & 63;
                encoded.push(char::from(ALPHABET[sextet as usize]));
            } else {
                encoded.push('=');
            }
        }
    }
    encoded
        .as_bytes()
        .chunks(76)
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect::<Vec<_>>()
        .join("\r\n")
}

#[test]
fn a_broken_file_fails_cleanly_with_the_in_process_reason() {
    let Some(bytes) = read_real_file("par-known-paragraphs.docx") else {
        return;
    };
    let truncated = &bytes[..bytes.len() / 2];
    let expected = in_process(truncated, "broken.docx").unwrap_err();
    let error = worker(WorkerLimits::default())
        .extract(truncated, Some("broken.docx"), &Limits::default())
        .unwrap_err();
    let WorkerError::Failed(ingest_error) = &error else {
        panic!("expected a clean failure, got {error:?}")
    };
    assert_eq!(ingest_error, &expected);
    assert_eq!(error.to_string(), expected.to_string());
    assert_eq!(error.code(), expected.code());

    let empty = worker(WorkerLimits::default())
        .extract(b"", None, &Limits::default())
        .unwrap_err();
    assert!(
        matches!(empty, WorkerError::Failed(IngestError::Empty)),
        "{empty:?}"
    );
}

#[test]
fn a_hang_is_killed_at_the_wall_clock() {
    let wall_clock = Duration::from_secs(2);
    let started = Instant::now();
    let result = faulty_worker(
        "hang",
        WorkerLimits {
            wall_clock,
            ..WorkerLimits::default()
        },
    )
    .extract(b"hello", None, &Limits::default());
    let elapsed = started.elapsed();
    assert!(
        matches!(result, Err(WorkerError::TimedOut { after }) if after == wall_clock),
        "{result:?}"
    );
    assert!(elapsed >= wall_clock, "{elapsed:?}");
    assert!(
        elapsed < wall_clock + Duration::from_secs(30),
        "{elapsed:?}"
    );
}

#[test]
fn a_cpu_spin_is_stopped_by_the_cpu_limit() {
    let result = faulty_worker(
        "spin",
        WorkerLimits {
            cpu_seconds: 1,
            // Far above one CPU second even on a loaded machine: the CPU limit must act.
            wall_clock: Duration::from_secs(120),
            ..WorkerLimits::default()
        },
    )
    .extract(b"hello", None, &Limits::default());
    let error = result.unwrap_err();
    assert!(
        matches!(error, WorkerError::CpuTimeExceeded { limit_seconds: 1 }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "extraction used more than 1 s of CPU time and was stopped"
    );
}

#[test]
fn a_runaway_allocation_is_stopped_by_the_memory_limit() {
    let memory_bytes = 256 * 1024 * 1024;
    let result = faulty_worker(
        "allocate",
        WorkerLimits {
            memory_bytes,
            ..WorkerLimits::default()
        },
    )
    .extract(b"hello", None, &Limits::default());
    let error = result.unwrap_err();
    assert!(
        matches!(error, WorkerError::OutOfMemory { limit_bytes } if limit_bytes == memory_bytes),
        "{error:?}"
    );
    assert!(error.to_string().contains("memory"), "{error}");
}

#[test]
fn a_file_larger_than_the_memory_limit_is_stopped_too() {
    // The file's own bytes count: the child reads them after it set its limit.
    let bytes = vec![b'a'; 96 * 1024 * 1024];
    let result = worker(WorkerLimits {
        memory_bytes: 64 * 1024 * 1024,
        ..WorkerLimits::default()
    })
    .extract(&bytes, Some("big.txt"), &Limits::default());
    assert!(
        matches!(result, Err(WorkerError::OutOfMemory { .. })),
        "{:?}",
        result.map(|extracted| extracted.text.len())
    );
}

#[test]
fn a_panic_an_abort_and_a_stack_overflow_each_fail_with_a_reason() {
    let limits = WorkerLimits::default();
    let panic_reason = crash_reason(faulty_worker("panic", limits.clone()).extract(
        b"x",
        None,
        &Limits::default(),
    ));
    assert!(
        panic_reason.contains("panicked: injected panic"),
        "{panic_reason}"
    );

    let abort_reason = crash_reason(faulty_worker("abort", limits.clone()).extract(
        b"x",
        None,
        &Limits::default(),
    ));
    assert!(abort_reason.contains("SIGABRT"), "{abort_reason}");

    let overflow_reason =
        crash_reason(faulty_worker("overflow", limits).extract(b"x", None, &Limits::default()));
    assert!(
        overflow_reason.contains("stack overflow"),
        "{overflow_reason}"
    );
}

#[test]
fn calls_after_failures_still_work() {
    let Some(bytes) = read_real_file("hare-and-tortoise.eml") else {
        return;
    };
    let expected = in_process(&bytes, "hare-and-tortoise.eml").unwrap();
    let short = WorkerLimits {
        wall_clock: Duration::from_secs(2),
        ..WorkerLimits::default()
    };
    for fault in ["panic", "abort", "hang", "garbage"] {
        let result = faulty_worker(fault, short.clone()).extract(&bytes, None, &Limits::default());
        assert!(result.is_err(), "{fault}");
    }
    let worker = worker(WorkerLimits::default());
    for call in 0..10 {
        let extracted = worker
            .extract(&bytes, Some("hare-and-tortoise.eml"), &Limits::default())
            .unwrap_or_else(|error| panic!("call {call}: {error}"));
        assert_eq!(extracted, expected, "call {call}");
    }
}

#[test]
fn garbage_on_stdout_is_a_protocol_error() {
    let error = faulty_worker("garbage", WorkerLimits::default())
        .extract(b"hello", None, &Limits::default())
        .unwrap_err();
    let WorkerError::Protocol(reason) = &error else {
        panic!("expected a protocol error, got {error:?}")
    };
    assert!(reason.contains("this is not an answer"), "{reason}");
}

#[test]
fn impossible_limits_are_refused_and_a_missing_program_cannot_spawn() {
    let refused = worker(WorkerLimits {
        cpu_seconds: 0,
        ..WorkerLimits::default()
    })
    .extract(b"hello", None, &Limits::default())
    .unwrap_err();
    assert!(
        matches!(&refused, WorkerError::Refused { reason } if reason.contains("positive")),
        "{refused:?}"
    );

    let missing = Worker::new(
        "/nonexistent/memvault-ingest-worker",
        Vec::new(),
        WorkerLimits::default(),
    )
    .extract(b"hello", None, &Limits::default())
    .unwrap_err();
    assert!(matches!(missing, WorkerError::Spawn(_)), "{missing:?}");
    assert_eq!(missing.code(), "worker_spawn");
}
