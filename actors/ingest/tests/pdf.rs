//! PDF extraction with both engines: pdfium (fetched once through `memvault_ingest::fetch`
//! into `$XDG_CACHE_HOME/memvault/models`, else `~/.cache/memvault/models`) and the
//! pure-Rust fallback. The real PDFs of the `files` conformance area give their manifest
//! phrases; an encrypted PDF is `Encrypted`; a truncated one fails cleanly or gives partial
//! text; page caps and thousands of blank pages finish quickly with a note; a scanned page
//! (an image-only PDF, `tests/fixtures/scanned-page.pdf`) is read by tesseract.
//!
//! Set `MEMVAULT_TEST_OFFLINE=1` to skip the pdfium half when PyPI is unreachable.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use memvault_ingest::fetch::{default_cache_dir, ensure_pdfium};
use memvault_ingest::worker::{Worker, WorkerLimits};
use memvault_ingest::{extract_with, Engines, Extracted, IngestError, Kind, Limits, Location};
use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

const WORKER: &str = env!("CARGO_BIN_EXE_memvault-ingest-worker");
const TESSERACT: &str = "/usr/bin/tesseract";

fn files_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/files")
}

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn read_real_file(name: &str) -> Option<Vec<u8>> {
    let path = files_dir().join(name);
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(_) => {
            println!("skipped: no {}", path.display());
            None
        }
    }
}

/// `libpdfium.so`, fetched on first use (or `None` offline, when allowed).
fn pdfium() -> Option<PathBuf> {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    PATH.get_or_init(|| {
        let started = Instant::now();
        match ensure_pdfium(&default_cache_dir(), "python3") {
            Ok(path) => {
                println!("pdfium at {} ({:?})", path.display(), started.elapsed());
                Some(path)
            }
            Err(error) if std::env::var_os("MEMVAULT_TEST_OFFLINE").is_some() => {
                println!("skipped pdfium: {error}");
                None
            }
            Err(error) => {
                panic!("cannot fetch pdfium (set MEMVAULT_TEST_OFFLINE=1 to skip): {error}")
            }
        }
    })
    .clone()
}

fn tesseract() -> Option<PathBuf> {
    Path::new(TESSERACT)
        .is_file()
        .then(|| PathBuf::from(TESSERACT))
}

/// The engine set for each engine under test: pdfium (when fetched) and the fallback.
fn engine_sets() -> Vec<(&'static str, Engines)> {
    let mut sets = vec![("fallback", Engines::default())];
    if let Some(path) = pdfium() {
        sets.insert(
            0,
            (
                "pdfium",
                Engines {
                    pdfium: Some(path),
                    ..Engines::default()
                },
            ),
        );
    }
    sets
}

fn extract_pdf(bytes: &[u8], limits: &Limits, engines: &Engines) -> Result<Extracted, IngestError> {
    extract_with(Kind::Pdf, bytes, limits, engines)
}

/// The manifest's normalisation (as in `real_files.rs`).
fn normalise(text: &str) -> String {
    let cleaned: String = text
        .nfkc()
        .filter(|character| {
            !matches!(
                character,
                '\u{00AD}'
                    | '\u{FFFE}'
                    | '\u{200B}'
                    | '\u{200C}'
                    | '\u{200D}'
                    | '\u{2060}'
                    | '\u{FEFF}'
            )
        })
        .collect();
    cleaned
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// A PDF written by hand: `pages` pages of `size` points, each page's content stream
/// given by `content(page_number)` (empty for a blank page), with one Helvetica font.
fn handmade_pdf(pages: usize, content: impl Fn(usize) -> String) -> Vec<u8> {
    let mut pdf = b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = Vec::new();
    let mut object = |pdf: &mut Vec<u8>, body: String| {
        offsets.push(pdf.len());
        let number = offsets.len();
        pdf.extend_from_slice(format!("{number} 0 obj\n{body}\nendobj\n").as_bytes());
    };
    // 1: catalog, 2: pages, 3: font, then a page and its content per page.
    let kids: Vec<String> = (0..pages)
        .map(|index| format!("{} 0 R", 4 + 2 * index))
        .collect();
    object(&mut pdf, "<< /Type /Catalog /Pages 2 0 R >>".to_owned());
    object(
        &mut pdf,
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} /MediaBox [0 0 612 792] >>",
            kids.join(" ")
        ),
    );
    object(
        &mut pdf,
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_owned(),
    );
    for index in 0..pages {
        object(
            &mut pdf,
            format!(
                "<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
                5 + 2 * index
            ),
        );
        let stream = content(index + 1);
        object(
            &mut pdf,
            format!(
                "<< /Length {} >>\nstream\n{stream}\nendstream",
                stream.len()
            ),
        );
    }
    let xref = pdf.len();
    let mut table = format!("xref\n0 {}\n0000000000 65535 f \n", offsets.len() + 1);
    for offset in &offsets {
        table.push_str(&format!("{offset:010} 00000 n \n"));
    }
    pdf.extend_from_slice(table.as_bytes());
    pdf.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            offsets.len() + 1
        )
        .as_bytes(),
    );
    pdf
}

fn text_page(number: usize) -> String {
    format!("BT /F1 12 Tf 72 700 Td (This is the text of page number {number}.) Tj ET")
}

#[test]
fn the_manifest_pdfs_give_their_phrases_with_both_engines() {
    let Some(manifest) = read_real_file("manifest.json") else {
        return;
    };
    let manifest: Value = serde_json::from_slice(&manifest).expect("manifest is JSON");
    let files = manifest["files"].as_array().expect("files");
    let mut failures = Vec::new();
    let mut checked = 0;
    for (engine, engines) in engine_sets() {
        for file in files {
            if file["format"] != "pdf" || file["kind"] != "text" {
                continue;
            }
            let name = file["name"].as_str().expect("name");
            let bytes = std::fs::read(files_dir().join(name)).expect("listed file exists");
            let started = Instant::now();
            let outcome = extract_pdf(&bytes, &Limits::default(), &engines);
            let elapsed = started.elapsed();
            let extracted = match outcome {
                Ok(extracted) => extracted,
                Err(error) => {
                    failures.push(format!("{engine} {name}: {error}"));
                    continue;
                }
            };
            println!(
                "{engine} {name}: {} chars, {} pages, title {:?} in {elapsed:?}; notes {:?}",
                extracted.text.chars().count(),
                extracted.sections.len(),
                extracted.title,
                extracted.notes
            );
            let normalised = normalise(&extracted.text);
            for phrase in file["phrases"].as_array().expect("phrases") {
                let phrase = phrase.as_str().expect("phrase");
                if !normalised.contains(&normalise(phrase)) {
                    failures.push(format!("{engine} {name}: no {phrase:?}"));
                }
            }
            for (index, section) in extracted.sections.iter().enumerate() {
                assert!(
                    matches!(section.location, Location::Page { number } if number as usize > index),
                    "{engine} {name}: {section:?}"
                );
                assert!(extracted.text.get(section.range.clone()).is_some());
            }
            let fallback_noted = extracted
                .notes
                .iter()
                .any(|note| note.contains("pure-Rust fallback"));
            assert_eq!(fallback_noted, engine == "fallback", "{engine} {name}");
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(checked >= 4, "only {checked} PDFs checked");
}

#[test]
fn the_page_count_and_title_match_the_file() {
    let Some(bytes) = read_real_file("pdflatex-4-pages.pdf") else {
        return;
    };
    for (engine, engines) in engine_sets() {
        let extracted = extract_pdf(&bytes, &Limits::default(), &engines).unwrap();
        let pages: Vec<u32> = extracted
            .sections
            .iter()
            .map(|section| match section.location {
                Location::Page { number } => number,
                ref other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(pages, [1, 2, 3, 4], "{engine}");
    }
}

#[test]
fn an_encrypted_pdf_is_encrypted_with_both_engines() {
    let Some(bytes) = read_real_file("libreoffice-writer-password.pdf") else {
        return;
    };
    for (engine, engines) in engine_sets() {
        let error = extract_pdf(&bytes, &Limits::default(), &engines).unwrap_err();
        assert_eq!(
            error,
            IngestError::Encrypted { kind: Kind::Pdf },
            "{engine}"
        );
        assert!(error.to_string().contains("password"), "{engine}: {error}");
    }
}

#[test]
fn a_truncated_pdf_fails_cleanly_or_gives_partial_text() {
    let Some(bytes) = read_real_file("pdflatex-4-pages.pdf") else {
        return;
    };
    for cut in [bytes.len() * 4 / 10, bytes.len() / 10, 100, 9] {
        let truncated = &bytes[..cut];
        for (engine, engines) in engine_sets() {
            let started = Instant::now();
            let outcome = extract_pdf(truncated, &Limits::default(), &engines);
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "{engine} {cut}: hung"
            );
            match outcome {
                Ok(extracted) => println!(
                    "{engine}, first {cut} bytes: {} chars of partial text",
                    extracted.text.len()
                ),
                Err(error) => {
                    println!("{engine}, first {cut} bytes: {error}");
                    assert!(
                        matches!(error, IngestError::Invalid { .. }),
                        "{engine} {cut}: {error:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn pages_past_the_page_cap_are_skipped_with_a_note() {
    let pdf = handmade_pdf(10, text_page);
    let limits = Limits {
        max_pages: 3,
        ..Limits::default()
    };
    for (engine, engines) in engine_sets() {
        let extracted = extract_pdf(&pdf, &limits, &engines).unwrap();
        assert_eq!(extracted.sections.len(), 3, "{engine}: {extracted:?}");
        assert!(extracted.text.contains("page number 3."), "{engine}");
        assert!(!extracted.text.contains("page number 4."), "{engine}");
        assert!(
            extracted
                .notes
                .iter()
                .any(|note| note == "7 pages after the first 3 skipped (limit max_pages)"),
            "{engine}: {:?}",
            extracted.notes
        );
        let all = extract_pdf(&pdf, &Limits::default(), &engines).unwrap();
        assert_eq!(all.sections.len(), 10, "{engine}");
    }
}

#[test]
fn the_character_cap_cuts_pdf_text() {
    let pdf = handmade_pdf(10, text_page);
    let limits = Limits {
        max_chars: 50,
        ..Limits::default()
    };
    for (engine, engines) in engine_sets() {
        let extracted = extract_pdf(&pdf, &limits, &engines).unwrap();
        assert!(extracted.truncated, "{engine}");
        assert!(extracted.text.chars().count() <= 50, "{engine}");
    }
}

#[test]
fn five_thousand_blank_pages_finish_quickly_with_notes() {
    let pdf = handmade_pdf(5_000, |_| String::new());
    println!("5,000 blank pages: {} bytes", pdf.len());
    for (engine, mut engines) in engine_sets() {
        engines.tesseract = tesseract();
        let started = Instant::now();
        let extracted = extract_pdf(&pdf, &Limits::default(), &engines).unwrap();
        let elapsed = started.elapsed();
        println!(
            "{engine}: 5,000 blank pages in {elapsed:?}: {:?}",
            extracted.notes
        );
        // A guard against a hang only; the time is printed above, the speed is benchmarked.
        assert!(elapsed < Duration::from_secs(300), "{engine}: {elapsed:?}");
        assert!(extracted.text.is_empty(), "{engine}");
        assert!(
            extracted
                .notes
                .iter()
                .any(|note| note == "3000 pages after the first 2000 skipped (limit max_pages)"),
            "{engine}: {:?}",
            extracted.notes
        );
        assert!(
            extracted
                .notes
                .iter()
                .any(|note| note == "2000 blank pages"),
            "{engine}: {:?}",
            extracted.notes
        );
    }
}

#[test]
fn a_scanned_page_is_read_by_ocr() {
    let Some(pdfium) = pdfium() else {
        return;
    };
    let bytes = fixture("scanned-page.pdf");
    let Some(tesseract) = tesseract() else {
        println!("skipped: no {TESSERACT}");
        return;
    };
    let engines = Engines {
        pdfium: Some(pdfium.clone()),
        tesseract: Some(tesseract),
        ..Engines::default()
    };
    let started = Instant::now();
    let extracted = extract_pdf(&bytes, &Limits::default(), &engines).unwrap();
    println!(
        "scanned page by OCR in {:?}: {} chars; notes {:?}",
        started.elapsed(),
        extracted.text.len(),
        extracted.notes
    );
    let normalised = normalise(&extracted.text);
    for phrase in [
        "Beautiful is better than ugly",
        "Explicit is better than implicit",
        "Readability counts",
    ] {
        assert!(
            normalised.contains(&normalise(phrase)),
            "no {phrase:?} in {normalised}"
        );
    }
    assert_eq!(extracted.sections.len(), 1);
    assert!(extracted
        .notes
        .contains(&"page 1 has no text layer: read by OCR (tesseract)".to_owned()));

    // Without tesseract the page is named in a note, with what to install.
    let engines = Engines {
        pdfium: Some(pdfium),
        ..Engines::default()
    };
    let extracted = extract_pdf(&bytes, &Limits::default(), &engines).unwrap();
    assert!(extracted.text.is_empty());
    assert_eq!(
        extracted.notes,
        ["page 1 has no text layer; OCR skipped: install tesseract-ocr"]
    );

    // Past max_ocr_pages the page is not OCRed, and the note says so.
    let engines = Engines {
        tesseract: Some(PathBuf::from(TESSERACT)),
        ..engines
    };
    let limits = Limits {
        max_ocr_pages: 0,
        ..Limits::default()
    };
    let extracted = extract_pdf(&bytes, &limits, &engines).unwrap();
    assert!(extracted.text.is_empty());
    assert!(
        extracted.notes[0].contains("limit max_ocr_pages"),
        "{:?}",
        extracted.notes
    );
}

#[test]
fn the_fallback_names_a_scanned_page_it_cannot_read() {
    let bytes = fixture("scanned-page.pdf");
    let extracted = extract_pdf(&bytes, &Limits::default(), &Engines::default()).unwrap();
    assert!(extracted.text.is_empty());
    assert_eq!(
        extracted.notes,
        [
            "pdfium not available: extracted with the pure-Rust fallback",
            "page 1 has no text layer; OCR needs pdfium and tesseract-ocr"
        ]
    );
}

#[test]
fn the_worker_extracts_a_pdf_with_pdfium_and_falls_back_without_it() {
    let Some(bytes) = read_real_file("google-doc-document.pdf") else {
        return;
    };
    let Some(pdfium) = pdfium() else {
        return;
    };
    let worker = Worker::new(WORKER, Vec::new(), WorkerLimits::default()).with_engines(Engines {
        pdfium: Some(pdfium),
        ..Engines::default()
    });
    let started = Instant::now();
    let extracted = worker
        .extract(&bytes, Some("google-doc-document.pdf"), &Limits::default())
        .unwrap();
    println!("worker with pdfium: {:?}", started.elapsed());
    assert_eq!(extracted.kind, Kind::Pdf);
    assert!(normalise(&extracted.text).contains("namespaces are one honking great idea"));
    assert!(extracted.notes.is_empty(), "{:?}", extracted.notes);

    // A library that does not load: the worker still answers, through the fallback.
    let worker = Worker::new(WORKER, Vec::new(), WorkerLimits::default()).with_engines(Engines {
        pdfium: Some(PathBuf::from("/nonexistent/libpdfium.so")),
        ..Engines::default()
    });
    let extracted = worker
        .extract(&bytes, Some("google-doc-document.pdf"), &Limits::default())
        .unwrap();
    assert!(normalise(&extracted.text).contains("namespaces are one honking great idea"));
    assert!(
        extracted.notes[0].starts_with("pdfium could not be loaded (/nonexistent/libpdfium.so"),
        "{:?}",
        extracted.notes
    );

    // An encrypted PDF fails in the worker as it does in process.
    if let Some(encrypted) = read_real_file("libreoffice-writer-password.pdf") {
        let error = worker
            .extract(&encrypted, Some("secret.pdf"), &Limits::default())
            .unwrap_err();
        assert!(error.to_string().contains("password"), "{error}");
    }
}

#[test]
fn a_second_fetch_finds_the_cached_library() {
    if pdfium().is_none() {
        return;
    }
    // No Python to download with: only the cache can answer.
    let again = ensure_pdfium(&default_cache_dir(), "/nonexistent/python").unwrap();
    assert_eq!(Some(again), pdfium());
}

#[test]
fn pages_that_crash_the_fallback_fail_it_cleanly_and_pdfium_reads_them() {
    // No MediaBox anywhere: pdf-extract panics on each page (`expect("MediaBox")`);
    // pdfium assumes Letter. Blanking the entry keeps every xref offset valid.
    let pdf = handmade_pdf(3, text_page);
    let entry = b"/MediaBox [0 0 612 792]";
    let at = pdf
        .windows(entry.len())
        .position(|window| window == entry)
        .unwrap();
    let mut broken = pdf.clone();
    broken[at..at + entry.len()].fill(b' ');
    for (engine, engines) in engine_sets() {
        let outcome = extract_pdf(&broken, &Limits::default(), &engines);
        match engine {
            "fallback" => {
                let error = outcome.unwrap_err();
                assert!(
                    error.to_string().contains("no page could be read"),
                    "{error}"
                );
            }
            _ => {
                let extracted = outcome.unwrap();
                assert_eq!(extracted.sections.len(), 3, "{extracted:?}");
            }
        }
    }
}
