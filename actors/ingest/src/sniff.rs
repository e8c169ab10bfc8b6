//! `sniff`: what a file is, from its bytes. Magic numbers first; zip archives are opened
//! and their entries named; then text is told apart by content (JSON that parses, HTML
//! that opens like HTML, mail headers); the file name's extension only breaks ties
//! between text kinds. A client's content type is never consulted.

use std::io::{Cursor, Read};

use zip::ZipArchive;

use crate::decode;
use crate::kind::{AudioFormat, ImageFormat, Kind};

/// What `bytes` are. `filename` (or a path) only decides between text kinds: `.md`,
/// `.csv` and `.tsv` for text that content alone leaves ambiguous.
pub fn sniff(bytes: &[u8], filename: Option<&str>) -> Kind {
    let extension = filename.and_then(extension_of);
    if let Some(kind) = sniff_magic(bytes) {
        return kind;
    }
    if !decode::looks_like_text(bytes) {
        return Kind::Unknown;
    }
    sniff_text(bytes, extension.as_deref())
}

fn extension_of(filename: &str) -> Option<String> {
    let base = filename.rsplit(['/', '\\']).next().unwrap_or(filename);
    let (stem, extension) = base.rsplit_once('.')?;
    if stem.is_empty() || extension.is_empty() {
        return None;
    }
    Some(extension.to_ascii_lowercase())
}

fn sniff_magic(bytes: &[u8]) -> Option<Kind> {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    let at = |offset: usize, magic: &[u8]| {
        bytes
            .get(offset..offset + magic.len())
            .is_some_and(|window| window == magic)
    };
    let head = bytes.get(..1024).unwrap_or(bytes);
    if head.windows(5).any(|window| window == b"%PDF-") {
        return Some(Kind::Pdf);
    }
    if starts(b"PK\x03\x04") || starts(b"PK\x05\x06") {
        return Some(sniff_zip(bytes));
    }
    if starts(b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1") {
        return Some(sniff_ole(bytes));
    }
    if starts(b"{\\rtf") {
        return Some(Kind::Rtf);
    }
    let image = if starts(b"\x89PNG\r\n\x1A\n") {
        Some(ImageFormat::Png)
    } else if starts(b"\xFF\xD8\xFF") {
        Some(ImageFormat::Jpeg)
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Some(ImageFormat::Gif)
    } else if starts(b"RIFF") && at(8, b"WEBP") {
        Some(ImageFormat::Webp)
    } else if starts(b"II*\0") || starts(b"MM\0*") {
        Some(ImageFormat::Tiff)
    } else if is_bmp(bytes) {
        Some(ImageFormat::Bmp)
    } else {
        None
    };
    if let Some(format) = image {
        return Some(Kind::Image(format));
    }
    let audio = if starts(b"RIFF") && at(8, b"WAVE") {
        Some(AudioFormat::Wav)
    } else if starts(b"fLaC") {
        Some(AudioFormat::Flac)
    } else if starts(b"OggS") {
        Some(AudioFormat::Ogg)
    } else if starts(b"ID3") {
        Some(AudioFormat::Mp3)
    } else if at(4, b"ftyp") {
        is_mp4_audio(bytes).then_some(AudioFormat::M4a)
    } else {
        match bytes {
            // ADTS: sync word, then layer bits 00 (MPEG audio frames have non-zero layer).
            [0xFF, second, ..] if second & 0xF6 == 0xF0 => Some(AudioFormat::Aac),
            [0xFF, second, ..] if second & 0xE0 == 0xE0 && (second >> 1) & 0b11 != 0 => {
                Some(AudioFormat::Mp3)
            }
            _ => None,
        }
    };
    audio.map(Kind::Audio)
}

/// `BM` begins too many words to be enough: the reserved bytes must be zero and the
/// DIB header one of the sizes that exist.
fn is_bmp(bytes: &[u8]) -> bool {
    if !bytes.starts_with(b"BM") {
        return false;
    }
    let reserved_zero = bytes
        .get(6..10)
        .is_some_and(|reserved| reserved == [0, 0, 0, 0]);
    let dib_size = bytes
        .get(14..18)
        .map(|size| u32::from_le_bytes([size[0], size[1], size[2], size[3]]));
    reserved_zero && matches!(dib_size, Some(12 | 40 | 52 | 56 | 64 | 108 | 124))
}

/// An MP4 file whose major or compatible brands say audio (M4A, M4B, M4P); video MP4 is
/// not a kind we ingest.
fn is_mp4_audio(bytes: &[u8]) -> bool {
    let box_size = bytes
        .get(0..4)
        .map(|size| u32::from_be_bytes([size[0], size[1], size[2], size[3]]) as usize)
        .unwrap_or(0);
    let brands_end = box_size.clamp(12, 256).min(bytes.len());
    let brands = bytes.get(8..brands_end).unwrap_or_default();
    brands
        .chunks(4)
        .any(|brand| matches!(brand, b"M4A " | b"M4B " | b"M4P "))
}

fn sniff_zip(bytes: &[u8]) -> Kind {
    let Ok(mut archive) = ZipArchive::new(Cursor::new(bytes)) else {
        return Kind::Zip;
    };
    if let Ok(entry) = archive.by_name("mimetype") {
        let mut mimetype = Vec::new();
        if entry.take(128).read_to_end(&mut mimetype).is_ok() {
            let kind = match String::from_utf8_lossy(&mimetype).trim() {
                "application/epub+zip" => Some(Kind::Epub),
                "application/vnd.oasis.opendocument.text"
                | "application/vnd.oasis.opendocument.text-template" => Some(Kind::Odt),
                "application/vnd.oasis.opendocument.presentation"
                | "application/vnd.oasis.opendocument.presentation-template" => Some(Kind::Odp),
                "application/vnd.oasis.opendocument.spreadsheet"
                | "application/vnd.oasis.opendocument.spreadsheet-template" => Some(Kind::Ods),
                _ => None,
            };
            if let Some(kind) = kind {
                return kind;
            }
        }
    }
    let names: Vec<String> = archive
        .file_names()
        .filter_map(Result::ok)
        .map(|name| name.into_owned())
        .collect();
    let has_name = |wanted: &str| names.iter().any(|name| name == wanted);
    let has_prefix = |prefix: &str| names.iter().any(|name| name.starts_with(prefix));
    let is_ooxml = has_name("[Content_Types].xml");
    if is_ooxml || has_prefix("word/") || has_prefix("ppt/") || has_prefix("xl/") {
        if has_prefix("word/") {
            return Kind::Docx;
        }
        if has_prefix("ppt/") {
            return Kind::Pptx;
        }
        if has_prefix("xl/") {
            return Kind::Xlsx;
        }
    }
    if has_name("META-INF/container.xml") && names.iter().any(|name| name.ends_with(".opf")) {
        return Kind::Epub;
    }
    Kind::Zip
}

/// OLE directory entries are 128-byte records at 128-byte-aligned offsets, each a
/// UTF-16LE name followed (at +64) by the name's byte length with its terminator. A
/// `Workbook` (BIFF8) or `Book` (BIFF5) stream makes an XLS file.
fn sniff_ole(bytes: &[u8]) -> Kind {
    let is_entry_named = |offset: usize, name: &str| {
        let encoded: Vec<u8> = name.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let declared_length = bytes
            .get(offset + 64..offset + 66)
            .map(|length| u16::from_le_bytes([length[0], length[1]]) as usize);
        bytes
            .get(offset..offset + encoded.len())
            .is_some_and(|window| window == encoded.as_slice())
            && declared_length == Some(encoded.len() + 2)
    };
    let is_workbook = (512..bytes.len())
        .step_by(128)
        .any(|offset| is_entry_named(offset, "Workbook") || is_entry_named(offset, "Book"));
    if is_workbook {
        Kind::Xls
    } else {
        Kind::Ole
    }
}

fn sniff_text(bytes: &[u8], extension: Option<&str>) -> Kind {
    let prefix_bytes = bytes.get(..65_536).unwrap_or(bytes);
    let prefix = decode::decode_text(prefix_bytes);
    let start = prefix.trim_start_matches('\u{FEFF}').trim_start();
    if (start.starts_with('{') || start.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(&decode::decode_text(bytes)).is_ok()
    {
        return Kind::Json;
    }
    if looks_like_html(start) {
        return Kind::Html;
    }
    if matches!(extension, Some("html" | "htm" | "xhtml")) && start.starts_with('<') {
        return Kind::Html;
    }
    if looks_like_mail(&prefix, extension == Some("eml")) {
        return Kind::Eml;
    }
    match extension {
        Some("md" | "markdown" | "mdown" | "mkd") => return Kind::Markdown,
        Some("csv") => return Kind::Csv,
        Some("tsv" | "tab") => return Kind::Tsv,
        Some("txt" | "text" | "log") => return Kind::Text,
        _ => {}
    }
    if let Some(delimited) = delimited_kind(&prefix) {
        return delimited;
    }
    if looks_like_markdown(start) {
        return Kind::Markdown;
    }
    Kind::Text
}

/// A doctype or `<html>` first, after any XML declaration and comments.
fn looks_like_html(start: &str) -> bool {
    let mut rest = start;
    loop {
        rest = rest.trim_start();
        if rest.starts_with("<?xml") {
            match rest.find("?>") {
                Some(end) => rest = rest.get(end + 2..).unwrap_or_default(),
                None => return false,
            }
        } else if rest.starts_with("<!--") {
            match rest.find("-->") {
                Some(end) => rest = rest.get(end + 3..).unwrap_or_default(),
                None => return false,
            }
        } else {
            break;
        }
    }
    let opening: String = rest
        .chars()
        .take(14)
        .collect::<String>()
        .to_ascii_lowercase();
    opening.starts_with("<!doctype html") || opening.starts_with("<html")
}

/// RFC 822 headers: every line up to the first blank one is a header or a continuation,
/// at least two are mail headers, and one of them is one only mail has. With an `.eml`
/// extension one mail header is enough.
fn looks_like_mail(text: &str, has_eml_extension: bool) -> bool {
    const MAIL_HEADERS: [&str; 14] = [
        "from",
        "to",
        "cc",
        "subject",
        "date",
        "message-id",
        "mime-version",
        "received",
        "return-path",
        "delivered-to",
        "reply-to",
        "content-type",
        "x-mailer",
        "in-reply-to",
    ];
    const DEFINING_HEADERS: [&str; 6] = [
        "from",
        "message-id",
        "mime-version",
        "received",
        "return-path",
        "delivered-to",
    ];
    let mut mail_headers = 0;
    let mut defining = false;
    let mut header_lines = 0;
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            break;
        }
        if index == 0 && line.starts_with("From ") {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if header_lines == 0 {
                return false;
            }
            continue;
        }
        let Some((name, _)) = line.split_once(':') else {
            return false;
        };
        let is_header_name = !name.is_empty()
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-');
        if !is_header_name {
            return false;
        }
        header_lines += 1;
        let lowercase = name.to_ascii_lowercase();
        if MAIL_HEADERS.contains(&lowercase.as_str()) {
            mail_headers += 1;
        }
        if DEFINING_HEADERS.contains(&lowercase.as_str()) {
            defining = true;
        }
        if index > 200 {
            break;
        }
    }
    if has_eml_extension {
        return mail_headers >= 1;
    }
    mail_headers >= 2 && defining
}

/// At least three lines that all hold the same number of tabs (or commas outside quotes).
fn delimited_kind(text: &str) -> Option<Kind> {
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .take(20)
        .collect();
    if lines.len() < 3 {
        return None;
    }
    // The last line of a prefix may be cut short.
    let complete = lines.get(..lines.len() - 1).unwrap_or_default();
    let same_count = |count: &dyn Fn(&str) -> usize, minimum: usize| {
        let first = complete.first().map(|line| count(line)).unwrap_or(0);
        first >= minimum && complete.len() >= 2 && complete.iter().all(|line| count(line) == first)
    };
    if same_count(&|line: &str| line.matches('\t').count(), 1) {
        return Some(Kind::Tsv);
    }
    if same_count(&commas_outside_quotes, 2) {
        return Some(Kind::Csv);
    }
    None
}

fn commas_outside_quotes(line: &str) -> usize {
    let mut in_quotes = false;
    let mut commas = 0;
    for character in line.chars() {
        match character {
            '"' => in_quotes = !in_quotes,
            ',' if !in_quotes => commas += 1,
            _ => {}
        }
    }
    commas
}

/// An ATX heading on the first line, or YAML front matter.
fn looks_like_markdown(start: &str) -> bool {
    let first_line = start.lines().next().unwrap_or_default();
    let hashes = first_line
        .chars()
        .take_while(|&character| character == '#')
        .count();
    (1..=6).contains(&hashes) && first_line.chars().nth(hashes) == Some(' ')
        || first_line.trim_end() == "---"
            && start.lines().skip(1).any(|line| line.trim_end() == "---")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers() {
        assert_eq!(sniff(b"%PDF-1.7\n", Some("x.txt")), Kind::Pdf);
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1A\n....", None),
            Kind::Image(ImageFormat::Png)
        );
        assert_eq!(
            sniff(b"\xFF\xD8\xFF\xE0", None),
            Kind::Image(ImageFormat::Jpeg)
        );
        assert_eq!(sniff(b"GIF89a...", None), Kind::Image(ImageFormat::Gif));
        assert_eq!(
            sniff(b"RIFF\0\0\0\0WEBPVP8 ", None),
            Kind::Image(ImageFormat::Webp)
        );
        assert_eq!(
            sniff(b"RIFF\0\0\0\0WAVEfmt ", None),
            Kind::Audio(AudioFormat::Wav)
        );
        assert_eq!(
            sniff(b"fLaC\0\0\0\x22", None),
            Kind::Audio(AudioFormat::Flac)
        );
        assert_eq!(sniff(b"OggS\0\x02", None), Kind::Audio(AudioFormat::Ogg));
        assert_eq!(sniff(b"ID3\x04\0", None), Kind::Audio(AudioFormat::Mp3));
        assert_eq!(
            sniff(b"\xFF\xFB\x90\x00", None),
            Kind::Audio(AudioFormat::Mp3)
        );
        assert_eq!(
            sniff(b"\xFF\xF1\x50\x80", None),
            Kind::Audio(AudioFormat::Aac)
        );
        assert_eq!(
            sniff(b"\0\0\0\x20ftypM4A \0\0\0\0M4A mp42isom", None),
            Kind::Audio(AudioFormat::M4a)
        );
        assert_eq!(
            sniff(b"\0\0\0\x18ftypmp42\0\0\0\0isom", None),
            Kind::Unknown
        );
        assert_eq!(sniff(b"{\\rtf1\\ansi hello}", None), Kind::Rtf);
    }

    #[test]
    fn bmp_needs_more_than_two_letters() {
        assert_eq!(sniff(b"BMW drivers are\nnot images", None), Kind::Text);
        let mut bmp = b"BM\x46\0\0\0\0\0\0\0\x36\0\0\0\x28\0\0\0".to_vec();
        bmp.extend([0u8; 40]);
        assert_eq!(sniff(&bmp, None), Kind::Image(ImageFormat::Bmp));
    }

    #[test]
    fn text_kinds_by_content() {
        assert_eq!(sniff(br#" {"a": [1, 2]}"#, None), Kind::Json);
        assert_eq!(sniff(br#"{"a": "#, Some("a.json")), Kind::Text);
        assert_eq!(sniff(b"<!DOCTYPE html><title>x</title>", None), Kind::Html);
        assert_eq!(
            sniff(b"<?xml version=\"1.0\"?>\n<!-- c -->\n<html>", None),
            Kind::Html
        );
        assert_eq!(sniff(b"<p>fragment</p>", Some("page.htm")), Kind::Html);
        assert_eq!(sniff(b"<p>fragment</p>", None), Kind::Text);
        let mail = b"From: a@example.com\r\nTo: b@example.com\r\nSubject: hi\r\n\r\nbody";
        assert_eq!(sniff(mail, None), Kind::Eml);
        assert_eq!(sniff(b"Subject: only one\n\nbody", None), Kind::Text);
        assert_eq!(sniff(b"Note: remember\nTodo: this\n\n", None), Kind::Text);
        assert_eq!(sniff(b"# Title\n\nbody", None), Kind::Markdown);
        assert_eq!(sniff(b"a\tb\n1\t2\n3\t4\n5\t6\n", None), Kind::Tsv);
        assert_eq!(
            sniff(b"a,b,c\n1,2,3\n\"x,y\",5,6\n7,8,9\n", None),
            Kind::Csv
        );
        assert_eq!(sniff(b"plain words, a comma\nand more\n", None), Kind::Text);
        assert_eq!(sniff(b"", None), Kind::Text);
        assert_eq!(sniff(b"\0\x01\x02\x03", None), Kind::Unknown);
    }

    #[test]
    fn extension_breaks_ties_between_text_kinds_only() {
        assert_eq!(sniff(b"just words", Some("notes.md")), Kind::Markdown);
        assert_eq!(sniff(b"a,b\n1,2", Some("dir/data.CSV")), Kind::Csv);
        assert_eq!(sniff(b"a\tb", Some("data.tsv")), Kind::Tsv);
        assert_eq!(sniff(b"# heading", Some("notes.txt")), Kind::Text);
        assert_eq!(sniff(br#"{"json": true}"#, Some("data.csv")), Kind::Json);
        assert_eq!(sniff(b"%PDF-1.4", Some("notes.md")), Kind::Pdf);
        assert_eq!(sniff(b"words", Some(".md")), Kind::Text);
    }

    #[test]
    fn xls_is_told_from_other_ole_files() {
        let mut ole = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1".to_vec();
        ole.resize(512, 0);
        let mut entry = [0u8; 128];
        for (index, unit) in "Workbook".encode_utf16().enumerate() {
            entry[index * 2..index * 2 + 2].copy_from_slice(&unit.to_le_bytes());
        }
        entry[64] = 18;
        let mut xls = ole.clone();
        xls.extend_from_slice(&entry);
        assert_eq!(sniff(&xls, None), Kind::Xls);
        ole.extend_from_slice(&[0u8; 128]);
        assert_eq!(sniff(&ole, None), Kind::Ole);
    }
}
