//! The real files of the `files` conformance area (`../shared/data/files`, listed in its
//! `manifest.json`): every file is sniffed to its manifest format; every text file of a
//! format extracted here contains each of its phrases after the manifest's normalisation;
//! PDF, images and audio are routed to their workers.

use std::path::PathBuf;
use std::time::Instant;

use memvault_ingest::{extract, sniff, IngestError, Kind, Limits, Route};
use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

fn files_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/files")
}

/// The manifest's normalisation: NFKC, soft hyphens, U+FFFE and zero-width characters
/// removed, whitespace runs collapsed to one space, case folded.
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

#[test]
fn real_files_sniff_and_extract_their_phrases() {
    let manifest_path = files_dir().join("manifest.json");
    let Ok(manifest_text) = std::fs::read_to_string(&manifest_path) else {
        println!("skipped: no manifest at {}", manifest_path.display());
        return;
    };
    let manifest: Value = serde_json::from_str(&manifest_text).expect("manifest is JSON");
    let files = manifest["files"].as_array().expect("manifest lists files");
    let mut failures = Vec::new();
    let mut extracted_formats = Vec::new();
    for file in files {
        let name = file["name"].as_str().expect("file name");
        let format = file["format"].as_str().expect("file format");
        let role = file["kind"].as_str().expect("file kind");
        let bytes = std::fs::read(files_dir().join(name)).expect("listed file exists");
        let expected_kind =
            Kind::from_name(format).unwrap_or_else(|| panic!("{name}: unknown format {format}"));
        let sniffed = sniff(&bytes, Some(name));
        if sniffed != expected_kind {
            failures.push(format!(
                "{name}: sniffed {sniffed}, expected {expected_kind}"
            ));
            continue;
        }
        let started = Instant::now();
        let outcome = extract(sniffed, &bytes, &Limits::default());
        let elapsed = started.elapsed();
        match (sniffed.route(), outcome) {
            (Route::Extract, Ok(extracted)) => {
                println!(
                    "{name}: {} chars, {} sections in {elapsed:?}",
                    extracted.text.chars().count(),
                    extracted.sections.len()
                );
                if role != "text" {
                    continue;
                }
                let normalised = normalise(&extracted.text);
                for phrase in file["phrases"].as_array().expect("phrases") {
                    let phrase = phrase.as_str().expect("phrase is text");
                    if !normalised.contains(&normalise(phrase)) {
                        failures.push(format!(
                            "{name}: phrase {phrase:?} missing from:\n{}",
                            extracted.text
                        ));
                    }
                }
                extracted_formats.push(format);
            }
            (Route::Extract, Err(error)) => failures.push(format!("{name}: {error}")),
            (_, Err(IngestError::NeedsWorker { kind })) => assert_eq!(kind, sniffed),
            (route, other) => failures.push(format!("{name}: {route:?} gave {other:?}")),
        }
    }
    println!("extracted and checked: {extracted_formats:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for format in [
        "odt", "docx", "pptx", "xlsx", "eml", "html", "markdown", "csv", "json",
    ] {
        assert!(
            extracted_formats.contains(&format),
            "no {format} file was checked"
        );
    }
}
