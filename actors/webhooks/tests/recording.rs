//! `record_events`, the broker subscriber: an event of a tenant with a webhook is written
//! to the outbox; one of a tenant without is not. A tenant this node let go of between
//! the write and the recording (several nodes: its lease was lost meanwhile) is asked of
//! the store, so the event of a durable write is not dropped because another node serves
//! the tenant now.

use std::sync::Arc;

use chrono::Utc;
use memvault_events::{MemoryEvent, MemoryEventKind};
use memvault_jobs::JobQueue;
use memvault_storage::{
    CollectionName, CreatedBy, MemoryRecord, SledStore, Store, TenantId, TenantSettings,
    WebhookRecord,
};
use memvault_webhooks::{
    record_events, DeliveryLog, WebhookDeliveries, WebhookDirectory, WebhookSettings,
};

/// What this node knows of the tenant: whether it serves it, and the webhook it has
/// loaded.
struct Node {
    serves: bool,
    webhook: Option<WebhookRecord>,
}

impl WebhookDirectory for Node {
    fn serves(&self, _tenant: &TenantId) -> bool {
        self.serves
    }

    fn webhook(&self, _tenant: &TenantId) -> Option<WebhookRecord> {
        self.webhook.clone()
    }
}

fn webhook() -> WebhookRecord {
    WebhookRecord {
        url: "http://127.0.0.1:9/hook".to_owned(),
        secret_sealed: "sealed".to_owned(),
        created_at: Utc::now(),
    }
}

/// Records one `memory.created` of `tenant` through a node that knows `node`, with
/// `stored` as the tenant's webhook in the store; how many deliveries the outbox holds
/// then.
async fn record_one(node: Node, stored: Option<WebhookRecord>) -> usize {
    let directory = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SledStore::open(directory.path()).unwrap());
    let tenant = TenantId::from_stored("ten_recording");
    store
        .put_tenant_settings(
            &tenant,
            &TenantSettings {
                webhook: stored,
                ..TenantSettings::default()
            },
        )
        .unwrap();
    let node: Arc<dyn WebhookDirectory> = Arc::new(node);
    let kind = WebhookDeliveries::new(
        store.clone(),
        node.clone(),
        None,
        WebhookSettings::default(),
        DeliveryLog::default(),
    )
    .unwrap();
    let queue = JobQueue::start(Arc::new(kind), 1).await.unwrap();
    let (events, mut subscription) = tokio::sync::mpsc::unbounded_channel();
    let memory = MemoryRecord::new(
        "Ana flies to Lisbon.".to_owned(),
        0.5,
        "other".to_owned(),
        "api".to_owned(),
        CreatedBy {
            id: "key_1".to_owned(),
            label: "test".to_owned(),
        },
        Utc::now(),
    );
    events
        .send(Arc::new(MemoryEvent {
            tenant: tenant.clone(),
            collection: CollectionName::parse("notes").unwrap(),
            kind: MemoryEventKind::Created,
            memory: Arc::new(memory),
            at: Utc::now(),
        }))
        .unwrap();
    drop(events);
    record_events(&mut subscription, store.clone(), node, queue).await;
    store
        .pending_deliveries()
        .unwrap()
        .into_iter()
        .filter(|delivery| delivery.tenant_id == tenant)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_of_a_tenant_with_a_webhook_is_written_to_the_outbox() {
    let node = Node {
        serves: true,
        webhook: Some(webhook()),
    };
    assert_eq!(record_one(node, Some(webhook())).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_of_a_tenant_without_a_webhook_is_not_recorded() {
    let node = Node {
        serves: true,
        webhook: None,
    };
    assert_eq!(record_one(node, None).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_of_a_tenant_let_go_of_since_its_write_is_still_recorded() {
    let node = Node {
        serves: false,
        webhook: None,
    };
    assert_eq!(
        record_one(node, Some(webhook())).await,
        1,
        "the store's webhook decides, not this node's registry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_of_a_tenant_let_go_of_without_a_webhook_is_not_recorded() {
    let node = Node {
        serves: false,
        webhook: None,
    };
    assert_eq!(record_one(node, None).await, 0);
}
