//! The service facade the HTTP edge calls: one method per use case. Reads load published
//! snapshots; writes embed first (off the actors, so concurrent requests batch together)
//! and then make one call to the owning actor, with a timeout.

pub mod access;
mod accounts;
mod audit;
mod billing;
mod changes;
mod collections;
pub mod intelligence;
mod internal;
mod keys;
mod maintenance;
mod memories;
mod operator;
pub mod placement;
mod portability;
pub mod proxy;
mod remember;
mod search;
mod settings;
mod storage;
mod tenants;
mod webhooks;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use memvault_storage::{CollectionName, EmbeddingModel, Store, TenantId, TenantRecord};
use ractor::{Actor, ActorRef};

pub use access::MAIL_INTAKE_ID;
pub use access::{
    Access, Authorizer, CollectionAccess, CollectionGrants, Level, Read, Sweep, Write,
};
pub use accounts::{Accounts, ErasureStarted, RevealView, RevealedKey};
pub use audit::AuditTrail;
pub use billing::{Billing, EventOutcome, ReturnUrls};
pub use changes::CollectionChanges;
pub use collections::{CollectionView, Collections};
pub use intelligence::{IntelligenceConfig, ModelPrice, Purpose};
pub use internal::{EmbeddedTexts, Internal};
pub use keys::{Keys, NewKey};
pub use maintenance::{CollectionReport, EmbeddingStatus, Maintenance, ServiceHealth};
pub use memories::{ListPage, Memories};
pub use operator::{
    EmbeddingsOverview, Operator, OperatorUsage, PurposeUsage, Signups, Supervision, TierUsage,
};
pub use placement::Placement;
pub use portability::{
    AccountExport, ImportCollection, ImportOutcome, ImportedMemory, Portability,
};
pub use proxy::Proxy;
pub use remember::{
    Contradiction, Extractor, Graph, Profile, RememberInput, RememberOutcome, SlotHistory,
};
pub use search::Search;
pub use settings::{ExtractionLlmInput, ExtractionLlmView, Settings, SpendView};
pub use storage::{StorageConfigInput, StorageConfigView};
pub use tenants::{BootstrapOutcome, NewTenant, TenantStats, Tenants};
pub use webhooks::{NewWebhook, WebhookView};

use crate::agent::KeyDirectory;
use crate::audit::AuditLog;
use crate::call::{blocking, call_actor};
use crate::collection::{CollectionHandle, CollectionMessage};
use crate::embedders::Embedders;
use crate::error::{Error, Result};
use crate::extraction::ExtractionJobs;
use crate::metrics::{Counter, Metrics, Stage};
use crate::reembed::{ReembedJobs, ReembedProgress};
use crate::root::{RootActor, RootArgs, RootMessage};
use crate::tenant::{CollectionEntry, TenantHandle, TenantMessage};
use memvault_embed::EmbeddingService;
use memvault_events::EventBroker;
use memvault_index::search::cache::SearchCaches;
use memvault_index::IndexSettings;
use memvault_jobs::{JobQueue, Recurring, Scheduler};
use memvault_types::clock::{Clock, SystemClock};
use memvault_webhooks::{record_events, WebhookDeliveries, WebhookSettings, CONCURRENT_ATTEMPTS};

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
    /// How long a tenant's extraction pauses after its LLM failed 5 times in a row
    /// (then one job probes it).
    pub extraction_pause: Duration,
    /// Finished extraction jobs are kept (for polling) this long.
    pub job_retention: Duration,
    /// What "now" is for timestamps, expiry and staleness.
    pub clock: Arc<dyn Clock>,
    /// Outbound webhooks: SSRF guard, timeout, attempts and back-off.
    pub webhooks: WebhookSettings,
    /// Audit entries older than this are pruned.
    pub audit_retention: Duration,
    /// Where files are stored, and the signer of memvault's own presigned URLs.
    pub blobs: BlobBackend,
    /// Outgoing mail, reveal links, signup and recovery limits.
    pub account: crate::account::AccountSettings,
    /// Stripe: keys, price, where customers return.
    pub billing: memvault_accounts::billing::BillingSettings,
    /// What each tier may hold.
    pub tiers: memvault_accounts::Tiers,
    /// How failed tenant and collection actors are restarted, and when they are degraded.
    pub restarts: memvault_types::RestartPolicy,
}

/// The blob store files go to, and the signer that checks the presigned URLs memvault
/// serves itself (`/v1/blobs/...`).
#[derive(Clone)]
pub struct BlobBackend {
    pub store: Arc<dyn memvault_blobs::BlobStore>,
    pub signer: memvault_blobs::UrlSigner,
    /// Let a tenant's own bucket be on a loopback, private, link-local or metadata address
    /// (off by default: SSRF protection).
    pub allow_private_targets: bool,
}

impl std::fmt::Debug for BlobBackend {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("BlobBackend")
            .field("signer", &self.signer)
            .finish_non_exhaustive()
    }
}

impl BlobBackend {
    /// Blobs in memory with a random signing secret (tests of the service alone).
    pub fn in_memory(public_url: &str) -> Self {
        use rand::RngCore;
        let mut secret = vec![0u8; 32];
        rand::thread_rng().fill_bytes(&mut secret);
        let signer = memvault_blobs::UrlSigner::new(public_url, secret)
            .expect("a 32-byte secret and an absolute URL");
        Self {
            store: Arc::new(memvault_blobs::ObjectBlobStore::in_memory(signer.clone())),
            signer,
            allow_private_targets: false,
        }
    }
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
            extraction_pause: Duration::from_secs(60),
            job_retention: Duration::from_secs(7 * 24 * 3600),
            clock: Arc::new(SystemClock),
            webhooks: WebhookSettings::default(),
            audit_retention: Duration::from_secs(90 * 24 * 3600),
            blobs: BlobBackend::in_memory("http://127.0.0.1:8420"),
            account: crate::account::AccountSettings::default(),
            billing: memvault_accounts::billing::BillingSettings::default(),
            tiers: memvault_accounts::Tiers::default(),
            restarts: memvault_types::RestartPolicy::ACTORS,
        }
    }
}

/// Restarts of supervised actors, and those degraded now (failing again and again), for
/// the operator metrics and `/v1/status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ActorRestarts {
    pub tenants: u64,
    pub collections: u64,
    pub degraded_tenants: u64,
    pub degraded_collections: u64,
}

/// The recurring pruning of finished extraction jobs and old audit entries.
fn schedule_pruning(scheduler: &Scheduler, store: &Arc<dyn Store>, config: &ServiceConfig) {
    const HOUR: Duration = Duration::from_secs(3600);
    let jitter = Duration::from_secs(300);
    let job_retention =
        chrono::Duration::from_std(config.job_retention).unwrap_or(chrono::Duration::days(7));
    let jobs_store = store.clone();
    scheduler.every(
        Recurring {
            name: "extract_job_pruning",
            period: HOUR,
            jitter,
            run_at_start: true,
        },
        move || {
            let store = jobs_store.clone();
            async move {
                let before = chrono::Utc::now() - job_retention;
                let pruned = blocking(move || store.prune_jobs(before)).await?;
                if pruned > 0 {
                    tracing::info!(pruned, "finished extraction jobs pruned");
                }
                Ok(())
            }
        },
    );
    let audit_retention =
        chrono::Duration::from_std(config.audit_retention).unwrap_or(chrono::Duration::days(90));
    let audit_store = store.clone();
    scheduler.every(
        Recurring {
            name: "audit_pruning",
            period: HOUR,
            jitter,
            run_at_start: true,
        },
        move || {
            let store = audit_store.clone();
            async move {
                let before = chrono::Utc::now() - audit_retention;
                let pruned = blocking(move || store.prune_audit(before)).await?;
                if pruned > 0 {
                    tracing::info!(pruned, "old audit entries pruned");
                }
                Ok(())
            }
        },
    );
    let reveal_store = store.clone();
    scheduler.every(
        Recurring {
            name: "account_pruning",
            period: HOUR,
            jitter,
            run_at_start: true,
        },
        move || {
            let store = reveal_store.clone();
            let reveal_store_events = reveal_store.clone();
            async move {
                let before = chrono::Utc::now();
                let pruned = blocking(move || store.prune_reveals(before)).await?;
                if pruned > 0 {
                    tracing::info!(pruned, "expired reveal links pruned");
                }
                // Stripe retries an event for three days; a month covers it.
                let before = chrono::Utc::now() - chrono::Duration::days(30);
                let store = reveal_store_events.clone();
                let pruned = blocking(move || store.prune_events(before)).await?;
                if pruned > 0 {
                    tracing::info!(pruned, "old handled-event records pruned");
                }
                Ok(())
            }
        },
    );
}

/// Opens a job queue whose kind is given later ([`run_queue`]); `what` names the queue
/// in the start-up error.
async fn open_queue<K: memvault_jobs::JobKind>(what: &str) -> Result<JobQueue<K>> {
    JobQueue::open().await.map_err(|error| Error::StartFailed {
        what: what.to_owned(),
        reason: error.to_string(),
    })
}

/// Runs an opened queue with its kind and `workers` workers.
async fn run_queue<K: memvault_jobs::JobKind>(
    queue: &JobQueue<K>,
    kind: K,
    workers: usize,
    what: &str,
) -> Result<()> {
    queue
        .run(Arc::new(kind), workers)
        .await
        .map_err(|error| Error::StartFailed {
            what: what.to_owned(),
            reason: error.to_string(),
        })
}

/// Starts a job queue of `kind` with `workers` workers; it resumes the kind's unfinished
/// jobs. `what` names the queue in the start-up error.
async fn start_queue<K: memvault_jobs::JobKind>(
    kind: K,
    workers: usize,
    what: &str,
) -> Result<JobQueue<K>> {
    let queue = open_queue(what).await?;
    run_queue(&queue, kind, workers, what).await?;
    Ok(queue)
}

/// How long a tenant's counted file bytes are trusted before they are listed again.
const FILES_USAGE_TTL: Duration = Duration::from_secs(30);

/// How long one request to a tenant's own bucket may take (connection included).
const FOREIGN_STORE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

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
    embedders: Embedders,
    caches: SearchCaches,
    intelligence: intelligence::Intelligence,
    /// The extraction job queue: opened before the service, run once the service (its
    /// kind's writer) exists.
    extraction: JobQueue<ExtractionJobs>,
    /// Delivers memory events to tenants' webhooks from the outbox.
    webhooks: JobQueue<WebhookDeliveries>,
    /// Where collection actors publish memory changes.
    events: EventBroker,
    /// Where files are stored.
    blobs: BlobBackend,
    /// The platform's store and the tenants' own buckets.
    stores: memvault_files::TenantStores,
    /// Re-embeds collections built by another model than the configured one.
    reembed: JobQueue<ReembedJobs>,
    /// Sends the queued mail; `None` when the server has no mailer.
    mail: Option<JobQueue<memvault_accounts::outbox::MailDeliveries>>,
    /// Bytes of each tenant's files in the platform's storage, and when they were
    /// counted: the storage limit's check lists a tenant's files at most every
    /// [`FILES_USAGE_TTL`].
    files_usage: DashMap<TenantId, (std::time::Instant, u64)>,
    /// Runs large imports (opened, then run like extraction).
    import: JobQueue<memvault_portability::ImportJobs>,
    /// Erases accounts (opened, then run like extraction).
    erasure: JobQueue<memvault_portability::AccountErasures>,
    /// Serializes signups, so one email never gets two tenants.
    signups: tokio::sync::Mutex<()>,
    /// Reveal mails per address per minute.
    mail_limiter: memvault_types::rate_limit::FixedWindowLimiter,
    /// Calls Stripe; `None` without a secret key.
    stripe: Option<memvault_accounts::billing::stripe::StripeClient>,
    reembed_progress: ReembedProgress,
    /// The subscriber that turns events into outbox deliveries; awaited at shutdown so
    /// the last writes' events reach the outbox.
    webhook_recorder: memvault_jobs::Resident,
    /// Recurring work: job and audit pruning.
    scheduler: Scheduler,
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
        embedders: Embedders,
        config: ServiceConfig,
    ) -> Result<Self> {
        let keys = KeyDirectory::new();
        let tenants = Arc::new(DashMap::new());
        let indexing = Arc::new(IndexSettings {
            root: config.index_dir.clone(),
            model: embedders.current_model().clone(),
        });
        let events = EventBroker::new(config.clock.clone());
        let args = RootArgs {
            store: store.clone(),
            indexing,
            keys: keys.clone(),
            tenants: tenants.clone(),
            events: events.clone(),
            restarts: config.restarts,
        };
        let intelligence = intelligence::Intelligence::new(config.intelligence.clone())?;
        let (root, _) =
            Actor::spawn(None, RootActor, args)
                .await
                .map_err(|error| Error::StartFailed {
                    what: "the actor system".to_owned(),
                    reason: error.to_string(),
                })?;
        // After the root actor: delivery resumes the outbox, which needs every tenant's
        // webhook, and the tenants are loaded by then.
        let published_webhooks: Arc<dyn memvault_webhooks::WebhookDirectory> =
            Arc::new(webhooks::PublishedWebhooks(tenants.clone()));
        let deliveries = WebhookDeliveries::new(
            store.clone(),
            published_webhooks.clone(),
            config.intelligence.secrets.clone(),
            config.webhooks.clone(),
        )
        .map_err(|error| Error::StartFailed {
            what: "webhook delivery".to_owned(),
            reason: error.to_string(),
        })?;
        let webhooks = start_queue(
            deliveries,
            CONCURRENT_ATTEMPTS,
            "the webhook delivery queue",
        )
        .await?;
        let recorder = {
            let subscription = Arc::new(tokio::sync::Mutex::new(events.subscribe()));
            let (store, webhooks) = (store.clone(), webhooks.clone());
            memvault_jobs::Resident::start("webhook_recorder", config.restarts, move || {
                let subscription = subscription.clone();
                let (store, directory, webhooks) =
                    (store.clone(), published_webhooks.clone(), webhooks.clone());
                async move {
                    let mut subscription = subscription.lock().await;
                    record_events(&mut subscription, store, directory, webhooks).await;
                }
            })
        };
        // After the root actor: the jobs are the collections it loaded on another model.
        let reembed_progress = ReembedProgress::default();
        let reembed = start_queue(
            ReembedJobs::new(
                store.clone(),
                tenants.clone(),
                embedders.clone(),
                reembed_progress.clone(),
                config.clock.clone(),
            ),
            1,
            "the re-embedding queue",
        )
        .await?;
        let mail = match &config.account.mailer {
            Some(mailer) => Some(
                start_queue(
                    memvault_accounts::outbox::MailDeliveries::new(
                        store.clone(),
                        mailer.clone(),
                        memvault_jobs::RetryPolicy {
                            max_attempts: config.account.mail_max_attempts.max(1),
                            backoff: config.account.mail_backoff(),
                        },
                    ),
                    memvault_accounts::outbox::CONCURRENT_SENDS,
                    "the mail queue",
                )
                .await?,
            ),
            None => None,
        };
        let stripe = memvault_accounts::billing::stripe::StripeClient::new(&config.billing)
            .map_err(|reason| Error::StartFailed {
                what: "the Stripe client".to_owned(),
                reason,
            })?;
        let audit = AuditLog::start(store.clone(), config.restarts);
        let scheduler = Scheduler::new();
        schedule_pruning(&scheduler, &store, &config);
        let service = Self {
            inner: Arc::new(Inner {
                root,
                tenants,
                keys,
                store,
                embedders,
                caches: SearchCaches::new(config.search_cache_entries, 10_000),
                blobs: config.blobs.clone(),
                stores: memvault_files::TenantStores::new(
                    config.blobs.store.clone(),
                    FOREIGN_STORE_TIMEOUT,
                ),
                intelligence,
                extraction: open_queue("the extraction queue").await?,
                webhooks,
                events,
                reembed,
                reembed_progress,
                mail,
                erasure: open_queue("the erasure queue").await?,
                import: open_queue("the import queue").await?,
                files_usage: DashMap::new(),
                signups: tokio::sync::Mutex::new(()),
                mail_limiter: memvault_types::rate_limit::FixedWindowLimiter::new(100_000),
                stripe,
                webhook_recorder: recorder,
                scheduler,
                metrics: Metrics::new(),
                audit,
                config,
            }),
        };
        service.run_queues().await?;
        Ok(service)
    }

    /// Whether the tenant is loaded (not unknown, not being erased).
    pub fn has_tenant(&self, tenant: &TenantId) -> bool {
        self.inner.tenants.contains_key(tenant)
    }

    /// What seals stored credentials (tenants' LLM keys, connectors' tokens).
    pub fn secrets(&self) -> Result<&memvault_storage::crypto::SecretBox> {
        self.inner.intelligence.secrets()
    }

    /// The service's clock.
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.inner.config.clock.clone()
    }

    /// What seals stored credentials, shared; `None` when no encryption key is set.
    pub fn secret_box(&self) -> Option<Arc<memvault_storage::crypto::SecretBox>> {
        self.inner.config.intelligence.secrets.clone()
    }

    /// The service's "now" (the configured clock).
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.inner.config.clock.now()
    }

    /// Runs the queues opened with the service, each kind given the service's part it
    /// writes through (a capability, not the service); each resumes the jobs a previous
    /// run left unfinished.
    async fn run_queues(&self) -> Result<()> {
        let inner = &self.inner;
        let extraction = ExtractionJobs::new(
            inner.store.clone(),
            Arc::new(self.graph()),
            inner.config.extraction_pause,
        );
        run_queue(
            &inner.extraction,
            extraction,
            inner.config.extraction_workers,
            "the extraction queue",
        )
        .await?;
        let erasure = memvault_portability::AccountErasures::new(
            inner.store.clone(),
            Arc::new(self.accounts()),
            inner.config.index_dir.clone(),
            inner.config.account.erasure,
        );
        run_queue(&inner.erasure, erasure, 1, "the erasure queue").await?;
        let import = memvault_portability::ImportJobs::new(
            inner.store.clone(),
            Arc::new(self.portability()),
            portability::IMPORT_BATCH,
        );
        run_queue(&inner.import, import, 1, "the import queue").await
    }

    /// Ends a pause of the tenant's extraction (its LLM settings changed: the cause of
    /// the failures may be gone).
    pub(crate) fn resume_extraction(&self, tenant: &TenantId) {
        let _ = self.inner.extraction.resume(tenant.as_str());
    }

    /// The import queue.
    pub(crate) fn import_queue(&self) -> &JobQueue<memvault_portability::ImportJobs> {
        &self.inner.import
    }

    /// The erasure queue.
    pub(crate) fn erasure_queue(&self) -> &JobQueue<memvault_portability::AccountErasures> {
        &self.inner.erasure
    }

    /// What the tenant holds now: collections and memories from the published snapshots,
    /// file bytes as last counted (listed again after [`FILES_USAGE_TTL`]).
    pub(crate) async fn held(&self, tenant: &TenantId) -> Result<memvault_accounts::Held> {
        let snapshot = self.tenant_handle(tenant)?.snapshot();
        let memories = snapshot
            .collections
            .values()
            .map(|entry| entry.handle.snapshot().memories.len() as u64)
            .sum();
        Ok(memvault_accounts::Held {
            collections: snapshot.collections.len() as u64,
            memories,
            storage_bytes: self.files_bytes(tenant).await?,
        })
    }

    /// The tenant's tier's limits.
    pub(crate) fn tier_limits(&self, tenant: &TenantId) -> Result<memvault_accounts::TierLimits> {
        let snapshot = self.tenant_handle(tenant)?.snapshot();
        Ok(self.inner.config.tiers.limits(&snapshot.record.tier))
    }

    /// Refuses `growth` when it would take the tenant past its tier's limit.
    pub(crate) async fn admit(
        &self,
        tenant: &TenantId,
        growth: memvault_accounts::Growth,
    ) -> Result<()> {
        use memvault_accounts::{Growth, Held};
        let snapshot = self.tenant_handle(tenant)?.snapshot();
        let limits = self.inner.config.tiers.limits(&snapshot.record.tier);
        let held = match growth {
            Growth::Collection if limits.collections.is_some() => Held {
                collections: snapshot.collections.len() as u64,
                ..Held::default()
            },
            Growth::Memories(_) if limits.memories.is_some() => Held {
                memories: snapshot
                    .collections
                    .values()
                    .map(|entry| entry.handle.snapshot().memories.len() as u64)
                    .sum(),
                ..Held::default()
            },
            Growth::StorageBytes(_) if limits.storage_bytes.is_some() => Held {
                storage_bytes: self.files_bytes(tenant).await?,
                ..Held::default()
            },
            _ => return Ok(()),
        };
        limits
            .admit(&held, growth)
            .map_err(|over| Error::TierLimitReached {
                tier: snapshot.record.tier.clone(),
                what: over.what,
                limit: over.limit,
                held: over.held,
            })
    }

    /// Bytes of the tenant's files in the platform's storage, as last counted.
    async fn files_bytes(&self, tenant: &TenantId) -> Result<u64> {
        if let Some(entry) = self.inner.files_usage.get(tenant) {
            if entry.0.elapsed() < FILES_USAGE_TTL {
                return Ok(entry.1);
            }
        }
        let bytes = self.placement().stored_bytes(tenant).await?;
        self.inner
            .files_usage
            .insert(tenant.clone(), (std::time::Instant::now(), bytes));
        Ok(bytes)
    }

    /// Adds freshly stored file bytes to the tenant's count.
    pub(crate) fn note_files_stored(&self, tenant: &TenantId, bytes: u64) {
        if let Some(mut entry) = self.inner.files_usage.get_mut(tenant) {
            entry.1 = entry.1.saturating_add(bytes);
        }
    }

    /// Takes a tenant out of the running service: handle, actors, keys (see
    /// [`RootMessage::RemoveTenant`]).
    pub(crate) async fn detach_tenant(&self, tenant: &TenantId) {
        let id = tenant.clone();
        if let Err(error) = self
            .inner
            .root
            .call(|reply| RootMessage::RemoveTenant { id, reply }, None)
            .await
        {
            tracing::warn!(tenant = %tenant, %error, "the root actor could not detach the tenant");
        }
        self.inner.stores.forget(tenant);
        self.inner.files_usage.remove(tenant);
        // Entries queued before the detach are written now, so the erasure removes them.
        self.inner.audit.flush().await;
    }

    /// Where files live: stores, the URL signer, the tier's storage count, release.
    pub fn placement(&self) -> Placement {
        Placement { root: self.clone() }
    }

    /// Stops every actor; in-flight actor calls finish first (each actor drains the
    /// message it is handling).
    pub async fn shutdown(&self) {
        self.inner.scheduler.stop();
        self.inner.audit.stop().await;
        self.inner.extraction.stop().await;
        self.inner.erasure.stop().await;
        self.inner.import.stop().await;
        self.inner.reembed.stop().await;
        if let Some(mail) = &self.inner.mail {
            mail.stop().await;
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
        self.inner.events.close();
        self.inner
            .webhook_recorder
            .join(Duration::from_secs(10))
            .await;
        self.inner.webhooks.stop().await;
    }

    /// Memories in a collection.
    pub fn memories(&self) -> Memories {
        Memories { root: self.clone() }
    }

    /// The tenant's collections and their grants.
    pub fn collections(&self) -> Collections {
        Collections { root: self.clone() }
    }

    /// Search, related memories, forget.
    pub fn search(&self) -> Search {
        Search { root: self.clone() }
    }

    /// Graph memory: remember, extraction jobs, contradictions, profiles.
    pub fn graph(&self) -> Graph {
        Graph { root: self.clone() }
    }

    /// Dedup, archive-stale, health, summaries.
    pub fn maintenance(&self) -> Maintenance {
        Maintenance { root: self.clone() }
    }

    /// The tenant's API keys.
    pub fn keys(&self) -> Keys {
        Keys { root: self.clone() }
    }

    /// Tenants: bootstrap, signup, stats.
    pub fn tenants(&self) -> Tenants {
        Tenants { root: self.clone() }
    }

    /// The tenant's settings: extraction LLM, spend cap, webhook.
    pub fn settings(&self) -> Settings {
        Settings { root: self.clone() }
    }

    /// Signup, key recovery and the one-time reveal.
    pub fn accounts(&self) -> Accounts {
        Accounts { root: self.clone() }
    }

    /// Account export and import.
    pub fn portability(&self) -> Portability {
        Portability { root: self.clone() }
    }

    /// Stripe checkout, portal and webhook events.
    pub fn billing(&self) -> Billing {
        Billing { root: self.clone() }
    }

    /// What memvault's own other processes call (internal embed).
    pub fn internal(&self) -> Internal {
        Internal { root: self.clone() }
    }

    /// What the operator sees: usage, signups, jobs, restarts, request metrics.
    pub fn operator(&self) -> Operator {
        Operator { root: self.clone() }
    }

    /// The OpenAI-compatible chat proxy.
    pub fn proxy(&self) -> Proxy {
        Proxy { root: self.clone() }
    }

    /// The audit log.
    pub fn audit(&self) -> AuditTrail {
        AuditTrail { root: self.clone() }
    }

    /// Access proofs and authentication.
    pub fn authorizer(&self) -> Authorizer {
        Authorizer { root: self.clone() }
    }

    /// Where recurring work runs (pruning, the status self-checks); stopped at shutdown.
    pub fn scheduler(&self) -> &Scheduler {
        &self.inner.scheduler
    }

    /// The configured embedding model's service.
    pub fn embedder(&self) -> &EmbeddingService {
        self.inner.embedders.current()
    }

    /// Every re-embedding in progress.
    pub fn reembedding(&self) -> &ReembedProgress {
        &self.inner.reembed_progress
    }

    /// The collections not yet on the configured embedding model.
    pub fn outdated_collections(&self) -> Vec<(TenantId, CollectionName)> {
        ReembedJobs::outdated(&self.inner.tenants, self.inner.embedders.current_model())
    }

    /// Every embedding model this service runs: the configured one and the earlier ones
    /// collections not yet re-embedded still use.
    pub fn embedders(&self) -> &Embedders {
        &self.inner.embedders
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// One vector per text by `model`; timed as the `embed` stage.
    async fn embed_texts(
        &self,
        model: &EmbeddingModel,
        texts: Vec<String>,
    ) -> Result<Vec<Vec<f32>>> {
        let started = std::time::Instant::now();
        let count = texts.len() as u64;
        let vectors = self.inner.embedders.embed(model, texts).await;
        self.inner
            .metrics
            .record_stage(Stage::Embed, started.elapsed());
        self.inner.metrics.add(Counter::EmbedTexts, count);
        vectors
    }

    /// [`Self::embed_texts`] for one text.
    async fn embed_text(&self, model: &EmbeddingModel, text: String) -> Result<Vec<f32>> {
        let mut vectors = self.embed_texts(model, vec![text]).await?;
        vectors.pop().ok_or_else(|| {
            memvault_embed::EmbeddingError::Inference("no vector returned".to_owned()).into()
        })
    }

    /// The model that embeds a collection's writes: its own, or the configured one for a
    /// collection that does not exist yet.
    fn collection_model(&self, tenant: &TenantId, collection: &CollectionName) -> EmbeddingModel {
        match self.collection_entry(tenant, collection) {
            Ok(entry) => (**entry.handle.embedding.load()).clone(),
            Err(_) => self.inner.embedders.current_model().clone(),
        }
    }

    /// Whether the actor tree is up (for health checks).
    pub fn is_running(&self) -> bool {
        matches!(
            self.inner.root.get_status(),
            ractor::ActorStatus::Running | ractor::ActorStatus::Upgrading
        )
    }

    /// The tenant whose email is `email` (compared without case).
    fn tenant_by_email(&self, email: &str) -> Option<TenantRecord> {
        self.inner.tenants.iter().find_map(|tenant| {
            let record = &tenant.snapshot().record;
            record
                .email
                .eq_ignore_ascii_case(email)
                .then(|| (**record).clone())
        })
    }

    fn tenant_handle(&self, tenant: &TenantId) -> Result<Arc<TenantHandle>> {
        self.inner
            .tenants
            .get(tenant)
            .map(|entry| entry.clone())
            .ok_or_else(|| Error::TenantNotFound(tenant.clone()))
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
            .ok_or_else(|| Error::CollectionNotFound(name.clone()))
    }

    async fn call_tenant<T: Send + 'static>(
        &self,
        tenant: &TenantId,
        build: impl FnOnce(ractor::RpcReplyPort<Result<T>>) -> TenantMessage,
    ) -> Result<T> {
        let handle = self.tenant_handle(tenant)?;
        let actor = handle.actor.load_full().ok_or_else(|| Error::Restarting {
            what: "the tenant".to_owned(),
        })?;
        call_actor(&actor, build, self.inner.config.call_timeout, "the tenant").await
    }

    async fn call_collection<T: Send + 'static>(
        &self,
        handle: &CollectionHandle,
        build: impl FnOnce(ractor::RpcReplyPort<Result<T>>) -> CollectionMessage,
    ) -> Result<T> {
        let actor = handle.actor.load_full().ok_or_else(|| Error::Restarting {
            what: format!("collection '{}'", handle.name),
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
        self.admit(tenant, memvault_accounts::Growth::Collection)
            .await?;
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
