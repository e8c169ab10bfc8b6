//! memvault-events, the event broker: collection actors publish each memory change once, after the store
//! write; any part of the service subscribes and decides for itself whether it cares.
//!
//! Webhooks subscribe today (they keep the events of tenants with a webhook); search-cache
//! invalidation across nodes, usage metering, connectors and the dashboard subscribe the
//! same way. Publishing never waits and never fails the writer: each subscriber has its
//! own unbounded queue, so a slow subscriber delays only itself and loses nothing.

use std::sync::{Arc, PoisonError, RwLock};

use chrono::{DateTime, Utc};
use memvault_storage::{CollectionName, MemoryRecord, TenantId};
use memvault_types::clock::Clock;
use tokio::sync::mpsc;

/// What happened to a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryEventKind {
    /// An id that was not in the collection: create, bulk, remember, the target side of
    /// a move.
    Created,
    /// An existing id written again: patch, pin, archive, supersession, archive-stale.
    Updated,
    /// Removed: delete, dedup, the source side of a move.
    Deleted,
}

impl MemoryEventKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Created => "memory.created",
            Self::Updated => "memory.updated",
            Self::Deleted => "memory.deleted",
        }
    }
}

/// One memory changed in one collection, after the change was durably stored.
#[derive(Debug, Clone)]
pub struct MemoryEvent {
    pub tenant: TenantId,
    pub collection: CollectionName,
    pub kind: MemoryEventKind,
    /// The memory as written, or as it was when deleted.
    pub memory: Arc<MemoryRecord>,
    /// When the change happened (the service clock).
    pub at: DateTime<Utc>,
}

/// Where memory changes are published and subscribed to. Cheap to clone; every
/// collection actor holds one.
#[derive(Clone)]
pub struct EventBroker {
    inner: Arc<BrokerInner>,
}

struct BrokerInner {
    /// One queue per subscriber; a closed one is dropped at the next publish.
    subscribers: RwLock<Vec<mpsc::UnboundedSender<Arc<MemoryEvent>>>>,
    /// Stamps the event time.
    clock: Arc<dyn Clock>,
}

impl EventBroker {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Arc::new(BrokerInner {
                subscribers: RwLock::new(Vec::new()),
                clock,
            }),
        }
    }

    /// Every event published from now on, in publish order per collection.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Arc<MemoryEvent>> {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.inner
            .subscribers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(sender);
        receiver
    }

    /// Reports one changed memory to every subscriber. Never blocks and never fails the
    /// caller.
    pub fn publish(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        kind: MemoryEventKind,
        memory: Arc<MemoryRecord>,
    ) {
        let subscribers = self
            .inner
            .subscribers
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        if subscribers.is_empty() {
            return;
        }
        let event = Arc::new(MemoryEvent {
            tenant: tenant.clone(),
            collection: collection.clone(),
            kind,
            memory,
            at: self.inner.clock.now(),
        });
        let closed = subscribers
            .iter()
            .filter(|subscriber| subscriber.send(event.clone()).is_err())
            .count();
        drop(subscribers);
        if closed > 0 {
            self.inner
                .subscribers
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|subscriber| !subscriber.is_closed());
        }
    }

    /// Ends every subscription: subscribers receive what was published so far, then
    /// `None`. Later events are dropped.
    pub fn close(&self) {
        self.inner
            .subscribers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use memvault_storage::CreatedBy;
    use memvault_types::clock::SystemClock;

    use super::*;

    fn memory() -> Arc<MemoryRecord> {
        let created_by = CreatedBy {
            id: "key_1".to_owned(),
            label: "test".to_owned(),
        };
        let text = "Ana flies to Lisbon.".to_owned();
        let record = MemoryRecord::new(
            text,
            0.5,
            "other".into(),
            "api".into(),
            created_by,
            Utc::now(),
        );
        Arc::new(record)
    }

    #[tokio::test]
    async fn every_subscriber_gets_every_event_until_closed() {
        let broker = EventBroker::new(Arc::new(SystemClock));
        let (tenant, collection) = (
            TenantId::generate(),
            CollectionName::parse("notes").unwrap(),
        );
        broker.publish(&tenant, &collection, MemoryEventKind::Created, memory());
        let mut first = broker.subscribe();
        let mut second = broker.subscribe();
        broker.publish(&tenant, &collection, MemoryEventKind::Created, memory());
        broker.publish(&tenant, &collection, MemoryEventKind::Deleted, memory());
        broker.close();
        broker.publish(&tenant, &collection, MemoryEventKind::Updated, memory());
        for receiver in [&mut first, &mut second] {
            assert_eq!(
                receiver.recv().await.unwrap().kind,
                MemoryEventKind::Created
            );
            assert_eq!(
                receiver.recv().await.unwrap().kind,
                MemoryEventKind::Deleted
            );
            assert!(receiver.recv().await.is_none());
        }
    }

    #[tokio::test]
    async fn a_dropped_subscriber_does_not_stop_the_others() {
        let broker = EventBroker::new(Arc::new(SystemClock));
        let (tenant, collection) = (
            TenantId::generate(),
            CollectionName::parse("notes").unwrap(),
        );
        drop(broker.subscribe());
        let mut live = broker.subscribe();
        broker.publish(&tenant, &collection, MemoryEventKind::Created, memory());
        assert_eq!(live.recv().await.unwrap().tenant, tenant);
    }
}
