//! memvault-index: a collection's derived indexes, vectors (usearch) and text (Tantivy),
//! and the search engine over them ([`search`]: filters, candidates, fusion, caches).
//! It knows no actors: the engine reads memories through [`search::engine::MemoryLookup`].
//!
//! The store is the truth; these are rebuilt from it. On open, an index that is missing,
//! unreadable or of another shape is rebuilt; one that is merely behind (the process died
//! before it was saved) is caught up by adding the memories it lacks. Memory keys
//! (`MemoryRecord::index_key`) only grow, so "behind" is a key comparison.

pub mod search;
mod text;
mod vector;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use memvault_storage::{CollectionName, EmbeddingModel, TenantId};
use serde::{Deserialize, Serialize};

pub use text::{KeyFilter, TextHit, TextIndex};
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
/// catch-up work after a crash).
const SAVE_EVERY: usize = 5_000;
/// Log a progress line every this many memories while rebuilding.
const PROGRESS_EVERY: usize = 10_000;

/// Where and how collections keep their indexes.
#[derive(Debug, Clone)]
pub struct IndexSettings {
    /// `{root}/{tenant}/{collection}/`; `None` keeps indexes in memory.
    pub root: Option<PathBuf>,
    /// The configured embedding model: new collections are built with it.
    pub model: EmbeddingModel,
}

impl IndexSettings {
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

/// What start-up needs to index one memory.
pub struct IndexInput<'a> {
    pub key: u64,
    pub text: &'a str,
    pub embedding: &'a [f32],
}

pub struct CollectionIndexes {
    pub vector: VectorIndex,
    /// Shared with the indexes that replace these when the collection is re-embedded.
    pub text: Arc<TextIndex>,
    /// Where the files live; `None` keeps everything in memory (tests).
    directory: Option<PathBuf>,
    /// The model that made the vectors.
    model: EmbeddingModel,
    unsaved: AtomicUsize,
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
    /// are `memories`. `label` names the collection in log lines.
    pub fn open(
        directory: Option<&Path>,
        model: &EmbeddingModel,
        memories: &[IndexInput<'_>],
        label: &str,
    ) -> Result<Self, IndexError> {
        let Some(directory) = directory else {
            let indexes = Self {
                vector: VectorIndex::new(model.dimensions)?,
                text: Arc::new(TextIndex::in_memory()?),
                directory: None,
                model: model.clone(),
                unsaved: AtomicUsize::new(0),
            };
            indexes.index_all(memories, |_| true, |_| true, label)?;
            return Ok(indexes);
        };
        std::fs::create_dir_all(directory).map_err(|error| IndexError::Io(error.to_string()))?;
        let (vector, vector_highest) = open_vectors(directory, model, memories.len(), label)?;
        let (text, text_highest) = open_text(directory, label)?;
        let indexes = Self {
            vector,
            text: Arc::new(text),
            directory: Some(directory.to_owned()),
            model: model.clone(),
            unsaved: AtomicUsize::new(0),
        };
        let vector_missing = |input: &IndexInput<'_>| {
            input.key > vector_highest || !indexes.vector.contains(input.key)
        };
        let text_missing = |input: &IndexInput<'_>| input.key > text_highest;
        indexes.index_all(memories, vector_missing, text_missing, label)?;
        indexes.flush()?;
        Ok(indexes)
    }

    fn index_all(
        &self,
        memories: &[IndexInput<'_>],
        vector_missing: impl Fn(&IndexInput<'_>) -> bool + Sync,
        text_missing: impl Fn(&IndexInput<'_>) -> bool,
        label: &str,
    ) -> Result<(), IndexError> {
        let for_vectors: Vec<&IndexInput<'_>> = memories
            .iter()
            .filter(|input| vector_missing(input))
            .collect();
        let for_text: Vec<&IndexInput<'_>> = memories
            .iter()
            .filter(|input| text_missing(input))
            .collect();
        if for_vectors.is_empty() && for_text.is_empty() {
            return Ok(());
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
        // usearch adds are thread-safe: one thread per core.
        let threads = std::thread::available_parallelism().map_or(1, |count| count.get());
        let done = AtomicUsize::new(0);
        let chunk = for_vectors.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| -> Result<(), IndexError> {
            let workers: Vec<_> = for_vectors
                .chunks(chunk)
                .map(|part| {
                    let done = &done;
                    scope.spawn(move || -> Result<(), IndexError> {
                        for input in part {
                            self.vector.add(input.key, input.embedding)?;
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
        })?;
        for input in &for_text {
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
        Ok(())
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
            vector,
            text: self.text.clone(),
            directory: self.directory.clone(),
            model,
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
        Ok(())
    }

    pub fn remove(&self, key: u64) -> Result<(), IndexError> {
        self.vector.remove(key)?;
        self.text.remove(key);
        Ok(())
    }

    /// Periodic upkeep: commit pending text writes; save the vectors once enough changed.
    pub fn maintain(&self) -> Result<(), IndexError> {
        self.text.commit()?;
        if self.unsaved.load(Ordering::Relaxed) >= SAVE_EVERY {
            self.save_vectors()?;
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
        if result.is_err() {
            self.unsaved.fetch_add(pending, Ordering::Relaxed);
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

fn open_vectors(
    directory: &Path,
    model: &EmbeddingModel,
    expected: usize,
    label: &str,
) -> Result<(VectorIndex, u64), IndexError> {
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
    let loaded = match meta {
        Some(meta) if made_by(&meta) => {
            match VectorIndex::load(&directory.join("vectors.usearch"), dimensions) {
                // Far more vectors than memories: mostly garbage from replaced keys.
                Ok(index) if index.len() > expected * 2 + 1_000 => {
                    tracing::info!(
                        collection = label,
                        "vector index has grown stale; rebuilding"
                    );
                    None
                }
                Ok(index) => {
                    index.note_key(meta.highest_key);
                    Some((index, meta.highest_key))
                }
                Err(error) => {
                    tracing::warn!(collection = label, %error, "vector index unreadable; rebuilding");
                    None
                }
            }
        }
        Some(_) => {
            tracing::warn!(
                collection = label,
                "vector index was made by another model; rebuilding"
            );
            None
        }
        None if expected > 0 => {
            tracing::info!(collection = label, "no saved vector index; rebuilding");
            None
        }
        None => None,
    };
    match loaded {
        Some(loaded) => Ok(loaded),
        None => Ok((VectorIndex::new(dimensions)?, 0)),
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
