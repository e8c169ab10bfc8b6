//! Rebuilding a persistent B-tree with every leaf full.
//!
//! `imbl`'s B-trees split a full node at its median, so a tree grown by inserts holds its
//! leaves half full when the keys arrive in order (a collection's records are read in id
//! order, and most of its maps follow time) and about two thirds full when they arrive at
//! random. A leaf costs the same whatever it holds: room for 64 entries and 65 child
//! pointers (528 bytes even in a leaf). At a million memories the snapshot's ordered maps
//! held about 350 bytes per memory, half of it empty room.
//!
//! A collection's opening gathers those maps' entries first and makes each tree here at
//! the end ([`super::SnapshotBuilder`]).
//!
//! `imbl` has no bulk load, but its splits are deterministic, so the order of the inserts
//! decides how full the leaves end. Fed in ascending order, a tree splits its last leaf
//! when it would hold 65 entries: 32 stay on the left, the 33rd goes up as the separator,
//! 32 start the next leaf. [`packed_order`] first inserts, of every run of 65 entries in
//! ascending order, the even positions of the first 64 and the 65th (which becomes the
//! separator), so each leaf ends with 32 entries between two separators; then it inserts
//! the other 32 of each run, each of which falls between two entries of its own leaf,
//! which fills every leaf to 64 without another split.

use imbl::{OrdMap, OrdSet};

/// Entries a B-tree node holds (`imbl`'s `ORD_CHUNK_SIZE`).
const NODE_SIZE: usize = 64;
/// A full leaf and the separator after it.
const RUN: usize = NODE_SIZE + 1;

/// Calls `insert` with every item of `sorted` (ascending, no duplicates), in the order
/// that leaves an `imbl` B-tree built by those inserts, from empty, with full leaves.
fn packed_order<A>(sorted: impl Iterator<Item = A>, mut insert: impl FnMut(A)) {
    let mut second = Vec::new();
    for (position, item) in sorted.enumerate() {
        let offset = position % RUN;
        if offset == NODE_SIZE || offset.is_multiple_of(2) {
            insert(item);
        } else {
            second.push(item);
        }
    }
    second.into_iter().for_each(insert);
}

/// A set of `items` (in any order; duplicates are dropped) with full leaves.
pub fn packed_set<A: Ord + Clone>(mut items: Vec<A>) -> OrdSet<A> {
    items.sort();
    items.dedup();
    let mut packed = OrdSet::new();
    packed_order(items.into_iter(), |item| {
        packed.insert(item);
    });
    packed
}

/// A map of `entries` (in any order; of two with the same key, the later is kept) with
/// full leaves.
pub fn packed_map<K: Ord + Clone, V: Clone>(mut entries: Vec<(K, V)>) -> OrdMap<K, V> {
    // Stable, so of equal keys the later stays last; `dedup_by` keeps the first of a run.
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.reverse();
    entries.dedup_by(|next, kept| next.0 == kept.0);
    entries.reverse();
    let mut packed = OrdMap::new();
    packed_order(entries.into_iter(), |(key, value)| {
        packed.insert(key, value);
    });
    packed
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_order_is_every_item_once() {
        for count in [0, 1, 2, 64, 65, 66, 130, 131, 1000, 4225, 4226] {
            let mut seen = Vec::new();
            packed_order(0..count, |item| seen.push(item));
            seen.sort_unstable();
            assert_eq!(seen, (0..count).collect::<Vec<_>>(), "{count} items");
        }
    }

    #[test]
    fn the_first_pass_is_every_other_entry_and_the_separators() {
        // 200 items: three runs of 65 (33 in the first pass each: 32 even positions and
        // the separator) and 5 more (0, 2 and 4 of them).
        let mut calls = Vec::new();
        packed_order(0..200usize, |item| calls.push(item));
        let (first, second) = calls.split_at(3 * 33 + 3);
        assert!(first.is_sorted() && second.is_sorted());
        for separator in [64, 129, 194] {
            assert!(first.contains(&separator));
        }
        for leaf_start in [0, 65, 130, 195] {
            assert!(first.contains(&leaf_start) && second.contains(&(leaf_start + 1)));
        }
        assert!(first.contains(&62) && second.contains(&63));
        assert!(first.contains(&199) && second.contains(&198));
    }

    proptest! {
        #[test]
        fn a_packed_tree_is_the_same_tree(
            keys in proptest::collection::btree_set(any::<u32>(), 0..3000),
            more in proptest::collection::vec(any::<u32>(), 0..200),
        ) {
            let grown: OrdMap<u32, u64> = keys.iter().map(|k| (*k, u64::from(*k) * 3)).collect();
            // Given in reverse, with each key once more before its real value.
            let mut entries: Vec<(u32, u64)> = keys.iter().map(|k| (*k, 0)).collect();
            entries.extend(keys.iter().rev().map(|k| (*k, u64::from(*k) * 3)));
            let mut packed = packed_map(entries);
            prop_assert_eq!(&packed, &grown);
            prop_assert!(packed.iter().map(|(k, _)| *k).eq(keys.iter().copied()));
            // It stays a working tree: inserts into full leaves split them, removes merge.
            let mut model = grown.clone();
            for (n, key) in more.iter().enumerate() {
                if n % 3 == 0 {
                    let first = model.get_min().map(|(k, _)| *k);
                    if let Some(first) = first {
                        prop_assert_eq!(packed.remove(&first), model.remove(&first));
                    }
                }
                packed.insert(*key, 1);
                model.insert(*key, 1);
                let victim = key.wrapping_mul(2_654_435_761);
                prop_assert_eq!(packed.remove(&victim), model.remove(&victim));
            }
            prop_assert_eq!(&packed, &model);
            let set: OrdSet<u32> = keys.iter().copied().collect();
            let mut items: Vec<u32> = keys.iter().rev().copied().collect();
            items.extend(keys.iter().take(10));
            prop_assert_eq!(packed_set(items), set);
        }
    }
}
