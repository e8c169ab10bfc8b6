//! Hybrid fusion: a convex combination of normalised scores (Bruch, Gai and Ingber, "An
//! Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS 2023):
//!
//! `score(d) = α · max(cos(d), 0) / max cos + (1 − α) · bm25(d) / max bm25`
//!
//! over the candidates of both lists. Every candidate carries both scores: its exact cosine
//! (a keyword-only match is scored against the query vector too) and its BM25 (0 when it is
//! not among the text matches read). Each score is divided by the best of its kind among
//! the candidates (the theoretical minimum of both is 0; a negative cosine counts as 0), so
//! the best memory of both lists scores 1.0 and every score is in [0, 1].
//!
//! Unlike reciprocal rank fusion, the fused order keeps how far apart the scores are: a
//! weaker list moves a result only as far as its scores say, not by whole ranks, so hybrid
//! keeps up with the better single mode on each public set and beats both on average
//! (README, Search).

use std::collections::HashMap;

/// One memory found by either list, with both of its scores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub key: u64,
    /// Cosine similarity to the query (0 when the memory has no vector).
    pub similarity: f32,
    /// BM25 score (0 when the memory is not among the text matches read).
    pub bm25: f32,
}

/// Collects each key once, in the order first seen (vector list first): the tie order.
#[derive(Debug, Default)]
pub struct Candidates {
    order: Vec<Candidate>,
    position: HashMap<u64, usize>,
}

impl Candidates {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            order: Vec::with_capacity(capacity),
            position: HashMap::with_capacity(capacity),
        }
    }

    /// Adds a vector candidate, or gives a known candidate its cosine similarity.
    pub fn add_similarity(&mut self, key: u64, similarity: f32) {
        self.entry(key).similarity = similarity;
    }

    /// Adds a text match, or gives a known candidate its BM25 score.
    pub fn add_bm25(&mut self, key: u64, bm25: f32) {
        self.entry(key).bm25 = bm25;
    }

    /// Whether `key` is a candidate already.
    pub fn contains(&self, key: u64) -> bool {
        self.position.contains_key(&key)
    }

    fn entry(&mut self, key: u64) -> &mut Candidate {
        let next = self.order.len();
        let index = *self.position.entry(key).or_insert(next);
        if index == next {
            self.order.push(Candidate {
                key,
                similarity: 0.0,
                bm25: 0.0,
            });
        }
        &mut self.order[index]
    }

    pub fn into_vec(self) -> Vec<Candidate> {
        self.order
    }
}

/// Fuses candidates with `vector_weight` (α, in [0, 1]) on the normalised cosine and the
/// rest on the normalised BM25. Returns keys with their fused score in [0, 1], best first;
/// ties keep the candidates' order.
pub fn convex_fusion(candidates: &[Candidate], vector_weight: f32) -> Vec<(u64, f32)> {
    let vector_weight = vector_weight.clamp(0.0, 1.0);
    let best_similarity = candidates
        .iter()
        .map(|candidate| candidate.similarity)
        .fold(0.0f32, f32::max);
    let best_bm25 = candidates
        .iter()
        .map(|candidate| candidate.bm25)
        .fold(0.0f32, f32::max);
    let share = |value: f32, best: f32| {
        if best > 0.0 {
            (value.max(0.0) / best).min(1.0)
        } else {
            0.0
        }
    };
    let mut fused: Vec<(usize, u64, f32)> = candidates
        .iter()
        .enumerate()
        .map(|(order, candidate)| {
            let score = vector_weight * share(candidate.similarity, best_similarity)
                + (1.0 - vector_weight) * share(candidate.bm25, best_bm25);
            (order, candidate.key, score)
        })
        .collect();
    fused.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    fused
        .into_iter()
        .map(|(_, key, score)| (key, score))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(key: u64, similarity: f32, bm25: f32) -> Candidate {
        Candidate {
            key,
            similarity,
            bm25,
        }
    }

    fn score_of(fused: &[(u64, f32)], key: u64) -> f32 {
        fused.iter().find(|(k, _)| *k == key).unwrap().1
    }

    #[test]
    fn the_best_of_both_lists_scores_one_and_every_score_is_in_range() {
        let fused = convex_fusion(
            &[
                candidate(1, 0.8, 12.0),
                candidate(2, 0.5, 3.0),
                candidate(3, -0.2, 0.0),
            ],
            0.6,
        );
        assert_eq!(fused[0], (1, 1.0));
        assert!(fused.iter().all(|(_, s)| (0.0..=1.0).contains(s)));
        assert_eq!(score_of(&fused, 3), 0.0, "a negative cosine counts as 0");
        let expected = 0.6 * 0.5 / 0.8 + 0.4 * 3.0 / 12.0;
        assert!((score_of(&fused, 2) - expected).abs() < 1e-6);
    }

    #[test]
    fn a_strong_keyword_only_match_outranks_vector_candidates_without_the_keywords() {
        // Key 9 matches the query's words (best BM25) but its cosine is low: below a
        // `min_score` or outside the vector window. The vector candidates match no word.
        let fused = convex_fusion(
            &[
                candidate(1, 0.50, 0.0),
                candidate(2, 0.48, 0.0),
                candidate(3, 0.45, 0.0),
                candidate(9, 0.20, 7.5),
            ],
            0.6,
        );
        assert_eq!(fused[0].0, 9, "{fused:?}");
    }

    #[test]
    fn agreement_beats_either_list_alone() {
        let fused = convex_fusion(
            &[
                candidate(1, 0.70, 0.0),
                candidate(2, 0.65, 8.0),
                candidate(3, 0.10, 10.0),
            ],
            0.6,
        );
        assert_eq!(fused[0].0, 2);
    }

    #[test]
    fn one_list_alone_ranks_as_that_list() {
        let text_only = convex_fusion(&[candidate(4, 0.0, 2.0), candidate(5, 0.0, 6.0)], 0.6);
        assert_eq!(
            text_only.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
            [5, 4]
        );
        assert!((score_of(&text_only, 5) - 0.4).abs() < 1e-6);
        assert!((score_of(&text_only, 4) - 0.4 * 2.0 / 6.0).abs() < 1e-6);
        let vector_only = convex_fusion(&[candidate(6, 0.3, 0.0), candidate(7, 0.6, 0.0)], 0.6);
        assert_eq!(vector_only[0].0, 7);
        assert!((score_of(&vector_only, 7) - 0.6).abs() < 1e-6);
        assert!((score_of(&vector_only, 6) - 0.3).abs() < 1e-6);
        assert!(convex_fusion(&[], 0.6).is_empty());
    }

    #[test]
    fn ties_keep_the_candidate_order() {
        let fused = convex_fusion(&[candidate(8, 0.5, 1.0), candidate(3, 0.5, 1.0)], 0.6);
        assert_eq!(fused.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [8, 3]);
    }

    #[test]
    fn candidates_keep_first_seen_order_and_merge_scores() {
        let mut candidates = Candidates::with_capacity(4);
        candidates.add_similarity(10, 0.9);
        candidates.add_similarity(11, 0.8);
        candidates.add_bm25(12, 4.0);
        candidates.add_bm25(10, 2.0);
        assert!(candidates.contains(12) && !candidates.contains(13));
        assert_eq!(
            candidates.into_vec(),
            vec![
                candidate(10, 0.9, 2.0),
                candidate(11, 0.8, 0.0),
                candidate(12, 0.0, 4.0)
            ]
        );
    }
}
