//! memvault-index: a collection's derived indexes, vectors (usearch) and text (Tantivy),
//! and the search engine over them ([`search`]: filters, candidates, fusion, caches).
//! It knows no actors: the engine reads memories through [`search::engine::MemoryLookup`].
//!
//! The store is the truth; these are rebuilt from it. On open, an index that is missing,
//! unreadable or of another shape is rebuilt; one that is merely behind (the process died
//! before it was saved) is caught up by adding the memories it lacks. Memory keys
//! (`MemoryRecord::index_key`) only grow, so "behind" is a key comparison.

pub mod search;
mod snapshot;
mod text;
mod vector;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use memvault_storage::{CollectionName, EmbeddingModel, TenantId};
use serde::{Deserialize, Serialize};

pub use snapshot::{snapshot_path, SnapshotShelf, SNAPSHOT_FOLDER};
pub use text::{KeyFilter, ScoreFloor, TextHit, TextIndex};
pub use vector::{dot, Quantization, VectorHit, VectorIndex};

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("vector index: {0}")]
    Vector(String),
    #[error("text index: {0}")]
    Text(String),
    #[error("index files: {0}")]
    Io(String),
    #[error("index is unusable: {0}")]
    Corrupt(String),
}

/// Unsaved vector adds after which the vector index is written to disk (bounds the
/// catch-up work after a crash)...
const SAVE_EVERY: usize = 5_000;
/// ...but not more often than this: each save writes the whole index, so saving a large
/// one every few thousand adds would write it again and again during a bulk load (a
/// million 384-dimension memories: about a gigabyte, two hundred times). A crash costs
/// at most this long of writes to catch up.
const SAVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);
/// Log a progress line every this many memories while rebuilding.
const PROGRESS_EVERY: usize = 10_000;

/// Where and how collections keep their indexes.
#[derive(Debug, Clone)]
pub struct IndexSettings {
    /// `{root}/{tenant}/{collection}/`; `None` keeps indexes in memory.
    pub root: Option<PathBuf>,
    /// The configured embedding model: new collections are built with it.
    pub model: EmbeddingModel,
    /// Where snapshots of the indexes are kept for the next node to serve a collection
    /// (several nodes); `None` keeps none. Used only with a `root`.
    pub shelf: Option<Arc<dyn SnapshotShelf>>,
}

impl IndexSettings {
    /// Opens (or rebuilds, or catches up) a collection's indexes. With a shelf and no
    /// saved index on this node, the collection's latest snapshot is unpacked first, so
    /// only what changed since it is indexed.
    pub fn open(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        model: &EmbeddingModel,
        memories: &[IndexInput<'_>],
    ) -> Result<CollectionIndexes, IndexError> {
        self.open_with(tenant, collection, model, memories, &|_| {
            Err("an index input came without its embedding".to_owned())
        })
    }

    /// [`IndexSettings::open`] where inputs may come without their embedding
    /// (`IndexInput::embedding` `None`): the vectors the saved index lacks are read with
    /// `fetch` (positions in `memories` → their embeddings, in that order), a bounded
    /// number at a time, so opening a collection whose index is current never holds its
    /// embeddings in memory.
    pub fn open_with(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        model: &EmbeddingModel,
        memories: &[IndexInput<'_>],
        fetch: FetchEmbeddings<'_>,
    ) -> Result<CollectionIndexes, IndexError> {
        let saved = self.preload(tenant, collection, model);
        self.open_preloaded(saved, tenant, collection, model, memories, fetch)
    }

    /// Reads a collection's saved index files before its memories are known, so that
    /// start-up reads them while it reads the records (at a million memories the vectors
    /// alone are about 900 MB). Nothing is read when the indexes live in memory, or when
    /// this node has none saved and a snapshot may have to be unpacked first: then
    /// [`IndexSettings::open_preloaded`] does all of it.
    pub fn preload(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        model: &EmbeddingModel,
    ) -> Option<SavedIndexes> {
        let directory = self.directory(tenant, collection)?;
        if self.shelf.is_some() && !has_saved_indexes(&directory) {
            return None;
        }
        let label = format!("{tenant}/{collection}");
        Some(SavedIndexes::read(&directory, model, &label))
    }

    /// [`IndexSettings::open_with`] from what [`IndexSettings::preload`] read.
    pub fn open_preloaded(
        &self,
        saved: Option<SavedIndexes>,
        tenant: &TenantId,
        collection: &CollectionName,
        model: &EmbeddingModel,
        memories: &[IndexInput<'_>],
        fetch: FetchEmbeddings<'_>,
    ) -> Result<CollectionIndexes, IndexError> {
        let label = format!("{tenant}/{collection}");
        let directory = self.directory(tenant, collection);
        let (Some(shelf), Some(directory)) = (&self.shelf, &directory) else {
            return CollectionIndexes::open(
                directory.as_deref(),
                saved,
                model,
                memories,
                fetch,
                &label,
                None,
            );
        };
        if saved.is_none() && !has_saved_indexes(directory) && !memories.is_empty() {
            let started = Instant::now();
            match shelf.fetch(tenant, collection) {
                Ok(Some(packed)) => match snapshot::unpack(&packed, directory) {
                    Ok(()) => tracing::info!(
                        collection = label,
                        bytes = packed.len(),
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "index snapshot unpacked"
                    ),
                    Err(error) => {
                        tracing::warn!(collection = label, %error, "index snapshot unusable; rebuilding");
                        let _ = std::fs::remove_dir_all(directory);
                    }
                },
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(collection = label, %error, "index snapshot unreadable; rebuilding")
                }
            }
        }
        let shelving = snapshot::Shelving::new(shelf.clone(), tenant.clone(), collection.clone());
        CollectionIndexes::open(
            Some(directory),
            saved,
            model,
            memories,
            fetch,
            &label,
            Some(shelving),
        )
    }

    /// Deletes a collection's saved indexes, here and on the shelf.
    pub fn destroy(&self, tenant: &TenantId, collection: &CollectionName) {
        if let Some(directory) = self.directory(tenant, collection) {
            CollectionIndexes::destroy(&directory);
        }
        if let Some(shelf) = &self.shelf {
            if let Err(error) = shelf.discard(tenant, collection) {
                tracing::warn!(tenant = %tenant, collection = %collection, %error, "index snapshot not deleted");
            }
        }
    }

    /// Removes what is saved of a tenant's indexes: with several nodes, what this node
    /// saved while it last served the tenant misses what another node wrote since.
    pub fn forget_tenant(&self, tenant: &TenantId) -> std::io::Result<()> {
        match &self.root {
            Some(root) if root.join(tenant.as_str()).exists() => {
                std::fs::remove_dir_all(root.join(tenant.as_str()))
            }
            _ => Ok(()),
        }
    }

    pub fn directory(&self, tenant: &TenantId, collection: &CollectionName) -> Option<PathBuf> {
        self.root
            .as_ref()
            .map(|root| root.join(tenant.as_str()).join(collection.as_str()))
    }
}

/// What start-up needs to index one memory. Without its embedding, the embedding is
/// read (see [`IndexSettings::open_with`]) only if the vector index lacks it.
pub struct IndexInput<'a> {
    pub key: u64,
    pub text: &'a str,
    pub embedding: Option<&'a [f32]>,
}

/// Reads the embeddings of the inputs at these positions, in that order.
pub type FetchEmbeddings<'a> = &'a dyn Fn(&[usize]) -> Result<Vec<Vec<f32>>, String>;

/// Embeddings read at once while indexing inputs that came without theirs.
const FETCH_CHUNK: usize = 10_000;

pub struct CollectionIndexes {
    pub vector: VectorIndex,
    /// Shared with the indexes that replace these when the collection is re-embedded.
    pub text: Arc<TextIndex>,
    /// Where the files live; `None` keeps everything in memory (tests).
    directory: Option<PathBuf>,
    /// The model that made the vectors.
    model: EmbeddingModel,
    unsaved: AtomicUsize,
    /// When the vectors were last saved (or opened).
    saved_at: std::sync::Mutex<Instant>,
    /// Snapshots for other nodes; `None` keeps none.
    shelving: Option<Arc<snapshot::Shelving>>,
}

#[derive(Serialize, Deserialize)]
struct VectorMeta {
    dimensions: usize,
    /// The model that made the vectors; absent in files from before it was recorded,
    /// which all-MiniLM-L6-v2 made.
    #[serde(default)]
    model: Option<String>,
    /// Every memory key up to this one was in the index when it was saved.
    highest_key: u64,
}

impl CollectionIndexes {
    /// Opens (or rebuilds, or catches up) the indexes of a collection whose stored memories
    /// are `memories`, keeping snapshots through `shelving`; `label` names the collection
    /// in log lines. When the directory holds an unpacked snapshot's key list, every
    /// memory it does not list with the same fingerprint is indexed again (see
    /// [`snapshot`]).
    fn open(
        directory: Option<&Path>,
        saved: Option<SavedIndexes>,
        model: &EmbeddingModel,
        memories: &[IndexInput<'_>],
        fetch: FetchEmbeddings<'_>,
        label: &str,
        shelving: Option<snapshot::Shelving>,
    ) -> Result<Self, IndexError> {
        let Some(directory) = directory else {
            let indexes = Self {
                vector: VectorIndex::new(model.dimensions)?,
                text: Arc::new(TextIndex::in_memory()?),
                directory: None,
                model: model.clone(),
                unsaved: AtomicUsize::new(0),
                saved_at: std::sync::Mutex::new(Instant::now()),
                shelving: None,
            };
            indexes.index_all(memories, fetch, |_, _| true, |_, _| true, 0, label)?;
            return Ok(indexes);
        };
        let saved = match saved {
            Some(saved) => saved,
            None => SavedIndexes::read(directory, model, label),
        };
        let listed = saved.listed;
        let (vector, vector_highest) = saved.vector.open(model, memories.len(), label)?;
        let (text, text_highest) = saved.text?;
        let fingerprints: Vec<u64> = if shelving.is_some() || listed.is_some() {
            memories
                .iter()
                .map(|input| snapshot::fingerprint(input.text))
                .collect()
        } else {
            Vec::new()
        };
        let indexes = Self {
            vector,
            text: Arc::new(text),
            directory: Some(directory.to_owned()),
            model: model.clone(),
            unsaved: AtomicUsize::new(0),
            saved_at: std::sync::Mutex::new(Instant::now()),
            shelving: shelving.map(Arc::new),
        };
        let unlisted = |position: usize, input: &IndexInput<'_>| {
            listed
                .as_ref()
                .is_some_and(|listed| listed.get(&input.key) != fingerprints.get(position))
        };
        let vector_missing = |position: usize, input: &IndexInput<'_>| {
            input.key > vector_highest
                || !indexes.vector.contains(input.key)
                || unlisted(position, input)
        };
        let text_missing = |position: usize, input: &IndexInput<'_>| {
            input.key > text_highest || unlisted(position, input)
        };
        let reindexed = indexes.index_all(
            memories,
            fetch,
            vector_missing,
            text_missing,
            text_highest,
            label,
        )?;
        indexes.flush()?;
        if listed.is_some() {
            let _ = std::fs::remove_file(directory.join(snapshot::KEY_LIST));
        }
        if let Some(shelving) = &indexes.shelving {
            shelving.fill(
                memories.iter().map(|input| input.key).zip(fingerprints),
                reindexed,
            );
        }
        Ok(indexes)
    }

    /// Indexes the memories each test says are missing; a text document whose key is at
    /// most `replace_up_to` may be there with older text, and is deleted first. Returns
    /// how many vectors were added.
    fn index_all(
        &self,
        memories: &[IndexInput<'_>],
        fetch: FetchEmbeddings<'_>,
        vector_missing: impl Fn(usize, &IndexInput<'_>) -> bool,
        text_missing: impl Fn(usize, &IndexInput<'_>) -> bool,
        replace_up_to: u64,
        label: &str,
    ) -> Result<usize, IndexError> {
        let for_vectors: Vec<usize> = memories
            .iter()
            .enumerate()
            .filter(|(position, input)| vector_missing(*position, input))
            .map(|(position, _)| position)
            .collect();
        let for_text: Vec<&IndexInput<'_>> = memories
            .iter()
            .enumerate()
            .filter(|(position, input)| text_missing(*position, input))
            .map(|(_, input)| input)
            .collect();
        if for_vectors.is_empty() && for_text.is_empty() {
            return Ok(0);
        }
        let started = Instant::now();
        if for_vectors.len() + for_text.len() >= PROGRESS_EVERY {
            tracing::info!(
                collection = label,
                vectors = for_vectors.len(),
                texts = for_text.len(),
                "indexing memories missing from the indexes"
            );
        }
        self.vector.ensure_capacity(for_vectors.len())?;
        let done = AtomicUsize::new(0);
        for positions in for_vectors.chunks(FETCH_CHUNK) {
            let lacking: Vec<usize> = positions
                .iter()
                .copied()
                .filter(|position| memories[*position].embedding.is_none())
                .collect();
            let fetched = if lacking.is_empty() {
                Vec::new()
            } else {
                fetch(&lacking).map_err(IndexError::Io)?
            };
            if fetched.len() != lacking.len() {
                return Err(IndexError::Io(format!(
                    "{} embeddings read for {} memories",
                    fetched.len(),
                    lacking.len()
                )));
            }
            let mut fetched = fetched.iter();
            let vectors: Vec<(u64, &[f32])> = positions
                .iter()
                .filter_map(|position| {
                    let input = &memories[*position];
                    let embedding = input
                        .embedding
                        .or_else(|| fetched.next().map(Vec::as_slice))?;
                    Some((input.key, embedding))
                })
                .collect();
            self.add_vectors(&vectors, &done, label)?;
        }
        for input in &for_text {
            if input.key <= replace_up_to {
                self.text.remove(input.key);
            }
            self.text.add(input.key, input.text)?;
        }
        self.unsaved.fetch_add(for_vectors.len(), Ordering::Relaxed);
        tracing::info!(
            collection = label,
            vectors = for_vectors.len(),
            texts = for_text.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "indexes caught up with the store"
        );
        Ok(for_vectors.len())
    }

    /// Adds `vectors` to the vector index, one thread per core (usearch adds are
    /// thread-safe), counting them in `done` for the progress lines.
    fn add_vectors(
        &self,
        vectors: &[(u64, &[f32])],
        done: &AtomicUsize,
        label: &str,
    ) -> Result<(), IndexError> {
        let threads = std::thread::available_parallelism().map_or(1, |count| count.get());
        let chunk = vectors.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| -> Result<(), IndexError> {
            let workers: Vec<_> = vectors
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || -> Result<(), IndexError> {
                        for (key, embedding) in part {
                            self.vector.add(*key, embedding)?;
                            let count = done.fetch_add(1, Ordering::Relaxed) + 1;
                            if count.is_multiple_of(PROGRESS_EVERY) {
                                tracing::info!(collection = label, vectors = count, "indexing");
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            for worker in workers {
                worker
                    .join()
                    .map_err(|_| IndexError::Vector("an indexing thread panicked".to_owned()))??;
            }
            Ok(())
        })
    }

    /// The highest memory key either index holds or held: a collection hands out keys
    /// above it, so no stale entry answers for a new memory.
    pub fn highest_key(&self) -> u64 {
        self.vector.highest_key().max(self.text.highest_key())
    }

    /// The model that made the vectors.
    pub fn model(&self) -> &EmbeddingModel {
        &self.model
    }

    /// These indexes with `vector` (made by `model`) in place of the vector index; the
    /// text index is shared. The new vectors are saved before this returns, so a restart
    /// finds them instead of rebuilding.
    pub fn with_vectors(
        &self,
        model: EmbeddingModel,
        vector: VectorIndex,
    ) -> Result<Self, IndexError> {
        let indexes = Self {
            unsaved: AtomicUsize::new(vector.len().max(1)),
            saved_at: std::sync::Mutex::new(Instant::now()),
            vector,
            text: self.text.clone(),
            directory: self.directory.clone(),
            model,
            shelving: self.shelving.clone(),
        };
        indexes.flush()?;
        Ok(indexes)
    }

    /// Indexes one memory (a new key; an older key of the same memory is removed by the
    /// caller).
    pub fn add(&self, key: u64, text: &str, embedding: &[f32]) -> Result<(), IndexError> {
        self.vector.add(key, embedding)?;
        self.text.add(key, text)?;
        self.unsaved.fetch_add(1, Ordering::Relaxed);
        if let Some(shelving) = &self.shelving {
            shelving.added(key, snapshot::fingerprint(text));
        }
        Ok(())
    }

    pub fn remove(&self, key: u64) -> Result<(), IndexError> {
        self.vector.remove(key)?;
        self.text.remove(key);
        if let Some(shelving) = &self.shelving {
            shelving.removed(key);
        }
        Ok(())
    }

    /// Whether [`CollectionIndexes::maintain`] has work: text writes to commit, segments
    /// to merge, or a snapshot due.
    pub fn needs_upkeep(&self) -> bool {
        self.text.is_dirty()
            || self.text.wants_tidy()
            || self
                .shelving
                .as_ref()
                .is_some_and(|shelving| shelving.due())
    }

    /// Periodic upkeep: commit pending text writes; merge the text segments of a quiet
    /// index ([`TextIndex::tidy`]); save the vectors once enough changed;
    /// pack a snapshot when one is due (uploaded in the background).
    pub fn maintain(&self) -> Result<(), IndexError> {
        self.text.commit()?;
        self.text.tidy()?;
        let saved_long_ago = self
            .saved_at
            .lock()
            .map_or(true, |saved_at| saved_at.elapsed() >= SAVE_INTERVAL);
        if self.unsaved.load(Ordering::Relaxed) >= SAVE_EVERY && saved_long_ago {
            self.save_vectors()?;
        }
        if let (Some(shelving), Some(directory)) = (&self.shelving, &self.directory) {
            if shelving.due() {
                self.flush()?;
                shelving.shelve(directory, false)?;
            }
        }
        Ok(())
    }

    /// Saves everything and, when anything changed since the last snapshot, keeps one
    /// before returning (the collection stops: the next node starts from it).
    pub fn close(&self) -> Result<(), IndexError> {
        self.flush()?;
        if let (Some(shelving), Some(directory)) = (&self.shelving, &self.directory) {
            if shelving.has_changes() {
                shelving.shelve(directory, true)?;
            }
        }
        Ok(())
    }

    /// Commits and saves everything (shutdown, after a rebuild).
    pub fn flush(&self) -> Result<(), IndexError> {
        self.text.commit()?;
        if self.unsaved.load(Ordering::Relaxed) > 0 {
            self.save_vectors()?;
        }
        Ok(())
    }

    fn save_vectors(&self) -> Result<(), IndexError> {
        let Some(directory) = &self.directory else {
            return Ok(());
        };
        // Read before saving: keys added during the save are above it and re-added on open.
        let highest = self.vector.highest_key();
        let pending = self.unsaved.swap(0, Ordering::Relaxed);
        let result = self
            .vector
            .save(&directory.join("vectors.usearch"))
            .and_then(|()| {
                let meta = VectorMeta {
                    dimensions: self.model.dimensions,
                    model: Some(self.model.name.clone()),
                    highest_key: highest,
                };
                write_json(&directory.join("vectors.json"), &meta)
            });
        match &result {
            Ok(()) => {
                if let Ok(mut saved_at) = self.saved_at.lock() {
                    *saved_at = Instant::now();
                }
            }
            Err(_) => {
                self.unsaved.fetch_add(pending, Ordering::Relaxed);
            }
        }
        result
    }

    /// Deletes a collection's index files.
    pub fn destroy(directory: &Path) {
        if let Err(error) = std::fs::remove_dir_all(directory) {
            if error.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(%error, directory = %directory.display(), "cannot delete index files");
            }
        }
    }
}

/// Whether this node has a collection's index files (else a snapshot may be unpacked).
fn has_saved_indexes(directory: &Path) -> bool {
    directory.join("vectors.json").exists() || directory.join("text").join("meta.json").exists()
}

/// A collection's index files as read from its directory, before they are checked
/// against its memories ([`IndexSettings::preload`]).
pub struct SavedIndexes {
    vector: VectorFile,
    text: Result<(TextIndex, u64), IndexError>,
    /// An unpacked snapshot's key list (see [`snapshot`]).
    listed: Option<HashMap<u64, u64>>,
}

enum VectorFile {
    /// The saved vectors and the highest key they hold.
    Loaded(VectorIndex, u64),
    /// None saved: a collection with memories rebuilds.
    Absent,
    /// Unusable (unreadable, another model, an error creating the directory): rebuilt.
    Refused,
}

impl SavedIndexes {
    fn read(directory: &Path, model: &EmbeddingModel, label: &str) -> Self {
        if let Err(error) = std::fs::create_dir_all(directory) {
            return Self {
                vector: VectorFile::Refused,
                text: Err(IndexError::Io(error.to_string())),
                listed: None,
            };
        }
        Self {
            listed: snapshot::read_key_list(directory),
            vector: VectorFile::read(directory, model, label),
            text: open_text(directory, label),
        }
    }
}

impl VectorFile {
    fn read(directory: &Path, model: &EmbeddingModel, label: &str) -> Self {
        let dimensions = model.dimensions;
        let meta: Option<VectorMeta> = std::fs::read(directory.join("vectors.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        let made_by = |meta: &VectorMeta| {
            let name = meta
                .model
                .clone()
                .unwrap_or_else(|| EmbeddingModel::legacy().name);
            meta.dimensions == dimensions && name == model.name
        };
        match meta {
            Some(meta) if made_by(&meta) => {
                match VectorIndex::load(&directory.join("vectors.usearch"), dimensions) {
                    Ok(index) => {
                        index.note_key(meta.highest_key);
                        Self::Loaded(index, meta.highest_key)
                    }
                    Err(error) => {
                        tracing::warn!(collection = label, %error, "vector index unreadable; rebuilding");
                        Self::Refused
                    }
                }
            }
            Some(_) => {
                tracing::warn!(
                    collection = label,
                    "vector index was made by another model; rebuilding"
                );
                Self::Refused
            }
            None => Self::Absent,
        }
    }

    /// The index to keep for a collection of `expected` memories and the highest key it
    /// holds (an empty index and 0 when it is rebuilt).
    fn open(
        self,
        model: &EmbeddingModel,
        expected: usize,
        label: &str,
    ) -> Result<(VectorIndex, u64), IndexError> {
        match self {
            // Far more vectors than memories: mostly garbage from replaced keys.
            Self::Loaded(index, _) if index.len() > expected * 2 + 1_000 => {
                tracing::info!(
                    collection = label,
                    "vector index has grown stale; rebuilding"
                );
            }
            Self::Loaded(index, highest) => return Ok((index, highest)),
            Self::Absent if expected > 0 => {
                tracing::info!(collection = label, "no saved vector index; rebuilding");
            }
            Self::Absent | Self::Refused => {}
        }
        Ok((VectorIndex::new(model.dimensions)?, 0))
    }
}

fn open_text(directory: &Path, label: &str) -> Result<(TextIndex, u64), IndexError> {
    let path = directory.join("text");
    let opened = TextIndex::open(&path).and_then(|index| {
        let committed = index.committed_key()?;
        Ok((index, committed))
    });
    match opened {
        Ok(opened) => Ok(opened),
        Err(error) => {
            tracing::warn!(collection = label, %error, "text index unreadable; rebuilding");
            let _ = std::fs::remove_dir_all(&path);
            Ok((TextIndex::open(&path)?, 0))
        }
    }
}

fn write_json(path: &Path, value: &impl Serialize) -> Result<(), IndexError> {
    let bytes = serde_json::to_vec(value).map_err(|error| IndexError::Io(error.to_string()))?;
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, bytes).map_err(|error| IndexError::Io(error.to_string()))?;
    std::fs::rename(&temporary, path).map_err(|error| IndexError::Io(error.to_string()))
}
