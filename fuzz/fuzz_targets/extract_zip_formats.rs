//! The zip-based extractors (DOCX, PPTX, ODT, ODP, EPUB, XLSX, ODS) must never panic.
//! Raw bytes rarely survive the zip's CRC checks, so the input is also packed as the main
//! part of each format (the first byte picks the format) to reach the XML walkers.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use memvault_ingest::{extract, IngestError, Kind, Limits};

/// Each format with the entries its extractor reads first; the fuzz input becomes the
/// last entry's content.
const LAYOUTS: [(Kind, &[&str]); 7] = [
    (Kind::Docx, &["[Content_Types].xml", "word/document.xml"]),
    (Kind::Pptx, &["ppt/presentation.xml", "ppt/slides/slide1.xml"]),
    (Kind::Odt, &["mimetype", "content.xml"]),
    (Kind::Odp, &["mimetype", "content.xml"]),
    (Kind::Epub, &["META-INF/container.xml", "content.opf"]),
    (Kind::Xlsx, &["xl/workbook.xml", "xl/worksheets/sheet1.xml"]),
    (Kind::Ods, &["mimetype", "content.xml"]),
];

fn check(kind: Kind, bytes: &[u8]) {
    let limits = Limits {
        max_decompressed_bytes: 4 * 1024 * 1024,
        ..Limits::default()
    };
    if let Err(IngestError::ParserPanicked { kind }) = extract(kind, bytes, &limits) {
        panic!("the {kind} parser panicked");
    }
}

fn packed(entries: &[&str], content: &[u8]) -> Option<Vec<u8>> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored);
    let (main_part, others) = entries.split_last()?;
    for name in others {
        writer.start_file(*name, options).ok()?;
    }
    writer.start_file(*main_part, options).ok()?;
    writer.write_all(content).ok()?;
    Some(writer.finish().ok()?.into_inner())
}

fuzz_target!(|bytes: &[u8]| {
    for (kind, _) in LAYOUTS {
        check(kind, bytes);
    }
    let Some((&selector, content)) = bytes.split_first() else {
        return;
    };
    let (kind, entries) = LAYOUTS[selector as usize % LAYOUTS.len()];
    if let Some(archive) = packed(entries, content) {
        check(kind, &archive);
    }
});
