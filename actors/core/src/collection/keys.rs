//! Index key → current memory, the map every search candidate is resolved through.
//!
//! The collection actor hands keys out in order (one per new memory, a new one per
//! re-embed) and a key is never reused, so the current keys are nearly dense: a
//! persistent vector indexed by `key - base` holds them in 8 bytes each, where an
//! `imbl::HashMap` held about 246 bytes per memory at a million (its nodes are fixed
//! arrays of 32 entries, mostly empty at the deepest level). Removing the lowest key
//! trims the vector's front, so a re-embed, which replaces every key with a higher one,
//! leaves no run of holes behind. A key far outside the dense range (more than
//! [`MAX_GAP`] away) is kept in a small side map, so one stray key cannot make the
//! vector large.

use std::sync::Arc;

use memvault_storage::MemoryRecord;

/// The widest run of absent keys the vector grows over to reach a new key (8 bytes each).
const MAX_GAP: u64 = 1 << 16;

#[derive(Clone, Default)]
pub struct KeyTable {
    /// The memory of key `base + i` at `i`; never starts or ends with `None`.
    dense: imbl::Vector<Option<Arc<MemoryRecord>>>,
    base: u64,
    /// Keys too far from the dense range to join it.
    sparse: imbl::OrdMap<u64, Arc<MemoryRecord>>,
    len: usize,
}

impl KeyTable {
    pub fn get(&self, key: u64) -> Option<&Arc<MemoryRecord>> {
        match self.offset(key) {
            Some(at) => self.dense.get(at).and_then(Option::as_ref),
            None => self.sparse.get(&key),
        }
    }

    /// How many keys have a memory.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets `key`'s memory, replacing any.
    pub fn insert(&mut self, key: u64, memory: Arc<MemoryRecord>) {
        if let Some(at) = self.offset(key) {
            if self.dense.set(at, Some(memory)).is_none() {
                self.len += 1;
            }
            return;
        }
        if let Some(kept) = self.sparse.get_mut(&key) {
            *kept = memory;
            return;
        }
        let end = self.base.saturating_add(self.dense.len() as u64);
        if self.dense.is_empty() {
            self.base = key;
            self.dense.push_back(Some(memory));
        } else if key >= end && key - end <= MAX_GAP {
            for _ in end..key {
                self.dense.push_back(None);
            }
            self.dense.push_back(Some(memory));
            self.absorb(end..key);
        } else if key < self.base && self.base - key <= MAX_GAP {
            let old_base = self.base;
            for _ in key + 1..old_base {
                self.dense.push_front(None);
            }
            self.dense.push_front(Some(memory));
            self.base = key;
            self.absorb(key + 1..old_base);
        } else {
            self.sparse.insert(key, memory);
        }
        self.len += 1;
    }

    /// Moves the side map's keys in `range`, which the vector now covers, into it.
    fn absorb(&mut self, range: std::ops::Range<u64>) {
        let covered: Vec<u64> = self.sparse.range(range).map(|(key, _)| *key).collect();
        for key in covered {
            if let (Some(memory), Some(at)) = (self.sparse.remove(&key), self.offset(key)) {
                self.dense.set(at, Some(memory));
            }
        }
    }

    /// Drops `key`'s memory, returning it.
    pub fn remove(&mut self, key: u64) -> Option<Arc<MemoryRecord>> {
        let Some(at) = self.offset(key) else {
            let removed = self.sparse.remove(&key);
            self.len -= usize::from(removed.is_some());
            return removed;
        };
        let removed = self.dense.set(at, None);
        if removed.is_some() {
            self.len -= 1;
        }
        while matches!(self.dense.front(), Some(None)) {
            self.dense.pop_front();
            self.base += 1;
        }
        while matches!(self.dense.back(), Some(None)) {
            self.dense.pop_back();
        }
        removed
    }

    /// Every key with its memory, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Arc<MemoryRecord>)> {
        let base = self.base;
        self.dense
            .iter()
            .enumerate()
            .filter_map(move |(at, memory)| {
                memory.as_ref().map(|memory| (base + at as u64, memory))
            })
            .chain(self.sparse.iter().map(|(key, memory)| (*key, memory)))
    }

    /// Where `key` is in the vector, when it is inside the dense range.
    fn offset(&self, key: u64) -> Option<usize> {
        let at = key.checked_sub(self.base)?;
        (at < self.dense.len() as u64).then_some(at as usize)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use memvault_storage::CreatedBy;
    use proptest::prelude::*;

    use super::*;

    fn memory(text: &str) -> Arc<MemoryRecord> {
        let created_by = CreatedBy {
            id: "key".to_owned(),
            label: "test".to_owned(),
        };
        Arc::new(MemoryRecord::new(
            text.to_owned(),
            0.5,
            "fact".to_owned(),
            "test".to_owned(),
            created_by,
            chrono::Utc::now(),
        ))
    }

    fn texts(table: &KeyTable) -> Vec<(u64, String)> {
        let mut all: Vec<(u64, String)> = table
            .iter()
            .map(|(key, memory)| (key, memory.text.clone()))
            .collect();
        all.sort();
        all
    }

    #[test]
    fn a_re_embed_moves_every_key_up_and_leaves_no_holes_behind() {
        let mut table = KeyTable::default();
        for key in 1..=1000 {
            table.insert(key, memory(&format!("m{key}")));
        }
        for key in 1..=1000 {
            let old = table.remove(key).unwrap();
            table.insert(key + 1000, old);
        }
        assert_eq!(table.len(), 1000);
        assert_eq!(table.dense.len(), 1000);
        assert_eq!(table.base, 1001);
        assert!(table.sparse.is_empty());
        assert_eq!(table.get(1500).unwrap().text, "m500");
        assert!(table.get(500).is_none());
    }

    #[test]
    fn a_stray_key_far_away_is_kept_apart() {
        let mut table = KeyTable::default();
        table.insert(10, memory("near"));
        table.insert(u64::MAX, memory("far"));
        table.insert(3, memory("below"));
        assert_eq!(table.dense.len(), 8);
        assert_eq!(table.sparse.len(), 1);
        assert_eq!(table.get(u64::MAX).unwrap().text, "far");
        assert_eq!(table.len(), 3);
        assert_eq!(
            texts(&table),
            vec![
                (3, "below".to_owned()),
                (10, "near".to_owned()),
                (u64::MAX, "far".to_owned())
            ]
        );
        assert_eq!(table.remove(u64::MAX).unwrap().text, "far");
        assert!(table.remove(u64::MAX).is_none());
        assert_eq!(table.len(), 2);
    }

    proptest! {
        /// Any sequence of inserts and removes answers as a hash map does.
        #[test]
        fn answers_as_a_hash_map_does(
            operations in proptest::collection::vec(
                (
                    any::<bool>(),
                    prop_oneof![
                        4 => 0u64..300,
                        // Inside or just past the widest gap from the keys above: the side
                        // map takes some, and the vector grows over them later.
                        2 => MAX_GAP + 250..MAX_GAP + 350,
                        1 => 2 * MAX_GAP + 500..2 * MAX_GAP + 520,
                        1 => Just(u64::MAX),
                    ],
                ),
                0..400,
            )
        ) {
            let mut table = KeyTable::default();
            let mut model: HashMap<u64, String> = HashMap::new();
            for (step, (insert, key)) in operations.into_iter().enumerate() {
                if insert {
                    let text = format!("{key}@{step}");
                    table.insert(key, memory(&text));
                    model.insert(key, text);
                } else {
                    let removed = table.remove(key).map(|memory| memory.text.clone());
                    prop_assert_eq!(removed, model.remove(&key));
                }
                prop_assert_eq!(table.len(), model.len());
                prop_assert!(!matches!(table.dense.front(), Some(None)));
                prop_assert!(!matches!(table.dense.back(), Some(None)));
            }
            let mut expected: Vec<(u64, String)> = model.into_iter().collect();
            expected.sort();
            prop_assert_eq!(texts(&table), expected.clone());
            for (key, text) in expected {
                prop_assert_eq!(&table.get(key).unwrap().text, &text);
            }
        }
    }
}
