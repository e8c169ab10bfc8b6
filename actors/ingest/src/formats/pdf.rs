//! PDF: one section per page (`Location::Page`), the document's Title metadata as title.
//!
//! Engines, in order:
//! - pdfium (`crate::pdfium`), when [`Engines::pdfium`] names a library that loads: text
//!   per page; pages with (almost) no text but something drawn are rendered at 200 dpi and
//!   OCRed with tesseract when [`Engines::tesseract`] is set (up to `max_ocr_pages`).
//! - otherwise `pdf-extract` (pure Rust, on lopdf), page by page, each page under
//!   `catch_unwind` (it panics on real PDFs: unknown encodings, a page without MediaBox),
//!   with a note that the fallback was used. It cannot OCR.
//!
//! Both engines: an encrypted PDF (a user password) is [`IngestError::Encrypted`]; a file
//! that does not parse is [`IngestError::Invalid`]; pages past `max_pages` are skipped with
//! a note; text goes through the character cap. Each page's text is tidied alike
//! ([`tidy_page_text`]).

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::engines::Engines;
use crate::error::IngestError;
use crate::extracted::{Extracted, Location, TextBuilder};
use crate::kind::Kind;
use crate::limits::Limits;

/// A page with fewer non-space characters than this has no real text layer (a scan may
/// still carry a page number or a scanner's stamp).
pub(crate) const MIN_PAGE_CHARS: usize = 16;

pub(crate) fn extract(
    bytes: &[u8],
    limits: &Limits,
    engines: &Engines,
) -> Result<Extracted, IngestError> {
    let fallback_note = match &engines.pdfium {
        Some(library) => match crate::pdfium::bind(library) {
            Ok(pdfium) => {
                let tesseract = engines.tesseract.as_deref();
                return catch_unwind(AssertUnwindSafe(|| {
                    crate::pdfium::extract(pdfium, bytes, limits, tesseract)
                }))
                .unwrap_or(Err(IngestError::ParserPanicked { kind: Kind::Pdf }));
            }
            Err(reason) => format!(
                "pdfium could not be loaded ({reason}): extracted with the pure-Rust fallback"
            ),
        },
        None => "pdfium not available: extracted with the pure-Rust fallback".to_owned(),
    };
    let mut extracted = catch_unwind(AssertUnwindSafe(|| extract_fallback(bytes, limits)))
        .unwrap_or(Err(IngestError::ParserPanicked { kind: Kind::Pdf }))?;
    extracted.notes.insert(0, fallback_note);
    Ok(extracted)
}

/// The pure-Rust engine: lopdf parses, pdf-extract lays out each page's text.
fn extract_fallback(bytes: &[u8], limits: &Limits) -> Result<Extracted, IngestError> {
    use pdf_extract::Document;

    let mut document = Document::load_mem(bytes).map_err(|error| {
        IngestError::invalid(
            Kind::Pdf,
            format!("cannot parse it (damaged or truncated): {error}"),
        )
    })?;
    if document.is_encrypted() {
        // Only an empty user password can be tried; anything else needs the password.
        if document.decrypt("").is_err() {
            return Err(IngestError::Encrypted { kind: Kind::Pdf });
        }
    }
    let title = fallback_title(&document);
    let pages = document.get_pages();
    let mut builder = TextBuilder::new(limits.max_chars);
    let mut blank = 0usize;
    let mut textless = Vec::new();
    let mut failed = Vec::new();
    for (index, (&number, &page_id)) in pages.iter().enumerate() {
        if builder.is_full() {
            break;
        }
        if index >= limits.max_pages {
            builder.note(format!(
                "{} pages after the first {} skipped (limit max_pages)",
                pages.len() - index,
                limits.max_pages
            ));
            break;
        }
        // `None` for a page that draws nothing: pdf-extract is not even asked (it re-reads
        // the page tree for every page, which thousands of blank pages make slow).
        let page = catch_unwind(AssertUnwindSafe(|| {
            let blank = document
                .get_page_content(page_id)
                .is_ok_and(|content| content.iter().all(u8::is_ascii_whitespace));
            if blank {
                return Ok(None);
            }
            let mut output = PageText::default();
            pdf_extract::output_doc_page(&document, &mut output, number).map(|()| Some(output.text))
        }));
        let text = match page {
            Ok(Ok(Some(raw))) => tidy_page_text(&raw),
            Ok(Ok(None)) => {
                blank += 1;
                continue;
            }
            Ok(Err(error)) => {
                failed.push(format!("page {number}: {error}"));
                continue;
            }
            Err(_) => {
                failed.push(format!("page {number}: the parser crashed"));
                continue;
            }
        };
        if meaningful_chars(&text) < MIN_PAGE_CHARS {
            textless.push(number);
        }
        if text.is_empty() {
            continue;
        }
        let section = builder.open_section(Location::Page { number }, None);
        builder.block(&text);
        builder.close_section(section);
    }
    if failed.len() == pages.len() && !pages.is_empty() {
        return Err(IngestError::invalid(
            Kind::Pdf,
            format!(
                "no page could be read ({})",
                failed.first().map_or("", |f| f.as_str())
            ),
        ));
    }
    for failure in failed.iter().take(20) {
        builder.note(format!("{failure}; the page is skipped"));
    }
    if failed.len() > 20 {
        builder.note(format!(
            "{} more pages could not be read",
            failed.len() - 20
        ));
    }
    if blank > 0 {
        builder.note(format!(
            "{blank} blank page{}",
            if blank == 1 { "" } else { "s" }
        ));
    }
    if !textless.is_empty() {
        let listed: Vec<String> = textless.iter().take(20).map(u32::to_string).collect();
        let more = textless.len().saturating_sub(20);
        builder.note(format!(
            "{} {}{}{} no text layer; OCR needs pdfium and tesseract-ocr",
            if textless.len() == 1 { "page" } else { "pages" },
            listed.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            },
            if textless.len() == 1 { " has" } else { " have" }
        ));
    }
    Ok(builder.finish(Kind::Pdf, title))
}

/// pdf-extract's glyphs laid out as lines of text. Like its `PlainTextOutput`, but the
/// pen advances by each glyph's width plus the character spacing, and a gap makes a
/// space only past [`WORD_GAP`] of the font size: `PlainTextOutput` splits words that
/// Google Docs and others position glyph by glyph, or whose fonts lack some widths
/// ("Exa mp le do cumen t").
#[derive(Default)]
struct PageText {
    text: String,
    page_height: f64,
    /// Where the last glyph ended (x), its baseline (y, top-down), and whether its width
    /// was known; `None` at the start of a page.
    last: Option<(f64, f64, bool)>,
}

/// A horizontal gap wider than this fraction of the font size is a word space.
const WORD_GAP: f64 = 0.15;

impl pdf_extract::OutputDev for PageText {
    fn begin_page(
        &mut self,
        _page_num: u32,
        media_box: &pdf_extract::MediaBox,
        _art_box: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), pdf_extract::OutputError> {
        self.page_height = media_box.ury - media_box.lly;
        self.last = None;
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), pdf_extract::OutputError> {
        Ok(())
    }

    fn output_character(
        &mut self,
        trm: &pdf_extract::Transform,
        width: f64,
        spacing: f64,
        font_size: f64,
        character: &str,
    ) -> Result<(), pdf_extract::OutputError> {
        // The rendered font size: the side of the square with the glyph box's area.
        let scaled_x = font_size * trm.m11 + font_size * trm.m21;
        let scaled_y = font_size * trm.m12 + font_size * trm.m22;
        let size = (scaled_x * scaled_y).abs().sqrt();
        let scale = if font_size.abs() > f64::EPSILON {
            size / font_size.abs()
        } else {
            1.0
        };
        let x = trm.m31;
        let y = self.page_height - trm.m32;
        if let Some((last_x, last_y, width_known)) = self.last {
            // A glyph whose width the font does not give (pdf-extract says 0) ends where it
            // starts; then only a gap wider than any glyph is a space.
            let word_gap = if width_known { WORD_GAP } else { 1.0 };
            if (y - last_y).abs() > size * 1.5 {
                self.text.push_str("\n\n");
            } else if (y - last_y).abs() > size * 0.5 || x < last_x - size {
                self.text.push('\n');
            } else if x > last_x + size * word_gap
                && !self.text.ends_with(' ')
                && !character.starts_with(' ')
            {
                self.text.push(' ');
            }
        }
        self.text.push_str(character);
        self.last = Some((x + (width * font_size + spacing) * scale, y, width > 0.0));
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), pdf_extract::OutputError> {
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), pdf_extract::OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), pdf_extract::OutputError> {
        Ok(())
    }
}

/// The trailer's `/Info` `/Title`, decoded (UTF-16BE with a BOM, else PDFDocEncoding,
/// which is Latin-1 for everything a title uses).
fn fallback_title(document: &pdf_extract::Document) -> Option<String> {
    let info = document.trailer.get(b"Info").ok()?;
    let info = match info {
        pdf_extract::Object::Reference(id) => document.get_object(*id).ok()?,
        other => other,
    };
    let title = info.as_dict().ok()?.get(b"Title").ok()?;
    let title = match title {
        pdf_extract::Object::Reference(id) => document.get_object(*id).ok()?,
        other => other,
    };
    let bytes = title.as_str().ok()?;
    let text = match bytes {
        [0xFE, 0xFF, rest @ ..] => {
            let units: Vec<u16> = rest
                .chunks_exact(2)
                .map(|pair| match pair {
                    [high, low] => u16::from_be_bytes([*high, *low]),
                    _ => 0xFFFD,
                })
                .collect();
            String::from_utf16_lossy(&units)
        }
        _ => bytes.iter().map(|&byte| char::from(byte)).collect(),
    };
    let text = text.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// Characters that are not whitespace.
pub(crate) fn meaningful_chars(text: &str) -> usize {
    text.chars()
        .filter(|character| !character.is_whitespace())
        .count()
}

/// A page's text as Markdown-ish paragraphs: line ends unified, control characters and
/// non-characters and private-use glyphs dropped, runs of spaces collapsed, lines trimmed, at most one blank line
/// in a row (paragraph breaks kept). A word that pdfium split at a line end with a
/// marked hyphen (U+0002 or a soft hyphen) is joined back.
pub(crate) fn tidy_page_text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut pending_break = None::<&str>;
    let mut joined = false;
    for line in raw.split('\n') {
        let mut tidy = String::with_capacity(line.len());
        let mut space = false;
        for character in line.chars() {
            if character.is_whitespace() {
                space = !tidy.is_empty();
                continue;
            }
            if (character.is_control() && character != '\u{2}')
                || matches!(character, '\u{FFFE}' | '\u{FFFF}' | '\u{FEFF}')
                || is_private_use(character)
            {
                continue;
            }
            if space {
                tidy.push(' ');
                space = false;
            }
            tidy.push(character);
        }
        if tidy.is_empty() {
            if !out.is_empty() && !joined {
                pending_break = Some("\n\n");
            }
            continue;
        }
        if !joined {
            if let Some(separator) = pending_break.take() {
                out.push_str(separator);
            }
        }
        pending_break = None;
        let hyphenated = tidy.ends_with(['\u{2}', '\u{AD}']);
        let content = tidy.trim_end_matches(['\u{2}', '\u{AD}']);
        out.push_str(&content.replace('\u{2}', ""));
        joined = hyphenated;
        if !joined {
            pending_break = Some("\n");
        }
    }
    out
}

/// Private-use code points: glyphs (icons, flags) that mean nothing without their font.
fn is_private_use(character: char) -> bool {
    matches!(character, '\u{E000}'..='\u{F8FF}' | '\u{F0000}'..='\u{10FFFF}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_text_is_tidied_into_paragraphs() {
        let raw = "  Title  \r\n\r\n\r\nfirst  line\r\nsecond\tline ends in a hyphen\u{2}\r\nated word\r\n\u{FFFE}\r\n\r\nnext\u{0} paragraph ";
        assert_eq!(
            tidy_page_text(raw),
            "Title\n\nfirst line\nsecond line ends in a hyphenated word\n\nnext paragraph"
        );
        assert_eq!(tidy_page_text(""), "");
        assert_eq!(tidy_page_text(" \n\n \r\n"), "");
    }

    #[test]
    fn without_pdfium_garbage_is_invalid_and_not_a_panic() {
        let engines = Engines::default();
        let error = extract(b"%PDF-1.4 not really", &Limits::default(), &engines).unwrap_err();
        assert!(matches!(error, IngestError::Invalid { .. }), "{error:?}");
    }
}
