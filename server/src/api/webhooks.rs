//! The tenant's outbound webhook: `GET/PUT/DELETE /v1/memory/webhook/config`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::service::WebhookView;
use memvault_core::Settings;
use memvault_webhooks::EVENTS;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Owner};
use super::extract::ApiJson;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory/webhook`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(fetch))
        .routes(routes!(put).audit(Audit::Change("webhook.set")))
        .routes(routes!(remove).audit(Audit::Change("webhook.delete")))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfigRequest {
    /// An http(s) URL, at most 2048 characters, without credentials. Loopback, private,
    /// link-local and metadata addresses are refused (also after DNS resolution) unless
    /// the server allows private targets. Stored and shown in normalized form (e.g. a
    /// lowercase host, `/` for an empty path).
    pub url: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookConfigResponse {
    pub url: String,
    /// The events POSTed to the URL.
    pub events: Vec<String>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NewWebhookResponse {
    pub url: String,
    /// The signing secret, shown only in this response. Each delivery carries
    /// `X-Service-Signature`: lowercase hex HMAC-SHA256 of the raw body, keyed by this
    /// whole string (`whsec_` prefix included).
    pub secret: String,
    pub events: Vec<String>,
    pub created_at: DateTime<Utc>,
}

fn events() -> Vec<String> {
    EVENTS.iter().map(|event| (*event).to_owned()).collect()
}

impl From<WebhookView> for WebhookConfigResponse {
    fn from(view: WebhookView) -> Self {
        Self {
            url: view.url,
            events: events(),
            created_at: view.created_at,
        }
    }
}

/// The tenant's webhook, without its secret.
#[utoipa::path(get, path = "/config", tag = "webhooks",
    responses((status = 200, body = WebhookConfigResponse), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn fetch(
    State(settings): State<Settings>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<WebhookConfigResponse>> {
    let view = settings
        .webhook_config(&agent.tenant_id)?
        .ok_or_else(not_configured)?;
    Ok(Json(view.into()))
}

/// Sets (or replaces) the webhook. A new signing secret is generated each time and shown
/// only in this response. memory.created, memory.updated and memory.deleted are then
/// POSTed to the URL (5 s timeout, retried with back-off).
#[utoipa::path(put, path = "/config", tag = "webhooks",
    request_body = WebhookConfigRequest,
    responses((status = 200, body = NewWebhookResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put(
    State(settings): State<Settings>,
    Owner(agent): Owner,
    ApiJson(request): ApiJson<WebhookConfigRequest>,
) -> ApiResult<Json<NewWebhookResponse>> {
    let created = settings.set_webhook(&agent.tenant_id, &request.url).await?;
    Ok(Json(NewWebhookResponse {
        url: created.view.url,
        secret: created.secret,
        events: events(),
        created_at: created.view.created_at,
    }))
}

/// Removes the webhook; events not yet delivered are dropped.
#[utoipa::path(delete, path = "/config", tag = "webhooks",
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn remove(
    State(settings): State<Settings>,
    Owner(agent): Owner,
) -> ApiResult<StatusCode> {
    if settings.delete_webhook(&agent.tenant_id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_configured())
    }
}

fn not_configured() -> ApiError {
    ApiError::WebhookNotFound
}
