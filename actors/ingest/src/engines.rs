//! The third-party engines that PDF, image and audio extraction drive, and the dispatch to
//! them. The parent process locates (or fetches) each engine and names it in the worker's
//! request; the worker only uses what it is given. A missing engine is not an error: the
//! file is extracted as far as the others allow, with a note saying what was skipped and
//! how to enable it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::IngestError;
use crate::extracted::Extracted;
use crate::formats;
use crate::kind::{Kind, Route};
use crate::limits::Limits;

/// Where each engine is on this machine; `None` when it is not available.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Engines {
    /// `libpdfium.so` (from the pinned `pypdfium2` wheel).
    #[serde(default)]
    pub pdfium: Option<PathBuf>,
    /// The `tesseract` program (Debian `tesseract-ocr`).
    #[serde(default)]
    pub tesseract: Option<PathBuf>,
    /// The folder of the Moonshine tiny-en model and its C library (from the pinned
    /// `moonshine-voice` wheel).
    #[serde(default)]
    pub moonshine: Option<PathBuf>,
}

/// [`crate::extract`], plus PDF, images and audio through `engines`. Run it in a worker
/// process: the engines are native code.
///
/// # Errors
///
/// As [`crate::extract`], except that PDF, images and audio are extracted rather than
/// answered with [`IngestError::NeedsWorker`].
pub fn extract_with(
    kind: Kind,
    bytes: &[u8],
    limits: &Limits,
    engines: &Engines,
) -> Result<Extracted, IngestError> {
    if bytes.is_empty() {
        return Err(IngestError::Empty);
    }
    match kind.route() {
        Route::PdfWorker => formats::pdf::extract(bytes, limits, engines),
        Route::ImageWorker => formats::image::extract(kind, bytes, limits, engines),
        Route::AudioWorker => formats::audio::extract(kind, bytes, limits, engines),
        Route::Extract | Route::Unsupported => crate::extract(kind, bytes, limits),
    }
}
