//! What an extraction gives: Markdown text, the sections it is made of, and notes on what
//! was skipped; and `TextBuilder`, which every extractor writes through so that the
//! character cap and the section ranges are kept in one place.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::kind::Kind;

/// The text of one file. It serializes to JSON (a worker process sends it back whole);
/// deferred attachments' bytes travel as base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extracted {
    /// What the file was extracted as.
    pub kind: Kind,
    /// Markdown: headings, lists and tables where the source has them, plain paragraphs
    /// otherwise. Chunkers split on its structure.
    pub text: String,
    /// The document's own title (HTML `<title>`, EPUB `dc:title`, mail subject, first
    /// Markdown heading), when it has one.
    pub title: Option<String>,
    /// Where each part of `text` came from, in text order. Ranges of nested parts (a slide
    /// of an attached presentation) lie inside their parent's range.
    pub sections: Vec<Section>,
    /// Anything skipped or cut, in words ("truncated at 5000000 characters", "sheet
    /// 'Chart1' is a chart sheet: skipped").
    pub notes: Vec<String>,
    /// True when the character cap cut the text.
    pub truncated: bool,
    /// Attachments that another worker must read (a PDF or an image attached to a mail):
    /// their bytes, for the caller to route by [`Kind::route`].
    pub deferred: Vec<Deferred>,
    /// An image's dimensions (images only), for the caller's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageInfo>,
}

/// What an image is besides its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageInfo {
    /// Pixels, as the header declares them.
    pub width: u32,
    pub height: u32,
}

/// One located part of the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    pub location: Location,
    /// The part's own title (a slide title, a chapter heading), when it has one.
    pub title: Option<String>,
    /// Byte range into [`Extracted::text`], always on character boundaries.
    pub range: Range<usize>,
}

/// Where a section sits in its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Location {
    /// A page, counted from 1 (used by the PDF worker; no extractor here makes pages).
    Page { number: u32 },
    /// A slide, counted from 1 in presentation order.
    Slide { number: u32 },
    /// A sheet, counted from 1 in workbook order, with its name.
    Sheet { number: u32, name: String },
    /// An EPUB chapter, counted from 1 in spine order, with its path in the archive.
    Chapter { number: u32, path: String },
    /// A mail attachment or forwarded message, with its file name when it has one.
    Attachment { name: String, kind: Kind },
}

/// An attachment that this crate does not extract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deferred {
    pub name: Option<String>,
    pub kind: Kind,
    #[serde(with = "base64_bytes")]
    pub bytes: Vec<u8>,
}

/// Bytes as a base64 string: a JSON array of numbers would be four times larger.
mod base64_bytes {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        let encoded = String::deserialize(deserializer)?;
        STANDARD
            .decode(encoded.as_bytes())
            .map_err(serde::de::Error::custom)
    }
}

/// Accumulates an extraction's text under the character cap. Once the cap is reached every
/// further write is dropped, and `finish` records one note.
pub(crate) struct TextBuilder {
    text: String,
    sections: Vec<Section>,
    notes: Vec<String>,
    deferred: Vec<Deferred>,
    /// Characters written so far (not bytes: the cap is in characters).
    chars_written: usize,
    max_chars: usize,
    truncated: bool,
}

impl TextBuilder {
    pub(crate) fn new(max_chars: usize) -> Self {
        TextBuilder {
            text: String::new(),
            sections: Vec::new(),
            notes: Vec::new(),
            deferred: Vec::new(),
            chars_written: 0,
            max_chars,
            truncated: false,
        }
    }

    /// Characters that may still be written.
    pub(crate) fn remaining_chars(&self) -> usize {
        self.max_chars.saturating_sub(self.chars_written)
    }

    pub(crate) fn is_full(&self) -> bool {
        self.truncated
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.trim().is_empty()
    }

    /// Appends `fragment`, or as much of it as the cap allows.
    pub(crate) fn push(&mut self, fragment: &str) {
        if self.truncated || fragment.is_empty() {
            return;
        }
        let remaining = self.remaining_chars();
        // Bytes bound characters from above: a fragment no longer in bytes than the
        // remaining characters always fits, and counting is skipped.
        if fragment.len() <= remaining {
            self.text.push_str(fragment);
            self.chars_written += fragment.chars().count();
            return;
        }
        let cut = match fragment.char_indices().nth(remaining) {
            Some((byte_index, _)) => byte_index,
            None => {
                self.text.push_str(fragment);
                self.chars_written += fragment.chars().count();
                return;
            }
        };
        self.text.push_str(fragment.get(..cut).unwrap_or_default());
        self.chars_written = self.max_chars;
        self.truncated = true;
    }

    /// Starts a new block: the text so far ends with a blank line (unless there is none).
    pub(crate) fn start_block(&mut self) {
        if self.text.is_empty() || self.text.ends_with("\n\n") {
            return;
        }
        if self.text.ends_with('\n') {
            self.push("\n");
        } else {
            self.push("\n\n");
        }
    }

    /// Writes `block` as a paragraph of its own (nothing when it is blank).
    pub(crate) fn block(&mut self, block: &str) {
        let trimmed = block.trim();
        if trimmed.is_empty() {
            return;
        }
        self.start_block();
        self.push(trimmed);
    }

    pub(crate) fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    pub(crate) fn defer(&mut self, deferred: Deferred) {
        self.deferred.push(deferred);
    }

    /// Opens a section at the current end of the text; `close_section` with the returned
    /// index sets its end.
    pub(crate) fn open_section(&mut self, location: Location, title: Option<String>) -> usize {
        self.start_block();
        let start = self.text.len();
        self.sections.push(Section {
            location,
            title,
            range: start..start,
        });
        self.sections.len() - 1
    }

    pub(crate) fn close_section(&mut self, index: usize) {
        let end = self.text.trim_end().len();
        if let Some(section) = self.sections.get_mut(index) {
            section.range.end = end.max(section.range.start);
        }
    }

    /// Appends another extraction (an attachment) inside a section of its own, shifting
    /// its sections into this text and keeping its notes and deferred attachments.
    pub(crate) fn append_nested(&mut self, location: Location, nested: Extracted) {
        let section_index = self.open_section(location, nested.title.clone());
        let offset = self.text.len();
        let fits_whole = nested.text.len() <= self.remaining_chars();
        self.push(&nested.text);
        let written_end = self.text.len();
        for section in nested.sections {
            let start = offset + section.range.start;
            if start > written_end {
                continue;
            }
            let end = (offset + section.range.end).min(written_end);
            self.sections.push(Section {
                location: section.location,
                title: section.title,
                range: start..end,
            });
        }
        self.close_section(section_index);
        self.notes.extend(nested.notes);
        self.deferred.extend(nested.deferred);
        if nested.truncated && fits_whole {
            self.truncated = true;
        }
    }

    /// The extraction; trailing whitespace is trimmed and a cut is recorded in the notes.
    pub(crate) fn finish(mut self, kind: Kind, title: Option<String>) -> Extracted {
        let trimmed_len = self.text.trim_end().len();
        self.text.truncate(trimmed_len);
        for section in &mut self.sections {
            section.range.end = section.range.end.min(trimmed_len);
            section.range.start = section.range.start.min(section.range.end);
        }
        if self.truncated {
            self.notes.push(format!(
                "text truncated at {} characters (limit max_chars)",
                self.max_chars
            ));
        }
        Extracted {
            kind,
            text: self.text,
            title: title.filter(|title| !title.trim().is_empty()),
            sections: self.sections,
            notes: self.notes,
            truncated: self.truncated,
            deferred: self.deferred,
            image: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_stops_at_the_character_cap_on_a_character_boundary() {
        let mut builder = TextBuilder::new(5);
        builder.push("héllo wörld");
        assert!(builder.is_full());
        builder.push("more");
        let extracted = builder.finish(Kind::Text, None);
        assert_eq!(extracted.text, "héllo");
        assert!(extracted.truncated);
        assert_eq!(extracted.notes.len(), 1);
    }

    #[test]
    fn sections_cover_their_text() {
        let mut builder = TextBuilder::new(1000);
        builder.block("intro");
        let slide = builder.open_section(Location::Slide { number: 1 }, None);
        builder.block("## Slide 1\n\nbody");
        builder.close_section(slide);
        let extracted = builder.finish(Kind::Pptx, None);
        let range = extracted.sections[0].range.clone();
        assert_eq!(&extracted.text[range], "## Slide 1\n\nbody");
    }

    #[test]
    fn an_extraction_round_trips_through_json() {
        let extracted = Extracted {
            kind: Kind::Eml,
            text: "body".to_owned(),
            title: Some("subject".to_owned()),
            sections: vec![
                Section {
                    location: Location::Sheet {
                        number: 1,
                        name: "One".to_owned(),
                    },
                    title: None,
                    range: 0..4,
                },
                Section {
                    location: Location::Attachment {
                        name: "a.xlsx".to_owned(),
                        kind: Kind::Xlsx,
                    },
                    title: Some("book".to_owned()),
                    range: 2..4,
                },
            ],
            notes: vec!["skipped".to_owned()],
            truncated: true,
            deferred: vec![Deferred {
                name: Some("scan.pdf".to_owned()),
                kind: Kind::Pdf,
                bytes: vec![0, 159, 255, b'%'],
            }],
            image: Some(ImageInfo {
                width: 3,
                height: 2,
            }),
        };
        let json = serde_json::to_string(&extracted).unwrap();
        assert!(json.contains(r#""kind":"pdf""#), "{json}");
        assert!(json.contains(r#""bytes":"AJ//JQ==""#), "{json}");
        let back: Extracted = serde_json::from_str(&json).unwrap();
        assert_eq!(back, extracted);
    }

    #[test]
    fn nested_sections_are_shifted_into_the_parent() {
        let mut inner = TextBuilder::new(1000);
        let sheet = inner.open_section(
            Location::Sheet {
                number: 1,
                name: "One".to_owned(),
            },
            None,
        );
        inner.block("cell");
        inner.close_section(sheet);
        let inner = inner.finish(Kind::Xlsx, None);
        let mut outer = TextBuilder::new(1000);
        outer.block("mail body");
        outer.append_nested(
            Location::Attachment {
                name: "book.xlsx".to_owned(),
                kind: Kind::Xlsx,
            },
            inner,
        );
        let extracted = outer.finish(Kind::Eml, None);
        assert_eq!(extracted.sections.len(), 2);
        let sheet_range = extracted.sections[1].range.clone();
        assert_eq!(&extracted.text[sheet_range], "cell");
    }
}
