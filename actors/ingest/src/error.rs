//! `IngestError`: why a file gave no text, in words a user can act on.

use crate::kind::{Kind, Route};

/// Why an extraction failed. Every message is lowercase, names the format and says why.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    DecompressedBytes,
    ZipEntries,
    EntryBytes,
}

impl Limit {
    fn reason(self) -> &'static str {
        match self {
            Limit::DecompressedBytes => "too large after decompression:",
            Limit::ZipEntries => "too many entries in the archive:",
            Limit::EntryBytes => "too large after decompression:",
        }
    }

    fn detail(self, max: u64) -> String {
        match self {
            Limit::DecompressedBytes => format!("more than {max} bytes in all"),
            Limit::ZipEntries => format!("more than {max}"),
            Limit::EntryBytes => format!("one entry holds more than {max} bytes"),
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
}
