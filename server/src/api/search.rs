//! Search: `POST /v1/memory/collections/{collection}/search`, `POST /v1/memory/search`
//! (tenant-wide), `GET .../memories/{memory_id}/related`, `POST .../forget`.

use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::{Authorizer, Search};
use memvault_index::search::{
    FusionParams, SearchFilter, SearchHit, SearchMode, SearchOutcome, SearchQuery,
};
use memvault_intake::Files;
use memvault_types::limits::{
    FORGET_LIMIT_DEFAULT, FORGET_LIMIT_MAX, FORGET_MIN_SCORE_DEFAULT, MEMORY_TEXT_MAX_CHARS,
    RELATED_LIMIT_DEFAULT, RELATED_MIN_SCORE_DEFAULT, SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX,
    SEARCH_MIN_SCORE_DEFAULT,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Writer};
use super::collections::{readable, writable};
use super::extract::{optional_integer, ApiJson, ApiPath, ApiQuery};
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory/collections/{collection}`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search_collection).audit(Audit::NoTenantChange))
        .routes(routes!(related))
        .routes(routes!(forget).audit(Audit::Change("memory.forget")))
}

/// Nested at `/v1/memory`.
pub fn tenant_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(search_tenant).audit(Audit::NoTenantChange))
}

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModeParam {
    Hybrid,
    Vector,
    Text,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// 1 to 10000 characters, not only whitespace.
    #[schema(
        min_length = 1,
        max_length = 10000,
        pattern = r"[^\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
    )]
    pub query: String,
    /// 1 to 50; default 5.
    #[schema(minimum = 1, maximum = 50)]
    #[serde(default, deserialize_with = "optional_integer")]
    pub limit: Option<i64>,
    /// The vector threshold (cosine similarity, -1 to 1); default 0.3. In hybrid mode a
    /// strong keyword match is returned even below it.
    #[schema(minimum = -1.0, maximum = 1.0)]
    pub min_score: Option<f64>,
    /// `hybrid` (default), `vector` or `text`.
    pub mode: Option<ModeParam>,
    pub category: Option<String>,
    /// JSON containment over the memory's metadata.
    #[schema(value_type = Option<Object>)]
    pub metadata_filter: Option<Map<String, Value>>,
    pub container_tag: Option<String>,
    /// Accepted; runs once an LLM is configured (reported in `skipped` until then).
    pub rewrite: Option<bool>,
    /// Accepted; runs once an LLM is configured (reported in `skipped` until then).
    pub rerank: Option<bool>,
    /// Default false.
    pub include_archived: Option<bool>,
    /// RFC 3339 timestamp: search what was true then instead of now (memories written by
    /// then and not yet superseded, expired or set aside then, superseded ones included).
    #[schema(format = DateTime, example = "2026-03-01T12:00:00Z")]
    pub as_of: Option<String>,
}

/// A search request checked: the query, and the moment it is about (`None`: now).
pub(crate) struct ValidSearch {
    pub(crate) query: SearchQuery,
    pub(crate) as_of: Option<DateTime<Utc>>,
}

impl SearchRequest {
    pub(crate) fn validate(self) -> ApiResult<ValidSearch> {
        let as_of = self.as_of.as_deref().map(validate_as_of).transpose()?;
        let text = validate_query(self.query)?;
        let limit = validate_limit(self.limit, SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX)?;
        let min_score = validate_score(self.min_score, SEARCH_MIN_SCORE_DEFAULT)?;
        let mode = match self.mode.unwrap_or(ModeParam::Hybrid) {
            ModeParam::Hybrid => SearchMode::Hybrid,
            ModeParam::Vector => SearchMode::Vector,
            ModeParam::Text => SearchMode::Text,
        };
        let query = SearchQuery {
            text,
            limit,
            min_score,
            mode,
            filter: SearchFilter {
                category: self.category,
                container_tag: self.container_tag,
                metadata: self.metadata_filter,
                include_archived: self.include_archived.unwrap_or(false),
            },
            rewrite: self.rewrite.unwrap_or(false),
            rerank: self.rerank.unwrap_or(false),
            fusion: FusionParams::default(),
        };
        Ok(ValidSearch { query, as_of })
    }
}

/// An RFC 3339 timestamp ("2026-03-01T12:00:00Z", "2026-03-01T13:00:00+01:00").
fn validate_as_of(raw: &str) -> ApiResult<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(raw.trim())
        .map(|at| at.with_timezone(&Utc))
        .map_err(|error| {
            ApiError::Validation(format!(
                "as_of must be an RFC 3339 timestamp such as 2026-03-01T12:00:00Z, got {raw:?}: {error}"
            ))
        })
}

fn validate_query(query: String) -> ApiResult<String> {
    if query.trim().is_empty() {
        return Err(ApiError::Validation("query must not be empty".to_owned()));
    }
    if query.chars().count() > MEMORY_TEXT_MAX_CHARS {
        return Err(ApiError::Validation(format!(
            "query must be at most {MEMORY_TEXT_MAX_CHARS} characters"
        )));
    }
    Ok(query)
}

pub(crate) fn validate_limit(limit: Option<i64>, default: usize, max: usize) -> ApiResult<usize> {
    match limit {
        None => Ok(default),
        Some(limit) if (1..=max as i64).contains(&limit) => Ok(limit as usize),
        Some(limit) => Err(ApiError::Validation(format!(
            "limit must be between 1 and {max}, got {limit}"
        ))),
    }
}

fn validate_score(score: Option<f64>, default: f64) -> ApiResult<f32> {
    match score {
        None => Ok(default as f32),
        Some(score) if score.is_finite() && (-1.0..=1.0).contains(&score) => Ok(score as f32),
        Some(score) => Err(ApiError::Validation(format!(
            "min_score must be between -1 and 1, got {score}"
        ))),
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResultItem {
    pub id: String,
    pub text: String,
    pub category: String,
    pub importance: f64,
    /// Vector mode: cosine similarity. Text mode: BM25 relative to the best match (1.0).
    /// Hybrid: 0.6 × cosine / best cosine + 0.4 × BM25 / best BM25 over the candidates of
    /// both lists, in [0, 1]; 1.0 for the best of both.
    pub score: f32,
    pub source: String,
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
    #[schema(value_type = Vec<Object>)]
    pub images: Vec<Value>,
    pub container_tag: Option<String>,
    pub pinned: bool,
    pub archived: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The memory's collection (tenant-wide search only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collection: Option<String>,
}

impl SearchResultItem {
    fn new(hit: &SearchHit, with_collection: bool) -> Self {
        let memory = &hit.memory;
        Self {
            id: memory.id.clone(),
            text: memory.text.clone(),
            category: memory.category.clone(),
            importance: memory.importance,
            score: hit.score,
            source: memory.source.clone(),
            metadata: memory.metadata.clone(),
            images: memory.images.to_vec(),
            container_tag: memory.container_tag.as_deref().map(str::to_owned),
            pinned: memory.pinned,
            archived: memory.archived,
            created_at: memory.created_at,
            updated_at: memory.updated_at,
            collection: with_collection.then(|| hit.collection.as_str().to_owned()),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SkippedStep {
    /// `rewrite` or `rerank`.
    pub step: String,
    pub reason: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResponse {
    pub results: Vec<SearchResultItem>,
    /// Time spent embedding the query (0 when not needed or answered from cache).
    pub query_embedding_ms: f64,
    /// Time spent finding and ranking candidates (or reading the cache).
    pub search_ms: f64,
    /// True when the answer came from the result cache (same request, unchanged data).
    pub cached: bool,
    /// Requested steps that did not run, with the reason.
    pub skipped: Vec<SkippedStep>,
}

impl SearchResponse {
    /// File URLs presigned now, for the results with attached files.
    async fn signed(mut self, files: &Files, tenant: &memvault_storage::TenantId) -> Self {
        for item in &mut self.results {
            if !item.images.is_empty() {
                item.images = files.sign_images(tenant, &item.images).await;
            }
        }
        self
    }

    fn new(outcome: SearchOutcome, with_collection: bool) -> Self {
        Self {
            results: outcome
                .hits
                .iter()
                .map(|hit| SearchResultItem::new(hit, with_collection))
                .collect(),
            query_embedding_ms: outcome.query_embedding_ms,
            search_ms: outcome.search_ms,
            cached: outcome.cached,
            skipped: outcome
                .skipped
                .into_iter()
                .map(|skipped| SkippedStep {
                    step: skipped.step.to_owned(),
                    reason: skipped.reason,
                })
                .collect(),
        }
    }
}

/// Searches one collection. Results exclude superseded, expired and set-aside memories,
/// and archived ones unless `include_archived`; with `as_of`, what was true then. An exact
/// repeat is answered from cache until the collection (or, by expiry, its truth) changes.
#[utoipa::path(post, path = "/search", tag = "search",
    params(("collection" = String, Path)), request_body = SearchRequest,
    responses((status = 200, body = SearchResponse), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn search_collection(
    State(files): State<Files>,
    State(search): State<Search>,
    State(authorizer): State<Authorizer>,
    Authenticated(agent): Authenticated,
    ApiPath(collection): ApiPath<String>,
    ApiJson(request): ApiJson<SearchRequest>,
) -> ApiResult<Json<SearchResponse>> {
    let access = readable(&authorizer, &agent, &collection)?;
    let request = request.validate()?;
    let outcome = search
        .search_as_of(&agent, Some(&access), request.query, request.as_of)
        .await?;
    Ok(Json(
        SearchResponse::new(outcome, false)
            .signed(&files, &agent.tenant_id)
            .await,
    ))
}

/// Searches every collection of the tenant; each result names its `collection`. With
/// `as_of`, what was true then.
#[utoipa::path(post, path = "/search", tag = "search",
    request_body = SearchRequest,
    responses((status = 200, body = SearchResponse), (status = 401, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn search_tenant(
    State(files): State<Files>,
    State(search): State<Search>,
    Authenticated(agent): Authenticated,
    ApiJson(request): ApiJson<SearchRequest>,
) -> ApiResult<Json<SearchResponse>> {
    let request = request.validate()?;
    let outcome = search
        .search_as_of(&agent, None, request.query, request.as_of)
        .await?;
    Ok(Json(
        SearchResponse::new(outcome, true)
            .signed(&files, &agent.tenant_id)
            .await,
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RelatedQuery {
    /// 1 to 50; default 5.
    #[param(minimum = 1, maximum = 50)]
    pub limit: Option<i64>,
    /// Minimum cosine similarity (-1 to 1); default 0.0.
    #[param(minimum = -1.0, maximum = 1.0)]
    pub min_score: Option<f64>,
}

/// Nearest neighbours by the memory's own embedding, excluding itself, archived,
/// superseded and expired memories; in the search response shape.
#[utoipa::path(get, path = "/memories/{memory_id}/related", tag = "search",
    params(("collection" = String, Path), ("memory_id" = String, Path), RelatedQuery),
    responses((status = 200, body = SearchResponse), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn related(
    State(files): State<Files>,
    State(search): State<Search>,
    State(authorizer): State<Authorizer>,
    Authenticated(agent): Authenticated,
    ApiPath((collection, id)): ApiPath<(String, String)>,
    ApiQuery(query): ApiQuery<RelatedQuery>,
) -> ApiResult<Json<SearchResponse>> {
    let access = readable(&authorizer, &agent, &collection)?;
    let limit = validate_limit(query.limit, RELATED_LIMIT_DEFAULT, SEARCH_LIMIT_MAX)?;
    let min_score = validate_score(query.min_score, RELATED_MIN_SCORE_DEFAULT)?;
    let outcome = search.related(&access, &id, limit, min_score).await?;
    Ok(Json(
        SearchResponse::new(outcome, false)
            .signed(&files, &agent.tenant_id)
            .await,
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetRequest {
    /// 1 to 10000 characters, not only whitespace.
    #[schema(
        min_length = 1,
        max_length = 10000,
        pattern = r"[^\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
    )]
    pub query: String,
    /// Minimum cosine similarity of a memory to delete (-1 to 1); default 0.5.
    #[schema(minimum = -1.0, maximum = 1.0)]
    pub min_score: Option<f64>,
    /// At most this many memories are deleted (1 to 100); default 10.
    #[schema(minimum = 1, maximum = 100)]
    #[serde(default, deserialize_with = "optional_integer")]
    pub limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ForgetResponse {
    /// How many memories were deleted.
    pub count: usize,
    /// The deleted memories, best match first, with their similarity as `score`.
    pub deleted: Vec<SearchResultItem>,
}

/// Semantic delete (destructive): removes the memories most similar to `query`, at least
/// `min_score` similar, at most `limit` of them.
#[utoipa::path(post, path = "/forget", tag = "search",
    params(("collection" = String, Path)), request_body = ForgetRequest,
    responses((status = 200, body = ForgetResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn forget(
    State(search): State<Search>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(collection): ApiPath<String>,
    ApiJson(request): ApiJson<ForgetRequest>,
) -> ApiResult<Json<ForgetResponse>> {
    let access = writable(&authorizer, &agent, &collection)?;
    let query = validate_query(request.query)?;
    let min_score = validate_score(request.min_score, FORGET_MIN_SCORE_DEFAULT)?;
    let limit = validate_limit(request.limit, FORGET_LIMIT_DEFAULT, FORGET_LIMIT_MAX)?;
    let deleted = search.forget(&access, &query, min_score, limit).await?;
    Ok(Json(ForgetResponse {
        count: deleted.len(),
        deleted: deleted
            .iter()
            .map(|hit| SearchResultItem::new(hit, false))
            .collect(),
    }))
}
