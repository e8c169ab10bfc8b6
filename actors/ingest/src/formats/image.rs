//! Images (PNG, JPEG, GIF, WebP, TIFF, BMP): the dimensions from the header, always, then
//! the text by OCR when Tesseract is available. A photo without text is not a failure: it
//! gives empty text, its dimensions and a note.

use std::time::Duration;

use crate::engines::Engines;
use crate::error::{IngestError, Limit};
use crate::extracted::{Extracted, ImageInfo, TextBuilder};
use crate::kind::{ImageFormat, Kind};
use crate::limits::Limits;
use crate::ocr::{self, OcrError};

/// What the note says when OCR is skipped for want of Tesseract.
pub(crate) const NO_TESSERACT_NOTE: &str = "OCR skipped: tesseract is not installed (install the \
Debian package tesseract-ocr, or let memvault fetch the pinned Debian packages into its cache)";

pub(crate) fn extract(
    kind: Kind,
    bytes: &[u8],
    limits: &Limits,
    engines: &Engines,
) -> Result<Extracted, IngestError> {
    let Kind::Image(format) = kind else {
        return Err(IngestError::invalid(kind, "not an image"));
    };
    if !has_magic(format, bytes) {
        return Err(IngestError::invalid(
            kind,
            "the file does not begin like one",
        ));
    }
    let info = dimensions(kind, bytes)?;
    let pixels = u64::from(info.width) * u64::from(info.height);
    if pixels > limits.max_image_pixels {
        return Err(IngestError::LimitExceeded {
            kind,
            limit: Limit::ImagePixels,
            max: limits.max_image_pixels,
        });
    }
    let mut builder = TextBuilder::new(limits.max_chars);
    builder.note(format!("image {}×{}", info.width, info.height));
    match &engines.tesseract {
        None => builder.note(NO_TESSERACT_NOTE),
        Some(tesseract) => {
            let timeout = Duration::from_secs(limits.max_ocr_seconds.max(1));
            match ocr::recognize(bytes, tesseract, timeout) {
                Ok(text) if text.is_empty() => builder.note("no text found in the image"),
                Ok(text) => builder.block(&text),
                Err(OcrError::Unreadable(reason)) => {
                    return Err(IngestError::invalid(
                        kind,
                        format!("OCR could not read it: {reason}"),
                    ))
                }
                // The engine, not the image: the image is still kept, with its size.
                Err(error @ (OcrError::Unavailable(_) | OcrError::TimedOut(_))) => {
                    builder.note(format!("OCR skipped: {error}"));
                }
            }
        }
    }
    let mut extracted = builder.finish(kind, None);
    extracted.image = Some(info);
    Ok(extracted)
}

/// The magic numbers Leptonica (Tesseract's image reader) recognises. Tesseract reads
/// stdin in which Leptonica sees no image as a list of file names to open, so nothing else
/// may reach it.
fn has_magic(format: ImageFormat, bytes: &[u8]) -> bool {
    match format {
        ImageFormat::Png => bytes.starts_with(b"\x89PNG\r\n\x1A\n"),
        ImageFormat::Jpeg => bytes.starts_with(b"\xFF\xD8"),
        ImageFormat::Gif => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
        ImageFormat::Webp => bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP"),
        ImageFormat::Tiff => bytes.starts_with(b"II*\0") || bytes.starts_with(b"MM\0*"),
        ImageFormat::Bmp => bytes.starts_with(b"BM"),
    }
}

/// Width and height from the header, without decoding the pixels.
fn dimensions(kind: Kind, bytes: &[u8]) -> Result<ImageInfo, IngestError> {
    let size = imagesize::blob_size(bytes).map_err(|error| {
        IngestError::invalid(
            kind,
            format!("its size cannot be read from the header: {error}"),
        )
    })?;
    let width = u32::try_from(size.width).ok().filter(|width| *width > 0);
    let height = u32::try_from(size.height).ok().filter(|height| *height > 0);
    match (width, height) {
        (Some(width), Some(height)) => Ok(ImageInfo { width, height }),
        _ => Err(IngestError::invalid(
            kind,
            format!("the header declares {}×{} pixels", size.width, size.height),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG signature and an IHDR chunk declaring `width`×`height` (CRC not checked by
    /// the header reader), nothing else.
    fn png_header(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1A\n\0\0\0\x0DIHDR".to_vec();
        bytes.extend(width.to_be_bytes());
        bytes.extend(height.to_be_bytes());
        bytes.extend([8, 0, 0, 0, 0, 0, 0, 0, 0]);
        bytes
    }

    #[test]
    fn a_pixel_bomb_fails_before_any_decoding() {
        let png = Kind::Image(ImageFormat::Png);
        let error = extract(
            png,
            &png_header(20_000, 20_000),
            &Limits::default(),
            &Engines::default(),
        )
        .unwrap_err();
        assert_eq!(
            error,
            IngestError::LimitExceeded {
                kind: png,
                limit: Limit::ImagePixels,
                max: 50_000_000
            }
        );
        assert_eq!(
            error.to_string(),
            "image too large: more than 50000000 pixels"
        );
    }

    #[test]
    fn without_tesseract_the_size_is_kept_and_ocr_noted() {
        let png = Kind::Image(ImageFormat::Png);
        let extracted = extract(
            png,
            &png_header(640, 480),
            &Limits::default(),
            &Engines::default(),
        )
        .unwrap();
        assert_eq!(extracted.text, "");
        assert_eq!(
            extracted.image,
            Some(ImageInfo {
                width: 640,
                height: 480
            })
        );
        assert_eq!(
            extracted.notes,
            vec!["image 640×480".to_owned(), NO_TESSERACT_NOTE.to_owned()]
        );
    }

    #[test]
    fn bytes_of_another_kind_are_refused() {
        let jpeg = Kind::Image(ImageFormat::Jpeg);
        let error = extract(
            jpeg,
            &png_header(1, 1),
            &Limits::default(),
            &Engines::default(),
        )
        .unwrap_err();
        assert_eq!(error.code(), "invalid");
        let zero = extract(
            Kind::Image(ImageFormat::Png),
            &png_header(0, 10),
            &Limits::default(),
            &Engines::default(),
        )
        .unwrap_err();
        assert_eq!(zero.code(), "invalid");
    }
}
