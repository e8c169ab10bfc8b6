//! Collection grants: `PUT/GET /v1/memory/collections/{collection}/grants` and
//! `DELETE .../grants/{agent_key_id}`. Zero grants = open to every key of the tenant; with
//! grants only the granted agents (and the owner key) get in. Changing grants needs the
//! owner key.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::service::CollectionGrants;
use memvault_core::{Authorizer, Collections, Keys};
use memvault_storage::ApiKeyRecord;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Owner};
use super::collections::{readable, writable};
use super::extract::{ApiJson, ApiPath};
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory/collections/{collection}/grants`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(upsert).audit(Audit::Change("grant.put")))
        .routes(routes!(list))
        .routes(routes!(remove).audit(Audit::Change("grant.delete")))
}

/// Longest agent key id accepted (ours are `key_` + 20 hex characters).
const AGENT_KEY_ID_MAX_CHARS: usize = 100;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GrantRequest {
    /// The agent's key id, as listed by `GET /v1/memory/agents`.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"[^\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
    )]
    pub agent_key_id: String,
    pub can_read: bool,
    pub can_write: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct GrantResponse {
    pub agent_key_id: String,
    /// The agent's label; null when the key no longer exists.
    pub label: Option<String>,
    pub can_read: bool,
    pub can_write: bool,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct GrantsResponse {
    pub collection: String,
    /// True with one or more grants: agents without a grant get 403 and tenant-wide search
    /// leaves the collection out.
    pub restricted: bool,
    pub grants: Vec<GrantResponse>,
}

fn response(keys: &[Arc<ApiKeyRecord>], grants: CollectionGrants) -> GrantsResponse {
    let label = |id: &str| {
        keys.iter()
            .find(|key| key.id == id)
            .map(|key| key.label.clone())
    };
    GrantsResponse {
        collection: grants.collection.to_string(),
        restricted: grants.restricted(),
        grants: grants
            .grants
            .into_iter()
            .map(|grant| GrantResponse {
                label: label(&grant.agent_key_id),
                agent_key_id: grant.agent_key_id,
                can_read: grant.can_read,
                can_write: grant.can_write,
                updated_at: grant.updated_at,
            })
            .collect(),
    }
}

/// Creates or updates one agent's grant; the first grant restricts the collection.
#[utoipa::path(put, path = "", tag = "grants",
    params(("collection" = String, Path)), request_body = GrantRequest,
    responses((status = 200, body = GrantsResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "not the owner key"),
        (status = 404, body = ErrorBody, description = "no such collection"),
        (status = 409, body = ErrorBody, description = "the key is revoked or expired"),
        (status = 422, body = ErrorBody, description = "an invalid body, or agent_key_id names no key of this tenant")),
    security(("bearer" = [])))]
pub async fn upsert(
    State(collections): State<Collections>,
    State(keys): State<Keys>,
    State(authorizer): State<Authorizer>,
    Owner(agent): Owner,
    ApiPath(collection): ApiPath<String>,
    ApiJson(request): ApiJson<GrantRequest>,
) -> ApiResult<Json<GrantsResponse>> {
    let access = writable(&authorizer, &agent, &collection)?;
    let agent_key_id = request.agent_key_id.trim().to_owned();
    if agent_key_id.is_empty() || agent_key_id.chars().count() > AGENT_KEY_ID_MAX_CHARS {
        return Err(ApiError::Validation(format!(
            "agent_key_id must be 1 to {AGENT_KEY_ID_MAX_CHARS} characters"
        )));
    }
    // The collection first: another tenant's (or a missing) one is 404 whatever the body.
    collections.grants(&access)?;
    // A key the body names that does not exist is invalid input (422), not a missing
    // target: the URL's collection is there, and 404 would say it is not.
    let tenant_keys = keys.list(&agent.tenant_id)?;
    if !tenant_keys.iter().any(|key| key.id == agent_key_id) {
        return Err(ApiError::Validation(format!(
            "agent_key_id '{agent_key_id}' is no API key of this tenant (see GET \
             /v1/memory/agents)"
        )));
    }
    let grants = collections
        .put_grant(&access, agent_key_id, request.can_read, request.can_write)
        .await?;
    Ok(Json(response(&tenant_keys, grants)))
}

/// The collection's grants; an empty list means the collection is open.
#[utoipa::path(get, path = "", tag = "grants",
    params(("collection" = String, Path)),
    responses((status = 200, body = GrantsResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(collections): State<Collections>,
    State(authorizer): State<Authorizer>,
    State(keys): State<Keys>,
    Authenticated(agent): Authenticated,
    ApiPath(collection): ApiPath<String>,
) -> ApiResult<Json<GrantsResponse>> {
    let access = readable(&authorizer, &agent, &collection)?;
    let grants = collections.grants(&access)?;
    Ok(Json(response(&keys.list(&agent.tenant_id)?, grants)))
}

/// Removes one agent's grant; removing the last grant reopens the collection.
#[utoipa::path(delete, path = "/{agent_key_id}", tag = "grants",
    params(("collection" = String, Path), ("agent_key_id" = String, Path)),
    responses((status = 204, description = "removed"), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn remove(
    State(collections): State<Collections>,
    State(authorizer): State<Authorizer>,
    Owner(agent): Owner,
    ApiPath((collection, agent_key_id)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    let access = writable(&authorizer, &agent, &collection)?;
    collections.delete_grant(&access, &agent_key_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
