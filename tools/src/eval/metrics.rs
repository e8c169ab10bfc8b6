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
