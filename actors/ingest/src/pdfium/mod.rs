//! The pdfium engine: `libpdfium.so` (see [`crate::fetch::PDFIUM`]) bound at run time
//! through `pdfium-render`, once per process; text per page, and pages without a text
//! layer rendered to grayscale and read by tesseract ([`ocr`]).

mod ocr;

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use pdfium_render::prelude::*;

use crate::error::IngestError;
use crate::extracted::{Extracted, Location, TextBuilder};
use crate::formats::pdf::{meaningful_chars, tidy_page_text, MIN_PAGE_CHARS};
use crate::kind::Kind;
use crate::limits::Limits;

/// Scans are rendered at 200 dpi (PDF points are 1/72 inch)...
const OCR_DPI: f32 = 200.0;
/// ...but never wider or taller than this many pixels (a hostile page can be 200 inches).
const MAX_RENDER_PIXELS: i32 = 5_000;
/// One page's OCR may take this long.
const OCR_TIMEOUT: Duration = Duration::from_secs(60);
/// Page numbers a note lists before it says "and N more".
const LISTED_PAGES: usize = 20;

/// The process's pdfium. pdfium-render binds one library per process (a second
/// `bind_to_library` fails), so the first call's outcome is kept, and later calls get it
/// whatever path they name (a worker extracts one file per process anyway).
static PDFIUM: OnceLock<Result<Pdfium, String>> = OnceLock::new();

/// Held while a document loads: see [`extract`].
static LOADING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// pdfium loaded from `library`, or why it could not be.
pub(crate) fn bind(library: &Path) -> Result<&'static Pdfium, String> {
    PDFIUM
        .get_or_init(|| {
            Pdfium::bind_to_library(library)
                .map(Pdfium::new)
                .map_err(|error| format!("{}: {error}", library.display()))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Pages that gave no text, by what became of them.
#[derive(Default)]
struct Textless {
    /// Nothing drawn on them at all.
    blank: usize,
    /// Read by OCR.
    ocr_read: Vec<u32>,
    /// Drawn but not OCRed: no tesseract.
    no_tesseract: Vec<u32>,
    /// Drawn but not OCRed: past `max_ocr_pages`.
    over_limit: Vec<u32>,
}

pub(crate) fn extract(
    pdfium: &Pdfium,
    bytes: &[u8],
    limits: &Limits,
    tesseract: Option<&Path>,
) -> Result<Extracted, IngestError> {
    let document = {
        // pdfium reports why a load failed through one process-wide "last error": two
        // loads at once (threads of one process; a worker reads one file, tests many)
        // could read each other's reason, a damaged file's as "encrypted". One load at
        // a time, its reason read before the next.
        let _one_load = LOADING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        pdfium
            .load_pdf_from_byte_slice(bytes, None)
            .map_err(open_error)?
    };
    let title = document
        .metadata()
        .get(PdfDocumentMetadataTagType::Title)
        .map(|tag| tag.value().trim().to_owned());
    let pages = document.pages();
    let page_count = usize::try_from(pages.len()).unwrap_or(0);
    let mut builder = TextBuilder::new(limits.max_chars);
    let mut textless = Textless::default();
    let mut ocr_attempts = 0usize;
    for index in 0..page_count {
        if builder.is_full() {
            break;
        }
        if index >= limits.max_pages {
            builder.note(format!(
                "{} pages after the first {} skipped (limit max_pages)",
                page_count - index,
                limits.max_pages
            ));
            break;
        }
        let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let page = match i32::try_from(index)
            .map_err(|_| PdfiumError::PageIndexOutOfBounds)
            .and_then(|index| pages.get(index))
        {
            Ok(page) => page,
            Err(error) => {
                builder.note(format!("page {number} cannot be read: {error}"));
                continue;
            }
        };
        let mut text = match page.text() {
            Ok(text) => tidy_page_text(&text.all()),
            Err(error) => {
                builder.note(format!("page {number}: no text ({error})"));
                String::new()
            }
        };
        if meaningful_chars(&text) < MIN_PAGE_CHARS {
            if page.objects().is_empty() {
                textless.blank += 1;
            } else {
                match tesseract {
                    None => textless.no_tesseract.push(number),
                    Some(_) if ocr_attempts >= limits.max_ocr_pages => {
                        textless.over_limit.push(number)
                    }
                    Some(program) => {
                        ocr_attempts += 1;
                        match ocr_page(&page, program) {
                            Ok(Some(read)) if meaningful_chars(&read) > meaningful_chars(&text) => {
                                text = read;
                                textless.ocr_read.push(number);
                            }
                            Ok(_) => {}
                            Err(reason) => {
                                builder.note(format!("page {number}: OCR failed ({reason})"))
                            }
                        }
                    }
                }
            }
        }
        if text.is_empty() {
            continue;
        }
        let section = builder.open_section(Location::Page { number }, None);
        builder.block(&text);
        builder.close_section(section);
    }
    note_textless(&mut builder, &textless, limits);
    Ok(builder.finish(Kind::Pdf, title))
}

fn open_error(error: PdfiumError) -> IngestError {
    match error {
        PdfiumError::PdfiumLibraryInternalError(
            PdfiumInternalError::PasswordError | PdfiumInternalError::SecurityError,
        ) => IngestError::Encrypted { kind: Kind::Pdf },
        PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::FormatError) => {
            IngestError::invalid(Kind::Pdf, "pdfium cannot parse it (damaged or truncated)")
        }
        other => IngestError::invalid(Kind::Pdf, format!("pdfium cannot open it: {other}")),
    }
}

/// The page rendered at [`OCR_DPI`] in grayscale and read by tesseract; `None` when the
/// render is blank.
fn ocr_page(page: &PdfPage<'_>, tesseract: &Path) -> Result<Option<String>, String> {
    // pdfium draws nothing of an image into an 8-bit gray bitmap (measured: all white), so
    // the page is rendered as BGRA and reduced to luminance here.
    let config = PdfRenderConfig::new()
        .scale_page_by_factor(OCR_DPI / 72.0)
        .set_maximum_width(MAX_RENDER_PIXELS)
        .set_maximum_height(MAX_RENDER_PIXELS)
        .set_format(PdfBitmapFormat::BGRA)
        .render_form_data(true)
        .render_annotations(true);
    let bitmap = page
        .render_with_config(&config)
        .map_err(|error| format!("cannot render: {error}"))?;
    let width = u32::try_from(bitmap.width()).map_err(|_| "negative width".to_owned())?;
    let height = u32::try_from(bitmap.height()).map_err(|_| "negative height".to_owned())?;
    if height == 0 || width == 0 {
        return Ok(None);
    }
    let pixels = ocr::bgra_to_gray(width, height, &bitmap.as_raw_bytes())?;
    drop(bitmap);
    let stride = width as usize;
    if ocr::looks_blank(width, height, stride, &pixels) {
        return Ok(None);
    }
    let png = ocr::gray_png(width, height, stride, &pixels)?;
    drop(pixels);
    let text = ocr::tesseract(tesseract, &png, OCR_TIMEOUT)?;
    Ok(Some(tidy_page_text(&text)))
}

fn note_textless(builder: &mut TextBuilder, textless: &Textless, limits: &Limits) {
    if textless.blank > 0 {
        builder.note(match textless.blank {
            1 => "1 blank page".to_owned(),
            count => format!("{count} blank pages"),
        });
    }
    if !textless.ocr_read.is_empty() {
        builder.note(format!(
            "{} no text layer: read by OCR (tesseract)",
            pages_phrase(&textless.ocr_read, "has", "have")
        ));
    }
    if !textless.no_tesseract.is_empty() {
        builder.note(format!(
            "{} no text layer; OCR skipped: install tesseract-ocr",
            pages_phrase(&textless.no_tesseract, "has", "have")
        ));
    }
    if !textless.over_limit.is_empty() {
        builder.note(format!(
            "{} no text layer; not OCRed past the first {} such pages (limit max_ocr_pages)",
            pages_phrase(&textless.over_limit, "has", "have"),
            limits.max_ocr_pages
        ));
    }
}

/// "page 3 has", "pages 3, 4 and 9 have", "pages 1, 2, … 20 and 31 more have".
fn pages_phrase(numbers: &[u32], singular: &str, plural: &str) -> String {
    match numbers {
        [] => String::new(),
        [one] => format!("page {one} {singular}"),
        _ => {
            let listed: Vec<String> = numbers
                .iter()
                .take(LISTED_PAGES)
                .map(u32::to_string)
                .collect();
            if numbers.len() > LISTED_PAGES {
                format!(
                    "pages {} and {} more {plural}",
                    listed.join(", "),
                    numbers.len() - LISTED_PAGES
                )
            } else {
                let mut listed = listed;
                let last = listed.pop().unwrap_or_default();
                format!("pages {} and {last} {plural}", listed.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_lists_read_naturally() {
        assert_eq!(pages_phrase(&[3], "has", "have"), "page 3 has");
        assert_eq!(
            pages_phrase(&[3, 4, 9], "has", "have"),
            "pages 3, 4 and 9 have"
        );
        let many: Vec<u32> = (1..=25).collect();
        assert!(pages_phrase(&many, "has", "have").ends_with("20 and 5 more have"));
    }

    #[test]
    fn a_missing_library_is_an_error_not_a_panic() {
        // Only meaningful when nothing bound pdfium earlier in this test process.
        if PDFIUM.get().is_none() {
            let error = bind(Path::new("/nonexistent/libpdfium.so")).unwrap_err();
            assert!(error.contains("/nonexistent/libpdfium.so"), "{error}");
        }
    }
}
