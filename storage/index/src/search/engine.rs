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
use crate::{CollectionIndexes, IndexError, KeyFilter, ScoreFloor, TextHit, TextIndex};

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
            let hits = text_candidates(snapshot, indexes, &query.text, query.limit, accept, None)?;
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
            let narrow = query.filter.narrows();
            // The two lists are independent: one on a helper thread, one here. This
            // thread, done first (HNSW is the quicker), also scores its vector hits' BM25
            // while the text list is still being read: the text side is the slower, so the
            // scoring costs the answer nothing. It reads a few more vector hits than the
            // window and gives the text search the BM25 that enough of them reach as its
            // floor: when the answer is in many memories, their scores are the text list's
            // own, and the text search stops reading what cannot reach them.
            let floor = ScoreFloor::default();
            let (vector_side, text_hits) = std::thread::scope(|scope| {
                let text_side = scope.spawn(|| {
                    text_candidates(
                        snapshot,
                        indexes,
                        &query.text,
                        window,
                        accept.clone(),
                        Some(&floor),
                    )
                });
                let vector_side = match vector {
                    Some(vector) => vector_candidates_beyond(
                        snapshot.as_ref(),
                        indexes,
                        vector,
                        window,
                        TextIndex::floor_keys(window),
                        narrow,
                        &accept,
                    )
                    .and_then(|hits| {
                        let keys: Vec<u64> = hits.iter().map(|(key, _)| *key).collect();
                        if let Some(score) = indexes.text.floor(&query.text, window, &keys)? {
                            floor.raise(score);
                        }
                        let hits: Vec<(u64, f32)> = hits
                            .into_iter()
                            .take(window)
                            .filter(|(_, similarity)| *similarity >= query.min_score)
                            .collect();
                        let keys: Vec<u64> = hits.iter().map(|(key, _)| *key).collect();
                        let bm25 = indexes.text.score(&query.text, &keys)?;
                        Ok((hits, bm25))
                    }),
                    None => Ok((Vec::new(), Vec::new())),
                };
                let text_hits = text_side
                    .join()
                    .unwrap_or_else(|_| Err(IndexError::Text("text search panicked".to_owned())));
                (vector_side, text_hits)
            });
            let (vector_hits, vector_bm25) = vector_side?;
            let candidates =
                hybrid_candidates(indexes, vector, vector_hits, &vector_bm25, text_hits?);
            Ok(convex_fusion(&candidates, fusion.vector_weight)
                .into_iter()
                .filter_map(|(key, score)| resolve(key).map(|memory| (memory, score)))
                .take(query.limit)
                .collect())
        }
    }
}

/// Both lists as one set of candidates, each with both scores exactly: the vector hits,
/// given their BM25 by scoring just them (`vector_bm25`: a vector hit ranked deep in BM25
/// gets its real, small score, and the text list is read only as deep as the window); and
/// the BM25 hits, given their cosine against the query vector exactly (a BM25 hit below
/// `min_score` or outside the vector window: SPEC rule 2), so it counts as much as anyone's.
/// A key in both lists keeps the text list's BM25.
fn hybrid_candidates(
    indexes: &CollectionIndexes,
    vector: Option<&[f32]>,
    vector_hits: Vec<(u64, f32)>,
    vector_bm25: &[TextHit],
    text_hits: Vec<(u64, f32)>,
) -> Vec<Candidate> {
    let mut candidates = Candidates::with_capacity(vector_hits.len() + text_hits.len());
    for (key, similarity) in &vector_hits {
        candidates.add_similarity(*key, *similarity);
    }
    let mut text_only = Vec::new();
    for (key, bm25) in &text_hits {
        if !candidates.contains(*key) {
            text_only.push(*key);
        }
        candidates.add_bm25(*key, *bm25);
    }
    for hit in vector_bm25 {
        if !text_hits.iter().any(|(key, _)| *key == hit.key) {
            candidates.add_bm25(hit.key, hit.score);
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
    vector_candidates_beyond(snapshot, indexes, query, count, count, narrow, accept)
}

/// [`vector_candidates`], and up to `more` of them when the graph walk finds that many.
/// Only a walk short of `count` falls back to scoring every eligible memory exactly
/// (about 2 s at a million): the ones beyond `count` are a bonus, never worth that.
fn vector_candidates_beyond<S: MemoryLookup>(
    snapshot: &S,
    indexes: &CollectionIndexes,
    query: &[f32],
    count: usize,
    more: usize,
    narrow: bool,
    accept: &(impl Fn(&MemoryRecord) -> bool + Sync),
) -> Result<Vec<(u64, f32)>, IndexError> {
    if count == 0 || snapshot.is_empty() {
        return Ok(Vec::new());
    }
    let more = more.max(count);
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
            return Ok(exact(indexes, query, &keys, more));
        }
        eligible = Some(keys);
    }
    let hits = indexes.vector.search(query, more, |key| {
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
    Ok(exact(indexes, query, &keys, more))
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
    floor: Option<&ScoreFloor>,
) -> Result<Vec<(u64, f32)>, IndexError> {
    let snapshot = snapshot.clone();
    let filter: KeyFilter =
        Arc::new(move |key| snapshot.by_key(key).is_some_and(|memory| accept(memory)));
    Ok(indexes
        .text
        .search_above(text, count, filter, floor)?
        .into_iter()
        .map(|hit| (hit.key, hit.score))
        .collect())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use memvault_storage::{CollectionName, CreatedBy, EmbeddingModel, TenantId};

    use super::*;
    use crate::search::{FusionParams, SearchFilter};
    use crate::{dot, IndexInput, IndexSettings};

    struct Memories(HashMap<u64, Arc<MemoryRecord>>);

    impl MemoryLookup for Memories {
        fn by_key(&self, key: u64) -> Option<&Arc<MemoryRecord>> {
            self.0.get(&key)
        }
        fn keyed(&self) -> impl Iterator<Item = (u64, &Arc<MemoryRecord>)> {
            self.0.iter().map(|(key, memory)| (*key, memory))
        }
        fn is_empty(&self) -> bool {
            self.0.is_empty()
        }
    }

    fn unit(dimensions: usize, axis: usize) -> Vec<f32> {
        let mut vector = vec![0.0; dimensions];
        vector[axis] = 1.0;
        vector
    }

    /// The indexes and the memories of `texts` (key, text, unit vector) in one collection.
    fn collection(texts: &[(u64, String, Vec<f32>)]) -> (CollectionIndexes, Memories) {
        let model = EmbeddingModel::new("test", 8);
        let inputs: Vec<IndexInput<'_>> = texts
            .iter()
            .map(|(key, text, vector)| IndexInput {
                key: *key,
                text,
                embedding: Some(vector),
            })
            .collect();
        let settings = IndexSettings {
            root: None,
            model: model.clone(),
            shelf: None,
        };
        let indexes = settings
            .open(
                &TenantId::from_stored("tenant-1"),
                &CollectionName::parse("notes").unwrap(),
                &model,
                &inputs,
            )
            .unwrap();
        let now = Utc::now();
        let memories = Memories(
            texts
                .iter()
                .map(|(key, text, _)| {
                    let created_by = CreatedBy {
                        id: "key".to_owned(),
                        label: "test".to_owned(),
                    };
                    let record = MemoryRecord::new(
                        text.clone(),
                        0.5,
                        "fact".to_owned(),
                        "test".to_owned(),
                        created_by,
                        now,
                    );
                    (*key, Arc::new(record))
                })
                .collect(),
        );
        (indexes, memories)
    }

    /// Asked for more than it must find, the walk's extra hits come back, best first, and
    /// a collection smaller than `more` is answered whole.
    #[test]
    fn vector_candidates_beyond_the_count_come_from_the_walk() {
        let texts: Vec<(u64, String, Vec<f32>)> = (1..=30u64)
            .map(|key| {
                let mut vector = unit(8, key as usize % 8);
                vector[(key as usize + 1) % 8] = 0.01 * key as f32;
                let norm = dot(&vector, &vector).sqrt();
                vector.iter_mut().for_each(|value| *value /= norm);
                (key, "a note".to_owned(), vector)
            })
            .collect();
        let (indexes, memories) = collection(&texts);
        let query = unit(8, 3);
        let accept = |_: &MemoryRecord| true;
        let hits =
            vector_candidates_beyond(&memories, &indexes, &query, 5, 12, false, &accept).unwrap();
        assert_eq!(hits.len(), 12);
        assert!(hits.windows(2).all(|pair| pair[0].1 >= pair[1].1));
        let first = vector_candidates(&memories, &indexes, &query, 5, false, &accept).unwrap();
        assert_eq!(first[..], hits[..5]);
        let all =
            vector_candidates_beyond(&memories, &indexes, &query, 5, 50, false, &accept).unwrap();
        assert_eq!(all.len(), 30);
    }

    /// The best vector match mentions the query's word once in a long text, so 60 other
    /// memories rank above it in BM25, deeper than the text list hybrid reads: it still
    /// gets its own BM25 score, not 0.
    #[test]
    fn a_vector_candidate_deep_in_bm25_gets_its_real_bm25() {
        let mut texts = vec![(
            1u64,
            "a long note about many things, gardens and ships and rivers, and a harbour once"
                .to_owned(),
            unit(8, 0),
        )];
        // Distinct vectors, each far from the query's: 60 copies of one vector made the
        // HNSW graph miss the one that differs about once in 30 builds.
        for key in 2..=61u64 {
            let mut vector = unit(8, 1 + (key as usize % 7));
            vector[0] = 0.002 * key as f32;
            let norm = dot(&vector, &vector).sqrt();
            vector.iter_mut().for_each(|value| *value /= norm);
            texts.push((key, format!("harbour harbour {key}"), vector));
        }
        let (indexes, memories) = collection(&texts);
        let now = Utc::now();
        let fusion = FusionParams::default();
        let query = SearchQuery {
            text: "the harbour".to_owned(),
            limit: 5,
            min_score: 0.0,
            mode: SearchMode::Hybrid,
            filter: SearchFilter::default(),
            rewrite: false,
            rerank: false,
            fusion,
        };
        let bm25 = indexes.text.score("harbour", &[1, 2]).unwrap();
        let (own, best) = (bm25[0].score, bm25[1].score);
        assert!(own > 0.0 && own < best);
        let results = search_collection(
            &Arc::new(memories),
            &indexes,
            &query,
            Some(&unit(8, 0)),
            now,
        )
        .unwrap();
        let (first, score) = &results[0];
        assert!(first.text.starts_with("a long note"));
        let alpha = fusion.vector_weight;
        let expected = alpha + (1.0 - alpha) * own / best;
        assert!(
            (score - expected).abs() < 1e-5,
            "{score} against {expected}"
        );
    }
}
