//! A rendered page to text: BGRA pixels to grayscale, grayscale to PNG (the `png` crate), PNG to text with
//! `tesseract stdin stdout` as a subprocess (`OMP_THREAD_LIMIT=1`: without it tesseract's
//! OpenMP threads fight each other on a small machine, 10.4 s instead of 1.5 s per page),
//! under a wall-clock timeout.
//!
//! The Tesseract run itself is `crate::ocr`, shared with images.

use std::path::Path;
use std::time::Duration;

/// A grayscale bitmap (`stride` bytes per row, `stride >= width`) as a PNG file.
pub(crate) fn gray_png(
    width: u32,
    height: u32,
    stride: usize,
    pixels: &[u8],
) -> Result<Vec<u8>, String> {
    let row_bytes = width as usize;
    if stride < row_bytes || pixels.len() < stride.saturating_mul(height as usize) {
        return Err(format!(
            "bitmap of {} bytes is too small for {width}x{height} (stride {stride})",
            pixels.len()
        ));
    }
    let mut png = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut png, width, height);
        encoder.set_color(png::ColorType::Grayscale);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Fast);
        let mut writer = encoder
            .write_header()
            .map_err(|error| format!("png header: {error}"))?;
        let mut packed = Vec::with_capacity(row_bytes * height as usize);
        for row in pixels.chunks(stride).take(height as usize) {
            packed.extend_from_slice(row.get(..row_bytes).unwrap_or(row));
        }
        writer
            .write_image_data(&packed)
            .map_err(|error| format!("png data: {error}"))?;
    }
    Ok(png)
}

/// A BGRA bitmap (rows possibly padded) as packed 8-bit luminance (ITU-R BT.601 weights).
pub(crate) fn bgra_to_gray(width: u32, height: u32, bgra: &[u8]) -> Result<Vec<u8>, String> {
    let rows = height as usize;
    let row_bytes = (width as usize).saturating_mul(4);
    let stride = bgra.len().checked_div(rows).unwrap_or(0);
    if stride < row_bytes {
        return Err(format!(
            "bitmap of {} bytes is too small for {width}x{height}",
            bgra.len()
        ));
    }
    let mut gray = Vec::with_capacity(width as usize * rows);
    for row in bgra.chunks(stride).take(rows) {
        for pixel in row.get(..row_bytes).unwrap_or(row).chunks_exact(4) {
            if let [blue, green, red, _alpha] = pixel {
                let luma = 299 * u32::from(*red) + 587 * u32::from(*green) + 114 * u32::from(*blue);
                gray.push(u8::try_from(luma / 1000).unwrap_or(u8::MAX));
            }
        }
    }
    Ok(gray)
}

/// True when nearly every pixel is near white: nothing for OCR to read.
pub(crate) fn looks_blank(width: u32, height: u32, stride: usize, pixels: &[u8]) -> bool {
    let row_bytes = width as usize;
    let mut dark = 0usize;
    let mut total = 0usize;
    for row in pixels.chunks(stride.max(1)).take(height as usize) {
        let row = row.get(..row_bytes).unwrap_or(row);
        total += row.len();
        dark += row.iter().filter(|&&pixel| pixel < 200).count();
    }
    // Fewer than one pixel in ten thousand darker than light gray.
    dark.saturating_mul(10_000) < total
}

/// Reads the text of a rendered page with Tesseract (`crate::ocr`, which also runs a
/// Tesseract fetched into the cache with its own libraries and language data).
pub(crate) fn tesseract(program: &Path, png: &[u8], timeout: Duration) -> Result<String, String> {
    crate::ocr::recognize(png, program, timeout).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_padded_bitmap_encodes_row_by_row() {
        // 3x2 pixels with rows padded to 4 bytes.
        let pixels = [0u8, 128, 255, 9, 255, 255, 255, 9];
        let png = gray_png(3, 2, 4, &pixels).unwrap();
        assert!(png.starts_with(b"\x89PNG"));
        assert!(gray_png(3, 3, 4, &pixels).is_err());
        assert!(!looks_blank(3, 2, 4, &pixels));
        assert!(looks_blank(3, 1, 4, &[255, 255, 255, 0]));
        // Two BGRA pixels, a padding byte per row: white and pure red.
        let bgra = [255u8, 255, 255, 255, 0, 0, 255, 255, 7];
        assert_eq!(bgra_to_gray(2, 1, &bgra).unwrap(), [255, 76]);
        assert!(bgra_to_gray(3, 1, &bgra).is_err());
    }

    #[test]
    fn a_missing_tesseract_is_an_error_not_a_panic() {
        let error = tesseract(
            Path::new("/nonexistent/tesseract"),
            b"",
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(error.contains("/nonexistent/tesseract"), "{error}");
    }
}
