//! Billing on Stripe: `POST /v1/memory/stripe/checkout/create` and
//! `POST /v1/memory/stripe/portal` (owner key) create Stripe sessions and hand back their
//! URLs; `POST /v1/memory/stripe/webhook` (no key: Stripe signs it) applies
//! subscription events to the tenant's tier.
//!
//! Both session routes take an optional JSON body (an empty body or `{}` uses the
//! configured return addresses).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use memvault_accounts::{Billing, EventOutcome, ReturnUrls};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::Owner;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory/stripe`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(checkout).audit(Audit::Change("billing.checkout")))
        .routes(routes!(portal).audit(Audit::Change("billing.portal")))
        .routes(routes!(webhook).audit(Audit::NoTenantChange))
}

/// Where Stripe sends the customer after the checkout (optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckoutRequest {
    /// Default: `billing.success_url`.
    pub success_url: Option<String>,
    /// Default: `billing.cancel_url`.
    pub cancel_url: Option<String>,
}

/// Where the portal's "return" link goes (optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PortalRequest {
    /// Default: `billing.return_url`.
    pub return_url: Option<String>,
}

/// A Stripe session: send the customer to `url`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionResponse {
    /// Stripe's session id (`cs_...` or `bps_...`).
    pub id: String,
    pub url: String,
}

/// What the webhook did with an event.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookResponse {
    pub received: bool,
    /// `applied`, `duplicate` (this event id was handled before) or `ignored`.
    pub outcome: &'static str,
    /// The tenant's tier after an applied event.
    pub tier: Option<String>,
    pub detail: Option<String>,
}

/// An optional JSON body: empty means the defaults.
fn optional_body<T: DeserializeOwned + Default>(body: &Bytes) -> ApiResult<T> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body)
        .map_err(|error| ApiError::Validation(format!("invalid request body: {error}")))
}

fn check_url(name: &str, url: &Option<String>) -> ApiResult<()> {
    match url {
        Some(url)
            if url.len() > 2000
                || !(url.starts_with("https://") || url.starts_with("http://"))
                || reqwest::Url::parse(url).is_err() =>
        {
            Err(ApiError::Validation(format!(
                "{name} must be an absolute http(s) URL of at most 2000 characters"
            )))
        }
        _ => Ok(()),
    }
}

/// Creates a Stripe checkout session that subscribes the caller's account to the paid
/// plan (`billing.price_pro`) and returns its URL. Stripe's signed webhook upgrades the
/// tier once the customer has paid.
#[utoipa::path(post, path = "/checkout/create", tag = "billing",
    request_body(content = CheckoutRequest, description = "optional; an empty body uses the defaults"),
    responses((status = 200, body = SessionResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody),
        (status = 502, body = ErrorBody, description = "Stripe failed"),
        (status = 503, body = ErrorBody, description = "billing is not configured")),
    security(("bearer" = [])))]
pub async fn checkout(
    State(billing): State<Billing>,
    Owner(agent): Owner,
    body: Bytes,
) -> ApiResult<Json<SessionResponse>> {
    let request: CheckoutRequest = optional_body(&body)?;
    check_url("success_url", &request.success_url)?;
    check_url("cancel_url", &request.cancel_url)?;
    let urls = ReturnUrls {
        success_url: request.success_url,
        cancel_url: request.cancel_url,
        return_url: None,
    };
    let session = billing.checkout(&agent, urls).await?;
    Ok(Json(SessionResponse {
        id: session.id,
        url: session.url,
    }))
}

/// Creates a Stripe billing-portal session for the caller's account (to change or cancel
/// the subscription, see invoices) and returns its URL. 409 before a first checkout.
#[utoipa::path(post, path = "/portal", tag = "billing",
    request_body(content = PortalRequest, description = "optional; an empty body uses the default"),
    responses((status = 200, body = SessionResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 409, body = ErrorBody, description = "no Stripe customer yet"),
        (status = 422, body = ErrorBody),
        (status = 502, body = ErrorBody, description = "Stripe failed"),
        (status = 503, body = ErrorBody, description = "billing is not configured")),
    security(("bearer" = [])))]
pub async fn portal(
    State(billing): State<Billing>,
    Owner(agent): Owner,
    body: Bytes,
) -> ApiResult<Json<SessionResponse>> {
    let request: PortalRequest = optional_body(&body)?;
    check_url("return_url", &request.return_url)?;
    let urls = ReturnUrls {
        return_url: request.return_url,
        ..ReturnUrls::default()
    };
    let session = billing.portal(&agent, urls).await?;
    Ok(Json(SessionResponse {
        id: session.id,
        url: session.url,
    }))
}

/// Stripe's webhook (no API key: the `Stripe-Signature` header, HMAC-SHA256 under
/// `billing.webhook_secret`, 5-minute tolerance). Handles each event id once:
/// `checkout.session.completed` upgrades, `customer.subscription.updated` follows the
/// subscription's status, `customer.subscription.deleted` downgrades; other types are
/// acknowledged. A bad signature is 400 and changes nothing.
#[utoipa::path(post, path = "/webhook", tag = "billing",
    request_body(content = String, content_type = "application/json", description = "a Stripe event, exactly as Stripe sent it"),
    params(("Stripe-Signature" = Option<String>, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"{t}.{body}\">")),
    responses((status = 200, body = WebhookResponse), (status = 400, body = ErrorBody, description = "bad signature"),
        (status = 422, body = ErrorBody, description = "a signed body that is not a Stripe event"),
        (status = 503, body = ErrorBody, description = "no webhook secret configured")))]
pub async fn webhook(
    State(billing): State<Billing>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<WebhookResponse>> {
    let signature = headers
        .get("stripe-signature")
        .and_then(|value| value.to_str().ok());
    let outcome = billing.handle_event(&body, signature).await?;
    let (outcome, tier, detail) = match outcome {
        EventOutcome::Applied { tier, .. } => ("applied", Some(tier), None),
        EventOutcome::Duplicate => ("duplicate", None, None),
        EventOutcome::Ignored(reason) => ("ignored", None, Some(reason)),
    };
    Ok(Json(WebhookResponse {
        received: true,
        outcome,
        tier,
        detail,
    }))
}
