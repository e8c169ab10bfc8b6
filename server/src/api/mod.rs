//! The HTTP API: one module per resource, each exposing `routes()` (an `OpenApiRouter`
//! whose paths are relative to where it is nested); this module only nests them like the
//! URL and adds the layers.

/// A schema for a JSON array body of `$min` to `$max` `$item`s, as documented (the
/// handler reads a `Vec<$item>`; utoipa cannot put item bounds on a newtype).
macro_rules! bounded_array_schema {
    ($(#[$doc:meta])* $name:ident, $item:ty, $min:expr, $max:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ArrayBuilder::new()
                    .items(utoipa::openapi::Ref::from_schema_name(
                        <$item as utoipa::ToSchema>::name(),
                    ))
                    .min_items(Some($min))
                    .max_items(Some($max))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {
            fn schemas(
                schemas: &mut Vec<(
                    String,
                    utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
                )>,
            ) {
                schemas.push((
                    <$item as utoipa::ToSchema>::name().into_owned(),
                    <$item as utoipa::PartialSchema>::schema(),
                ));
                <$item as utoipa::ToSchema>::schemas(schemas);
            }
        }
    };
}

pub mod account;
pub mod admin;
pub mod audit;
pub mod auth;
pub mod billing;
pub mod blobs;
pub mod client;
pub mod collections;
pub mod connections;
pub mod database;
pub mod email;
pub mod extract;
pub mod files;
pub mod grants;
pub mod graph;
pub mod internal;
pub mod keys;
pub mod maintenance;
pub mod mcp;
pub mod memories;
pub mod metrics;
pub mod openapi;
pub mod operator;
pub mod portability;
pub mod proxy;
pub mod public;
pub mod ratelimit;
pub mod search;
pub mod settings;
pub mod storage;
pub mod webhooks;

use std::sync::Arc;

use crate::pageviews::Pageviews;
use crate::status::StatusMonitor;
use axum::extract::{DefaultBodyLimit, FromRef, Request, State};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::Router;
use memvault_accounts::{AccountServices, Accounts, Billing, Email};
use memvault_core::{
    AuditTrail, Authorizer, Collections, Graph, Internal, Keys, Maintenance, Memories, Memvault,
    Operator, Portability, Proxy, Search, Settings, Tenants,
};
use memvault_intake::{Files, Intake};
use memvault_sync::Connections;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;
use utoipa_axum::router::OpenApiRouter;

use crate::error::ApiError;
use ratelimit::RateLimits;

/// What every handler can reach: one service per domain (handlers take the one they
/// need as `State<Memories>`, `State<Search>`, ...) and the edge's own state.
#[derive(Clone, FromRef)]
pub struct AppState {
    pub memories: Memories,
    pub files: Files,
    pub collections: Collections,
    pub search: Search,
    pub graph: Graph,
    pub maintenance: Maintenance,
    pub keys: Keys,
    pub tenants: Tenants,
    pub settings: Settings,
    pub operator: Operator,
    pub proxy: Proxy,
    pub audit: AuditTrail,
    pub authorizer: Authorizer,
    /// Self-check history for the public status page.
    pub status: Arc<StatusMonitor>,
    /// Cookieless pageview counts from the beacon.
    pub pageviews: Arc<Pageviews>,
    /// Largest request body accepted; reported in the account's limits.
    #[from_ref(skip)]
    pub max_body_bytes: usize,
    /// Per-key request limits and their counters.
    pub rate_limits: Arc<RateLimits>,
    pub internal: Internal,
    pub accounts: Accounts,
    pub billing: Billing,
    /// The account services' queues (their figures and health, for the operator).
    pub account_services: AccountServices,
    pub portability: Portability,
    /// Signup and recover-key limits per client address, and whether signup is on.
    pub account_limits: Arc<account::AccountLimits>,
    /// The proxies whose `X-Forwarded-For` names the client (`server.trusted_proxies`).
    pub trusted_proxies: Arc<client::TrustedProxies>,
    /// The shared secrets of the internal endpoints (none by default: they answer 503).
    #[from_ref(skip)]
    pub internal_secrets: internal::InternalSecrets,
    /// Mail-in: addresses, allowlists, the relay's handoff.
    pub email: Email,
    /// Managed connectors.
    pub connections: Connections,
    /// Files and mail that become memories (its job queue's figures).
    pub intake: Intake,
    /// The relay handoff's shared secret (none by default: it answers 503).
    #[from_ref(skip)]
    pub inbound_secret: email::InboundSecret,
    /// Several nodes (`[cluster]`): this node, its leases and forwarding; `None`: alone.
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
    /// `server.public_url` as configured (unset: none), for links and same-origin checks.
    #[from_ref(skip)]
    pub public_url: Option<Arc<str>>,
}

impl AppState {
    pub fn new(
        service: &Memvault,
        connections: Connections,
        intake: Intake,
        accounts: AccountServices,
        status: Arc<StatusMonitor>,
        max_body_bytes: usize,
        rate_limits: RateLimits,
    ) -> Self {
        Self {
            memories: service.memories(),
            files: intake.files(),
            collections: service.collections(),
            search: service.search(),
            graph: service.graph(),
            maintenance: service.maintenance(),
            keys: service.keys(),
            tenants: service.tenants(),
            settings: service.settings(),
            operator: service.operator(),
            proxy: service.proxy(),
            audit: service.audit(),
            authorizer: service.authorizer(),
            status,
            pageviews: Arc::new(Pageviews::default()),
            max_body_bytes,
            rate_limits: Arc::new(rate_limits),
            internal: service.internal(),
            accounts: accounts.accounts(),
            billing: accounts.billing(),
            portability: service.portability(),
            account_limits: Arc::new(account::AccountLimits::default()),
            trusted_proxies: Arc::new(client::TrustedProxies::default()),
            internal_secrets: internal::InternalSecrets::default(),
            email: accounts.email(),
            connections,
            intake,
            inbound_secret: email::InboundSecret::default(),
            account_services: accounts,
            cluster: None,
            public_url: None,
        }
    }

    /// As one node of several (`[cluster]`).
    pub fn with_cluster(mut self, cluster: Option<Arc<crate::cluster::Cluster>>) -> Self {
        self.cluster = cluster;
        self
    }

    /// With the pageview counts (loaded from, and saved to, the data dir).
    pub fn with_pageviews(mut self, pageviews: Arc<Pageviews>) -> Self {
        self.pageviews = pageviews;
        self
    }

    /// With the configured public address (`server.public_url`).
    pub fn with_public_url(mut self, public_url: Option<String>) -> Self {
        self.public_url = public_url.map(Arc::from);
        self
    }

    /// With the public account routes' limits (config `[account]`).
    pub fn with_account_limits(mut self, limits: account::AccountLimits) -> Self {
        self.account_limits = Arc::new(limits);
        self
    }

    /// With the proxies whose `X-Forwarded-For` is believed (`server.trusted_proxies`).
    pub fn with_trusted_proxies(mut self, trusted: client::TrustedProxies) -> Self {
        self.trusted_proxies = Arc::new(trusted);
        self
    }

    /// With the mail-in handoff's shared secret (config `email.inbound_secret`).
    pub fn with_inbound_secret(mut self, secret: Option<String>) -> Self {
        self.inbound_secret = email::InboundSecret(secret.map(Arc::from));
        self
    }

    /// With the internal endpoints' shared secrets (config `[internal]`).
    pub fn with_internal_secrets(mut self, secrets: internal::InternalSecrets) -> Self {
        self.internal_secrets = secrets;
        self
    }
}

pub fn router(state: AppState) -> Router {
    let max_body_bytes = state.max_body_bytes;
    let (routes, paths) = documented_routes().split_for_parts();
    routes
        .merge(openapi::routes(openapi::document(paths)))
        .fallback(fallback)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            audit::record,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            ratelimit::limit,
        ))
        // Before the limiter: a request for an account another node serves is counted
        // and limited there.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::cluster::route,
        ))
        .layer(CatchPanicLayer::custom(
            |_panic: Box<dyn std::any::Any + Send>| {
                ApiError::Internal("a request handler panicked".to_owned()).into_response()
            },
        ))
        .layer(TraceLayer::new_for_http())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::record_request,
        ))
        .with_state(state)
}

/// Every route of the API, nested like the URL. A resource module declares each path once,
/// in its handler's `#[utoipa::path]`, relative to where it is nested here; `routes!`
/// takes the route and its OpenAPI operation from that one attribute.
pub fn documented_routes() -> OpenApiRouter<AppState> {
    let v1 = OpenApiRouter::new()
        .merge(public::routes())
        .merge(blobs::routes().layer(DefaultBodyLimit::max(
            memvault_types::limits::FILE_MAX_BYTES as usize + 1,
        )))
        .nest("/memory", memory_routes())
        .merge(mcp::routes())
        .nest("/proxy", proxy::routes());
    OpenApiRouter::new().nest("/v1", v1)
}

/// `/v1/memory`.
fn memory_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .nest("/admin", admin_routes())
        .nest("/collections", collections::routes())
        .nest("/collections/{collection}", collection_routes())
        .merge(search::tenant_routes())
        .nest("/extract", graph::job_routes())
        .merge(files::batch_routes())
        .merge(keys::routes())
        .merge(settings::routes())
        .merge(internal::routes())
        .merge(account::routes())
        .nest("/stripe", billing::routes())
        .merge(storage::routes())
        .merge(database::routes())
        .nest("/webhook", webhooks::routes())
        .nest("/email", email::routes())
        .nest("/connections", connections::routes())
}

/// `/v1/memory/admin`: the caller's account, and what only admin-flagged tenants reach.
fn admin_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(admin::routes())
        .merge(portability::routes())
        .merge(keys::admin_routes())
        .merge(operator::routes())
        .merge(maintenance::admin_routes())
        .merge(audit::routes())
}

/// `/v1/memory/collections/{collection}`: everything inside one collection.
fn collection_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .nest(
            "/memories",
            memories::routes().merge(
                files::memory_routes().layer(DefaultBodyLimit::max(FILES_MAX_REQUEST_BYTES)),
            ),
        )
        .merge(files::collection_routes().layer(DefaultBodyLimit::max(FILES_MAX_REQUEST_BYTES)))
        .merge(search::routes())
        .merge(graph::routes())
        .merge(maintenance::routes())
        .nest("/grants", grants::routes())
}

/// The largest multipart request of the file routes (drop, folder, upload, images): each
/// file is stored as it is read and capped at the per-file limit, so this bounds the
/// transfer, not memory.
const FILES_MAX_REQUEST_BYTES: usize = 600 * 1024 * 1024;

/// Paths SPEC.md marks public: never answered with 401.
const PUBLIC_PATHS: [&str; 9] = [
    "/v1/blobs/",
    "/v1/memory/health",
    "/v1/status",
    "/v1/pulse",
    "/v1/track",
    "/v1/memory/signup",
    "/v1/memory/recover-key",
    "/v1/memory/reveal/",
    "/v1/memory/email/inbound",
];

/// Unknown routes: under `/v1/` the caller is authenticated first, so a bad key gets 401
/// whatever the path, and a good one learns the route does not exist.
async fn fallback(State(state): State<AppState>, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    let path = parts.uri.path();
    let public = PUBLIC_PATHS.iter().any(|prefix| path.starts_with(prefix));
    if path.starts_with("/v1/") && !public {
        if let Err(error) = auth::authenticate(&parts, &state.authorizer) {
            return error.into_response();
        }
    }
    ApiError::RouteNotFound {
        method: parts.method.clone(),
        path: path.to_owned(),
    }
    .into_response()
}

async fn method_not_allowed(method: Method, request: Request) -> Response {
    ApiError::MethodNotAllowed(format!(
        "method {method} is not allowed on {}",
        request.uri().path()
    ))
    .into_response()
}
