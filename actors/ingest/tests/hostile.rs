//! Hostile input: random, truncated and mutated bytes of every real file and of built
//! documents never panic (a caught parser panic counts as one), and a zip bomb fails with
//! the decompression limit as its reason.

use std::io::Write;
use std::path::PathBuf;

use memvault_ingest::{extract, sniff, IngestError, Kind, Limit, Limits};
use proptest::prelude::*;

/// A small deterministic generator, so a failure names a reproducible seed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }
}

/// Sniffs and extracts `bytes` as what they sniff as and as every extractable kind; fails
/// the test on a panic, caught or not.
fn assert_no_panic(label: &str, bytes: &[u8]) {
    let limits = Limits {
        max_decompressed_bytes: 8 * 1024 * 1024,
        ..Limits::default()
    };
    let sniffed = sniff(bytes, Some(label));
    let kinds = [
        sniffed,
        Kind::Docx,
        Kind::Pptx,
        Kind::Xlsx,
        Kind::Xls,
        Kind::Ods,
        Kind::Odt,
        Kind::Odp,
        Kind::Epub,
        Kind::Eml,
        Kind::Html,
        Kind::Rtf,
        Kind::Json,
        Kind::Csv,
    ];
    for kind in kinds {
        if let Err(IngestError::ParserPanicked { kind }) = extract(kind, bytes, &limits) {
            panic!("{label}: the {kind} parser panicked");
        }
    }
}

fn real_files() -> Vec<(String, Vec<u8>)> {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/files");
    let Ok(entries) = std::fs::read_dir(&directory) else {
        println!("no real files at {}", directory.display());
        return Vec::new();
    };
    let mut files: Vec<(String, Vec<u8>)> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let bytes = std::fs::read(entry.path()).ok()?;
            Some((name, bytes))
        })
        .filter(|(name, bytes)| name != "README.md" && bytes.len() < 2_000_000)
        .collect();
    files.sort();
    files
}

#[test]
fn truncated_and_mutated_real_files_never_panic() {
    let mut random = XorShift(0x9E37_79B9_7F4A_7C15);
    for (name, bytes) in real_files() {
        assert_no_panic(&name, &bytes);
        for step in 1..12 {
            let cut = bytes.len() * step / 12;
            assert_no_panic(
                &format!("{name} cut at {cut}"),
                bytes.get(..cut).unwrap_or_default(),
            );
        }
        for round in 0..12 {
            let mut mutated = bytes.clone();
            for _ in 0..1 + round * 4 {
                let position = random.below(mutated.len());
                if let Some(byte) = mutated.get_mut(position) {
                    *byte = random.next() as u8;
                }
            }
            assert_no_panic(&format!("{name} mutation {round}"), &mutated);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        assert_no_panic("random", &bytes);
    }

    #[test]
    fn random_text_never_panics(text in "[ -~\\n\\t{}<>\\\\&;:#|,]{0,400}") {
        assert_no_panic("random.txt", text.as_bytes());
        let mail = format!("From: a@b.c\r\nSubject: s\r\nMIME-Version: 1.0\r\n\r\n{text}");
        assert_no_panic("random.eml", mail.as_bytes());
        let rtf = format!("{{\\rtf1 {text}");
        assert_no_panic("random.rtf", rtf.as_bytes());
    }
}

fn zip_with_entry(name: &str, content: &[u8]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    writer.start_file("[Content_Types].xml", options).unwrap();
    writer.write_all(b"<Types/>").unwrap();
    writer.start_file(name, options).unwrap();
    writer.write_all(content).unwrap();
    writer.finish().unwrap().into_inner()
}

#[test]
fn a_zip_bomb_fails_with_the_decompression_limit() {
    // 200 MiB of one byte deflates to about 200 KiB.
    let bomb = zip_with_entry("word/document.xml", &vec![b' '; 200 * 1024 * 1024]);
    assert!(
        bomb.len() < 1024 * 1024,
        "the bomb is small: {} bytes",
        bomb.len()
    );
    assert_eq!(sniff(&bomb, None), Kind::Docx);
    let error = extract(Kind::Docx, &bomb, &Limits::default()).unwrap_err();
    assert_eq!(
        error,
        IngestError::LimitExceeded {
            kind: Kind::Docx,
            limit: Limit::EntryBytes,
            max: Limits::default().max_entry_bytes
        }
    );
    assert!(
        error
            .to_string()
            .starts_with("too large after decompression"),
        "{error}"
    );
    let tight = Limits {
        max_decompressed_bytes: 1024 * 1024,
        ..Limits::default()
    };
    let error = extract(Kind::Docx, &bomb, &tight).unwrap_err();
    assert_eq!(
        error,
        IngestError::LimitExceeded {
            kind: Kind::Docx,
            limit: Limit::DecompressedBytes,
            max: 1024 * 1024
        }
    );
    // calamine decompresses XLSX entries itself: the same bomb as a sheet is caught first.
    let sheet_bomb = zip_with_entry("xl/worksheets/sheet1.xml", &vec![b' '; 120 * 1024 * 1024]);
    let error = extract(Kind::Xlsx, &sheet_bomb, &Limits::default()).unwrap_err();
    assert!(
        matches!(error, IngestError::LimitExceeded { .. }),
        "{error}"
    );
}

#[test]
fn too_many_entries_fail_at_open() {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for index in 0..50 {
        writer
            .start_file(format!("word/part{index}.xml"), options)
            .unwrap();
    }
    let archive = writer.finish().unwrap().into_inner();
    let limits = Limits {
        max_zip_entries: 10,
        ..Limits::default()
    };
    let error = extract(Kind::Docx, &archive, &limits).unwrap_err();
    assert_eq!(
        error.to_string(),
        "too many entries in the archive: more than 10"
    );
}

#[test]
fn workers_and_unsupported_kinds_are_answered_without_parsing() {
    assert_eq!(
        extract(Kind::Pdf, b"%PDF-1.7", &Limits::default()),
        Err(IngestError::NeedsWorker { kind: Kind::Pdf })
    );
    assert_eq!(
        extract(Kind::Text, b"", &Limits::default()),
        Err(IngestError::Empty)
    );
    let error = extract(Kind::Zip, b"PK\x05\x06", &Limits::default()).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("unsupported format: a zip archive"),
        "{error}"
    );
}
