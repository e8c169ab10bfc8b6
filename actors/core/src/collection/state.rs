//! What a collection actor owns and publishes.

use std::cmp::Reverse;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use arc_swap::{ArcSwap, ArcSwapOption};
use chrono::{DateTime, Utc};
use memvault_storage::{CollectionName, EmbeddingModel, MemoryRecord, TenantId};
use ractor::ActorRef;

use super::health::HealthCounters;
use super::keys::KeyTable;
use super::messages::CollectionMessage;
use memvault_curation::CachedSummary;
use memvault_index::CollectionIndexes;

/// Listing order: pinned first, then newest first; the id breaks ties so the order is
/// total and stable between pages.
/// A memory's id as the snapshot's maps hold it: one allocation per memory, shared by
/// every map that names the memory (a `String` in each cost one allocation per map; at a
/// million memories that was about 200 MiB).
pub type SharedId = Arc<str>;

/// Where a memory is in the listing: pinned first, then newest first, then by id.
pub type ListKey = (Reverse<bool>, Reverse<DateTime<Utc>>, Reverse<SharedId>);

pub fn list_key(memory: &MemoryRecord, id: SharedId) -> ListKey {
    (
        Reverse(memory.pinned),
        Reverse(memory.created_at),
        Reverse(id),
    )
}

/// The least id, to start a range over (value, id) pairs at a value.
pub(super) fn least_id() -> SharedId {
    SharedId::from("")
}

/// An immutable view of a collection's memories. The actor publishes a new one after
/// every write; readers load it without touching the mailbox. `imbl` structures make the
/// copy-on-publish O(1) and each update O(log n).
///
/// The maps are B-trees (`OrdMap`) except `keys`: an `imbl::HashMap` node is a fixed array
/// of 32 entries, and at a million entries most of the deepest nodes hold one or two, so
/// a million-entry map held about 310 MiB against 79 MiB as a B-tree (ids in both). `keys`
/// is a persistent vector ([`KeyTable`]): search asks it for every candidate the vector
/// index visits, at random, where the B-tree's lookup took three times as long as the
/// hash map's (1.9 against 0.7 µs).
#[derive(Clone, Default)]
pub struct CollectionSnapshot {
    /// Memory by id, for gets. Ids are time-ordered, so the records read at start arrive
    /// in order and the tree is built along its right edge.
    pub memories: imbl::OrdMap<SharedId, Arc<MemoryRecord>>,
    /// Memories in listing order (the key ends with the id), so a page is a walk, not a
    /// sort.
    pub order: imbl::OrdSet<ListKey>,
    /// Index key to memory, for search candidates; only current keys are here, so a stale
    /// key left in an index never resolves.
    pub keys: KeyTable,
    /// Slot → (created_at, id) of the memories on it not superseded: its value, and any
    /// time-bound values over it that set it aside for a while (they may have expired;
    /// readers check).
    pub slots: imbl::OrdMap<String, imbl::OrdSet<(DateTime<Utc>, SharedId)>>,
    /// Slot → (created_at, id) of every memory that ever held it, superseded ones
    /// included: the slot's history.
    pub slot_history: imbl::OrdMap<String, imbl::OrdSet<(DateTime<Utc>, SharedId)>>,
    /// (until, id) of every set-aside of a memory not superseded: who is set aside now,
    /// for contradictions and health.
    pub set_aside: imbl::OrdSet<(DateTime<Utc>, SharedId)>,
    /// (when, id) of every moment a memory's truth changes by itself (an expiry, the end
    /// of a set-aside): an answer computed before the next one stays right until then.
    pub boundaries: imbl::OrdSet<(DateTime<Utc>, SharedId)>,
    /// (fingerprint of the normalized text, id) of every memory not superseded, to find
    /// an identical fact without a scan.
    pub fingerprints: imbl::OrdSet<(u64, SharedId)>,
    /// (when, id) of every superseded memory, for contradictions newest first.
    pub superseded: imbl::OrdSet<(DateTime<Utc>, SharedId)>,
    /// (the metadata `sha256` of the file a memory was read from, id): the same file
    /// dropped again is found without a scan.
    pub file_digests: imbl::OrdSet<(String, SharedId)>,
    /// (the metadata `file_id` of the file a memory was read from, id): a file's
    /// memories.
    pub file_memories: imbl::OrdSet<(String, SharedId)>,
    /// Counters and time indexes behind the collection's health; see `health.rs`.
    pub health: HealthCounters,
    /// Bumped on every write; caches keyed by it go stale when the collection changes.
    pub version: u64,
}

/// A memory's entry in `fingerprints`: only memories not superseded are there.
fn fingerprint_entry(memory: &MemoryRecord, id: &SharedId) -> Option<(u64, SharedId)> {
    memory
        .superseded_by
        .is_none()
        .then(|| (text_fingerprint(&memory.text), id.clone()))
}

/// Builds a snapshot from a collection's records as they are read at its opening. The
/// four maps every memory is in (by id, listing order, fingerprint, and the health's
/// `touched`) are made once every record is read, from lists of their entries, into trees
/// with full leaves (`packed.rs`): grown by inserts, their leaves stay half full, and at a
/// million memories the difference is about 170 MB. The other maps hold few memories each
/// and are built as [`CollectionSnapshot::insert`] builds them.
///
/// Only the memories and their fingerprints (the text's hash, the costly part) are
/// gathered as the records arrive; the listing and `touched` entries are made from the
/// memories at the end, each list at its exact length (a list grown by doubling frees
/// its earlier buffers; the RSS right after a start did not measurably change with it).
pub struct SnapshotBuilder {
    snapshot: CollectionSnapshot,
    memories: Vec<(SharedId, Arc<MemoryRecord>)>,
    fingerprints: Vec<(u64, SharedId)>,
}

impl SnapshotBuilder {
    pub fn new(version: u64) -> Self {
        Self {
            snapshot: CollectionSnapshot {
                version,
                ..CollectionSnapshot::default()
            },
            memories: Vec::new(),
            fingerprints: Vec::new(),
        }
    }

    /// Adds a memory; ids are unique (a collection's records are keyed by id).
    pub fn add(&mut self, memory: Arc<MemoryRecord>) {
        let id = SharedId::from(memory.id.as_str());
        if let Some(entry) = fingerprint_entry(&memory, &id) {
            self.fingerprints.push(entry);
        }
        let snapshot = &mut self.snapshot;
        snapshot.health.gather(&memory, &id);
        snapshot.index(&memory, &id);
        self.memories.push((id, memory));
    }

    /// The snapshot; the four trees are made on two threads.
    pub fn finish(self) -> CollectionSnapshot {
        use super::packed::{packed_map, packed_set};
        let Self {
            mut snapshot,
            memories,
            fingerprints,
        } = self;
        let order: Vec<ListKey> = memories
            .iter()
            .map(|(id, memory)| list_key(memory, id.clone()))
            .collect();
        let touched = HealthCounters::touched_entries(&memories);
        let (memories, order) = std::thread::scope(|scope| {
            let first = scope.spawn(|| (packed_map(memories), packed_set(order)));
            snapshot.fingerprints = packed_set(fingerprints);
            snapshot.health.set_touched(touched);
            match first.join() {
                Ok(made) => made,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        });
        snapshot.memories = memories;
        snapshot.order = order;
        snapshot
    }
}

/// When a memory's truth changes with no write: its expiry, and the end of each
/// set-aside.
fn time_boundaries(memory: &MemoryRecord) -> impl Iterator<Item = DateTime<Utc>> + '_ {
    memory
        .expires_at
        .into_iter()
        .chain(memory.suspensions.iter().map(|suspension| suspension.until))
}

/// A stable-in-process fingerprint of a text's words, case and punctuation ignored: the
/// words of [`memvault_extract::normalize_value`], hashed as they are read. Texts whose
/// normalized values are equal have equal fingerprints; a collision costs one comparison
/// of normalized values, so the hash is the fast FxHash, not SipHash. Building the
/// normalized string first was an eighth of a million-memory collection's start-up, and
/// hashing a word at a time with SipHash a twentieth.
pub fn text_fingerprint(text: &str) -> u64 {
    use std::hash::Hasher;
    let mut hasher = rustc_hash::FxHasher::default();
    let mut lowered = String::new();
    if text.is_ascii() {
        // The same bytes as the general path below, without decoding characters.
        let mut word = Vec::with_capacity(32);
        for &byte in text.as_bytes() {
            if byte.is_ascii_alphanumeric() {
                word.push(byte.to_ascii_lowercase());
            } else if !word.is_empty() {
                hasher.write(&word);
                hasher.write_u8(b' ');
                word.clear();
            }
        }
        if !word.is_empty() {
            hasher.write(&word);
            hasher.write_u8(b' ');
        }
        return hasher.finish();
    }
    for word in text
        .split(|character: char| !character.is_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        lowered.clear();
        if word.is_ascii() {
            lowered.push_str(word);
            lowered.make_ascii_lowercase();
        } else {
            // `str::to_lowercase`, as the normalized value: it lowercases a word-final
            // sigma by its context, which a character at a time cannot.
            lowered.push_str(&word.to_lowercase());
        }
        hasher.write(lowered.as_bytes());
        hasher.write_u8(b' ');
    }
    hasher.finish()
}

impl memvault_index::search::engine::MemoryLookup for CollectionSnapshot {
    fn by_key(&self, key: u64) -> Option<&Arc<MemoryRecord>> {
        self.keys.get(key)
    }

    fn keyed(&self) -> impl Iterator<Item = (u64, &Arc<MemoryRecord>)> {
        self.keys.iter()
    }

    fn is_empty(&self) -> bool {
        self.memories.is_empty()
    }
}

impl CollectionSnapshot {
    /// The memory `id` of this collection (`collection`, for the error), or
    /// `MemoryNotFound`.
    pub fn memory(
        &self,
        collection: &CollectionName,
        id: &str,
    ) -> crate::error::Result<Arc<MemoryRecord>> {
        self.memories
            .get(id)
            .cloned()
            .ok_or_else(|| crate::error::Error::MemoryNotFound {
                collection: collection.clone(),
                id: id.to_owned(),
            })
    }

    pub fn insert(&mut self, memory: Arc<MemoryRecord>) {
        if let Some(previous) = self.memories.get(memory.id.as_str()).cloned() {
            self.unindex(&previous);
        }
        let id = SharedId::from(memory.id.as_str());
        self.order.insert(list_key(&memory, id.clone()));
        if let Some(entry) = fingerprint_entry(&memory, &id) {
            self.fingerprints.insert(entry);
        }
        self.health.add(&memory, &id);
        self.index(&memory, &id);
        self.memories.insert(id, memory);
    }

    /// Every entry of a memory but those of `memories`, `order`, `fingerprints` and the
    /// health counters (which `insert` and [`SnapshotBuilder`] put each their own way).
    fn index(&mut self, memory: &Arc<MemoryRecord>, id: &SharedId) {
        self.keys.insert(memory.index_key, memory.clone());
        let entry = (memory.created_at, id.clone());
        if let Some(slot) = &memory.slot {
            self.slot_history
                .entry(slot.clone())
                .or_default()
                .insert(entry.clone());
        }
        for at in time_boundaries(memory) {
            self.boundaries.insert((at, id.clone()));
        }
        match (&memory.superseded_by, memory.superseded_at) {
            (None, _) => {
                if let Some(slot) = &memory.slot {
                    self.slots.entry(slot.clone()).or_default().insert(entry);
                }
                for suspension in &memory.suspensions {
                    self.set_aside.insert((suspension.until, id.clone()));
                }
            }
            (Some(_), at) => {
                let at = at.unwrap_or(memory.updated_at);
                self.superseded.insert((at, id.clone()));
            }
        }
        for (index, value) in self.file_entries(memory) {
            index.insert((value, id.clone()));
        }
    }

    pub fn remove(&mut self, id: &str) -> Option<Arc<MemoryRecord>> {
        let removed = self.memories.remove(id)?;
        self.unindex(&removed);
        Some(removed)
    }

    /// Drops every secondary entry of a memory that is being replaced or removed.
    fn unindex(&mut self, memory: &MemoryRecord) {
        let id = SharedId::from(memory.id.as_str());
        self.order.remove(&list_key(memory, id.clone()));
        self.keys.remove(memory.index_key);
        if let Some(slot) = &memory.slot {
            let entry = (memory.created_at, id.clone());
            for index in [&mut self.slots, &mut self.slot_history] {
                if let Some(members) = index.get_mut(slot) {
                    members.remove(&entry);
                    if members.is_empty() {
                        index.remove(slot);
                    }
                }
            }
        }
        for at in time_boundaries(memory) {
            self.boundaries.remove(&(at, id.clone()));
        }
        for suspension in &memory.suspensions {
            self.set_aside.remove(&(suspension.until, id.clone()));
        }
        self.fingerprints
            .remove(&(text_fingerprint(&memory.text), id.clone()));
        let at = memory.superseded_at.unwrap_or(memory.updated_at);
        self.superseded.remove(&(at, id.clone()));
        for (index, value) in self.file_entries(memory) {
            index.remove(&(value, id.clone()));
        }
        self.health.remove(memory, &id);
    }

    /// The file indexes a memory belongs in, with its value in each.
    fn file_entries(
        &mut self,
        memory: &MemoryRecord,
    ) -> Vec<(&mut imbl::OrdSet<(String, SharedId)>, String)> {
        let value = |key: &str| {
            memory
                .metadata
                .get(key)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let (digest, file) = (value("sha256"), value("file_id"));
        let mut entries = Vec::new();
        if let Some(digest) = digest {
            entries.push((&mut self.file_digests, digest));
        }
        if let Some(file) = file {
            entries.push((&mut self.file_memories, file));
        }
        entries
    }

    /// The memories read from a file with this SHA-256 (its metadata `sha256`).
    pub fn with_file_digest(&self, sha256: &str) -> Vec<Arc<MemoryRecord>> {
        self.indexed(&self.file_digests, sha256)
    }

    /// The memories read from the file with this id (their metadata `file_id`).
    pub fn from_file(&self, file_id: &str) -> Vec<Arc<MemoryRecord>> {
        self.indexed(&self.file_memories, file_id)
    }

    fn indexed(
        &self,
        index: &imbl::OrdSet<(String, SharedId)>,
        value: &str,
    ) -> Vec<Arc<MemoryRecord>> {
        index
            .range((value.to_owned(), least_id())..)
            .take_while(|(found, _)| found == value)
            .filter_map(|(_, id)| self.memories.get(id).cloned())
            .collect()
    }

    /// The memories on a slot not superseded, oldest first: its value and the time-bound
    /// values over it (current, set aside or expired).
    pub fn slot_holders(&self, slot: &str) -> impl Iterator<Item = &Arc<MemoryRecord>> + '_ {
        self.members(&self.slots, slot)
    }

    /// Every memory that has held a slot, oldest first, superseded ones included.
    pub fn slot_history(&self, slot: &str) -> impl Iterator<Item = &Arc<MemoryRecord>> + '_ {
        self.members(&self.slot_history, slot)
    }

    /// The memory that holds a slot at `now`: the one on it that is current, if any.
    pub fn current_holder(&self, slot: &str, now: DateTime<Utc>) -> Option<&Arc<MemoryRecord>> {
        self.slot_holders(slot)
            .filter(|memory| memvault_index::search::filter::is_current(memory, now))
            .last()
    }

    fn members<'s>(
        &'s self,
        index: &'s imbl::OrdMap<String, imbl::OrdSet<(DateTime<Utc>, SharedId)>>,
        slot: &str,
    ) -> impl Iterator<Item = &'s Arc<MemoryRecord>> + 's {
        index
            .get(slot)
            .into_iter()
            .flat_map(|members| members.iter())
            .filter_map(|(_, id)| self.memories.get(id))
    }

    /// The first moment after `now` at which a memory's truth changes by itself (an
    /// expiry or the end of a set-aside), if any.
    pub fn next_boundary(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.boundaries
            .range((now, least_id())..)
            .map(|(at, _)| *at)
            .find(|at| *at > now)
    }

    /// The memories set aside at `now` by a time-bound memory on their slot, with the
    /// set-aside in force (archived ones included).
    pub fn set_aside_at(
        &self,
        now: DateTime<Utc>,
    ) -> impl Iterator<Item = &Arc<MemoryRecord>> + '_ {
        let mut seen = std::collections::HashSet::new();
        self.set_aside
            .range((now, least_id())..)
            .filter(move |(_, id)| seen.insert(id.clone()))
            .filter_map(|(_, id)| self.memories.get(id))
            .filter(move |memory| {
                memory.superseded_by.is_none()
                    && memory.expires_at.is_none_or(|expiry| expiry > now)
                    && memory.suspended_at(now)
            })
    }

    /// Memories not superseded whose text has the same words as `text`.
    pub fn same_text(&self, text: &str) -> impl Iterator<Item = &Arc<MemoryRecord>> + '_ {
        let fingerprint = text_fingerprint(text);
        let wanted = memvault_extract::normalize_value(text);
        self.fingerprints
            .range((fingerprint, least_id())..)
            .take_while(move |(found, _)| *found == fingerprint)
            .filter_map(|(_, id)| self.memories.get(id))
            .filter(move |memory| memvault_extract::normalize_value(&memory.text) == wanted)
    }

    /// The memory an index key stands for, if that key is current.
    pub fn by_key(&self, key: u64) -> Option<&Arc<MemoryRecord>> {
        self.keys.get(key)
    }

    /// One page in listing order, skipping archived memories unless asked for them.
    pub fn page(
        &self,
        offset: usize,
        limit: usize,
        include_archived: bool,
    ) -> Vec<Arc<MemoryRecord>> {
        self.order
            .iter()
            .filter_map(|(_, _, Reverse(id))| self.memories.get(id))
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
    /// The actor's failures and restarts (see [`memvault_types::supervision`]).
    pub supervised: memvault_types::Supervised,
    /// The search indexes of the running actor; `None` until it has opened them.
    pub indexes: ArcSwapOption<CollectionIndexes>,
    /// The last summary written, valid while the snapshot version is unchanged.
    pub summary: ArcSwapOption<CachedSummary>,
    /// The model that made the collection's vectors: its writes and its queries are
    /// embedded by it. Changed only by the actor, when a re-embedding switches it.
    pub embedding: ArcSwap<EmbeddingModel>,
}

impl CollectionHandle {
    pub fn new(tenant: TenantId, name: CollectionName, embedding: EmbeddingModel) -> Arc<Self> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Arc::new(Self {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            tenant,
            name,
            snapshot: ArcSwap::from_pointee(CollectionSnapshot::default()),
            actor: ArcSwapOption::empty(),
            supervised: memvault_types::Supervised::default(),
            indexes: ArcSwapOption::empty(),
            summary: ArcSwapOption::empty(),
            embedding: ArcSwap::from_pointee(embedding),
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

    #[test]
    fn texts_share_a_fingerprint_exactly_when_their_normalized_values_match() {
        let texts = [
            "New  York!",
            "new york",
            "NEW-YORK",
            // Not ASCII (a no-break space): the general path, equal to the ASCII one.
            "new\u{a0}YORK",
            "New Yorker",
            "newyork",
            "ΟΔΟΣ",
            "οδος",
            "Οδός",
            "Straße 5",
            "STRASSE 5",
            "",
            "...",
        ];
        for a in texts {
            for b in texts {
                let same =
                    memvault_extract::normalize_value(a) == memvault_extract::normalize_value(b);
                assert_eq!(
                    text_fingerprint(a) == text_fingerprint(b),
                    same,
                    "{a:?} and {b:?}"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn equal_normalized_values_give_equal_fingerprints(a in "\\PC{0,24}", b in "\\PC{0,24}") {
            if memvault_extract::normalize_value(&a) == memvault_extract::normalize_value(&b) {
                prop_assert_eq!(text_fingerprint(&a), text_fingerprint(&b));
            }
            let upper = a.to_uppercase();
            if memvault_extract::normalize_value(&upper) == memvault_extract::normalize_value(&a) {
                prop_assert_eq!(text_fingerprint(&upper), text_fingerprint(&a));
            }
        }
    }

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
            images: Default::default(),
            created_at: at,
            updated_at: at,
            pinned,
            archived,
            created_by: CreatedBy {
                id: "k".to_owned(),
                label: "l".to_owned(),
            }
            .into(),
            superseded_by: None,
            superseded_at: None,
            slot: None,
            value: None,
            expires_at: None,
            suspensions: Default::default(),
            index_key: u64::from(id),
        })
    }

    fn from_file(id: u8, file: &str, digest: &str) -> Arc<MemoryRecord> {
        let mut memory = (*memory(id, id, false, false)).clone();
        memory.metadata.insert("file_id".to_owned(), file.into());
        memory.metadata.insert("sha256".to_owned(), digest.into());
        Arc::new(memory)
    }

    fn ids(memories: Vec<Arc<MemoryRecord>>) -> Vec<String> {
        let mut ids: Vec<String> = memories.iter().map(|memory| memory.id.clone()).collect();
        ids.sort();
        ids
    }

    #[test]
    fn a_files_memories_are_found_by_its_id_and_digest_until_they_go() {
        let mut snapshot = CollectionSnapshot::default();
        snapshot.insert(from_file(1, "f1", "aa"));
        snapshot.insert(from_file(2, "f1", "aa"));
        snapshot.insert(from_file(3, "f2", "ab"));
        snapshot.insert(memory(4, 4, false, false));
        assert_eq!(ids(snapshot.with_file_digest("aa")), ["m001", "m002"]);
        assert_eq!(ids(snapshot.from_file("f2")), ["m003"]);
        assert!(
            snapshot.with_file_digest("a").is_empty(),
            "a prefix is no match"
        );
        // Replaced without its file metadata, then removed: out of the indexes.
        snapshot.insert(memory(2, 2, false, false));
        assert_eq!(ids(snapshot.from_file("f1")), ["m001"]);
        snapshot.remove("m001");
        assert!(snapshot.with_file_digest("aa").is_empty());
        assert!(snapshot.file_memories.iter().all(|(file, _)| file == "f2"));
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
