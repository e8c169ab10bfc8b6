//! Snapshots of a collection's saved indexes, kept where every node can read them.
//!
//! With several nodes, the node that takes a tenant over would otherwise build each of its
//! collections' indexes from the store, which costs about a third of a minute per 100,000
//! memories on a small machine. Instead the owner packs its saved index files into one
//! blob now and then ([`Shelving`]: after enough changes, at most once a minute, and when
//! the collection stops), and a new owner unpacks the latest one before it opens the
//! indexes ([`crate::IndexSettings::open`]).
//!
//! A snapshot is never trusted blindly: it may be older than the store, or come from a
//! node that lost the tenant while it was uploading. It lists every key it holds with a
//! fingerprint of that memory's text, and opening re-indexes each stored memory whose key
//! is absent from the list or listed with another fingerprint. Keys a snapshot holds that
//! the store no longer has resolve to no memory at search, and the collection hands out
//! new keys above every key its indexes hold ([`crate::CollectionIndexes::highest_key`]),
//! so a stale entry never answers for a newer memory.
//!
//! The packed form: a magic line, the number of files, then each file as a 2-byte
//! name length, the name, an 8-byte length and the bytes (integers little-endian), and the
//! SHA-256 of everything before it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memvault_storage::{CollectionName, TenantId};
use sha2::{Digest, Sha256};

use crate::IndexError;

/// Where snapshots live: the nodes' shared blob store, in practice. Calls block (they are
/// made from blocking threads).
pub trait SnapshotShelf: std::fmt::Debug + Send + Sync + 'static {
    /// The latest snapshot of the collection, if one was kept.
    fn fetch(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Option<Vec<u8>>, String>;
    /// Keeps `snapshot` as the collection's latest, replacing the one before.
    fn keep(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        snapshot: Vec<u8>,
    ) -> Result<(), String>;
    /// Forgets the collection's snapshot (the collection is deleted).
    fn discard(&self, tenant: &TenantId, collection: &CollectionName) -> Result<(), String>;
}

/// The path, under its tenant, of a collection's snapshot in a blob store; nothing a
/// client uploads lives under `indexes/`.
pub fn snapshot_path(collection: &CollectionName) -> String {
    format!("{SNAPSHOT_FOLDER}/{collection}/snapshot")
}

/// The folder of every snapshot path: platform data, not the tenant's files (storage
/// quotas leave it out).
pub const SNAPSHOT_FOLDER: &str = "indexes";

const MAGIC: &[u8] = b"memvault-index-snapshot/1\n";
/// The key list inside a packed snapshot, and in a directory unpacked and not yet opened.
pub(crate) const KEY_LIST: &str = "snapshot-keys.bin";
/// A snapshot is packed after this many memories were indexed since the last one...
const SHELVE_AFTER_CHANGES: usize = 1_000;
/// ...and at most this often (a pack holds the collection's writes for a moment).
const SHELVE_AT_MOST_EVERY: Duration = Duration::from_secs(60);

/// The fingerprint of a memory's text in a key list.
pub(crate) fn fingerprint(text: &str) -> u64 {
    let digest = Sha256::digest(text.as_bytes());
    u64::from_le_bytes(digest[..8].try_into().unwrap_or_default())
}

/// One collection's snapshots: the fingerprint of every key indexed, what changed since
/// the last pack, and the upload under way.
pub(crate) struct Shelving {
    shelf: Arc<dyn SnapshotShelf>,
    tenant: TenantId,
    collection: CollectionName,
    keys: Mutex<HashMap<u64, u64>>,
    changed: AtomicUsize,
    last: Mutex<Option<Instant>>,
    upload: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Shelving {
    pub(crate) fn new(
        shelf: Arc<dyn SnapshotShelf>,
        tenant: TenantId,
        collection: CollectionName,
    ) -> Self {
        Self {
            shelf,
            tenant,
            collection,
            keys: Mutex::new(HashMap::new()),
            changed: AtomicUsize::new(0),
            last: Mutex::new(None),
            upload: Mutex::new(None),
        }
    }

    /// Records what opening indexed: every key with its fingerprint, of which `changed`
    /// were indexed anew.
    pub(crate) fn fill(&self, keys: impl Iterator<Item = (u64, u64)>, changed: usize) {
        lock(&self.keys).extend(keys);
        self.changed.fetch_add(changed, Ordering::Relaxed);
    }

    pub(crate) fn added(&self, key: u64, fingerprint: u64) {
        lock(&self.keys).insert(key, fingerprint);
        self.changed.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn removed(&self, key: u64) {
        lock(&self.keys).remove(&key);
    }

    /// Whether enough changed, long enough ago, and no upload is under way.
    pub(crate) fn due(&self) -> bool {
        self.changed.load(Ordering::Relaxed) >= SHELVE_AFTER_CHANGES
            && lock(&self.last).is_none_or(|last| last.elapsed() >= SHELVE_AT_MOST_EVERY)
            && lock(&self.upload)
                .as_ref()
                .is_none_or(|upload| upload.is_finished())
    }

    pub(crate) fn has_changes(&self) -> bool {
        self.changed.load(Ordering::Relaxed) > 0
    }

    /// Packs the saved files of `directory` (saved by the caller just before) with the key
    /// list, and uploads them: on a thread of its own, or here when `wait`.
    pub(crate) fn shelve(&self, directory: &Path, wait: bool) -> Result<(), IndexError> {
        if let Some(upload) = lock(&self.upload).take() {
            let _ = upload.join();
        }
        let changed = self.changed.swap(0, Ordering::Relaxed);
        let packed = {
            let keys = lock(&self.keys);
            pack(directory, &keys)
        };
        let packed = match packed {
            Ok(packed) => packed,
            Err(error) => {
                self.changed.fetch_add(changed, Ordering::Relaxed);
                return Err(error);
            }
        };
        *lock(&self.last) = Some(Instant::now());
        let (shelf, tenant, collection) = (
            self.shelf.clone(),
            self.tenant.clone(),
            self.collection.clone(),
        );
        let upload = move || {
            let bytes = packed.len();
            match shelf.keep(&tenant, &collection, packed) {
                Ok(()) => {
                    tracing::debug!(tenant = %tenant, collection = %collection, bytes, "index snapshot kept")
                }
                Err(error) => {
                    tracing::warn!(tenant = %tenant, collection = %collection, %error, "index snapshot not kept; the next one replaces it")
                }
            }
        };
        if wait {
            upload();
        } else {
            *lock(&self.upload) = Some(std::thread::spawn(upload));
        }
        Ok(())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The saved files of a collection's indexes in `directory`, with `keys` (key →
/// fingerprint), packed into one snapshot.
pub(crate) fn pack(directory: &Path, keys: &HashMap<u64, u64>) -> Result<Vec<u8>, IndexError> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for name in ["vectors.usearch", "vectors.json"] {
        match std::fs::read(directory.join(name)) {
            Ok(bytes) => files.push((name.to_owned(), bytes)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error(error)),
        }
    }
    files.extend(text_files(&directory.join("text"))?);
    let mut list = Vec::with_capacity(keys.len() * 16);
    for (key, fingerprint) in keys {
        list.extend_from_slice(&key.to_le_bytes());
        list.extend_from_slice(&fingerprint.to_le_bytes());
    }
    files.push((KEY_LIST.to_owned(), list));

    let size: usize = files
        .iter()
        .map(|(name, bytes)| 10 + name.len() + bytes.len())
        .sum();
    let mut packed = Vec::with_capacity(MAGIC.len() + 4 + size + 32);
    packed.extend_from_slice(MAGIC);
    packed.extend_from_slice(&(files.len() as u32).to_le_bytes());
    for (name, bytes) in &files {
        packed.extend_from_slice(&(name.len() as u16).to_le_bytes());
        packed.extend_from_slice(name.as_bytes());
        packed.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        packed.extend_from_slice(bytes);
    }
    let digest = Sha256::digest(&packed);
    packed.extend_from_slice(&digest);
    Ok(packed)
}

/// The files of the text index's last commit: its `meta.json`, the files of the segments
/// it names, and Tantivy's list of managed files. A merge finishing meanwhile can delete a
/// segment file between reading the list and the file; the whole read is then retried.
fn text_files(directory: &Path) -> Result<Vec<(String, Vec<u8>)>, IndexError> {
    let mut last_error = None;
    for _ in 0..5 {
        match read_text_files(directory) {
            Ok(files) => return Ok(files),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => last_error = Some(error),
            Err(error) => return Err(io_error(error)),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(io_error(last_error.unwrap_or_else(|| {
        std::io::Error::other("the text index kept changing")
    })))
}

fn read_text_files(directory: &Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let meta = std::fs::read(directory.join("meta.json"))?;
    let parsed: serde_json::Value = serde_json::from_slice(&meta).map_err(std::io::Error::other)?;
    let segments: Vec<String> = parsed["segments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|segment| segment["segment_id"].as_str())
        .map(|id| id.replace('-', ""))
        .collect();
    let mut files = vec![("text/meta.json".to_owned(), meta)];
    if let Ok(managed) = std::fs::read(directory.join(".managed.json")) {
        files.push(("text/.managed.json".to_owned(), managed));
    }
    for entry in std::fs::read_dir(directory)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if segments
            .iter()
            .any(|segment| name.starts_with(segment.as_str()))
        {
            let bytes = std::fs::read(directory.join(&name))?;
            files.push((format!("text/{name}"), bytes));
        }
    }
    Ok(files)
}

/// Writes a packed snapshot's files into `directory`, which must hold no saved index.
/// A snapshot that is damaged or not one writes nothing.
pub(crate) fn unpack(snapshot: &[u8], directory: &Path) -> Result<(), IndexError> {
    let files = unpacked(snapshot)?;
    std::fs::create_dir_all(directory.join("text")).map_err(io_error)?;
    for (name, bytes) in files {
        std::fs::write(directory.join(name), bytes).map_err(io_error)?;
    }
    Ok(())
}

fn unpacked(snapshot: &[u8]) -> Result<Vec<(&str, &[u8])>, IndexError> {
    let damaged = |what: &str| IndexError::Corrupt(format!("index snapshot: {what}"));
    let Some(body_length) = snapshot.len().checked_sub(32) else {
        return Err(damaged("too short"));
    };
    let (body, digest) = snapshot.split_at(body_length);
    if Sha256::digest(body).as_slice() != digest {
        return Err(damaged("its checksum does not match"));
    }
    let mut rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| damaged("not a snapshot"))?;
    let mut take = |count: usize| -> Result<&[u8], IndexError> {
        if rest.len() < count {
            return Err(damaged("truncated"));
        }
        let (head, tail) = rest.split_at(count);
        rest = tail;
        Ok(head)
    };
    let count = u32::from_le_bytes(take(4)?.try_into().unwrap_or_default());
    let mut files = Vec::new();
    for _ in 0..count {
        let name_length = u16::from_le_bytes(take(2)?.try_into().unwrap_or_default());
        let name = std::str::from_utf8(take(usize::from(name_length))?)
            .map_err(|_| damaged("a file name is not UTF-8"))?;
        if !allowed_name(name) {
            return Err(damaged(&format!("unexpected file {name:?}")));
        }
        let length = u64::from_le_bytes(take(8)?.try_into().unwrap_or_default());
        let length = usize::try_from(length).map_err(|_| damaged("a file is too large"))?;
        files.push((name, take(length)?));
    }
    Ok(files)
}

/// A file name a snapshot may hold: the vector files, the key list, or a plain file name
/// in `text/`.
fn allowed_name(name: &str) -> bool {
    let plain = |name: &str| {
        !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
    };
    match name.strip_prefix("text/") {
        Some(file) => plain(file),
        None => matches!(name, "vectors.usearch" | "vectors.json" | KEY_LIST),
    }
}

/// The key list an unpacked snapshot left in `directory`, if any.
pub(crate) fn read_key_list(directory: &Path) -> Option<HashMap<u64, u64>> {
    let bytes = std::fs::read(directory.join(KEY_LIST)).ok()?;
    let keys = bytes
        .chunks_exact(16)
        .map(|entry| {
            let (key, fingerprint) = entry.split_at(8);
            (
                u64::from_le_bytes(key.try_into().unwrap_or_default()),
                u64::from_le_bytes(fingerprint.try_into().unwrap_or_default()),
            )
        })
        .collect();
    Some(keys)
}

fn io_error(error: std::io::Error) -> IndexError {
    IndexError::Io(error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CollectionIndexes, IndexInput, IndexSettings};
    use memvault_storage::EmbeddingModel;

    /// Snapshots in memory, counting what was asked of it.
    #[derive(Debug, Default)]
    struct MemoryShelf {
        kept: Mutex<HashMap<String, Vec<u8>>>,
    }

    impl MemoryShelf {
        fn name(tenant: &TenantId, collection: &CollectionName) -> String {
            format!("{tenant}/{}", snapshot_path(collection))
        }
    }

    impl SnapshotShelf for MemoryShelf {
        fn fetch(
            &self,
            tenant: &TenantId,
            collection: &CollectionName,
        ) -> Result<Option<Vec<u8>>, String> {
            Ok(lock(&self.kept)
                .get(&Self::name(tenant, collection))
                .cloned())
        }
        fn keep(
            &self,
            tenant: &TenantId,
            collection: &CollectionName,
            snapshot: Vec<u8>,
        ) -> Result<(), String> {
            lock(&self.kept).insert(Self::name(tenant, collection), snapshot);
            Ok(())
        }
        fn discard(&self, tenant: &TenantId, collection: &CollectionName) -> Result<(), String> {
            lock(&self.kept).remove(&Self::name(tenant, collection));
            Ok(())
        }
    }

    struct Memory {
        key: u64,
        text: String,
        embedding: Vec<f32>,
    }

    fn memory(key: u64, text: &str) -> Memory {
        // A direction of its own for each key (keys stay below 48), turned a little by
        // the text: a reused key with other text has another vector.
        let mut embedding = vec![0.0_f32; 64];
        embedding[key as usize % 48] = 1.0;
        embedding[48 + (fingerprint(text) % 16) as usize] = 0.6;
        Memory {
            key,
            text: text.to_owned(),
            embedding,
        }
    }

    fn inputs(memories: &[Memory]) -> Vec<IndexInput<'_>> {
        memories
            .iter()
            .map(|memory| IndexInput {
                key: memory.key,
                text: &memory.text,
                embedding: Some(&memory.embedding),
            })
            .collect()
    }

    fn settings(root: &Path, shelf: &Arc<MemoryShelf>) -> IndexSettings {
        IndexSettings {
            root: Some(root.to_owned()),
            model: model(),
            shelf: Some(shelf.clone() as Arc<dyn SnapshotShelf>),
        }
    }

    fn model() -> EmbeddingModel {
        EmbeddingModel::new("test-model", 64)
    }

    fn names() -> (TenantId, CollectionName) {
        (
            TenantId::from_stored("tenant-1"),
            CollectionName::parse("notes").unwrap(),
        )
    }

    fn text_keys(indexes: &CollectionIndexes, query: &str) -> Vec<u64> {
        let mut keys: Vec<u64> = indexes
            .text
            .search(query, 100, Arc::new(|_| true))
            .unwrap()
            .into_iter()
            .map(|hit| hit.key)
            .collect();
        keys.sort_unstable();
        keys
    }

    fn nearest(indexes: &CollectionIndexes, memory: &Memory) -> (u64, f32) {
        let hits = indexes
            .vector
            .search(&memory.embedding, 1, |_| true)
            .unwrap();
        (hits[0].key, hits[0].similarity)
    }

    /// The first node: indexes `memories`, then stops (which keeps a snapshot).
    fn first_owner(shelf: &Arc<MemoryShelf>, memories: &[Memory]) {
        let node = tempfile::tempdir().unwrap();
        let (tenant, collection) = names();
        let indexes = settings(node.path(), shelf)
            .open(&tenant, &collection, &model(), &inputs(memories))
            .unwrap();
        indexes.close().unwrap();
        assert!(shelf.fetch(&tenant, &collection).unwrap().is_some());
    }

    #[test]
    fn a_new_owner_starts_from_the_snapshot_and_indexes_only_what_it_lacks() {
        let shelf = Arc::new(MemoryShelf::default());
        let (tenant, collection) = names();
        let before: Vec<Memory> = (1..=40)
            .map(|key| memory(key, &format!("note number {key} about topic{key}")))
            .collect();
        first_owner(&shelf, &before);

        // Since the snapshot: key 7 deleted, key 41 added, and key 12 (deleted too)
        // handed out again with other text (as a node whose keys came from an older
        // store could), which the snapshot holds with its old text.
        let mut after: Vec<Memory> = before.into_iter().filter(|m| m.key != 7).collect();
        after.retain(|memory| memory.key != 12);
        after.push(memory(12, "reused key with marmalade"));
        after.push(memory(41, "a later note about zeppelins"));

        let node = tempfile::tempdir().unwrap();
        let indexes = settings(node.path(), &shelf)
            .open(&tenant, &collection, &model(), &inputs(&after))
            .unwrap();
        assert!(
            !node.path().join("tenant-1/notes").join(KEY_LIST).exists(),
            "the key list is consumed by opening"
        );
        let shelving = indexes.shelving.as_ref().unwrap();
        assert_eq!(
            shelving.changed.load(Ordering::Relaxed),
            2,
            "only key 12 (other text) and key 41 (new) are indexed again"
        );
        assert_eq!(text_keys(&indexes, "zeppelins"), vec![41]);
        assert_eq!(text_keys(&indexes, "marmalade"), vec![12]);
        assert_eq!(text_keys(&indexes, "topic12"), Vec::<u64>::new());
        assert_eq!(text_keys(&indexes, "topic3"), vec![3]);
        for memory in &after {
            let (key, score) = nearest(&indexes, memory);
            assert_eq!(key, memory.key, "{}", memory.text);
            assert!(score > 0.99, "{}: {score}", memory.text);
        }
        assert!(indexes.highest_key() >= 41);
    }

    #[test]
    fn a_snapshot_of_another_collection_or_no_snapshot_still_indexes_everything() {
        let shelf = Arc::new(MemoryShelf::default());
        let (tenant, collection) = names();
        // A deleted collection of the same name left its snapshot behind.
        let old: Vec<Memory> = (1..=30)
            .map(|key| memory(key, &format!("old {key} kiwi")))
            .collect();
        first_owner(&shelf, &old);
        let new: Vec<Memory> = (1..=5)
            .map(|key| memory(key, &format!("new {key} plum")))
            .collect();
        let node = tempfile::tempdir().unwrap();
        let indexes = settings(node.path(), &shelf)
            .open(&tenant, &collection, &model(), &inputs(&new))
            .unwrap();
        assert_eq!(text_keys(&indexes, "plum"), vec![1, 2, 3, 4, 5]);
        for memory in &new {
            assert_eq!(nearest(&indexes, memory).0, memory.key);
        }
        // Keys the old snapshot holds are never handed out again.
        assert!(indexes.highest_key() >= 30);

        settings(node.path(), &shelf).destroy(&tenant, &collection);
        assert!(shelf.fetch(&tenant, &collection).unwrap().is_none());
        assert!(!node.path().join("tenant-1/notes").exists());
    }

    #[test]
    fn a_damaged_snapshot_is_refused_whole_and_the_indexes_are_rebuilt() {
        let shelf = Arc::new(MemoryShelf::default());
        let (tenant, collection) = names();
        let memories: Vec<Memory> = (1..=20)
            .map(|key| memory(key, &format!("entry {key} walnut")))
            .collect();
        first_owner(&shelf, &memories);
        let name = MemoryShelf::name(&tenant, &collection);
        {
            let mut kept = lock(&shelf.kept);
            let packed = kept.get_mut(&name).unwrap();
            let middle = packed.len() / 2;
            packed[middle] ^= 0xff;
        }
        let packed = shelf.fetch(&tenant, &collection).unwrap().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        assert!(matches!(
            unpack(&packed, scratch.path()),
            Err(IndexError::Corrupt(_))
        ));
        assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);

        let node = tempfile::tempdir().unwrap();
        let indexes = settings(node.path(), &shelf)
            .open(&tenant, &collection, &model(), &inputs(&memories))
            .unwrap();
        assert_eq!(text_keys(&indexes, "walnut").len(), 20);
        assert_eq!(indexes.vector.len(), 20);
    }

    #[test]
    fn only_the_index_files_may_be_in_a_snapshot() {
        for name in [
            "vectors.usearch",
            "vectors.json",
            KEY_LIST,
            "text/meta.json",
        ] {
            assert!(allowed_name(name), "{name}");
        }
        for name in [
            "../x",
            "text/../x",
            "text/a/b",
            "/etc/passwd",
            "text/",
            "other",
            "text/..",
        ] {
            assert!(!allowed_name(name), "{name}");
        }
        let mut packed = MAGIC.to_vec();
        packed.extend_from_slice(&1_u32.to_le_bytes());
        let name = b"../escape";
        packed.extend_from_slice(&(name.len() as u16).to_le_bytes());
        packed.extend_from_slice(name);
        packed.extend_from_slice(&1_u64.to_le_bytes());
        packed.push(b'x');
        let digest = Sha256::digest(&packed);
        packed.extend_from_slice(&digest);
        let scratch = tempfile::tempdir().unwrap();
        assert!(unpack(&packed, &scratch.path().join("d")).is_err());
        assert!(!scratch.path().join("escape").exists());
    }

    #[test]
    fn snapshots_are_due_after_enough_changes_and_not_while_one_uploads() {
        let shelf = Arc::new(MemoryShelf::default());
        let (tenant, collection) = names();
        let shelving = Shelving::new(shelf, tenant, collection);
        shelving.fill((0..10).map(|key| (key, key)), 10);
        assert!(!shelving.due());
        for key in 10..SHELVE_AFTER_CHANGES as u64 {
            shelving.added(key, key);
        }
        assert!(shelving.due());
        let directory = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(directory.path().join("text")).unwrap();
        // No text commit yet: no meta.json to pack.
        assert!(shelving.shelve(directory.path(), true).is_err());
        assert!(shelving.due(), "a failed pack keeps its changes");
    }

    /// Inputs without their embedding: opening reads (through `fetch`) the embeddings of
    /// exactly the memories the saved vector index lacks, all of them on a first build,
    /// none when it is current; a fetch that fails fails the open.
    #[test]
    fn opening_without_embeddings_reads_only_the_vectors_the_index_lacks() {
        let directory = tempfile::tempdir().unwrap();
        let (tenant, collection) = names();
        let settings = IndexSettings {
            root: Some(directory.path().to_owned()),
            model: model(),
            shelf: None,
        };
        fn bare(memories: &[Memory]) -> Vec<IndexInput<'_>> {
            memories
                .iter()
                .map(|memory| IndexInput {
                    key: memory.key,
                    text: &memory.text,
                    embedding: None,
                })
                .collect()
        }
        let open = |memories: &[Memory]| {
            let asked = Mutex::new(Vec::new());
            let fetch = |positions: &[usize]| -> Result<Vec<Vec<f32>>, String> {
                lock(&asked).extend(positions.iter().map(|position| memories[*position].key));
                Ok(positions
                    .iter()
                    .map(|position| memories[*position].embedding.clone())
                    .collect())
            };
            let indexes = settings
                .open_with(&tenant, &collection, &model(), &bare(memories), &fetch)
                .unwrap();
            indexes.close().unwrap();
            let mut asked = asked.into_inner().unwrap();
            asked.sort_unstable();
            (indexes, asked)
        };
        let mut memories: Vec<Memory> = (1..=30)
            .map(|key| memory(key, &format!("note number {key} about topic{key}")))
            .collect();
        let (_, asked) = open(&memories);
        assert_eq!(
            asked,
            (1..=30).collect::<Vec<u64>>(),
            "a first build reads every one"
        );
        let (_, asked) = open(&memories);
        assert!(asked.is_empty(), "a current index reads none: {asked:?}");
        memories.extend((31..=35).map(|key| memory(key, &format!("a later note {key}"))));
        let (indexes, asked) = open(&memories);
        assert_eq!(asked, (31..=35).collect::<Vec<u64>>(), "only what it lacks");
        assert_eq!(nearest(&indexes, &memories[32]).0, 33);
        assert_eq!(
            text_keys(&indexes, "later"),
            (31..=35).collect::<Vec<u64>>()
        );

        memories.push(memory(36, "one more"));
        let failing =
            |_: &[usize]| -> Result<Vec<Vec<f32>>, String> { Err("store down".to_owned()) };
        let error = settings
            .open_with(&tenant, &collection, &model(), &bare(&memories), &failing)
            .err()
            .expect("a failed read fails the open");
        assert!(error.to_string().contains("store down"), "{error}");
    }
}
