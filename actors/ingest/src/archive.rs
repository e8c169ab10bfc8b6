//! Zip containers read under the caps: entry count checked at open, every entry read
//! through a reader that stops one byte past what is left of the budget, so a header that
//! lies about its size changes nothing.

use std::io::{Cursor, Read};

use zip::result::ZipError;
use zip::ZipArchive;

use crate::error::{IngestError, Limit};
use crate::kind::Kind;
use crate::limits::Limits;

pub(crate) struct Archive<'bytes> {
    zip: ZipArchive<Cursor<&'bytes [u8]>>,
    /// The format being read, for error messages.
    kind: Kind,
    /// Decompressed bytes read so far, against `Limits::max_decompressed_bytes`.
    decompressed_bytes: u64,
    max_decompressed_bytes: u64,
    max_entry_bytes: u64,
}

impl<'bytes> Archive<'bytes> {
    pub(crate) fn open(
        bytes: &'bytes [u8],
        kind: Kind,
        limits: &Limits,
    ) -> Result<Self, IngestError> {
        let zip = ZipArchive::new(Cursor::new(bytes))
            .map_err(|error| IngestError::invalid(kind, format!("not a readable zip: {error}")))?;
        if zip.len() > limits.max_zip_entries {
            return Err(IngestError::LimitExceeded {
                kind,
                limit: Limit::ZipEntries,
                max: limits.max_zip_entries as u64,
            });
        }
        Ok(Archive {
            zip,
            kind,
            decompressed_bytes: 0,
            max_decompressed_bytes: limits.max_decompressed_bytes,
            max_entry_bytes: limits.max_entry_bytes,
        })
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.zip
            .file_names()
            .filter_map(Result::ok)
            .map(|name| name.into_owned())
            .collect()
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.zip.index_for_name(name).is_some()
    }

    /// The entry's decompressed bytes, or `None` when there is no such entry.
    pub(crate) fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>, IngestError> {
        let kind = self.kind;
        let Some(index) = self.zip.index_for_name(name) else {
            return Ok(None);
        };
        let budget_left = self
            .max_decompressed_bytes
            .saturating_sub(self.decompressed_bytes);
        let (cap, limit, max) = if self.max_entry_bytes <= budget_left {
            (
                self.max_entry_bytes,
                Limit::EntryBytes,
                self.max_entry_bytes,
            )
        } else {
            (
                budget_left,
                Limit::DecompressedBytes,
                self.max_decompressed_bytes,
            )
        };
        let entry = match self.zip.by_index(index) {
            Ok(entry) => entry,
            Err(ZipError::UnsupportedArchive(ZipError::PASSWORD_REQUIRED))
            | Err(ZipError::InvalidPassword) => return Err(IngestError::Encrypted { kind }),
            Err(error) => {
                return Err(IngestError::invalid(
                    kind,
                    format!("cannot read {name}: {error}"),
                ))
            }
        };
        if entry.encrypted() {
            return Err(IngestError::Encrypted { kind });
        }
        let mut content = Vec::new();
        entry
            .take(cap.saturating_add(1))
            .read_to_end(&mut content)
            .map_err(|error| IngestError::invalid(kind, format!("cannot read {name}: {error}")))?;
        if content.len() as u64 > cap {
            return Err(IngestError::LimitExceeded { kind, limit, max });
        }
        self.decompressed_bytes += content.len() as u64;
        Ok(Some(content))
    }

    /// The entry as text (UTF-8, invalid sequences replaced), or `None` when absent.
    pub(crate) fn read_text(&mut self, name: &str) -> Result<Option<String>, IngestError> {
        Ok(self
            .read(name)?
            .map(|bytes| crate::decode::decode_lossy(&bytes)))
    }

    /// Reads every entry once under the caps, for formats a dependency decompresses itself
    /// (calamine): the bytes are dropped, only the check remains.
    pub(crate) fn check_every_entry(&mut self) -> Result<(), IngestError> {
        for name in self.names() {
            if name.ends_with('/') {
                continue;
            }
            self.read(&name)?;
        }
        Ok(())
    }
}

/// Joins a relative `href` to the directory of `base` (a path inside the archive), the way
/// OPF, relationship and manifest references are written: `..` climbs, a leading `/` is
/// the archive root, `%XX` escapes are decoded and any `#fragment` is dropped.
pub(crate) fn resolve_path(base: &str, href: &str) -> String {
    let without_fragment = href.split('#').next().unwrap_or_default();
    let decoded = percent_decode(without_fragment);
    let mut parts: Vec<&str> = if decoded.starts_with('/') {
        Vec::new()
    } else {
        let mut base_parts: Vec<&str> = base.split('/').collect();
        base_parts.pop();
        base_parts
    };
    for segment in decoded.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.retain(|part| !part.is_empty());
    parts.join("/")
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        if byte == b'%' {
            let high = bytes
                .get(index + 1)
                .and_then(|digit| (*digit as char).to_digit(16));
            let low = bytes
                .get(index + 2)
                .and_then(|digit| (*digit as char).to_digit(16));
            if let (Some(high), Some(low)) = (high, low) {
                decoded.push((high * 16 + low) as u8);
                index += 3;
                continue;
            }
        }
        decoded.push(byte);
        index += 1;
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_path_follows_relative_references() {
        assert_eq!(
            resolve_path("OEBPS/content.opf", "text/ch%201.xhtml"),
            "OEBPS/text/ch 1.xhtml"
        );
        assert_eq!(
            resolve_path("ppt/slides/slide1.xml", "../notesSlides/n1.xml"),
            "ppt/notesSlides/n1.xml"
        );
        assert_eq!(
            resolve_path("ppt/presentation.xml", "/ppt/slides/slide1.xml"),
            "ppt/slides/slide1.xml"
        );
        assert_eq!(resolve_path("content.opf", "ch1.xhtml#start"), "ch1.xhtml");
        assert_eq!(resolve_path("a.opf", "../../../x"), "x");
    }
}
