//! memvault-ingest: files to text. Pure: no async runtime, no actors, no HTTP, no I/O
//! beyond the bytes it is given, so the server can run it in a child process with memory,
//! CPU and wall-clock limits ([`worker`], std processes and threads only), and anything can
//! test it alone (`cargo test -p memvault-ingest`).
//!
//! Two calls:
//!
//! - [`sniff`]`(bytes, filename)` says what a file is ([`Kind`]): magic numbers first,
//!   then a look inside zip archives (`mimetype` for ODF and EPUB, `word/`, `ppt/`, `xl/`
//!   for OOXML) and OLE files (a `Workbook` stream for XLS), then text by content (JSON
//!   that parses, HTML that opens with a doctype or `<html>`, RFC 822 headers). The file
//!   name's extension only breaks ties between text kinds (`.md`, `.csv`, `.tsv`). A
//!   client's content type is never consulted.
//! - [`extract`]`(kind, bytes, &limits)` gives [`Extracted`]: Markdown text, [`Section`]s
//!   locating slides, sheets, chapters and attachments by byte range, the title, notes on
//!   whatever was skipped, and attachments that a worker must read.
//!
//! # Formats
//!
//! | Kind | How |
//! |---|---|
//! | text, Markdown | decoded (BOM, UTF-8, UTF-16, else Windows-1252), kept as written |
//! | CSV, TSV | one line per row of `header: value` pairs (`; `-separated) |
//! | JSON | indented `key: value` lines, arrays as `-` items |
//! | HTML | Markdown via htmd; script, style, nav, header, footer, aside, form dropped; `<title>` kept |
//! | DOCX | paragraphs (runs joined), headings by style, tables as Markdown tables |
//! | PPTX | `## Slide N: title` per slide in presentation order, tables, speaker notes |
//! | ODT, ODP | `content.xml`: headings, lists, tables; ODP pages as slides with notes |
//! | EPUB | spine order, each XHTML chapter to Markdown as a section |
//! | XLSX, XLS, ODS | calamine; `## Sheet: name` per worksheet, cells as a Markdown table |
//! | RTF | a tolerant reader of body text (tables of fonts, colours, pictures skipped) |
//! | EML | headers, text body (HTML-only bodies to Markdown), attachments and forwarded messages recursively |
//! | PNG, JPEG, GIF, WebP, TIFF, BMP | [`extract_with`] only: size from the header ([`Extracted::image`], a note), pixels capped, then OCR by Tesseract (`ocr.rs`), skipped with a note without it |
//! | PDF (worker, [`extract_with`]) | pdfium (`libpdfium.so` via [`fetch::PDFIUM`]), a section per page, Title metadata; text-less pages rendered and OCRed by tesseract; pure-Rust `pdf-extract` fallback with a note |
//! | WAV, MP3, M4A, AAC, Ogg, FLAC (worker: [`extract_with`]) | `memvault-speech`: symphonia to 16 kHz mono, Moonshine tiny-en offline, one line per utterance; first 30 minutes; no model: no text, a note |
//!
//! # What goes elsewhere
//!
//! PDF, images (PNG, JPEG, GIF, WebP, TIFF, BMP) and audio (WAV, MP3, M4A, AAC, Ogg,
//! FLAC) are [`Route`]d to workers: [`extract`] answers [`IngestError::NeedsWorker`], and
//! such attachments of a mail come back in [`Extracted::deferred`]. Plain zip archives,
//! legacy `.doc`/`.ppt` and encrypted Office files (OLE containers) are
//! [`IngestError::Unsupported`] with a reason.
//!
//! # Limits
//!
//! [`Limits`] caps every extraction. Work on the input fails it: more decompressed bytes
//! than `max_decompressed_bytes` (100 MiB) across zip entries, more than
//! `max_zip_entries` (10,000) entries, one entry over `max_entry_bytes` (50 MiB). Every
//! entry is read through a reader capped at what is left of the budget, so a header
//! that lies about its size changes nothing. Output is truncated with a note: text past
//! `max_chars` (5 million characters; [`Extracted::truncated`] is set), sheets, slides or
//! chapters past `max_parts`, cells past `max_cells`, attachments past
//! `max_attachments`, mail nested past `max_mail_depth`. HTML nested deeper than
//! `max_html_depth` is reduced to plain text (the converter recurses per level).
//!
//! Nothing here panics on our side by construction (no `unwrap`, `expect` or indexing on
//! file data); the third-party parsers (calamine, htmd, mail-parser) are run under
//! `catch_unwind`, and a panic there is [`IngestError::ParserPanicked`] for that file. What
//! no library can promise (an abort on allocation failure in calamine's dense XLS/ODS
//! ranges, a stack overflow) is why the server runs extraction in a child process
//! (below).
//!
//! # Out of process
//!
//! [`worker`] runs the same `sniff` + `extract` in a child process, one file per process
//! (principle 12 of DESIGN.md). The server re-executes itself as `memvault ingest-worker`,
//! whose whole job is [`worker::serve_worker`]`(stdin, stdout)`; it calls
//! [`worker::Worker::extract`]`(bytes, filename, &limits)` on a blocking thread and gets
//! the [`Extracted`] that `extract` would give in process, or a [`worker::WorkerError`].
//!
//! Protocol (version 1; details in [`worker`]): the parent writes one JSON header line,
//! `{"version":1,"filename":..,"limits":{..Limits..},"process":{"memory_bytes":..,"cpu_seconds":..}}`,
//! then the file's raw bytes, and closes stdin. The child reads the header (at most
//! 64 KiB), sets its limits, reads the bytes to EOF, and writes one JSON answer line tagged
//! by `outcome`: `extracted` (the [`Extracted`], deferred attachments' bytes in base64),
//! `failed` (the [`IngestError`] whole, with its `code`), `panicked`, `out_of_memory` or
//! `refused`.
//!
//! Limits ([`worker::WorkerLimits`], defaults 1 GiB, 30 CPU seconds, 60 s):
//!
//! | Limit | Set by | Breach | Reported as |
//! |---|---|---|---|
//! | memory | the child, `RLIMIT_AS` | an allocation fails; Rust aborts | `OutOfMemory` |
//! | CPU time | the child, `RLIMIT_CPU` (soft; hard one second later) | SIGXCPU (SIGKILL) | `CpuTimeExceeded` (`Crashed`, SIGKILL named) |
//! | wall clock | the parent, polling `try_wait` | the parent kills the child | `TimedOut` |
//! | core dumps | the child, `RLIMIT_CORE` = 0 | none written | — |
//! | answer size | the parent, 256 MiB of stdout | the answer is discarded | `Protocol` |
//!
//! Any other death is `Crashed` with the signal named (SIGSEGV, SIGABRT, a stack overflow)
//! and the end of the child's stderr (2 KiB); a non-zero exit likewise; stdout that is not
//! an answer is `Protocol`. A clean extraction failure is `Failed(IngestError)`, the same
//! error as in process. Unix only. The test binary `memvault-ingest-worker` (a binary of
//! this package, which the server never builds: it depends on the library) is
//! `serve_worker` plus `--fault panic|abort|overflow|hang|spin|allocate|garbage`, injected
//! through [`worker::serve_worker_with`]; the production path has no fault switch.
//!
//! # Layout
//!
//! - `kind.rs`: [`Kind`], its stable names and MIME types, [`Route`].
//! - `sniff.rs`: [`sniff`].
//! - `limits.rs`: [`Limits`]. `error.rs`: [`IngestError`].
//! - `extracted.rs`: [`Extracted`], [`Section`], [`Location`], and the builder every
//!   extractor writes through (character cap, section ranges).
//! - `archive.rs`: zip entries read under the caps. `decode.rs`: bytes to text.
//! - `formats/`: one extractor per format family and the dispatch (`mod.rs`); `xml.rs`
//!   and `markdown.rs` are their shared helpers.
//! - `fetch.rs`: native engines from pinned PyPI wheels ([`fetch::ensure_pdfium`]).
//!   `pdfium/`: the pdfium engine for `formats/pdf.rs` (binding, pages, OCR of scans).
//! - `worker.rs`: [`worker::serve_worker`] (the child) and [`worker::Worker`] (the
//!   parent).
//! - `ocr.rs`: Tesseract as a subprocess. [`tesseract_fetch`]: Tesseract located, or
//!   fetched from pinned Debian packages ([`ensure_tesseract`]) for
//!   [`Engines::tesseract`]. `bin/memvault-ingest-worker.rs`: the fault-injecting test worker.

mod archive;
mod decode;
mod engines;
mod error;
mod extracted;
pub mod fetch;
mod formats;
mod kind;
mod limits;
mod ocr;
mod pdfium;
mod sniff;
pub mod tesseract_fetch;
#[cfg(unix)]
pub mod worker;

pub use engines::{extract_with, Engines};
pub use error::{IngestError, Limit};
pub use extracted::{Deferred, Extracted, ImageInfo, Location, Section};
pub use kind::{AudioFormat, ImageFormat, Kind, Route};
pub use limits::Limits;
pub use sniff::sniff;
pub use tesseract_fetch::{ensure_tesseract, fetch_tesseract, locate_tesseract};

/// Extracts the text of a file already sniffed as `kind`.
///
/// # Errors
///
/// [`IngestError::NeedsWorker`] for PDF, images and audio; otherwise a reason the file has
/// no text: empty, encrypted, over a limit, malformed, unsupported.
pub fn extract(kind: Kind, bytes: &[u8], limits: &Limits) -> Result<Extracted, IngestError> {
    formats::extract_at_depth(kind, bytes, limits, 0)
}
