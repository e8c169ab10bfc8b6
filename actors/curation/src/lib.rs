//! memvault-curation: pure maintenance algorithms the collection actor and the service run: duplicate
//! clustering ([`dedup`]) and the summary written without an LLM ([`extractive`]).
//! Counting a collection's health lives with its snapshot (core's `collection/health.rs`).

pub mod dedup;
pub mod extractive;

use std::sync::Arc;

use chrono::{DateTime, Utc};

/// What `GET .../summary` answers.
#[derive(Debug, Clone)]
pub struct CollectionSummary {
    pub summary: String,
    pub themes: Vec<String>,
    /// How many memories it was written from.
    pub based_on: usize,
    pub generated_at: DateTime<Utc>,
    /// `llm` or `extractive`.
    pub generated_by: &'static str,
    /// Why the LLM was not used, when one is configured but was skipped or failed.
    pub skipped: Option<String>,
}

/// A summary kept for one collection version and limit; any write bumps the version.
#[derive(Debug, Clone)]
pub struct CachedSummary {
    pub version: u64,
    pub limit: usize,
    /// The next moment a memory's truth changes by itself (an expiry, the end of a
    /// set-aside): the summary is stale from then on.
    pub until: Option<chrono::DateTime<chrono::Utc>>,
    pub summary: Arc<CollectionSummary>,
}
