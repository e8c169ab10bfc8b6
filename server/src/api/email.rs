//! Mail-in, nested at `/v1/memory/email`: the tenant's drop address
//! (`GET/PUT /address`, `POST /address/rotate`), its sender allowlist (`GET/PUT /senders`)
//! and the relay's handoff of one raw message (`POST /inbound`, a shared secret instead
//! of an API key; DESIGN.md runtime contract, Email-in).

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use memvault_accounts::{DropAddress, Email, Inbound};
use memvault_core::AuditTrail;
use memvault_storage::AuditEntry;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Owner};
use super::collections::collection_to_write;
use super::extract::{ApiJson, RawBody};
use super::internal::secrets_match;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// The header that carries the relay's shared secret.
pub const SECRET_HEADER: &str = "x-memvault-inbound-secret";
/// The header in which the relay names the envelope recipient.
pub const RECIPIENT_HEADER: &str = "x-memvault-recipient";
/// The largest message the handoff takes (a 25 MB mail, as common providers cap it).
pub const INBOUND_MAX_BYTES: usize = 25 * 1024 * 1024;

/// Nested at `/v1/memory/email`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(address))
        .routes(routes!(set_collection).audit(Audit::Change("email.address.update")))
        .routes(routes!(rotate).audit(Audit::Change("email.address.rotate")))
        .routes(routes!(senders))
        .routes(routes!(set_senders).audit(Audit::Change("email.senders.update")))
        .merge(
            // No key: the handler records the accepted mail under the tenant it reached.
            OpenApiRouter::new()
                .routes(routes!(inbound).audit(Audit::ByHandler))
                .layer(DefaultBodyLimit::max(INBOUND_MAX_BYTES)),
        )
}

/// The shared secret of the handoff (`email.inbound_secret`); `None`: mail-in is off.
#[derive(Clone, Default)]
pub struct InboundSecret(pub Option<Arc<str>>);

impl std::fmt::Debug for InboundSecret {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_tuple("InboundSecret")
            .field(&self.0.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// The relay, proven by the shared secret: checked from the headers, before the body is
/// read. 503 when the server has no secret, 401 when it is missing or wrong.
pub struct Relay;

impl FromRequestParts<AppState> for Relay {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        check_relay(&parts.headers, &state.inbound_secret)
    }
}

pub fn check_relay(headers: &HeaderMap, secret: &InboundSecret) -> ApiResult<Relay> {
    let expected = secret
        .0
        .as_deref()
        .filter(|secret| !secret.is_empty())
        .ok_or(ApiError::InboundNotConfigured)?;
    let given = headers
        .get(SECRET_HEADER)
        .map(|value| value.as_bytes())
        .unwrap_or_default();
    if secrets_match(given, expected) {
        Ok(Relay)
    } else {
        Err(ApiError::InboundSecretInvalid)
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DropAddressResponse {
    /// The private drop address: `mv-` and 26 random characters at the server's mail-in
    /// domain. Mail to it from an allowed, authenticated sender is stored.
    pub address: String,
    /// Where accepted mail is stored (default `email`; created on the first mail).
    pub collection: String,
}

impl From<DropAddress> for DropAddressResponse {
    fn from(view: DropAddress) -> Self {
        Self {
            address: view.address,
            collection: view.collection.as_str().to_owned(),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DropCollectionRequest {
    /// The collection accepted mail goes to from now on (a valid collection name; it is
    /// created on the first mail).
    #[schema(max_length = 128, pattern = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")]
    pub collection: String,
}

/// An allowlist entry as the server takes it: an address or `@domain`, around spaces.
const SENDER_PATTERN: &str = r"^[ \t\r\n]*([A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*)?@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+[ \t\r\n]*$";

/// The allowlist's schema: at most 100 entries, each [`SENDER_PATTERN`].
fn sender_list() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(SENDER_PATTERN)),
        )
        .max_items(Some(100))
        .build()
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendersBody {
    /// Who may send to the drop address: addresses (`friend@example.org`) and whole
    /// domains (`@example.org`, that domain exactly), at most 100, compared without case.
    /// Before any PUT: the account email alone.
    #[schema(schema_with = sender_list)]
    pub senders: Vec<String>,
}

/// The tenant's drop address and its target collection; created on first use.
#[utoipa::path(get, path = "/address", tag = "email",
    responses((status = 200, body = DropAddressResponse), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn address(
    State(email): State<Email>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<DropAddressResponse>> {
    Ok(Json(email.address(&agent.tenant_id).await?.into()))
}

/// Sets the collection accepted mail goes to (the address stays). Owner key only.
#[utoipa::path(put, path = "/address", tag = "email",
    request_body = DropCollectionRequest,
    responses((status = 200, body = DropAddressResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn set_collection(
    State(email): State<Email>,
    Owner(agent): Owner,
    ApiJson(request): ApiJson<DropCollectionRequest>,
) -> ApiResult<Json<DropAddressResponse>> {
    let collection = collection_to_write(&request.collection)?;
    Ok(Json(
        email
            .set_collection(&agent.tenant_id, collection)
            .await?
            .into(),
    ))
}

/// A new drop address (same domain and collection); the old one stops working at once
/// (mail to it is dropped as `unknown_recipient`). Owner key only.
#[utoipa::path(post, path = "/address/rotate", tag = "email",
    responses((status = 200, body = DropAddressResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn rotate(
    State(email): State<Email>,
    Owner(agent): Owner,
) -> ApiResult<Json<DropAddressResponse>> {
    Ok(Json(email.rotate(&agent.tenant_id).await?.into()))
}

/// The sender allowlist.
#[utoipa::path(get, path = "/senders", tag = "email",
    responses((status = 200, body = SendersBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn senders(
    State(email): State<Email>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<SendersBody>> {
    let senders = email.senders(&agent.tenant_id)?;
    Ok(Json(SendersBody { senders }))
}

/// Replaces the sender allowlist (422 for an entry that is neither an address nor an
/// `@domain`, or more than 100). Owner key only.
#[utoipa::path(put, path = "/senders", tag = "email",
    request_body = SendersBody,
    responses((status = 200, body = SendersBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn set_senders(
    State(email): State<Email>,
    Owner(agent): Owner,
    ApiJson(request): ApiJson<SendersBody>,
) -> ApiResult<Json<SendersBody>> {
    let senders = email.set_senders(&agent.tenant_id, request.senders).await?;
    Ok(Json(SendersBody { senders }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InboundAccepted {
    /// Always true.
    pub accepted: bool,
    /// The ingest batch of the message's parts: `GET /v1/memory/ingest/batch/{batch_id}`.
    pub batch_id: String,
    pub collection: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InboundDropped {
    /// Always false: the message was dropped on purpose (no retry helps).
    pub accepted: bool,
    /// `unknown_recipient` (no drop address, or a rotated one), `sender_not_allowed`,
    /// `sender_not_authenticated` (no passing DMARC, aligned DKIM or SPF verdict of the
    /// relay for the sender's domain), `duplicate` (this Message-ID was taken already),
    /// `empty_message` (no body or attachment with content).
    pub reason: String,
}

/// The relay's handoff of one raw RFC 822 message (`Content-Type: message/rfc822`,
/// at most 25 MB). Takes the shared secret `email.inbound_secret` in
/// `X-Memvault-Inbound-Secret`, not an API key: 401 without it, 503 when the server has
/// none. The recipient is `X-Memvault-Recipient` when given, else the message's
/// `Delivered-To`, `To` and `Cc`. 202 with the ingest batch when accepted; 200 with
/// `accepted: false` and a reason when dropped on purpose; 422 for a body that is no
/// message.
#[utoipa::path(post, path = "/inbound", tag = "email",
    params(("X-Memvault-Inbound-Secret" = String, Header,
            description = "the shared secret, email.inbound_secret"),
        ("X-Memvault-Recipient" = Option<String>, Header,
            description = "the envelope recipient (the drop address), when the relay knows it")),
    request_body(content = Vec<u8>, content_type = "message/rfc822"),
    responses((status = 202, body = InboundAccepted), (status = 200, body = InboundDropped),
        (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn inbound(
    State(email): State<Email>,
    State(audit): State<AuditTrail>,
    _relay: Relay,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<Response> {
    let recipient = headers
        .get(RECIPIENT_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|value| !value.is_empty());
    Ok(match email.inbound(body, recipient).await? {
        Inbound::Accepted {
            tenant,
            batch_id,
            collection,
        } => {
            record_accepted(&audit, tenant, &batch_id);
            let body = InboundAccepted {
                accepted: true,
                batch_id,
                collection: collection.as_str().to_owned(),
            };
            (StatusCode::ACCEPTED, Json(body)).into_response()
        }
        Inbound::Dropped { tenant, reason } => {
            tracing::info!(reason, tenant = ?tenant.map(|id| id.to_string()), "inbound mail dropped");
            let body = InboundDropped {
                accepted: false,
                reason: reason.to_owned(),
            };
            (StatusCode::OK, Json(body)).into_response()
        }
    })
}

/// The tenant's audit log shows each accepted mail (no key made the request).
fn record_accepted(audit: &AuditTrail, tenant: memvault_storage::TenantId, batch_id: &str) {
    audit.record(AuditEntry {
        id: uuid::Uuid::now_v7().to_string(),
        tenant_id: tenant,
        at: audit.now(),
        agent_id: memvault_core::service::MAIL_INTAKE_ID.to_owned(),
        agent_label: "mail-in".to_owned(),
        action: "email.inbound".to_owned(),
        method: "POST".to_owned(),
        resource: format!("/v1/memory/ingest/batch/{batch_id}"),
        status: 202,
        outcome: "success".to_owned(),
        // The relay handed the mail over; its address says nothing about the sender.
        client_address: None,
    });
}
