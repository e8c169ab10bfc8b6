//! The service facade the HTTP edge calls: one method per use case. Reads load published
//! snapshots; writes embed first (off the actors, so concurrent requests batch together)
//! and then make one call to the owning actor, with a timeout.

pub mod access;
mod audit;
mod background;
mod changes;
mod collections;
mod database;
mod embedding;
pub mod intelligence;
mod internal;
mod keys;
mod maintenance;
mod memories;
mod operator;
pub mod placement;
mod portability;
pub mod proxy;
mod quotas;
mod remember;
mod search;
mod settings;
mod storage;
mod tenants;
mod tree;
mod webhooks;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use memvault_storage::{CollectionName, Store, TenantId};
use ractor::Actor;

pub use access::MAIL_INTAKE_ID;
pub use access::{
    Access, Authorizer, CollectionAccess, CollectionGrants, Level, Read, Sweep, Write,
};
pub use audit::AuditTrail;
pub use changes::CollectionChanges;
pub use collections::{CollectionView, Collections};
pub use database::{DatabaseConfigView, DatabaseOpener, DatabaseSupport, OpenedDatabase};
pub use intelligence::{IntelligenceConfig, Llms, ModelPrice, Purpose};
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
pub use tree::Tree;
pub use webhooks::{NewWebhook, WebhookDeliveriesView, WebhookView};

use crate::agent::KeyDirectory;
use crate::audit::AuditLog;
use crate::call::blocking;
use crate::embedders::Embedders;
use crate::error::{Error, Result};
use crate::extraction::ExtractionJobs;
use crate::reembed::{ReembedJobs, ReembedProgress};
use crate::root::{RootActor, RootArgs};
use background::Background;
use embedding::Embedding;
use memvault_embed::EmbeddingService;
use memvault_events::EventBroker;
use memvault_index::search::cache::SearchCaches;
use memvault_index::IndexSettings;
use memvault_jobs::{JobQueue, Recurring, Scheduler};
use memvault_metrics::Metrics;
use memvault_types::clock::{Clock, SystemClock};
use memvault_webhooks::{record_events, WebhookDeliveries, WebhookSettings, CONCURRENT_ATTEMPTS};
use quotas::Quotas;

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
    /// What each tier may hold.
    pub tiers: memvault_types::tiers::Tiers,
    /// How failed tenant and collection actors are restarted, and when they are degraded.
    pub restarts: memvault_types::RestartPolicy,
    /// Tenants' own databases (`database/config`); `None`: not offered (503).
    pub databases: Option<DatabaseSupport>,
    /// Several nodes: which tenants this node serves (none is loaded at start; each is
    /// loaded when claimed, [`Memvault::adopt_tenant`]). `None`: one node, all of them.
    pub ownership: Option<Arc<dyn crate::cluster::TenantOwnership>>,
    /// Where snapshots of collections' indexes are kept for the next node (several nodes).
    pub index_shelf: Option<Arc<dyn memvault_index::SnapshotShelf>>,
    /// Several nodes: which node takes each turn of the work on shared data (pruning).
    pub work_gate: Option<memvault_jobs::WorkGate>,
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
            tiers: memvault_types::tiers::Tiers::default(),
            restarts: memvault_types::RestartPolicy::ACTORS,
            databases: None,
            ownership: None,
            index_shelf: None,
            work_gate: None,
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
    scheduler.every_cluster_wide(
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
    scheduler.every_cluster_wide(
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
}

/// Opens a job queue whose kind is given later ([`run_queue`]); `what` names the queue
/// in the start-up error. The crates above core open theirs with it too.
pub async fn open_queue<K: memvault_jobs::JobKind>(what: &str) -> Result<JobQueue<K>> {
    JobQueue::open().await.map_err(|error| Error::StartFailed {
        what: what.to_owned(),
        reason: error.to_string(),
    })
}

/// Runs an opened queue with its kind and `workers` workers.
pub async fn run_queue<K: memvault_jobs::JobKind>(
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

/// How long one request to a tenant's own bucket may take (connection included).
const FOREIGN_STORE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// The job queues, by kind.
pub(crate) type ExtractionQueue = JobQueue<ExtractionJobs>;
pub(crate) type WebhookQueue = JobQueue<WebhookDeliveries>;
pub(crate) type ReembedQueue = JobQueue<ReembedJobs>;
pub(crate) type ImportQueue = JobQueue<memvault_portability::ImportJobs>;

/// A cheap handle to the running service: the composition root. [`Memvault::start`]
/// builds every service once, each with its own dependencies (the actor [`Tree`], the
/// store, the queues it submits to, the other services it uses); the handle only hands
/// them out and stops the background work at shutdown.
#[derive(Clone)]
pub struct Memvault {
    services: Arc<Services>,
}

struct Services {
    tree: Tree,
    /// Where collections keep their search indexes (`None`: in memory).
    index_dir: Option<PathBuf>,
    store: Arc<dyn Store>,
    embedders: Embedders,
    llms: Llms,
    secrets: Option<Arc<memvault_storage::crypto::SecretBox>>,
    reembed_progress: ReembedProgress,
    background: Background,
    authorizer: Authorizer,
    placement: Placement,
    keys: Keys,
    collections: Collections,
    memories: Memories,
    search: Search,
    graph: Graph,
    maintenance: Maintenance,
    settings: Settings,
    tenants: Tenants,
    portability: Portability,
    proxy: Proxy,
    operator: Operator,
    audit: AuditTrail,
    internal: Internal,
}

impl Memvault {
    /// Starts the actor tree, loading every tenant and collection from the store, then
    /// builds the services and runs the job queues (each resumes the jobs a previous run
    /// left unfinished).
    pub async fn start(
        store: Arc<dyn Store>,
        embedders: Embedders,
        config: ServiceConfig,
    ) -> Result<Self> {
        // Every call about a tenant's data goes where that tenant keeps it; the tenants
        // whose data is in their own database are opened before the actors load it.
        let routed = Arc::new(memvault_storage::RoutedStore::new(store));
        if let Some(ownership) = &config.ownership {
            let ownership = ownership.clone();
            routed.serve_only(Arc::new(move |tenant| ownership.holds(tenant)));
        }
        if let Some(support) = &config.databases {
            database::open_routes(
                &routed,
                &support.opener,
                config.intelligence.secrets.as_deref(),
            )
            .await?;
        }
        let store: Arc<dyn Store> = routed.clone();
        let keys = KeyDirectory::new();
        let tenants = Arc::new(DashMap::new());
        let indexing = Arc::new(IndexSettings {
            root: config.index_dir.clone(),
            model: embedders.current_model().clone(),
            shelf: config.index_shelf.clone(),
        });
        let events = EventBroker::new(config.clock.clone());
        let args = RootArgs {
            store: store.clone(),
            indexing,
            keys: keys.clone(),
            tenants: tenants.clone(),
            events: events.clone(),
            restarts: config.restarts,
            ownership: config.ownership.clone(),
        };
        let intelligence = intelligence::Intelligence::new(config.intelligence.clone())?;
        let (root, _) =
            Actor::spawn(None, RootActor, args)
                .await
                .map_err(|error| Error::StartFailed {
                    what: "the actor system".to_owned(),
                    reason: error.to_string(),
                })?;
        let tree = Tree::new(
            root,
            tenants.clone(),
            keys,
            config.call_timeout,
            config.clock.clone(),
            config.ownership.is_some(),
        );
        // After the root actor: delivery resumes the outbox, which needs every tenant's
        // webhook, and the tenants are loaded by then.
        let published_webhooks: Arc<dyn memvault_webhooks::WebhookDirectory> =
            Arc::new(webhooks::PublishedWebhooks {
                tenants: tenants.clone(),
                ownership: config.ownership.clone(),
            });
        let delivery_log = memvault_webhooks::DeliveryLog::default();
        let deliveries = WebhookDeliveries::new(
            store.clone(),
            published_webhooks.clone(),
            config.intelligence.secrets.clone(),
            config.webhooks.clone(),
            delivery_log.clone(),
        )
        .map_err(|error| Error::StartFailed {
            what: "webhook delivery".to_owned(),
            reason: error.to_string(),
        })?;
        let webhook_queue = start_queue(
            deliveries,
            CONCURRENT_ATTEMPTS,
            "the webhook delivery queue",
        )
        .await?;
        let recorder = {
            let subscription = Arc::new(tokio::sync::Mutex::new(events.subscribe()));
            let (store, webhooks) = (store.clone(), webhook_queue.clone());
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
        let audit = Arc::new(AuditLog::start(store.clone(), config.restarts));
        let scheduler = Arc::new(Scheduler::with_gate(config.work_gate.clone()));
        schedule_pruning(&scheduler, &store, &config);
        // Opened now, run below once the services their kinds write through exist.
        let extraction: ExtractionQueue = open_queue("the extraction queue").await?;
        let import: ImportQueue = open_queue("the import queue").await?;
        let databases = config
            .databases
            .as_ref()
            .map(|support| database::TenantDatabases {
                routed: routed.clone(),
                opener: support.opener.clone(),
                progress: Arc::new(DashMap::new()),
                allow_private: support.allow_private_targets,
            });
        let database_queue: Option<database::DatabaseQueue> = match &databases {
            None => None,
            Some(databases) => Some(
                start_queue(
                    database::DatabaseSwitches::new(
                        databases.clone(),
                        tree.clone(),
                        config.intelligence.secrets.clone(),
                    ),
                    1,
                    "the database switch queue",
                )
                .await?,
            ),
        };
        let background = Background {
            extraction: extraction.clone(),
            webhooks: webhook_queue,
            reembed,
            import: import.clone(),
            database: database_queue.clone(),
            audit: audit.clone(),
            webhook_recorder: Arc::new(recorder),
            events,
            scheduler,
            rescans: Arc::default(),
        };

        // The shared parts.
        let secrets = config.intelligence.secrets.clone();
        let metrics = Arc::new(Metrics::new());
        let stores = Arc::new(memvault_files::TenantStores::new(
            config.blobs.store.clone(),
            FOREIGN_STORE_TIMEOUT,
        ));
        let quotas = Quotas::new(
            tree.clone(),
            config.tiers.clone(),
            stores.platform().clone(),
        );
        let placement = Placement::new(
            tree.clone(),
            stores.clone(),
            config.blobs.signer.clone(),
            secrets.clone(),
            quotas.clone(),
        );
        let llms = Llms::new(intelligence, store.clone(), tree.clone());
        let embedding = Embedding::new(embedders.clone(), metrics.clone(), tree.clone());

        // The services, each built once from what it uses.
        let authorizer = Authorizer { tree: tree.clone() };
        let keys = Keys { tree: tree.clone() };
        let collections = Collections {
            tree: tree.clone(),
            quotas: quotas.clone(),
            placement: placement.clone(),
            authorizer: authorizer.clone(),
        };
        let memories = Memories {
            tree: tree.clone(),
            store: store.clone(),
            quotas: quotas.clone(),
            embedding: embedding.clone(),
            placement: placement.clone(),
        };
        let search = Search {
            tree: tree.clone(),
            store: store.clone(),
            authorizer: authorizer.clone(),
            embedding: embedding.clone(),
            llms: llms.clone(),
            memories: memories.clone(),
            caches: Arc::new(SearchCaches::new(config.search_cache_entries, 10_000)),
            metrics: metrics.clone(),
        };
        let graph = Graph {
            tree: tree.clone(),
            store: store.clone(),
            quotas: quotas.clone(),
            embedding,
            llms: llms.clone(),
            authorizer: authorizer.clone(),
            extraction: extraction.clone(),
            metrics: metrics.clone(),
        };
        let maintenance = Maintenance {
            tree: tree.clone(),
            store: store.clone(),
            llms: llms.clone(),
            placement: placement.clone(),
            reembed_progress: reembed_progress.clone(),
        };
        let settings = Settings {
            tree: tree.clone(),
            store: store.clone(),
            llms: llms.clone(),
            extraction: extraction.clone(),
            webhooks: config.webhooks.clone(),
            delivery_log,
            stores: stores.clone(),
            allow_private_buckets: config.blobs.allow_private_targets,
            databases,
            database_queue,
        };
        let tenant_service = Tenants {
            tree: tree.clone(),
            store: store.clone(),
            quotas: quotas.clone(),
            placement: placement.clone(),
            audit: audit.clone(),
            stored_bytes: Arc::default(),
        };
        let portability = Portability {
            tree: tree.clone(),
            store: store.clone(),
            quotas: quotas.clone(),
            authorizer: authorizer.clone(),
            collections: collections.clone(),
            memories: memories.clone(),
            import: import.clone(),
        };
        let proxy = Proxy {
            tree: tree.clone(),
            llms: llms.clone(),
            graph: graph.clone(),
            search: search.clone(),
            authorizer: authorizer.clone(),
        };
        let operator = Operator {
            tree: tree.clone(),
            store: store.clone(),
            embedders: embedders.clone(),
            metrics,
            quotas,
            reembed_progress: reembed_progress.clone(),
            background: background.clone(),
            restarts: config.restarts,
        };
        let audit_trail = AuditTrail {
            audit,
            store: store.clone(),
            tree: tree.clone(),
        };
        let internal = Internal {
            embedders: embedders.clone(),
        };

        // The queues opened above, each kind given the service it writes through.
        run_queue(
            &extraction,
            ExtractionJobs::new(
                store.clone(),
                Arc::new(graph.clone()),
                config.extraction_pause,
            ),
            config.extraction_workers,
            "the extraction queue",
        )
        .await?;
        let imports = memvault_portability::ImportJobs::new(
            store.clone(),
            Arc::new(portability.clone()),
            portability::IMPORT_RANGE,
        );
        run_queue(&import, imports, 1, "the import queue").await?;

        Ok(Self {
            services: Arc::new(Services {
                tree,
                index_dir: config.index_dir.clone(),
                store,
                embedders,
                llms,
                secrets,
                reembed_progress,
                background,
                authorizer,
                placement,
                keys,
                collections,
                memories,
                search,
                graph,
                maintenance,
                settings,
                tenants: tenant_service,
                portability,
                proxy,
                operator,
                audit: audit_trail,
                internal,
            }),
        })
    }

    /// Several nodes: loads `tenant`, which this node has just claimed, and has every job
    /// queue look for its unfinished work. Whether it is served here now (false: no such
    /// tenant, or one being erased).
    pub async fn adopt_tenant(&self, tenant: &TenantId) -> Result<bool> {
        if self.has_tenant(tenant) {
            return Ok(true);
        }
        let id = tenant.clone();
        let adopted = self
            .services
            .tree
            .call_root(|reply| crate::root::RootMessage::AdoptTenant { id, reply })
            .await?;
        if adopted {
            self.services.background.rescan();
        }
        Ok(adopted)
    }

    /// Several nodes: every job queue asks its store again for the unfinished work of the
    /// tenants this node serves (work another node recorded after this node took the
    /// tenant over, such as an event of a write it committed just before).
    pub fn rescan_jobs(&self) {
        self.services.background.rescan();
    }

    /// Several nodes: stops serving `tenant` (another node holds it now): its actors stop
    /// and its keys no longer authenticate here.
    pub async fn let_go_tenant(&self, tenant: &TenantId) {
        self.services.tree.remove_tenant(tenant).await;
    }

    /// Registers the rescan of a job queue above core, run when a tenant is adopted.
    pub fn on_adopt(&self, rescan: Box<dyn Fn() + Send + Sync>) {
        self.services
            .background
            .rescans
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(rescan);
    }

    /// Whether the tenant is loaded (not unknown, not being erased).
    pub fn has_tenant(&self, tenant: &TenantId) -> bool {
        self.services.tree.has_tenant(tenant)
    }

    /// Where collections keep their search indexes (`{dir}/{tenant}/...`); `None` keeps
    /// them in memory.
    pub fn index_dir(&self) -> Option<&std::path::Path> {
        self.services.index_dir.as_deref()
    }

    /// What seals stored credentials (tenants' LLM keys, connectors' tokens).
    pub fn secrets(&self) -> Result<&memvault_storage::crypto::SecretBox> {
        self.services.llms.intelligence().secrets()
    }

    /// What seals stored credentials, shared; `None` when no encryption key is set.
    pub fn secret_box(&self) -> Option<Arc<memvault_storage::crypto::SecretBox>> {
        self.services.secrets.clone()
    }

    /// The service's clock.
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.services.tree.clock().clone()
    }

    /// The service's "now" (the configured clock).
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.services.tree.now()
    }

    /// Whether a platform LLM is configured.
    pub fn has_platform_llm(&self) -> bool {
        self.services.llms.has_platform_llm()
    }

    /// Platform LLM dollars the tenant spent this month.
    pub async fn platform_spend(&self, tenant: &TenantId) -> Result<f64> {
        self.services.llms.platform_spend(tenant).await
    }

    /// The tenant's LLM usage rows of the current month.
    pub async fn usage_this_month(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<memvault_storage::UsageRow>> {
        self.services.llms.usage_this_month(tenant).await
    }

    /// Where files live: stores, the URL signer, the tier's storage count, release.
    pub fn placement(&self) -> Placement {
        self.services.placement.clone()
    }

    /// Stops every actor and queue; in-flight actor calls finish first (each actor drains
    /// the message it is handling).
    pub async fn shutdown(&self) {
        self.services.background.shutdown(&self.services.tree).await;
    }

    /// Memories in a collection.
    pub fn memories(&self) -> Memories {
        self.services.memories.clone()
    }

    /// The tenant's collections and their grants.
    pub fn collections(&self) -> Collections {
        self.services.collections.clone()
    }

    /// Search, related memories, forget.
    pub fn search(&self) -> Search {
        self.services.search.clone()
    }

    /// Graph memory: remember, extraction jobs, contradictions, profiles.
    pub fn graph(&self) -> Graph {
        self.services.graph.clone()
    }

    /// Dedup, archive-stale, health, summaries.
    pub fn maintenance(&self) -> Maintenance {
        self.services.maintenance.clone()
    }

    /// The tenant's API keys.
    pub fn keys(&self) -> Keys {
        self.services.keys.clone()
    }

    /// Tenants: bootstrap, signup, stats.
    pub fn tenants(&self) -> Tenants {
        self.services.tenants.clone()
    }

    /// The tenant's settings: extraction LLM, spend cap, webhook, storage.
    pub fn settings(&self) -> Settings {
        self.services.settings.clone()
    }

    /// Account export and import.
    pub fn portability(&self) -> Portability {
        self.services.portability.clone()
    }

    /// What memvault's own other processes call (internal embed).
    pub fn internal(&self) -> Internal {
        self.services.internal.clone()
    }

    /// What the operator sees: usage, signups, jobs, restarts, request metrics.
    pub fn operator(&self) -> Operator {
        self.services.operator.clone()
    }

    /// The OpenAI-compatible chat proxy.
    pub fn proxy(&self) -> Proxy {
        self.services.proxy.clone()
    }

    /// The audit log.
    pub fn audit(&self) -> AuditTrail {
        self.services.audit.clone()
    }

    /// Access proofs and authentication.
    pub fn authorizer(&self) -> Authorizer {
        self.services.authorizer.clone()
    }

    /// Where recurring work runs (pruning, the status self-checks); stopped at shutdown.
    pub fn scheduler(&self) -> &Scheduler {
        &self.services.background.scheduler
    }

    /// The configured embedding model's service.
    pub fn embedder(&self) -> &EmbeddingService {
        self.services.embedders.current()
    }

    /// Every re-embedding in progress.
    pub fn reembedding(&self) -> &ReembedProgress {
        &self.services.reembed_progress
    }

    /// The collections not yet on the configured embedding model.
    pub fn outdated_collections(&self) -> Vec<(TenantId, CollectionName)> {
        ReembedJobs::outdated(
            self.services.tree.tenants(),
            self.services.embedders.current_model(),
        )
    }

    /// Every embedding model this service runs: the configured one and the earlier ones
    /// collections not yet re-embedded still use.
    pub fn embedders(&self) -> &Embedders {
        &self.services.embedders
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.services.store
    }

    /// Whether the actor tree is up (for health checks).
    pub fn is_running(&self) -> bool {
        self.services.tree.is_running()
    }
}
