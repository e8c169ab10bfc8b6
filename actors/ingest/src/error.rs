//! `IngestError`: why a file gave no text, in words a user can act on.

use serde::{Deserialize, Serialize};

use crate::kind::{Kind, Route};

/// Why an extraction failed. Every message is lowercase, names the format and says why.
///
/// It serializes with its [`IngestError::code`] as the `code` field next to the variant's
/// fields, so a worker process can send it back whole.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum IngestError {
    /// The kind is extracted elsewhere (PDF worker, OCR, transcription): not a failure, a
    /// routing answer.
    #[error("{kind} is not extracted here: it goes to the {}", worker_name(*.kind))]
    NeedsWorker { kind: Kind },
    /// No extractor exists for this kind (an unknown binary, a plain zip, a legacy `.doc`).
    #[error("unsupported format: {reason}")]
    Unsupported { kind: Kind, reason: String },
    /// The file has no bytes.
    #[error("the file is empty")]
    Empty,
    /// The file is password-protected or its content is encrypted.
    #[error("encrypted {}: it cannot be read without its password", .kind.label())]
    Encrypted { kind: Kind },
    /// The file breaks one of the [`crate::Limits`] that fail rather than truncate.
    #[error("{} {}", .limit.reason(), .limit.detail(*.max))]
    LimitExceeded { kind: Kind, limit: Limit, max: u64 },
    /// The bytes are not a well-formed file of the kind.
    #[error("not a valid {}: {reason}", .kind.label())]
    Invalid { kind: Kind, reason: String },
    /// A parser panicked on this file. Caught so one file fails alone; a bug to report.
    #[error("the {} parser crashed on this file", .kind.label())]
    ParserPanicked { kind: Kind },
}

/// The caps whose breach fails an extraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    DecompressedBytes,
    ZipEntries,
    EntryBytes,
    /// Width × height of an image, from its header (decompression bombs).
    ImagePixels,
}

impl Limit {
    fn reason(self) -> &'static str {
        match self {
            Limit::DecompressedBytes => "too large after decompression:",
            Limit::ZipEntries => "too many entries in the archive:",
            Limit::EntryBytes => "too large after decompression:",
            Limit::ImagePixels => "image too large:",
        }
    }

    fn detail(self, max: u64) -> String {
        match self {
            Limit::DecompressedBytes => format!("more than {max} bytes in all"),
            Limit::ZipEntries => format!("more than {max}"),
            Limit::EntryBytes => format!("one entry holds more than {max} bytes"),
            Limit::ImagePixels => format!("more than {max} pixels"),
        }
    }
}

fn worker_name(kind: Kind) -> &'static str {
    match kind.route() {
        Route::PdfWorker => "pdf worker",
        Route::ImageWorker => "ocr worker",
        Route::AudioWorker => "transcription worker",
        Route::Extract | Route::Unsupported => "extractor",
    }
}

impl IngestError {
    /// A stable snake_case code per variant, for logs and per-file failure records; the
    /// same string as the serialized `code` field.
    pub fn code(&self) -> &'static str {
        match self {
            IngestError::NeedsWorker { .. } => "needs_worker",
            IngestError::Unsupported { .. } => "unsupported",
            IngestError::Empty => "empty",
            IngestError::Encrypted { .. } => "encrypted",
            IngestError::LimitExceeded { .. } => "limit_exceeded",
            IngestError::Invalid { .. } => "invalid",
            IngestError::ParserPanicked { .. } => "parser_panicked",
        }
    }

    pub(crate) fn invalid(kind: Kind, reason: impl Into<String>) -> Self {
        IngestError::Invalid {
            kind,
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::ImageFormat;

    #[test]
    fn messages_name_the_format_and_the_reason() {
        let bomb = IngestError::LimitExceeded {
            kind: Kind::Docx,
            limit: Limit::DecompressedBytes,
            max: 100,
        };
        assert_eq!(
            bomb.to_string(),
            "too large after decompression: more than 100 bytes in all"
        );
        let invalid = IngestError::invalid(Kind::Docx, "no word/document.xml");
        assert_eq!(
            invalid.to_string(),
            "not a valid DOCX: no word/document.xml"
        );
        let encrypted = IngestError::Encrypted { kind: Kind::Xlsx };
        assert_eq!(
            encrypted.to_string(),
            "encrypted XLSX: it cannot be read without its password"
        );
        let image = IngestError::NeedsWorker {
            kind: Kind::Image(ImageFormat::Png),
        };
        assert_eq!(
            image.to_string(),
            "png is not extracted here: it goes to the ocr worker"
        );
    }

    #[test]
    fn errors_round_trip_through_json_with_their_code() {
        let errors = [
            IngestError::NeedsWorker { kind: Kind::Pdf },
            IngestError::Unsupported {
                kind: Kind::Zip,
                reason: "a plain zip archive".to_owned(),
            },
            IngestError::Empty,
            IngestError::Encrypted { kind: Kind::Docx },
            IngestError::LimitExceeded {
                kind: Kind::Xlsx,
                limit: Limit::ZipEntries,
                max: 10,
            },
            IngestError::invalid(Kind::Epub, "no container.xml"),
            IngestError::ParserPanicked { kind: Kind::Xls },
        ];
        for error in errors {
            let json = serde_json::to_value(&error).unwrap();
            assert_eq!(json["code"], error.code());
            let back: IngestError = serde_json::from_value(json).unwrap();
            assert_eq!(back, error);
        }
    }
}
