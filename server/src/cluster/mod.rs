//! Several nodes on one Postgres (`[cluster]`): which node serves which account, and the
//! forwarding that sends every request to it.
//!
//! The unit of placement is the tenant (an account): one node at a time holds its lease
//! (`memvault_postgres` leases, fenced by epoch), runs its actors, answers its requests,
//! runs its jobs, and is the only one whose writes of its data commit. Any node accepts
//! any request. A request with an API key goes, before anything else runs, to
//! [`route`]: the key's tenant is found (the node's own key directory, else the key's
//! hash in the database), then
//!
//! - this node holds the tenant: it is served here;
//! - another live node holds it: it is forwarded there over HTTP (`advertise_url`), with
//!   the cluster secret and the client's address, and the answer streamed back;
//! - nobody holds it (never served, released, or its node died and the lease expired):
//!   this node claims it, loads it from the database, resumes its queued jobs, and serves.
//!
//! A request without a key that is about one account (an OAuth callback, a reveal link,
//! key recovery, the mail-in handoff, Stripe's webhook) is placed the same way, by the
//! account it names ([`keyless`]).
//!
//! Because every request of an account runs on its owner, what is per account stays
//! exact across nodes without any cache to invalidate: authentication (a revoked key
//! stops working everywhere at once), the rate limiter's counts per key, the search
//! caches, the collection actors that serialize writes. A heartbeat renews the node's
//! leases every quarter of the lease time; a tenant whose lease the heartbeat finds lost
//! is dropped at once, and a node whose heartbeat has not succeeded for three quarters of
//! the lease time stops serving until it succeeds again, before any other node could take
//! its leases. Should a node write after losing a lease anyway (a long pause), the fence
//! refuses the write (503 `ownership_moved`).

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use memvault_core::agent::hash_key;
use memvault_core::cluster::TenantOwnership;
use memvault_core::Memvault;
use memvault_jobs::{JobMetricsSnapshot, WorkGate};
use memvault_postgres::{tenant_lease, Claim, PgStore};
use memvault_storage::{StorageError, TenantId};
use serde::{Deserialize, Serialize};

mod keyless;

use crate::api::client::ClientAddress;
use crate::api::AppState;
use crate::config::ClusterConfig;
use crate::error::ApiError;

/// Carries the cluster secret on a request one node forwards to another.
pub const NODE_SECRET_HEADER: &str = "x-memvault-node-secret";
/// Carries the client's address on a forwarded request.
pub const CLIENT_HEADER: &str = "x-memvault-client";
/// How many nodes a forwarded request has passed (at most [`MAX_HOPS`]).
pub const HOPS_HEADER: &str = "x-memvault-hops";
/// The `Host` the client addressed, on a request another node forwarded (the dashboard's
/// same-origin check compares a change's `Origin` with it).
pub const HOST_HEADER: &str = "x-memvault-host";
/// A request is forwarded at most this many times (an account moving while a request is
/// on its way may send it on once more).
const MAX_HOPS: u8 = 2;
/// Which node answered (on every answer of a node of several).
pub const NODE_HEADER: &str = "x-memvault-node";

/// How long the owner of a tenant another node holds is remembered before it is read
/// again.
const OWNER_TTL: Duration = Duration::from_millis(500);
/// Node rows silent this many lease times are removed (crashed processes).
const FORGET_AFTER_LEASES: u32 = 6;

/// This node of several: see the module docs.
pub struct Cluster {
    store: Arc<PgStore>,
    node: String,
    advertise_url: String,
    secret: Arc<str>,
    /// The mail-in drop addresses' domain.
    mail_domain: String,
    ttl: Duration,
    http: reqwest::Client,
    service: std::sync::OnceLock<Memvault>,
    /// Until when the leases this node holds may be trusted without a newer heartbeat.
    trusted_until: Mutex<Instant>,
    /// A key's tenant never changes: key hash to tenant, read once.
    key_tenants: Mutex<HashMap<String, TenantId>>,
    /// Tenants another node holds: its address, and when that was read.
    owners: Mutex<HashMap<TenantId, (String, Instant)>>,
    counters: Counters,
    /// This node's job queues' figures, stored with each heartbeat for every node to show.
    jobs: Mutex<Option<JobFigures>>,
    /// The live nodes (id, address) as of the last heartbeat: where free accounts go.
    live: Mutex<Vec<(String, String)>>,
}

/// Every job kind's figures on this node.
pub type JobFigures = Box<dyn Fn() -> BTreeMap<String, JobMetricsSnapshot> + Send + Sync>;

/// What a node stores with its heartbeat.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NodeStats {
    /// Accounts it serves now.
    pub tenants: u64,
    /// Requests it served for the accounts it holds, and forwarded to their nodes.
    pub requests_served: u64,
    pub requests_forwarded: u64,
    /// Accounts it took over, and lost to another node, since it started.
    pub tenants_adopted: u64,
    pub tenants_lost: u64,
    /// Forwards whose node did not answer.
    pub forward_failures: u64,
    /// Its job queues by kind: jobs queued and running now, done and failed since it
    /// started.
    pub jobs: BTreeMap<String, NodeJobs>,
}

/// One job kind's figures on a node.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NodeJobs {
    pub queued: u64,
    pub running: u64,
    pub done: u64,
    pub failed: u64,
}

#[derive(Default)]
struct Counters {
    served: AtomicU64,
    forwarded: AtomicU64,
    adopted: AtomicU64,
    lost: AtomicU64,
    forward_failures: AtomicU64,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Cluster")
            .field("node", &self.node)
            .field("advertise_url", &self.advertise_url)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where a request goes.
enum Place {
    /// Served here (or not a tenant's request: the handler answers).
    Here,
    /// Forwarded to the node at this address.
    Owner(String),
    /// The database could not say.
    Unavailable(String),
    /// This node holds the account and is still loading it (a large account's indexes
    /// take a while to build): the client retries.
    Loading(String),
}

/// The cluster's figures for the operator and the status page.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ClusterView {
    /// This node's id (its name and a suffix unique to this start).
    pub node: String,
    /// Every registered node, oldest first.
    pub nodes: Vec<NodeView>,
    /// This node's figures now (the others' are as of their last heartbeat).
    pub stats: NodeStats,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct NodeView {
    pub id: String,
    pub advertise_url: String,
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// Seconds since its last heartbeat.
    pub silent_for_secs: f64,
    /// Whether its heartbeat is within the lease time.
    pub live: bool,
    /// Live leases it holds (`tenant:<id>`), by name.
    pub leases: Vec<String>,
    /// What it reported at its last heartbeat.
    pub stats: NodeStats,
}

impl Cluster {
    /// Joins the cluster as a new node over `store` (already [`PgStore::fenced_as`] the
    /// node id): registers it with its address.
    /// `mail_domain` is the drop addresses' (mail-in handoffs are routed by them).
    pub fn join(
        store: Arc<PgStore>,
        config: &ClusterConfig,
        mail_domain: &str,
    ) -> Result<Arc<Self>, StorageError> {
        let node = store
            .node_id()
            .ok_or_else(|| StorageError::Backend("the store is not a node's".into()))?
            .to_owned();
        let advertise_url = config
            .advertise_url
            .clone()
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_owned();
        let ttl = Duration::from_millis(config.lease_ttl_ms);
        let started = Instant::now();
        store.register_node(&advertise_url)?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| StorageError::Backend(format!("HTTP client: {error}")))?;
        tracing::info!(%node, %advertise_url, ttl_ms = config.lease_ttl_ms, "joined the cluster");
        let live = Mutex::new(vec![(node.clone(), advertise_url.clone())]);
        Ok(Arc::new(Self {
            store,
            node,
            advertise_url,
            secret: Arc::from(config.secret.clone().unwrap_or_default()),
            mail_domain: mail_domain.to_owned(),
            ttl,
            http,
            service: std::sync::OnceLock::new(),
            trusted_until: Mutex::new(started + ttl * 3 / 4),
            key_tenants: Mutex::new(HashMap::new()),
            owners: Mutex::new(HashMap::new()),
            counters: Counters::default(),
            jobs: Mutex::new(None),
            live,
        }))
    }

    /// A node id for a process starting now: the configured name (else the host name)
    /// and a random suffix.
    pub fn new_node_id(config: &ClusterConfig) -> String {
        let name = config
            .node_name
            .clone()
            .filter(|name| !name.trim().is_empty())
            .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| "node".to_owned());
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        format!("{name}-{}", &suffix[..8])
    }

    /// Starts serving with `service` (which was started with this cluster as its
    /// ownership) and the heartbeat that renews the leases.
    pub fn start(self: &Arc<Self>, service: &Memvault) {
        if self.service.set(service.clone()).is_err() {
            return;
        }
        let cluster = self.clone();
        tokio::spawn(async move { cluster.heartbeats().await });
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    /// Where the heartbeat reads this node's job figures from.
    pub fn report_jobs(&self, figures: JobFigures) {
        *lock(&self.jobs) = Some(figures);
    }

    fn stats(&self) -> NodeStats {
        let count = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        NodeStats {
            tenants: self
                .store
                .held_leases()
                .iter()
                .filter(|name| name.starts_with("tenant:"))
                .count() as u64,
            requests_served: count(&self.counters.served),
            requests_forwarded: count(&self.counters.forwarded),
            tenants_adopted: count(&self.counters.adopted),
            tenants_lost: count(&self.counters.lost),
            forward_failures: count(&self.counters.forward_failures),
            jobs: lock(&self.jobs)
                .as_ref()
                .map(|figures| figures())
                .unwrap_or_default()
                .into_iter()
                .map(|(kind, jobs)| {
                    let figures = NodeJobs {
                        queued: jobs.queued,
                        running: jobs.running,
                        done: jobs.done,
                        failed: jobs.failed,
                    };
                    (kind, figures)
                })
                .collect(),
        }
    }

    fn trusted(&self) -> bool {
        Instant::now() < *lock(&self.trusted_until)
    }

    async fn heartbeats(self: Arc<Self>) {
        let mut interval = tokio::time::interval(self.ttl / 4);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut beats: u64 = 0;
        loop {
            interval.tick().await;
            beats += 1;
            let started = Instant::now();
            let (store, ttl) = (self.store.clone(), self.ttl);
            let stats = serde_json::to_string(&self.stats()).unwrap_or_else(|_| "{}".to_owned());
            let outcome = tokio::task::spawn_blocking(move || {
                let lost = store.heartbeat(ttl, &stats)?;
                if beats.is_multiple_of(20) {
                    store.forget_silent_nodes(ttl * FORGET_AFTER_LEASES)?;
                }
                let live: Vec<(String, String)> = store
                    .nodes()?
                    .into_iter()
                    .filter(|node| node.silent_for < ttl.as_secs_f64())
                    .map(|node| (node.id, node.advertise_url))
                    .collect();
                Ok::<_, StorageError>((lost, live))
            })
            .await;
            match outcome {
                Ok(Ok((lost, live))) => {
                    *lock(&self.trusted_until) = started + self.ttl * 3 / 4;
                    if !live.is_empty() {
                        *lock(&self.live) = live;
                    }
                    for name in lost {
                        if let Some(tenant) = name.strip_prefix("tenant:") {
                            tracing::warn!(node = %self.node, %tenant, "lease lost; letting the tenant go");
                            self.counters.lost.fetch_add(1, Ordering::Relaxed);
                            self.let_go(&TenantId::from_stored(tenant)).await;
                        }
                    }
                    // A node forgotten by the others (a pause longer than the lease
                    // time) registers again; and the job queues look again for work of
                    // this node's tenants that another node recorded late.
                    if beats.is_multiple_of(20) {
                        if let Some(service) = self.service.get() {
                            service.rescan_jobs();
                        }
                        let store = self.store.clone();
                        let url = self.advertise_url.clone();
                        let _ =
                            tokio::task::spawn_blocking(move || store.register_node(&url)).await;
                    }
                }
                Ok(Err(error)) => {
                    tracing::warn!(node = %self.node, %error, "heartbeat failed");
                    if !self.trusted() {
                        self.let_go_everything().await;
                    }
                }
                Err(error) => tracing::warn!(node = %self.node, %error, "heartbeat task failed"),
            }
        }
    }

    /// The live node a free account goes to: the highest rendezvous score of the
    /// account and the node (SHA-256), so every node picks the same one and a node joining
    /// or leaving moves only the accounts it wins or held.
    fn rendezvous(&self, tenant: &TenantId) -> Option<(String, String)> {
        use sha2::Digest;
        lock(&self.live)
            .iter()
            .max_by_key(|(node, _)| sha2::Sha256::digest(format!("{node}\n{tenant}").as_bytes()))
            .cloned()
    }

    async fn let_go(&self, tenant: &TenantId) {
        if let Some(service) = self.service.get() {
            service.let_go_tenant(tenant).await;
        }
    }

    /// The gate of the recurring work on shared data (pruning): a turn is this node's
    /// while it holds the work's lease, `work:{task}`, which the heartbeat renews like an
    /// account's; when this node stops or dies, the next node whose turn comes claims it.
    pub fn work_gate(self: &Arc<Self>) -> WorkGate {
        let cluster = self.clone();
        WorkGate::new(move |task| {
            let (store, ttl) = (cluster.store.clone(), cluster.ttl);
            async move {
                let name = format!("work:{task}");
                let claim = tokio::task::spawn_blocking(move || store.claim(&name, ttl)).await;
                matches!(claim, Ok(Ok(Claim::Held(_))))
            }
        })
    }

    /// The heartbeat has not succeeded for too long: another node may take any of this
    /// node's leases now, so nothing of them is served from what is loaded here.
    async fn let_go_everything(&self) {
        let held = self.store.held_leases();
        if held.is_empty() {
            return;
        }
        tracing::error!(node = %self.node, tenants = held.len(), "leases not renewed in time; letting every tenant go");
        self.store.forget_leases();
        for name in held {
            if let Some(tenant) = name.strip_prefix("tenant:") {
                self.let_go(&TenantId::from_stored(tenant)).await;
            }
        }
    }

    /// Whether `headers` carry this cluster's secret (a request another node forwarded).
    fn is_forwarded(&self, headers: &HeaderMap) -> bool {
        headers
            .get(NODE_SECRET_HEADER)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| constant_time_eq(value.as_bytes(), self.secret.as_bytes()))
    }

    async fn tenant_of(&self, secret: &str) -> Result<Option<TenantId>, StorageError> {
        let service = self.service.get();
        if let Some(agent) = service.and_then(|service| service.authorizer().authenticate(secret)) {
            return Ok(Some(agent.tenant_id));
        }
        let hash = hash_key(secret);
        if let Some(tenant) = lock(&self.key_tenants).get(&hash) {
            return Ok(Some(tenant.clone()));
        }
        let store = self.store.clone();
        let wanted = hash.clone();
        let tenant = tokio::task::spawn_blocking(move || store.tenant_of_key(&wanted))
            .await
            .map_err(|error| StorageError::Backend(error.to_string()))??;
        if let Some(tenant) = &tenant {
            let mut known = lock(&self.key_tenants);
            if known.len() > 100_000 {
                known.clear();
            }
            known.insert(hash, tenant.clone());
        }
        Ok(tenant)
    }

    /// Where the request of a key goes: see the module docs. `from_node`: another node
    /// sent it here, so it is served here if it can be.
    async fn place(&self, secret: &str, from_node: bool) -> Place {
        match self.tenant_of(secret).await {
            Ok(Some(tenant)) => self.place_tenant(tenant, from_node).await,
            // Not a key of any tenant: the handler answers 401.
            Ok(None) => Place::Here,
            Err(error) => Place::Unavailable(error.to_string()),
        }
    }

    /// Where a request without a key goes: to the node of the account it names
    /// ([`keyless`]), else here.
    async fn place_keyless(&self, request: &mut Request, from_node: bool) -> Place {
        for lookup in keyless::lookups(request, &self.mail_domain).await {
            let store = self.store.clone();
            match tokio::task::spawn_blocking(move || store.tenant_named(&lookup)).await {
                Ok(Ok(Some(tenant))) => return self.place_tenant(tenant, from_node).await,
                Ok(Ok(None)) => {}
                Ok(Err(error)) => return Place::Unavailable(error.to_string()),
                Err(error) => return Place::Unavailable(error.to_string()),
            }
        }
        Place::Here
    }

    async fn place_tenant(&self, tenant: TenantId, from_node: bool) -> Place {
        let Some(service) = self.service.get() else {
            return Place::Here;
        };
        if self.holds(&tenant) && service.has_tenant(&tenant) {
            return Place::Here;
        }
        if let Some((url, read_at)) = lock(&self.owners).get(&tenant).cloned() {
            if read_at.elapsed() < OWNER_TTL {
                return Place::Owner(url);
            }
        }
        // What is loaded here of a tenant this node does not hold (any more) may be stale.
        if service.has_tenant(&tenant) {
            service.let_go_tenant(&tenant).await;
        }
        let (store, name) = (self.store.clone(), tenant_lease(&tenant));
        let lease = match tokio::task::spawn_blocking(move || store.lease(&name)).await {
            Ok(Ok(lease)) => lease,
            Ok(Err(error)) => return Place::Unavailable(error.to_string()),
            Err(error) => return Place::Unavailable(error.to_string()),
        };
        if let Some(lease) = lease.filter(|lease| lease.live && lease.node != self.node) {
            return match lease.advertise_url {
                Some(url) => {
                    lock(&self.owners).insert(tenant, (url.clone(), Instant::now()));
                    Place::Owner(url)
                }
                None => Place::Unavailable("the account's node is not registered".to_owned()),
            };
        }
        // Free: it goes to its rendezvous node, which claims it.
        if !from_node {
            if let Some((node, url)) = self.rendezvous(&tenant) {
                if node != self.node {
                    return Place::Owner(url);
                }
            }
        }
        let (store, name, ttl) = (self.store.clone(), tenant_lease(&tenant), self.ttl);
        let claim = tokio::task::spawn_blocking(move || store.claim(&name, ttl)).await;
        match claim {
            Ok(Ok(Claim::Held(_))) => match service.adopt_tenant(&tenant).await {
                Ok(_) => {
                    self.counters.adopted.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(node = %self.node, %tenant, "serving the tenant");
                    Place::Here
                }
                Err(error) => Place::Loading(format!(
                    "this node is still loading the account ({error}); retry"
                )),
            },
            Ok(Ok(Claim::Taken(lease))) => match lease.advertise_url {
                Some(url) if lease.live => {
                    lock(&self.owners).insert(tenant, (url.clone(), Instant::now()));
                    Place::Owner(url)
                }
                _ => Place::Unavailable("the account's node is not registered".to_owned()),
            },
            Ok(Err(error)) => Place::Unavailable(error.to_string()),
            Err(error) => Place::Unavailable(error.to_string()),
        }
    }

    /// Sends the request to the node at `base` and streams its answer back.
    async fn forward(&self, base: &str, request: Request, client: String, hops: u8) -> Response {
        let (parts, body) = request.into_parts();
        let path = parts
            .uri
            .path_and_query()
            .map(|path| path.as_str())
            .unwrap_or("/");
        let mut outgoing = self
            .http
            .request(parts.method.clone(), format!("{base}{path}"))
            .body(reqwest::Body::wrap_stream(body.into_data_stream()));
        for (name, value) in &parts.headers {
            if !is_hop_by_hop(name) && name != axum::http::header::HOST {
                outgoing = outgoing.header(name, value);
            }
        }
        if let Some(host) = parts.headers.get(axum::http::header::HOST) {
            outgoing = outgoing.header(HOST_HEADER, host);
        }
        outgoing = outgoing
            .header(NODE_SECRET_HEADER, &*self.secret)
            .header(CLIENT_HEADER, client)
            .header(HOPS_HEADER, hops.to_string());
        match outgoing.send().await {
            Ok(answer) => {
                self.counters.forwarded.fetch_add(1, Ordering::Relaxed);
                let mut response = Response::builder().status(answer.status());
                if let Some(headers) = response.headers_mut() {
                    for (name, value) in answer.headers() {
                        if !is_hop_by_hop(name) {
                            headers.append(name, value.clone());
                        }
                    }
                }
                response
                    .body(Body::from_stream(answer.bytes_stream()))
                    .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
            }
            Err(error) => {
                self.counters
                    .forward_failures
                    .fetch_add(1, Ordering::Relaxed);
                lock(&self.owners).retain(|_, (url, _)| url != base);
                // Not a place for free accounts until its next heartbeat says otherwise.
                lock(&self.live).retain(|(_, url)| url != base);
                tracing::warn!(node = %self.node, owner = %base, %error, "forwarding failed");
                unavailable(ApiError::OwnerUnreachable(format!(
                    "the node that serves this account ({base}) did not answer; another \
                     node takes the account over within {} s of its last heartbeat, retry",
                    self.ttl.as_secs().max(1)
                )))
            }
        }
    }

    /// The nodes, their leases and this node's figures.
    pub async fn view(&self) -> Result<ClusterView, StorageError> {
        let store = self.store.clone();
        let (nodes, leases) = tokio::task::spawn_blocking(move || {
            Ok::<_, StorageError>((store.nodes()?, store.live_leases()?))
        })
        .await
        .map_err(|error| StorageError::Backend(error.to_string()))??;
        let ttl = self.ttl.as_secs_f64();
        let nodes = nodes
            .into_iter()
            .map(|node| NodeView {
                leases: leases
                    .iter()
                    .filter(|lease| lease.node == node.id)
                    .map(|lease| lease.name.clone())
                    .collect(),
                live: node.silent_for < ttl,
                id: node.id,
                advertise_url: node.advertise_url,
                started_at: node.started_at,
                silent_for_secs: node.silent_for,
                stats: serde_json::from_str(&node.stats).unwrap_or_default(),
            })
            .collect();
        Ok(ClusterView {
            node: self.node.clone(),
            nodes,
            stats: self.stats(),
        })
    }

    /// Leaves the cluster at shutdown: the leases are released, so other nodes take the
    /// tenants over at once instead of after the lease time.
    pub async fn leave(&self) {
        let store = self.store.clone();
        if let Ok(Err(error)) = tokio::task::spawn_blocking(move || store.leave()).await {
            tracing::warn!(node = %self.node, %error, "leaving the cluster failed");
        }
    }
}

impl TenantOwnership for Cluster {
    fn claim(&self, tenant: &TenantId) -> Result<bool, StorageError> {
        Ok(matches!(
            self.store.claim(&tenant_lease(tenant), self.ttl)?,
            Claim::Held(_)
        ))
    }

    fn holds(&self, tenant: &TenantId) -> bool {
        self.trusted() && self.store.holds(&tenant_lease(tenant))
    }

    fn hand_off(&self, tenant: &TenantId) -> Result<bool, StorageError> {
        let elsewhere = self
            .rendezvous(tenant)
            .is_some_and(|(node, _)| node != self.node);
        if elsewhere {
            self.store.release(&tenant_lease(tenant))?;
            tracing::info!(node = %self.node, %tenant, "new account left to its rendezvous node");
        }
        Ok(elsewhere)
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn is_hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

/// A 503 worth retrying at once: `Retry-After: 1`.
fn unavailable(error: ApiError) -> Response {
    let mut response = error.into_response();
    response
        .headers_mut()
        .insert("retry-after", HeaderValue::from_static("1"));
    response
}

/// The bearer secret of a request, if it has one that looks like a memvault key.
fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, secret) = value.trim().split_once(' ')?;
    let secret = secret.trim();
    (scheme.eq_ignore_ascii_case("bearer") && secret.starts_with(memvault_core::agent::KEY_PREFIX))
        .then(|| secret.to_owned())
}

/// The middleware that sends each request to its account's node: see the module docs.
/// Without several nodes it only passes the request on.
pub async fn route(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let Some(cluster) = state.cluster.clone() else {
        return next.run(request).await;
    };
    let from_node = cluster.is_forwarded(request.headers());
    let hops: u8 = match from_node {
        true => request
            .headers()
            .get(HOPS_HEADER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse().ok())
            .unwrap_or(1),
        false => 0,
    };
    if from_node {
        // The client is the one the forwarding node saw, not that node.
        let client = request
            .headers()
            .get(CLIENT_HEADER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<IpAddr>().ok());
        if let Some(client) = client {
            request
                .extensions_mut()
                .insert(ConnectInfo(SocketAddr::new(client, 0)));
            request.headers_mut().remove("x-forwarded-for");
        }
        // And the host it addressed, not this node's.
        if let Some(host) = request.headers_mut().remove(HOST_HEADER) {
            request.headers_mut().insert(axum::http::header::HOST, host);
        }
    }
    request.headers_mut().remove(NODE_SECRET_HEADER);
    request.headers_mut().remove(CLIENT_HEADER);
    request.headers_mut().remove(HOPS_HEADER);
    request.headers_mut().remove(HOST_HEADER);
    let secret = match bearer(request.headers()) {
        Some(secret) => Some(secret),
        None => keyless::dashboard_sign_in_key(&mut request).await,
    };
    let place = match secret {
        Some(secret) => cluster.place(&secret, from_node).await,
        None => cluster.place_keyless(&mut request, from_node).await,
    };
    let mut response = match place {
        Place::Here => {
            cluster.counters.served.fetch_add(1, Ordering::Relaxed);
            next.run(request).await
        }
        // The account moved while the request was on its way, again and again.
        Place::Owner(_) if hops >= MAX_HOPS => unavailable(ApiError::OwnershipMoved(
            "the account moved to another node while the request was on its way; retry".to_owned(),
        )),
        Place::Owner(owner) => {
            let client = ClientAddress::of(
                request.extensions(),
                request.headers(),
                &state.trusted_proxies,
            )
            .0;
            cluster.forward(&owner, request, client, hops + 1).await
        }
        Place::Loading(reason) => unavailable(ApiError::OwnershipMoved(reason)),
        Place::Unavailable(reason) => {
            tracing::warn!(node = %cluster.node, %reason, "cannot place the request");
            unavailable(ApiError::from(memvault_core::Error::Storage(
                StorageError::Backend(format!("the cluster's database did not answer: {reason}")),
            )))
        }
    };
    if !response.headers().contains_key(NODE_HEADER) {
        if let Ok(value) = HeaderValue::from_str(&cluster.node) {
            response.headers_mut().insert(NODE_HEADER, value);
        }
    }
    response
}
