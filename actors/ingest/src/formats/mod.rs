//! One extractor per format family, and the dispatch from a [`Kind`] to it. Each extractor
//! writes through a `TextBuilder` so the character cap and sections behave alike.

pub(crate) mod audio;
mod delimited;
mod docx;
mod epub;
mod html;
pub(crate) mod image;
mod json;
mod mail;
mod markdown;
mod opendocument;
pub(crate) mod pdf;
mod plain;
mod pptx;
mod rtf;
mod spreadsheet;
mod xml;

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::IngestError;
use crate::extracted::Extracted;
use crate::kind::{Kind, Route};
use crate::limits::Limits;

/// [`crate::extract`] at a mail nesting depth (0 for a file of its own).
pub(crate) fn extract_at_depth(
    kind: Kind,
    bytes: &[u8],
    limits: &Limits,
    depth: usize,
) -> Result<Extracted, IngestError> {
    if bytes.is_empty() {
        return Err(IngestError::Empty);
    }
    match kind.route() {
        Route::Extract => {}
        Route::PdfWorker | Route::ImageWorker | Route::AudioWorker => {
            return Err(IngestError::NeedsWorker { kind })
        }
        Route::Unsupported => {
            return Err(IngestError::Unsupported {
                kind,
                reason: unsupported_reason(kind, bytes),
            })
        }
    }
    // Our parsers avoid panics by construction; calamine, htmd and mail-parser are not
    // ours. A panic fails this file alone, with a reason, instead of the caller's thread.
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        extract_supported(kind, bytes, limits, depth)
    }));
    outcome.unwrap_or(Err(IngestError::ParserPanicked { kind }))
}

fn extract_supported(
    kind: Kind,
    bytes: &[u8],
    limits: &Limits,
    depth: usize,
) -> Result<Extracted, IngestError> {
    match kind {
        Kind::Text => Ok(plain::extract_text(bytes, limits)),
        Kind::Markdown => Ok(plain::extract_markdown(bytes, limits)),
        Kind::Csv => delimited::extract(Kind::Csv, b',', bytes, limits),
        Kind::Tsv => delimited::extract(Kind::Tsv, b'\t', bytes, limits),
        Kind::Json => json::extract(bytes, limits),
        Kind::Html => Ok(html::extract(bytes, limits)),
        Kind::Docx => docx::extract(bytes, limits),
        Kind::Pptx => pptx::extract(bytes, limits),
        Kind::Odt | Kind::Odp => opendocument::extract(kind, bytes, limits),
        Kind::Epub => epub::extract(bytes, limits),
        Kind::Xlsx | Kind::Xls | Kind::Ods => spreadsheet::extract(kind, bytes, limits),
        Kind::Rtf => Ok(rtf::extract(bytes, limits)),
        Kind::Eml => mail::extract(bytes, limits, depth),
        Kind::Pdf | Kind::Image(_) | Kind::Audio(_) | Kind::Zip | Kind::Ole | Kind::Unknown => {
            Err(IngestError::Unsupported {
                kind,
                reason: unsupported_reason(kind, bytes),
            })
        }
    }
}

fn unsupported_reason(kind: Kind, bytes: &[u8]) -> String {
    match kind {
        Kind::Ole if contains_utf16_name(bytes, "EncryptedPackage") => {
            "an encrypted Office document: it cannot be read without its password".to_owned()
        }
        Kind::Ole => {
            "a legacy Word or PowerPoint file (.doc, .ppt): save it as DOCX or PPTX".to_owned()
        }
        Kind::Zip => "a zip archive: upload the files inside it one by one".to_owned(),
        _ => "the file type was not recognised".to_owned(),
    }
}

fn contains_utf16_name(bytes: &[u8], name: &str) -> bool {
    let encoded: Vec<u8> = name.encode_utf16().flat_map(u16::to_le_bytes).collect();
    bytes
        .windows(encoded.len())
        .any(|window| window == encoded.as_slice())
}
