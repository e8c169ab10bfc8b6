//! The service facade the HTTP edge calls: one method per use case. Reads load published
//! snapshots; writes embed first (off the actors, so concurrent requests batch together)
//! and then make one call to the owning actor, with a timeout.

mod collections;
mod memories;
mod search;
mod tenants;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use memvault_storage::{CollectionName, Store, TenantId};
use ractor::{Actor, ActorRef};

pub use collections::CollectionView;
pub use memories::ListPage;
pub use tenants::{BootstrapOutcome, NewTenant, TenantStats};

use crate::agent::KeyDirectory;
use crate::call::call_actor;
use crate::collection::{CollectionHandle, CollectionMessage};
use crate::embedding::EmbeddingService;
use crate::error::{Error, Result};
use crate::index::IndexSettings;
use crate::root::{RootActor, RootArgs, RootMessage};
use crate::search::cache::SearchCaches;
use crate::tenant::{CollectionEntry, TenantHandle, TenantMessage};

#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// How long any actor call may take before the request fails with a timeout.
    pub call_timeout: Duration,
    /// Where collections keep their search indexes; `None` keeps them in memory only
    /// (rebuilt from the store at every start).
    pub index_dir: Option<PathBuf>,
    /// Search results cached per collection version (0 turns the cache off).
    pub search_cache_entries: u64,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(30),
            index_dir: None,
            search_cache_entries: 10_000,
        }
    }
}

/// A cheap handle to the running service.
#[derive(Clone)]
pub struct Memvault {
    inner: Arc<Inner>,
}

struct Inner {
    root: ActorRef<RootMessage>,
    /// Every tenant's handle, kept by the root actor; read without a mailbox.
    tenants: Arc<DashMap<TenantId, Arc<TenantHandle>>>,
    keys: Arc<KeyDirectory>,
    store: Arc<dyn Store>,
    embedder: EmbeddingService,
    caches: SearchCaches,
    config: ServiceConfig,
}

impl Memvault {
    /// Starts the actor tree, loading every tenant and collection from the store.
    pub async fn start(
        store: Arc<dyn Store>,
        embedder: EmbeddingService,
        config: ServiceConfig,
    ) -> Result<Self> {
        let keys = KeyDirectory::new();
        let tenants = Arc::new(DashMap::new());
        let indexing = Arc::new(IndexSettings {
            root: config.index_dir.clone(),
            dimensions: embedder.dimensions(),
        });
        let args = RootArgs {
            store: store.clone(),
            indexing,
            keys: keys.clone(),
            tenants: tenants.clone(),
        };
        let (root, _) = Actor::spawn(None, RootActor, args)
            .await
            .map_err(|error| Error::Unavailable(format!("actor system did not start: {error}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                root,
                tenants,
                keys,
                store,
                embedder,
                caches: SearchCaches::new(config.search_cache_entries, 10_000),
                config,
            }),
        })
    }

    /// Stops every actor; in-flight actor calls finish first (each actor drains the
    /// message it is handling).
    pub async fn shutdown(&self) {
        self.inner
            .root
            .stop_and_wait(
                Some("shutting down".to_owned()),
                Some(Duration::from_secs(30)),
            )
            .await
            .ok();
    }

    pub fn embedder(&self) -> &EmbeddingService {
        &self.inner.embedder
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// Whether the actor tree is up (for health checks).
    pub fn is_running(&self) -> bool {
        matches!(
            self.inner.root.get_status(),
            ractor::ActorStatus::Running | ractor::ActorStatus::Upgrading
        )
    }

    fn tenant_handle(&self, tenant: &TenantId) -> Result<Arc<TenantHandle>> {
        self.inner
            .tenants
            .get(tenant)
            .map(|entry| entry.clone())
            .ok_or_else(|| Error::NotFound(format!("tenant {tenant} not found")))
    }

    fn collection_entry(
        &self,
        tenant: &TenantId,
        name: &CollectionName,
    ) -> Result<CollectionEntry> {
        self.tenant_handle(tenant)?
            .snapshot()
            .collections
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("collection '{name}' not found")))
    }

    async fn call_tenant<T: Send + 'static>(
        &self,
        tenant: &TenantId,
        build: impl FnOnce(ractor::RpcReplyPort<Result<T>>) -> TenantMessage,
    ) -> Result<T> {
        let handle = self.tenant_handle(tenant)?;
        let actor = handle.actor.load_full().ok_or_else(|| {
            Error::Unavailable("the tenant is restarting; retry shortly".to_owned())
        })?;
        call_actor(&actor, build, self.inner.config.call_timeout, "the tenant").await
    }

    async fn call_collection<T: Send + 'static>(
        &self,
        handle: &CollectionHandle,
        build: impl FnOnce(ractor::RpcReplyPort<Result<T>>) -> CollectionMessage,
    ) -> Result<T> {
        let actor = handle.actor.load_full().ok_or_else(|| {
            Error::Unavailable(format!(
                "collection '{}' is restarting; retry shortly",
                handle.name
            ))
        })?;
        call_actor(
            &actor,
            build,
            self.inner.config.call_timeout,
            "the collection",
        )
        .await
    }

    /// The collection, auto-created on first write. The fast path reads the snapshot.
    async fn ensure_collection(
        &self,
        tenant: &TenantId,
        name: &CollectionName,
    ) -> Result<Arc<CollectionHandle>> {
        if let Ok(entry) = self.collection_entry(tenant, name) {
            return Ok(entry.handle);
        }
        let name = name.clone();
        let entry = self
            .call_tenant(tenant, |reply| TenantMessage::EnsureCollection {
                name,
                reply,
            })
            .await?;
        Ok(entry.handle)
    }
}
