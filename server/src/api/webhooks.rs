//! The tenant's outbound webhook: `GET/PUT/DELETE /v1/memory/webhook/config`, and what
//! became of its events: `GET /v1/memory/webhook/deliveries`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::service::WebhookView;
use memvault_core::Settings;
use memvault_webhooks::{AttemptRecord, EVENTS};
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
        .routes(routes!(deliveries))
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

/// One attempt to POST an event.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryAttemptResponse {
    /// The delivery's id: `X-Service-Delivery` and the body's `id`, the same on every
    /// attempt of one event.
    pub delivery_id: String,
    pub event: String,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// When the attempt ended.
    pub at: DateTime<Utc>,
    pub duration_ms: u64,
    /// `delivered` (2xx), `retrying` (failed; another attempt follows) or `failed` (the
    /// last attempt failed: the event is dropped).
    pub outcome: String,
    /// Why it failed: the receiver's status or the transport error.
    pub reason: Option<String>,
}

/// An event waiting for its first or next attempt.
#[derive(Debug, Serialize, ToSchema)]
pub struct PendingDeliveryResponse {
    pub delivery_id: String,
    pub event: String,
    /// Attempts made so far.
    pub attempts: u32,
    pub next_attempt_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookDeliveriesResponse {
    /// The latest attempts, newest first: at most 50, kept in memory by the node that
    /// sends the account's events (a restart starts an empty list).
    pub attempts: Vec<DeliveryAttemptResponse>,
    /// Events still to be delivered, oldest first (the outbox, which survives restarts).
    pub pending: Vec<PendingDeliveryResponse>,
}

impl From<&AttemptRecord> for DeliveryAttemptResponse {
    fn from(attempt: &AttemptRecord) -> Self {
        Self {
            delivery_id: attempt.delivery.clone(),
            event: attempt.event.clone(),
            attempt: attempt.attempt,
            at: attempt.at,
            duration_ms: attempt.millis,
            outcome: attempt.outcome.as_str().to_owned(),
            reason: attempt.outcome.reason().map(str::to_owned),
        }
    }
}

/// What became of the webhook's events: the latest attempts with their outcome, and the
/// events still waiting in the outbox. Owner keys only.
#[utoipa::path(get, path = "/deliveries", tag = "webhooks",
    responses((status = 200, body = WebhookDeliveriesResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn deliveries(
    State(settings): State<Settings>,
    Owner(agent): Owner,
) -> ApiResult<Json<WebhookDeliveriesResponse>> {
    let view = settings.webhook_deliveries(&agent.tenant_id).await?;
    Ok(Json(WebhookDeliveriesResponse {
        attempts: view
            .recent
            .iter()
            .map(DeliveryAttemptResponse::from)
            .collect(),
        pending: view
            .pending
            .into_iter()
            .map(|delivery| PendingDeliveryResponse {
                delivery_id: delivery.id,
                event: delivery.event,
                attempts: delivery.attempts,
                next_attempt_at: delivery.next_attempt_at,
                created_at: delivery.created_at,
            })
            .collect(),
    }))
}

fn not_configured() -> ApiError {
    ApiError::WebhookNotFound
}
