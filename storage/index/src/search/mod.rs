//! Search: what a request asks for, which memories it may return, and how candidates from
//! the vector and text indexes become one ranked list.
//!
//! - [`filter`]: eligibility (superseded, expired, archived) and the request's filters.
//! - [`engine`]: candidate generation for one collection, exact or approximate.
//! - [`fusion`]: hybrid mode's convex combination of normalised scores.
//! - [`cache`]: result and query-embedding caches keyed by collection version.

pub mod cache;
pub mod engine;
pub mod filter;
pub mod fusion;

use std::sync::Arc;

use memvault_storage::{CollectionName, MemoryRecord};

pub use filter::SearchFilter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SearchMode {
    Hybrid,
    Vector,
    Text,
}

/// A validated search request.
#[derive(Debug, Clone)]
pub struct SearchQuery {
    pub text: String,
    pub limit: usize,
    /// The vector threshold: vector candidates below it are dropped (hybrid may still
    /// return a keyword match below it).
    pub min_score: f32,
    pub mode: SearchMode,
    pub filter: SearchFilter,
    pub rewrite: bool,
    pub rerank: bool,
    /// How hybrid mode fuses its lists; the API always uses the default.
    pub fusion: FusionParams,
}

/// Hybrid fusion settings, tuned with `memvault eval --grid` on the public sets (README,
/// Search).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusionParams {
    /// Candidates each list contributes (at least the request's limit); vector candidates
    /// are at least `min_score`.
    pub window: usize,
    /// α: the share of the normalised cosine in the fused score; BM25 has 1 − α.
    pub vector_weight: f32,
}

impl Default for FusionParams {
    fn default() -> Self {
        Self {
            // With every BM25 candidate scored exactly on the vector side, wider windows
            // changed next to nothing on the public sets, and each extra BM25 candidate
            // costs an exact cosine.
            window: 20,
            // Vectors are the better ranker on MS MARCO, BM25 on LoCoMo; 0.6 stays within
            // 0.002 of the better single mode on each public set.
            vector_weight: 0.6,
        }
    }
}

impl std::hash::Hash for FusionParams {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.window, self.vector_weight.to_bits()).hash(state);
    }
}

/// One result.
#[derive(Debug, Clone)]
pub struct SearchHit {
    pub memory: Arc<MemoryRecord>,
    pub score: f32,
    /// The collection it came from (reported by tenant-wide search).
    pub collection: CollectionName,
}

/// A step the request asked for that did not run, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub step: &'static str,
    pub reason: String,
}

/// What a search answers.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    pub hits: Arc<Vec<SearchHit>>,
    pub query_embedding_ms: f64,
    pub search_ms: f64,
    pub cached: bool,
    pub skipped: Vec<Skipped>,
}
