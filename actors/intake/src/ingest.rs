//! The steps of one file, shared by a synchronous drop, a folder and the ingest job:
//! read in a worker (a configured transcription or vision endpoint may add to the
//! text), turned into memories (chunks, or one memory for a folder's file), dedup by
//! the file's SHA-256 in its collection, and stored in writes of [`CHUNKS_PER_WRITE`].
//! The ingest job (`memvault_files::IngestJobs`) runs an item's steps through
//! [`IngestItem`].

use memvault_core::memory::NewMemory;
use memvault_core::service::access::{CollectionAccess, Write};
use memvault_core::service::placement::blob_key;
use memvault_core::Result;
use memvault_files::{cap_chars, Chunker, FileReader, IngestItem, ItemOutcome};
use memvault_ingest::{Extracted, Kind, Location};
use memvault_storage::{IngestBatchRecord, IngestItemRecord};
use memvault_types::{ErrorCode, Failure};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::files::{Files, StagedFile, PREVIEW_CHARS};

/// A file's memories, ready to store.
pub(crate) type Prepared = memvault_files::Prepared<NewMemory>;

/// Memories stored per write when a file has many chunks.
const CHUNKS_PER_WRITE: usize = 64;

impl Files {
    /// Stores memories in writes of [`CHUNKS_PER_WRITE`], embedding one write's chunks
    /// while the one before is stored; their ids.
    pub(crate) async fn store_chunks(
        &self,
        access: &CollectionAccess<Write>,
        memories: Vec<NewMemory>,
    ) -> Result<Vec<String>> {
        let created = self
            .parts
            .memories
            .create_in_batches(access, memories, None, CHUNKS_PER_WRITE)
            .await?;
        Ok(created.iter().map(|memory| memory.id.clone()).collect())
    }

    /// Reads a staged file and turns it into memories (not stored).
    pub(crate) async fn prepare_staged(
        &self,
        access: &CollectionAccess<Write>,
        staged: &StagedFile,
        context: &FileContext,
    ) -> std::result::Result<Prepared, Outcome> {
        if let Some(existing) = self.duplicate_of(access, &staged.sha256) {
            return Err(Outcome::Duplicate {
                note: format!(
                    "the same file is stored already in this collection (file {})",
                    existing.0
                ),
                memory_ids: existing.1,
            });
        }
        let mut extracted = self
            .parts
            .reader
            .read(staged.bytes.clone(), &staged.filename)
            .await
            .map_err(|failure| Outcome::Failed {
                code: failure.code,
                reason: failure.reason,
            })?;
        if let (Kind::Audio(_), Some(endpoint)) = (staged.kind, &self.settings().transcription) {
            // The configured endpoint's transcript wins over the offline model's.
            match endpoint
                .transcribe(staged.bytes.clone(), &staged.filename, staged.kind.mime())
                .await
            {
                Ok(text) => {
                    extracted.text = text;
                    extracted.sections.clear();
                    extracted.notes.retain(|note| {
                        !note.starts_with("transcri") && !note.contains("Moonshine")
                    });
                    extracted.notes.push(format!(
                        "transcribed by {} ({})",
                        endpoint.base_url, endpoint.model
                    ));
                }
                Err(reason) => extracted
                    .notes
                    .push(format!("the transcription endpoint failed: {reason}")),
            }
        }
        if let (Kind::Image(_), Some(endpoint)) = (staged.kind, &self.settings().vision) {
            match endpoint.caption(&staged.bytes, staged.kind.mime()).await {
                Ok(caption) => {
                    // Before the OCR text: the caption says what the image is.
                    let prefix = format!("Caption: {caption}\n\n");
                    extracted.text.insert_str(0, &prefix);
                    for section in &mut extracted.sections {
                        section.range =
                            section.range.start + prefix.len()..section.range.end + prefix.len();
                    }
                    extracted.notes.push(format!(
                        "captioned by {} ({})",
                        endpoint.base_url, endpoint.model
                    ));
                }
                Err(reason) => extracted.notes.push(format!("no caption: {reason}")),
            }
        }
        memories_of(&self.chunker(), staged, extracted, context)
    }

    fn chunker(&self) -> Chunker {
        let current = self.parts.embedders.current();
        Chunker::new(current.token_counter(), current.max_tokens())
    }

    /// A file with this digest stored already in the collection: its id and memories.
    fn duplicate_of(
        &self,
        access: &CollectionAccess<Write>,
        sha256: &str,
    ) -> Option<(String, Vec<String>)> {
        let memories = self.parts.memories.with_file_digest(access, sha256).ok()?;
        let mut found: Option<(String, Vec<String>)> = None;
        for memory in memories.iter().filter(|memory| memory.source == "file") {
            let file_id = memory
                .metadata
                .get("file_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            match &mut found {
                Some((id, ids)) if *id == file_id => ids.push(memory.id.clone()),
                Some(_) => {}
                None => found = Some((file_id, vec![memory.id.clone()])),
            }
        }
        found
    }
}

/// How a file is turned into memories.
pub(crate) struct FileContext {
    /// One memory for the whole file (a folder upload), else one per chunk.
    whole: bool,
    /// Merged into every memory's metadata.
    metadata: Map<String, Value>,
    source: String,
}

impl FileContext {
    pub(crate) fn plain() -> Self {
        Self {
            whole: false,
            metadata: Map::new(),
            source: "file".to_owned(),
        }
    }

    pub(crate) fn whole() -> Self {
        Self {
            whole: true,
            ..Self::plain()
        }
    }
}

/// Why a file gave no memories.
pub(crate) enum Outcome {
    Duplicate {
        memory_ids: Vec<String>,
        note: String,
    },
    Failed {
        code: String,
        reason: String,
    },
}

/// The memories of an extracted file: one per chunk (or one for the whole file), each
/// naming the file in its metadata and attaching the original.
fn memories_of(
    chunker: &Chunker,
    staged: &StagedFile,
    extracted: Extracted,
    context: &FileContext,
) -> std::result::Result<Prepared, Outcome> {
    let max = memvault_types::limits::MEMORY_TEXT_MAX_CHARS;
    let text = extracted.text.trim();
    let notes = extracted.notes.clone();
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    let mut pieces: Vec<(String, Option<Location>)> = if text.is_empty() {
        Vec::new()
    } else if context.whole {
        vec![(cap_chars(text, max), None)]
    } else {
        chunker
            .chunks(&extracted.text, &extracted.sections)
            .into_iter()
            .map(|chunk| (chunk.text, chunk.location))
            .collect()
    };
    if pieces.is_empty() {
        if !matches!(staged.kind, Kind::Image(_) | Kind::Audio(_)) {
            return Err(Outcome::Failed {
                code: "no_text".to_owned(),
                reason: match &note {
                    Some(note) => format!("no text was found in the file ({note})"),
                    None => "no text was found in the file".to_owned(),
                },
            });
        }
        // A photo without text, or audio that was not transcribed: still a memory, with
        // what is known of the file.
        let mut description = format!("{} ({})", staged.filename, staged.kind.label());
        if let Some(note) = &note {
            description.push_str(&format!(": {note}"));
        }
        pieces.push((cap_chars(&description, max), None));
    }
    let preview = pieces
        .first()
        .map(|(text, _)| cap_chars(text, PREVIEW_CHARS));
    let count = pieces.len();
    let attachment = staged.attachment().to_value();
    let memories = pieces
        .into_iter()
        .enumerate()
        .map(|(index, (text, location))| {
            let mut metadata = context.metadata.clone();
            metadata.insert("file_id".to_owned(), json!(staged.file_id));
            metadata.insert("filename".to_owned(), json!(staged.filename));
            metadata.insert("file_type".to_owned(), json!(staged.kind.name()));
            metadata.insert("content_type".to_owned(), json!(staged.kind.mime()));
            metadata.insert("size".to_owned(), json!(staged.size));
            metadata.insert("sha256".to_owned(), json!(staged.sha256));
            metadata.insert("chunk_index".to_owned(), json!(index));
            metadata.insert("chunk_count".to_owned(), json!(count));
            if let Some(title) = &extracted.title {
                metadata.insert("title".to_owned(), json!(cap_chars(title, 200)));
            }
            if let Some(location) = location {
                insert_location(&mut metadata, &location);
            }
            if !notes.is_empty() {
                metadata.insert("notes".to_owned(), json!(notes));
            }
            NewMemory {
                text,
                importance: 0.5,
                category: "other".to_owned(),
                source: context.source.clone(),
                metadata,
                container_tag: None,
                images: vec![attachment.clone()],
            }
        })
        .collect();
    Ok(memvault_files::Prepared {
        memories,
        note,
        preview,
    })
}

fn insert_location(metadata: &mut Map<String, Value>, location: &Location) {
    match location {
        Location::Page { number } => {
            metadata.insert("page".to_owned(), json!(number));
        }
        Location::Slide { number } => {
            metadata.insert("slide".to_owned(), json!(number));
        }
        Location::Sheet { number, name } => {
            metadata.insert("sheet".to_owned(), json!(number));
            metadata.insert("sheet_name".to_owned(), json!(name));
        }
        Location::Chapter { number, .. } => {
            metadata.insert("chapter".to_owned(), json!(number));
        }
        Location::Attachment { name, .. } => {
            metadata.insert("attachment".to_owned(), json!(name));
        }
    }
}

/// What ingest jobs run: the steps of one item.
#[async_trait::async_trait]
impl IngestItem for Files {
    type Memory = NewMemory;

    async fn prepare(
        &self,
        batch: &IngestBatchRecord,
        item: &IngestItemRecord,
    ) -> std::result::Result<std::result::Result<Prepared, ItemOutcome>, Failure> {
        let files = self;
        let Some(path) = &item.blob_path else {
            return Err(Failure::internal("the file was not stored").permanent());
        };
        let key = blob_key(&batch.tenant_id, path).map_err(Failure::from)?;
        let store = files
            .parts
            .placement
            .holding(&batch.tenant_id, item.blob_store.as_deref())
            .map_err(Failure::from)?
            .ok_or_else(|| {
                Failure::new(
                    ErrorCode::StorageUnavailable,
                    "the file was stored in a storage bucket that is no longer configured",
                )
                .permanent()
            })?;
        let bytes = store.get(&key).await.map_err(|error| {
            Failure::new(
                ErrorCode::StorageUnavailable,
                format!("the stored file could not be read: {error}"),
            )
        })?;
        let sha256 = hex::encode(Sha256::digest(&bytes));
        let staged = StagedFile {
            file_id: item.file_id.clone(),
            filename: item.filename.clone(),
            declared_type: item.declared_type.clone(),
            path: path.clone(),
            store: item.blob_store.clone(),
            size: bytes.len() as u64,
            sha256,
            kind: FileReader::sniff(&bytes, &item.filename),
            bytes,
        };
        let context = FileContext {
            whole: false,
            metadata: batch.metadata.clone(),
            source: batch.source.clone(),
        };
        match files
            .prepare_staged(&resumed(batch), &staged, &context)
            .await
        {
            Ok(prepared) => Ok(Ok(prepared)),
            Err(Outcome::Duplicate { memory_ids, note }) => {
                files
                    .parts
                    .placement
                    .delete(&batch.tenant_id, item.blob_store.as_deref(), path)
                    .await;
                Ok(Err(ItemOutcome::Done {
                    memory_ids,
                    note: Some(note),
                }))
            }
            Err(Outcome::Failed { code, reason }) => {
                let code = ErrorCode::ALL
                    .iter()
                    .copied()
                    .find(|known| known.as_str() == code)
                    .unwrap_or(ErrorCode::InvalidBody);
                Err(Failure::new(code, reason).permanent())
            }
        }
    }

    async fn store(
        &self,
        batch: &IngestBatchRecord,
        prepared: Prepared,
    ) -> std::result::Result<Vec<String>, Failure> {
        self.store_chunks(&resumed(batch), prepared.memories)
            .await
            .map_err(Failure::from)
    }

    async fn forget_partial(
        &self,
        batch: &IngestBatchRecord,
        item: &IngestItemRecord,
    ) -> std::result::Result<(), Failure> {
        let access = resumed(batch);
        let Ok(partial) = self.parts.memories.from_file(&access, &item.file_id) else {
            // The collection is gone: nothing of the item is left.
            return Ok(());
        };
        let ids = partial.iter().map(|memory| memory.id.clone()).collect();
        let memories = &self.parts.memories;
        memories
            .forget_keeping_files(&access, ids)
            .await
            .map_err(Failure::from)
    }
}

/// The write access a batch's items are stored under: the one its intake was given.
fn resumed(batch: &IngestBatchRecord) -> CollectionAccess<Write> {
    CollectionAccess::resumed(
        &batch.tenant_id,
        &batch.created_by,
        batch.collection.clone(),
    )
}
