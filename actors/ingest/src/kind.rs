//! The kinds of file the sniffer tells apart, with their stable names and MIME types.

use std::fmt;

/// What a file is, decided from its bytes (see [`crate::sniff`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Text,
    Markdown,
    Csv,
    Tsv,
    Json,
    Html,
    Pdf,
    Docx,
    Pptx,
    Xlsx,
    Xls,
    Odt,
    Odp,
    Ods,
    Epub,
    Rtf,
    Eml,
    Image(ImageFormat),
    Audio(AudioFormat),
    /// A zip archive that is none of the zip-based document formats.
    Zip,
    /// An OLE compound file that is not an XLS workbook: a legacy `.doc` or `.ppt`, or an
    /// encrypted OOXML document (Office wraps those in OLE).
    Ole,
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageFormat {
    Png,
    Jpeg,
    Gif,
    Webp,
    Tiff,
    Bmp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AudioFormat {
    Wav,
    Mp3,
    /// MPEG-4 audio (`.m4a`, `.m4b`): AAC or ALAC in an MP4 container.
    M4a,
    /// A raw AAC stream with ADTS headers.
    Aac,
    Ogg,
    Flac,
}

/// Where a kind's text comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// [`crate::extract`] extracts it, in this crate.
    Extract,
    /// The PDF worker (pdfium, OCR for pages without a text layer).
    PdfWorker,
    /// OCR (and captioning, when configured).
    ImageWorker,
    /// Speech transcription.
    AudioWorker,
    /// Nothing extracts it; the file can still be stored as an attachment.
    Unsupported,
}

impl Kind {
    /// Every kind, for tests and for callers that list what is supported.
    pub const ALL: [Kind; 32] = [
        Kind::Text,
        Kind::Markdown,
        Kind::Csv,
        Kind::Tsv,
        Kind::Json,
        Kind::Html,
        Kind::Pdf,
        Kind::Docx,
        Kind::Pptx,
        Kind::Xlsx,
        Kind::Xls,
        Kind::Odt,
        Kind::Odp,
        Kind::Ods,
        Kind::Epub,
        Kind::Rtf,
        Kind::Eml,
        Kind::Image(ImageFormat::Png),
        Kind::Image(ImageFormat::Jpeg),
        Kind::Image(ImageFormat::Gif),
        Kind::Image(ImageFormat::Webp),
        Kind::Image(ImageFormat::Tiff),
        Kind::Image(ImageFormat::Bmp),
        Kind::Audio(AudioFormat::Wav),
        Kind::Audio(AudioFormat::Mp3),
        Kind::Audio(AudioFormat::M4a),
        Kind::Audio(AudioFormat::Aac),
        Kind::Audio(AudioFormat::Ogg),
        Kind::Audio(AudioFormat::Flac),
        Kind::Zip,
        Kind::Ole,
        Kind::Unknown,
    ];

    /// The stable lowercase name, stored in memory metadata and sent to workers; never
    /// changes once released.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Markdown => "markdown",
            Kind::Csv => "csv",
            Kind::Tsv => "tsv",
            Kind::Json => "json",
            Kind::Html => "html",
            Kind::Pdf => "pdf",
            Kind::Docx => "docx",
            Kind::Pptx => "pptx",
            Kind::Xlsx => "xlsx",
            Kind::Xls => "xls",
            Kind::Odt => "odt",
            Kind::Odp => "odp",
            Kind::Ods => "ods",
            Kind::Epub => "epub",
            Kind::Rtf => "rtf",
            Kind::Eml => "eml",
            Kind::Image(ImageFormat::Png) => "png",
            Kind::Image(ImageFormat::Jpeg) => "jpeg",
            Kind::Image(ImageFormat::Gif) => "gif",
            Kind::Image(ImageFormat::Webp) => "webp",
            Kind::Image(ImageFormat::Tiff) => "tiff",
            Kind::Image(ImageFormat::Bmp) => "bmp",
            Kind::Audio(AudioFormat::Wav) => "wav",
            Kind::Audio(AudioFormat::Mp3) => "mp3",
            Kind::Audio(AudioFormat::M4a) => "m4a",
            Kind::Audio(AudioFormat::Aac) => "aac",
            Kind::Audio(AudioFormat::Ogg) => "ogg",
            Kind::Audio(AudioFormat::Flac) => "flac",
            Kind::Zip => "zip",
            Kind::Ole => "ole",
            Kind::Unknown => "unknown",
        }
    }

    /// The kind with this [`Kind::name`], if any.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The MIME type to store and to serve the original under.
    pub fn mime(self) -> &'static str {
        match self {
            Kind::Text => "text/plain",
            Kind::Markdown => "text/markdown",
            Kind::Csv => "text/csv",
            Kind::Tsv => "text/tab-separated-values",
            Kind::Json => "application/json",
            Kind::Html => "text/html",
            Kind::Pdf => "application/pdf",
            Kind::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            Kind::Pptx => {
                "application/vnd.openxmlformats-officedocument.presentationml.presentation"
            }
            Kind::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            Kind::Xls => "application/vnd.ms-excel",
            Kind::Odt => "application/vnd.oasis.opendocument.text",
            Kind::Odp => "application/vnd.oasis.opendocument.presentation",
            Kind::Ods => "application/vnd.oasis.opendocument.spreadsheet",
            Kind::Epub => "application/epub+zip",
            Kind::Rtf => "application/rtf",
            Kind::Eml => "message/rfc822",
            Kind::Image(ImageFormat::Png) => "image/png",
            Kind::Image(ImageFormat::Jpeg) => "image/jpeg",
            Kind::Image(ImageFormat::Gif) => "image/gif",
            Kind::Image(ImageFormat::Webp) => "image/webp",
            Kind::Image(ImageFormat::Tiff) => "image/tiff",
            Kind::Image(ImageFormat::Bmp) => "image/bmp",
            Kind::Audio(AudioFormat::Wav) => "audio/wav",
            Kind::Audio(AudioFormat::Mp3) => "audio/mpeg",
            Kind::Audio(AudioFormat::M4a) => "audio/mp4",
            Kind::Audio(AudioFormat::Aac) => "audio/aac",
            Kind::Audio(AudioFormat::Ogg) => "audio/ogg",
            Kind::Audio(AudioFormat::Flac) => "audio/flac",
            Kind::Zip => "application/zip",
            Kind::Ole => "application/x-ole-storage",
            Kind::Unknown => "application/octet-stream",
        }
    }

    /// Where this kind's text comes from.
    pub fn route(self) -> Route {
        match self {
            Kind::Text
            | Kind::Markdown
            | Kind::Csv
            | Kind::Tsv
            | Kind::Json
            | Kind::Html
            | Kind::Docx
            | Kind::Pptx
            | Kind::Xlsx
            | Kind::Xls
            | Kind::Odt
            | Kind::Odp
            | Kind::Ods
            | Kind::Epub
            | Kind::Rtf
            | Kind::Eml => Route::Extract,
            Kind::Pdf => Route::PdfWorker,
            Kind::Image(_) => Route::ImageWorker,
            Kind::Audio(_) => Route::AudioWorker,
            Kind::Zip | Kind::Ole | Kind::Unknown => Route::Unsupported,
        }
    }

    /// The name as people write it in a sentence ("not a valid DOCX").
    pub fn label(self) -> String {
        match self {
            Kind::Text => "text file".to_owned(),
            Kind::Markdown => "Markdown file".to_owned(),
            Kind::Ole => "OLE compound file".to_owned(),
            Kind::Unknown => "file of unknown type".to_owned(),
            other => other.name().to_uppercase(),
        }
    }
}

/// A kind travels (worker answers, stored metadata) as its [`Kind::name`].
impl serde::Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Kind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Kind::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown kind {name:?}")))
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn names_are_unique_lowercase_and_round_trip() {
        let distinct: HashSet<Kind> = Kind::ALL.into_iter().collect();
        assert_eq!(distinct.len(), Kind::ALL.len());
        let names: HashSet<&str> = distinct.iter().map(|kind| kind.name()).collect();
        assert_eq!(names.len(), distinct.len());
        for kind in distinct {
            assert_eq!(kind.name(), kind.name().to_lowercase());
            assert_eq!(Kind::from_name(kind.name()), Some(kind));
            assert!(kind.mime().contains('/'));
        }
        assert_eq!(Kind::from_name("exe"), None);
    }

    #[test]
    fn only_pdf_images_and_audio_go_to_workers() {
        assert_eq!(Kind::Pdf.route(), Route::PdfWorker);
        assert_eq!(Kind::Image(ImageFormat::Png).route(), Route::ImageWorker);
        assert_eq!(Kind::Audio(AudioFormat::Flac).route(), Route::AudioWorker);
        assert_eq!(Kind::Eml.route(), Route::Extract);
        assert_eq!(Kind::Zip.route(), Route::Unsupported);
    }
}
