//! [`RoutedStore`]: the platform store with some tenants' data in databases of their own.
//!
//! A tenant may keep its *data* (collections, memories, staged embeddings, extraction
//! jobs, ingest batches, imports: what [`MetaStore::purge_tenant_data`] names) in a
//! database of its own (SPEC "Bring-your-own configuration", `database/config`). Its
//! account stays in the platform store: the tenant record, keys, settings (which hold the
//! sealed connection string), usage, audit, the outbox, mail, dashboard sessions and connectors. Every other
//! crate keeps calling one [`Store`]; this one sends each call about a tenant's data to
//! where that tenant's data lives, and merges the calls that scan every tenant (the
//! queues resumed at start, pruning).
//!
//! A switch ([`RoutedStore::switch`]) copies the data while holding the tenant's route
//! exclusively: the tenant's data calls wait for it (none fails, none lands in the store
//! being left), then go to the new place. Nothing else waits.

use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use chrono::{DateTime, Utc};

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
    MetaStore, OutboxStore, ReembedStore, SessionStore, Store,
};

/// Where one routed tenant's data is.
#[derive(Clone)]
enum Target {
    /// In the platform store (a switch back finished, or a switch to its own failed).
    Platform,
    /// In the tenant's own database.
    Own(Arc<dyn Store>),
    /// In the tenant's own database, which could not be opened: its data calls fail
    /// with this reason until [`RoutedStore::route_to`] opens it.
    Unreachable(String),
}

#[derive(Default)]
struct Route {
    target: RwLock<Option<Target>>,
}

/// How far a copy ([`copy_tenant_data`]) has come.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyProgress {
    pub collections_total: u64,
    pub collections_done: u64,
    /// Memories, jobs, batches and imports written to the target so far.
    pub records_copied: u64,
}

/// The platform store, with the tenants that keep their data elsewhere routed there.
pub struct RoutedStore {
    platform: Arc<dyn Store>,
    routes: RwLock<HashMap<TenantId, Arc<Route>>>,
    /// Several nodes: the tenants whose queued work this node resumes (see
    /// [`RoutedStore::serve_only`]); `None` (one node) resumes everyone's.
    served: RwLock<Option<ServedTenants>>,
}

/// Whether this node serves a tenant (several nodes: it holds the tenant's lease).
pub type ServedTenants = Arc<dyn Fn(&TenantId) -> bool + Send + Sync>;

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RoutedStore {
    pub fn new(platform: Arc<dyn Store>) -> Self {
        Self {
            platform,
            routes: RwLock::new(HashMap::new()),
            served: RwLock::new(None),
        }
    }

    /// Several nodes: the scans of queued work (`unfinished_jobs`, `unfinished_batches`,
    /// `unfinished_imports`, `pending_deliveries`, `all_connections`, and `pending_mails`
    /// about a tenant) list only the tenants `served` says this node serves, so each
    /// node's job queues resume its own tenants' work and nobody else's.
    pub fn serve_only(&self, served: ServedTenants) {
        *write(&self.served) = Some(served);
    }

    /// Keeps the rows of the tenants this node serves.
    fn served<T>(&self, mut rows: Vec<T>, tenant_of: impl Fn(&T) -> Option<&TenantId>) -> Vec<T> {
        if let Some(served) = &*read(&self.served) {
            rows.retain(|row| tenant_of(row).is_none_or(|tenant| served(tenant)));
        }
        rows
    }

    /// The platform store itself (the tenants' accounts, every unrouted tenant's data).
    pub fn platform(&self) -> &Arc<dyn Store> {
        &self.platform
    }

    fn route(&self, tenant: &TenantId) -> Arc<Route> {
        if let Some(route) = read(&self.routes).get(tenant) {
            return route.clone();
        }
        write(&self.routes)
            .entry(tenant.clone())
            .or_default()
            .clone()
    }

    fn existing_route(&self, tenant: &TenantId) -> Option<Arc<Route>> {
        read(&self.routes).get(tenant).cloned()
    }

    /// From now on the tenant's data is read from and written to `store` (at start, for a
    /// tenant whose data is in its own database).
    pub fn route_to(&self, tenant: &TenantId, store: Arc<dyn Store>) {
        *write(&self.route(tenant).target) = Some(Target::Own(store));
    }

    /// The tenant's data is in its own database, which cannot be opened now: its data
    /// calls fail with `reason` (nothing goes to the platform store by mistake).
    pub fn mark_unreachable(&self, tenant: &TenantId, reason: String) {
        *write(&self.route(tenant).target) = Some(Target::Unreachable(reason));
    }

    /// Whether the tenant's data is in a database of its own (reachable or not).
    pub fn is_routed(&self, tenant: &TenantId) -> bool {
        self.existing_route(tenant).is_some_and(|route| {
            matches!(
                *read(&route.target),
                Some(Target::Own(_) | Target::Unreachable(_))
            )
        })
    }

    /// Moves the tenant's data: `copy(from, to)` runs while the tenant's data calls wait,
    /// `to` being its own database (`Some`) or the platform store (`None`); when it
    /// succeeds the calls go to `to`, when it fails they go on where they went.
    pub fn switch(
        &self,
        tenant: &TenantId,
        to: Option<Arc<dyn Store>>,
        copy: impl FnOnce(&dyn Store, &dyn Store) -> Result<()>,
    ) -> Result<()> {
        let route = self.route(tenant);
        let mut target = write(&route.target);
        let from: Arc<dyn Store> = match target.clone() {
            None | Some(Target::Platform) => self.platform.clone(),
            Some(Target::Own(store)) => store,
            Some(Target::Unreachable(reason)) => return Err(StorageError::Backend(reason)),
        };
        let destination = to.clone().unwrap_or_else(|| self.platform.clone());
        copy(&*from, &*destination)?;
        *target = Some(match to {
            Some(store) => Target::Own(store),
            None => Target::Platform,
        });
        Ok(())
    }

    /// Runs `call` on the store that holds the tenant's data.
    fn data<T>(&self, tenant: &TenantId, call: impl FnOnce(&dyn Store) -> Result<T>) -> Result<T> {
        let Some(route) = self.existing_route(tenant) else {
            return call(&*self.platform);
        };
        let target = read(&route.target);
        match &*target {
            None | Some(Target::Platform) => call(&*self.platform),
            Some(Target::Own(store)) => call(&**store),
            Some(Target::Unreachable(reason)) => Err(StorageError::Backend(reason.clone())),
        }
    }

    /// Every tenant's rows of a scan: the platform's for the tenants whose data is there,
    /// each own database's for its tenant. An unreachable database adds nothing (its
    /// tenant's queues resume when it is opened at a later start).
    fn scan<T>(
        &self,
        tenant_of: impl Fn(&T) -> &TenantId,
        scan: impl Fn(&dyn Store) -> Result<Vec<T>>,
    ) -> Result<Vec<T>> {
        let routes: Vec<(TenantId, Arc<Route>)> = read(&self.routes)
            .iter()
            .map(|(tenant, route)| (tenant.clone(), route.clone()))
            .collect();
        let mut elsewhere = std::collections::HashSet::new();
        let mut rows = Vec::new();
        for (tenant, route) in &routes {
            match &*read(&route.target) {
                None | Some(Target::Platform) => {}
                Some(Target::Own(store)) => {
                    elsewhere.insert(tenant.clone());
                    rows.extend(
                        scan(&**store)?
                            .into_iter()
                            .filter(|row| tenant_of(row) == tenant),
                    );
                }
                Some(Target::Unreachable(_)) => {
                    elsewhere.insert(tenant.clone());
                }
            }
        }
        let mut platform: Vec<T> = scan(&*self.platform)?
            .into_iter()
            .filter(|row| !elsewhere.contains(tenant_of(row)))
            .collect();
        platform.append(&mut rows);
        Ok(platform)
    }

    /// Runs `call` on the platform store and on every reachable own database; sums.
    fn everywhere(&self, call: impl Fn(&dyn Store) -> Result<usize>) -> Result<usize> {
        let mut total = call(&*self.platform)?;
        let stores: Vec<Arc<dyn Store>> = read(&self.routes)
            .values()
            .filter_map(|route| match &*read(&route.target) {
                Some(Target::Own(store)) => Some(store.clone()),
                _ => None,
            })
            .collect();
        for store in stores {
            total += call(&*store)?;
        }
        Ok(total)
    }
}

/// Copies the tenant's data (see [`MetaStore::purge_tenant_data`]) from `from` to `to`,
/// after removing whatever `to` held of it (an earlier, interrupted copy), reporting
/// progress after each step. Run again after a failure, it starts over.
pub fn copy_tenant_data(
    from: &dyn Store,
    to: &dyn Store,
    tenant: &TenantId,
    progress: &mut dyn FnMut(CopyProgress),
) -> Result<CopyProgress> {
    const CHUNK: usize = 256;
    while to.purge_tenant_data(tenant, 1_000)? > 0 {}
    let collections = from.collections(tenant)?;
    let mut done = CopyProgress {
        collections_total: collections.len() as u64,
        ..CopyProgress::default()
    };
    progress(done);
    for collection in &collections {
        to.put_collection(tenant, collection)?;
        let mut after: Option<String> = None;
        loop {
            let page = from.memories_page(tenant, &collection.name, after.as_deref(), CHUNK)?;
            let Some(last) = page.last() else { break };
            after = Some(last.record.id.clone());
            to.put_memories(tenant, &collection.name, &page)?;
            done.records_copied += page.len() as u64;
            progress(done);
        }
        if let Some((model, staged)) = from.staged_embeddings(tenant, &collection.name)? {
            for chunk in staged.chunks(CHUNK) {
                to.stage_embeddings(tenant, &collection.name, &model, chunk)?;
            }
        }
        done.collections_done += 1;
        progress(done);
    }
    for job in from.jobs_of(tenant)? {
        to.put_job(&job)?;
        done.records_copied += 1;
    }
    for batch in from.batches_of(tenant)? {
        to.put_batch(&batch)?;
        done.records_copied += 1;
    }
    for job in from.imports_of(tenant)? {
        match from.import_payload(tenant, &job.id)? {
            Some(payload) => to.create_import(&job, &payload)?,
            None => to.put_import(&job)?,
        }
        done.records_copied += 1;
    }
    progress(done);
    Ok(done)
}

impl MetaStore for RoutedStore {
    fn put_tenant(&self, tenant: &TenantRecord) -> Result<()> {
        self.platform.put_tenant(tenant)
    }
    fn tenants(&self) -> Result<Vec<TenantRecord>> {
        self.platform.tenants()
    }
    fn put_api_key(&self, key: &ApiKeyRecord) -> Result<()> {
        self.platform.put_api_key(key)
    }
    fn api_keys(&self, tenant: &TenantId) -> Result<Vec<ApiKeyRecord>> {
        self.platform.api_keys(tenant)
    }
    fn put_collection(&self, tenant: &TenantId, collection: &CollectionRecord) -> Result<()> {
        self.data(tenant, |store| store.put_collection(tenant, collection))
    }
    fn collections(&self, tenant: &TenantId) -> Result<Vec<CollectionRecord>> {
        self.data(tenant, |store| store.collections(tenant))
    }
    fn delete_collection(&self, tenant: &TenantId, name: &CollectionName) -> Result<()> {
        self.data(tenant, |store| store.delete_collection(tenant, name))
    }
    /// The tenant's own database first (its data), then the platform store.
    fn purge_tenant(&self, tenant: &TenantId, max_records: usize) -> Result<usize> {
        let mut removed = 0;
        if self.is_routed(tenant) {
            removed = self.data(tenant, |store| store.purge_tenant(tenant, max_records))?;
        }
        if removed < max_records {
            removed += self.platform.purge_tenant(tenant, max_records - removed)?;
        }
        Ok(removed)
    }
    fn purge_tenant_data(&self, tenant: &TenantId, max_records: usize) -> Result<usize> {
        self.data(tenant, |store| store.purge_tenant_data(tenant, max_records))
    }
    fn delete_tenant(&self, tenant: &TenantId) -> Result<()> {
        self.platform.delete_tenant(tenant)
    }
    fn tenant_bytes(&self, tenant: &TenantId) -> Result<u64> {
        let mut bytes = self.platform.tenant_bytes(tenant)?;
        if self.is_routed(tenant) {
            bytes += self.data(tenant, |store| store.tenant_bytes(tenant))?;
        }
        Ok(bytes)
    }
    fn put_tenant_settings(&self, tenant: &TenantId, settings: &TenantSettings) -> Result<()> {
        self.platform.put_tenant_settings(tenant, settings)
    }
    fn tenant_settings(&self, tenant: &TenantId) -> Result<TenantSettings> {
        self.platform.tenant_settings(tenant)
    }
    fn add_usage(&self, tenant: &TenantId, delta: &UsageRow) -> Result<()> {
        self.platform.add_usage(tenant, delta)
    }
    fn usage(&self, tenant: &TenantId, month: &str) -> Result<Vec<UsageRow>> {
        self.platform.usage(tenant, month)
    }
}

impl JobStore for RoutedStore {
    fn put_job(&self, job: &ExtractJobRecord) -> Result<()> {
        self.data(&job.tenant_id, |store| store.put_job(job))
    }
    fn job(&self, tenant: &TenantId, id: &str) -> Result<Option<ExtractJobRecord>> {
        self.data(tenant, |store| store.job(tenant, id))
    }
    fn unfinished_jobs(&self) -> Result<Vec<ExtractJobRecord>> {
        let mut jobs = self.scan(
            |job: &ExtractJobRecord| &job.tenant_id,
            |store| store.unfinished_jobs(),
        )?;
        jobs.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(self.served(jobs, |job| Some(&job.tenant_id)))
    }
    fn jobs_of(&self, tenant: &TenantId) -> Result<Vec<ExtractJobRecord>> {
        self.data(tenant, |store| store.jobs_of(tenant))
    }
    fn prune_jobs(&self, before: DateTime<Utc>) -> Result<usize> {
        self.everywhere(|store| store.prune_jobs(before))
    }
}

impl MemoryStore for RoutedStore {
    fn put_memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        memories: &[StoredMemory],
    ) -> Result<()> {
        self.data(tenant, |store| {
            store.put_memories(tenant, collection, memories)
        })
    }
    fn memory(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        id: &str,
    ) -> Result<Option<StoredMemory>> {
        self.data(tenant, |store| store.memory(tenant, collection, id))
    }
    fn memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Vec<StoredMemory>> {
        self.data(tenant, |store| store.memories(tenant, collection))
    }
    fn memory_records(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Vec<MemoryRecord>> {
        self.data(tenant, |store| store.memory_records(tenant, collection))
    }
    fn visit_memory_records(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        visit: &mut dyn FnMut(MemoryRecord),
    ) -> Result<()> {
        self.data(tenant, |store| {
            store.visit_memory_records(tenant, collection, visit)
        })
    }
    fn embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        ids: &[&str],
    ) -> Result<Vec<Option<Vec<f32>>>> {
        self.data(tenant, |store| store.embeddings(tenant, collection, ids))
    }
    fn memories_page(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMemory>> {
        self.data(tenant, |store| {
            store.memories_page(tenant, collection, after, limit)
        })
    }
    fn delete_memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        ids: &[String],
    ) -> Result<()> {
        self.data(tenant, |store| {
            store.delete_memories(tenant, collection, ids)
        })
    }
    fn move_memory(
        &self,
        tenant: &TenantId,
        from: &CollectionName,
        to: &CollectionName,
        memory: &StoredMemory,
    ) -> Result<()> {
        self.data(tenant, |store| store.move_memory(tenant, from, to, memory))
    }
}

impl ReembedStore for RoutedStore {
    fn stage_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        model: &EmbeddingModel,
        staged: &[StagedEmbedding],
    ) -> Result<()> {
        self.data(tenant, |store| {
            store.stage_embeddings(tenant, collection, model, staged)
        })
    }
    fn staged_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Option<(EmbeddingModel, Vec<StagedEmbedding>)>> {
        self.data(tenant, |store| store.staged_embeddings(tenant, collection))
    }
    fn swap_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionRecord,
        memories: &[StoredMemory],
    ) -> Result<()> {
        self.data(tenant, |store| {
            store.swap_embeddings(tenant, collection, memories)
        })
    }
}

impl OutboxStore for RoutedStore {
    fn put_delivery(&self, delivery: &OutboxDelivery) -> Result<()> {
        self.platform.put_delivery(delivery)
    }
    fn delivery(&self, tenant: &TenantId, id: &str) -> Result<Option<OutboxDelivery>> {
        self.platform.delivery(tenant, id)
    }
    fn pending_deliveries(&self) -> Result<Vec<OutboxDelivery>> {
        Ok(
            self.served(self.platform.pending_deliveries()?, |delivery| {
                Some(&delivery.tenant_id)
            }),
        )
    }
    fn delete_delivery(&self, tenant: &TenantId, id: &str) -> Result<()> {
        self.platform.delete_delivery(tenant, id)
    }
    fn delete_deliveries_of(&self, tenant: &TenantId) -> Result<usize> {
        self.platform.delete_deliveries_of(tenant)
    }
}

impl AuditStore for RoutedStore {
    fn append_audit(&self, entries: &[AuditEntry]) -> Result<()> {
        self.platform.append_audit(entries)
    }
    fn audit(
        &self,
        tenant: &TenantId,
        since: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>> {
        self.platform.audit(tenant, since, limit)
    }
    fn prune_audit(&self, before: DateTime<Utc>) -> Result<usize> {
        self.platform.prune_audit(before)
    }
}

impl IngestStore for RoutedStore {
    fn put_batch(&self, batch: &IngestBatchRecord) -> Result<()> {
        self.data(&batch.tenant_id, |store| store.put_batch(batch))
    }
    fn batch(&self, tenant: &TenantId, id: &str) -> Result<Option<IngestBatchRecord>> {
        self.data(tenant, |store| store.batch(tenant, id))
    }
    fn unfinished_batches(&self) -> Result<Vec<IngestBatchRecord>> {
        let mut batches = self.scan(
            |batch: &IngestBatchRecord| &batch.tenant_id,
            |store| store.unfinished_batches(),
        )?;
        batches.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(self.served(batches, |batch| Some(&batch.tenant_id)))
    }
    fn batches_of(&self, tenant: &TenantId) -> Result<Vec<IngestBatchRecord>> {
        self.data(tenant, |store| store.batches_of(tenant))
    }
    fn prune_batches(&self, before: DateTime<Utc>) -> Result<usize> {
        self.everywhere(|store| store.prune_batches(before))
    }
}

impl ImportStore for RoutedStore {
    fn create_import(&self, job: &ImportJobRecord, payload: &ImportPayload) -> Result<()> {
        self.data(&job.tenant_id, |store| store.create_import(job, payload))
    }
    fn put_import(&self, job: &ImportJobRecord) -> Result<()> {
        self.data(&job.tenant_id, |store| store.put_import(job))
    }
    fn import_job(&self, tenant: &TenantId, id: &str) -> Result<Option<ImportJobRecord>> {
        self.data(tenant, |store| store.import_job(tenant, id))
    }
    fn import_payload(&self, tenant: &TenantId, id: &str) -> Result<Option<ImportPayload>> {
        self.data(tenant, |store| store.import_payload(tenant, id))
    }
    fn unfinished_imports(&self) -> Result<Vec<ImportJobRecord>> {
        let mut jobs = self.scan(
            |job: &ImportJobRecord| &job.tenant_id,
            |store| store.unfinished_imports(),
        )?;
        jobs.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(self.served(jobs, |job| Some(&job.tenant_id)))
    }
    fn imports_of(&self, tenant: &TenantId) -> Result<Vec<ImportJobRecord>> {
        self.data(tenant, |store| store.imports_of(tenant))
    }
}

impl SessionStore for RoutedStore {
    fn put_session(&self, session: &SessionRecord) -> Result<()> {
        self.platform.put_session(session)
    }
    fn session(&self, id_hash: &str) -> Result<Option<SessionRecord>> {
        self.platform.session(id_hash)
    }
    fn delete_session(&self, id_hash: &str) -> Result<bool> {
        self.platform.delete_session(id_hash)
    }
    fn sessions_of(&self, tenant: &TenantId) -> Result<Vec<SessionRecord>> {
        self.platform.sessions_of(tenant)
    }
    fn delete_sessions_of(&self, tenant: &TenantId) -> Result<usize> {
        self.platform.delete_sessions_of(tenant)
    }
    fn prune_sessions(&self, before: DateTime<Utc>) -> Result<usize> {
        self.platform.prune_sessions(before)
    }
}

impl AccountStore for RoutedStore {
    fn put_mail(&self, mail: &MailRecord) -> Result<()> {
        self.platform.put_mail(mail)
    }
    fn mail(&self, id: &str) -> Result<Option<MailRecord>> {
        self.platform.mail(id)
    }
    fn pending_mails(&self) -> Result<Vec<MailRecord>> {
        Ok(self.served(self.platform.pending_mails()?, |mail| {
            mail.tenant_id.as_ref()
        }))
    }
    fn delete_mail(&self, id: &str) -> Result<()> {
        self.platform.delete_mail(id)
    }
    fn delete_mails_of(&self, tenant: &TenantId) -> Result<usize> {
        self.platform.delete_mails_of(tenant)
    }
    fn put_reveal(&self, reveal: &RevealRecord) -> Result<()> {
        self.platform.put_reveal(reveal)
    }
    fn reveal(&self, token_hash: &str) -> Result<Option<RevealRecord>> {
        self.platform.reveal(token_hash)
    }
    fn take_reveal(&self, token_hash: &str) -> Result<Option<RevealRecord>> {
        self.platform.take_reveal(token_hash)
    }
    fn delete_reveals_of(&self, tenant: &TenantId) -> Result<usize> {
        self.platform.delete_reveals_of(tenant)
    }
    fn prune_reveals(&self, before: DateTime<Utc>) -> Result<usize> {
        self.platform.prune_reveals(before)
    }
    fn record_event_once(&self, source: &str, id: &str, at: DateTime<Utc>) -> Result<bool> {
        self.platform.record_event_once(source, id, at)
    }
    fn forget_event(&self, source: &str, id: &str) -> Result<()> {
        self.platform.forget_event(source, id)
    }
    fn forget_events_of(&self, source: &str) -> Result<usize> {
        self.platform.forget_events_of(source)
    }
    fn prune_events(&self, before: DateTime<Utc>) -> Result<usize> {
        self.platform.prune_events(before)
    }
    fn email_address_of(&self, tenant: &TenantId) -> Result<Option<EmailAddressRecord>> {
        self.platform.email_address_of(tenant)
    }
    fn email_address_by_hash(&self, local_hash: &str) -> Result<Option<EmailAddressRecord>> {
        self.platform.email_address_by_hash(local_hash)
    }
    fn replace_email_address(
        &self,
        address: &EmailAddressRecord,
        expected: Option<&str>,
    ) -> Result<bool> {
        self.platform.replace_email_address(address, expected)
    }
    fn delete_email_address_of(&self, tenant: &TenantId) -> Result<bool> {
        self.platform.delete_email_address_of(tenant)
    }
}

impl ConnectorStore for RoutedStore {
    fn put_connection(&self, connection: &ConnectionRecord) -> Result<()> {
        self.platform.put_connection(connection)
    }
    fn connection(&self, tenant: &TenantId, id: &str) -> Result<Option<ConnectionRecord>> {
        self.platform.connection(tenant, id)
    }
    fn connections(&self, tenant: &TenantId) -> Result<Vec<ConnectionRecord>> {
        self.platform.connections(tenant)
    }
    fn all_connections(&self) -> Result<Vec<ConnectionRecord>> {
        Ok(self.served(self.platform.all_connections()?, |connection| {
            Some(&connection.tenant_id)
        }))
    }
    fn delete_connection(&self, tenant: &TenantId, id: &str) -> Result<bool> {
        self.platform.delete_connection(tenant, id)
    }
    fn put_run(&self, run: &SyncRunRecord) -> Result<()> {
        self.platform.put_run(run)
    }
    fn runs(
        &self,
        tenant: &TenantId,
        connection: &str,
        limit: usize,
    ) -> Result<Vec<SyncRunRecord>> {
        self.platform.runs(tenant, connection, limit)
    }
    fn runs_since(&self, since: DateTime<Utc>) -> Result<Vec<SyncRunRecord>> {
        self.platform.runs_since(since)
    }
    fn trim_runs(&self, tenant: &TenantId, connection: &str, keep: usize) -> Result<usize> {
        self.platform.trim_runs(tenant, connection, keep)
    }
    fn synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        ids: &[String],
    ) -> Result<Vec<Option<SyncedRecord>>> {
        self.platform.synced_records(tenant, connection, ids)
    }
    fn put_synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        records: &[SyncedRecord],
    ) -> Result<()> {
        self.platform
            .put_synced_records(tenant, connection, records)
    }
    fn delete_synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        ids: &[String],
    ) -> Result<()> {
        self.platform.delete_synced_records(tenant, connection, ids)
    }
    fn synced_record_ids(&self, tenant: &TenantId, connection: &str) -> Result<Vec<String>> {
        self.platform.synced_record_ids(tenant, connection)
    }
    fn put_oauth_state(&self, state: &OAuthStateRecord) -> Result<()> {
        self.platform.put_oauth_state(state)
    }
    fn take_oauth_state(&self, state_hash: &str) -> Result<Option<OAuthStateRecord>> {
        self.platform.take_oauth_state(state_hash)
    }
    fn prune_oauth_states(&self, before: DateTime<Utc>) -> Result<usize> {
        self.platform.prune_oauth_states(before)
    }
}

#[cfg(test)]
mod tests {
    //! The store suite through a `RoutedStore` with no tenant routed (every call reaches
    //! the platform store as it was), then routing and switching between two sled stores.

    use std::sync::Arc;

    use super::{copy_tenant_data, RoutedStore};
    use crate::records::{CollectionName, JobState, TenantId};
    use crate::sled_store::SledStore;
    use crate::store::{JobStore, MemoryStore, MetaStore, Store};
    use crate::store_suite::{sample_collection, sample_memory, sample_tenant};

    crate::store_suite!(routed, || {
        let directory = tempfile::tempdir().unwrap();
        let store = RoutedStore::new(Arc::new(SledStore::open(directory.path()).unwrap()));
        (store, directory)
    });

    fn sled() -> (Arc<dyn Store>, tempfile::TempDir) {
        let directory = tempfile::tempdir().unwrap();
        (
            Arc::new(SledStore::open(directory.path()).unwrap()),
            directory,
        )
    }

    fn notes() -> CollectionName {
        CollectionName::parse("notes").unwrap()
    }

    /// A tenant with a collection of `n` memories and an unfinished extraction job.
    fn fill(store: &dyn Store, name: &str, n: usize) -> TenantId {
        let tenant = sample_tenant(name);
        store.put_tenant(&tenant).unwrap();
        store
            .put_collection(&tenant.id, &sample_collection("notes"))
            .unwrap();
        let memories: Vec<_> = (0..n)
            .map(|index| sample_memory(&format!("{name}-{index}"), "text"))
            .collect();
        store.put_memories(&tenant.id, &notes(), &memories).unwrap();
        let mut job = crate::store_suite::sample_job(&tenant.id, &format!("job-{name}"));
        job.state = JobState::Queued;
        store.put_job(&job).unwrap();
        tenant.id
    }

    #[test]
    fn a_switch_moves_the_data_and_keeps_the_account_and_comes_back() {
        let ((platform, _one), (own, _two)) = (sled(), sled());
        let routed = RoutedStore::new(platform.clone());
        let moving = fill(&routed, "moving", 600);
        let staying = fill(&routed, "staying", 3);
        let settings_before = routed.tenant_settings(&moving).unwrap();
        // sled finds its queues through its tenant records; a tenant's own database is
        // Postgres, whose queues are tables. Give the sled stand-in its tenant.
        own.put_tenant(
            &routed
                .tenants()
                .unwrap()
                .into_iter()
                .find(|t| t.id == moving)
                .unwrap(),
        )
        .unwrap();

        let mut seen = Vec::new();
        routed
            .switch(&moving, Some(own.clone()), |from, to| {
                copy_tenant_data(from, to, &moving, &mut |progress| seen.push(progress)).map(drop)
            })
            .unwrap();
        let last = seen.last().copied().unwrap();
        assert_eq!((last.collections_total, last.collections_done), (1, 1));
        assert_eq!(last.records_copied, 601, "600 memories and one job");
        assert!(seen.len() > 3, "progress came in steps: {seen:?}");
        assert!(routed.is_routed(&moving));

        // Data calls go to the tenant's own store; the account stays on the platform.
        assert_eq!(own.memories(&moving, &notes()).unwrap().len(), 600);
        assert_eq!(routed.memories(&moving, &notes()).unwrap().len(), 600);
        let extra = sample_memory("written-after", "lands in its own store");
        routed
            .put_memories(&moving, &notes(), std::slice::from_ref(&extra))
            .unwrap();
        assert!(own
            .memory(&moving, &notes(), "written-after")
            .unwrap()
            .is_some());
        assert!(platform
            .memory(&moving, &notes(), "written-after")
            .unwrap()
            .is_none());
        assert_eq!(routed.tenant_settings(&moving).unwrap(), settings_before);
        assert!(
            own.api_keys(&moving).unwrap().is_empty(),
            "the account stays on the platform"
        );

        // The platform's stale copy is never read or resumed.
        let jobs: Vec<_> = routed.unfinished_jobs().unwrap();
        assert_eq!(
            jobs.iter().filter(|job| job.tenant_id == moving).count(),
            1,
            "the job is listed once, from the tenant's own store"
        );
        assert_eq!(
            jobs.iter().filter(|job| job.tenant_id == staying).count(),
            1
        );
        while platform.purge_tenant_data(&moving, 100).unwrap() > 0 {}
        assert!(platform.collections(&moving).unwrap().is_empty());
        assert_eq!(routed.collections(&moving).unwrap().len(), 1);

        // And back: everything, the write made since included, returns to the platform.
        routed
            .switch(&moving, None, |from, to| {
                copy_tenant_data(from, to, &moving, &mut |_| {}).map(drop)
            })
            .unwrap();
        assert!(!routed.is_routed(&moving));
        assert_eq!(platform.memories(&moving, &notes()).unwrap().len(), 601);
        assert_eq!(routed.memories(&moving, &notes()).unwrap().len(), 601);
        assert_eq!(routed.jobs_of(&moving).unwrap().len(), 1);
        assert_eq!(routed.memories(&staying, &notes()).unwrap().len(), 3);
    }

    #[test]
    fn a_failed_copy_leaves_the_data_where_it_was() {
        let ((platform, _one), (own, _two)) = (sled(), sled());
        let routed = RoutedStore::new(platform);
        let tenant = fill(&routed, "tenant", 5);
        let failed = routed.switch(&tenant, Some(own), |_, _| {
            Err(crate::StorageError::Backend("the copy broke".to_owned()))
        });
        assert!(failed.is_err());
        assert!(!routed.is_routed(&tenant));
        assert_eq!(routed.memories(&tenant, &notes()).unwrap().len(), 5);
    }

    #[test]
    fn an_unreachable_database_fails_its_tenant_and_nobody_else() {
        let (platform, _one) = sled();
        let routed = RoutedStore::new(platform);
        let (lost, kept) = (fill(&routed, "lost", 2), fill(&routed, "kept", 2));
        routed.mark_unreachable(&lost, "connection refused".to_owned());
        let error = routed.memories(&lost, &notes()).unwrap_err();
        assert!(error.to_string().contains("connection refused"), "{error}");
        assert!(routed
            .put_memories(&lost, &notes(), &[sample_memory("x", "y")])
            .is_err());
        assert_eq!(routed.memories(&kept, &notes()).unwrap().len(), 2);
        assert!(routed
            .unfinished_jobs()
            .unwrap()
            .iter()
            .all(|job| job.tenant_id == kept));
        assert!(routed.api_keys(&lost).is_ok(), "its account still answers");
    }

    #[test]
    fn data_calls_wait_for_a_switch_and_then_go_to_the_new_store() {
        let ((platform, _one), (own, _two)) = (sled(), sled());
        let routed = Arc::new(RoutedStore::new(platform.clone()));
        let tenant = fill(&*routed, "busy", 50);
        let (started, release) = (
            Arc::new(std::sync::Barrier::new(2)),
            Arc::new(std::sync::Barrier::new(2)),
        );
        let switcher = {
            let (routed, own, tenant) = (routed.clone(), own.clone(), tenant.clone());
            let (started, release) = (started.clone(), release.clone());
            std::thread::spawn(move || {
                routed
                    .switch(&tenant, Some(own), |from, to| {
                        started.wait();
                        release.wait();
                        copy_tenant_data(from, to, &tenant, &mut |_| {}).map(drop)
                    })
                    .unwrap();
            })
        };
        started.wait();
        let writer = {
            let (routed, tenant) = (routed.clone(), tenant.clone());
            std::thread::spawn(move || {
                routed
                    .put_memories(&tenant, &notes(), &[sample_memory("during", "waits")])
                    .unwrap();
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!writer.is_finished(), "the write waits for the copy");
        release.wait();
        switcher.join().unwrap();
        writer.join().unwrap();
        assert!(own.memory(&tenant, &notes(), "during").unwrap().is_some());
        assert!(platform
            .memory(&tenant, &notes(), "during")
            .unwrap()
            .is_none());
    }
}
