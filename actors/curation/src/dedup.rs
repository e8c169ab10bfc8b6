//! Duplicate clusters by embedding similarity.
//!
//! Candidates are visited in keeper order (pinned first, then highest importance, then
//! newest); each one not yet taken becomes a keeper and takes every untaken, unpinned
//! candidate at least `threshold` similar to it. So every duplicate is close to its own
//! keeper (no chaining through a third memory), a pinned memory is never a duplicate, and a
//! keeper is never another cluster's duplicate.

use std::cmp::Ordering;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_storage::MemoryRecord;

/// A memory offered to dedup.
#[derive(Debug, Clone)]
pub struct DedupCandidate<'a> {
    pub id: &'a str,
    pub embedding: &'a [f32],
    pub pinned: bool,
    pub importance: f64,
    pub created_at: DateTime<Utc>,
}

/// Indexes into the candidates: a keeper and its duplicates with their similarity to it,
/// most similar first.
#[derive(Debug, Clone, PartialEq)]
pub struct DuplicateCluster {
    pub keeper: usize,
    pub duplicates: Vec<(usize, f32)>,
}

/// What a dedup run found and did.
#[derive(Debug, Clone, Default)]
pub struct DedupReport {
    /// How many memories were compared (at most the window).
    pub scanned: usize,
    pub clusters: Vec<ReportCluster>,
    /// Ids deleted; empty on a dry run.
    pub deleted: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct ReportCluster {
    pub keeper: Arc<MemoryRecord>,
    /// Each duplicate with its cosine similarity to the keeper.
    pub duplicates: Vec<(Arc<MemoryRecord>, f32)>,
}

/// Keeper order: pinned, then importance, then newest; the id makes it total.
fn keeper_order(a: &DedupCandidate<'_>, b: &DedupCandidate<'_>) -> Ordering {
    b.pinned
        .cmp(&a.pinned)
        .then(b.importance.total_cmp(&a.importance))
        .then(b.created_at.cmp(&a.created_at))
        .then(b.id.cmp(a.id))
}

fn norm(vector: &[f32]) -> f32 {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm.is_finite() {
        norm
    } else {
        0.0
    }
}

/// Cosine similarity; `None` for empty, zero, non-finite or mismatched vectors, which are
/// never anyone's duplicate.
fn cosine(a: &[f32], norm_a: f32, b: &[f32], norm_b: f32) -> Option<f32> {
    if a.len() != b.len() || norm_a == 0.0 || norm_b == 0.0 {
        return None;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let similarity = dot / (norm_a * norm_b);
    similarity.is_finite().then(|| similarity.clamp(-1.0, 1.0))
}

/// The duplicate clusters among `candidates`, in keeper order. O(n²·d).
pub fn find_duplicates(candidates: &[DedupCandidate<'_>], threshold: f32) -> Vec<DuplicateCluster> {
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| keeper_order(&candidates[a], &candidates[b]));
    let norms: Vec<f32> = candidates.iter().map(|c| norm(c.embedding)).collect();
    let mut taken = vec![false; candidates.len()];
    let mut clusters = Vec::new();
    for (position, &keeper) in order.iter().enumerate() {
        if taken[keeper] {
            continue;
        }
        taken[keeper] = true;
        let mut duplicates = Vec::new();
        for &other in &order[position + 1..] {
            if taken[other] || candidates[other].pinned {
                continue;
            }
            let similarity = cosine(
                candidates[keeper].embedding,
                norms[keeper],
                candidates[other].embedding,
                norms[other],
            );
            if let Some(similarity) = similarity.filter(|similarity| *similarity >= threshold) {
                taken[other] = true;
                duplicates.push((other, similarity));
            }
        }
        if !duplicates.is_empty() {
            duplicates.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            clusters.push(DuplicateCluster { keeper, duplicates });
        }
    }
    clusters
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone};
    use proptest::prelude::*;

    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::seconds(seconds)
    }

    #[derive(Debug)]
    struct Owned {
        id: String,
        embedding: Vec<f32>,
        pinned: bool,
        importance: f64,
        created_at: DateTime<Utc>,
    }

    fn owned(id: &str, embedding: &[f32], pinned: bool, importance: f64, second: i64) -> Owned {
        Owned {
            id: id.to_owned(),
            embedding: embedding.to_vec(),
            pinned,
            importance,
            created_at: at(second),
        }
    }

    fn view(items: &[Owned]) -> Vec<DedupCandidate<'_>> {
        items
            .iter()
            .map(|item| DedupCandidate {
                id: &item.id,
                embedding: &item.embedding,
                pinned: item.pinned,
                importance: item.importance,
                created_at: item.created_at,
            })
            .collect()
    }

    fn clusters_by_id(items: &[Owned], threshold: f32) -> Vec<(String, Vec<String>)> {
        find_duplicates(&view(items), threshold)
            .into_iter()
            .map(|cluster| {
                let mut duplicates: Vec<String> = cluster
                    .duplicates
                    .iter()
                    .map(|(index, _)| items[*index].id.clone())
                    .collect();
                duplicates.sort();
                (items[cluster.keeper].id.clone(), duplicates)
            })
            .collect()
    }

    const A: [f32; 3] = [1.0, 0.0, 0.0];
    const B: [f32; 3] = [0.0, 1.0, 0.0];

    #[test]
    fn the_keeper_is_pinned_then_most_important_then_newest() {
        let items = [
            owned("old", &A, false, 0.5, 0),
            owned("new", &A, false, 0.5, 10),
            owned("other", &B, false, 0.5, 5),
        ];
        assert_eq!(
            clusters_by_id(&items, 0.95),
            [("new".into(), vec!["old".into()])]
        );
        let items = [
            owned("old", &A, false, 0.9, 0),
            owned("new", &A, false, 0.5, 10),
        ];
        assert_eq!(
            clusters_by_id(&items, 0.95),
            [("old".into(), vec!["new".into()])]
        );
        let items = [
            owned("pinned", &A, true, 0.1, 0),
            owned("important", &A, false, 0.9, 10),
        ];
        assert_eq!(
            clusters_by_id(&items, 0.95),
            [("pinned".into(), vec!["important".into()])]
        );
    }

    #[test]
    fn two_pinned_duplicates_are_both_kept() {
        let items = [owned("p1", &A, true, 0.5, 0), owned("p2", &A, true, 0.5, 1)];
        assert!(clusters_by_id(&items, 0.95).is_empty());
    }

    #[test]
    fn duplicates_do_not_chain_through_a_middle_memory() {
        let left = [1.0, 0.0];
        let middle = [0.96f32.sqrt(), 0.2];
        let right = [0.84f32.sqrt(), 0.4];
        // left~middle 0.98, middle~right ~0.99, left~right ~0.92.
        let items = [
            owned("middle", &middle, false, 0.9, 0),
            owned("left", &left, false, 0.5, 0),
            owned("right", &right, false, 0.1, 0),
        ];
        let clusters = clusters_by_id(&items, 0.95);
        assert_eq!(
            clusters,
            [("middle".into(), vec!["left".into(), "right".into()])]
        );
        let items = [
            owned("left", &left, false, 0.9, 0),
            owned("middle", &middle, false, 0.5, 0),
            owned("right", &right, false, 0.1, 0),
        ];
        assert_eq!(
            clusters_by_id(&items, 0.95),
            [("left".into(), vec!["middle".into()])]
        );
    }

    #[test]
    fn degenerate_vectors_are_never_duplicates() {
        let items = [
            owned("empty", &[], false, 0.5, 0),
            owned("empty2", &[], false, 0.5, 1),
            owned("zero", &[0.0, 0.0, 0.0], false, 0.5, 2),
            owned("nan", &[f32::NAN, 0.0, 0.0], false, 0.5, 3),
            owned("short", &[1.0, 0.0], false, 0.5, 4),
            owned("a", &A, false, 0.5, 5),
        ];
        assert!(clusters_by_id(&items, 0.0).is_empty());
    }

    fn arbitrary_items() -> impl Strategy<Value = Vec<Owned>> {
        prop::collection::vec((0..4usize, any::<bool>(), 0..3u8, 0..5i64), 0..40).prop_map(|rows| {
            let bases: [[f32; 3]; 4] = [A, B, [0.0, 0.0, 1.0], [0.7, 0.7, 0.0]];
            rows.into_iter()
                .enumerate()
                .map(|(index, (base, pinned, importance, second))| {
                    owned(
                        &format!("m{index:02}"),
                        &bases[base],
                        pinned,
                        f64::from(importance) / 2.0,
                        second,
                    )
                })
                .collect()
        })
    }

    proptest! {
        /// No pinned memory and no keeper is ever a duplicate; every memory is in at most
        /// one cluster; every duplicate is within the threshold of its keeper and never
        /// ranks above it.
        #[test]
        fn dedup_never_marks_a_pinned_memory_or_a_keeper(items in arbitrary_items(), threshold in 0.5f32..1.0) {
            let candidates = view(&items);
            let clusters = find_duplicates(&candidates, threshold);
            let keepers: Vec<usize> = clusters.iter().map(|c| c.keeper).collect();
            let mut seen = std::collections::HashSet::new();
            for cluster in &clusters {
                prop_assert!(seen.insert(cluster.keeper));
                for &(duplicate, similarity) in &cluster.duplicates {
                    prop_assert!(!candidates[duplicate].pinned);
                    prop_assert!(!keepers.contains(&duplicate));
                    prop_assert!(seen.insert(duplicate));
                    prop_assert!(similarity >= threshold);
                    prop_assert_ne!(keeper_order(&candidates[cluster.keeper], &candidates[duplicate]), Ordering::Greater);
                }
            }
        }
    }
}
