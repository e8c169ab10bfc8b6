//! [`FileReader`]: a file's bytes to text, in a worker process. Untrusted bytes are never
//! parsed in the server: each file is sniffed and extracted by `memvault ingest-worker`
//! under memory, CPU and wall-clock limits, a few at a time; a crash or a hang fails that
//! file with a reason. Attachments a worker hands back (a PDF in a mail) are read by a
//! worker of their own and appended as sections.

use std::sync::Arc;

use bytes::Bytes;
use memvault_ingest::worker::{Worker, WorkerError};
use memvault_ingest::{extract_with, sniff, Extracted, Kind, Location, Section};
use tokio::sync::Semaphore;

use super::settings::FileSettings;

/// Why a file gave no text: a stable code and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadFailure {
    pub code: String,
    pub reason: String,
}

/// Reads files in worker processes, at most `settings.workers` at once.
#[derive(Clone)]
pub struct FileReader {
    settings: FileSettings,
    permits: Arc<Semaphore>,
}

impl FileReader {
    pub fn new(settings: FileSettings) -> Self {
        let permits = Arc::new(Semaphore::new(settings.workers.max(1)));
        Self { settings, permits }
    }

    /// What the file is, by its content (the name only breaks ties between text kinds).
    pub fn sniff(bytes: &[u8], filename: &str) -> Kind {
        sniff(bytes, Some(filename))
    }

    /// The file's text, with its attachments' text appended.
    pub async fn read(&self, bytes: Bytes, filename: &str) -> Result<Extracted, ReadFailure> {
        let mut extracted = self.read_one(bytes, filename.to_owned()).await?;
        let deferred = std::mem::take(&mut extracted.deferred);
        for attachment in deferred {
            let name = attachment
                .name
                .clone()
                .unwrap_or_else(|| format!("attachment.{}", attachment.kind.name()));
            match self
                .read_one(Bytes::from(attachment.bytes), name.clone())
                .await
            {
                Ok(inner) => append_attachment(&mut extracted, &name, attachment.kind, inner),
                Err(failure) => extracted.notes.push(format!(
                    "attachment '{name}' was not read: {}",
                    failure.reason
                )),
            }
        }
        Ok(extracted)
    }

    async fn read_one(&self, bytes: Bytes, filename: String) -> Result<Extracted, ReadFailure> {
        let _permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ReadFailure {
                code: "stopping".to_owned(),
                reason: "the service is stopping".to_owned(),
            })?;
        let settings = self.settings.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let engines = (settings.engines)();
            match &settings.worker {
                Some(program) => Worker::new(
                    program.program.clone(),
                    program.args.clone(),
                    settings.worker_limits.clone(),
                )
                .with_engines(engines)
                .extract(&bytes, Some(&filename), &settings.limits)
                .map_err(|error| failure_of(&error)),
                None => {
                    let kind = sniff(&bytes, Some(&filename));
                    std::panic::catch_unwind(|| {
                        extract_with(kind, &bytes, &settings.limits, &engines)
                    })
                    .unwrap_or(Err(memvault_ingest::IngestError::ParserPanicked { kind }))
                    .map_err(|error| ReadFailure {
                        code: error.code().to_owned(),
                        reason: error.to_string(),
                    })
                }
            }
        })
        .await;
        joined.unwrap_or_else(|error| {
            Err(ReadFailure {
                code: "crashed".to_owned(),
                reason: format!("the extraction task failed: {error}"),
            })
        })
    }
}

fn failure_of(error: &WorkerError) -> ReadFailure {
    ReadFailure {
        code: error.code().to_owned(),
        reason: error.to_string(),
    }
}

/// Appends an attachment's text as a section of its own.
fn append_attachment(extracted: &mut Extracted, name: &str, kind: Kind, inner: Extracted) {
    if inner.text.trim().is_empty() {
        extracted.notes.extend(
            inner
                .notes
                .into_iter()
                .map(|note| format!("attachment '{name}': {note}")),
        );
        return;
    }
    let start = extracted.text.len();
    extracted
        .text
        .push_str(&format!("\n\n## Attachment: {name}\n\n{}", inner.text));
    extracted.sections.push(Section {
        location: Location::Attachment {
            name: name.to_owned(),
            kind,
        },
        title: inner.title,
        range: start..extracted.text.len(),
    });
}
