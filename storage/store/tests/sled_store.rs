//! The store suite against sled, plus what only sled has: reopening the same directory.

use memvault_storage::store_suite::{self, sample_collection, sample_memory, sample_tenant};
use memvault_storage::{
    CollectionName, MemoryStore, MetaStore, OutboxDelivery, OutboxStore, SledStore,
};

#[test]
fn sled_passes_the_store_suite() {
    let directory = tempfile::tempdir().unwrap();
    let store = SledStore::open(directory.path()).unwrap();
    store_suite::run_all(&store);
}

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
