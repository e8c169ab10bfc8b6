//! What a collection actor owns and publishes.

use std::cmp::Reverse;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use arc_swap::{ArcSwap, ArcSwapOption};
use chrono::{DateTime, Utc};
use memvault_storage::{CollectionName, MemoryRecord, TenantId};
use ractor::ActorRef;

use super::messages::CollectionMessage;
use crate::index::CollectionIndexes;

/// Listing order: pinned first, then newest first; the id breaks ties so the order is
/// total and stable between pages.
pub type ListKey = (Reverse<bool>, Reverse<DateTime<Utc>>, Reverse<String>);

pub fn list_key(memory: &MemoryRecord) -> ListKey {
    (
        Reverse(memory.pinned),
        Reverse(memory.created_at),
        Reverse(memory.id.clone()),
    )
}

/// An immutable view of a collection's memories. The actor publishes a new one after
/// every write; readers load it without touching the mailbox. `imbl` structures make the
/// copy-on-publish O(1) and each update O(log n).
#[derive(Clone, Default)]
pub struct CollectionSnapshot {
    /// Memory by id, for gets.
    pub memories: imbl::HashMap<String, Arc<MemoryRecord>>,
    /// Ids in listing order, so a page is a walk, not a sort.
    pub order: imbl::OrdMap<ListKey, String>,
    /// Index key to memory, for search candidates; only current keys are here, so a stale
    /// key left in an index never resolves.
    pub keys: imbl::HashMap<u64, Arc<MemoryRecord>>,
    /// Bumped on every write; caches keyed by it go stale when the collection changes.
    pub version: u64,
}

impl CollectionSnapshot {
    pub fn insert(&mut self, memory: Arc<MemoryRecord>) {
        if let Some(previous) = self.memories.get(&memory.id) {
            self.order.remove(&list_key(previous));
            self.keys.remove(&previous.index_key);
        }
        self.order.insert(list_key(&memory), memory.id.clone());
        self.keys.insert(memory.index_key, memory.clone());
        self.memories.insert(memory.id.clone(), memory);
    }

    pub fn remove(&mut self, id: &str) -> Option<Arc<MemoryRecord>> {
        let removed = self.memories.remove(id)?;
        self.order.remove(&list_key(&removed));
        self.keys.remove(&removed.index_key);
        Some(removed)
    }

    /// The memory an index key stands for, if that key is current.
    pub fn by_key(&self, key: u64) -> Option<&Arc<MemoryRecord>> {
        self.keys.get(&key)
    }

    /// One page in listing order, skipping archived memories unless asked for them.
    pub fn page(
        &self,
        offset: usize,
        limit: usize,
        include_archived: bool,
    ) -> Vec<Arc<MemoryRecord>> {
        self.order
            .values()
            .filter_map(|id| self.memories.get(id))
            .filter(|memory| include_archived || !memory.archived)
            .skip(offset)
            .take(limit)
            .cloned()
            .collect()
    }
}

/// The part of a collection that outlives any one actor: the tenant actor keeps it in its
/// registry and hands it to each (re)started collection actor.
pub struct CollectionHandle {
    /// Unique for the life of the process: a deleted and re-created collection of the same
    /// name gets a new one, so caches keyed by (id, version) never mix them up.
    pub id: u64,
    pub tenant: TenantId,
    pub name: CollectionName,
    /// The latest published snapshot; reads go here.
    pub snapshot: ArcSwap<CollectionSnapshot>,
    /// The running actor; `None` while it is being restarted, so writes fail fast (503)
    /// instead of waiting on a dead mailbox.
    pub actor: ArcSwapOption<ActorRef<CollectionMessage>>,
    /// How many times the actor was restarted after a failure.
    pub restarts: AtomicU64,
    /// The search indexes of the running actor; `None` until it has opened them.
    pub indexes: ArcSwapOption<CollectionIndexes>,
}

impl CollectionHandle {
    pub fn new(tenant: TenantId, name: CollectionName) -> Arc<Self> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Arc::new(Self {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            tenant,
            name,
            snapshot: ArcSwap::from_pointee(CollectionSnapshot::default()),
            actor: ArcSwapOption::empty(),
            restarts: AtomicU64::new(0),
            indexes: ArcSwapOption::empty(),
        })
    }

    pub fn snapshot(&self) -> Arc<CollectionSnapshot> {
        self.snapshot.load_full()
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use memvault_storage::CreatedBy;
    use proptest::prelude::*;

    use super::*;

    fn memory(id: u8, second: u8, pinned: bool, archived: bool) -> Arc<MemoryRecord> {
        let at = Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, u32::from(second % 60))
            .unwrap();
        Arc::new(MemoryRecord {
            id: format!("m{id:03}"),
            text: "t".to_owned(),
            importance: 0.5,
            category: "other".to_owned(),
            source: "api".to_owned(),
            metadata: Default::default(),
            container_tag: None,
            images: Vec::new(),
            created_at: at,
            updated_at: at,
            pinned,
            archived,
            created_by: CreatedBy {
                id: "k".to_owned(),
                label: "l".to_owned(),
            },
            superseded_by: None,
            expires_at: None,
            index_key: u64::from(id),
        })
    }

    #[derive(Debug, Clone)]
    enum Step {
        Put {
            id: u8,
            second: u8,
            pinned: bool,
            archived: bool,
        },
        Remove {
            id: u8,
        },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0..20u8, any::<u8>(), any::<bool>(), any::<bool>()).prop_map(
                |(id, second, pinned, archived)| Step::Put {
                    id,
                    second,
                    pinned,
                    archived
                }
            ),
            (0..20u8).prop_map(|id| Step::Remove { id }),
        ]
    }

    proptest! {
        /// Whatever the sequence of writes, a page is the slice of "pinned first, then
        /// newest first, then id" over the live memories, and the order index never keeps
        /// a stale entry.
        #[test]
        fn pages_match_a_full_sort(steps in prop::collection::vec(step(), 0..60),
                                   offset in 0..25usize, limit in 1..25usize, include_archived: bool) {
            let mut snapshot = CollectionSnapshot::default();
            for step in steps {
                match step {
                    Step::Put { id, second, pinned, archived } => snapshot.insert(memory(id, second, pinned, archived)),
                    Step::Remove { id } => { snapshot.remove(&format!("m{id:03}")); }
                }
            }
            prop_assert_eq!(snapshot.order.len(), snapshot.memories.len());
            let mut expected: Vec<Arc<MemoryRecord>> = snapshot
                .memories
                .values()
                .filter(|memory| include_archived || !memory.archived)
                .cloned()
                .collect();
            expected.sort_by(|a, b| {
                b.pinned.cmp(&a.pinned).then(b.created_at.cmp(&a.created_at)).then(b.id.cmp(&a.id))
            });
            let expected: Vec<String> = expected.iter().skip(offset).take(limit).map(|m| m.id.clone()).collect();
            let actual: Vec<String> = snapshot
                .page(offset, limit, include_archived)
                .iter()
                .map(|m| m.id.clone())
                .collect();
            prop_assert_eq!(actual, expected);
        }
    }
}
