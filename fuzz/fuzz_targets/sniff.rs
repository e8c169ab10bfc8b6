//! The sniffer must never panic, with or without a file name, and whatever kind it
//! answers must be extracted or refused with a typed error, never a parser panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memvault_ingest::{extract, sniff, IngestError, Limits};

fuzz_target!(|bytes: &[u8]| {
    let kind = sniff(bytes, None);
    for name in ["notes.md", "data.csv", "data.tsv", "mail.eml", "page.html"] {
        let _ = sniff(bytes, Some(name));
    }
    let limits = Limits {
        max_decompressed_bytes: 4 * 1024 * 1024,
        ..Limits::default()
    };
    if let Err(IngestError::ParserPanicked { kind }) = extract(kind, bytes, &limits) {
        panic!("the {kind} parser panicked");
    }
});
