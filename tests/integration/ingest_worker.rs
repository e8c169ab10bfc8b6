//! `memvault ingest-worker`: the server binary re-executed as the extraction worker of
//! memvault-ingest, under the default process limits (the binary's allocator and size
//! included), on real files.

use std::path::{Path, PathBuf};

use memvault_ingest::worker::{Worker, WorkerError, WorkerLimits};
use memvault_ingest::{Kind, Limits};

fn files() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/files")
}

fn worker(limits: WorkerLimits) -> Worker {
    Worker::new(
        env!("CARGO_BIN_EXE_memvault"),
        vec!["ingest-worker".to_owned()],
        limits,
    )
}

#[test]
fn the_binary_extracts_real_files_in_a_child_under_the_default_limits() {
    let worker = worker(WorkerLimits::default());
    for (name, kind, phrase) in [
        ("par-known-paragraphs.docx", Kind::Docx, "normal paragraph"),
        (
            "hare-and-tortoise.eml",
            Kind::Eml,
            "slow but steady wins the race",
        ),
        ("pigments.csv", Kind::Csv, "vinegar fumes"),
    ] {
        let bytes = std::fs::read(files().join(name)).expect("a shared data file");
        let extracted = worker
            .extract(&bytes, Some(name), &Limits::default())
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(extracted.kind, kind, "{name}");
        assert!(!extracted.text.trim().is_empty(), "{name}");
        assert!(
            extracted.text.to_lowercase().contains(phrase),
            "{name}: {}",
            extracted.text
        );
        // The same as in process.
        let in_process = memvault_ingest::extract(
            memvault_ingest::sniff(&bytes, Some(name)),
            &bytes,
            &Limits::default(),
        )
        .expect("in-process extraction");
        assert_eq!(extracted, in_process, "{name}");
    }
}

#[test]
fn a_file_the_binary_cannot_read_fails_alone_with_its_reason() {
    let worker = worker(WorkerLimits::default());
    let bytes = std::fs::read(files().join("test-slides.pptx")).expect("a shared data file");
    let truncated = &bytes[..bytes.len() / 3];
    match worker.extract(truncated, Some("test-slides.pptx"), &Limits::default()) {
        Err(WorkerError::Failed(error)) => assert!(!error.to_string().is_empty()),
        other => panic!("expected a clean failure, got {other:?}"),
    }
    // A PDF is read in the worker too: with no engine given, by the pure-Rust fallback.
    let pdf = std::fs::read(files().join("minimal-document.pdf")).expect("a shared data file");
    let read = worker
        .extract(&pdf, Some("minimal-document.pdf"), &Limits::default())
        .expect("a PDF read by the fallback");
    assert_eq!(read.kind, Kind::Pdf);
    assert!(!read.text.trim().is_empty(), "{read:?}");
    // And the next file is read as usual.
    let eml = std::fs::read(files().join("hare-and-tortoise.eml")).expect("a shared data file");
    worker
        .extract(&eml, Some("hare-and-tortoise.eml"), &Limits::default())
        .expect("the next file");
}
