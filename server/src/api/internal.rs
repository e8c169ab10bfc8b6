//! Endpoints for memvault's own other processes, authenticated by a shared secret instead
//! of a tenant key: `POST /v1/memory/_internal/embed` (DESIGN.md runtime contract).

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use memvault_core::Internal;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::extract::ApiJson;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// The header that carries the shared secret.
pub const SECRET_HEADER: &str = "x-memvault-internal-secret";
/// Texts one call embeds.
pub const EMBED_MAX_TEXTS: usize = 256;
/// Characters of one text.
pub const EMBED_MAX_CHARS: usize = 32_000;

/// Nested at `/v1/memory`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(embed).audit(Audit::NoTenantChange))
}

/// The secrets the internal endpoints take; `None`: that endpoint is off.
#[derive(Clone, Default)]
pub struct InternalSecrets {
    pub embed: Option<Arc<str>>,
}

impl std::fmt::Debug for InternalSecrets {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("InternalSecrets")
            .field("embed", &self.embed.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Whether the request carries `expected` in [`SECRET_HEADER`]. The two are compared as
/// SHA-256 digests in constant time, so neither their bytes nor their lengths leak.
pub fn check_secret(headers: &HeaderMap, expected: Option<&str>, what: &str) -> ApiResult<()> {
    let expected = expected
        .filter(|secret| !secret.is_empty())
        .ok_or_else(|| {
            ApiError::InternalNotConfigured(format!(
                "{what} is off: the server has no shared secret for it (internal.embed_secret)"
            ))
        })?;
    let given = headers
        .get(SECRET_HEADER)
        .map(|value| value.as_bytes())
        .unwrap_or_default();
    if secrets_match(given, expected) {
        Ok(())
    } else {
        Err(ApiError::InternalSecretInvalid)
    }
}

/// Whether a presented shared secret is the expected one. The two are compared as SHA-256
/// digests in constant time, so neither their bytes nor their lengths leak.
pub fn secrets_match(given: &[u8], expected: &str) -> bool {
    let (given, expected) = (Sha256::digest(given), Sha256::digest(expected.as_bytes()));
    given
        .iter()
        .zip(expected.iter())
        .fold(0u8, |difference, (a, b)| difference | (a ^ b))
        == 0
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbedRequest {
    /// 1 to 256 texts, each 1 to 32,000 characters.
    pub texts: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EmbedResponse {
    /// One vector per text, in order, each `dimension` numbers.
    pub embeddings: Vec<Vec<f32>>,
    /// The server's embedding model (what new collections are built with).
    pub model: String,
    pub dimension: usize,
}

/// Embeds texts with the server's model, for memvault's own other processes. Takes the
/// shared secret `internal.embed_secret` in `X-Memvault-Internal-Secret`, not an API key:
/// 401 without it, 503 when the server has none.
#[utoipa::path(post, path = "/_internal/embed", tag = "internal",
    params(("X-Memvault-Internal-Secret" = String, Header,
        description = "the shared secret, internal.embed_secret")),
    request_body = EmbedRequest,
    responses((status = 200, body = EmbedResponse), (status = 401, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn embed(
    State(state): State<AppState>,
    State(internal): State<Internal>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<EmbedRequest>,
) -> ApiResult<Json<EmbedResponse>> {
    check_secret(
        &headers,
        state.internal_secrets.embed.as_deref(),
        "internal embed",
    )?;
    if request.texts.is_empty() || request.texts.len() > EMBED_MAX_TEXTS {
        return Err(ApiError::Validation(format!(
            "texts must hold 1 to {EMBED_MAX_TEXTS} texts, got {}",
            request.texts.len()
        )));
    }
    for (index, text) in request.texts.iter().enumerate() {
        let chars = text.chars().count();
        if text.trim().is_empty() || chars > EMBED_MAX_CHARS {
            return Err(ApiError::Validation(format!(
                "texts[{index}] must be 1 to {EMBED_MAX_CHARS} characters and not blank, \
                 got {chars}"
            )));
        }
    }
    let embedded = internal.embed(request.texts).await?;
    Ok(Json(EmbedResponse {
        embeddings: embedded.vectors,
        model: embedded.model,
        dimension: embedded.dimensions,
    }))
}
