//! Images: OCR of a rendered page finds its manifest phrases, in every image format (the
//! page re-encoded at test time as PNG, JPEG, GIF, WebP, TIFF and BMP), in process and
//! through the worker; a photo without text, a missing Tesseract, a Tesseract that hangs or
//! cannot start each give the image with its size and a note; a pixel bomb and a truncated
//! PNG fail cleanly; Tesseract fetched from the pinned Debian packages reads the page too.
//!
//! The real files are those of the `files` conformance area (`../shared/data/files`,
//! CC-BY-SA-4.0, listed with their sources in its `manifest.json`). Tesseract is the one on
//! `PATH`, else one fetched into the test's temporary folder.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use memvault_ingest::tesseract_fetch::{fetch_tesseract, tesseract_version, Dependencies};
use memvault_ingest::worker::{Worker, WorkerLimits};
use memvault_ingest::{
    ensure_tesseract, extract_with, sniff, Engines, ImageFormat, ImageInfo, IngestError, Kind,
    Limit, Limits,
};
use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

const WORKER: &str = env!("CARGO_BIN_EXE_memvault-ingest-worker");
const PAGE: &str = "google-doc-document-page1.png";

fn files_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/files")
}

fn read_real_file(name: &str) -> Option<Vec<u8>> {
    let path = files_dir().join(name);
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(error) => {
            println!("skipped: {}: {error}", path.display());
            None
        }
    }
}

/// The manifest's phrases for `name`.
fn phrases(name: &str) -> Vec<String> {
    let manifest = std::fs::read_to_string(files_dir().join("manifest.json")).expect("manifest");
    let manifest: Value = serde_json::from_str(&manifest).expect("manifest is JSON");
    let file = manifest["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|file| file["name"] == name)
        .expect("listed");
    file["phrases"]
        .as_array()
        .expect("phrases")
        .iter()
        .map(|phrase| phrase.as_str().expect("a phrase").to_owned())
        .collect()
}

/// The manifest's normalisation: NFKC, soft hyphens, U+FFFE and zero-width characters
/// removed, whitespace runs collapsed to one space, case folded.
fn normalise(text: &str) -> String {
    let cleaned: String = text
        .nfkc()
        .filter(|character| {
            !matches!(
                character,
                '\u{00AD}'
                    | '\u{FFFE}'
                    | '\u{200B}'
                    | '\u{200C}'
                    | '\u{200D}'
                    | '\u{2060}'
                    | '\u{FEFF}'
            )
        })
        .collect();
    cleaned
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn missing_phrases(text: &str, phrases: &[String]) -> Vec<String> {
    let normalised = normalise(text);
    phrases
        .iter()
        .filter(|phrase| !normalised.contains(&normalise(phrase)))
        .cloned()
        .collect()
}

/// The tests' cache: a fetched Tesseract lives here between runs.
fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tesseract-cache")
}

/// The Tesseract on `PATH`, else one fetched into the cache, once for all tests.
fn tesseract() -> &'static Path {
    static TESSERACT: OnceLock<PathBuf> = OnceLock::new();
    TESSERACT.get_or_init(|| {
        ensure_tesseract(&cache_dir()).unwrap_or_else(|error| panic!("no tesseract: {error}"))
    })
}

fn with_tesseract() -> Engines {
    Engines {
        tesseract: Some(tesseract().to_path_buf()),
        ..Engines::default()
    }
}

fn png() -> Kind {
    Kind::Image(ImageFormat::Png)
}

#[test]
fn the_rendered_page_gives_its_manifest_phrases_and_its_size() {
    let Some(bytes) = read_real_file(PAGE) else {
        return;
    };
    assert_eq!(sniff(&bytes, Some(PAGE)), png());
    let engines = with_tesseract();
    let started = Instant::now();
    let extracted = extract_with(png(), &bytes, &Limits::default(), &engines).expect("OCR");
    let elapsed = started.elapsed();
    println!(
        "{PAGE}: {} chars in {:.2} s with {} ({})",
        extracted.text.chars().count(),
        elapsed.as_secs_f64(),
        tesseract().display(),
        tesseract_version(tesseract()).unwrap_or_default()
    );
    let missing = missing_phrases(&extracted.text, &phrases(PAGE));
    assert!(
        missing.is_empty(),
        "missing {missing:?} in {:?}",
        extracted.text
    );
    assert_eq!(
        extracted.image,
        Some(ImageInfo {
            width: 1242,
            height: 1755
        })
    );
    assert_eq!(extracted.notes, vec!["image 1242×1755".to_owned()]);
    assert!(!extracted.text.contains("\n\n\n"));
    assert_eq!(extracted.text, extracted.text.trim());
}

#[test]
fn a_photo_without_text_is_kept_with_its_size() {
    let Some(bytes) = read_real_file("coati.jpg") else {
        return;
    };
    let jpeg = Kind::Image(ImageFormat::Jpeg);
    assert_eq!(sniff(&bytes, Some("coati.jpg")), jpeg);
    let extracted = extract_with(jpeg, &bytes, &Limits::default(), &with_tesseract()).expect("Ok");
    assert_eq!(
        extracted.image,
        Some(ImageInfo {
            width: 300,
            height: 200
        })
    );
    assert_eq!(
        extracted.notes.first().map(String::as_str),
        Some("image 300×200")
    );
    if extracted.text.is_empty() {
        assert!(extracted
            .notes
            .contains(&"no text found in the image".to_owned()));
    }
    println!(
        "coati.jpg: text {:?}, notes {:?}",
        extracted.text, extracted.notes
    );
}

/// The top of the rendered page (its title and first lines), 8-bit grey.
fn page_top() -> Option<(u32, u32, Vec<u8>)> {
    let bytes = read_real_file(PAGE)?;
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("PNG header");
    let mut pixels = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut pixels).expect("PNG pixels");
    assert_eq!(info.color_type, png::ColorType::Grayscale);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let width = info.width;
    let height = 700.min(info.height);
    pixels.truncate(width as usize * height as usize);
    Some((width, height, pixels))
}

fn encode_png(width: u32, height: u32, grey: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().expect("PNG header");
    writer.write_image_data(grey).expect("PNG data");
    writer.finish().expect("PNG end");
    bytes
}

fn encode_jpeg(width: u32, height: u32, grey: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    jpeg_encoder::Encoder::new(&mut bytes, 90)
        .encode(
            grey,
            u16::try_from(width).unwrap(),
            u16::try_from(height).unwrap(),
            jpeg_encoder::ColorType::Luma,
        )
        .expect("JPEG");
    bytes
}

fn grey_palette() -> Vec<u8> {
    (0..=255u8)
        .flat_map(|level| [level, level, level])
        .collect()
}

fn encode_gif(width: u32, height: u32, grey: &[u8]) -> Vec<u8> {
    let (width, height) = (
        u16::try_from(width).unwrap(),
        u16::try_from(height).unwrap(),
    );
    let mut bytes = Vec::new();
    {
        let mut encoder =
            gif::Encoder::new(&mut bytes, width, height, &grey_palette()).expect("GIF");
        let frame = gif::Frame::from_indexed_pixels(width, height, grey.to_vec(), None);
        encoder.write_frame(&frame).expect("GIF frame");
    }
    bytes
}

fn encode_webp(width: u32, height: u32, grey: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    image_webp::WebPEncoder::new(&mut bytes)
        .encode(grey, width, height, image_webp::ColorType::L8)
        .expect("WebP");
    bytes
}

/// A baseline TIFF: little-endian, one uncompressed strip of 8-bit grey.
fn encode_tiff(width: u32, height: u32, grey: &[u8]) -> Vec<u8> {
    const SHORT: u16 = 3;
    const LONG: u16 = 4;
    let entries: [(u16, u16, u32); 9] = [
        (256, LONG, width),
        (257, LONG, height),
        (258, SHORT, 8),
        (259, SHORT, 1),
        (262, SHORT, 1),
        (273, LONG, 0), // strip offset, set below
        (277, SHORT, 1),
        (278, LONG, height),
        (279, LONG, width * height),
    ];
    let ifd_len = 2 + entries.len() * 12 + 4;
    let data_offset = u32::try_from(8 + ifd_len).unwrap();
    let mut bytes = b"II*\0".to_vec();
    bytes.extend(8u32.to_le_bytes());
    bytes.extend(u16::try_from(entries.len()).unwrap().to_le_bytes());
    for (tag, kind, value) in entries {
        let value = if tag == 273 { data_offset } else { value };
        bytes.extend(tag.to_le_bytes());
        bytes.extend(kind.to_le_bytes());
        bytes.extend(1u32.to_le_bytes());
        if kind == SHORT {
            bytes.extend(u16::try_from(value).unwrap().to_le_bytes());
            bytes.extend([0, 0]);
        } else {
            bytes.extend(value.to_le_bytes());
        }
    }
    bytes.extend(0u32.to_le_bytes());
    bytes.extend_from_slice(grey);
    bytes
}

/// An 8-bit paletted BMP (grey palette), rows bottom-up, padded to four bytes.
fn encode_bmp(width: u32, height: u32, grey: &[u8]) -> Vec<u8> {
    let row = (width as usize).div_ceil(4) * 4;
    let pixel_offset = 14 + 40 + 256 * 4;
    let size = pixel_offset + row * height as usize;
    let mut bytes = b"BM".to_vec();
    bytes.extend(u32::try_from(size).unwrap().to_le_bytes());
    bytes.extend([0; 4]);
    bytes.extend(u32::try_from(pixel_offset).unwrap().to_le_bytes());
    bytes.extend(40u32.to_le_bytes());
    bytes.extend(i32::try_from(width).unwrap().to_le_bytes());
    bytes.extend(i32::try_from(height).unwrap().to_le_bytes());
    bytes.extend(1u16.to_le_bytes());
    bytes.extend(8u16.to_le_bytes());
    bytes.extend(0u32.to_le_bytes()); // BI_RGB
    bytes.extend(u32::try_from(row * height as usize).unwrap().to_le_bytes());
    bytes.extend(5906u32.to_le_bytes()); // 150 dpi
    bytes.extend(5906u32.to_le_bytes());
    bytes.extend(256u32.to_le_bytes());
    bytes.extend(0u32.to_le_bytes());
    for level in 0..=255u8 {
        bytes.extend([level, level, level, 0]);
    }
    for line in grey.chunks(width as usize).rev() {
        bytes.extend_from_slice(line);
        bytes.resize(bytes.len() + (row - line.len()), 0);
    }
    bytes
}

/// Width, height and 8-bit grey pixels to a file.
type Encode = fn(u32, u32, &[u8]) -> Vec<u8>;

#[test]
fn every_image_format_is_read() {
    let Some((width, height, grey)) = page_top() else {
        return;
    };
    let engines = with_tesseract();
    let expected = vec!["Beautiful is better than ugly".to_owned()];
    let encoders: [(ImageFormat, Encode); 6] = [
        (ImageFormat::Png, encode_png),
        (ImageFormat::Jpeg, encode_jpeg),
        (ImageFormat::Gif, encode_gif),
        (ImageFormat::Webp, encode_webp),
        (ImageFormat::Tiff, encode_tiff),
        (ImageFormat::Bmp, encode_bmp),
    ];
    let mut failures = Vec::new();
    for (format, encode) in encoders {
        let kind = Kind::Image(format);
        let bytes = encode(width, height, &grey);
        assert_eq!(sniff(&bytes, None), kind, "{kind} sniffed");
        let started = Instant::now();
        match extract_with(kind, &bytes, &Limits::default(), &engines) {
            Ok(extracted) => {
                println!(
                    "{kind}: {} bytes, {} chars in {:.2} s",
                    bytes.len(),
                    extracted.text.chars().count(),
                    started.elapsed().as_secs_f64()
                );
                assert_eq!(extracted.image, Some(ImageInfo { width, height }), "{kind}");
                let missing = missing_phrases(&extracted.text, &expected);
                if !missing.is_empty() {
                    failures.push(format!(
                        "{kind}: missing {missing:?} in {:?}",
                        extracted.text
                    ));
                }
            }
            Err(error) => failures.push(format!("{kind}: {error}")),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A PNG signature and an IHDR chunk declaring `width`×`height`, and nothing else.
fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1A\n\0\0\0\x0DIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 0, 0, 0, 0, 0, 0, 0, 0]);
    bytes
}

#[test]
fn a_pixel_bomb_fails_at_its_header_without_ocr() {
    // A real 20000×20000 grey PNG of zeros compresses to about 400 KB; its header is what
    // counts, so the header alone, with a truncated body, must be refused before OCR.
    // The "OCR engine" leaves a mark when it runs: the refusal must come before it would.
    let mut bytes = png_header(20_000, 20_000);
    bytes.extend([0; 64]);
    let mark = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pixel-bomb-ocr-ran");
    let _ = std::fs::remove_file(&mark);
    let marking = Engines {
        tesseract: Some(fake_tesseract(
            "pixel-bomb",
            &format!("touch '{}'; exit 1", mark.display()),
        )),
        ..Engines::default()
    };
    let error = extract_with(png(), &bytes, &Limits::default(), &marking).unwrap_err();
    assert!(!mark.exists(), "OCR ran on a pixel bomb");
    assert_eq!(
        error,
        IngestError::LimitExceeded {
            kind: png(),
            limit: Limit::ImagePixels,
            max: 50_000_000
        }
    );
    let lower = Limits {
        max_image_pixels: 1_000,
        ..Limits::default()
    };
    let small = extract_with(png(), &png_header(40, 30), &lower, &Engines::default());
    assert!(small.is_err(), "1200 pixels are over 1000");
}

#[test]
fn a_truncated_png_fails_cleanly_with_tesseracts_reason() {
    let Some(bytes) = read_real_file(PAGE) else {
        return;
    };
    let truncated = bytes.get(..bytes.len() * 3 / 10).unwrap();
    let error = extract_with(png(), truncated, &Limits::default(), &with_tesseract()).unwrap_err();
    println!("truncated PNG: {error}");
    let IngestError::Invalid { kind, reason } = &error else {
        panic!("expected Invalid, got {error:?}");
    };
    assert_eq!(*kind, png());
    assert!(
        reason.contains("tesseract exited with status 1"),
        "{reason}"
    );
    assert!(reason.contains("png"), "{reason}");
    // Bytes that are no image at all never reach Tesseract (it would read them as a list of
    // file names).
    let error = extract_with(
        png(),
        b"/etc/passwd\n",
        &Limits::default(),
        &with_tesseract(),
    )
    .unwrap_err();
    assert_eq!(error.code(), "invalid");
}

#[test]
fn without_tesseract_the_image_is_kept_with_a_note() {
    let Some(bytes) = read_real_file(PAGE) else {
        return;
    };
    let extracted = extract_with(png(), &bytes, &Limits::default(), &Engines::default()).unwrap();
    assert_eq!(extracted.text, "");
    assert_eq!(extracted.notes.len(), 2, "{:?}", extracted.notes);
    assert_eq!(extracted.notes[0], "image 1242×1755");
    assert!(
        extracted.notes[1].starts_with(
            "OCR skipped: tesseract is not installed (install the Debian package tesseract-ocr"
        ),
        "{:?}",
        extracted.notes
    );
}

/// A stand-in `tesseract`: a shell script in a fresh folder.
fn fake_tesseract(name: &str, script: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-tesseract-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("tesseract");
    std::fs::write(&program, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    program
}

#[test]
fn a_hanging_or_broken_tesseract_leaves_the_image_with_a_note() {
    let bytes = png_header(64, 48);
    let hang = Engines {
        tesseract: Some(fake_tesseract("hang", "exec sleep 30")),
        ..Engines::default()
    };
    let limits = Limits {
        max_ocr_seconds: 1,
        ..Limits::default()
    };
    let started = Instant::now();
    let extracted = extract_with(png(), &bytes, &limits, &hang).unwrap();
    // Only a guard against a hang: the fake sleeps 30 s, the limit is 1 s.
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        extracted.notes,
        vec![
            "image 64×48".to_owned(),
            "OCR skipped: OCR did not finish within 1 s and was stopped".to_owned()
        ]
    );
    let no_language = Engines {
        tesseract: Some(fake_tesseract(
            "no-language",
            "cat >/dev/null; echo 'Failed loading language eng' >&2; \
             echo 'Could not initialize tesseract.' >&2; exit 1",
        )),
        ..Engines::default()
    };
    let extracted = extract_with(png(), &bytes, &Limits::default(), &no_language).unwrap();
    assert!(
        extracted.notes[1].starts_with("OCR skipped: tesseract could not run:")
            && extracted.notes[1].contains("Could not initialize tesseract."),
        "{:?}",
        extracted.notes
    );
    let absent = Engines {
        tesseract: Some(PathBuf::from("/nonexistent/tesseract")),
        ..Engines::default()
    };
    let extracted = extract_with(png(), &bytes, &Limits::default(), &absent).unwrap();
    assert!(
        extracted.notes[1].starts_with("OCR skipped: tesseract could not run: cannot start"),
        "{:?}",
        extracted.notes
    );
}

#[test]
fn ocr_runs_in_the_worker() {
    let Some(bytes) = read_real_file(PAGE) else {
        return;
    };
    let worker =
        Worker::new(WORKER, Vec::new(), WorkerLimits::default()).with_engines(with_tesseract());
    let started = Instant::now();
    let extracted = worker
        .extract(&bytes, Some(PAGE), &Limits::default())
        .expect("OCR in the worker");
    println!(
        "{PAGE} in the worker: {:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(extracted.kind, png());
    let missing = missing_phrases(&extracted.text, &phrases(PAGE));
    assert!(
        missing.is_empty(),
        "missing {missing:?} in {:?}",
        extracted.text
    );
    assert_eq!(
        extracted.image.map(|image| (image.width, image.height)),
        Some((1242, 1755))
    );
    let photo = read_real_file("coati.jpg").expect("coati.jpg");
    let extracted = worker
        .extract(&photo, Some("coati.jpg"), &Limits::default())
        .expect("Ok");
    assert_eq!(
        extracted.image.map(|image| (image.width, image.height)),
        Some((300, 200))
    );
}

#[test]
fn tesseract_fetched_from_the_pinned_debian_packages_reads_the_page() {
    if std::process::Command::new("apt-get")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("skipped: no apt-get");
        return;
    }
    let Some(bytes) = read_real_file(PAGE) else {
        return;
    };
    let cache = cache_dir();
    let started = Instant::now();
    let program = fetch_tesseract(&cache, Dependencies::Missing).expect("fetched");
    println!(
        "fetched (or found in the cache) in {:.2} s: {}",
        started.elapsed().as_secs_f64(),
        program.display()
    );
    assert_eq!(program, cache.join("tesseract-5.3.0-2/usr/bin/tesseract"));
    assert_eq!(
        tesseract_version(&program).as_deref(),
        Some("tesseract 5.3.0")
    );
    let manifest =
        std::fs::read_to_string(cache.join("tesseract-5.3.0-2/memvault-tesseract.txt")).unwrap();
    assert!(manifest.contains(
        "tesseract-ocr 5.3.0-2 311fed91c7311cfee54c28a0f21d700377b8131a9d114628d36d2563f99e1730"
    ));
    let engines = Engines {
        tesseract: Some(program),
        ..Engines::default()
    };
    let started = Instant::now();
    let extracted = extract_with(png(), &bytes, &Limits::default(), &engines).expect("OCR");
    println!(
        "{PAGE} with the fetched tesseract: {:.2} s",
        started.elapsed().as_secs_f64()
    );
    let missing = missing_phrases(&extracted.text, &phrases(PAGE));
    assert!(
        missing.is_empty(),
        "missing {missing:?} in {:?}",
        extracted.text
    );
}

/// Every shared library fetched too (about 20 MB, ICU most of it): slow, so run on demand
/// (`cargo test -p memvault-ingest --release --test image -- --ignored`).
#[test]
#[ignore = "downloads about 20 MB of Debian packages"]
fn a_bundled_tesseract_loads_its_own_libraries() {
    let Some(bytes) = read_real_file(PAGE) else {
        return;
    };
    let cache = cache_dir();
    let program = fetch_tesseract(&cache, Dependencies::All).expect("fetched");
    let root = cache.join("tesseract-5.3.0-2-bundled");
    assert_eq!(program, root.join("usr/bin/tesseract"));
    let manifest = std::fs::read_to_string(root.join("memvault-tesseract.txt")).unwrap();
    println!("{manifest}");
    assert!(manifest.lines().count() > 40, "{manifest}");
    let engines = Engines {
        tesseract: Some(program),
        ..Engines::default()
    };
    let extracted = extract_with(png(), &bytes, &Limits::default(), &engines).expect("OCR");
    let missing = missing_phrases(&extracted.text, &phrases(PAGE));
    assert!(
        missing.is_empty(),
        "missing {missing:?} in {:?}",
        extracted.text
    );
}
