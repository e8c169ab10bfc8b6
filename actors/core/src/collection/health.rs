//! A collection's health, kept as counters and small time indexes that every snapshot
//! update maintains, so a health read never scans the memories.
//!
//! Every memory is in exactly one state: superseded (replaced by a newer fact), archived,
//! expired (its validity ended), suspended (set aside for now by a time-bound fact on its
//! slot) or current. `pinned` is counted across all states. A memory is stale when it is
//! current, not pinned and not updated for `stale_days`.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use memvault_storage::MemoryRecord;

use super::state::{least_id, CollectionSnapshot, SharedId};

const SECONDS_PER_DAY: i64 = 86_400;

#[derive(Clone, Default)]
pub struct HealthCounters {
    pinned: u64,
    /// Archived and not superseded.
    archived: u64,
    /// Category → count of memories not superseded.
    categories: imbl::OrdMap<String, u64>,
    /// (expires_at, id) of memories neither superseded nor archived that have an expiry.
    expiring: imbl::OrdSet<(DateTime<Utc>, SharedId)>,
    /// (updated_at, id) of memories that can go stale: not superseded, not archived, not
    /// pinned. Archive-stale picks from here.
    touched: imbl::OrdSet<(DateTime<Utc>, SharedId)>,
    /// Day number → how many `touched` entries fall on it, so counting the entries older
    /// than a cutoff walks days, not memories.
    touched_days: imbl::OrdMap<i64, u64>,
}

/// What `GET .../health` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectionHealth {
    pub total: u64,
    pub current: u64,
    pub archived: u64,
    pub pinned: u64,
    pub stale: u64,
    pub expired: u64,
    /// Set aside for now by a time-bound fact on their slot; current again when it ends.
    pub suspended: u64,
    pub supersessions: u64,
    /// Memories not superseded, by category.
    pub categories: BTreeMap<String, u64>,
}

impl CollectionHealth {
    /// Stale, expired and superseded memories: what an owner may want to look at.
    pub fn needs_attention(&self) -> u64 {
        self.stale + self.expired + self.supersessions
    }

    /// Adds another collection's figures (for tenant- and service-wide totals).
    pub fn absorb(&mut self, other: &CollectionHealth) {
        self.total += other.total;
        self.current += other.current;
        self.archived += other.archived;
        self.pinned += other.pinned;
        self.stale += other.stale;
        self.expired += other.expired;
        self.suspended += other.suspended;
        self.supersessions += other.supersessions;
        for (category, count) in &other.categories {
            *self.categories.entry(category.clone()).or_default() += count;
        }
    }
}

fn day_of(at: DateTime<Utc>) -> i64 {
    at.timestamp().div_euclid(SECONDS_PER_DAY)
}

fn can_go_stale(memory: &MemoryRecord) -> bool {
    memory.superseded_by.is_none() && !memory.archived && !memory.pinned
}

fn is_expired(expires_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    expires_at.is_some_and(|expiry| expiry <= now)
}

fn adjust(count: &mut u64, up: bool) {
    *count = if up {
        *count + 1
    } else {
        count.saturating_sub(1)
    };
}

impl HealthCounters {
    pub(super) fn add(&mut self, memory: &MemoryRecord, id: &SharedId) {
        self.apply(memory, id, true, true);
    }

    /// `add` while a collection opens: all but the `touched` entry, which
    /// [`Self::set_touched`] puts in once every record is read.
    pub(super) fn gather(&mut self, memory: &MemoryRecord, id: &SharedId) {
        self.apply(memory, id, true, false);
    }

    /// The `touched` entries of `memories`, for [`Self::set_touched`].
    pub(super) fn touched_entries(
        memories: &[(SharedId, Arc<MemoryRecord>)],
    ) -> Vec<(DateTime<Utc>, SharedId)> {
        let count = memories
            .iter()
            .filter(|(_, memory)| can_go_stale(memory))
            .count();
        let mut entries = Vec::with_capacity(count);
        entries.extend(
            memories
                .iter()
                .filter(|(_, memory)| can_go_stale(memory))
                .map(|(id, memory)| (memory.updated_at, id.clone())),
        );
        entries
    }

    /// The `touched` set of a collection that is opening, packed ([`super::packed`]).
    pub(super) fn set_touched(&mut self, touched: Vec<(DateTime<Utc>, SharedId)>) {
        self.touched = super::packed::packed_set(touched);
    }

    /// Exactly undoes `add` of the same record.
    pub(super) fn remove(&mut self, memory: &MemoryRecord, id: &SharedId) {
        self.apply(memory, id, false, true);
    }

    fn apply(&mut self, memory: &MemoryRecord, id: &SharedId, add: bool, with_touched: bool) {
        if memory.pinned {
            adjust(&mut self.pinned, add);
        }
        if memory.superseded_by.is_some() {
            return;
        }
        let category = self.categories.entry(memory.category.clone()).or_default();
        adjust(category, add);
        if *category == 0 {
            self.categories.remove(&memory.category);
        }
        if memory.archived {
            adjust(&mut self.archived, add);
            return;
        }
        if let Some(expiry) = memory.expires_at {
            let entry = (expiry, id.clone());
            if add {
                self.expiring.insert(entry);
            } else {
                self.expiring.remove(&entry);
            }
        }
        if can_go_stale(memory) {
            let entry = (memory.updated_at, id.clone());
            let day = self
                .touched_days
                .entry(day_of(memory.updated_at))
                .or_default();
            adjust(day, add);
            if *day == 0 {
                self.touched_days.remove(&day_of(memory.updated_at));
            }
            match (add, with_touched) {
                (_, false) => {}
                (true, true) => {
                    self.touched.insert(entry);
                }
                (false, true) => {
                    self.touched.remove(&entry);
                }
            }
        }
    }

    /// How many memories that can go stale were last updated before `cutoff`.
    fn touched_before(&self, cutoff: DateTime<Utc>) -> u64 {
        let day = day_of(cutoff);
        let whole_days: u64 = self.touched_days.range(..day).map(|(_, count)| count).sum();
        let day_start = DateTime::<Utc>::from_timestamp(day * SECONDS_PER_DAY, 0).unwrap_or(cutoff);
        let same_day = self
            .touched
            .range((day_start, least_id())..(cutoff, least_id()))
            .count() as u64;
        whole_days + same_day
    }
}

/// The cutoff before which an unchanged memory counts as stale; saturates instead of
/// overflowing on absurd windows.
pub fn stale_cutoff(now: DateTime<Utc>, stale_days: u32) -> DateTime<Utc> {
    now.checked_sub_signed(Duration::days(i64::from(stale_days)))
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

impl CollectionSnapshot {
    /// The collection's health at `now`, from the counters: O(days with updates +
    /// expired memories + set-asides not yet over + memories updated on the cutoff's day).
    pub fn health(&self, now: DateTime<Utc>, stale_days: u32) -> CollectionHealth {
        let counters = &self.health;
        let cutoff = stale_cutoff(now, stale_days);
        let expired_entries = counters
            .expiring
            .iter()
            .take_while(|(expiry, _)| *expiry <= now);
        let mut expired = 0u64;
        let mut expired_and_old = 0u64;
        for (_, id) in expired_entries {
            expired += 1;
            if let Some(memory) = self.memories.get(id) {
                if can_go_stale(memory) && memory.updated_at < cutoff {
                    expired_and_old += 1;
                }
            }
        }
        let mut suspended = 0u64;
        let mut suspended_and_old = 0u64;
        for memory in self.set_aside_at(now).filter(|memory| !memory.archived) {
            suspended += 1;
            if can_go_stale(memory) && memory.updated_at < cutoff {
                suspended_and_old += 1;
            }
        }
        let total = self.memories.len() as u64;
        let supersessions = self.superseded.len() as u64;
        let current = total
            .saturating_sub(supersessions)
            .saturating_sub(counters.archived)
            .saturating_sub(expired)
            .saturating_sub(suspended);
        CollectionHealth {
            total,
            current,
            archived: counters.archived,
            pinned: counters.pinned,
            stale: counters
                .touched_before(cutoff)
                .saturating_sub(expired_and_old)
                .saturating_sub(suspended_and_old),
            expired,
            suspended,
            supersessions,
            categories: counters
                .categories
                .iter()
                .map(|(category, count)| (category.clone(), *count))
                .collect(),
        }
    }

    /// Ids of the memories archive-stale takes: not superseded, archived or pinned, and
    /// last updated before `cutoff`; oldest first.
    pub fn stale_ids(&self, cutoff: DateTime<Utc>) -> impl Iterator<Item = &str> + '_ {
        self.health
            .touched
            .range(..(cutoff, least_id()))
            .map(|(_, id)| &**id)
    }
}

/// The definition the counters implement, by brute force; tests compare the two.
pub fn recount(
    memories: &[&MemoryRecord],
    now: DateTime<Utc>,
    stale_days: u32,
) -> CollectionHealth {
    let cutoff = stale_cutoff(now, stale_days);
    let mut health = CollectionHealth {
        total: memories.len() as u64,
        current: 0,
        archived: 0,
        pinned: 0,
        stale: 0,
        expired: 0,
        suspended: 0,
        supersessions: 0,
        categories: BTreeMap::new(),
    };
    for memory in memories {
        if memory.pinned {
            health.pinned += 1;
        }
        if memory.superseded_by.is_some() {
            health.supersessions += 1;
            continue;
        }
        *health
            .categories
            .entry(memory.category.clone())
            .or_default() += 1;
        if memory.archived {
            health.archived += 1;
        } else if is_expired(memory.expires_at, now) {
            health.expired += 1;
        } else if memory.suspended_at(now) {
            health.suspended += 1;
        } else {
            health.current += 1;
            if !memory.pinned && memory.updated_at < cutoff {
                health.stale += 1;
            }
        }
    }
    health
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::TimeZone;
    use memvault_storage::CreatedBy;
    use proptest::prelude::*;

    use super::*;

    fn base() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap()
    }

    #[derive(Debug, Clone)]
    struct Shape {
        id: u8,
        category: u8,
        pinned: bool,
        archived: bool,
        superseded: bool,
        /// Hours after `base`.
        updated: u16,
        expires: Option<u16>,
        /// Set aside from `base` for this many hours.
        suspended: Option<u16>,
    }

    fn record(shape: &Shape) -> Arc<MemoryRecord> {
        let updated = base() + Duration::hours(i64::from(shape.updated));
        Arc::new(MemoryRecord {
            id: format!("m{:03}", shape.id),
            text: format!("text {}", shape.id),
            importance: 0.5,
            category: ["fact", "preference", "episode", "other"][usize::from(shape.category % 4)]
                .to_owned(),
            source: "api".to_owned(),
            metadata: Default::default(),
            container_tag: None,
            images: Default::default(),
            created_at: base(),
            updated_at: updated,
            pinned: shape.pinned,
            archived: shape.archived,
            created_by: CreatedBy {
                id: "k".to_owned(),
                label: "l".to_owned(),
            }
            .into(),
            superseded_by: shape.superseded.then(|| "newer".to_owned()),
            superseded_at: shape.superseded.then_some(updated),
            slot: None,
            value: None,
            expires_at: shape
                .expires
                .map(|hours| base() + Duration::hours(i64::from(hours))),
            suspensions: shape
                .suspended
                .map(|hours| memvault_storage::Suspension {
                    by: "override".to_owned(),
                    from: base(),
                    until: base() + Duration::hours(i64::from(hours)),
                })
                .into_iter()
                .collect(),
            index_key: u64::from(shape.id) + 1,
        })
    }

    #[derive(Debug, Clone)]
    enum Step {
        Put(Shape),
        Remove(u8),
    }

    fn step() -> impl Strategy<Value = Step> {
        let shape = (
            0..24u8,
            any::<u8>(),
            any::<bool>(),
            any::<bool>(),
            prop::bool::weighted(0.2),
            0..2000u16,
            prop::option::of(0..2000u16),
            prop::option::weighted(0.3, 0..2500u16),
        )
            .prop_map(
                |(id, category, pinned, archived, superseded, updated, expires, suspended)| Shape {
                    id,
                    category,
                    pinned,
                    archived,
                    superseded,
                    updated,
                    expires,
                    suspended,
                },
            );
        prop_oneof![4 => shape.prop_map(Step::Put), 1 => (0..24u8).prop_map(Step::Remove)]
    }

    proptest! {
        /// After any sequence of writes and removals, the counters give what a full
        /// recount gives, at any time and for any window.
        #[test]
        fn health_equals_a_brute_force_recount(
            steps in prop::collection::vec(step(), 0..80),
            at_hours in 0..2500i64,
            stale_days in 0..100u32,
        ) {
            let mut snapshot = CollectionSnapshot::default();
            for step in steps {
                match step {
                    Step::Put(shape) => snapshot.insert(record(&shape)),
                    Step::Remove(id) => { snapshot.remove(&format!("m{id:03}")); }
                }
            }
            let now = base() + Duration::hours(at_hours);
            let memories: Vec<&MemoryRecord> = snapshot.memories.values().map(|m| m.as_ref()).collect();
            let expected = recount(&memories, now, stale_days);
            let actual = snapshot.health(now, stale_days);
            prop_assert_eq!(&actual, &expected);
            prop_assert_eq!(actual.current + actual.archived + actual.expired + actual.suspended + actual.supersessions, actual.total);
            let cutoff = stale_cutoff(now, stale_days);
            let mut stale_ids: Vec<&str> = snapshot.stale_ids(cutoff).collect();
            let mut brute: Vec<&String> = memories
                .iter()
                .filter(|m| can_go_stale(m) && m.updated_at < cutoff)
                .map(|m| &m.id)
                .collect();
            for id in &stale_ids {
                let memory = &snapshot.memories[*id];
                prop_assert!(!memory.pinned && !memory.archived && memory.superseded_by.is_none());
            }
            stale_ids.sort();
            brute.sort();
            prop_assert_eq!(stale_ids, brute);
        }
    }

    /// The record of `shape`, with a slot (two memories in three) and a file (one in
    /// four), so every map of the snapshot has entries.
    fn with_slot_and_file(shape: &Shape) -> Arc<MemoryRecord> {
        let mut memory = (*record(shape)).clone();
        if !shape.id.is_multiple_of(3) {
            memory.slot = Some(format!("user/slot{}", shape.id % 5));
        }
        if shape.id.is_multiple_of(4) {
            let file = format!("file{}", shape.id % 8);
            memory
                .metadata
                .insert("file_id".to_owned(), file.clone().into());
            memory.metadata.insert("sha256".to_owned(), file.into());
        }
        Arc::new(memory)
    }

    proptest! {
        /// A collection's opening ([`SnapshotBuilder`], records in any order) builds what
        /// inserting the same memories one by one builds, every map and counter of it.
        #[test]
        fn the_builder_makes_what_inserts_make(
            steps in prop::collection::vec(step(), 0..80),
            reversed: bool,
        ) {
            let mut inserted = CollectionSnapshot::default();
            for step in steps {
                match step {
                    Step::Put(shape) => inserted.insert(with_slot_and_file(&shape)),
                    Step::Remove(id) => { inserted.remove(&format!("m{id:03}")); }
                }
            }
            let mut records: Vec<Arc<MemoryRecord>> = inserted.memories.values().cloned().collect();
            if reversed {
                records.reverse();
            }
            let mut builder = crate::collection::SnapshotBuilder::new(inserted.version);
            for record in records {
                builder.add(record);
            }
            let built = builder.finish();
            prop_assert_eq!(&built.memories, &inserted.memories);
            prop_assert_eq!(&built.order, &inserted.order);
            prop_assert_eq!(&built.fingerprints, &inserted.fingerprints);
            prop_assert_eq!(&built.slots, &inserted.slots);
            prop_assert_eq!(&built.slot_history, &inserted.slot_history);
            prop_assert_eq!(&built.set_aside, &inserted.set_aside);
            prop_assert_eq!(&built.boundaries, &inserted.boundaries);
            prop_assert_eq!(&built.superseded, &inserted.superseded);
            prop_assert_eq!(&built.file_digests, &inserted.file_digests);
            prop_assert_eq!(&built.file_memories, &inserted.file_memories);
            prop_assert_eq!(built.keys.len(), inserted.keys.len());
            for (key, memory) in inserted.keys.iter() {
                prop_assert_eq!(built.keys.get(key), Some(memory));
            }
            let (built, inserted) = (&built.health, &inserted.health);
            prop_assert_eq!(
                (built.pinned, built.archived, &built.categories),
                (inserted.pinned, inserted.archived, &inserted.categories)
            );
            prop_assert_eq!(&built.expiring, &inserted.expiring);
            prop_assert_eq!(&built.touched, &inserted.touched);
            prop_assert_eq!(&built.touched_days, &inserted.touched_days);
        }
    }

    #[test]
    fn a_window_of_zero_days_counts_everything_older_than_now() {
        let mut snapshot = CollectionSnapshot::default();
        let shape = Shape {
            id: 1,
            category: 0,
            pinned: false,
            archived: false,
            superseded: false,
            updated: 0,
            expires: None,
            suspended: None,
        };
        snapshot.insert(record(&shape));
        assert_eq!(snapshot.health(base(), 0).stale, 0, "not older than now");
        assert_eq!(snapshot.health(base() + Duration::seconds(1), 0).stale, 1);
        assert_eq!(
            snapshot
                .health(base() + Duration::seconds(1), u32::MAX)
                .stale,
            0
        );
    }
}
