//! Operator endpoints (admin-flagged tenants only; aggregates, never one tenant's data):
//! `GET /v1/memory/admin/metrics`, `.../usage`, `.../connectors`, `.../connectors/status`
//! `.../analytics` and `.../embeddings`. The service-wide `.../memory-health` lives with maintenance.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use chrono::{DateTime, NaiveDate, Utc};
use memvault_accounts::AccountServices;
use memvault_core::service::EmbeddingsOverview;
use memvault_core::Operator;
use memvault_intake::Intake;
use memvault_jobs::{JobMetricsSnapshot, RecurringSnapshot};
use memvault_metrics::{LatencySummary, MetricsSnapshot, Stage};
use memvault_sync::Connections;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Admin;
use super::extract::ApiQuery;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::pageviews::Pageviews;

/// Nested at `/v1/memory/admin`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(metrics))
        .routes(routes!(usage))
        .routes(routes!(connectors))
        .routes(routes!(connector_status))
        .routes(routes!(analytics))
        .routes(routes!(embeddings))
}

const USAGE_DAYS_DEFAULT: i64 = 30;
const USAGE_DAYS_MAX: i64 = 3650;
const CONNECTOR_HOURS_DEFAULT: i64 = 24;
const CONNECTOR_HOURS_MAX: i64 = 8760;
const ANALYTICS_DAYS_DEFAULT: i64 = 7;
const ANALYTICS_DAYS_MAX: i64 = 365;

/// `raw` (or `default`) when it is within 1..=`max`, else the 422 that says so.
fn within(raw: Option<i64>, default: i64, max: i64, field: &str) -> ApiResult<u32> {
    let value = raw.unwrap_or(default);
    if !(1..=max).contains(&value) {
        return Err(ApiError::Validation(format!(
            "{field} must be between 1 and {max}, got {value}"
        )));
    }
    Ok(value as u32)
}

/// Milliseconds to the microsecond: finer is noise.
fn rounded_ms(millis: f64) -> f64 {
    (millis * 1000.0).round() / 1000.0
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MetricsQuery {
    /// Start a new window after reading this one; default false.
    pub reset: Option<bool>,
}

/// Latency figures in milliseconds; p50 and p95 over the latest 2048 samples, count and
/// average over the whole window.
#[derive(Debug, Serialize, ToSchema)]
pub struct StageMetricsResponse {
    pub count: u64,
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

impl From<LatencySummary> for StageMetricsResponse {
    fn from(summary: LatencySummary) -> Self {
        Self {
            count: summary.count,
            avg_ms: rounded_ms(summary.avg_ms),
            p50_ms: rounded_ms(summary.p50_ms),
            p95_ms: rounded_ms(summary.p95_ms),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RouteMetricsResponse {
    /// `METHOD /route/{template}`; `unmatched` for requests no route matched, `other` for
    /// routes beyond the tracked bound.
    pub route: String,
    pub count: u64,
    pub errors_4xx: u64,
    pub errors_5xx: u64,
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

/// The timed parts of requests.
#[derive(Debug, Serialize, ToSchema)]
pub struct StagesResponse {
    /// Computing embeddings for a request's texts (queueing for the model included).
    pub embed: StageMetricsResponse,
    /// The search result-cache lookup.
    pub cache_get: StageMetricsResponse,
    /// The index search of a search request (cache misses only).
    pub search: StageMetricsResponse,
    /// The LLM call that extracts facts for remember.
    pub llm_extract: StageMetricsResponse,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MetricsResponse {
    /// Always `process`: the figures are this server process's, not a cluster's.
    pub scope: &'static str,
    /// Start of the window: the process start or the last reset.
    pub since: DateTime<Utc>,
    /// Routes requested in the window, most requested first.
    pub routes: Vec<RouteMetricsResponse>,
    pub stages: StagesResponse,
    /// Event counts: `search_cache_hit`, `search_cache_miss`,
    /// `query_embedding_cache_hit`, `query_embedding_cache_miss`, `embed_texts` (texts
    /// embedded), `llm_extract_failed`.
    pub counters: BTreeMap<String, u64>,
    /// Each background job kind (`extraction`, `webhook_delivery`) since the process
    /// started (not reset with the window).
    pub jobs: BTreeMap<String, JobMetricsSnapshot>,
    /// Each recurring task since the process started.
    pub recurring: Vec<RecurringSnapshot>,
    /// Restarts of failed supervised actors since the process started.
    pub actor_restarts: ActorRestartsResponse,
    /// Several nodes (`[cluster]`): every node, the leases it holds (`tenant:<id>`) and
    /// the jobs it runs as of its last heartbeat; absent on a server alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<crate::cluster::ClusterView>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ActorRestartsResponse {
    pub tenants: u64,
    pub collections: u64,
    /// Tenant actors degraded now: failing again and again, restarted at the slowest
    /// back-off until they run a minute without failing.
    pub degraded_tenants: u64,
    /// Collection actors degraded now.
    pub degraded_collections: u64,
}

/// Every job kind's figures in this process: core's queues and those of the crates above.
pub fn job_metrics(
    operator: &Operator,
    connections: &Connections,
    intake: &Intake,
    accounts: &AccountServices,
) -> BTreeMap<String, JobMetricsSnapshot> {
    operator
        .job_metrics()
        .into_iter()
        .chain([
            ("ingest", intake.job_metrics()),
            ("connector_sync", connections.job_metrics()),
        ])
        .chain(accounts.job_metrics())
        .map(|(kind, metrics)| (kind.to_owned(), metrics))
        .collect()
}

impl MetricsResponse {
    fn new(
        snapshot: MetricsSnapshot,
        operator: &Operator,
        connections: &Connections,
        intake: &Intake,
        accounts: &AccountServices,
    ) -> Self {
        let stage = |stage: Stage| StageMetricsResponse::from(snapshot.stage(stage));
        Self {
            scope: "process",
            since: snapshot.since,
            stages: StagesResponse {
                embed: stage(Stage::Embed),
                cache_get: stage(Stage::CacheGet),
                search: stage(Stage::Search),
                llm_extract: stage(Stage::LlmExtract),
            },
            counters: snapshot
                .counters
                .iter()
                .map(|(counter, value)| (counter.as_str().to_owned(), *value))
                .collect(),
            routes: snapshot
                .routes
                .into_iter()
                .map(|route| RouteMetricsResponse {
                    route: route.route,
                    count: route.latency.count,
                    errors_4xx: route.errors_4xx,
                    errors_5xx: route.errors_5xx,
                    avg_ms: rounded_ms(route.latency.avg_ms),
                    p50_ms: rounded_ms(route.latency.p50_ms),
                    p95_ms: rounded_ms(route.latency.p95_ms),
                })
                .collect(),
            jobs: job_metrics(operator, connections, intake, accounts),
            recurring: operator.recurring_metrics(),
            cluster: None,
            actor_restarts: {
                let restarts = operator.actor_restarts();
                ActorRestartsResponse {
                    tenants: restarts.tenants,
                    collections: restarts.collections,
                    degraded_tenants: restarts.degraded_tenants,
                    degraded_collections: restarts.degraded_collections,
                }
            },
        }
    }
}

/// Per-route request figures, stage latencies and cache counters of this process since
/// the window started; `reset=true` starts a new window after reading.
#[utoipa::path(get, path = "/metrics", tag = "operator",
    params(MetricsQuery),
    responses((status = 200, body = MetricsResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn metrics(
    State(operator): State<Operator>,
    State(connections): State<Connections>,
    State(intake): State<Intake>,
    State(accounts): State<AccountServices>,
    _admin: Admin,
    State(cluster): State<Option<Arc<crate::cluster::Cluster>>>,
    ApiQuery(query): ApiQuery<MetricsQuery>,
) -> ApiResult<Json<MetricsResponse>> {
    let cluster = match cluster {
        Some(cluster) => Some(
            cluster
                .view()
                .await
                .map_err(|error| ApiError::from(memvault_core::Error::Storage(error)))?,
        ),
        None => None,
    };
    let metrics = operator.metrics();
    let snapshot = if query.reset.unwrap_or(false) {
        metrics.snapshot_and_reset()
    } else {
        metrics.snapshot()
    };
    let mut response = MetricsResponse::new(snapshot, &operator, &connections, &intake, &accounts);
    response.cluster = cluster;
    Ok(Json(response))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// 1 to 3650; default 30. LLM usage is kept per month, so every month the window
    /// touches counts whole.
    pub days: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StorageUsageResponse {
    /// Bytes every tenant's records take in the database now.
    pub db_bytes: u64,
    /// Always 0: the service stores no files yet (there is no file upload).
    pub files_bytes: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PurposeUsageResponse {
    /// `extract`, `rewrite`, `rerank`, `profile`, `summary` or `proxy`.
    pub purpose: String,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Estimated from the configured per-model prices (tenants' own LLMs included).
    pub cost_usd: f64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LlmUsageResponse {
    /// The months (`YYYY-MM`, UTC) counted.
    pub months: Vec<String>,
    /// Purposes with at least one call, by name.
    pub by_purpose: Vec<PurposeUsageResponse>,
    pub total_cost_usd: f64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UsageResponse {
    pub days: u32,
    /// Tenants counted.
    pub tenants: usize,
    pub storage: StorageUsageResponse,
    pub llm: LlmUsageResponse,
    /// What the accounts of each tier hold now, by tier name.
    pub tiers: Vec<TierUsageResponse>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TierUsageResponse {
    pub tier: String,
    pub tenants: u64,
    pub collections: u64,
    pub memories: u64,
    /// Bytes of their files in the server's storage.
    pub files_bytes: u64,
}

/// Storage and LLM token usage with cost estimates, over every tenant.
#[utoipa::path(get, path = "/usage", tag = "operator",
    params(UsageQuery),
    responses((status = 200, body = UsageResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn usage(
    State(operator): State<Operator>,
    _admin: Admin,
    ApiQuery(query): ApiQuery<UsageQuery>,
) -> ApiResult<Json<UsageResponse>> {
    let days = within(query.days, USAGE_DAYS_DEFAULT, USAGE_DAYS_MAX, "days")?;
    let usage = operator.usage(days).await?;
    Ok(Json(UsageResponse {
        days,
        tenants: usage.tenants,
        tiers: usage
            .by_tier
            .into_iter()
            .map(|tier| TierUsageResponse {
                tier: tier.tier,
                tenants: tier.tenants,
                collections: tier.collections,
                memories: tier.memories,
                files_bytes: tier.files_bytes,
            })
            .collect(),
        storage: StorageUsageResponse {
            db_bytes: usage.db_bytes,
            files_bytes: usage.files_bytes,
        },
        llm: LlmUsageResponse {
            months: usage.months,
            total_cost_usd: usage.total_cost_usd,
            by_purpose: usage
                .by_purpose
                .into_iter()
                .map(|purpose| PurposeUsageResponse {
                    purpose: purpose.purpose,
                    calls: purpose.calls,
                    prompt_tokens: purpose.prompt_tokens,
                    completion_tokens: purpose.completion_tokens,
                    cost_usd: purpose.cost_usd,
                })
                .collect(),
        },
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ConnectorsQuery {
    /// 1 to 8760; default 24.
    pub hours: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConnectorProviderResponse {
    pub provider: String,
    /// Sync runs in the window.
    pub runs: u64,
    /// Failed runs in the window.
    pub errors: u64,
    /// When the provider's latest run started; null without one.
    pub last_run: Option<DateTime<Utc>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConnectorsResponse {
    pub hours: u32,
    pub providers: Vec<ConnectorProviderResponse>,
}

/// Connector sync runs per provider over the last `hours`, every tenant's (a provider
/// without runs in the window is left out).
#[utoipa::path(get, path = "/connectors", tag = "operator",
    params(ConnectorsQuery),
    responses((status = 200, body = ConnectorsResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn connectors(
    State(connections): State<Connections>,
    _admin: Admin,
    ApiQuery(query): ApiQuery<ConnectorsQuery>,
) -> ApiResult<Json<ConnectorsResponse>> {
    let hours = within(
        query.hours,
        CONNECTOR_HOURS_DEFAULT,
        CONNECTOR_HOURS_MAX,
        "hours",
    )?;
    let since = Utc::now() - chrono::Duration::hours(i64::from(hours));
    let figures = connections.provider_runs(since).await?;
    Ok(Json(ConnectorsResponse {
        hours,
        providers: figures
            .into_iter()
            .map(|(provider, runs)| ConnectorProviderResponse {
                provider,
                runs: runs.runs,
                errors: runs.errors,
                last_run: runs.last_run,
            })
            .collect(),
    }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConnectorStatusResponse {
    /// A connection status (e.g. `active`, `paused`, `error`).
    pub status: String,
    /// Connections in that status.
    pub n: u64,
}

/// Connections per status across every tenant: one entry per status (`active`, `error`,
/// `paused`), zeros included.
#[utoipa::path(get, path = "/connectors/status", tag = "operator",
    responses((status = 200, body = [ConnectorStatusResponse]), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn connector_status(
    State(connections): State<Connections>,
    _admin: Admin,
) -> ApiResult<Json<Vec<ConnectorStatusResponse>>> {
    let counts = connections.status_counts().await?;
    Ok(Json(
        ["active", "error", "paused"]
            .into_iter()
            .map(|status| ConnectorStatusResponse {
                status: status.to_owned(),
                n: counts.get(status).copied().unwrap_or(0),
            })
            .collect(),
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AnalyticsQuery {
    /// 1 to 365; default 7 (today included, UTC days).
    pub days: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DayCountResponse {
    pub day: NaiveDate,
    pub n: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PathCountResponse {
    pub path: String,
    pub n: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReferrerCountResponse {
    /// The referrer's host; `(direct)` for pageviews without one.
    pub referrer: String,
    pub n: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SignupsResponse {
    pub total: u64,
    /// Every day of the window, oldest first.
    pub by_day: Vec<DayCountResponse>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FunnelResponse {
    pub pageviews: u64,
    pub signups: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PageviewsResponse {
    pub total: u64,
    /// Every day of the window, oldest first.
    pub by_day: Vec<DayCountResponse>,
    /// The 50 most viewed paths, most viewed first.
    pub by_path: Vec<PathCountResponse>,
    /// The 50 most frequent referrer hosts, most frequent first.
    pub by_referrer: Vec<ReferrerCountResponse>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AnalyticsResponse {
    pub days: u32,
    /// Tenants created in the window, the admin-flagged ones excepted (there is no public
    /// signup yet: tenants come from the admin API).
    pub signups: SignupsResponse,
    pub funnel: FunnelResponse,
    /// Cookieless pageviews from the public beacon (saved in the data dir every 10 s:
    /// a restart loses nothing, a crash at most the last 10 s).
    pub pageviews: PageviewsResponse,
}

fn day_counts(days: Vec<(NaiveDate, u64)>) -> Vec<DayCountResponse> {
    days.into_iter()
        .map(|(day, n)| DayCountResponse { day, n })
        .collect()
}

/// The signup funnel, signups by day, and cookieless pageviews by day, path and referrer.
#[utoipa::path(get, path = "/analytics", tag = "operator",
    params(AnalyticsQuery),
    responses((status = 200, body = AnalyticsResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn analytics(
    State(operator): State<Operator>,
    State(pageviews): State<Arc<Pageviews>>,
    _admin: Admin,
    ApiQuery(query): ApiQuery<AnalyticsQuery>,
) -> ApiResult<Json<AnalyticsResponse>> {
    let days = within(
        query.days,
        ANALYTICS_DAYS_DEFAULT,
        ANALYTICS_DAYS_MAX,
        "days",
    )?;
    let signups = operator.signups(days);
    let pageviews = pageviews.summary(days);
    Ok(Json(AnalyticsResponse {
        days,
        funnel: FunnelResponse {
            pageviews: pageviews.total,
            signups: signups.total,
        },
        signups: SignupsResponse {
            total: signups.total,
            by_day: day_counts(signups.by_day),
        },
        pageviews: PageviewsResponse {
            total: pageviews.total,
            by_day: day_counts(pageviews.by_day),
            by_path: pageviews
                .by_path
                .into_iter()
                .map(|(path, n)| PathCountResponse { path, n })
                .collect(),
            by_referrer: pageviews
                .by_referrer
                .into_iter()
                .map(|(referrer, n)| ReferrerCountResponse { referrer, n })
                .collect(),
        },
    }))
}

/// An embedding model: its name and the length of its vectors.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct EmbeddingModelResponse {
    /// e.g. `all-MiniLM-L6-v2`, or the endpoint's model name.
    pub model: String,
    pub dimensions: usize,
}

/// How many collections one model's vectors serve.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ModelCollectionsResponse {
    pub model: String,
    pub dimensions: usize,
    pub collections: usize,
}

/// Re-embedding towards the configured model, over every collection.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReembeddingResponse {
    /// Collections still on another model than the configured one (being re-embedded,
    /// or waiting their turn: one collection is re-embedded at a time).
    pub collections_left: usize,
    /// Memories with a vector by the configured model, over the collections left, of
    /// `memories_total`.
    pub memories_done: usize,
    pub memories_total: usize,
    /// Collections switched to the configured model since the server started, and the
    /// memories they held.
    pub collections_done: usize,
    pub memories_switched: usize,
    /// Re-embeddings whose last attempt failed; they are retried with back-off.
    pub failing: usize,
    /// The latest reason one failed.
    pub last_error: Option<String>,
}

/// Which models made the service's vectors and how far re-embedding is; what
/// `memvault reembed` shows.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct EmbeddingsResponse {
    /// The configured model: new collections and every re-embedding use it.
    pub configured: EmbeddingModelResponse,
    /// Collections by the model that made their vectors, the most used first.
    pub models: Vec<ModelCollectionsResponse>,
    pub reembedding: ReembeddingResponse,
}

impl From<EmbeddingsOverview> for EmbeddingsResponse {
    fn from(overview: EmbeddingsOverview) -> Self {
        Self {
            configured: EmbeddingModelResponse {
                model: overview.model.name,
                dimensions: overview.model.dimensions,
            },
            models: overview
                .by_model
                .into_iter()
                .map(|(model, collections)| ModelCollectionsResponse {
                    model: model.name,
                    dimensions: model.dimensions,
                    collections,
                })
                .collect(),
            reembedding: ReembeddingResponse {
                collections_left: overview.outdated,
                memories_done: overview.memories_done,
                memories_total: overview.memories_total,
                collections_done: overview.finished.collections,
                memories_switched: overview.finished.memories,
                failing: overview.failing,
                last_error: overview.last_error,
            },
        }
    }
}

/// The configured embedding model, the models collections' vectors were made by, and
/// the progress of re-embedding them with the configured one.
#[utoipa::path(get, path = "/embeddings", tag = "operator",
    responses((status = 200, body = EmbeddingsResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn embeddings(
    State(operator): State<Operator>,
    _admin: Admin,
) -> Json<EmbeddingsResponse> {
    Json(operator.embeddings().into())
}
