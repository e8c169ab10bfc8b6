//! API keys and agents: `GET/POST /v1/memory/keys`, `DELETE /v1/memory/keys/{key_id}`,
//! `GET /v1/memory/agents`, `POST /v1/memory/admin/rotate-key`. Secrets appear only in the
//! answer that creates them.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::memory::validate_short_field;
use memvault_core::service::NewKey;
use memvault_core::Keys;
use memvault_storage::ApiKeyRecord;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Owner};
use super::extract::{ApiJson, ApiPath};
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(create).audit(Audit::Change("key.create")))
        .routes(routes!(revoke).audit(Audit::Change("key.revoke")))
        .routes(routes!(agents))
}

/// Nested at `/v1/memory/admin`.
pub fn admin_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(rotate).audit(Audit::Change("key.rotate")))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyRequest {
    /// Names the agent; stamped as `created_by.label` on its writes. 1 to 200 characters,
    /// not only whitespace.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"[^\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
    )]
    pub label: String,
    /// A read-only key searches and reads but every write answers 403. Default false.
    #[serde(default)]
    pub read_only: bool,
    /// When the key stops working (RFC 3339, in the future); default never.
    pub expires_at: Option<DateTime<Utc>>,
}

/// A key as listed: no secret, only its first characters.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyResponse {
    /// The agent identity id (`created_by.id`).
    pub id: String,
    pub label: String,
    pub read_only: bool,
    /// The tenant's owner key: manages keys, grants, webhooks and settings; grants do not
    /// restrict it.
    pub owner: bool,
    /// The secret's first characters followed by `…`.
    pub masked: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// Not revoked and not expired.
    pub active: bool,
}

impl From<&ApiKeyRecord> for KeyResponse {
    fn from(key: &ApiKeyRecord) -> Self {
        Self {
            id: key.id.clone(),
            label: key.label.clone(),
            read_only: key.read_only,
            owner: key.owner,
            masked: format!("{}…", key.display_prefix),
            created_at: key.created_at,
            expires_at: key.expires_at,
            revoked_at: key.revoked_at,
            active: key.is_active(Utc::now()),
        }
    }
}

/// A new key with its secret, shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct NewKeyResponse {
    /// The secret (`mv_...`); only its SHA-256 is kept, so it cannot be shown again.
    pub key: String,
    #[serde(flatten)]
    pub details: KeyResponse,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyListResponse {
    pub keys: Vec<KeyResponse>,
}

/// An agent: the identity behind an active key.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentResponse {
    pub id: String,
    pub label: String,
    pub read_only: bool,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AgentListResponse {
    pub agents: Vec<AgentResponse>,
}

/// Creates a key of the caller's tenant; the secret is in this answer only. Read-only
/// keys cannot create keys.
#[utoipa::path(post, path = "/keys", tag = "keys", request_body = CreateKeyRequest,
    responses((status = 201, body = NewKeyResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(keys): State<Keys>,
    Owner(agent): Owner,
    ApiJson(request): ApiJson<CreateKeyRequest>,
) -> ApiResult<(StatusCode, Json<NewKeyResponse>)> {
    let label = request.label.trim().to_owned();
    validate_short_field("label", &label).map_err(ApiError::Validation)?;
    if let Some(expiry) = request.expires_at {
        if expiry <= Utc::now() {
            return Err(ApiError::Validation(format!(
                "expires_at must be in the future, got {expiry}"
            )));
        }
    }
    let (key, secret) = keys
        .create(
            &agent,
            NewKey {
                label,
                read_only: request.read_only,
                expires_at: request.expires_at,
            },
        )
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(NewKeyResponse {
            key: secret,
            details: KeyResponse::from(&*key),
        }),
    ))
}

/// Every key of the tenant, revoked and expired ones included, masked, oldest first.
#[utoipa::path(get, path = "/keys", tag = "keys",
    responses((status = 200, body = KeyListResponse), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(keys): State<Keys>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<KeyListResponse>> {
    let keys = keys.list(&agent.tenant_id)?;
    Ok(Json(KeyListResponse {
        keys: keys.iter().map(|key| KeyResponse::from(&**key)).collect(),
    }))
}

/// Revokes a key (soft: it stays listed, with `revoked_at`); it stops authenticating at
/// once. The tenant's last active key cannot be revoked (409).
#[utoipa::path(delete, path = "/keys/{key_id}", tag = "keys",
    params(("key_id" = String, Path)),
    responses((status = 200, body = KeyResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn revoke(
    State(keys): State<Keys>,
    Owner(agent): Owner,
    ApiPath(key_id): ApiPath<String>,
) -> ApiResult<Json<KeyResponse>> {
    let key = keys.revoke(&agent, &key_id).await?;
    Ok(Json(KeyResponse::from(&*key)))
}

/// The tenant's agents: one per active key, without key material.
#[utoipa::path(get, path = "/agents", tag = "keys",
    responses((status = 200, body = AgentListResponse), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn agents(
    State(keys): State<Keys>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<AgentListResponse>> {
    let now = Utc::now();
    let keys = keys.list(&agent.tenant_id)?;
    Ok(Json(AgentListResponse {
        agents: keys
            .iter()
            .filter(|key| key.is_active(now))
            .map(|key| AgentResponse {
                id: key.id.clone(),
                label: key.label.clone(),
                read_only: key.read_only,
                created_at: key.created_at,
            })
            .collect(),
    }))
}

/// Replaces the key making this request with a new one (same label, access and expiry),
/// shown once; the old key is refused from the moment this answers.
#[utoipa::path(post, path = "/rotate-key", tag = "keys",
    responses((status = 200, body = NewKeyResponse), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn rotate(
    State(keys): State<Keys>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<NewKeyResponse>> {
    let (key, secret) = keys.rotate(&agent).await?;
    Ok(Json(NewKeyResponse {
        key: secret,
        details: KeyResponse::from(&*key),
    }))
}
