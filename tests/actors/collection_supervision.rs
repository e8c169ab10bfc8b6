//! Actor tests without HTTP: a collection actor that fails is restarted by its tenant
//! actor with its state reloaded from the store; meanwhile requests fail fast.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memvault_core::service::{Read, Write};
use memvault_core::{Agent, Error, ListPage, Memvault, ServiceConfig};
use memvault_storage::error::Result as StoreResult;
use memvault_storage::{
    ApiKeyRecord, CollectionName, CollectionRecord, ImportJobRecord, ImportPayload, ImportStore,
    MemoryStore, MetaStore, SledStore, StorageError, StoredMemory, TenantId, TenantRecord,
};

use crate::support::new_memory;

/// Sled, with memory writes that fail while `failing` is set.
struct FlakyStore {
    inner: SledStore,
    failing: AtomicBool,
}

impl FlakyStore {
    fn check(&self) -> StoreResult<()> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(StorageError::Corrupt {
                key: "injected".to_owned(),
                reason: "injected write failure".to_owned(),
            });
        }
        Ok(())
    }
}

impl ImportStore for FlakyStore {
    fn create_import(&self, job: &ImportJobRecord, payload: &ImportPayload) -> StoreResult<()> {
        self.inner.create_import(job, payload)
    }
    fn put_import(&self, job: &ImportJobRecord) -> StoreResult<()> {
        self.inner.put_import(job)
    }
    fn import_job(&self, tenant: &TenantId, id: &str) -> StoreResult<Option<ImportJobRecord>> {
        self.inner.import_job(tenant, id)
    }
    fn import_payload(&self, tenant: &TenantId, id: &str) -> StoreResult<Option<ImportPayload>> {
        self.inner.import_payload(tenant, id)
    }
    fn unfinished_imports(&self) -> StoreResult<Vec<ImportJobRecord>> {
        self.inner.unfinished_imports()
    }
    fn imports_of(&self, tenant: &TenantId) -> StoreResult<Vec<ImportJobRecord>> {
        self.inner.imports_of(tenant)
    }
}

impl memvault_storage::ConnectorStore for FlakyStore {
    fn put_connection(&self, connection: &memvault_storage::ConnectionRecord) -> StoreResult<()> {
        self.inner.put_connection(connection)
    }
    fn connection(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> StoreResult<Option<memvault_storage::ConnectionRecord>> {
        self.inner.connection(tenant, id)
    }
    fn connections(
        &self,
        tenant: &TenantId,
    ) -> StoreResult<Vec<memvault_storage::ConnectionRecord>> {
        self.inner.connections(tenant)
    }
    fn all_connections(&self) -> StoreResult<Vec<memvault_storage::ConnectionRecord>> {
        self.inner.all_connections()
    }
    fn delete_connection(&self, tenant: &TenantId, id: &str) -> StoreResult<bool> {
        self.inner.delete_connection(tenant, id)
    }
    fn put_run(&self, run: &memvault_storage::SyncRunRecord) -> StoreResult<()> {
        self.inner.put_run(run)
    }
    fn runs(
        &self,
        tenant: &TenantId,
        connection: &str,
        limit: usize,
    ) -> StoreResult<Vec<memvault_storage::SyncRunRecord>> {
        self.inner.runs(tenant, connection, limit)
    }
    fn runs_since(
        &self,
        since: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<Vec<memvault_storage::SyncRunRecord>> {
        self.inner.runs_since(since)
    }
    fn trim_runs(&self, tenant: &TenantId, connection: &str, keep: usize) -> StoreResult<usize> {
        self.inner.trim_runs(tenant, connection, keep)
    }
    fn synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        ids: &[String],
    ) -> StoreResult<Vec<Option<memvault_storage::SyncedRecord>>> {
        self.inner.synced_records(tenant, connection, ids)
    }
    fn put_synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        records: &[memvault_storage::SyncedRecord],
    ) -> StoreResult<()> {
        self.inner.put_synced_records(tenant, connection, records)
    }
    fn delete_synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        ids: &[String],
    ) -> StoreResult<()> {
        self.inner.delete_synced_records(tenant, connection, ids)
    }
    fn synced_record_ids(&self, tenant: &TenantId, connection: &str) -> StoreResult<Vec<String>> {
        self.inner.synced_record_ids(tenant, connection)
    }
    fn put_oauth_state(&self, state: &memvault_storage::OAuthStateRecord) -> StoreResult<()> {
        self.inner.put_oauth_state(state)
    }
    fn take_oauth_state(
        &self,
        state_hash: &str,
    ) -> StoreResult<Option<memvault_storage::OAuthStateRecord>> {
        self.inner.take_oauth_state(state_hash)
    }
    fn prune_oauth_states(&self, before: chrono::DateTime<chrono::Utc>) -> StoreResult<usize> {
        self.inner.prune_oauth_states(before)
    }
}

impl MetaStore for FlakyStore {
    fn put_tenant(&self, tenant: &TenantRecord) -> StoreResult<()> {
        self.inner.put_tenant(tenant)
    }
    fn tenants(&self) -> StoreResult<Vec<TenantRecord>> {
        self.inner.tenants()
    }
    fn put_api_key(&self, key: &ApiKeyRecord) -> StoreResult<()> {
        self.inner.put_api_key(key)
    }
    fn api_keys(&self, tenant: &TenantId) -> StoreResult<Vec<ApiKeyRecord>> {
        self.inner.api_keys(tenant)
    }
    fn put_collection(&self, tenant: &TenantId, collection: &CollectionRecord) -> StoreResult<()> {
        self.inner.put_collection(tenant, collection)
    }
    fn collections(&self, tenant: &TenantId) -> StoreResult<Vec<CollectionRecord>> {
        self.inner.collections(tenant)
    }
    fn delete_collection(&self, tenant: &TenantId, name: &CollectionName) -> StoreResult<()> {
        self.inner.delete_collection(tenant, name)
    }
    fn purge_tenant(&self, tenant: &TenantId, max_records: usize) -> StoreResult<usize> {
        self.inner.purge_tenant(tenant, max_records)
    }
    fn delete_tenant(&self, tenant: &TenantId) -> StoreResult<()> {
        self.inner.delete_tenant(tenant)
    }
    fn purge_tenant_data(&self, tenant: &TenantId, max_records: usize) -> StoreResult<usize> {
        self.inner.purge_tenant_data(tenant, max_records)
    }
    fn tenant_bytes(&self, tenant: &TenantId) -> StoreResult<u64> {
        self.inner.tenant_bytes(tenant)
    }

    fn put_tenant_settings(
        &self,
        tenant: &TenantId,
        settings: &memvault_storage::TenantSettings,
    ) -> StoreResult<()> {
        self.inner.put_tenant_settings(tenant, settings)
    }

    fn tenant_settings(&self, tenant: &TenantId) -> StoreResult<memvault_storage::TenantSettings> {
        self.inner.tenant_settings(tenant)
    }

    fn add_usage(&self, tenant: &TenantId, delta: &memvault_storage::UsageRow) -> StoreResult<()> {
        self.inner.add_usage(tenant, delta)
    }

    fn usage(
        &self,
        tenant: &TenantId,
        month: &str,
    ) -> StoreResult<Vec<memvault_storage::UsageRow>> {
        self.inner.usage(tenant, month)
    }
}

impl memvault_storage::JobStore for FlakyStore {
    fn put_job(&self, job: &memvault_storage::ExtractJobRecord) -> StoreResult<()> {
        self.inner.put_job(job)
    }

    fn job(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> StoreResult<Option<memvault_storage::ExtractJobRecord>> {
        self.inner.job(tenant, id)
    }

    fn unfinished_jobs(&self) -> StoreResult<Vec<memvault_storage::ExtractJobRecord>> {
        self.inner.unfinished_jobs()
    }
    fn jobs_of(&self, tenant: &TenantId) -> StoreResult<Vec<memvault_storage::ExtractJobRecord>> {
        self.inner.jobs_of(tenant)
    }

    fn prune_jobs(&self, before: chrono::DateTime<chrono::Utc>) -> StoreResult<usize> {
        self.inner.prune_jobs(before)
    }
}

impl memvault_storage::IngestStore for FlakyStore {
    fn put_batch(&self, batch: &memvault_storage::IngestBatchRecord) -> StoreResult<()> {
        self.inner.put_batch(batch)
    }

    fn batch(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> StoreResult<Option<memvault_storage::IngestBatchRecord>> {
        self.inner.batch(tenant, id)
    }

    fn unfinished_batches(&self) -> StoreResult<Vec<memvault_storage::IngestBatchRecord>> {
        self.inner.unfinished_batches()
    }
    fn batches_of(
        &self,
        tenant: &TenantId,
    ) -> StoreResult<Vec<memvault_storage::IngestBatchRecord>> {
        self.inner.batches_of(tenant)
    }

    fn prune_batches(&self, before: chrono::DateTime<chrono::Utc>) -> StoreResult<usize> {
        self.inner.prune_batches(before)
    }
}

impl memvault_storage::OutboxStore for FlakyStore {
    fn put_delivery(&self, delivery: &memvault_storage::OutboxDelivery) -> StoreResult<()> {
        self.inner.put_delivery(delivery)
    }

    fn delivery(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> StoreResult<Option<memvault_storage::OutboxDelivery>> {
        self.inner.delivery(tenant, id)
    }

    fn pending_deliveries(&self) -> StoreResult<Vec<memvault_storage::OutboxDelivery>> {
        self.inner.pending_deliveries()
    }

    fn delete_delivery(&self, tenant: &TenantId, id: &str) -> StoreResult<()> {
        self.inner.delete_delivery(tenant, id)
    }

    fn delete_deliveries_of(&self, tenant: &TenantId) -> StoreResult<usize> {
        self.inner.delete_deliveries_of(tenant)
    }
}

impl memvault_storage::SessionStore for FlakyStore {
    fn put_session(&self, session: &memvault_storage::SessionRecord) -> StoreResult<()> {
        self.inner.put_session(session)
    }

    fn session(&self, id_hash: &str) -> StoreResult<Option<memvault_storage::SessionRecord>> {
        self.inner.session(id_hash)
    }

    fn delete_session(&self, id_hash: &str) -> StoreResult<bool> {
        self.inner.delete_session(id_hash)
    }

    fn sessions_of(&self, tenant: &TenantId) -> StoreResult<Vec<memvault_storage::SessionRecord>> {
        self.inner.sessions_of(tenant)
    }

    fn delete_sessions_of(&self, tenant: &TenantId) -> StoreResult<usize> {
        self.inner.delete_sessions_of(tenant)
    }

    fn prune_sessions(&self, before: chrono::DateTime<chrono::Utc>) -> StoreResult<usize> {
        self.inner.prune_sessions(before)
    }
}

impl memvault_storage::AccountStore for FlakyStore {
    fn put_mail(&self, mail: &memvault_storage::MailRecord) -> StoreResult<()> {
        self.inner.put_mail(mail)
    }

    fn mail(&self, id: &str) -> StoreResult<Option<memvault_storage::MailRecord>> {
        self.inner.mail(id)
    }

    fn pending_mails(&self) -> StoreResult<Vec<memvault_storage::MailRecord>> {
        self.inner.pending_mails()
    }

    fn delete_mail(&self, id: &str) -> StoreResult<()> {
        self.inner.delete_mail(id)
    }

    fn delete_mails_of(&self, tenant: &TenantId) -> StoreResult<usize> {
        self.inner.delete_mails_of(tenant)
    }

    fn put_reveal(&self, reveal: &memvault_storage::RevealRecord) -> StoreResult<()> {
        self.inner.put_reveal(reveal)
    }

    fn reveal(&self, token_hash: &str) -> StoreResult<Option<memvault_storage::RevealRecord>> {
        self.inner.reveal(token_hash)
    }

    fn take_reveal(&self, token_hash: &str) -> StoreResult<Option<memvault_storage::RevealRecord>> {
        self.inner.take_reveal(token_hash)
    }

    fn delete_reveals_of(&self, tenant: &TenantId) -> StoreResult<usize> {
        self.inner.delete_reveals_of(tenant)
    }

    fn prune_reveals(&self, before: chrono::DateTime<chrono::Utc>) -> StoreResult<usize> {
        self.inner.prune_reveals(before)
    }

    fn record_event_once(
        &self,
        source: &str,
        id: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<bool> {
        self.inner.record_event_once(source, id, at)
    }

    fn forget_event(&self, source: &str, id: &str) -> StoreResult<()> {
        self.inner.forget_event(source, id)
    }
    fn forget_events_of(&self, source: &str) -> StoreResult<usize> {
        self.inner.forget_events_of(source)
    }

    fn prune_events(&self, before: chrono::DateTime<chrono::Utc>) -> StoreResult<usize> {
        self.inner.prune_events(before)
    }

    fn email_address_of(
        &self,
        tenant: &TenantId,
    ) -> StoreResult<Option<memvault_storage::EmailAddressRecord>> {
        self.inner.email_address_of(tenant)
    }

    fn email_address_by_hash(
        &self,
        local_hash: &str,
    ) -> StoreResult<Option<memvault_storage::EmailAddressRecord>> {
        self.inner.email_address_by_hash(local_hash)
    }

    fn replace_email_address(
        &self,
        address: &memvault_storage::EmailAddressRecord,
        expected: Option<&str>,
    ) -> StoreResult<bool> {
        self.inner.replace_email_address(address, expected)
    }

    fn delete_email_address_of(&self, tenant: &TenantId) -> StoreResult<bool> {
        self.inner.delete_email_address_of(tenant)
    }
}

impl memvault_storage::AuditStore for FlakyStore {
    fn append_audit(&self, entries: &[memvault_storage::AuditEntry]) -> StoreResult<()> {
        self.inner.append_audit(entries)
    }

    fn audit(
        &self,
        tenant: &TenantId,
        since: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> StoreResult<Vec<memvault_storage::AuditEntry>> {
        self.inner.audit(tenant, since, limit)
    }

    fn prune_audit(&self, before: chrono::DateTime<chrono::Utc>) -> StoreResult<usize> {
        self.inner.prune_audit(before)
    }
}

impl MemoryStore for FlakyStore {
    fn put_memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        memories: &[StoredMemory],
    ) -> StoreResult<()> {
        self.check()?;
        self.inner.put_memories(tenant, collection, memories)
    }
    fn memory(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        id: &str,
    ) -> StoreResult<Option<StoredMemory>> {
        self.inner.memory(tenant, collection, id)
    }
    fn memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> StoreResult<Vec<StoredMemory>> {
        self.inner.memories(tenant, collection)
    }
    fn memories_page(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<StoredMemory>> {
        self.inner.memories_page(tenant, collection, after, limit)
    }
    fn delete_memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        ids: &[String],
    ) -> StoreResult<()> {
        self.inner.delete_memories(tenant, collection, ids)
    }
    fn move_memory(
        &self,
        tenant: &TenantId,
        from: &CollectionName,
        to: &CollectionName,
        memory: &StoredMemory,
    ) -> StoreResult<()> {
        self.inner.move_memory(tenant, from, to, memory)
    }
}

impl memvault_storage::ReembedStore for FlakyStore {
    fn stage_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        model: &memvault_storage::EmbeddingModel,
        staged: &[memvault_storage::StagedEmbedding],
    ) -> StoreResult<()> {
        self.inner
            .stage_embeddings(tenant, collection, model, staged)
    }

    fn staged_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> StoreResult<
        Option<(
            memvault_storage::EmbeddingModel,
            Vec<memvault_storage::StagedEmbedding>,
        )>,
    > {
        self.inner.staged_embeddings(tenant, collection)
    }

    fn swap_embeddings(
        &self,
        tenant: &TenantId,
        collection: &memvault_storage::CollectionRecord,
        memories: &[StoredMemory],
    ) -> StoreResult<()> {
        self.inner.swap_embeddings(tenant, collection, memories)
    }
}

async fn start(store: Arc<FlakyStore>) -> (Memvault, Agent) {
    start_with(store, ServiceConfig::default()).await
}

async fn start_with(store: Arc<FlakyStore>, config: ServiceConfig) -> (Memvault, Agent) {
    let service = Memvault::start(store, crate::support::length_embedders(), config)
        .await
        .unwrap();
    let tenant = crate::support::tenant();
    let (_, key) = service.tenants().create(tenant).await.unwrap();
    let agent = service.authorizer().authenticate(&key).unwrap();
    (service, agent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_collection_actor_restarts_with_state_from_the_store() {
    let directory = tempfile::tempdir().unwrap();
    let store = Arc::new(FlakyStore {
        inner: SledStore::open(directory.path()).unwrap(),
        failing: AtomicBool::new(false),
    });
    let (service, agent) = start(store.clone()).await;
    let notes = CollectionName::parse("notes").unwrap();
    let write = service
        .authorizer()
        .authorize::<Write>(&agent, notes.clone())
        .unwrap();
    let read = service
        .authorizer()
        .authorize::<Read>(&agent, notes.clone())
        .unwrap();
    let kept = service
        .memories()
        .create(&write, vec![new_memory("kept")])
        .await
        .unwrap();

    store.failing.store(true, Ordering::SeqCst);
    let failed = service
        .memories()
        .create(&write, vec![new_memory("lost")])
        .await;
    assert!(matches!(failed, Err(Error::Storage(_))), "{failed:?}");
    store.failing.store(false, Ordering::SeqCst);

    // Until the restart, writes fail fast with Restarting (503), never hang.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut saw_unavailable = false;
    let recovered = loop {
        let started = Instant::now();
        match service
            .memories()
            .create(&write, vec![new_memory("after")])
            .await
        {
            Ok(created) => break created,
            Err(Error::Restarting { .. } | Error::ActorStopped { .. }) => saw_unavailable = true,
            Err(other) => panic!("unexpected error while restarting: {other}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "a request hung on a restarting actor"
        );
        assert!(
            Instant::now() < deadline,
            "the collection actor was not restarted"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(
        saw_unavailable,
        "the window between failure and restart should answer Unavailable"
    );
    let listed = service
        .memories()
        .list(
            &read,
            ListPage {
                offset: 0,
                limit: 10,
                include_archived: true,
            },
        )
        .unwrap();
    let texts: Vec<&str> = listed.iter().map(|memory| memory.text.as_str()).collect();
    assert_eq!(
        texts,
        vec!["after", "kept"],
        "state reloaded from the store; the failed write is absent"
    );
    assert_eq!(recovered[0].text, "after");
    assert_eq!(kept[0].text, "kept");
    service.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_is_reloaded_after_a_full_restart() {
    let directory = tempfile::tempdir().unwrap();
    let open = || {
        Arc::new(FlakyStore {
            inner: SledStore::open(directory.path()).unwrap(),
            failing: AtomicBool::new(false),
        })
    };
    let (service, agent) = start(open()).await;
    let notes = CollectionName::parse("notes").unwrap();
    let write = service
        .authorizer()
        .authorize::<Write>(&agent, notes.clone())
        .unwrap();
    let read = service
        .authorizer()
        .authorize::<Read>(&agent, notes.clone())
        .unwrap();
    let created = service
        .memories()
        .create(&write, vec![new_memory("one"), new_memory("two")])
        .await
        .unwrap();
    service
        .memories()
        .set_pinned(&write, &created[0].id, true)
        .await
        .unwrap();
    service.shutdown().await;
    drop(service);

    let service = Memvault::start(
        open(),
        crate::support::length_embedders(),
        ServiceConfig::default(),
    )
    .await
    .unwrap();
    let views = service.collections().list(&agent).unwrap();
    assert_eq!(views.len(), 1);
    assert_eq!(views[0].memory_count, 2);
    let first = service.memories().get(&read, &created[0].id).unwrap();
    assert!(first.pinned);
    assert!(service.authorizer().authenticate("mv_not_a_key").is_none());
    service.shutdown().await;
}

/// Writes until the collection actor answers again after a failure (it is restarted).
async fn write_until_restarted(
    service: &Memvault,
    write: &memvault_core::service::CollectionAccess<Write>,
    text: &str,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match service
            .memories()
            .create(write, vec![new_memory(text)])
            .await
        {
            Ok(_) => return,
            Err(Error::Restarting { .. } | Error::ActorStopped { .. }) => {}
            Err(other) => panic!("unexpected error while restarting: {other}"),
        }
        assert!(
            Instant::now() < deadline,
            "the collection actor was not restarted"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collection_actor_killed_twenty_times_degrades_and_recovers_when_the_cause_goes() {
    let directory = tempfile::tempdir().unwrap();
    let store = Arc::new(FlakyStore {
        inner: SledStore::open(directory.path()).unwrap(),
        failing: AtomicBool::new(false),
    });
    let policy = memvault_types::RestartPolicy {
        backoff: memvault_types::Backoff::new(Duration::from_millis(2), Duration::from_millis(20)),
        memory: Duration::from_secs(2),
        degrade_after: 10,
    };
    let config = ServiceConfig {
        restarts: policy,
        ..ServiceConfig::default()
    };
    let (service, agent) = start_with(store.clone(), config).await;
    let notes = CollectionName::parse("notes").unwrap();
    let write = service
        .authorizer()
        .authorize::<Write>(&agent, notes.clone())
        .unwrap();
    let read = service
        .authorizer()
        .authorize::<Read>(&agent, notes.clone())
        .unwrap();
    service
        .memories()
        .create(&write, vec![new_memory("kept")])
        .await
        .unwrap();
    assert!(!service.operator().supervision().is_degraded());

    for round in 0..20 {
        // The cause: the store refuses the write, and the actor fails with it.
        store.failing.store(true, Ordering::SeqCst);
        let failed = service
            .memories()
            .create(&write, vec![new_memory("lost")])
            .await;
        assert!(matches!(failed, Err(Error::Storage(_))), "{failed:?}");
        store.failing.store(false, Ordering::SeqCst);
        write_until_restarted(&service, &write, &format!("after {round}")).await;
        let supervision = service.operator().supervision();
        assert_eq!(
            supervision.degraded_collections,
            u64::from(round + 1 >= 10),
            "degraded from the tenth failure in a row, not before (round {round})"
        );
    }
    let restarts = service.operator().actor_restarts();
    assert_eq!(restarts.collections, 20);
    assert!(service.operator().supervision().is_degraded());

    // The cause is gone: after a quiet spell the collection is no longer degraded.
    let deadline = Instant::now() + Duration::from_secs(30);
    while service.operator().supervision().is_degraded() {
        assert!(
            Instant::now() < deadline,
            "still degraded long after the cause went"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let listed = service
        .memories()
        .list(
            &read,
            ListPage {
                offset: 0,
                limit: 100,
                include_archived: true,
            },
        )
        .unwrap();
    assert_eq!(
        listed.len(),
        21,
        "every acknowledged write, none of the refused ones"
    );
    assert!(listed.iter().all(|memory| memory.text != "lost"));
    service.shutdown().await;
}
