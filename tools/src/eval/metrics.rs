//! Ranking metrics over judged ids: nDCG@k (graded gains, log2 discount, as pytrec_eval)
//! and Recall@k.

use std::collections::HashMap;

/// nDCG@k with linear graded gains and a log2(rank + 1) discount.
pub fn ndcg_at(ranked: &[String], judged: &HashMap<String, u32>, k: usize) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(index, id)| {
            f64::from(judged.get(id).copied().unwrap_or(0)) / (index as f64 + 2.0).log2()
        })
        .sum();
    let mut ideal: Vec<u32> = judged.values().copied().filter(|gain| *gain > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(index, gain)| f64::from(*gain) / (index as f64 + 2.0).log2())
        .sum();
    if idcg == 0.0 {
        0.0
    } else {
        dcg / idcg
    }
}

/// The share of relevant ids (gain > 0) found in the top k.
pub fn recall_at(ranked: &[String], judged: &HashMap<String, u32>, k: usize) -> f64 {
    let relevant = judged.values().filter(|gain| **gain > 0).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = ranked
        .iter()
        .take(k)
        .filter(|id| judged.get(*id).is_some_and(|gain| *gain > 0))
        .count();
    found as f64 / relevant as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(pairs: &[(&str, u32)]) -> HashMap<String, u32> {
        pairs
            .iter()
            .map(|(id, gain)| ((*id).to_owned(), *gain))
            .collect()
    }

    fn ranked(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|id| (*id).to_owned()).collect()
    }

    #[test]
    fn perfect_and_empty_rankings() {
        let qrels = judged(&[("a", 3), ("b", 1), ("c", 0)]);
        assert!((ndcg_at(&ranked(&["a", "b"]), &qrels, 10) - 1.0).abs() < 1e-12);
        assert_eq!(ndcg_at(&ranked(&[]), &qrels, 10), 0.0);
        assert_eq!(recall_at(&ranked(&["c", "x"]), &qrels, 10), 0.0);
        assert_eq!(recall_at(&ranked(&["b", "x", "a"]), &qrels, 10), 1.0);
    }

    #[test]
    fn ndcg_matches_a_hand_computation() {
        // Ranked b (1) then a (3): DCG = 1/log2(2) + 3/log2(3); IDCG = 3 + 1/log2(3).
        let qrels = judged(&[("a", 3), ("b", 1)]);
        let expected = (1.0 + 3.0 / 3f64.log2()) / (3.0 + 1.0 / 3f64.log2());
        assert!((ndcg_at(&ranked(&["b", "a"]), &qrels, 10) - expected).abs() < 1e-12);
        assert_eq!(recall_at(&ranked(&["b"]), &qrels, 1), 0.5);
    }
}
