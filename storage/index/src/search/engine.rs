//! Candidate generation and ranking inside one collection.
//!
//! Filters act while candidates are generated, never after a fixed-size fetch:
//! - vectors: narrow filters (at most [`EXACT_LIMIT`] eligible memories) are scored
//!   exactly; otherwise usearch's filtered HNSW search skips
//!   ineligible keys while it walks the graph, and if it still comes back short the
//!   eligible memories are scored exactly;
//! - text: Tantivy's `FilterCollector` checks every matching document, so it is exact.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_storage::MemoryRecord;

use super::fusion::{convex_fusion, Candidate, Candidates};
use super::{SearchMode, SearchQuery};
use crate::{CollectionIndexes, IndexError, KeyFilter};

/// What the engine reads of a collection: its current memories by index key. The
/// collection's published snapshot implements it; the engine never sees the actor.
pub trait MemoryLookup: Send + Sync + 'static {
    /// The current memory behind an index key; a stale key resolves to nothing.
    fn by_key(&self, key: u64) -> Option<&Arc<MemoryRecord>>;
    /// Every current memory with its index key, in no particular order.
    fn keyed(&self) -> impl Iterator<Item = (u64, &Arc<MemoryRecord>)>;
    /// Whether the collection holds no memory at all.
    fn is_empty(&self) -> bool;
}

/// At most this many eligible memories are scored exactly instead of through HNSW.
pub const EXACT_LIMIT: usize = 2_048;

pub type Scored = (Arc<MemoryRecord>, f32);

/// Searches one collection. `vector` is the query embedding (required by vector and
/// hybrid modes; a text search passes `None`).
pub fn search_collection<S: MemoryLookup>(
    snapshot: &Arc<S>,
    indexes: &CollectionIndexes,
    query: &SearchQuery,
    vector: Option<&[f32]>,
    now: DateTime<Utc>,
) -> Result<Vec<Scored>, IndexError> {
    let filter = Arc::new(query.filter.clone());
    let accept = {
        let filter = filter.clone();
        move |memory: &MemoryRecord| filter.accepts(memory, now)
    };
    let resolve = |key: u64| snapshot.by_key(key).cloned();
    match query.mode {
        SearchMode::Vector => {
            let Some(vector) = vector else {
                return Ok(Vec::new());
            };
            let hits = vector_candidates(
                snapshot.as_ref(),
                indexes,
                vector,
                query.limit,
                query.filter.narrows(),
                &accept,
            )?;
            Ok(hits
                .into_iter()
                .filter(|(_, similarity)| *similarity >= query.min_score)
                .filter_map(|(key, similarity)| resolve(key).map(|memory| (memory, similarity)))
                .collect())
        }
        SearchMode::Text => {
            let hits = text_candidates(snapshot, indexes, &query.text, query.limit, accept)?;
            // BM25 is unbounded; report it relative to the best match (1.0).
            let best = hits
                .first()
                .map_or(1.0, |(_, score)| score.max(f32::MIN_POSITIVE));
            Ok(hits
                .into_iter()
                .filter_map(|(key, score)| resolve(key).map(|memory| (memory, score / best)))
                .collect())
        }
        SearchMode::Hybrid => {
            let fusion = query.fusion;
            let window = query.limit.max(fusion.window);
            let text_depth = window.max(fusion.text_depth);
            let narrow = query.filter.narrows();
            // The two lists are independent: one on a helper thread, one here.
            let (vector_hits, text_hits) = std::thread::scope(|scope| {
                let text_side = scope.spawn(|| {
                    text_candidates(snapshot, indexes, &query.text, text_depth, accept.clone())
                });
                let vector_hits: Result<Vec<(u64, f32)>, IndexError> = match vector {
                    Some(vector) => vector_candidates(
                        snapshot.as_ref(),
                        indexes,
                        vector,
                        window,
                        narrow,
                        &accept,
                    )
                    .map(|hits| {
                        hits.into_iter()
                            .filter(|(_, similarity)| *similarity >= query.min_score)
                            .collect()
                    }),
                    None => Ok(Vec::new()),
                };
                let text_hits = text_side
                    .join()
                    .unwrap_or_else(|_| Err(IndexError::Text("text search panicked".to_owned())));
                (vector_hits, text_hits)
            });
            let candidates = hybrid_candidates(indexes, vector, vector_hits?, text_hits?, window);
            Ok(convex_fusion(&candidates, fusion.vector_weight)
                .into_iter()
                .filter_map(|(key, score)| resolve(key).map(|memory| (memory, score)))
                .take(query.limit)
                .collect())
        }
    }
}

/// Both lists as one set of candidates, each with both scores: the vector hits, and the
/// first `window` BM25 matches; the deeper BM25 matches only give their score to vector
/// candidates. A BM25 candidate that is not a vector candidate (below `min_score`, or
/// outside the vector window: SPEC rule 2) is scored against the query vector exactly, so
/// its cosine counts as much as anyone's.
fn hybrid_candidates(
    indexes: &CollectionIndexes,
    vector: Option<&[f32]>,
    vector_hits: Vec<(u64, f32)>,
    text_hits: Vec<(u64, f32)>,
    window: usize,
) -> Vec<Candidate> {
    let mut candidates = Candidates::with_capacity(vector_hits.len() + window);
    for (key, similarity) in vector_hits {
        candidates.add_similarity(key, similarity);
    }
    let text_only: Vec<u64> = text_hits
        .iter()
        .take(window)
        .map(|(key, _)| *key)
        .filter(|key| !candidates.contains(*key))
        .collect();
    for (rank, (key, bm25)) in text_hits.into_iter().enumerate() {
        if rank < window || candidates.contains(key) {
            candidates.add_bm25(key, bm25);
        }
    }
    if let Some(vector) = vector {
        for (key, similarity) in indexes.vector.score(vector, &text_only) {
            candidates.add_similarity(key, similarity);
        }
    }
    candidates.into_vec()
}

/// The `count` most similar eligible keys with their cosine similarity, best first.
pub fn vector_candidates<S: MemoryLookup>(
    snapshot: &S,
    indexes: &CollectionIndexes,
    query: &[f32],
    count: usize,
    narrow: bool,
    accept: &(impl Fn(&MemoryRecord) -> bool + Sync),
) -> Result<Vec<(u64, f32)>, IndexError> {
    if count == 0 || snapshot.is_empty() {
        return Ok(Vec::new());
    }
    let eligible_keys = || -> Vec<u64> {
        snapshot
            .keyed()
            .filter(|(_, memory)| accept(memory))
            .map(|(key, _)| key)
            .collect()
    };
    let mut eligible = None;
    if narrow {
        let keys = eligible_keys();
        if keys.len() <= EXACT_LIMIT {
            return Ok(exact(indexes, query, &keys, count));
        }
        eligible = Some(keys);
    }
    let hits = indexes.vector.search(query, count, |key| {
        snapshot.by_key(key).is_some_and(|memory| accept(memory))
    })?;
    if hits.len() >= count {
        return Ok(hits
            .into_iter()
            .map(|hit| (hit.key, hit.similarity))
            .collect());
    }
    // Short: the graph walk missed eligible memories; score them all exactly.
    let keys = eligible.unwrap_or_else(eligible_keys);
    if keys.len() <= hits.len() {
        return Ok(hits
            .into_iter()
            .map(|hit| (hit.key, hit.similarity))
            .collect());
    }
    Ok(exact(indexes, query, &keys, count))
}

fn exact(
    indexes: &CollectionIndexes,
    query: &[f32],
    keys: &[u64],
    count: usize,
) -> Vec<(u64, f32)> {
    let mut scored = indexes.vector.score(query, keys);
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(count);
    scored
}

/// The `count` best BM25 matches among eligible memories, best first.
fn text_candidates<S: MemoryLookup>(
    snapshot: &Arc<S>,
    indexes: &CollectionIndexes,
    text: &str,
    count: usize,
    accept: impl Fn(&MemoryRecord) -> bool + Send + Sync + 'static,
) -> Result<Vec<(u64, f32)>, IndexError> {
    let snapshot = snapshot.clone();
    let filter: KeyFilter =
        Arc::new(move |key| snapshot.by_key(key).is_some_and(|memory| accept(memory)));
    Ok(indexes
        .text
        .search(text, count, filter)?
        .into_iter()
        .map(|hit| (hit.key, hit.score))
        .collect())
}
