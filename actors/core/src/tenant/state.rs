//! What a tenant actor owns and publishes.

use std::sync::Arc;

use arc_swap::{ArcSwap, ArcSwapOption};
use memvault_storage::{
    ApiKeyRecord, CollectionName, CollectionRecord, TenantRecord, TenantSettings,
};
use ractor::ActorRef;

use super::messages::TenantMessage;
use crate::collection::CollectionHandle;

/// One collection as the tenant sees it: its record and the handle of its actor.
#[derive(Clone)]
pub struct CollectionEntry {
    pub record: Arc<CollectionRecord>,
    pub handle: Arc<CollectionHandle>,
}

/// An immutable view of a tenant: its record and its collections, published by the
/// tenant actor after every change.
#[derive(Clone)]
pub struct TenantSnapshot {
    pub record: Arc<TenantRecord>,
    pub collections: imbl::OrdMap<CollectionName, CollectionEntry>,
    /// Spend cap and bring-your-own extraction LLM.
    pub settings: Arc<TenantSettings>,
    /// Every key of the tenant by id, revoked ones included (soft revoke).
    pub keys: imbl::OrdMap<String, Arc<ApiKeyRecord>>,
}

/// The part of a tenant that outlives any one tenant actor, kept in the root registry.
pub struct TenantHandle {
    pub snapshot: ArcSwap<TenantSnapshot>,
    /// `None` while the actor is being restarted.
    pub actor: ArcSwapOption<ActorRef<TenantMessage>>,
    /// The actor's failures and restarts (see [`memvault_types::supervision`]).
    pub supervised: memvault_types::Supervised,
}

impl TenantHandle {
    pub fn new(record: TenantRecord) -> Arc<Self> {
        Arc::new(Self {
            snapshot: ArcSwap::from_pointee(TenantSnapshot {
                record: Arc::new(record),
                collections: imbl::OrdMap::new(),
                settings: Arc::new(TenantSettings::default()),
                keys: imbl::OrdMap::new(),
            }),
            actor: ArcSwapOption::empty(),
            supervised: memvault_types::Supervised::default(),
        })
    }

    pub fn snapshot(&self) -> Arc<TenantSnapshot> {
        self.snapshot.load_full()
    }
}
