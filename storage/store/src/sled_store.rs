//! The embedded default: one sled database.
//!
//! Four trees. `tenants` maps a tenant id to its record. `outbox` holds the webhook
//! deliveries not yet delivered under `{tenant}/{delivery}` (a tree of its own, so that
//! loading every pending delivery at start-up scans only those; a tenant's are found by
//! its prefix). `account` holds the outgoing mail queue under `mail/{id}`, the
//! one-time reveal links under `reveal/{token hash}`, the dashboard's sessions under
//! `session/{id hash}`, the handled outside events
//! under `event/{source}/{id}`, and the mail-in addresses under `email/{local part hash}`
//! (the lookup of inbound mail) and `email-of/{tenant}` (the tenant's own), both written
//! in one transaction (none is reached through a tenant prefix: a reveal link is
//! found by its token alone, an event by its id, an address by its hash). `data` holds everything else under keys that start with the tenant id, so
//! that no key of one tenant can be read through another's prefix:
//!
//! ```text
//! {tenant}/k/{key_id}                 API key record (JSON)
//! {tenant}/c/{collection}             collection record (JSON)
//! {tenant}/m/{collection}/{memory}    memory record (JSON)
//! {tenant}/v/{collection}/{memory}    its embedding, f32 LE (apart from the record, so
//!                                     reading every record at start reads no vector)
//! {tenant}/s                          tenant settings (JSON)
//! {tenant}/u/{month}/{purpose}/{own}/{model}  LLM usage row (JSON)
//! {tenant}/j/{job}                    extraction job (JSON)
//! {tenant}/q/{job}                    present while the job is unfinished (empty value)
//! {tenant}/b/{batch}                  ingest batch with its items (JSON)
//! {tenant}/bq/{batch}                 present while the batch is unfinished (empty value)
//! {tenant}/i/{import}                 asynchronous import's progress (JSON)
//! {tenant}/ip/{import}                its items while unfinished (JSON)
//! {tenant}/iq/{import}                present while the import is unfinished (empty value)
//! {tenant}/n/{connection}            managed connection (JSON; credentials sealed)
//! {tenant}/nr/{connection}/{run}      sync run (JSON); ids are UUID v7, so by time
//! {tenant}/ns/{connection}/{record}   a provider record the connection stored (JSON)
//! {tenant}/a/{entry}                  audit entry (JSON); ids are UUID v7, so by time
//! {tenant}/e/{collection}/h           the model of a staged re-embedding (JSON)
//! {tenant}/e/{collection}/v/{key}     a staged vector: the memory's index key as 20
//!                                     digits, so by key; u32 LE id length, id, f32 LE
//! ```
//!
//! Data dirs written before the split kept a memory's record and embedding in one value
//! (u32 LE length of the JSON, the JSON, the embedding); [`SledStore::open`] splits them
//! once, in batches that each leave every memory either old or new, and then records the
//! format (`FORMAT_KEY` in the default tree), so an interrupted split resumes.
//!
//! A collection, its memories and its staged re-embedding live in one tree, so deleting a
//! collection, moving a memory or switching a collection to its new vectors is one atomic
//! batch. Every write ends with `flush`, which hands sled's log to
//! the operating system and waits for it: an acknowledged write survives a process crash.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;
use sled::{Batch, Db, Tree};

use crate::error::{Result, StorageError};
use crate::records::{
    ApiKeyRecord, AuditEntry, CollectionName, CollectionRecord, ConnectionRecord,
    EmailAddressRecord, EmbeddingModel, ExtractJobRecord, ImportJobRecord, ImportPayload,
    IngestBatchRecord, MailRecord, MemoryRecord, OAuthStateRecord, OutboxDelivery, RevealRecord,
    SessionRecord, StagedEmbedding, StoredMemory, SyncRunRecord, SyncedRecord, TenantId,
    TenantRecord, TenantSettings, UsageRow,
};
use crate::store::{
    AccountStore, AuditStore, ConnectorStore, ImportStore, IngestStore, JobStore, MemoryStore,
    MetaStore, OutboxStore, ReembedStore, SessionStore,
};

pub struct SledStore {
    db: Db,
    /// Tenant records by id; scanned once at start-up to spawn the tenant actors.
    tenants: Tree,
    /// Every per-tenant record, under tenant-prefixed keys (see the module docs).
    data: Tree,
    /// Webhook deliveries not yet delivered, under `{tenant}/{delivery}`.
    outbox: Tree,
    /// The mail queue and the reveal links (see the module docs).
    account: Tree,
}

/// How long [`open_db`] waits for the data dir's lock before giving up.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Opens the sled database in `directory`. Dropping a `Db` does not release its file
/// lock at once: sled's background writes hold the file until they finish. So a store
/// opened again in the same process right after the last one was dropped (a test, an
/// in-process restart) may find the lock still held for a moment; the open is retried
/// until [`LOCK_WAIT`] has passed. Another live process holding the dir still fails,
/// with sled's own error.
fn open_db(directory: &Path) -> Result<Db> {
    let started = std::time::Instant::now();
    loop {
        let opened = sled::Config::new()
            .path(directory)
            .cache_capacity(64 * 1024 * 1024)
            .open();
        match opened {
            Err(sled::Error::Io(error))
                if error.to_string().contains("could not acquire lock")
                    && started.elapsed() < LOCK_WAIT =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            opened => return Ok(opened?),
        }
    }
}

impl SledStore {
    pub fn open(directory: &Path) -> Result<Self> {
        let db = open_db(directory)?;
        let tenants = db.open_tree("tenants")?;
        let data = db.open_tree("data")?;
        let outbox = db.open_tree("outbox")?;
        let account = db.open_tree("account")?;
        let store = Self {
            db,
            tenants,
            data,
            outbox,
            account,
        };
        store.split_memories()?;
        Ok(store)
    }

    /// Splits the memories of a data dir written before records and embeddings were kept
    /// apart (see the module docs); nothing to do once the format is recorded. A memory
    /// whose embedding key exists is split already (both halves are written in one batch),
    /// so a split cut short resumes where it stopped.
    fn split_memories(&self) -> Result<()> {
        if self.db.get(FORMAT_KEY)?.as_deref() == Some(FORMAT) {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let mut split = 0_usize;
        let mut batch = Batch::default();
        let mut in_batch = 0;
        for entry in self.data.iter() {
            let (key, value) = entry?;
            let Some(vector_key) = vector_key_of(&key) else {
                continue;
            };
            if self.data.contains_key(&vector_key)? {
                continue;
            }
            let (json, vector_bytes) = split_memory(&key, &value)?;
            batch.insert(key.to_vec(), json.to_vec());
            batch.insert(vector_key, vector_bytes.to_vec());
            in_batch += 1;
            if in_batch == SPLIT_BATCH {
                self.data.apply_batch(std::mem::take(&mut batch))?;
                split += in_batch;
                in_batch = 0;
            }
        }
        self.data.apply_batch(batch)?;
        split += in_batch;
        self.db.insert(FORMAT_KEY, FORMAT)?;
        self.flush()?;
        if split > 0 {
            tracing::info!(
                memories = split,
                seconds = started.elapsed().as_secs_f64(),
                "memory records and embeddings stored apart"
            );
        }
        Ok(())
    }

    /// Bytes the whole database takes on disk.
    pub fn size_on_disk(&self) -> Result<u64> {
        Ok(self.db.size_on_disk()?)
    }

    /// Stores one JSON record under `key` in `tree`, durable on return.
    fn put_json(&self, tree: &Tree, key: impl AsRef<[u8]>, value: &impl Serialize) -> Result<()> {
        tree.insert(key.as_ref(), serde_json::to_vec(value)?)?;
        self.flush()
    }

    /// Every record of every tenant whose id has a marker under `{tenant}/{queue}/` (the
    /// unfinished ones), loaded by `load`; markers whose record is gone are skipped.
    fn queued<T>(
        &self,
        queue: &str,
        load: impl Fn(&TenantId, &str) -> Result<Option<T>>,
    ) -> Result<Vec<T>> {
        let mut found = Vec::new();
        for tenant in self.tenants()? {
            let prefix = format!("{}/{queue}/", tenant.id);
            for entry in self.data.scan_prefix(&prefix) {
                let (key, _) = entry?;
                let id = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
                found.extend(load(&tenant.id, &id)?);
            }
        }
        Ok(found)
    }

    /// Writes a record and its queue marker in one batch, durable on return: the marker
    /// (an empty value under `marker`) while the record is unfinished, none once it is
    /// finished, so [`Self::queued`] finds exactly the unfinished ones after a crash.
    fn put_marked(
        &self,
        key: &str,
        marker: &str,
        record: &impl Serialize,
        finished: bool,
    ) -> Result<()> {
        let mut writes = Batch::default();
        writes.insert(key.as_bytes(), serde_json::to_vec(record)?);
        if finished {
            writes.remove(marker.as_bytes());
        } else {
            writes.insert(marker.as_bytes(), &[]);
        }
        self.data.apply_batch(writes)?;
        self.flush()
    }

    /// Every tenant's records under `{tenant}/{segment}/` in the data tree, tenant by
    /// tenant in key order.
    fn across_tenants<T: DeserializeOwned>(&self, segment: &str) -> Result<Vec<T>> {
        let mut found = Vec::new();
        for tenant in self.tenants()? {
            found.extend(scan_json(&self.data, format!("{}/{segment}/", tenant.id))?);
        }
        Ok(found)
    }

    /// Removes the records under `prefixes` in `tree` that `doomed` picks, in one batch,
    /// durable on return; how many.
    fn remove_where<T: DeserializeOwned>(
        &self,
        tree: &Tree,
        prefixes: impl IntoIterator<Item = String>,
        doomed: impl Fn(&T) -> bool,
    ) -> Result<usize> {
        let mut batch = Batch::default();
        let mut removed = 0;
        for prefix in prefixes {
            for entry in tree.scan_prefix(prefix) {
                let (key, value) = entry?;
                if doomed(&decode_json::<T>(&key, &value)?) {
                    batch.remove(key);
                    removed += 1;
                }
            }
        }
        if removed > 0 {
            tree.apply_batch(batch)?;
            self.flush()?;
        }
        Ok(removed)
    }

    /// `{tenant}/{segment}/` for every tenant.
    fn tenant_prefixes(&self, segment: &str) -> Result<Vec<String>> {
        Ok(self
            .tenants()?
            .into_iter()
            .map(|tenant| format!("{}/{segment}/", tenant.id))
            .collect())
    }

    fn flush(&self) -> Result<()> {
        self.db.flush()?;
        Ok(())
    }
}

fn key_record_key(tenant: &TenantId, key_id: &str) -> String {
    format!("{tenant}/k/{key_id}")
}

fn collection_key(tenant: &TenantId, name: &CollectionName) -> String {
    format!("{tenant}/c/{name}")
}

fn memories_prefix(tenant: &TenantId, collection: &CollectionName) -> String {
    format!("{tenant}/m/{collection}/")
}

fn memory_key(tenant: &TenantId, collection: &CollectionName, id: &str) -> String {
    format!("{tenant}/m/{collection}/{id}")
}

fn vectors_prefix(tenant: &TenantId, collection: &CollectionName) -> String {
    format!("{tenant}/v/{collection}/")
}

fn vector_key(tenant: &TenantId, collection: &CollectionName, id: &str) -> String {
    format!("{tenant}/v/{collection}/{id}")
}

/// The embedding's key of a memory's record key (`{tenant}/m/...` → `{tenant}/v/...`);
/// `None` for a key of another family.
fn vector_key_of(record_key: &[u8]) -> Option<Vec<u8>> {
    let slash = record_key.iter().position(|&byte| byte == b'/')?;
    let family = record_key.get(slash + 1..slash + 3)?;
    (family == b"m/").then(|| {
        let mut key = record_key.to_vec();
        key[slash + 1] = b'v';
        key
    })
}

/// The default tree's key of the data format; absent in a data dir written before
/// memories' embeddings were kept apart from their records.
const FORMAT_KEY: &str = "format";
/// Records and embeddings apart.
const FORMAT: &[u8] = b"2";
/// Memories split per batch when an older data dir is opened.
const SPLIT_BATCH: usize = 10_000;

fn staged_prefix(tenant: &TenantId, collection: &CollectionName) -> String {
    format!("{tenant}/e/{collection}/")
}

fn staged_header_key(tenant: &TenantId, collection: &CollectionName) -> String {
    format!("{tenant}/e/{collection}/h")
}

fn staged_vectors_prefix(tenant: &TenantId, collection: &CollectionName) -> String {
    format!("{tenant}/e/{collection}/v/")
}

fn staged_vector_key(tenant: &TenantId, collection: &CollectionName, key: u64) -> String {
    format!("{tenant}/e/{collection}/v/{key:020}")
}

/// The key families (`{tenant}/{family}/...`) of a tenant's data records: collections,
/// memories and their embeddings, staged embeddings, extraction jobs and their queue, ingest batches and
/// their queue, imports, their payloads and their queue.
const DATA_FAMILIES: [&str; 11] = ["c", "m", "v", "e", "j", "q", "b", "bq", "i", "ip", "iq"];

fn settings_key(tenant: &TenantId) -> String {
    format!("{tenant}/s")
}

fn usage_key(tenant: &TenantId, row: &UsageRow) -> String {
    let own = if row.own_llm { "own" } else { "platform" };
    format!(
        "{tenant}/u/{}/{}/{own}/{}",
        row.month, row.purpose, row.model
    )
}

fn job_key(tenant: &TenantId, id: &str) -> String {
    format!("{tenant}/j/{id}")
}

fn queue_key(tenant: &TenantId, id: &str) -> String {
    format!("{tenant}/q/{id}")
}

fn batch_key(tenant: &TenantId, id: &str) -> String {
    format!("{tenant}/b/{id}")
}

fn batch_queue_key(tenant: &TenantId, id: &str) -> String {
    format!("{tenant}/bq/{id}")
}

fn delivery_key(tenant: &TenantId, id: &str) -> String {
    format!("{tenant}/{id}")
}

fn audit_prefix(tenant: &TenantId) -> String {
    format!("{tenant}/a/")
}

/// The JSON record under `key` in `tree`, if any.
fn get_json<T: DeserializeOwned>(tree: &Tree, key: &str) -> Result<Option<T>> {
    tree.get(key.as_bytes())?
        .map(|value| decode_json(key.as_bytes(), &value))
        .transpose()
}

/// Every JSON record under `prefix` in `tree`, in key order.
fn scan_json<T: DeserializeOwned>(tree: &Tree, prefix: impl AsRef<[u8]>) -> Result<Vec<T>> {
    tree.scan_prefix(prefix)
        .map(|entry| {
            let (key, value) = entry?;
            decode_json(&key, &value)
        })
        .collect()
}

fn decode_json<T: DeserializeOwned>(key: &[u8], value: &[u8]) -> Result<T> {
    serde_json::from_slice(value).map_err(|error| StorageError::Corrupt {
        key: String::from_utf8_lossy(key).into_owned(),
        reason: error.to_string(),
    })
}

fn encode_embedding(embedding: &[f32]) -> Vec<u8> {
    embedding
        .iter()
        .flat_map(|component| component.to_le_bytes())
        .collect()
}

/// Adds a memory's record and embedding to `batch`.
fn insert_memory(
    batch: &mut Batch,
    tenant: &TenantId,
    collection: &CollectionName,
    memory: &StoredMemory,
) -> Result<()> {
    let id = &memory.record.id;
    batch.insert(
        memory_key(tenant, collection, id).as_bytes(),
        serde_json::to_vec(&memory.record)?,
    );
    batch.insert(
        vector_key(tenant, collection, id).as_bytes(),
        encode_embedding(&memory.embedding),
    );
    Ok(())
}

/// Adds the removal of a memory's record and embedding to `batch`.
fn remove_memory(batch: &mut Batch, tenant: &TenantId, collection: &CollectionName, id: &str) {
    batch.remove(memory_key(tenant, collection, id).as_bytes());
    batch.remove(vector_key(tenant, collection, id).as_bytes());
}

/// An embedding's value, checked.
fn decode_embedding_value(key: &[u8], value: &[u8]) -> Result<Vec<f32>> {
    if !value.len().is_multiple_of(4) {
        return Err(StorageError::Corrupt {
            key: String::from_utf8_lossy(key).into_owned(),
            reason: "embedding length is not a multiple of 4".to_owned(),
        });
    }
    Ok(decode_embedding(value))
}

/// A memory written before the split, as (record JSON, embedding bytes), checked.
fn split_memory<'a>(key: &[u8], value: &'a [u8]) -> Result<(&'a [u8], &'a [u8])> {
    let corrupt = |reason: &str| StorageError::Corrupt {
        key: String::from_utf8_lossy(key).into_owned(),
        reason: reason.to_owned(),
    };
    let header: [u8; 4] = value
        .get(..4)
        .and_then(|slice| slice.try_into().ok())
        .ok_or_else(|| corrupt("value shorter than its header"))?;
    let json_end = 4 + u32::from_le_bytes(header) as usize;
    let json = value
        .get(4..json_end)
        .ok_or_else(|| corrupt("value shorter than its record"))?;
    let vector_bytes = &value[json_end..];
    if !vector_bytes.len().is_multiple_of(4) {
        return Err(corrupt("embedding length is not a multiple of 4"));
    }
    Ok((json, vector_bytes))
}

fn decode_embedding(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
        .collect()
}

fn encode_staged(staged: &StagedEmbedding) -> Result<Vec<u8>> {
    let id_len = u32::try_from(staged.id.len()).map_err(|_| StorageError::Corrupt {
        key: staged.id.clone(),
        reason: "memory id longer than 4 GiB".to_owned(),
    })?;
    let mut bytes = Vec::with_capacity(4 + staged.id.len() + staged.embedding.len() * 4);
    bytes.extend_from_slice(&id_len.to_le_bytes());
    bytes.extend_from_slice(staged.id.as_bytes());
    for component in &staged.embedding {
        bytes.extend_from_slice(&component.to_le_bytes());
    }
    Ok(bytes)
}

fn decode_staged(key: &[u8], value: &[u8]) -> Result<StagedEmbedding> {
    let corrupt = |reason: &str| StorageError::Corrupt {
        key: String::from_utf8_lossy(key).into_owned(),
        reason: reason.to_owned(),
    };
    let index_key = std::str::from_utf8(key)
        .ok()
        .and_then(|key| key.rsplit('/').next())
        .and_then(|digits| digits.parse::<u64>().ok())
        .ok_or_else(|| corrupt("key does not end in an index key"))?;
    let header: [u8; 4] = value
        .get(..4)
        .and_then(|slice| slice.try_into().ok())
        .ok_or_else(|| corrupt("value shorter than its header"))?;
    let id_end = 4 + u32::from_le_bytes(header) as usize;
    let id = value
        .get(4..id_end)
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .ok_or_else(|| corrupt("value shorter than its id, or the id is not UTF-8"))?;
    let vector_bytes = &value[id_end..];
    if !vector_bytes.len().is_multiple_of(4) {
        return Err(corrupt("embedding length is not a multiple of 4"));
    }
    Ok(StagedEmbedding {
        key: index_key,
        id: id.to_owned(),
        embedding: vector_bytes
            .chunks_exact(4)
            .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
            .collect(),
    })
}

fn missing_embedding(record_key: &[u8]) -> StorageError {
    StorageError::Corrupt {
        key: String::from_utf8_lossy(record_key).into_owned(),
        reason: "the memory's embedding is missing".to_owned(),
    }
}

impl SledStore {
    /// A memory from its record's key and value, with its embedding read beside it.
    fn with_embedding(&self, key: impl AsRef<[u8]>, value: &[u8]) -> Result<StoredMemory> {
        let key = key.as_ref();
        let record: MemoryRecord = decode_json(key, value)?;
        let vector_key = vector_key_of(key).ok_or_else(|| missing_embedding(key))?;
        let vector = self
            .data
            .get(&vector_key)?
            .ok_or_else(|| missing_embedding(key))?;
        Ok(StoredMemory {
            record,
            embedding: decode_embedding_value(&vector_key, &vector)?,
        })
    }

    /// Adds the removal of every staged re-embedding entry of a collection to `batch`.
    fn unstage(
        &self,
        batch: &mut Batch,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<()> {
        for entry in self.data.scan_prefix(staged_prefix(tenant, collection)) {
            let (key, _) = entry?;
            batch.remove(key);
        }
        Ok(())
    }
}

impl MetaStore for SledStore {
    fn put_tenant(&self, tenant: &TenantRecord) -> Result<()> {
        self.put_json(&self.tenants, tenant.id.as_str(), tenant)
    }

    fn tenants(&self) -> Result<Vec<TenantRecord>> {
        self.tenants
            .iter()
            .map(|entry| {
                let (key, value) = entry?;
                decode_json(&key, &value)
            })
            .collect()
    }

    fn put_api_key(&self, key: &ApiKeyRecord) -> Result<()> {
        self.put_json(&self.data, key_record_key(&key.tenant_id, &key.id), key)
    }

    fn api_keys(&self, tenant: &TenantId) -> Result<Vec<ApiKeyRecord>> {
        scan_json(&self.data, format!("{tenant}/k/"))
    }

    fn put_collection(&self, tenant: &TenantId, collection: &CollectionRecord) -> Result<()> {
        self.put_json(
            &self.data,
            collection_key(tenant, &collection.name),
            collection,
        )
    }

    fn collections(&self, tenant: &TenantId) -> Result<Vec<CollectionRecord>> {
        scan_json(&self.data, format!("{tenant}/c/"))
    }

    fn delete_collection(&self, tenant: &TenantId, name: &CollectionName) -> Result<()> {
        let mut batch = Batch::default();
        let records = self.data.scan_prefix(memories_prefix(tenant, name));
        for entry in records.chain(self.data.scan_prefix(vectors_prefix(tenant, name))) {
            let (key, _) = entry?;
            batch.remove(key);
        }
        batch.remove(collection_key(tenant, name).as_bytes());
        self.unstage(&mut batch, tenant, name)?;
        self.data.apply_batch(batch)?;
        self.flush()
    }

    fn purge_tenant(&self, tenant: &TenantId, max_records: usize) -> Result<usize> {
        let prefix = format!("{tenant}/");
        let mut removed = 0;
        for tree in [&self.data, &self.outbox] {
            let mut batch = Batch::default();
            let mut in_batch = 0;
            for entry in tree.scan_prefix(&prefix).take(max_records - removed) {
                let (key, _) = entry?;
                batch.remove(key);
                in_batch += 1;
            }
            if in_batch > 0 {
                tree.apply_batch(batch)?;
                removed += in_batch;
            }
            if removed == max_records {
                break;
            }
        }
        if removed > 0 {
            self.flush()?;
        }
        Ok(removed)
    }

    fn purge_tenant_data(&self, tenant: &TenantId, max_records: usize) -> Result<usize> {
        let mut batch = Batch::default();
        let mut removed = 0;
        'families: for family in DATA_FAMILIES {
            for entry in self.data.scan_prefix(format!("{tenant}/{family}/")) {
                if removed == max_records {
                    break 'families;
                }
                let (key, _) = entry?;
                batch.remove(key);
                removed += 1;
            }
        }
        if removed > 0 {
            self.data.apply_batch(batch)?;
            self.flush()?;
        }
        Ok(removed)
    }

    fn delete_tenant(&self, tenant: &TenantId) -> Result<()> {
        self.tenants.remove(tenant.as_str())?;
        self.flush()
    }

    fn tenant_bytes(&self, tenant: &TenantId) -> Result<u64> {
        let mut total = 0_u64;
        for entry in self.data.scan_prefix(format!("{tenant}/")) {
            let (key, value) = entry?;
            total += (key.len() + value.len()) as u64;
        }
        Ok(total)
    }

    fn put_tenant_settings(&self, tenant: &TenantId, settings: &TenantSettings) -> Result<()> {
        self.put_json(&self.data, settings_key(tenant), settings)
    }

    fn tenant_settings(&self, tenant: &TenantId) -> Result<TenantSettings> {
        Ok(get_json(&self.data, &settings_key(tenant))?.unwrap_or_default())
    }

    fn add_usage(&self, tenant: &TenantId, delta: &UsageRow) -> Result<()> {
        let key = usage_key(tenant, delta);
        let mut failure = None;
        // sled retries the closure on a concurrent change, so the add is atomic.
        self.data.update_and_fetch(key.as_bytes(), |old| {
            let mut row = match old.map(|bytes| decode_json::<UsageRow>(key.as_bytes(), bytes)) {
                Some(Ok(row)) => row,
                Some(Err(error)) => {
                    failure = Some(error);
                    return old.map(<[u8]>::to_vec);
                }
                None => UsageRow {
                    calls: 0,
                    prompt_tokens: 0,
                    completion_tokens: 0,
                    cost_usd: 0.0,
                    ..delta.clone()
                },
            };
            row.calls += delta.calls;
            row.prompt_tokens += delta.prompt_tokens;
            row.completion_tokens += delta.completion_tokens;
            row.cost_usd += delta.cost_usd;
            serde_json::to_vec(&row).ok()
        })?;
        if let Some(error) = failure {
            return Err(error);
        }
        self.flush()
    }

    fn usage(&self, tenant: &TenantId, month: &str) -> Result<Vec<UsageRow>> {
        scan_json(&self.data, format!("{tenant}/u/{month}/"))
    }
}

impl JobStore for SledStore {
    fn put_job(&self, job: &ExtractJobRecord) -> Result<()> {
        self.put_marked(
            &job_key(&job.tenant_id, &job.id),
            &queue_key(&job.tenant_id, &job.id),
            job,
            job.state.is_finished(),
        )
    }

    fn job(&self, tenant: &TenantId, id: &str) -> Result<Option<ExtractJobRecord>> {
        get_json(&self.data, &job_key(tenant, id))
    }

    fn unfinished_jobs(&self) -> Result<Vec<ExtractJobRecord>> {
        let mut jobs = self.queued("q", |tenant, id| self.job(tenant, id))?;
        jobs.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(jobs)
    }

    fn jobs_of(&self, tenant: &TenantId) -> Result<Vec<ExtractJobRecord>> {
        scan_json(&self.data, format!("{tenant}/j/"))
    }

    fn prune_jobs(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize> {
        self.remove_where(
            &self.data,
            self.tenant_prefixes("j")?,
            |job: &ExtractJobRecord| job.state.is_finished() && job.updated_at < before,
        )
    }
}

impl IngestStore for SledStore {
    fn put_batch(&self, batch: &IngestBatchRecord) -> Result<()> {
        self.put_marked(
            &batch_key(&batch.tenant_id, &batch.id),
            &batch_queue_key(&batch.tenant_id, &batch.id),
            batch,
            batch.is_finished(),
        )
    }

    fn batch(&self, tenant: &TenantId, id: &str) -> Result<Option<IngestBatchRecord>> {
        get_json(&self.data, &batch_key(tenant, id))
    }

    fn unfinished_batches(&self) -> Result<Vec<IngestBatchRecord>> {
        let mut batches = self.queued("bq", |tenant, id| self.batch(tenant, id))?;
        batches.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(batches)
    }

    fn batches_of(&self, tenant: &TenantId) -> Result<Vec<IngestBatchRecord>> {
        scan_json(&self.data, format!("{tenant}/b/"))
    }

    fn prune_batches(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize> {
        self.remove_where(
            &self.data,
            self.tenant_prefixes("b")?,
            |batch: &IngestBatchRecord| batch.is_finished() && batch.updated_at < before,
        )
    }
}

fn connection_key(tenant: &TenantId, id: &str) -> String {
    format!("{tenant}/n/{id}")
}

fn runs_prefix(tenant: &TenantId, connection: &str) -> String {
    format!("{tenant}/nr/{connection}/")
}

fn synced_prefix(tenant: &TenantId, connection: &str) -> String {
    format!("{tenant}/ns/{connection}/")
}

fn oauth_key(state_hash: &str) -> String {
    format!("oauth/{state_hash}")
}

impl ConnectorStore for SledStore {
    fn put_connection(&self, connection: &ConnectionRecord) -> Result<()> {
        self.put_json(
            &self.data,
            connection_key(&connection.tenant_id, &connection.id),
            connection,
        )
    }

    fn connection(&self, tenant: &TenantId, id: &str) -> Result<Option<ConnectionRecord>> {
        get_json(&self.data, &connection_key(tenant, id))
    }

    fn connections(&self, tenant: &TenantId) -> Result<Vec<ConnectionRecord>> {
        let mut found: Vec<ConnectionRecord> = scan_json(&self.data, format!("{tenant}/n/"))?;
        found.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(found)
    }

    fn all_connections(&self) -> Result<Vec<ConnectionRecord>> {
        let mut found = Vec::new();
        for tenant in self.tenants()? {
            found.extend(self.connections(&tenant.id)?);
        }
        Ok(found)
    }

    fn delete_connection(&self, tenant: &TenantId, id: &str) -> Result<bool> {
        let key = connection_key(tenant, id);
        if self.data.get(key.as_bytes())?.is_none() {
            return Ok(false);
        }
        let mut batch = Batch::default();
        batch.remove(key.as_bytes());
        for prefix in [runs_prefix(tenant, id), synced_prefix(tenant, id)] {
            for entry in self.data.scan_prefix(prefix) {
                let (key, _) = entry?;
                batch.remove(key);
            }
        }
        self.data.apply_batch(batch)?;
        self.flush()?;
        Ok(true)
    }

    fn put_run(&self, run: &SyncRunRecord) -> Result<()> {
        let key = format!(
            "{}{}",
            runs_prefix(&run.tenant_id, &run.connection_id),
            run.id
        );
        self.put_json(&self.data, key, run)
    }

    fn runs(
        &self,
        tenant: &TenantId,
        connection: &str,
        limit: usize,
    ) -> Result<Vec<SyncRunRecord>> {
        let mut found = Vec::new();
        for entry in self
            .data
            .scan_prefix(runs_prefix(tenant, connection))
            .rev()
            .take(limit)
        {
            let (key, value) = entry?;
            found.push(decode_json(&key, &value)?);
        }
        Ok(found)
    }

    fn runs_since(&self, since: chrono::DateTime<chrono::Utc>) -> Result<Vec<SyncRunRecord>> {
        let mut found: Vec<SyncRunRecord> = self.across_tenants("nr")?;
        found.retain(|run| run.created_at >= since);
        found.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(found)
    }

    fn trim_runs(&self, tenant: &TenantId, connection: &str, keep: usize) -> Result<usize> {
        let mut batch = Batch::default();
        let mut removed = 0;
        for entry in self
            .data
            .scan_prefix(runs_prefix(tenant, connection))
            .rev()
            .skip(keep)
        {
            let (key, _) = entry?;
            batch.remove(key);
            removed += 1;
        }
        if removed > 0 {
            self.data.apply_batch(batch)?;
            self.flush()?;
        }
        Ok(removed)
    }

    fn synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        ids: &[String],
    ) -> Result<Vec<Option<SyncedRecord>>> {
        let prefix = synced_prefix(tenant, connection);
        ids.iter()
            .map(|id| get_json(&self.data, &format!("{prefix}{id}")))
            .collect()
    }

    fn put_synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        records: &[SyncedRecord],
    ) -> Result<()> {
        let prefix = synced_prefix(tenant, connection);
        let mut batch = Batch::default();
        for record in records {
            batch.insert(
                format!("{prefix}{}", record.record_id).as_bytes(),
                serde_json::to_vec(record)?,
            );
        }
        self.data.apply_batch(batch)?;
        self.flush()
    }

    fn delete_synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        ids: &[String],
    ) -> Result<()> {
        let prefix = synced_prefix(tenant, connection);
        let mut batch = Batch::default();
        for id in ids {
            batch.remove(format!("{prefix}{id}").as_bytes());
        }
        self.data.apply_batch(batch)?;
        self.flush()
    }

    fn synced_record_ids(&self, tenant: &TenantId, connection: &str) -> Result<Vec<String>> {
        let prefix = synced_prefix(tenant, connection);
        let mut found = Vec::new();
        for entry in self.data.scan_prefix(&prefix) {
            let (key, _) = entry?;
            found.push(String::from_utf8_lossy(&key[prefix.len()..]).into_owned());
        }
        Ok(found)
    }

    fn put_oauth_state(&self, state: &OAuthStateRecord) -> Result<()> {
        self.put_json(&self.account, oauth_key(&state.state_hash), state)
    }

    fn take_oauth_state(&self, state_hash: &str) -> Result<Option<OAuthStateRecord>> {
        let key = oauth_key(state_hash);
        // remove is atomic: of two concurrent takes, one gets the value.
        let Some(value) = self.account.remove(key.as_bytes())? else {
            return Ok(None);
        };
        self.flush()?;
        Ok(Some(decode_json(key.as_bytes(), &value)?))
    }

    fn prune_oauth_states(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize> {
        self.remove_where(
            &self.account,
            ["oauth/".to_owned()],
            |state: &OAuthStateRecord| state.expires_at < before,
        )
    }
}

fn import_key(tenant: &TenantId, id: &str) -> String {
    format!("{tenant}/i/{id}")
}

fn import_payload_key(tenant: &TenantId, id: &str) -> String {
    format!("{tenant}/ip/{id}")
}

fn import_queue_key(tenant: &TenantId, id: &str) -> String {
    format!("{tenant}/iq/{id}")
}

impl ImportStore for SledStore {
    fn create_import(&self, job: &ImportJobRecord, payload: &ImportPayload) -> Result<()> {
        let mut writes = Batch::default();
        writes.insert(
            import_key(&job.tenant_id, &job.id).as_bytes(),
            serde_json::to_vec(job)?,
        );
        writes.insert(
            import_payload_key(&job.tenant_id, &job.id).as_bytes(),
            serde_json::to_vec(payload)?,
        );
        writes.insert(import_queue_key(&job.tenant_id, &job.id).as_bytes(), &[]);
        self.data.apply_batch(writes)?;
        self.flush()
    }

    fn put_import(&self, job: &ImportJobRecord) -> Result<()> {
        let mut writes = Batch::default();
        writes.insert(
            import_key(&job.tenant_id, &job.id).as_bytes(),
            serde_json::to_vec(job)?,
        );
        if job.state.is_finished() {
            writes.remove(import_payload_key(&job.tenant_id, &job.id).as_bytes());
            writes.remove(import_queue_key(&job.tenant_id, &job.id).as_bytes());
        }
        self.data.apply_batch(writes)?;
        self.flush()
    }

    fn import_job(&self, tenant: &TenantId, id: &str) -> Result<Option<ImportJobRecord>> {
        get_json(&self.data, &import_key(tenant, id))
    }

    fn import_payload(&self, tenant: &TenantId, id: &str) -> Result<Option<ImportPayload>> {
        get_json(&self.data, &import_payload_key(tenant, id))
    }

    fn unfinished_imports(&self) -> Result<Vec<ImportJobRecord>> {
        let mut jobs = self.queued("iq", |tenant, id| self.import_job(tenant, id))?;
        jobs.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(jobs)
    }

    fn imports_of(&self, tenant: &TenantId) -> Result<Vec<ImportJobRecord>> {
        scan_json(&self.data, format!("{tenant}/i/"))
    }
}

impl MemoryStore for SledStore {
    fn put_memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        memories: &[StoredMemory],
    ) -> Result<()> {
        let mut batch = Batch::default();
        for memory in memories {
            insert_memory(&mut batch, tenant, collection, memory)?;
        }
        self.data.apply_batch(batch)?;
        self.flush()
    }

    fn memory(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        id: &str,
    ) -> Result<Option<StoredMemory>> {
        let key = memory_key(tenant, collection, id);
        match self.data.get(key.as_bytes())? {
            Some(value) => Ok(Some(self.with_embedding(&key, &value)?)),
            None => Ok(None),
        }
    }

    fn memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Vec<StoredMemory>> {
        let records = self.data.scan_prefix(memories_prefix(tenant, collection));
        let mut vectors = self.data.scan_prefix(vectors_prefix(tenant, collection));
        records
            .map(|entry| {
                let (key, value) = entry?;
                let record: MemoryRecord = decode_json(&key, &value)?;
                // Both families hold the same ids in the same order.
                let embedding = match vectors.next().transpose()? {
                    Some((vector_key, vector))
                        if Some(vector_key.to_vec()) == vector_key_of(&key) =>
                    {
                        decode_embedding_value(&vector_key, &vector)?
                    }
                    _ => return Err(missing_embedding(&key)),
                };
                Ok(StoredMemory { record, embedding })
            })
            .collect()
    }

    fn memory_records(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Vec<MemoryRecord>> {
        self.data
            .scan_prefix(memories_prefix(tenant, collection))
            .map(|entry| {
                let (key, value) = entry?;
                decode_json(&key, &value)
            })
            .collect()
    }

    fn visit_memory_records(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        visit: &mut dyn FnMut(MemoryRecord),
    ) -> Result<()> {
        for entry in self.data.scan_prefix(memories_prefix(tenant, collection)) {
            let (key, value) = entry?;
            visit(decode_json(&key, &value)?);
        }
        Ok(())
    }

    fn embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        ids: &[&str],
    ) -> Result<Vec<Option<Vec<f32>>>> {
        ids.iter()
            .map(|id| {
                let key = vector_key(tenant, collection, id);
                self.data
                    .get(key.as_bytes())?
                    .map(|value| decode_embedding_value(key.as_bytes(), &value))
                    .transpose()
            })
            .collect()
    }

    fn memories_page(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMemory>> {
        let prefix = memories_prefix(tenant, collection);
        let start = match after {
            Some(id) => std::ops::Bound::Excluded(memory_key(tenant, collection, id).into_bytes()),
            None => std::ops::Bound::Included(prefix.clone().into_bytes()),
        };
        self.data
            .range::<Vec<u8>, _>((start, std::ops::Bound::Unbounded))
            .take_while(|entry| {
                entry
                    .as_ref()
                    .map_or(true, |(key, _)| key.starts_with(prefix.as_bytes()))
            })
            .take(limit)
            .map(|entry| {
                let (key, value) = entry?;
                self.with_embedding(&key, &value)
            })
            .collect()
    }

    fn delete_memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        ids: &[String],
    ) -> Result<()> {
        let mut batch = Batch::default();
        for id in ids {
            remove_memory(&mut batch, tenant, collection, id);
        }
        self.data.apply_batch(batch)?;
        self.flush()
    }

    fn move_memory(
        &self,
        tenant: &TenantId,
        from: &CollectionName,
        to: &CollectionName,
        memory: &StoredMemory,
    ) -> Result<()> {
        let mut batch = Batch::default();
        remove_memory(&mut batch, tenant, from, &memory.record.id);
        insert_memory(&mut batch, tenant, to, memory)?;
        self.data.apply_batch(batch)?;
        self.flush()
    }
}

impl ReembedStore for SledStore {
    fn stage_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        model: &EmbeddingModel,
        staged: &[StagedEmbedding],
    ) -> Result<()> {
        let header = staged_header_key(tenant, collection);
        let current: Option<EmbeddingModel> = get_json(&self.data, &header)?;
        let mut batch = Batch::default();
        if current.as_ref() != Some(model) {
            self.unstage(&mut batch, tenant, collection)?;
            batch.insert(header.as_bytes(), serde_json::to_vec(model)?);
        }
        for entry in staged {
            batch.insert(
                staged_vector_key(tenant, collection, entry.key).as_bytes(),
                encode_staged(entry)?,
            );
        }
        self.data.apply_batch(batch)?;
        self.flush()
    }

    fn staged_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Option<(EmbeddingModel, Vec<StagedEmbedding>)>> {
        let Some(model) = get_json(&self.data, &staged_header_key(tenant, collection))? else {
            return Ok(None);
        };
        let staged = self
            .data
            .scan_prefix(staged_vectors_prefix(tenant, collection))
            .map(|entry| {
                let (key, value) = entry?;
                decode_staged(&key, &value)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some((model, staged)))
    }

    fn swap_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionRecord,
        memories: &[StoredMemory],
    ) -> Result<()> {
        let mut batch = Batch::default();
        self.unstage(&mut batch, tenant, &collection.name)?;
        for memory in memories {
            insert_memory(&mut batch, tenant, &collection.name, memory)?;
        }
        batch.insert(
            collection_key(tenant, &collection.name).as_bytes(),
            serde_json::to_vec(collection)?,
        );
        self.data.apply_batch(batch)?;
        self.flush()
    }
}

impl OutboxStore for SledStore {
    fn put_delivery(&self, delivery: &OutboxDelivery) -> Result<()> {
        self.put_json(
            &self.outbox,
            delivery_key(&delivery.tenant_id, &delivery.id),
            delivery,
        )
    }

    fn delivery(&self, tenant: &TenantId, id: &str) -> Result<Option<OutboxDelivery>> {
        get_json(&self.outbox, &delivery_key(tenant, id))
    }

    fn pending_deliveries(&self) -> Result<Vec<OutboxDelivery>> {
        let mut deliveries = self
            .outbox
            .iter()
            .map(|entry| {
                let (key, value) = entry?;
                decode_json::<OutboxDelivery>(&key, &value)
            })
            .collect::<Result<Vec<_>>>()?;
        deliveries.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(deliveries)
    }

    fn delete_delivery(&self, tenant: &TenantId, id: &str) -> Result<()> {
        self.outbox.remove(delivery_key(tenant, id))?;
        self.flush()
    }

    fn delete_deliveries_of(&self, tenant: &TenantId) -> Result<usize> {
        let mut batch = Batch::default();
        let mut removed = 0;
        for entry in self.outbox.scan_prefix(format!("{tenant}/")) {
            let (key, _) = entry?;
            batch.remove(key);
            removed += 1;
        }
        if removed > 0 {
            self.outbox.apply_batch(batch)?;
            self.flush()?;
        }
        Ok(removed)
    }
}

const MAIL_PREFIX: &str = "mail/";
const REVEAL_PREFIX: &str = "reveal/";
const SESSION_PREFIX: &str = "session/";
const EVENT_PREFIX: &str = "event/";
const EMAIL_PREFIX: &str = "email/";
const EMAIL_OF_PREFIX: &str = "email-of/";

impl SledStore {
    /// Every record of the account tree under `prefix`.
    fn account_records<T: DeserializeOwned>(&self, prefix: &str) -> Result<Vec<T>> {
        scan_json(&self.account, prefix)
    }

    /// Removes the account records under `prefix` that `doomed` picks.
    fn remove_account_records<T: DeserializeOwned>(
        &self,
        prefix: &str,
        doomed: impl Fn(&T) -> bool,
    ) -> Result<usize> {
        self.remove_where(&self.account, [prefix.to_owned()], doomed)
    }
}

impl SessionStore for SledStore {
    fn put_session(&self, session: &SessionRecord) -> Result<()> {
        self.put_json(
            &self.account,
            format!("{SESSION_PREFIX}{}", session.id_hash),
            session,
        )
    }

    fn session(&self, id_hash: &str) -> Result<Option<SessionRecord>> {
        get_json(&self.account, &format!("{SESSION_PREFIX}{id_hash}"))
    }

    fn delete_session(&self, id_hash: &str) -> Result<bool> {
        let removed = self
            .account
            .remove(format!("{SESSION_PREFIX}{id_hash}"))?
            .is_some();
        if removed {
            self.flush()?;
        }
        Ok(removed)
    }

    fn sessions_of(&self, tenant: &TenantId) -> Result<Vec<SessionRecord>> {
        let mut sessions: Vec<SessionRecord> = self.account_records(SESSION_PREFIX)?;
        sessions.retain(|session| &session.tenant_id == tenant);
        Ok(sessions)
    }

    fn delete_sessions_of(&self, tenant: &TenantId) -> Result<usize> {
        self.remove_account_records(SESSION_PREFIX, |session: &SessionRecord| {
            &session.tenant_id == tenant
        })
    }

    fn prune_sessions(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize> {
        self.remove_account_records(SESSION_PREFIX, |session: &SessionRecord| {
            session.expires_at < before
        })
    }
}

impl AccountStore for SledStore {
    fn put_mail(&self, mail: &MailRecord) -> Result<()> {
        self.put_json(&self.account, format!("{MAIL_PREFIX}{}", mail.id), mail)
    }

    fn mail(&self, id: &str) -> Result<Option<MailRecord>> {
        get_json(&self.account, &format!("{MAIL_PREFIX}{id}"))
    }

    fn pending_mails(&self) -> Result<Vec<MailRecord>> {
        let mut mails: Vec<MailRecord> = self.account_records(MAIL_PREFIX)?;
        mails.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(mails)
    }

    fn delete_mail(&self, id: &str) -> Result<()> {
        self.account.remove(format!("{MAIL_PREFIX}{id}"))?;
        self.flush()
    }

    fn delete_mails_of(&self, tenant: &TenantId) -> Result<usize> {
        self.remove_account_records(MAIL_PREFIX, |mail: &MailRecord| {
            mail.tenant_id.as_ref() == Some(tenant)
        })
    }

    fn put_reveal(&self, reveal: &RevealRecord) -> Result<()> {
        self.put_json(
            &self.account,
            format!("{REVEAL_PREFIX}{}", reveal.token_hash),
            reveal,
        )
    }

    fn reveal(&self, token_hash: &str) -> Result<Option<RevealRecord>> {
        get_json(&self.account, &format!("{REVEAL_PREFIX}{token_hash}"))
    }

    fn take_reveal(&self, token_hash: &str) -> Result<Option<RevealRecord>> {
        let key = format!("{REVEAL_PREFIX}{token_hash}");
        // `remove` returns the old value atomically: of two concurrent takes, one gets it.
        let Some(value) = self.account.remove(key.as_bytes())? else {
            return Ok(None);
        };
        self.flush()?;
        decode_json(key.as_bytes(), &value).map(Some)
    }

    fn delete_reveals_of(&self, tenant: &TenantId) -> Result<usize> {
        self.remove_account_records(REVEAL_PREFIX, |reveal: &RevealRecord| {
            &reveal.tenant_id == tenant
        })
    }

    fn prune_reveals(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize> {
        self.remove_account_records(REVEAL_PREFIX, |reveal: &RevealRecord| {
            reveal.expires_at < before
        })
    }

    fn record_event_once(
        &self,
        source: &str,
        id: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<bool> {
        let key = format!("{EVENT_PREFIX}{source}/{id}");
        let value = serde_json::to_vec(&at)?;
        // Compare-and-swap from absent: atomic, so one of two concurrent calls wins.
        let first = self
            .account
            .compare_and_swap(key.as_bytes(), None as Option<&[u8]>, Some(value))?
            .is_ok();
        if first {
            self.flush()?;
        }
        Ok(first)
    }

    fn forget_event(&self, source: &str, id: &str) -> Result<()> {
        self.account
            .remove(format!("{EVENT_PREFIX}{source}/{id}").as_bytes())?;
        self.flush()
    }

    fn forget_events_of(&self, source: &str) -> Result<usize> {
        let mut batch = Batch::default();
        let mut removed = 0;
        for entry in self.account.scan_prefix(format!("{EVENT_PREFIX}{source}/")) {
            let (key, _) = entry?;
            batch.remove(key);
            removed += 1;
        }
        if removed > 0 {
            self.account.apply_batch(batch)?;
            self.flush()?;
        }
        Ok(removed)
    }

    fn prune_events(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize> {
        self.remove_account_records(EVENT_PREFIX, |at: &chrono::DateTime<chrono::Utc>| {
            *at < before
        })
    }

    fn email_address_of(&self, tenant: &TenantId) -> Result<Option<EmailAddressRecord>> {
        get_json(&self.account, &format!("{EMAIL_OF_PREFIX}{tenant}"))
    }

    fn email_address_by_hash(&self, local_hash: &str) -> Result<Option<EmailAddressRecord>> {
        get_json(&self.account, &format!("{EMAIL_PREFIX}{local_hash}"))
    }

    fn replace_email_address(
        &self,
        address: &EmailAddressRecord,
        expected: Option<&str>,
    ) -> Result<bool> {
        use sled::transaction::{ConflictableTransactionError, TransactionError};
        let own_key = format!("{EMAIL_OF_PREFIX}{}", address.tenant_id);
        let lookup_key = format!("{EMAIL_PREFIX}{}", address.local_hash);
        let value = serde_json::to_vec(address)?;
        let outcome = self.account.transaction(|tx| {
            let current = match tx.get(own_key.as_bytes())? {
                Some(bytes) => Some(
                    serde_json::from_slice::<EmailAddressRecord>(&bytes)
                        .map_err(|error| ConflictableTransactionError::Abort(error.to_string()))?
                        .local_hash,
                ),
                None => None,
            };
            if current.as_deref() != expected {
                return Ok(false);
            }
            if let Some(old) = current.filter(|old| *old != address.local_hash) {
                tx.remove(format!("{EMAIL_PREFIX}{old}").as_bytes())?;
            }
            tx.insert(lookup_key.as_bytes(), value.as_slice())?;
            tx.insert(own_key.as_bytes(), value.as_slice())?;
            Ok(true)
        });
        let replaced = match outcome {
            Ok(replaced) => replaced,
            Err(TransactionError::Abort(reason)) => {
                return Err(StorageError::Corrupt {
                    key: own_key,
                    reason,
                })
            }
            Err(TransactionError::Storage(error)) => return Err(error.into()),
        };
        if replaced {
            self.flush()?;
        }
        Ok(replaced)
    }

    fn delete_email_address_of(&self, tenant: &TenantId) -> Result<bool> {
        let own_key = format!("{EMAIL_OF_PREFIX}{tenant}");
        let Some(current) = get_json::<EmailAddressRecord>(&self.account, &own_key)? else {
            return Ok(false);
        };
        let mut batch = Batch::default();
        batch.remove(format!("{EMAIL_PREFIX}{}", current.local_hash).as_bytes());
        batch.remove(own_key.as_bytes());
        self.account.apply_batch(batch)?;
        self.flush()?;
        Ok(true)
    }
}

impl AuditStore for SledStore {
    fn append_audit(&self, entries: &[AuditEntry]) -> Result<()> {
        let mut batch = Batch::default();
        for entry in entries {
            let key = format!("{}{}", audit_prefix(&entry.tenant_id), entry.id);
            batch.insert(key.as_bytes(), serde_json::to_vec(entry)?);
        }
        self.data.apply_batch(batch)?;
        self.flush()
    }

    fn audit(
        &self,
        tenant: &TenantId,
        since: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>> {
        let mut entries = Vec::new();
        for item in self.data.scan_prefix(audit_prefix(tenant)).rev() {
            if entries.len() >= limit {
                break;
            }
            let (key, value) = item?;
            let entry: AuditEntry = decode_json(&key, &value)?;
            if entry.at < since {
                break;
            }
            entries.push(entry);
        }
        Ok(entries)
    }

    fn prune_audit(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize> {
        let mut batch = Batch::default();
        let mut pruned = 0;
        for tenant in self.tenants()? {
            for item in self.data.scan_prefix(audit_prefix(&tenant.id)) {
                let (key, value) = item?;
                let entry: AuditEntry = decode_json(&key, &value)?;
                if entry.at >= before {
                    break;
                }
                batch.remove(key);
                pruned += 1;
            }
        }
        if pruned > 0 {
            self.data.apply_batch(batch)?;
            self.flush()?;
        }
        Ok(pruned)
    }
}

#[cfg(test)]
mod tests {
    //! The store suite against sled, plus what only sled has: reopening the same directory.

    use super::SledStore;
    use crate::records::{CollectionName, MemoryRecord, OutboxDelivery, StoredMemory, TenantId};
    use crate::store::{MemoryStore, MetaStore, OutboxStore};
    use crate::store_suite::{sample_collection, sample_memory, sample_tenant};

    crate::store_suite!(sled, || {
        let directory = tempfile::tempdir().unwrap();
        let store = SledStore::open(directory.path()).unwrap();
        (store, directory)
    });

    #[test]
    fn sled_keeps_writes_across_reopen() {
        let directory = tempfile::tempdir().unwrap();
        let tenant = sample_tenant("reopen");
        let notes = CollectionName::parse("notes").unwrap();
        let memory = sample_memory("m1", "survives a restart");
        {
            let store = SledStore::open(directory.path()).unwrap();
            store.put_tenant(&tenant).unwrap();
            store
                .put_collection(&tenant.id, &sample_collection("notes"))
                .unwrap();
            store
                .put_memories(&tenant.id, &notes, std::slice::from_ref(&memory))
                .unwrap();
        }
        let store = SledStore::open(directory.path()).unwrap();
        assert_eq!(store.tenants().unwrap(), vec![tenant.clone()]);
        assert_eq!(store.memories(&tenant.id, &notes).unwrap(), vec![memory]);
    }

    #[test]
    fn an_open_waits_for_a_lock_still_held_then_opens() {
        let directory = tempfile::tempdir().unwrap();
        let tenant = sample_tenant("waiting");
        let first = SledStore::open(directory.path()).unwrap();
        first.put_tenant(&tenant).unwrap();
        let closer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            drop(first);
        });
        let second = SledStore::open(directory.path()).unwrap();
        closer.join().unwrap();
        assert_eq!(second.tenants().unwrap(), vec![tenant]);
    }

    /// Writes `memories` as a data dir from before the split held them: one value per
    /// memory (u32 LE length of the JSON record, the JSON, the embedding), no format key.
    fn write_unsplit(
        store: &SledStore,
        tenant: &TenantId,
        collection: &CollectionName,
        memories: &[StoredMemory],
    ) {
        for memory in memories {
            let json = serde_json::to_vec(&memory.record).unwrap();
            let mut value = (json.len() as u32).to_le_bytes().to_vec();
            value.extend_from_slice(&json);
            value.extend_from_slice(&super::encode_embedding(&memory.embedding));
            let id = &memory.record.id;
            store
                .data
                .insert(super::memory_key(tenant, collection, id), value)
                .unwrap();
            store
                .data
                .remove(super::vector_key(tenant, collection, id))
                .unwrap();
        }
        store.db.remove(super::FORMAT_KEY).unwrap();
        store.db.flush().unwrap();
    }

    #[test]
    fn an_older_data_dir_is_split_once_and_reads_the_same() {
        let directory = tempfile::tempdir().unwrap();
        let tenant = sample_tenant("unsplit");
        let notes = CollectionName::parse("notes").unwrap();
        let memories: Vec<StoredMemory> = (0..25)
            .map(|n| sample_memory(&format!("m{n:02}"), &format!("memory number {n}")))
            .collect();
        {
            let store = SledStore::open(directory.path()).unwrap();
            store.put_tenant(&tenant).unwrap();
            store
                .put_collection(&tenant.id, &sample_collection("notes"))
                .unwrap();
            // Ten were split before a crash; fifteen are still whole.
            store
                .put_memories(&tenant.id, &notes, &memories[..10])
                .unwrap();
            write_unsplit(&store, &tenant.id, &notes, &memories[10..]);
            assert!(store
                .data
                .get(super::vector_key(&tenant.id, &notes, "m00"))
                .unwrap()
                .is_some());
            assert!(store
                .data
                .get(super::vector_key(&tenant.id, &notes, "m10"))
                .unwrap()
                .is_none());
        }
        let store = SledStore::open(directory.path()).unwrap();
        assert_eq!(store.memories(&tenant.id, &notes).unwrap(), memories);
        let records: Vec<MemoryRecord> = memories.iter().map(|m| m.record.clone()).collect();
        assert_eq!(store.memory_records(&tenant.id, &notes).unwrap(), records);
        assert_eq!(
            store
                .embeddings(&tenant.id, &notes, &["m03", "m17", "none"])
                .unwrap(),
            vec![
                Some(memories[3].embedding.clone()),
                Some(memories[17].embedding.clone()),
                None
            ]
        );
        let value = store
            .data
            .get(super::memory_key(&tenant.id, &notes, "m17"))
            .unwrap()
            .unwrap();
        assert_eq!(value.first(), Some(&b'{'), "the record alone, as JSON");
        assert_eq!(
            store.db.get(super::FORMAT_KEY).unwrap().as_deref(),
            Some(super::FORMAT)
        );
        drop(store);
        // Opened again, nothing is split twice.
        let store = SledStore::open(directory.path()).unwrap();
        assert_eq!(store.memories(&tenant.id, &notes).unwrap(), memories);
    }

    #[test]
    fn a_memory_without_its_embedding_is_reported_corrupt() {
        let directory = tempfile::tempdir().unwrap();
        let store = SledStore::open(directory.path()).unwrap();
        let tenant = sample_tenant("halves");
        let notes = CollectionName::parse("notes").unwrap();
        store
            .put_memories(
                &tenant.id,
                &notes,
                &[sample_memory("m1", "one"), sample_memory("m2", "two")],
            )
            .unwrap();
        store
            .data
            .remove(super::vector_key(&tenant.id, &notes, "m1"))
            .unwrap();
        assert!(matches!(
            store.memory(&tenant.id, &notes, "m1"),
            Err(crate::StorageError::Corrupt { .. })
        ));
        assert!(matches!(
            store.memories(&tenant.id, &notes),
            Err(crate::StorageError::Corrupt { .. })
        ));
        assert_eq!(store.memory_records(&tenant.id, &notes).unwrap().len(), 2);
    }

    #[test]
    fn sled_keeps_the_webhook_outbox_across_reopen() {
        let directory = tempfile::tempdir().unwrap();
        let tenant = sample_tenant("outbox-reopen");
        let now = chrono::Utc::now();
        let delivery = OutboxDelivery {
            id: "dlv-reopen".to_owned(),
            tenant_id: tenant.id.clone(),
            event: "memory.deleted".to_owned(),
            body: r#"{"event":"memory.deleted"}"#.to_owned(),
            attempts: 1,
            next_attempt_at: now,
            created_at: now,
        };
        {
            let store = SledStore::open(directory.path()).unwrap();
            store.put_delivery(&delivery).unwrap();
        }
        let store = SledStore::open(directory.path()).unwrap();
        assert_eq!(store.pending_deliveries().unwrap(), vec![delivery]);
    }
}
