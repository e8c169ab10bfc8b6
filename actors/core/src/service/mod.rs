//! The service facade the HTTP edge calls: one method per use case. Reads load published
//! snapshots; writes embed first (off the actors, so concurrent requests batch together)
//! and then make one call to the owning actor, with a timeout.

pub mod access;
mod audit;
mod changes;
mod collections;
pub mod intelligence;
mod keys;
mod maintenance;
mod memories;
mod operator;
pub mod proxy;
mod remember;
mod search;
mod settings;
mod tenants;
mod webhooks;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use dashmap::DashMap;
use memvault_storage::{CollectionName, Store, TenantId};
use ractor::{Actor, ActorRef};

pub use access::{Access, CollectionGrants};
pub use changes::CollectionChanges;
pub use collections::CollectionView;
pub use intelligence::{IntelligenceConfig, ModelPrice, Purpose};
pub use keys::NewKey;
pub use maintenance::ServiceHealth;
pub use memories::ListPage;
pub use operator::{OperatorUsage, PurposeUsage, Signups};
pub use remember::{Contradiction, Extractor, Profile, RememberInput, RememberOutcome};
pub use settings::{ExtractionLlmInput, ExtractionLlmView, SpendView};
pub use tenants::{BootstrapOutcome, NewTenant, TenantStats};
pub use webhooks::{NewWebhook, WebhookView};

use crate::agent::KeyDirectory;
use crate::audit::AuditLog;
use crate::call::{blocking, call_actor};
use crate::collection::{CollectionHandle, CollectionMessage};
use crate::error::{Error, Result};
use crate::extraction::{ExtractionArgs, ExtractionMessage, ExtractionSupervisor};
use crate::metrics::{Counter, Metrics, Stage};
use crate::root::{RootActor, RootArgs, RootMessage};
use crate::tenant::{CollectionEntry, TenantHandle, TenantMessage};
use crate::webhooks::{
    MemoryEventSink, WebhookActor, WebhookArgs, WebhookMessage, WebhookSettings,
};
use memvault_embed::{EmbeddingError, EmbeddingService};
use memvault_index::search::cache::SearchCaches;
use memvault_index::IndexSettings;
use memvault_types::clock::{Clock, SystemClock};

#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// How long any actor call may take before the request fails with a timeout.
    pub call_timeout: Duration,
    /// Where collections keep their search indexes; `None` keeps them in memory only
    /// (rebuilt from the store at every start).
    pub index_dir: Option<PathBuf>,
    /// Search results cached per collection version (0 turns the cache off).
    pub search_cache_entries: u64,
    /// LLMs, prices and the key that seals tenants' LLM credentials.
    pub intelligence: IntelligenceConfig,
    /// Extraction jobs run at once.
    pub extraction_workers: usize,
    /// Finished extraction jobs are kept (for polling) this long.
    pub job_retention: Duration,
    /// What "now" is for timestamps, expiry and staleness.
    pub clock: Arc<dyn Clock>,
    /// Outbound webhooks: SSRF guard, timeout, attempts and back-off.
    pub webhooks: WebhookSettings,
    /// Audit entries older than this are pruned.
    pub audit_retention: Duration,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(30),
            index_dir: None,
            search_cache_entries: 10_000,
            intelligence: IntelligenceConfig {
                own_llm_timeout: Duration::from_secs(60),
                ..IntelligenceConfig::default()
            },
            extraction_workers: 2,
            job_retention: Duration::from_secs(7 * 24 * 3600),
            clock: Arc::new(SystemClock),
            webhooks: WebhookSettings::default(),
            audit_retention: Duration::from_secs(90 * 24 * 3600),
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
    intelligence: intelligence::Intelligence,
    /// The extraction queue's supervisor; set once it has started.
    extraction: OnceLock<ActorRef<ExtractionMessage>>,
    /// Delivers memory events to tenants' webhooks from the outbox.
    webhooks: ActorRef<WebhookMessage>,
    /// Request, stage and cache figures for the operator metrics endpoint.
    metrics: Metrics,
    /// Every tenant's audit log (queued, written in batches).
    audit: AuditLog,
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
        let events = MemoryEventSink::new(tenants.clone(), config.clock.clone());
        let args = RootArgs {
            store: store.clone(),
            indexing,
            keys: keys.clone(),
            tenants: tenants.clone(),
            events: events.clone(),
        };
        let intelligence = intelligence::Intelligence::new(config.intelligence.clone())?;
        let (root, _) = Actor::spawn(None, RootActor, args)
            .await
            .map_err(|error| Error::Unavailable(format!("actor system did not start: {error}")))?;
        // After the root actor: the webhook actor resumes the outbox, which needs every
        // tenant's webhook, and the tenants are loaded by then.
        let webhook_args = WebhookArgs {
            store: store.clone(),
            tenants: tenants.clone(),
            secrets: config.intelligence.secrets.clone(),
            settings: config.webhooks.clone(),
        };
        let (webhooks, _) = Actor::spawn(None, WebhookActor, webhook_args)
            .await
            .map_err(|error| {
                Error::Unavailable(format!("webhook delivery did not start: {error}"))
            })?;
        events.attach(webhooks.clone());
        let audit = AuditLog::start(store.clone(), config.audit_retention);
        let service = Self {
            inner: Arc::new(Inner {
                root,
                tenants,
                keys,
                store,
                embedder,
                caches: SearchCaches::new(config.search_cache_entries, 10_000),
                intelligence,
                extraction: OnceLock::new(),
                webhooks,
                metrics: Metrics::new(),
                audit,
                config,
            }),
        };
        service.start_extraction().await?;
        Ok(service)
    }

    /// The service's "now" (the configured clock).
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.inner.config.clock.now()
    }

    /// Starts the extraction queue and queues every job a previous run left unfinished.
    async fn start_extraction(&self) -> Result<()> {
        let args = ExtractionArgs {
            service: self.clone(),
            workers: self.inner.config.extraction_workers,
        };
        let (supervisor, _) = Actor::spawn(None, ExtractionSupervisor, args)
            .await
            .map_err(|error| {
                Error::Unavailable(format!("extraction queue did not start: {error}"))
            })?;
        let store = self.inner.store.clone();
        let retention = chrono::Duration::from_std(self.inner.config.job_retention)
            .unwrap_or(chrono::Duration::days(7));
        let unfinished = blocking(move || {
            store.prune_jobs(chrono::Utc::now() - retention)?;
            store.unfinished_jobs()
        })
        .await?;
        if !unfinished.is_empty() {
            tracing::info!(
                jobs = unfinished.len(),
                "resuming unfinished extraction jobs"
            );
        }
        for job in unfinished {
            let _ = supervisor.cast(ExtractionMessage::Submit(Box::new(job)));
        }
        let _ = self.inner.extraction.set(supervisor);
        Ok(())
    }

    /// Stops every actor; in-flight actor calls finish first (each actor drains the
    /// message it is handling).
    pub async fn shutdown(&self) {
        self.inner.audit.stop().await;
        if let Some(extraction) = self.inner.extraction.get() {
            extraction
                .stop_and_wait(
                    Some("shutting down".to_owned()),
                    Some(Duration::from_secs(30)),
                )
                .await
                .ok();
        }
        self.inner
            .root
            .stop_and_wait(
                Some("shutting down".to_owned()),
                Some(Duration::from_secs(30)),
            )
            .await
            .ok();
        // Last, so the events of the final writes reach the outbox (drained, not
        // dropped); attempts still in flight are sent again at the next start.
        self.inner
            .webhooks
            .drain_and_wait(Some(Duration::from_secs(10)))
            .await
            .ok();
    }

    pub fn embedder(&self) -> &EmbeddingService {
        &self.inner.embedder
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The process's request and stage metrics (the HTTP edge records requests here).
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// One vector per text, from the embedding thread; timed as the `embed` stage.
    async fn embed_texts(
        &self,
        texts: Vec<String>,
    ) -> std::result::Result<Vec<Vec<f32>>, EmbeddingError> {
        let started = std::time::Instant::now();
        let count = texts.len() as u64;
        let vectors = self.inner.embedder.embed(texts).await;
        self.inner
            .metrics
            .record_stage(Stage::Embed, started.elapsed());
        self.inner.metrics.add(Counter::EmbedTexts, count);
        vectors
    }

    /// [`Self::embed_texts`] for one text.
    async fn embed_text(&self, text: String) -> std::result::Result<Vec<f32>, EmbeddingError> {
        let mut vectors = self.embed_texts(vec![text]).await?;
        vectors
            .pop()
            .ok_or_else(|| EmbeddingError::Inference("no vector returned".to_owned()))
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
