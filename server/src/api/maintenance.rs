//! Intelligent maintenance: `POST .../{collection}/dedup`, `POST .../{collection}/archive-stale`,
//! `GET .../{collection}/health`, `GET .../{collection}/summary`, and the service-wide
//! `GET /v1/memory/admin/memory-health`.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::collection::CollectionHealth;
use memvault_core::service::{CollectionReport, EmbeddingStatus};
use memvault_core::{Authorizer, Maintenance};
use memvault_curation::dedup::ReportCluster;
use memvault_curation::CollectionSummary;
use memvault_storage::{CollectionName, MemoryRecord};
use memvault_types::limits::{
    DEDUP_THRESHOLD_DEFAULT, STALE_DAYS_DEFAULT, STALE_DAYS_MAX, SUMMARY_LIMIT_DEFAULT,
    SUMMARY_LIMIT_MAX,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Admin, Authenticated};
use super::collections::sweepable;
use super::extract::{optional_integer, ApiPath, ApiQuery, OptionalJson};
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};
use memvault_core::service::Read;

/// Nested at `/v1/memory/collections/{collection}`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(dedup).audit(Audit::Change("collection.dedup")))
        .routes(routes!(archive_stale).audit(Audit::Change("collection.archive_stale")))
        .routes(routes!(health))
        .routes(routes!(summary))
}

/// Nested at `/v1/memory/admin`.
pub fn admin_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(memory_health))
}

/// At most this many ids are listed in an archive-stale answer; the count is always exact.
pub(crate) const ARCHIVE_STALE_IDS_MAX: usize = 1_000;

pub(crate) fn stale_days(raw: Option<i64>, field: &str) -> ApiResult<u32> {
    match raw {
        None => Ok(STALE_DAYS_DEFAULT),
        Some(days) if (0..=i64::from(STALE_DAYS_MAX)).contains(&days) => Ok(days as u32),
        Some(days) => Err(ApiError::Validation(format!(
            "{field} must be between 0 and {STALE_DAYS_MAX}, got {days}"
        ))),
    }
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DedupRequest {
    /// Cosine similarity (0 to 1) at which two memories are duplicates; default 0.95.
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub threshold: Option<f64>,
    /// Only report (default true); false deletes every duplicate that is not its
    /// cluster's keeper.
    pub dry_run: Option<bool>,
}

/// A memory in a dedup answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DedupMemory {
    pub id: String,
    pub text: String,
    pub importance: f64,
    pub pinned: bool,
    pub created_at: DateTime<Utc>,
    /// Cosine similarity to the cluster's keeper (absent on the keeper).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
}

impl DedupMemory {
    fn new(memory: &MemoryRecord, similarity: Option<f32>) -> Self {
        Self {
            id: memory.id.clone(),
            text: memory.text.clone(),
            importance: memory.importance,
            pinned: memory.pinned,
            created_at: memory.created_at,
            similarity: similarity.map(|value| (f64::from(value) * 1e4).round() / 1e4),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DuplicateClusterResponse {
    /// The memory kept: pinned first, then highest importance, then newest.
    pub keeper: DedupMemory,
    /// The memories deleted (or that would be), most similar first; never pinned.
    pub duplicates: Vec<DedupMemory>,
}

impl From<&ReportCluster> for DuplicateClusterResponse {
    fn from(cluster: &ReportCluster) -> Self {
        Self {
            keeper: DedupMemory::new(&cluster.keeper, None),
            duplicates: cluster
                .duplicates
                .iter()
                .map(|(memory, similarity)| DedupMemory::new(memory, Some(*similarity)))
                .collect(),
        }
    }
}

/// The dedup threshold: a cosine similarity from 0 to 1, default 0.95.
pub(crate) fn dedup_threshold(raw: Option<f64>) -> ApiResult<f64> {
    let threshold = raw.unwrap_or(DEDUP_THRESHOLD_DEFAULT);
    if !(0.0..=1.0).contains(&threshold) {
        return Err(ApiError::Validation(format!(
            "threshold must be between 0 and 1, got {threshold}"
        )));
    }
    Ok(threshold)
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DedupResponse {
    pub dry_run: bool,
    pub threshold: f64,
    /// Memories compared: the most recent current, unarchived ones, at most 500.
    pub scanned: usize,
    pub clusters: Vec<DuplicateClusterResponse>,
    /// How many memories were deleted (0 on a dry run).
    pub deleted: usize,
    /// Their ids.
    pub deleted_ids: Vec<String>,
}

/// Finds clusters of near-identical memories among the 500 most recent current ones; with
/// `dry_run: false` deletes every duplicate but the cluster's keeper.
#[utoipa::path(post, path = "/dedup", tag = "maintenance",
    params(("collection" = String, Path)), request_body = Option<DedupRequest>,
    responses((status = 200, body = DedupResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn dedup(
    State(maintenance): State<Maintenance>,
    State(authorizer): State<Authorizer>,
    Authenticated(agent): Authenticated,
    ApiPath(collection): ApiPath<String>,
    OptionalJson(request): OptionalJson<DedupRequest>,
) -> ApiResult<Json<DedupResponse>> {
    let threshold = dedup_threshold(request.threshold)?;
    let sweep = sweepable(
        &authorizer,
        &agent,
        &collection,
        request.dry_run.unwrap_or(true),
    )?;
    let dry_run = sweep.is_dry_run();
    let report = maintenance.dedup(&sweep, threshold as f32).await?;
    Ok(Json(DedupResponse {
        dry_run,
        threshold,
        scanned: report.scanned,
        clusters: report
            .clusters
            .iter()
            .map(DuplicateClusterResponse::from)
            .collect(),
        deleted: report.deleted.len(),
        deleted_ids: report.deleted,
    }))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveStaleRequest {
    /// Days without an update (0 to 36500; default 90).
    #[schema(minimum = 0, maximum = 36500)]
    #[serde(default, deserialize_with = "optional_integer")]
    pub older_than_days: Option<i64>,
    /// Only report (default true).
    pub dry_run: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ArchiveStaleResponse {
    pub dry_run: bool,
    pub older_than_days: u32,
    /// On a dry run: how many memories would be archived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_archive: Option<usize>,
    /// Otherwise: how many were archived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived: Option<usize>,
    /// Their ids, oldest update first; at most 1000 are listed.
    pub memory_ids: Vec<String>,
    /// True when more ids matched than are listed.
    pub memory_ids_truncated: bool,
}

/// Archives (reversibly) the memories not updated for `older_than_days`: never pinned,
/// archived or superseded ones. A dry run (the default) only counts them.
#[utoipa::path(post, path = "/archive-stale", tag = "maintenance",
    params(("collection" = String, Path)), request_body = Option<ArchiveStaleRequest>,
    responses((status = 200, body = ArchiveStaleResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn archive_stale(
    State(maintenance): State<Maintenance>,
    State(authorizer): State<Authorizer>,
    Authenticated(agent): Authenticated,
    ApiPath(collection): ApiPath<String>,
    OptionalJson(request): OptionalJson<ArchiveStaleRequest>,
) -> ApiResult<Json<ArchiveStaleResponse>> {
    let days = stale_days(request.older_than_days, "older_than_days")?;
    let sweep = sweepable(
        &authorizer,
        &agent,
        &collection,
        request.dry_run.unwrap_or(true),
    )?;
    let dry_run = sweep.is_dry_run();
    let mut ids = maintenance.archive_stale(&sweep, days).await?;
    let count = ids.len();
    ids.truncate(ARCHIVE_STALE_IDS_MAX);
    Ok(Json(ArchiveStaleResponse {
        dry_run,
        older_than_days: days,
        would_archive: dry_run.then_some(count),
        archived: (!dry_run).then_some(count),
        memory_ids: ids,
        memory_ids_truncated: count > ARCHIVE_STALE_IDS_MAX,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HealthQuery {
    /// Days without an update after which a current, unpinned memory is stale (0 to
    /// 36500; default 90).
    #[param(minimum = 0, maximum = 36500)]
    pub stale_days: Option<i64>,
}

/// Counts by state; every memory is in exactly one of current, archived, expired,
/// suspended and superseded (`supersessions`).
#[derive(Debug, Serialize, ToSchema)]
pub struct HealthCounts {
    pub total: u64,
    /// Neither superseded, archived, expired nor suspended.
    pub current: u64,
    pub archived: u64,
    /// Pinned memories, in any state.
    pub pinned: u64,
    /// Current, unpinned, not updated for `stale_days`.
    pub stale: u64,
    /// Past their validity (time-bound facts), not superseded or archived.
    pub expired: u64,
    /// Set aside for now by a time-bound fact on their slot ("I live in Berlin" while "for
    /// the next two weeks I'm staying in Paris" holds); current again when it ends.
    pub suspended: u64,
    /// Memories superseded by a newer fact.
    pub supersessions: u64,
    /// Memories not superseded, by category.
    pub categories: BTreeMap<String, u64>,
    /// stale + expired + supersessions.
    pub needs_attention: u64,
    pub stale_days: u32,
}

impl HealthCounts {
    fn new(health: &CollectionHealth, stale_days: u32) -> Self {
        Self {
            total: health.total,
            current: health.current,
            archived: health.archived,
            pinned: health.pinned,
            stale: health.stale,
            expired: health.expired,
            suspended: health.suspended,
            supersessions: health.supersessions,
            categories: health.categories.clone(),
            needs_attention: health.needs_attention(),
            stale_days,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HealthResponse {
    pub collection: String,
    /// False for a collection that does not exist (all counts 0).
    pub exists: bool,
    #[serde(flatten)]
    pub counts: HealthCounts,
    /// The model that made the collection's vectors, and its re-embedding when the
    /// configured model is another; null for a collection that does not exist.
    pub embedding: Option<EmbeddingHealth>,
}

impl HealthResponse {
    /// The counts of a collection, or zeros with `exists: false` when there is none.
    pub fn new(collection: String, found: Option<CollectionReport>, stale_days: u32) -> Self {
        let (health, embedding) = match found {
            Some(report) => (report.health, Some(EmbeddingHealth::new(report.embedding))),
            None => (CollectionHealth::default(), None),
        };
        Self {
            collection,
            exists: embedding.is_some(),
            counts: HealthCounts::new(&health, stale_days),
            embedding,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EmbeddingHealth {
    /// The model whose vectors search answers from, e.g. `all-MiniLM-L6-v2`.
    pub model: String,
    pub dimensions: usize,
    /// Present while the collection is re-embedded with the configured model.
    pub reembedding: Option<ReembeddingHealth>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReembeddingHealth {
    /// The configured model the collection is being re-embedded with.
    pub model: String,
    pub dimensions: usize,
    /// Memories with a vector by the new model, of `total`.
    pub done: usize,
    pub total: usize,
    pub started_at: DateTime<Utc>,
    /// Why the last attempt failed, while it waits to be retried.
    pub last_error: Option<String>,
}

impl EmbeddingHealth {
    fn new(status: EmbeddingStatus) -> Self {
        Self {
            model: status.model.name,
            dimensions: status.model.dimensions,
            reembedding: status.reembedding.map(|progress| ReembeddingHealth {
                model: progress.target.name,
                dimensions: progress.target.dimensions,
                done: progress.done,
                total: progress.total,
                started_at: progress.started_at,
                last_error: progress.last_error,
            }),
        }
    }
}

/// How the collection is doing, from counters the collection keeps (no scan). An unknown
/// collection answers 200 with `exists: false`.
#[utoipa::path(get, path = "/health", tag = "maintenance",
    params(("collection" = String, Path), HealthQuery),
    responses((status = 200, body = HealthResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn health(
    State(authorizer): State<Authorizer>,
    State(maintenance): State<Maintenance>,
    Authenticated(agent): Authenticated,
    ApiPath(collection): ApiPath<String>,
    ApiQuery(query): ApiQuery<HealthQuery>,
) -> ApiResult<Json<HealthResponse>> {
    let days = stale_days(query.stale_days, "stale_days")?;
    let found = match CollectionName::parse(&collection) {
        Ok(name) => {
            let access = authorizer.authorize::<Read>(&agent, name)?;
            maintenance.collection_health(&access, days)?
        }
        Err(_) => None,
    };
    Ok(Json(HealthResponse::new(collection, found, days)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SummaryQuery {
    /// How many memories (by importance and recency) the summary is based on: 1 to 200,
    /// default 50.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SummaryResponse {
    pub collection: String,
    /// False for a collection that does not exist.
    pub exists: bool,
    pub summary: String,
    pub themes: Vec<String>,
    /// How many memories it was written from.
    pub based_on: usize,
    /// When it was written; unchanged while it is served from the cache.
    pub generated_at: DateTime<Utc>,
    /// `llm` or `extractive`.
    pub generated_by: String,
    /// Why the LLM was not used although one is configured.
    pub skipped: Option<String>,
}

impl SummaryResponse {
    /// The summary of a collection, or a placeholder with `exists: false` when there is
    /// none.
    pub fn new(
        collection: String,
        found: Option<Arc<CollectionSummary>>,
        now: DateTime<Utc>,
    ) -> Self {
        match found {
            Some(summary) => {
                let summary = Arc::unwrap_or_clone(summary);
                SummaryResponse {
                    collection,
                    exists: true,
                    summary: summary.summary,
                    themes: summary.themes,
                    based_on: summary.based_on,
                    generated_at: summary.generated_at,
                    generated_by: summary.generated_by.to_owned(),
                    skipped: summary.skipped,
                }
            }
            None => SummaryResponse {
                collection,
                exists: false,
                summary: "The collection does not exist.".to_owned(),
                themes: Vec::new(),
                based_on: 0,
                generated_at: now,
                generated_by: "extractive".to_owned(),
                skipped: None,
            },
        }
    }
}

/// What the collection is about, from its top memories by importance and recency: one LLM
/// call, or without an LLM an extractive summary (clusters, their central memories, themes
/// from their top terms). Cached until the collection changes; never an error.
#[utoipa::path(get, path = "/summary", tag = "maintenance",
    params(("collection" = String, Path), SummaryQuery),
    responses((status = 200, body = SummaryResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn summary(
    State(authorizer): State<Authorizer>,
    State(maintenance): State<Maintenance>,
    Authenticated(agent): Authenticated,
    ApiPath(collection): ApiPath<String>,
    ApiQuery(query): ApiQuery<SummaryQuery>,
) -> ApiResult<Json<SummaryResponse>> {
    let limit = match query.limit {
        None => SUMMARY_LIMIT_DEFAULT,
        Some(limit) if (1..=SUMMARY_LIMIT_MAX as i64).contains(&limit) => limit as usize,
        Some(limit) => {
            return Err(ApiError::Validation(format!(
                "limit must be between 1 and {SUMMARY_LIMIT_MAX}, got {limit}"
            )))
        }
    };
    let found = match CollectionName::parse(&collection) {
        Ok(name) => {
            let access = authorizer.authorize::<Read>(&agent, name)?;
            maintenance.summary(&access, limit).await?
        }
        Err(_) => None,
    };
    Ok(Json(SummaryResponse::new(
        collection,
        found,
        maintenance.now(),
    )))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryHealthResponse {
    pub tenants: usize,
    pub collections: usize,
    #[serde(flatten)]
    pub counts: HealthCounts,
}

/// Health totals across every collection of every tenant (operators; aggregates only).
#[utoipa::path(get, path = "/memory-health", tag = "maintenance",
    params(HealthQuery),
    responses((status = 200, body = MemoryHealthResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn memory_health(
    State(maintenance): State<Maintenance>,
    _admin: Admin,
    ApiQuery(query): ApiQuery<HealthQuery>,
) -> ApiResult<Json<MemoryHealthResponse>> {
    let days = stale_days(query.stale_days, "stale_days")?;
    let total = tokio::task::spawn_blocking(move || maintenance.service_health(days))
        .await
        .map_err(|error| {
            ApiError::from(memvault_core::Error::TaskFailed {
                task: "health",
                reason: error.to_string(),
            })
        })?;
    Ok(Json(MemoryHealthResponse {
        tenants: total.tenants,
        collections: total.collections,
        counts: HealthCounts::new(&total.health, days),
    }))
}
