//! The mail extractor (MIME parsing, bodies, attachments extracted recursively,
//! forwarded messages) must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memvault_ingest::{extract, IngestError, Kind, Limits};

fuzz_target!(|bytes: &[u8]| {
    let limits = Limits {
        max_decompressed_bytes: 4 * 1024 * 1024,
        ..Limits::default()
    };
    if let Err(IngestError::ParserPanicked { kind }) = extract(Kind::Eml, bytes, &limits) {
        panic!("the {kind} parser panicked");
    }
});
