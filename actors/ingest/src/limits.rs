//! Caps against hostile files: what a single extraction may decompress, read and produce.

/// Every cap an extraction obeys. The defaults suit a 10 MB upload on a small server; the
/// worker process adds memory, CPU-time and wall-clock limits on top.
///
/// Two kinds of cap behave differently, on purpose:
/// - Caps on *input work* (decompressed bytes, zip entries, one entry's size, image
///   pixels) fail the
///   extraction with [`crate::IngestError::LimitExceeded`]: past them the file is a bomb,
///   not a document.
/// - Caps on *output* (characters, sheets/slides/chapters, cells, attachments, mail depth,
///   PDF pages, OCRed pages)
///   truncate and say so in [`crate::Extracted::notes`]: a long book still becomes
///   memories from its first five million characters.
///
/// It serializes field by field (a worker request carries it); a missing field takes its
/// default.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Total bytes decompressed from zip entries in one extraction (zip bombs).
    pub max_decompressed_bytes: u64,
    /// Entries a zip archive may list; more fails the extraction (entry-count bombs).
    pub max_zip_entries: usize,
    /// Bytes one zip entry may decompress to, whatever its header declares.
    pub max_entry_bytes: u64,
    /// Characters of extracted text; the rest is cut off with a note.
    pub max_chars: usize,
    /// Sheets, slides or chapters read from one file; the rest are skipped with a note.
    pub max_parts: usize,
    /// Non-empty spreadsheet cells read from one workbook; the rest are skipped with a note.
    pub max_cells: usize,
    /// Attachments of one mail message that are extracted; the rest are listed in a note.
    pub max_attachments: usize,
    /// How deep forwarded messages and attachments nest before they are only named in a
    /// note (the top-level message is depth 0).
    pub max_mail_depth: usize,
    /// Element nesting above which HTML is reduced to its text instead of converted to
    /// Markdown (the converter recurses once per level).
    pub max_html_depth: usize,
    /// Pixels (width × height, read from the header) an image may have; a larger one
    /// fails before it is decoded (decompression bombs).
    pub max_image_pixels: u64,
    /// Seconds OCR may take on one image before Tesseract is stopped; keep it under the
    /// worker's wall clock.
    pub max_ocr_seconds: u64,
    /// PDF pages read from one file; the rest are skipped with a note.
    pub max_pages: usize,
    /// PDF pages without a text layer that are rendered and OCRed (about 1.5 s each on
    /// one core); further ones are skipped with a note.
    pub max_ocr_pages: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_decompressed_bytes: 100 * 1024 * 1024,
            max_zip_entries: 10_000,
            max_entry_bytes: 50 * 1024 * 1024,
            max_chars: 5_000_000,
            max_parts: 1_000,
            max_cells: 1_000_000,
            max_attachments: 50,
            max_mail_depth: 3,
            max_html_depth: 256,
            max_image_pixels: 50_000_000,
            max_ocr_seconds: 45,
            max_pages: 2_000,
            max_ocr_pages: 20,
        }
    }
}
