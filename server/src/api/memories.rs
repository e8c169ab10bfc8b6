//! `/v1/memory/collections/{collection}/memories`: create, bulk, list, get, patch,
//! delete, move, pin, archive.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::memory::{
    validate_importance, validate_metadata, validate_short_field, validate_text, MemoryPatch,
    NewMemory,
};
use memvault_core::ListPage;
use memvault_core::{Authorizer, Memories};
use memvault_intake::Files;
use memvault_storage::MemoryRecord;
use memvault_types::limits::{
    BULK_MAX_ITEMS, DEFAULT_IMPORTANCE, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Writer};
use super::collections::{readable, writable, writable_or_new};
use super::extract::{parse_json_object, present, ApiJson, ApiJsonArray, ApiPath, ApiQuery};
use super::files::signed_memory;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory/collections/{collection}/memories`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(create).audit(Audit::Change("memory.create")))
        .routes(routes!(bulk).audit(Audit::Change("memory.bulk_create")))
        .routes(routes!(fetch))
        .routes(routes!(patch).audit(Audit::Change("memory.update")))
        .routes(routes!(remove).audit(Audit::Change("memory.delete")))
        .routes(routes!(move_to).audit(Audit::Change("memory.move")))
        .routes(routes!(pin).audit(Audit::Change("memory.pin")))
        .routes(routes!(archive).audit(Audit::Change("memory.archive")))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedByResponse {
    /// The id of the API key (agent identity) that wrote the memory.
    pub id: String,
    pub label: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryResponse {
    pub id: String,
    pub text: String,
    pub importance: f64,
    pub category: String,
    pub source: String,
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
    pub container_tag: Option<String>,
    #[schema(value_type = Vec<Object>)]
    pub images: Vec<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub pinned: bool,
    pub archived: bool,
    pub created_by: CreatedByResponse,
    /// The `subject/attribute` an extracted fact is a value of (graph memory), else null.
    pub slot: Option<String>,
    /// The newer memory that superseded this one; null while it is current.
    pub superseded_by: Option<String>,
    pub superseded_at: Option<DateTime<Utc>>,
    /// When a time-bound fact stops being true; it then leaves search, related and profile.
    pub expires_at: Option<DateTime<Utc>>,
}

impl From<&MemoryRecord> for MemoryResponse {
    fn from(memory: &MemoryRecord) -> Self {
        Self {
            id: memory.id.clone(),
            text: memory.text.clone(),
            importance: memory.importance,
            category: memory.category.clone(),
            source: memory.source.clone(),
            metadata: memory.metadata.clone(),
            container_tag: memory.container_tag.as_deref().map(str::to_owned),
            images: memory.images.to_vec(),
            created_at: memory.created_at,
            updated_at: memory.updated_at,
            pinned: memory.pinned,
            archived: memory.archived,
            created_by: CreatedByResponse {
                id: memory.created_by.id.clone(),
                label: memory.created_by.label.clone(),
            },
            slot: memory.slot.clone(),
            superseded_by: memory.superseded_by.clone(),
            superseded_at: memory.superseded_at,
            expires_at: memory.expires_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateMemoryRequest {
    /// 1 to 10000 characters, not only whitespace.
    #[schema(
        min_length = 1,
        max_length = 10000,
        pattern = r"[^\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
    )]
    pub text: String,
    /// 0 to 1; default 0.5.
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub importance: Option<f64>,
    /// Default `other`.
    #[schema(min_length = 1, max_length = 200)]
    pub category: Option<String>,
    /// Default `api`.
    #[schema(min_length = 1, max_length = 200)]
    pub source: Option<String>,
    /// Default `{}`; searched by `metadata_filter` (JSON containment). At most 16 KiB as
    /// JSON.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
    /// Optional sub-namespace inside the collection (e.g. an end-user id).
    #[schema(min_length = 1, max_length = 200)]
    pub container_tag: Option<String>,
}

impl CreateMemoryRequest {
    pub fn validate(self) -> ApiResult<NewMemory> {
        validate_text(&self.text).map_err(ApiError::Validation)?;
        let importance = self.importance.unwrap_or(DEFAULT_IMPORTANCE);
        validate_importance(importance).map_err(ApiError::Validation)?;
        let category = self.category.unwrap_or_else(|| "other".to_owned());
        validate_short_field("category", &category).map_err(ApiError::Validation)?;
        let source = self.source.unwrap_or_else(|| "api".to_owned());
        validate_short_field("source", &source).map_err(ApiError::Validation)?;
        if let Some(tag) = &self.container_tag {
            validate_short_field("container_tag", tag).map_err(ApiError::Validation)?;
        }
        let metadata = self.metadata.unwrap_or_default();
        validate_metadata(&metadata).map_err(ApiError::Validation)?;
        Ok(NewMemory {
            text: self.text,
            importance,
            category,
            source,
            metadata,
            container_tag: self.container_tag,
            images: Vec::new(),
        })
    }
}

/// Parses and validates a memory-create body; what the fuzz target drives.
pub fn parse_create_memory(body: &[u8]) -> ApiResult<NewMemory> {
    parse_json_object::<CreateMemoryRequest>(body)?.validate()
}

/// Only the given fields change; at least one is needed, and a field given is a value
/// (`null` is refused: leave the field out to keep it).
// Its `minProperties: 1` is set in `api::openapi`: utoipa 5.5 writes `min_properties` as
// `maxProperties`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchMemoryRequest {
    /// A new text is re-embedded; 1 to 10000 characters, not only whitespace.
    #[schema(
        nullable = false,
        min_length = 1,
        max_length = 10000,
        pattern = r"[^\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
    )]
    #[serde(default, deserialize_with = "present")]
    pub text: Option<String>,
    #[schema(nullable = false, minimum = 0.0, maximum = 1.0)]
    #[serde(default, deserialize_with = "present")]
    pub importance: Option<f64>,
    #[schema(nullable = false, min_length = 1, max_length = 200)]
    #[serde(default, deserialize_with = "present")]
    pub category: Option<String>,
    /// Replaces the metadata; at most 16 KiB as JSON.
    #[schema(value_type = Object, nullable = false, required = false)]
    #[serde(default, deserialize_with = "present")]
    pub metadata: Option<Map<String, Value>>,
}

impl PatchMemoryRequest {
    fn validate(self) -> ApiResult<MemoryPatch> {
        if let Some(text) = &self.text {
            validate_text(text).map_err(ApiError::Validation)?;
        }
        if let Some(importance) = self.importance {
            validate_importance(importance).map_err(ApiError::Validation)?;
        }
        if let Some(category) = &self.category {
            validate_short_field("category", category).map_err(ApiError::Validation)?;
        }
        if let Some(metadata) = &self.metadata {
            validate_metadata(metadata).map_err(ApiError::Validation)?;
        }
        let patch = MemoryPatch {
            text: self.text,
            importance: self.importance,
            category: self.category,
            metadata: self.metadata,
        };
        if patch.is_empty() {
            return Err(ApiError::Validation(
                "nothing to change: give at least one of text, importance, category, metadata"
                    .to_owned(),
            ));
        }
        Ok(patch)
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListMemoriesQuery {
    /// 1 to 200, default 50.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<usize>,
    /// Default 0.
    #[param(minimum = 0)]
    pub offset: Option<i64>,
    /// Default false.
    pub include_archived: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveMemoryRequest {
    /// The target collection; created when missing.
    #[schema(max_length = 128, pattern = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")]
    pub to_collection: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PinRequest {
    pub pinned: bool,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveRequest {
    pub archived: bool,
}

bounded_array_schema!(
    /// The bulk body: 1 to 100 memories.
    BulkCreateRequest,
    CreateMemoryRequest,
    1,
    BULK_MAX_ITEMS
);

#[derive(Debug, Serialize, ToSchema)]
pub struct BulkCreateResponse {
    pub created: usize,
    /// The created memories, in request order.
    pub memories: Vec<MemoryResponse>,
}

/// Creates one memory; the collection is created when missing.
#[utoipa::path(post, path = "", tag = "memories",
    params(("collection" = String, Path)), request_body = CreateMemoryRequest,
    responses((status = 201, body = MemoryResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(memories): State<Memories>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(collection): ApiPath<String>,
    ApiJson(request): ApiJson<CreateMemoryRequest>,
) -> ApiResult<(StatusCode, Json<MemoryResponse>)> {
    let access = writable_or_new(&authorizer, &agent, &collection)?;
    let memory = request.validate()?;
    let created = memories.create(&access, vec![memory]).await?;
    let response = created
        .first()
        .map(|memory| MemoryResponse::from(&**memory))
        .ok_or_else(|| ApiError::Internal("create returned no memory".to_owned()))?;
    Ok((StatusCode::CREATED, Json(response)))
}

/// Creates up to 100 memories, embedded in one batch and stored in one atomic write. One
/// invalid item rejects the whole call and nothing is stored.
#[utoipa::path(post, path = "/bulk", tag = "memories",
    params(("collection" = String, Path)), request_body = BulkCreateRequest,
    responses((status = 201, body = BulkCreateResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn bulk(
    State(memories): State<Memories>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(collection): ApiPath<String>,
    ApiJsonArray(requests): ApiJsonArray<CreateMemoryRequest>,
) -> ApiResult<(StatusCode, Json<BulkCreateResponse>)> {
    let access = writable_or_new(&authorizer, &agent, &collection)?;
    if requests.is_empty() || requests.len() > BULK_MAX_ITEMS {
        return Err(ApiError::Validation(format!(
            "bulk takes 1 to {BULK_MAX_ITEMS} items, got {}",
            requests.len()
        )));
    }
    let new_memories = requests
        .into_iter()
        .enumerate()
        .map(|(index, request)| {
            request
                .validate()
                .map_err(|error| ApiError::Validation(format!("item [{index}]: {error}")))
        })
        .collect::<ApiResult<Vec<NewMemory>>>()?;
    let created = memories.create(&access, new_memories).await?;
    let memories: Vec<MemoryResponse> = created
        .iter()
        .map(|memory| MemoryResponse::from(&**memory))
        .collect();
    Ok((
        StatusCode::CREATED,
        Json(BulkCreateResponse {
            created: memories.len(),
            memories,
        }),
    ))
}

/// Memories newest first, pinned ones first; archived ones only with `include_archived`.
#[utoipa::path(get, path = "", tag = "memories",
    params(("collection" = String, Path), ListMemoriesQuery),
    responses((status = 200, body = Vec<MemoryResponse>), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(files): State<Files>,
    State(memories): State<Memories>,
    State(authorizer): State<Authorizer>,
    Authenticated(agent): Authenticated,
    ApiPath(collection): ApiPath<String>,
    ApiQuery(query): ApiQuery<ListMemoriesQuery>,
) -> ApiResult<Json<Vec<MemoryResponse>>> {
    let access = readable(&authorizer, &agent, &collection)?;
    let limit = query.limit.unwrap_or(LIST_LIMIT_DEFAULT);
    if !(1..=LIST_LIMIT_MAX).contains(&limit) {
        return Err(ApiError::Validation(format!(
            "limit must be 1 to {LIST_LIMIT_MAX}, got {limit}"
        )));
    }
    let offset = usize::try_from(query.offset.unwrap_or(0)).map_err(|_| {
        ApiError::Validation(format!(
            "offset must not be negative, got {:?}",
            query.offset
        ))
    })?;
    let page = ListPage {
        offset,
        limit,
        include_archived: query.include_archived.unwrap_or(false),
    };
    let memories = memories.list(&access, page)?;
    let mut responses = Vec::with_capacity(memories.len());
    for memory in &memories {
        responses.push(signed_memory(&files, &agent.tenant_id, memory).await);
    }
    Ok(Json(responses))
}

#[utoipa::path(get, path = "/{memory_id}", tag = "memories",
    params(("collection" = String, Path), ("memory_id" = String, Path)),
    responses((status = 200, body = MemoryResponse), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn fetch(
    State(files): State<Files>,
    State(memories): State<Memories>,
    State(authorizer): State<Authorizer>,
    Authenticated(agent): Authenticated,
    ApiPath((collection, id)): ApiPath<(String, String)>,
) -> ApiResult<Json<MemoryResponse>> {
    let access = readable(&authorizer, &agent, &collection)?;
    let memory = memories.get(&access, &id)?;
    Ok(Json(signed_memory(&files, &agent.tenant_id, &memory).await))
}

/// Changes only the given fields; a text change re-embeds the memory.
#[utoipa::path(patch, path = "/{memory_id}", tag = "memories",
    params(("collection" = String, Path), ("memory_id" = String, Path)), request_body = PatchMemoryRequest,
    responses((status = 200, body = MemoryResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn patch(
    State(files): State<Files>,
    State(memories): State<Memories>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath((collection, id)): ApiPath<(String, String)>,
    ApiJson(request): ApiJson<PatchMemoryRequest>,
) -> ApiResult<Json<MemoryResponse>> {
    let access = writable(&authorizer, &agent, &collection)?;
    let patch = request.validate()?;
    let memory = memories.patch(&access, &id, patch).await?;
    Ok(Json(signed_memory(&files, &agent.tenant_id, &memory).await))
}

#[utoipa::path(delete, path = "/{memory_id}", tag = "memories",
    params(("collection" = String, Path), ("memory_id" = String, Path)),
    responses((status = 204, description = "deleted"), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn remove(
    State(memories): State<Memories>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath((collection, id)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    let access = writable(&authorizer, &agent, &collection)?;
    memories.delete(&access, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Moves the memory (same id) to another collection, created when missing; returns it.
#[utoipa::path(post, path = "/{memory_id}/move", tag = "memories",
    params(("collection" = String, Path), ("memory_id" = String, Path)), request_body = MoveMemoryRequest,
    responses((status = 200, body = MemoryResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn move_to(
    State(files): State<Files>,
    State(memories): State<Memories>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath((collection, id)): ApiPath<(String, String)>,
    ApiJson(request): ApiJson<MoveMemoryRequest>,
) -> ApiResult<Json<MemoryResponse>> {
    let from = writable(&authorizer, &agent, &collection)?;
    let to = writable_or_new(&authorizer, &agent, &request.to_collection)?;
    let memory = memories.move_to(&from, &id, &to).await?;
    Ok(Json(signed_memory(&files, &agent.tenant_id, &memory).await))
}

/// Pins or unpins; pinned memories rank first in listings.
#[utoipa::path(post, path = "/{memory_id}/pin", tag = "memories",
    params(("collection" = String, Path), ("memory_id" = String, Path)), request_body = PinRequest,
    responses((status = 200, body = MemoryResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn pin(
    State(files): State<Files>,
    State(memories): State<Memories>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath((collection, id)): ApiPath<(String, String)>,
    ApiJson(request): ApiJson<PinRequest>,
) -> ApiResult<Json<MemoryResponse>> {
    let access = writable(&authorizer, &agent, &collection)?;
    let memory = memories.set_pinned(&access, &id, request.pinned).await?;
    Ok(Json(signed_memory(&files, &agent.tenant_id, &memory).await))
}

/// Archives (soft delete) or restores; archived memories leave default listings.
#[utoipa::path(post, path = "/{memory_id}/archive", tag = "memories",
    params(("collection" = String, Path), ("memory_id" = String, Path)), request_body = ArchiveRequest,
    responses((status = 200, body = MemoryResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn archive(
    State(files): State<Files>,
    State(memories): State<Memories>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath((collection, id)): ApiPath<(String, String)>,
    ApiJson(request): ApiJson<ArchiveRequest>,
) -> ApiResult<Json<MemoryResponse>> {
    let access = writable(&authorizer, &agent, &collection)?;
    let memory = memories
        .set_archived(&access, &id, request.archived)
        .await?;
    Ok(Json(signed_memory(&files, &agent.tenant_id, &memory).await))
}
