//! Caches that make repeated searches cheap without ever serving stale results.
//!
//! Result keys carry the version of every collection searched (and the identity of each
//! collection's handle, so a deleted and re-created collection never matches): any write
//! bumps a version, so a changed collection simply misses. Query embeddings are cached by
//! text; a text always embeds to the same vector.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use moka::sync::Cache;

use super::SearchHit;

pub struct SearchCaches {
    results: Option<Cache<u64, Arc<Vec<SearchHit>>>>,
    embeddings: Cache<String, Arc<Vec<f32>>>,
}

impl SearchCaches {
    /// `result_entries` 0 turns the result cache off (benchmarks).
    pub fn new(result_entries: u64, embedding_entries: u64) -> Self {
        Self {
            results: (result_entries > 0).then(|| Cache::new(result_entries)),
            embeddings: Cache::new(embedding_entries),
        }
    }

    pub fn results(&self, key: u64) -> Option<Arc<Vec<SearchHit>>> {
        self.results.as_ref()?.get(&key)
    }

    pub fn store_results(&self, key: u64, hits: Arc<Vec<SearchHit>>) {
        if let Some(results) = &self.results {
            results.insert(key, hits);
        }
    }

    pub fn embedding(&self, text: &str) -> Option<Arc<Vec<f32>>> {
        self.embeddings.get(text)
    }

    pub fn store_embedding(&self, text: String, vector: Arc<Vec<f32>>) {
        self.embeddings.insert(text, vector);
    }
}

/// A stable fingerprint of a request and the state it ran against.
pub fn fingerprint(parts: impl Hash) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut hasher);
    hasher.finish()
}
