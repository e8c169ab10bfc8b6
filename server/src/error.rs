//! The HTTP error type: every error leaves as `{"detail": "...", "code": "..."}` with the
//! status its code has in the one table (`memvault_types::error_code`). The mapping from
//! an error to its code is a `match` without a catch-all arm, here and in the core crate,
//! so a new variant does not compile until it has a code. Only 5xx causes are logged, once,
//! here; a 500 says only "internal error".

use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use memvault_types::ErrorCode;
use serde::Serialize;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::ToSchema;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// What the service refused or failed at; its code says which.
    #[error(transparent)]
    Service(#[from] memvault_core::Error),
    /// The body could not be read at all (400); a body that is read but wrong is 422.
    #[error("{0}")]
    BodyUnreadable(String),
    /// No Authorization header, or no key in it.
    #[error("{0}")]
    MissingApiKey(String),
    /// A header that is not `Bearer mv_...`, or a key that is unknown, revoked or expired.
    #[error("{0}")]
    InvalidApiKey(String),
    #[error(
        "this needs the tenant's owner key; agent keys cannot manage keys, grants, webhooks \
         or settings"
    )]
    OwnerKeyRequired,
    #[error("this endpoint needs the owner key of an admin-flagged tenant")]
    AdminKeyRequired,
    /// A `{collection}` path parameter that is not even a valid name (so it cannot exist).
    #[error("collection '{0}' not found")]
    CollectionNotFound(String),
    #[error("no webhook configured")]
    WebhookNotFound,
    #[error("no route for {method} {path}")]
    RouteNotFound { method: Method, path: String },
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The JSON body is missing, malformed or of the wrong shape (the extractors).
    #[error("{0}")]
    InvalidBody(String),
    /// A query parameter cannot be parsed (the extractor).
    #[error("{0}")]
    InvalidQuery(String),
    /// A path parameter cannot be parsed (the extractor).
    #[error("{0}")]
    InvalidPath(String),
    /// A parsed request with a value outside what its field allows.
    #[error("{0}")]
    Validation(String),
    /// Over the key's rate limit; the rate limiter adds `Retry-After`.
    #[error("{0}")]
    RateLimited(String),
    /// An internal endpoint called without the shared secret, or with a wrong one.
    #[error(
        "this internal endpoint needs the shared secret in the X-Memvault-Internal-Secret \
         header"
    )]
    InternalSecretInvalid,
    /// An internal endpoint whose shared secret the server has not been given.
    #[error("{0}")]
    InternalNotConfigured(String),
    /// The mail-in handoff without the relay's shared secret, or with a wrong one.
    #[error("the mail-in handoff needs the shared secret in the X-Memvault-Inbound-Secret header")]
    InboundSecretInvalid,
    /// Mail-in is off: the server has no `email.inbound_secret`.
    #[error(
        "mail-in is off: the server has no shared secret for the handoff (email.inbound_secret)"
    )]
    InboundNotConfigured,
    /// Several nodes: the account moved to another node while the request was on its way.
    #[error("{0}")]
    OwnershipMoved(String),
    /// Several nodes: the node that serves the account did not answer a forwarded request.
    #[error("{0}")]
    OwnerUnreachable(String),
    /// Public signup is turned off on this server (`account.signup_enabled = false`).
    #[error("signup is turned off on this server; ask its operator for an account")]
    SignupDisabled,
    /// A dashboard change without its session's CSRF token, or with another's.
    #[error("the form's CSRF token is missing or stale; reload the page and try again")]
    CsrfTokenInvalid,
    /// A dashboard change or sign-in from another origin (or naming none).
    #[error("{0}")]
    CrossOriginRefused(String),
    /// The cause is logged; the client sees only "internal error".
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The stable code clients see.
    pub fn code(&self) -> ErrorCode {
        match self {
            ApiError::Service(error) => error.code(),
            ApiError::BodyUnreadable(_) => ErrorCode::BodyUnreadable,
            ApiError::MissingApiKey(_) => ErrorCode::MissingApiKey,
            ApiError::InvalidApiKey(_) => ErrorCode::InvalidApiKey,
            ApiError::OwnerKeyRequired => ErrorCode::OwnerKeyRequired,
            ApiError::AdminKeyRequired => ErrorCode::AdminKeyRequired,
            ApiError::CollectionNotFound(_) => ErrorCode::CollectionNotFound,
            ApiError::WebhookNotFound => ErrorCode::WebhookNotFound,
            ApiError::RouteNotFound { .. } => ErrorCode::RouteNotFound,
            ApiError::MethodNotAllowed(_) => ErrorCode::MethodNotAllowed,
            ApiError::PayloadTooLarge(_) => ErrorCode::PayloadTooLarge,
            ApiError::InvalidBody(_) => ErrorCode::InvalidBody,
            ApiError::InvalidQuery(_) => ErrorCode::InvalidQuery,
            ApiError::InvalidPath(_) => ErrorCode::InvalidPath,
            ApiError::Validation(_) => ErrorCode::ValidationFailed,
            ApiError::RateLimited(_) => ErrorCode::RateLimited,
            ApiError::SignupDisabled => ErrorCode::SignupDisabled,
            ApiError::OwnershipMoved(_) => ErrorCode::OwnershipMoved,
            ApiError::OwnerUnreachable(_) => ErrorCode::OwnerUnreachable,
            ApiError::InternalSecretInvalid => ErrorCode::InternalSecretInvalid,
            ApiError::InternalNotConfigured(_) => ErrorCode::InternalNotConfigured,
            ApiError::InboundSecretInvalid => ErrorCode::InboundSecretInvalid,
            ApiError::InboundNotConfigured => ErrorCode::InboundNotConfigured,
            ApiError::CsrfTokenInvalid => ErrorCode::CsrfTokenInvalid,
            ApiError::CrossOriginRefused(_) => ErrorCode::CrossOriginRefused,
            ApiError::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// The status of the code, from the one table.
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.code().status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The `detail` clients see: the error's text, except "internal error" for a 500.
    /// Logs a 5xx cause (`context`: where it surfaced) so that it is logged exactly once.
    pub fn detail_logged(&self, context: &str) -> String {
        let status = self.status();
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(cause = %self, context, "internal error");
            return "internal error".to_owned();
        }
        if status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::GATEWAY_TIMEOUT {
            tracing::warn!(cause = %self, status = status.as_u16(), context, "request not served");
        }
        self.to_string()
    }
}

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong, in a sentence meant for the developer calling the API.
    pub detail: String,
    #[schema(schema_with = code_schema)]
    pub code: &'static str,
}

impl ErrorBody {
    pub fn new(code: ErrorCode, detail: String) -> Self {
        ErrorBody {
            detail,
            code: code.as_str(),
        }
    }
}

/// `ErrorBody.code`'s schema: an enum of every code in the table, each listed with its
/// status in the description.
pub fn code_schema() -> utoipa::openapi::Object {
    let mut description = String::from(
        "A stable, machine-readable code for the error; its HTTP status never changes. \
         The codes:\n",
    );
    for code in ErrorCode::ALL {
        description.push_str(&format!(
            "\n- `{}` ({}): {}",
            code.as_str(),
            code.status(),
            code.description()
        ));
    }
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(ErrorCode::ALL.iter().map(|code| code.as_str())))
        .description(Some(description))
        .build()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = ErrorBody::new(self.code(), self.detail_logged("http"));
        (status, Json(body)).into_response()
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
