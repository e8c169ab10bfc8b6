//! The HTTP error type: every error leaves as `{"detail": "..."}` with its status. The
//! mapping from the actors' errors is a `match` without a catch-all arm, so a new variant
//! does not compile until it is mapped. Only 5xx causes are logged, once, here.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    Validation(String),
    /// Over the key's rate limit; the rate limiter adds `Retry-After`.
    #[error("{0}")]
    TooManyRequests(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Timeout(String),
    /// An LLM or other upstream service failed; the detail says which and how.
    #[error("{0}")]
    BadGateway(String),
    /// The cause is logged; the client sees only "internal error".
    #[error("{0}")]
    Internal(String),
}

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong, in a sentence meant for the developer calling the API.
    pub detail: String,
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Validation(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ApiError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let detail = match self {
            ApiError::Internal(cause) => {
                tracing::error!(%cause, "internal error");
                "internal error".to_owned()
            }
            ApiError::Unavailable(ref cause) | ApiError::Timeout(ref cause) => {
                tracing::warn!(%cause, status = status.as_u16(), "request not served");
                self.to_string()
            }
            other => other.to_string(),
        };
        (status, Json(ErrorBody { detail })).into_response()
    }
}

impl From<memvault_core::Error> for ApiError {
    fn from(error: memvault_core::Error) -> Self {
        use memvault_core::Error;
        match error {
            Error::NotFound(detail) => ApiError::NotFound(detail),
            Error::Conflict(detail) => ApiError::Conflict(detail),
            Error::Forbidden(detail) => ApiError::Forbidden(detail),
            Error::Invalid(detail) => ApiError::Validation(detail),
            Error::Unavailable(detail) => ApiError::Unavailable(detail),
            Error::Timeout(what) => {
                ApiError::Timeout(format!("the request timed out waiting for {what}"))
            }
            Error::Upstream(detail) => ApiError::BadGateway(detail),
            Error::Storage(cause) => ApiError::Internal(cause.to_string()),
            Error::Embedding(cause) => ApiError::Internal(cause.to_string()),
        }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
