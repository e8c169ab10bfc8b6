//! Reciprocal rank fusion: `score(d) = Σ weight_list / (K + rank_list(d))`, over the lists
//! that hold `d`. Symmetric: a document at the top of one list scores the same whichever
//! list it is, so a strong keyword-only match is not drowned by vector candidates.

use std::collections::HashMap;

/// The RRF constant (Cormack et al. use 60; tuned on BEIR MS MARCO, see the README).
pub const RRF_K: f32 = 60.0;

/// Fuses ranked key lists. Returns keys with their fused score, normalised so that a key
/// ranked first in every list scores 1.0, best first; ties keep the earlier list's order.
pub fn reciprocal_rank_fusion(lists: &[(&[u64], f32)], k: f32) -> Vec<(u64, f32)> {
    let mut scores: HashMap<u64, (f32, usize)> = HashMap::new();
    let mut order = 0;
    for (list, weight) in lists {
        for (rank, key) in list.iter().enumerate() {
            let entry = scores.entry(*key).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            entry.0 += weight / (k + rank as f32 + 1.0);
        }
    }
    let best: f32 = lists.iter().map(|(_, weight)| weight / (k + 1.0)).sum();
    let mut fused: Vec<(u64, f32, usize)> = scores
        .into_iter()
        .map(|(key, (score, first_seen))| (key, score / best.max(f32::MIN_POSITIVE), first_seen))
        .collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    fused
        .into_iter()
        .map(|(key, score, _)| (key, score))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_wins_and_single_list_tops_are_symmetric() {
        let vector = [1, 2, 3];
        let text = [4, 2];
        let fused = reciprocal_rank_fusion(&[(&vector, 1.0), (&text, 1.0)], 60.0);
        assert_eq!(fused[0].0, 2, "in both lists");
        let score = |key| fused.iter().find(|(k, _)| *k == key).unwrap().1;
        assert_eq!(score(1), score(4), "rank 1 of either list scores the same");
        assert!(fused.iter().all(|(_, s)| *s > 0.0 && *s <= 1.0));
    }

    #[test]
    fn first_everywhere_scores_one() {
        let fused = reciprocal_rank_fusion(&[(&[7], 1.0), (&[7], 0.5)], 60.0);
        assert_eq!(fused, vec![(7, 1.0)]);
        assert!(reciprocal_rank_fusion(&[(&[], 1.0)], 60.0).is_empty());
    }
}
