//! The narrow traits memvault persists through. Each call is blocking (callers run it on
//! a blocking thread) and durable on return: a write that returned `Ok` survives a
//! process crash.

use crate::error::Result;
use crate::records::{
    ApiKeyRecord, AuditEntry, CollectionName, CollectionRecord, ConnectionRecord,
    EmailAddressRecord, EmbeddingModel, ExtractJobRecord, ImportJobRecord, ImportPayload,
    IngestBatchRecord, MailRecord, MemoryRecord, OAuthStateRecord, OutboxDelivery, RevealRecord,
    SessionRecord, StagedEmbedding, StoredMemory, SyncRunRecord, SyncedRecord, TenantId,
    TenantRecord, TenantSettings, UsageRow,
};

/// Tenants, their API keys and their collections.
pub trait MetaStore: Send + Sync + 'static {
    fn put_tenant(&self, tenant: &TenantRecord) -> Result<()>;
    fn tenants(&self) -> Result<Vec<TenantRecord>>;

    fn put_api_key(&self, key: &ApiKeyRecord) -> Result<()>;
    fn api_keys(&self, tenant: &TenantId) -> Result<Vec<ApiKeyRecord>>;

    fn put_collection(&self, tenant: &TenantId, collection: &CollectionRecord) -> Result<()>;
    fn collections(&self, tenant: &TenantId) -> Result<Vec<CollectionRecord>>;
    /// Removes the collection, every memory in it and any staged re-embedding,
    /// atomically.
    fn delete_collection(&self, tenant: &TenantId, name: &CollectionName) -> Result<()>;

    /// Removes up to `max_records` of the tenant's records (keys, collections, memories,
    /// settings, usage, jobs, batches, audit, staged vectors, pending webhook deliveries),
    /// never its tenant record; returns how many it removed, 0 once none is left. Called
    /// in a loop by an account's erasure, so a large account goes in bounded writes.
    fn purge_tenant(&self, tenant: &TenantId, max_records: usize) -> Result<usize>;
    /// Removes the tenant record itself (the last step of an erasure); an absent one is
    /// not an error.
    fn delete_tenant(&self, tenant: &TenantId) -> Result<()>;
    /// Removes up to `max_records` of the tenant's *data* records: its collections,
    /// memories, staged embeddings, extraction jobs, ingest batches, imports and their
    /// payloads (what moves with it to a database of its own), keeping the tenant, its
    /// keys, settings, usage and everything else. Returns how many went; 0 when none is
    /// left. Called until it returns 0.
    fn purge_tenant_data(&self, tenant: &TenantId, max_records: usize) -> Result<usize>;

    /// Bytes the tenant's records take in the store (keys and values).
    fn tenant_bytes(&self, tenant: &TenantId) -> Result<u64>;

    fn put_tenant_settings(&self, tenant: &TenantId, settings: &TenantSettings) -> Result<()>;
    /// The tenant's settings; the default when none were ever saved.
    fn tenant_settings(&self, tenant: &TenantId) -> Result<TenantSettings>;

    /// Adds `delta`'s calls, tokens and cost to the row of the same month, purpose, model
    /// and `own_llm`, creating it when missing; atomic against concurrent adds.
    fn add_usage(&self, tenant: &TenantId, delta: &UsageRow) -> Result<()>;
    /// The tenant's usage rows of exactly one period (`YYYY-MM` or `YYYY-MM-DD`).
    fn usage(&self, tenant: &TenantId, month: &str) -> Result<Vec<UsageRow>>;
}

/// Extraction jobs (asynchronous remember), persisted so that a queued job survives a
/// crash.
pub trait JobStore: Send + Sync + 'static {
    fn put_job(&self, job: &ExtractJobRecord) -> Result<()>;
    fn job(&self, tenant: &TenantId, id: &str) -> Result<Option<ExtractJobRecord>>;
    /// Every job, of any tenant, not yet done or failed, oldest first.
    fn unfinished_jobs(&self) -> Result<Vec<ExtractJobRecord>>;
    /// Every extraction job of the tenant, finished or not, in no particular order.
    fn jobs_of(&self, tenant: &TenantId) -> Result<Vec<ExtractJobRecord>>;
    /// Removes finished jobs last updated before `before` (the caller's retention).
    fn prune_jobs(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize>;
}

/// Memories and their embeddings, per collection.
pub trait MemoryStore: Send + Sync + 'static {
    /// Inserts or replaces memories (record and embedding together), atomically.
    fn put_memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        memories: &[StoredMemory],
    ) -> Result<()>;
    fn memory(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        id: &str,
    ) -> Result<Option<StoredMemory>>;
    /// Every memory of a collection with its embedding, in no particular order.
    fn memories(&self, tenant: &TenantId, collection: &CollectionName)
        -> Result<Vec<StoredMemory>>;
    /// Every memory record of a collection without its embedding, in no particular order:
    /// what opening a collection reads when its saved vector index is current, so the
    /// embeddings are not all held in memory at once.
    fn memory_records(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Vec<MemoryRecord>> {
        Ok(self
            .memories(tenant, collection)?
            .into_iter()
            .map(|memory| memory.record)
            .collect())
    }
    /// [`Self::memory_records`] handed to `visit` one at a time as they are read, so that
    /// the caller can work on the first while the rest are read (opening a collection of
    /// a million memories builds its maps meanwhile). The default reads them all first.
    fn visit_memory_records(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        visit: &mut dyn FnMut(MemoryRecord),
    ) -> Result<()> {
        for record in self.memory_records(tenant, collection)? {
            visit(record);
        }
        Ok(())
    }
    /// The embeddings of the collection's memories `ids`, in that order; `None` for an id
    /// not stored.
    fn embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        ids: &[&str],
    ) -> Result<Vec<Option<Vec<f32>>>> {
        ids.iter()
            .map(|id| {
                Ok(self
                    .memory(tenant, collection, id)?
                    .map(|memory| memory.embedding))
            })
            .collect()
    }
    /// One page of the collection's memories in id order: at most `limit`, with ids after
    /// `after` (from the first when `None`). Readers that need not hold a whole
    /// collection at once (copying, rebuilding) walk it with this.
    fn memories_page(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMemory>>;
    fn delete_memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        ids: &[String],
    ) -> Result<()>;
    /// Moves one memory between two collections of a tenant in one atomic write: it is
    /// never in both, nor in neither.
    fn move_memory(
        &self,
        tenant: &TenantId,
        from: &CollectionName,
        to: &CollectionName,
        memory: &StoredMemory,
    ) -> Result<()>;
}

/// A collection's re-embedding in progress: the new model's vectors, staged next to the
/// live ones so a crash resumes where it stopped, and the switch to them in one write.
pub trait ReembedStore: Send + Sync + 'static {
    /// Adds staged vectors made by `model`. Staged vectors of another model are dropped
    /// in the same write: a re-embedding towards a model no longer wanted is not resumed.
    fn stage_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        model: &EmbeddingModel,
        staged: &[StagedEmbedding],
    ) -> Result<()>;
    /// The model of the staged vectors and the vectors, by index key ascending; `None`
    /// when nothing is staged.
    fn staged_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Option<(EmbeddingModel, Vec<StagedEmbedding>)>>;
    /// Switches a collection to its new vectors in one atomic write: `memories` (the
    /// collection's every memory with its new embedding) and `collection` (naming the new
    /// model) are stored and the staged vectors are dropped.
    fn swap_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionRecord,
        memories: &[StoredMemory],
    ) -> Result<()>;
}

/// The webhook outbox: events waiting to be delivered, persisted before the first attempt
/// so that a delivery pending at a crash is sent after the restart.
pub trait OutboxStore: Send + Sync + 'static {
    /// Inserts or replaces the delivery with this tenant and id.
    fn put_delivery(&self, delivery: &OutboxDelivery) -> Result<()>;
    fn delivery(&self, tenant: &TenantId, id: &str) -> Result<Option<OutboxDelivery>>;
    /// Every pending delivery of every tenant, oldest (`created_at`, then id) first.
    fn pending_deliveries(&self) -> Result<Vec<OutboxDelivery>>;
    /// Removes one delivery; an absent one is not an error.
    fn delete_delivery(&self, tenant: &TenantId, id: &str) -> Result<()>;
    /// Removes every pending delivery of a tenant (its webhook was deleted, or the tenant
    /// is); returns how many there were.
    fn delete_deliveries_of(&self, tenant: &TenantId) -> Result<usize>;
}

/// Each tenant's audit log: appended in batches, read newest first, pruned by age.
pub trait AuditStore: Send + Sync + 'static {
    /// Appends entries (of any tenants) in one durable write.
    fn append_audit(&self, entries: &[AuditEntry]) -> Result<()>;
    /// The tenant's entries at or after `since`, newest first, at most `limit`.
    fn audit(
        &self,
        tenant: &TenantId,
        since: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>>;
    /// Removes every tenant's entries older than `before` (the caller's retention).
    fn prune_audit(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize>;
}

/// Ingest batches: a batch and its items are one record, written whole at every step, so
/// a batch read after a crash is one that was written.
pub trait IngestStore: Send + Sync + 'static {
    /// Stores the batch; an unfinished one stays in the queue [`Self::unfinished_batches`]
    /// reads at start-up.
    fn put_batch(&self, batch: &IngestBatchRecord) -> Result<()>;
    fn batch(&self, tenant: &TenantId, id: &str) -> Result<Option<IngestBatchRecord>>;
    /// Every unfinished batch of every tenant, oldest first.
    fn unfinished_batches(&self) -> Result<Vec<IngestBatchRecord>>;
    /// Every ingest batch of the tenant, finished or not, in no particular order.
    fn batches_of(&self, tenant: &TenantId) -> Result<Vec<IngestBatchRecord>>;
    /// Removes finished batches last written before `before`.
    fn prune_batches(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize>;
}

/// Asynchronous imports: each one's progress record and, until it is finished, its
/// items (written once).
pub trait ImportStore: Send + Sync + 'static {
    /// Stores a new import: its record and its payload, in one write.
    fn create_import(&self, job: &ImportJobRecord, payload: &ImportPayload) -> Result<()>;
    /// Stores the import's progress; a finished import's payload is removed in the same
    /// write and it leaves the queue [`Self::unfinished_imports`] reads.
    fn put_import(&self, job: &ImportJobRecord) -> Result<()>;
    fn import_job(&self, tenant: &TenantId, id: &str) -> Result<Option<ImportJobRecord>>;
    /// The items of an unfinished import; `None` once it finished.
    fn import_payload(&self, tenant: &TenantId, id: &str) -> Result<Option<ImportPayload>>;
    /// Every unfinished import of every tenant, oldest first.
    fn unfinished_imports(&self) -> Result<Vec<ImportJobRecord>>;
    /// Every import job of the tenant, finished or not, in no particular order.
    fn imports_of(&self, tenant: &TenantId) -> Result<Vec<ImportJobRecord>>;
}

/// Accounts: the outgoing mail queue and the one-time reveal links.
pub trait AccountStore: Send + Sync + 'static {
    /// Stores (or replaces) a queued mail.
    fn put_mail(&self, mail: &MailRecord) -> Result<()>;
    fn mail(&self, id: &str) -> Result<Option<MailRecord>>;
    /// Every queued mail, oldest (`created_at`, then id) first.
    fn pending_mails(&self) -> Result<Vec<MailRecord>>;
    /// Removes one mail; an absent one is not an error.
    fn delete_mail(&self, id: &str) -> Result<()>;
    /// Removes every queued mail about a tenant; returns how many there were.
    fn delete_mails_of(&self, tenant: &TenantId) -> Result<usize>;

    fn put_reveal(&self, reveal: &RevealRecord) -> Result<()>;
    /// The reveal link with this token hash, left in place.
    fn reveal(&self, token_hash: &str) -> Result<Option<RevealRecord>>;
    /// Removes the reveal link and returns it: of two concurrent takes, one gets it.
    fn take_reveal(&self, token_hash: &str) -> Result<Option<RevealRecord>>;
    /// Removes every reveal link of a tenant; returns how many there were.
    fn delete_reveals_of(&self, tenant: &TenantId) -> Result<usize>;
    /// Removes reveal links that expired before `before`.
    fn prune_reveals(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize>;

    /// Records that the event `id` of `source` (a Stripe event, an inbound message id)
    /// was handled at `at`; `true` the first time, `false` when it was recorded already.
    /// Of two concurrent calls for one event, exactly one gets `true`.
    fn record_event_once(
        &self,
        source: &str,
        id: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<bool>;
    /// Forgets one event (it was recorded, then its handling failed: a retry must find it
    /// new).
    fn forget_event(&self, source: &str, id: &str) -> Result<()>;
    /// Forgets every event of `source` (its tenant is erased); returns how many.
    fn forget_events_of(&self, source: &str) -> Result<usize>;
    /// Forgets events recorded before `before`; returns how many.
    fn prune_events(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize>;

    /// The tenant's mail-in address; `None` before its first use.
    fn email_address_of(&self, tenant: &TenantId) -> Result<Option<EmailAddressRecord>>;
    /// The address whose local part hashes to `local_hash`; `None` for an unknown or
    /// rotated one.
    fn email_address_by_hash(&self, local_hash: &str) -> Result<Option<EmailAddressRecord>>;
    /// Makes `address` its tenant's address if the tenant's current one has the hash
    /// `expected` (`None`: the tenant has none yet), in one atomic write: the old
    /// address's lookup entry is removed and the new one added together, so the old
    /// address stops resolving the moment the new one starts. `false`, and nothing
    /// written, when the current address is not `expected` (a concurrent change won).
    fn replace_email_address(
        &self,
        address: &EmailAddressRecord,
        expected: Option<&str>,
    ) -> Result<bool>;
    /// Removes the tenant's address (account erasure); `false` when it had none.
    fn delete_email_address_of(&self, tenant: &TenantId) -> Result<bool>;
}

/// Managed connectors: connections, their runs, the provider records each one stored, and
/// the OAuth flows in progress.
pub trait ConnectorStore: Send + Sync + 'static {
    /// Stores (or replaces) a connection.
    fn put_connection(&self, connection: &ConnectionRecord) -> Result<()>;
    fn connection(&self, tenant: &TenantId, id: &str) -> Result<Option<ConnectionRecord>>;
    /// The tenant's connections, oldest first.
    fn connections(&self, tenant: &TenantId) -> Result<Vec<ConnectionRecord>>;
    /// Every connection of every tenant (the scheduler's and the operator's view).
    fn all_connections(&self) -> Result<Vec<ConnectionRecord>>;
    /// Removes a connection with its runs and its record map; `false` when it was absent.
    fn delete_connection(&self, tenant: &TenantId, id: &str) -> Result<bool>;

    fn put_run(&self, run: &SyncRunRecord) -> Result<()>;
    /// A connection's runs, newest first, at most `limit`.
    fn runs(&self, tenant: &TenantId, connection: &str, limit: usize)
        -> Result<Vec<SyncRunRecord>>;
    /// Every run of every tenant that started at or after `since` (operator view).
    fn runs_since(&self, since: chrono::DateTime<chrono::Utc>) -> Result<Vec<SyncRunRecord>>;
    /// Removes runs beyond the newest `keep` of a connection; returns how many.
    fn trim_runs(&self, tenant: &TenantId, connection: &str, keep: usize) -> Result<usize>;

    /// The stored record of each id (None: not stored), in order.
    fn synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        ids: &[String],
    ) -> Result<Vec<Option<SyncedRecord>>>;
    fn put_synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        records: &[SyncedRecord],
    ) -> Result<()>;
    fn delete_synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        ids: &[String],
    ) -> Result<()>;
    /// Every record id the connection stored.
    fn synced_record_ids(&self, tenant: &TenantId, connection: &str) -> Result<Vec<String>>;

    fn put_oauth_state(&self, state: &OAuthStateRecord) -> Result<()>;
    /// Removes the flow and returns it: of two concurrent takes, one gets it.
    fn take_oauth_state(&self, state_hash: &str) -> Result<Option<OAuthStateRecord>>;
    /// Removes flows that expired before `before`; returns how many.
    fn prune_oauth_states(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize>;
}

/// The dashboard's sign-in sessions (kept in the store so that a restart keeps them and
/// every node sees them).
pub trait SessionStore: Send + Sync + 'static {
    /// Creates or replaces the session with this `id_hash`.
    fn put_session(&self, session: &SessionRecord) -> Result<()>;
    fn session(&self, id_hash: &str) -> Result<Option<SessionRecord>>;
    /// Removes it; whether it was there.
    fn delete_session(&self, id_hash: &str) -> Result<bool>;
    /// A tenant's sessions, in no particular order.
    fn sessions_of(&self, tenant: &TenantId) -> Result<Vec<SessionRecord>>;
    fn delete_sessions_of(&self, tenant: &TenantId) -> Result<usize>;
    /// Removes the sessions that ended before `before`; returns how many.
    fn prune_sessions(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize>;
}

/// Everything the service persists; one value of it is shared by all actors.
pub trait Store:
    MetaStore
    + MemoryStore
    + JobStore
    + OutboxStore
    + AuditStore
    + ReembedStore
    + IngestStore
    + ImportStore
    + AccountStore
    + SessionStore
    + ConnectorStore
{
}

impl<
        T: MetaStore
            + MemoryStore
            + JobStore
            + OutboxStore
            + AuditStore
            + ReembedStore
            + IngestStore
            + ImportStore
            + AccountStore
            + SessionStore
            + ConnectorStore,
    > Store for T
{
}
