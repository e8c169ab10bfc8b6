//! `/v1/memory/collections`: list, create, get, update, delete.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::memory::validate_metadata;
use memvault_core::service::{CollectionAccess, CollectionView, Read, Sweep, Write};
use memvault_core::Agent;
use memvault_core::{Authorizer, Collections};
use memvault_storage::CollectionName;
use memvault_types::limits::DESCRIPTION_MAX_CHARS;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Writer};
use super::extract::{ApiJson, ApiPath};
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory/collections`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(create).audit(Audit::Change("collection.create")))
        .routes(routes!(fetch))
        .routes(routes!(update).audit(Audit::Change("collection.update")))
        .routes(routes!(remove).audit(Audit::Change("collection.delete")))
}

/// A collection name from a path that must exist: a name that cannot exist is simply not
/// found.
fn existing_collection(raw: &str) -> ApiResult<CollectionName> {
    CollectionName::parse(raw).map_err(|_| ApiError::CollectionNotFound(raw.to_owned()))
}

/// A collection name for writing (which may create it): an invalid name is a 422.
pub fn collection_to_write(raw: &str) -> ApiResult<CollectionName> {
    CollectionName::parse(raw).map_err(ApiError::Validation)
}

// Every handler that names a collection gets it through one of these three (or, for
// health and summary, which answer an unknown name with `exists: false`, calls
// `authorize` itself), so no handler skips the grant check: the parsers above are private.

/// A collection the agent may read: 404 for a name that cannot exist, 403 when it is
/// restricted and the agent has no grant with `can_read`.
pub fn readable(
    authorizer: &Authorizer,
    agent: &Agent,
    raw: &str,
) -> ApiResult<CollectionAccess<Read>> {
    let name = existing_collection(raw)?;
    Ok(authorizer.authorize(agent, name)?)
}

/// An existing collection the agent may change: 403 for read-only keys and for agents
/// without a `can_write` grant on a restricted collection.
pub fn writable(
    authorizer: &Authorizer,
    agent: &Agent,
    raw: &str,
) -> ApiResult<CollectionAccess<Write>> {
    let name = existing_collection(raw)?;
    Ok(authorizer.authorize(agent, name)?)
}

/// A collection the agent may write into, created when missing: an invalid name is 422.
pub fn writable_or_new(
    authorizer: &Authorizer,
    agent: &Agent,
    raw: &str,
) -> ApiResult<CollectionAccess<Write>> {
    let name = collection_to_write(raw)?;
    Ok(authorizer.authorize(agent, name)?)
}

/// An existing collection the agent may sweep (dedup, archive-stale): read access for a
/// dry run, write access to apply.
pub fn sweepable(
    authorizer: &Authorizer,
    agent: &Agent,
    raw: &str,
    dry_run: bool,
) -> ApiResult<Sweep> {
    let name = existing_collection(raw)?;
    Ok(authorizer.authorize_sweep(agent, name, dry_run)?)
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CollectionResponse {
    pub name: String,
    pub description: Option<String>,
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
    /// Memories in the collection, archived ones included.
    pub memory_count: usize,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<CollectionView> for CollectionResponse {
    fn from(view: CollectionView) -> Self {
        let record = &*view.record;
        Self {
            name: record.name.to_string(),
            description: record.description.clone(),
            metadata: record.metadata.clone(),
            memory_count: view.memory_count,
            created_at: record.created_at,
            updated_at: record.updated_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateCollectionRequest {
    /// 1 to 128 characters of letters, digits, `_`, `-` and `.`; not starting with `.`.
    #[schema(max_length = 128, pattern = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")]
    pub name: String,
    /// At most 2000 characters.
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

/// Changes the given fields; a field left out keeps its value.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateCollectionRequest {
    /// At most 2000 characters.
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

fn validate_description(description: Option<&String>) -> ApiResult<()> {
    match description {
        Some(text) if text.chars().count() > DESCRIPTION_MAX_CHARS => Err(ApiError::Validation(
            format!("description must be at most {DESCRIPTION_MAX_CHARS} characters"),
        )),
        _ => Ok(()),
    }
}

fn validate_optional_metadata(metadata: Option<&Map<String, Value>>) -> ApiResult<()> {
    metadata
        .map(validate_metadata)
        .transpose()
        .map_err(ApiError::Validation)?;
    Ok(())
}

/// Every collection of the tenant the key may read, with its memory count.
#[utoipa::path(get, path = "", tag = "collections",
    responses((status = 200, body = Vec<CollectionResponse>), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(collections): State<Collections>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<Vec<CollectionResponse>>> {
    let views = collections.list(&agent)?;
    Ok(Json(
        views.into_iter().map(CollectionResponse::from).collect(),
    ))
}

/// Creates a collection (collections are also created on first write).
#[utoipa::path(post, path = "", tag = "collections",
    request_body = CreateCollectionRequest,
    responses((status = 201, body = CollectionResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 409, body = ErrorBody, description = "exists already"),
        (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(authorizer): State<Authorizer>,
    State(collections): State<Collections>,
    Writer(agent): Writer,
    ApiJson(request): ApiJson<CreateCollectionRequest>,
) -> ApiResult<(StatusCode, Json<CollectionResponse>)> {
    let access = authorizer.authorize(&agent, collection_to_write(&request.name)?)?;
    validate_description(request.description.as_ref())?;
    validate_optional_metadata(request.metadata.as_ref())?;
    let view = collections
        .create(
            &access,
            request.description,
            request.metadata.unwrap_or_default(),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(view.into())))
}

#[utoipa::path(get, path = "/{collection}", tag = "collections",
    params(("collection" = String, Path)),
    responses((status = 200, body = CollectionResponse), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn fetch(
    State(collections): State<Collections>,
    State(authorizer): State<Authorizer>,
    Authenticated(agent): Authenticated,
    ApiPath(collection): ApiPath<String>,
) -> ApiResult<Json<CollectionResponse>> {
    let access = readable(&authorizer, &agent, &collection)?;
    Ok(Json(collections.get(&access)?.into()))
}

/// Updates description and/or metadata of an existing collection.
#[utoipa::path(put, path = "/{collection}", tag = "collections",
    params(("collection" = String, Path)), request_body = UpdateCollectionRequest,
    responses((status = 200, body = CollectionResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn update(
    State(collections): State<Collections>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(collection): ApiPath<String>,
    ApiJson(request): ApiJson<UpdateCollectionRequest>,
) -> ApiResult<Json<CollectionResponse>> {
    let access = writable(&authorizer, &agent, &collection)?;
    validate_description(request.description.as_ref())?;
    validate_optional_metadata(request.metadata.as_ref())?;
    let view = collections
        .update(&access, request.description, request.metadata)
        .await?;
    Ok(Json(view.into()))
}

/// Deletes the collection and all its memories.
#[utoipa::path(delete, path = "/{collection}", tag = "collections",
    params(("collection" = String, Path)),
    responses((status = 204, description = "deleted"), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn remove(
    State(collections): State<Collections>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(collection): ApiPath<String>,
) -> ApiResult<StatusCode> {
    let access = writable(&authorizer, &agent, &collection)?;
    collections.delete(&access).await?;
    Ok(StatusCode::NO_CONTENT)
}
