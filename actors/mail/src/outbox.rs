//! The outbox: without SMTP, each message is one `{id}.eml` file (RFC 5322, as it would
//! have gone over the wire) in a directory under the data dir. A message is written to a
//! temporary file and renamed into place, so a reader never sees half of one; a retried
//! send of the same id replaces its file.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use mail_parser::MessageParser;

/// One message of the outbox, as `memvault mail outbox` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    pub file: PathBuf,
    /// When it was written.
    pub written_at: DateTime<Utc>,
    pub to: String,
    pub subject: String,
    /// The plain-text body.
    pub text: String,
}

/// Writes one message as `{directory}/{id}.eml`, creating the directory when missing.
pub fn write(directory: &Path, id: &str, message: &[u8]) -> io::Result<()> {
    fs::create_dir_all(directory)?;
    let name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut file = tempfile::NamedTempFile::new_in(directory)?;
    file.write_all(message)?;
    file.as_file().sync_all()?;
    file.persist(directory.join(format!("{name}.eml")))
        .map_err(|error| error.error)?;
    Ok(())
}

/// Every message in the outbox, oldest first; an absent directory is an empty outbox.
/// A file that is not a readable message is listed with what could be read of it.
pub fn read(directory: &Path) -> io::Result<Vec<OutboxEntry>> {
    let listing = match fs::read_dir(directory) {
        Ok(listing) => listing,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut entries = Vec::new();
    for item in listing {
        let path = item?.path();
        if path.extension().and_then(|ext| ext.to_str()) != Some("eml") {
            continue;
        }
        let modified = fs::metadata(&path)?
            .modified()
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let bytes = fs::read(&path)?;
        let parsed = MessageParser::default().parse(&bytes[..]);
        let (to, subject, text) = match &parsed {
            Some(message) => (
                message
                    .to()
                    .and_then(|to| to.first())
                    .and_then(|address| address.address())
                    .unwrap_or_default()
                    .to_owned(),
                message.subject().unwrap_or_default().to_owned(),
                message
                    .body_text(0)
                    .map(|text| text.into_owned())
                    .unwrap_or_default(),
            ),
            None => (String::new(), String::new(), String::new()),
        };
        entries.push(OutboxEntry {
            file: path,
            written_at: DateTime::<Utc>::from(modified),
            to,
            subject,
            text,
        });
    }
    entries.sort_by(|a, b| a.written_at.cmp(&b.written_at).then(a.file.cmp(&b.file)));
    Ok(entries)
}
