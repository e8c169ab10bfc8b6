use std::collections::HashMap;

use memvault_tools::eval::metrics::*;

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
