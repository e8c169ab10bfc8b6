//! Starting and stopping the service: store, embedding model, actors, bootstrap, HTTP.
//!
//! `serve` takes a bound listener and a shutdown future, so tests run a real server on
//! `127.0.0.1:0` in-process and the binary runs the same code on its configured address.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::status::StatusMonitor;
use memvault_accounts::{AccountSettings, BillingSettings};
use memvault_core::embedders::{Embedders, ModelCatalog};
use memvault_core::service::BootstrapOutcome;
use memvault_core::service::{IntelligenceConfig, ModelPrice};
use memvault_core::{Memvault, ServiceConfig};
use memvault_embed::{
    default_model_cache_dir, ensure_minilm_weights, ensure_onnxruntime, Deferred, Embedder,
    EmbeddingError, EmbeddingService, MiniLmEmbedder, ModelSource, OnnxEmbedder, OpenAiEmbedder,
    OpenAiSettings, Precision, MINILM_INT8,
};
use memvault_llm::LlmConfig;
use memvault_mail::Mailer;
use memvault_portability::ErasureSettings;
use memvault_storage::crypto::SecretBox;
use memvault_storage::EmbeddingModel;
use memvault_storage::{SledStore, Store};
use memvault_types::clock::{Clock, SystemClock};
use memvault_webhooks::WebhookSettings;
use tokio::net::TcpListener;

use crate::api::ratelimit::RateLimits;
use crate::api::{self, AppState};
use crate::config::{Config, EmbeddingProvider, LocalModel, LocalRuntime, StoreBackend};

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot create data dir {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot open the store: {0}")]
    Store(#[from] memvault_storage::StorageError),
    #[error("embedding model: {0}")]
    Embedding(#[from] memvault_embed::EmbeddingError),
    #[error("{0}")]
    Service(#[from] memvault_core::Error),
    #[error("encryption key: {0}")]
    Secrets(String),
    #[error("file storage: {0}")]
    Blobs(String),
    #[error("outgoing mail: {0}")]
    Mail(String),
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: String,
        source: std::io::Error,
    },
    #[error("server error: {0}")]
    Serve(std::io::Error),
}

/// Starts the configured embedding model (fetching MiniLM's weights on first use, or
/// reaching the configured endpoint) and its batching thread; earlier models that
/// collections still use are started on demand by [`ConfiguredModels`].
pub async fn start_embedder(config: &Config) -> Result<Embedders, StartupError> {
    let models = ConfiguredModels::new(config);
    let started = Instant::now();
    let current = match config.embedding.provider {
        EmbeddingProvider::Local => models.local(config.embedding.local_model).await?,
        EmbeddingProvider::Openai => models.openai().await?,
    };
    tracing::info!(
        model = current.model_name(),
        dimensions = current.dimensions(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "embedding model loaded"
    );
    Ok(Embedders::new(current, Some(Arc::new(models))))
}

/// The models this configuration can run: all-MiniLM-L6-v2 in fp32 always (its weights
/// are fetched once) and in int8 where ONNX Runtime loads, and the configured
/// OpenAI-compatible model when `base_url` and `model` are set, whatever the provider (so
/// a server switched back to `local` still answers from a collection's endpoint-made
/// vectors until it is re-embedded).
#[derive(Clone)]
pub struct ConfiguredModels {
    source: ModelSource,
    openai: Option<OpenAiSettings>,
    max_batch: usize,
    runtime: LocalRuntime,
    onnxruntime_library: Option<std::path::PathBuf>,
}

impl ConfiguredModels {
    fn new(config: &Config) -> Self {
        let embedding = &config.embedding;
        let openai = match (&embedding.base_url, &embedding.model) {
            (Some(base_url), Some(model)) => Some(OpenAiSettings {
                base_url: base_url.clone(),
                model: model.clone(),
                api_key: embedding.api_key.clone(),
                dimensions: embedding.dimensions,
                timeout: Duration::from_secs(embedding.request_timeout_secs),
            }),
            _ => None,
        };
        Self {
            source: ModelSource {
                model_dir: embedding.model_dir.clone(),
                cache_dir: embedding
                    .cache_dir
                    .clone()
                    .unwrap_or_else(default_model_cache_dir),
                python: embedding.python.clone(),
            },
            openai,
            max_batch: embedding.max_batch,
            runtime: embedding.runtime,
            onnxruntime_library: embedding.onnxruntime_library.clone(),
        }
    }

    /// The configured local model; with `runtime = "auto"`, candle's fp32 model where
    /// ONNX Runtime cannot load.
    async fn local(&self, model: LocalModel) -> Result<EmbeddingService, EmbeddingError> {
        let models = self.clone();
        tokio::task::spawn_blocking(move || models.start_local(model, true))
            .await
            .map_err(|error| EmbeddingError::Load(error.to_string()))?
    }

    async fn openai(&self) -> Result<EmbeddingService, EmbeddingError> {
        let models = self.clone();
        tokio::task::spawn_blocking(move || models.start_openai())
            .await
            .map_err(|error| EmbeddingError::Load(error.to_string()))?
    }

    /// Starts `model` on the configured runtime. With `runtime = "auto"` and `fallback`,
    /// an ONNX Runtime that cannot load is logged and candle runs fp32 all-MiniLM-L6-v2
    /// instead (for the int8 model that is another model: its collections are
    /// re-embedded). Once the library has loaded, the model's name is settled: a graph or
    /// session that then fails to open (never seen with the pinned library) is logged and
    /// answered as an error by every embedding, not replaced by another model.
    fn start_local(
        &self,
        model: LocalModel,
        fallback: bool,
    ) -> Result<EmbeddingService, EmbeddingError> {
        let directory = ensure_minilm_weights(&self.source)?;
        let precision = match model {
            LocalModel::MiniLm => Precision::Fp32,
            LocalModel::MiniLmInt8 => Precision::Int8,
        };
        let embedder: Arc<dyn Embedder> = match self.runtime {
            LocalRuntime::Candle if precision == Precision::Int8 => {
                return Err(EmbeddingError::Load(format!(
                    "{MINILM_INT8} runs only on ONNX Runtime: set embedding.runtime = \"auto\" \
                     or \"onnx\", or embedding.local_model = \"all-MiniLM-L6-v2\""
                )))
            }
            LocalRuntime::Candle => Arc::new(MiniLmEmbedder::load(&directory)?),
            LocalRuntime::Onnx => Arc::new(self.start_onnx(&directory, precision)?),
            LocalRuntime::Auto => match self.start_onnx(&directory, precision) {
                Ok(embedder) => Arc::new(embedder),
                Err(error) if fallback => {
                    tracing::error!(
                        %error,
                        "ONNX Runtime cannot run here: all-MiniLM-L6-v2 runs on candle instead \
                         (fp32, about a third of the speed); set embedding.onnxruntime_library \
                         to a working libonnxruntime.so to use it"
                    );
                    Arc::new(MiniLmEmbedder::load(&directory)?)
                }
                Err(error) => return Err(error),
            },
        };
        Ok(EmbeddingService::start(embedder, self.max_batch))
    }

    /// ONNX Runtime's library is loaded here (an error is known at once, for the
    /// fallback); the graph is built and the sessions opened on a thread of their own,
    /// beside whatever the caller does next (a server's start loads its collections
    /// meanwhile: the model took about 0.9 s of a million memories' 10 s cold start).
    fn start_onnx(
        &self,
        directory: &std::path::Path,
        precision: Precision,
    ) -> Result<Deferred, EmbeddingError> {
        let library = match &self.onnxruntime_library {
            Some(library) => library.clone(),
            None => ensure_onnxruntime(&self.source.cache_dir, &self.source.python)?,
        };
        Ok(OnnxEmbedder::prepare(directory, &library, precision)?.open_beside())
    }

    fn start_openai(&self) -> Result<EmbeddingService, EmbeddingError> {
        let settings = self.openai.clone().ok_or_else(|| {
            EmbeddingError::Load("embedding.base_url and embedding.model are not set".to_owned())
        })?;
        let embedder = OpenAiEmbedder::connect(settings)?;
        Ok(EmbeddingService::start(Arc::new(embedder), self.max_batch))
    }
}

impl ModelCatalog for ConfiguredModels {
    fn open(&self, model: &EmbeddingModel) -> Result<EmbeddingService, String> {
        if *model == EmbeddingModel::legacy() {
            return self
                .start_local(LocalModel::MiniLm, true)
                .map_err(|error| error.to_string());
        }
        if *model == EmbeddingModel::new(MINILM_INT8, 384) {
            return self
                .start_local(LocalModel::MiniLmInt8, false)
                .map_err(|error| error.to_string());
        }
        match &self.openai {
            Some(settings) if settings.model == model.name => {
                self.start_openai().map_err(|error| error.to_string())
            }
            _ => Err(format!(
                "no configuration runs it; set embedding.base_url and embedding.model = \"{}\" \
                 to keep answering from its vectors while the collection is re-embedded",
                model.name
            )),
        }
    }
}

/// The running service (the composition root, to shut down) and the HTTP edge's state
/// over it.
pub struct Started {
    pub service: Memvault,
    pub state: AppState,
    /// What start-up bootstrapping did (a generated admin key is printed once).
    pub bootstrap: BootstrapOutcome,
}

/// Opens the store, starts the actors and bootstraps the admin tenant.
pub async fn start_service(
    config: &Config,
    embedders: Embedders,
    bootstrap_key: Option<String>,
) -> Result<Started, StartupError> {
    start_service_with_clock(config, embedders, bootstrap_key, Arc::new(SystemClock)).await
}

/// [`start_service`] with another source of "now" (tests move a `ManualClock`).
pub async fn start_service_with_clock(
    config: &Config,
    embedders: Embedders,
    bootstrap_key: Option<String>,
    clock: Arc<dyn Clock>,
) -> Result<Started, StartupError> {
    let data_dir = &config.server.data_dir;
    std::fs::create_dir_all(data_dir).map_err(|source| StartupError::DataDir {
        path: data_dir.display().to_string(),
        source,
    })?;
    let (store, startup_lock, cluster) = open_store(config).await?;
    let secrets = match &config.security.encryption_key {
        Some(key) => SecretBox::from_key_material(key),
        None => SecretBox::load_or_create(&data_dir.join("secret.key")),
    }
    .map_err(|error| StartupError::Secrets(error.to_string()))?;
    let blobs = crate::files::blob_backend(config).map_err(StartupError::Blobs)?;
    let index_shelf = cluster.as_ref().map(|_| {
        Arc::new(crate::snapshots::BlobShelf::new(blobs.store.clone()))
            as Arc<dyn memvault_index::SnapshotShelf>
    });
    let service_config = ServiceConfig {
        call_timeout: Duration::from_millis(config.actors.call_timeout_ms),
        index_dir: Some(data_dir.join("indexes")),
        search_cache_entries: config.search.result_cache_entries,
        intelligence: intelligence_config(config, secrets),
        extraction_workers: config.extraction.workers,
        extraction_pause: Duration::from_secs(config.extraction.pause_secs.max(1)),
        job_retention: Duration::from_secs(config.extraction.job_retention_days * 24 * 3600),
        audit_retention: Duration::from_secs(config.audit.retention_days * 24 * 3600),
        clock,
        webhooks: WebhookSettings {
            allow_private_targets: config.webhooks.allow_private_targets,
            timeout: Duration::from_secs(config.webhooks.timeout_secs),
            max_attempts: config.webhooks.max_attempts,
            initial_backoff: Duration::from_millis(config.webhooks.initial_backoff_ms),
        },
        blobs: blobs.clone(),
        tiers: tiers(config),
        restarts: memvault_types::RestartPolicy::ACTORS,
        databases: Some(memvault_core::DatabaseSupport {
            opener: Arc::new(PostgresDatabases),
            allow_private_targets: config.store.allow_private_targets,
        }),
        ownership: cluster
            .clone()
            .map(|cluster| cluster as Arc<dyn memvault_core::cluster::TenantOwnership>),
        index_shelf,
        work_gate: cluster.as_ref().map(|cluster| cluster.work_gate()),
    };
    let service = Memvault::start(store, embedders, service_config).await?;
    if let Some(cluster) = &cluster {
        cluster.start(&service);
    }
    let intake = memvault_intake::start(&service, intake_settings(config)).await?;
    let connections = memvault_sync::start(&service, connector_settings(config)).await?;
    let accounts = memvault_accounts::start(
        &service,
        intake.files(),
        account_settings(config).map_err(StartupError::Mail)?,
        billing_settings(config),
        memvault_accounts::EmailSettings {
            domain: config.email.domain.to_ascii_lowercase(),
        },
    )
    .await?;
    if let Some(cluster) = &cluster {
        let (operator, intake, connections, accounts) = (
            service.operator(),
            intake.clone(),
            connections.clone(),
            accounts.clone(),
        );
        cluster.report_jobs(Box::new(move || {
            crate::api::operator::job_metrics(&operator, &connections, &intake, &accounts)
        }));
    }
    let bootstrap = service.tenants().bootstrap(bootstrap_key).await?;
    // Another node starting on the same database loads what this one bootstrapped.
    drop(startup_lock);
    let status = StatusMonitor::start(
        service.scheduler(),
        service.store().clone(),
        service.embedder().clone(),
        Duration::from_secs(config.status.check_interval_secs),
        {
            let (operator, connections) = (service.operator(), connections.clone());
            let (intake, accounts) = (intake.clone(), accounts.clone());
            Box::new(move || {
                let mut supervision = operator.supervision();
                supervision.supervisors_down.extend(accounts.queues_down());
                if !intake.is_running() {
                    supervision.supervisors_down.push("ingest");
                }
                if !connections.is_running() {
                    supervision.supervisors_down.push("connector_sync");
                }
                supervision
            })
        },
        Some(
            config
                .server
                .data_dir
                .join("edge")
                .join("status-checks.json"),
        ),
    );
    let pageviews = start_pageviews(
        service.scheduler(),
        config.server.data_dir.join("edge").join("pageviews.json"),
    );
    let state = AppState::new(
        &service,
        connections,
        intake,
        accounts,
        status,
        config.server.max_body_bytes,
        RateLimits::from_config(&config.rate_limit),
    )
    .with_account_limits(crate::api::account::AccountLimits {
        signup_enabled: config.account.signup_enabled,
        per_minute: config.account.requests_per_minute,
        limiter: memvault_types::rate_limit::FixedWindowLimiter::new(100_000),
    })
    .with_internal_secrets(crate::api::internal::InternalSecrets {
        embed: config.internal.embed_secret.as_deref().map(Arc::from),
    })
    .with_inbound_secret(config.email.inbound_secret.clone())
    .with_public_url(config.server.public_url.clone())
    .with_pageviews(pageviews)
    .with_cluster(cluster)
    .with_trusted_proxies(
        crate::api::client::TrustedProxies::parse(&config.server.trusted_proxies)
            .map_err(|error| StartupError::Serve(std::io::Error::other(error)))?,
    );
    Ok(Started {
        service,
        state,
        bootstrap,
    })
}

/// The configured store: sled under the data dir, or Postgres (whose schema is created or
/// migrated on connect, under an advisory lock).
///
/// With Postgres it also returns the start-up lock, held until bootstrap is done (see
/// `PgStore::startup_lock`): several nodes starting at once bootstrap once; and, with
/// `[cluster]`, this node, registered.
async fn open_store(config: &Config) -> Result<OpenedStore, StartupError> {
    let opened = match config.store.backend {
        StoreBackend::Sled => {
            let directory = config.server.data_dir.join("store");
            tokio::task::spawn_blocking(move || {
                SledStore::open(&directory)
                    .map(|store| (Arc::new(store) as Arc<dyn Store>, None, None))
            })
            .await
        }
        StoreBackend::Postgres => {
            let url = config.store.url.clone().unwrap_or_default();
            let cluster = config.cluster.clone();
            let mail_domain = config.email.domain.clone();
            tokio::task::spawn_blocking(move || {
                let mut store = memvault_postgres::PgStore::connect(&url)?;
                if cluster.enabled() {
                    store = store.fenced_as(&crate::cluster::Cluster::new_node_id(&cluster));
                }
                let store = Arc::new(store);
                let node = match cluster.enabled() {
                    true => Some(crate::cluster::Cluster::join(
                        store.clone(),
                        &cluster,
                        &mail_domain,
                    )?),
                    false => None,
                };
                tracing::info!("store: Postgres; waiting for the start-up lock");
                let lock = store.startup_lock()?;
                Ok((store as Arc<dyn Store>, Some(lock), node))
            })
            .await
        }
    };
    Ok(opened.map_err(|error| StartupError::Serve(std::io::Error::other(error)))??)
}

/// The store, the start-up lock (Postgres), and this node of several (`[cluster]`).
type OpenedStore = (
    Arc<dyn Store>,
    Option<memvault_postgres::StartupLock>,
    Option<Arc<crate::cluster::Cluster>>,
);

/// Tenants' own databases are Postgres: opened and checked by the Postgres store.
struct PostgresDatabases;

impl memvault_core::DatabaseOpener for PostgresDatabases {
    fn open(&self, url: &str, timeout: Duration) -> Result<memvault_core::OpenedDatabase, String> {
        let (store, server_version) = memvault_postgres::PgStore::open_checked(url, timeout)
            .map_err(|error| error.to_string())?;
        Ok(memvault_core::OpenedDatabase {
            store: Arc::new(store),
            server_version,
        })
    }
}

/// What each tier may hold, from `[tiers.<name>]`.
fn tiers(config: &Config) -> memvault_types::tiers::Tiers {
    memvault_types::tiers::Tiers::new(
        config
            .tiers
            .0
            .iter()
            .map(|(name, tier)| {
                let limits = memvault_types::tiers::TierLimits {
                    collections: tier.collections,
                    memories: tier.memories,
                    storage_bytes: tier.storage_mb.map(|mb| mb.saturating_mul(1024 * 1024)),
                };
                (name.clone(), limits)
            })
            .collect(),
    )
}

/// The pageview counts saved at `path`, saved again every 10 s while they change (a
/// recurring task, `pageviews_save`) and when the scheduler stops.
fn start_pageviews(
    scheduler: &memvault_jobs::Scheduler,
    path: std::path::PathBuf,
) -> Arc<crate::pageviews::Pageviews> {
    let pageviews = Arc::new(crate::pageviews::Pageviews::load(&path));
    let schedule = memvault_jobs::Recurring {
        name: "pageviews_save",
        period: Duration::from_secs(10),
        jitter: Duration::ZERO,
        run_at_start: false,
    };
    let saving = pageviews.clone();
    scheduler.every(schedule, move || {
        let pageviews = saving.clone();
        async move {
            tokio::task::spawn_blocking(move || pageviews.save())
                .await
                .map_err(|error| memvault_types::Failure::internal(error.to_string()))?
                .map_err(|error| {
                    memvault_types::Failure::internal(format!("pageviews not saved: {error}"))
                })
        }
    });
    pageviews
}

/// Outgoing mail and the account flows: SMTP when `mail.smtp_url` is set, else the outbox
/// under the data dir.
fn account_settings(config: &Config) -> Result<AccountSettings, String> {
    let mail = &config.mail;
    let mailer = match &mail.smtp_url {
        Some(url) => Mailer::smtp(url, &mail.from, Duration::from_secs(mail.timeout_secs)),
        None => Mailer::outbox(config.server.data_dir.join("outbox"), &mail.from),
    }
    .map_err(|error| error.to_string())?;
    tracing::info!(to = %mailer.describe(), "outgoing mail");
    Ok(AccountSettings {
        mailer: Some(Arc::new(mailer)),
        public_url: crate::files::public_url(config),
        reveal_ttl: Duration::from_secs(config.account.reveal_ttl_minutes * 60),
        mail_max_attempts: mail.max_attempts,
        mail_initial_backoff: Duration::from_millis(mail.initial_backoff_ms),
        mails_per_address_per_minute: config.account.mails_per_address_per_minute,
        erasure: ErasureSettings {
            batch: config.account.erasure_batch,
            pause: Duration::from_millis(config.account.erasure_pause_ms),
        },
    })
}

/// Stripe, from `[billing]`; the return addresses default to the public address.
fn billing_settings(config: &Config) -> BillingSettings {
    let billing = &config.billing;
    let public = crate::files::public_url(config);
    let or_public = |url: &Option<String>| url.clone().unwrap_or_else(|| format!("{public}/"));
    BillingSettings {
        api_base: billing.stripe_api_base.clone(),
        secret_key: billing.stripe_secret_key.clone(),
        webhook_secret: billing.webhook_secret.clone(),
        price_pro: billing.price_pro.clone(),
        success_url: or_public(&billing.success_url),
        cancel_url: or_public(&billing.cancel_url),
        return_url: or_public(&billing.return_url),
        timeout: Duration::from_secs(billing.timeout_secs.max(1)),
        ..BillingSettings::default()
    }
}

/// The LLM side of the service: the platform LLM (its key read from the environment
/// variable the config names), prices, and the secret box for tenants' keys.
fn intelligence_config(config: &Config, secrets: SecretBox) -> IntelligenceConfig {
    let llm = &config.llm;
    let platform = llm.base_url.as_ref().map(|base_url| {
        let api_key = std::env::var(&llm.api_key_env)
            .ok()
            .filter(|key| !key.is_empty());
        LlmConfig {
            timeout: Duration::from_secs(llm.timeout_secs),
            max_retries: llm.max_retries,
            ..LlmConfig::new(base_url.clone(), llm.model.clone(), api_key)
        }
    });
    IntelligenceConfig {
        platform,
        prices: llm
            .prices
            .iter()
            .map(|(model, price)| {
                (
                    model.clone(),
                    ModelPrice {
                        input_per_million: price.input_per_million,
                        output_per_million: price.output_per_million,
                    },
                )
            })
            .collect(),
        secrets: Some(Arc::new(secrets)),
        own_llm_timeout: Duration::from_secs(llm.own_llm_timeout_secs),
    }
}

pub async fn bind(address: &str) -> Result<TcpListener, StartupError> {
    TcpListener::bind(address)
        .await
        .map_err(|source| StartupError::Bind {
            address: address.to_owned(),
            source,
        })
}

/// Serves HTTP until `shutdown` resolves, lets in-flight requests finish, then stops
/// the actors.
///
/// `shutdown` is boxed so that this function is not generic: the HTTP stack under it
/// (axum, hyper, the router) is compiled once, here, and not again in each caller.
pub async fn serve(
    listener: TcpListener,
    service: Memvault,
    state: AppState,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
) -> Result<(), StartupError> {
    let (connections, intake, accounts, cluster, pageviews) = (
        state.connections.clone(),
        state.intake.clone(),
        state.account_services.clone(),
        state.cluster.clone(),
        state.pageviews.clone(),
    );
    let router =
        crate::dashboard::router(state.clone(), api::router(state), service.store().clone());
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
    .map_err(StartupError::Serve)?;
    if let Err(error) = tokio::task::spawn_blocking(move || pageviews.save())
        .await
        .unwrap_or_else(|error| Err(std::io::Error::other(error)))
    {
        tracing::warn!(%error, "pageview counts not saved at shutdown");
    }
    connections.stop().await;
    intake.stop().await;
    accounts.stop().await;
    service.shutdown().await;
    // Nothing of this node writes any more: the other nodes may take its accounts now.
    if let Some(cluster) = cluster {
        cluster.leave().await;
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutdown requested; finishing in-flight requests");
}

/// Intake: the file settings (limits, the worker, the engines).
fn intake_settings(config: &Config) -> memvault_intake::IntakeSettings {
    memvault_intake::IntakeSettings {
        files: crate::files::file_settings(config),
    }
}

/// `[connectors]`: the scheduler, each provider's API root and OAuth app (an app needs
/// both a client id and a secret; the authorize and token URLs default to the provider's).
fn connector_settings(config: &Config) -> memvault_sync::ConnectorSettings {
    use memvault_connectors::ProviderKind;
    use memvault_sync::{ConnectorSettings, ProviderSettings};
    let section = &config.connectors;
    let mut providers = std::collections::BTreeMap::new();
    for kind in ProviderKind::ALL {
        let provider = match kind {
            ProviderKind::Slack => &section.slack,
            ProviderKind::Notion => &section.notion,
            ProviderKind::Gdrive => &section.gdrive,
            ProviderKind::Gmail => &section.gmail,
            ProviderKind::Linear => &section.linear,
            ProviderKind::Confluence => &section.confluence,
            ProviderKind::Hubspot => &section.hubspot,
        };
        let defaults = memvault_connectors::oauth::default_urls(kind);
        let app = match (&provider.client_id, &provider.client_secret, defaults) {
            (Some(id), Some(secret), Some((authorize, token)))
                if !id.is_empty() && !secret.is_empty() =>
            {
                Some(memvault_connectors::oauth::App {
                    client_id: id.clone(),
                    client_secret: secret.clone(),
                    authorize_url: provider
                        .authorize_url
                        .clone()
                        .unwrap_or_else(|| authorize.to_owned()),
                    token_url: provider
                        .token_url
                        .clone()
                        .unwrap_or_else(|| token.to_owned()),
                })
            }
            _ => None,
        };
        let default_budget = memvault_connectors::Budget::default_for(kind);
        let budget =
            (provider.requests_per_second.is_some() || provider.burst.is_some()).then(|| {
                memvault_connectors::Budget {
                    rate: provider.requests_per_second.unwrap_or(default_budget.rate),
                    burst: provider.burst.unwrap_or(default_budget.burst),
                }
            });
        providers.insert(
            kind,
            ProviderSettings {
                base_url: provider.base_url.clone(),
                app,
                budget,
            },
        );
    }
    ConnectorSettings {
        providers,
        allow_private_targets: section.allow_private_targets,
        tick: Duration::from_secs(section.tick_secs.max(1)),
        reconcile_every: Duration::from_secs(section.reconcile_minutes * 60),
        max_pages_per_run: section.max_pages_per_run,
        concurrent_runs: section.concurrent_runs.max(1),
        public_url: crate::files::public_url(config),
        ..ConnectorSettings::default()
    }
}
