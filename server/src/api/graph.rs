//! Graph memory: `POST .../{collection}/remember`, `GET /v1/memory/extract/job/{job_id}`,
//! `GET .../{collection}/contradictions`, `GET .../{collection}/profile`,
//! `GET .../{collection}/memories/{memory_id}/history`,
//! `POST .../{collection}/memories/{memory_id}/reinstate`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::memory::validate_importance;
use memvault_core::{Authorizer, Graph};
use memvault_core::{RememberInput, RememberOutcome};
use memvault_intake::Files;
use memvault_storage::{ExtractJobRecord, RememberedFact};
use memvault_types::limits::{CONTRADICTIONS_LIMIT_MAX, REMEMBER_CONTENT_MAX_CHARS};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Writer};
use super::collections::{readable, writable, writable_or_new};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::files::{sign_memory, signed_memory};
use super::memories::MemoryResponse;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory/collections/{collection}`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(remember).audit(Audit::Change("memory.remember")))
        .routes(routes!(contradictions))
        .routes(routes!(profile))
        .routes(routes!(history))
        .routes(routes!(reinstate).audit(Audit::Change("memory.reinstate")))
}

/// Nested at `/v1/memory/extract`.
pub fn job_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(job))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberRequest {
    /// Free text to extract facts from; 1 to 10000 characters, not only whitespace.
    #[schema(
        min_length = 1,
        max_length = 10000,
        pattern = r"[^\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
    )]
    pub content: String,
    /// 0 to 1, given to every extracted memory; default 0.5.
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub importance: Option<f64>,
}

impl RememberRequest {
    fn validate(self) -> ApiResult<RememberInput> {
        let length = self.content.chars().count();
        if self.content.trim().is_empty() || length > REMEMBER_CONTENT_MAX_CHARS {
            return Err(ApiError::Validation(format!(
                "content must be 1 to {REMEMBER_CONTENT_MAX_CHARS} characters and not blank, got {length}"
            )));
        }
        Ok(RememberInput {
            content: self.content,
            importance: match self.importance {
                Some(importance) => {
                    validate_importance(importance).map_err(ApiError::Validation)?;
                    Some(importance)
                }
                None => None,
            },
        })
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RememberParams {
    /// Extract and store in the request (200 with the memories) instead of queueing a job
    /// (202 with its id). Default false.
    pub sync: Option<bool>,
}

/// One memory a remember produced, or found already stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct RememberedItem {
    pub id: String,
    pub text: String,
    /// `fact`, `preference` or `episode` (`other` for content stored without extraction).
    #[serde(rename = "type")]
    pub kind: String,
    /// `new`; `updated` (it superseded an older fact on the same slot); or `duplicate`
    /// (already stored: the id is the stored memory's).
    pub relation: String,
}

impl From<&RememberedFact> for RememberedItem {
    fn from(fact: &RememberedFact) -> Self {
        Self {
            id: fact.id.clone(),
            text: fact.text.clone(),
            kind: fact.kind.clone(),
            relation: fact.relation.clone(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RememberResponse {
    /// Memories newly stored (new or updated; duplicates are not counted).
    pub created: usize,
    pub memories: Vec<RememberedItem>,
    /// `rules` (built-in extractor, no LLM configured), `llm`, or `skipped` (spend cap
    /// reached: the content was stored as one memory).
    pub extractor: String,
    /// Why extraction was skipped or found nothing, when it did.
    pub detail: Option<String>,
}

impl From<RememberOutcome> for RememberResponse {
    fn from(outcome: RememberOutcome) -> Self {
        Self {
            created: outcome.created(),
            memories: outcome.facts.iter().map(RememberedItem::from).collect(),
            extractor: outcome.extractor.as_str().to_owned(),
            detail: outcome.detail,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct JobAccepted {
    pub job_id: String,
    /// `queued`.
    pub state: String,
}

/// Turns free text into atomic typed facts and stores them; a newer fact on the same slot
/// supersedes the older one. By default queues a job (202); `?sync=true` answers with the
/// memories (200). The collection is created when missing.
#[utoipa::path(post, path = "/remember", tag = "graph",
    params(("collection" = String, Path), RememberParams), request_body = RememberRequest,
    responses((status = 202, body = JobAccepted), (status = 200, body = RememberResponse),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 502, body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn remember(
    State(graph): State<Graph>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(collection): ApiPath<String>,
    ApiQuery(params): ApiQuery<RememberParams>,
    ApiJson(request): ApiJson<RememberRequest>,
) -> ApiResult<Response> {
    let access = writable_or_new(&authorizer, &agent, &collection)?;
    let input = request.validate()?;
    if params.sync.unwrap_or(false) {
        let outcome = graph.remember(&access, input).await?;
        return Ok(Json(RememberResponse::from(outcome)).into_response());
    }
    let job = graph.submit_remember(&access, input).await?;
    let accepted = JobAccepted {
        job_id: job.id,
        state: job.state.as_str().to_owned(),
    };
    Ok((StatusCode::ACCEPTED, Json(accepted)).into_response())
}

#[derive(Debug, Serialize, ToSchema)]
pub struct JobResponse {
    pub job_id: String,
    pub collection: String,
    /// `queued`, `processing`, `done` or `failed`.
    pub state: String,
    /// The memories the job produced (once done).
    pub facts: Vec<RememberedItem>,
    /// True once the job is done or failed.
    pub complete: bool,
    /// Why it failed, or why extraction was skipped.
    pub detail: Option<String>,
    pub attempts: u32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<ExtractJobRecord> for JobResponse {
    fn from(job: ExtractJobRecord) -> Self {
        Self {
            job_id: job.id,
            collection: job.collection.as_str().to_owned(),
            state: job.state.as_str().to_owned(),
            facts: job.facts.iter().map(RememberedItem::from).collect(),
            complete: job.state.is_finished(),
            detail: job.detail,
            attempts: job.attempts,
            created_at: job.created_at,
            updated_at: job.updated_at,
        }
    }
}

/// The state of a queued remember. Finished jobs are kept for seven days.
#[utoipa::path(get, path = "/job/{job_id}", tag = "graph",
    params(("job_id" = String, Path)),
    responses((status = 200, body = JobResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "the job's collection is restricted"),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn job(
    State(graph): State<Graph>,
    Authenticated(agent): Authenticated,
    ApiPath(job_id): ApiPath<String>,
) -> ApiResult<Json<JobResponse>> {
    // A job shows the facts it stored: only for agents that may read its collection.
    let job = graph.extract_job(&agent, &job_id).await?;
    Ok(Json(JobResponse::from(job)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ContradictionsQuery {
    /// 1 to 100; default 100.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ContradictionPair {
    /// The newer fact.
    pub current: MemoryResponse,
    /// The older fact it superseded, or sets aside for now (kept, out of search).
    pub superseded: MemoryResponse,
    /// When the older fact was superseded or set aside.
    pub superseded_at: Option<DateTime<Utc>>,
    /// Only for a time-bound fact that sets the older one aside: when it ends and the
    /// older fact is current again.
    pub until: Option<DateTime<Utc>>,
    pub slot: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ContradictionsResponse {
    pub contradictions: Vec<ContradictionPair>,
}

/// Pairs of a fact and the older fact it superseded, and of a time-bound fact and the
/// older one it sets aside while it is valid; newest first.
#[utoipa::path(get, path = "/contradictions", tag = "graph",
    params(("collection" = String, Path), ContradictionsQuery),
    responses((status = 200, body = ContradictionsResponse), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn contradictions(
    State(graph): State<Graph>,
    State(authorizer): State<Authorizer>,
    State(files): State<Files>,
    Authenticated(agent): Authenticated,
    ApiPath(collection): ApiPath<String>,
    ApiQuery(query): ApiQuery<ContradictionsQuery>,
) -> ApiResult<Json<ContradictionsResponse>> {
    let access = readable(&authorizer, &agent, &collection)?;
    let limit = match query.limit {
        None => CONTRADICTIONS_LIMIT_MAX,
        Some(limit) if (1..=CONTRADICTIONS_LIMIT_MAX as i64).contains(&limit) => limit as usize,
        Some(limit) => {
            return Err(ApiError::Validation(format!(
                "limit must be between 1 and {CONTRADICTIONS_LIMIT_MAX}, got {limit}"
            )))
        }
    };
    let pairs = graph.contradictions(&access, limit)?;
    let mut contradictions: Vec<ContradictionPair> = pairs
        .iter()
        .map(|pair| ContradictionPair {
            current: MemoryResponse::from(&*pair.current),
            superseded: MemoryResponse::from(&*pair.superseded),
            superseded_at: pair.since,
            until: pair.until,
            slot: pair.superseded.slot.clone(),
        })
        .collect();
    for pair in &mut contradictions {
        sign_memory(&files, &agent.tenant_id, &mut pair.current).await;
        sign_memory(&files, &agent.tenant_id, &mut pair.superseded).await;
    }
    Ok(Json(ContradictionsResponse { contradictions }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ProfileResponse {
    pub profile: String,
    /// How many current, unexpired facts and preferences it is based on.
    pub based_on: usize,
    /// `llm` or `extractive` (no LLM, or the LLM was skipped).
    pub generated_by: String,
    /// Why the LLM was not used although one is configured.
    pub skipped: Option<String>,
}

/// What the collection knows about its user: an LLM summary of the current, unexpired facts
/// and preferences, or without an LLM those facts grouped by type.
#[utoipa::path(get, path = "/profile", tag = "graph",
    params(("collection" = String, Path)),
    responses((status = 200, body = ProfileResponse), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn profile(
    State(graph): State<Graph>,
    State(authorizer): State<Authorizer>,
    Authenticated(agent): Authenticated,
    ApiPath(collection): ApiPath<String>,
) -> ApiResult<Json<ProfileResponse>> {
    let access = readable(&authorizer, &agent, &collection)?;
    let profile = graph.profile(&access).await?;
    Ok(Json(ProfileResponse {
        profile: profile.profile,
        based_on: profile.based_on,
        generated_by: profile.generated_by.to_owned(),
        skipped: profile.skipped,
    }))
}

/// One value a slot has had and when it was true.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryEntry {
    pub memory: MemoryResponse,
    /// The slot's value as extracted.
    pub value: Option<String>,
    /// When it became true: when it was written.
    pub valid_from: DateTime<Utc>,
    /// When it stopped (or stops) being true for good: superseded or expired, whichever
    /// comes first; null while neither is known.
    pub valid_until: Option<DateTime<Utc>>,
    pub superseded_at: Option<DateTime<Utc>>,
    pub superseded_by: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    /// Times inside its validity when a time-bound value on the slot set it aside.
    pub set_aside: Vec<SetAsideResponse>,
    /// Whether it is current truth now.
    pub current: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SetAsideResponse {
    /// The time-bound memory that overrode it.
    pub by: String,
    pub from: DateTime<Utc>,
    pub until: DateTime<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryResponse {
    /// The memory asked about.
    pub memory_id: String,
    /// Its slot; null for a memory without one (its history is itself).
    pub slot: Option<String>,
    /// Every value the slot has had, oldest first.
    pub history: Vec<HistoryEntry>,
}

/// Every value the memory's slot has had (superseded, expired and set-aside ones
/// included), oldest first, each with its validity interval.
#[utoipa::path(get, path = "/memories/{memory_id}/history", tag = "graph",
    params(("collection" = String, Path), ("memory_id" = String, Path)),
    responses((status = 200, body = HistoryResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn history(
    State(graph): State<Graph>,
    State(authorizer): State<Authorizer>,
    State(files): State<Files>,
    Authenticated(agent): Authenticated,
    ApiPath((collection, memory_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<HistoryResponse>> {
    let access = readable(&authorizer, &agent, &collection)?;
    let history = graph.history(&access, &memory_id)?;
    let mut response = HistoryResponse {
        memory_id,
        slot: history.slot,
        history: history
            .values
            .iter()
            .map(|(memory, current)| HistoryEntry {
                memory: MemoryResponse::from(&**memory),
                value: memory.value.clone(),
                valid_from: memory.created_at,
                valid_until: memory.valid_until(),
                superseded_at: memory.superseded_at,
                superseded_by: memory.superseded_by.clone(),
                expires_at: memory.expires_at,
                set_aside: memory
                    .suspensions
                    .iter()
                    .map(|suspension| SetAsideResponse {
                        by: suspension.by.clone(),
                        from: suspension.from,
                        until: suspension.until,
                    })
                    .collect(),
                current: *current,
            })
            .collect(),
    };
    for entry in &mut response.history {
        sign_memory(&files, &agent.tenant_id, &mut entry.memory).await;
    }
    Ok(Json(response))
}

/// Makes a superseded value current again (the contradictions review's "restore the
/// older"): a new memory with the older one's text, type, slot and value, written now,
/// supersedes what holds the slot. The older memory and the value that replaced it stay
/// in the slot's history, so `as_of` still answers each moment as it was. 200 with the
/// memory that holds the slot when it already says the same, and with the memory itself
/// when no other value replaced it (nothing to do).
#[utoipa::path(post, path = "/memories/{memory_id}/reinstate", tag = "graph",
    params(("collection" = String, Path), ("memory_id" = String, Path)),
    responses((status = 201, body = MemoryResponse), (status = 200, body = MemoryResponse),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn reinstate(
    State(graph): State<Graph>,
    State(authorizer): State<Authorizer>,
    State(files): State<Files>,
    Writer(agent): Writer,
    ApiPath((collection, memory_id)): ApiPath<(String, String)>,
) -> ApiResult<(StatusCode, Json<MemoryResponse>)> {
    let access = writable(&authorizer, &agent, &collection)?;
    let (memory, created) = graph.reinstate(&access, &memory_id).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(signed_memory(&files, &agent.tenant_id, &memory).await),
    ))
}
