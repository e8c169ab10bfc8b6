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
    /// Public signup is turned off on this server (`account.signup_enabled = false`).
    #[error("signup is turned off on this server; ask its operator for an account")]
    SignupDisabled,
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
            ApiError::InternalSecretInvalid => ErrorCode::InternalSecretInvalid,
            ApiError::InternalNotConfigured(_) => ErrorCode::InternalNotConfigured,
            ApiError::InboundSecretInvalid => ErrorCode::InboundSecretInvalid,
            ApiError::InboundNotConfigured => ErrorCode::InboundNotConfigured,
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
fn code_schema() -> utoipa::openapi::Object {
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

/// README.md's "Error codes" table, as generated from the code table.
#[cfg(test)]
fn readme_table() -> String {
    let mut table = String::from("| Code | Status | Meaning |\n|---|---|---|\n");
    for code in ErrorCode::ALL {
        table.push_str(&format!(
            "| `{}` | {} | {} |\n",
            code.as_str(),
            code.status(),
            code.description()
        ));
    }
    table
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use memvault_core::Error;
    use memvault_storage::{CollectionName, TenantId};

    use super::*;

    /// One error of each variant of both enums; `code()`'s `match` already fails to compile
    /// for an unmapped variant, this checks that every code is used by some error.
    fn samples() -> Vec<ApiError> {
        let name = CollectionName::parse("notes").unwrap();
        let tenant = TenantId::from_stored("t");
        let text = || "x".to_owned();
        let service = [
            Error::ImageNotFound {
                id: text(),
                index: 2,
            },
            Error::BatchNotFound(text()),
            Error::BlobNotFound,
            Error::BatchRunning(text()),
            Error::FileTooLarge {
                filename: text(),
                size: 11,
                limit: 10,
            },
            Error::BadSignature,
            Error::UrlExpired,
            Error::Blobs(text()),
            Error::TenantNotFound(tenant),
            Error::CollectionNotFound(name.clone()),
            Error::MemoryNotFound {
                collection: name.clone(),
                id: text(),
            },
            Error::KeyNotFound(text()),
            Error::GrantKeyNotFound(text()),
            Error::GrantNotFound {
                collection: name.clone(),
                agent_key_id: text(),
            },
            Error::JobNotFound(text()),
            Error::ImportNotFound(text()),
            Error::ConnectionNotFound(text()),
            Error::ProviderNotSupported(text()),
            Error::OAuthNotConfigured(text()),
            Error::OAuthStateInvalid,
            Error::ConnectorUpstream(text()),
            Error::ConnectionTargetRejected(text()),
            Error::TenantExists { email: text() },
            Error::RevealLinkInvalid,
            Error::ConfirmMismatch { expected: text() },
            Error::AdminAccountProtected,
            Error::TierLimitReached {
                tier: text(),
                what: "memories",
                limit: 1,
                held: 1,
            },
            Error::MailNotConfigured,
            Error::BillingNotConfigured(text()),
            Error::BillingNoCustomer,
            Error::BillingUpstream(text()),
            Error::StripeSignatureInvalid(text()),
            Error::CollectionExists(name.clone()),
            Error::KeyRevoked(text()),
            Error::KeyInactive(text()),
            Error::LastActiveKey(text()),
            Error::OwnerKeyNotRevocable(text()),
            Error::ReadOnlyKey,
            Error::NoGrant {
                collection: name,
                agent_key_id: text(),
                needed: "can_read",
            },
            Error::Invalid(text()),
            Error::MessageUnreadable(text()),
            Error::WebhookTargetRejected(text()),
            Error::LlmConfigInvalid {
                what: "the LLM client",
                reason: text(),
            },
            Error::LlmSelfTestFailed(text()),
            Error::StorageTargetRejected(text()),
            Error::StorageSelfTestFailed(text()),
            Error::ModelNotOffered {
                model: text(),
                offered: text(),
            },
            Error::Restarting { what: text() },
            Error::ActorStopped { what: text() },
            Error::StartFailed {
                what: text(),
                reason: text(),
            },
            Error::TaskFailed {
                task: "search",
                reason: text(),
            },
            Error::IndexFailed(text()),
            Error::MemoryNotInStore(text()),
            Error::ExtractionUnavailable(text()),
            Error::EmbeddingModelUnavailable {
                model: text(),
                reason: text(),
            },
            Error::EncryptionKeyMissing,
            Error::LlmKeyUnreadable { reason: text() },
            Error::LlmNotConfigured,
            Error::SpendCapReached { cap_usd: 1.0 },
            Error::ActorTimeout(text()),
            Error::UpstreamTimeout,
            Error::UpstreamFailed(text()),
            Error::Storage(memvault_storage::StorageError::Corrupt {
                key: text(),
                reason: text(),
            }),
        ];
        let edge = [
            ApiError::BodyUnreadable(text()),
            ApiError::MissingApiKey(text()),
            ApiError::InternalSecretInvalid,
            ApiError::InternalNotConfigured(text()),
            ApiError::InboundSecretInvalid,
            ApiError::InboundNotConfigured,
            ApiError::InvalidApiKey(text()),
            ApiError::OwnerKeyRequired,
            ApiError::AdminKeyRequired,
            ApiError::CollectionNotFound(text()),
            ApiError::WebhookNotFound,
            ApiError::RouteNotFound {
                method: Method::GET,
                path: text(),
            },
            ApiError::MethodNotAllowed(text()),
            ApiError::PayloadTooLarge(text()),
            ApiError::InvalidBody(text()),
            ApiError::InvalidQuery(text()),
            ApiError::InvalidPath(text()),
            ApiError::Validation(text()),
            ApiError::RateLimited(text()),
            ApiError::SignupDisabled,
            ApiError::Internal(text()),
        ];
        service
            .into_iter()
            .map(ApiError::from)
            .chain(edge)
            .collect()
    }

    #[test]
    fn every_code_is_used_by_some_error() {
        let used: HashSet<ErrorCode> = samples().iter().map(ApiError::code).collect();
        let unused: Vec<&str> = ErrorCode::ALL
            .iter()
            .filter(|code| !used.contains(code))
            .map(|code| code.as_str())
            .collect();
        assert!(unused.is_empty(), "codes no error has: {unused:?}");
    }

    #[test]
    fn statuses_are_unchanged_by_the_codes() {
        // The statuses the errors had before they had codes (SPEC.md "Errors").
        let status = |error: ApiError| error.status().as_u16();
        assert_eq!(status(ApiError::MissingApiKey(String::new())), 401);
        assert_eq!(status(ApiError::OwnerKeyRequired), 403);
        assert_eq!(status(Error::ReadOnlyKey.into()), 403);
        assert_eq!(status(Error::LastActiveKey(String::new()).into()), 409);
        assert_eq!(status(Error::Invalid(String::new()).into()), 422);
        assert_eq!(status(ApiError::InvalidBody(String::new())), 422);
        assert_eq!(status(ApiError::BodyUnreadable(String::new())), 400);
        assert_eq!(status(Error::LlmNotConfigured.into()), 503);
        assert_eq!(status(Error::UpstreamTimeout.into()), 504);
        assert_eq!(status(Error::UpstreamFailed(String::new()).into()), 502);
    }

    #[test]
    fn a_500_says_only_internal_error() {
        let error = ApiError::Internal("the disk is on fire".to_owned());
        assert_eq!(error.code(), ErrorCode::InternalError);
        assert_eq!(error.detail_logged("test"), "internal error");
        let error = ApiError::from(Error::Storage(memvault_storage::StorageError::Corrupt {
            key: "k".to_owned(),
            reason: "bad bytes".to_owned(),
        }));
        assert_eq!(error.code(), ErrorCode::InternalError);
        assert_eq!(error.detail_logged("test"), "internal error");
    }

    #[test]
    fn openapi_code_schema_lists_every_code() {
        let schema = serde_json::to_value(code_schema()).unwrap();
        let listed: Vec<&str> = schema["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|value| value.as_str().unwrap())
            .collect();
        let table: Vec<&str> = ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
        assert_eq!(listed, table);
    }

    #[test]
    fn readme_error_codes_match_the_table() {
        let readme = include_str!("../../README.md");
        let section = readme
            .split("## Error codes")
            .nth(1)
            .expect("README.md has an \"## Error codes\" section");
        let rows: String = section
            .lines()
            .skip_while(|line| !line.starts_with('|'))
            .take_while(|line| line.starts_with('|'))
            .map(|line| format!("{line}\n"))
            .collect();
        assert_eq!(
            rows,
            readme_table(),
            "README.md's error code table differs from memvault_types::ErrorCode; \
             replace it with the expected table above"
        );
    }
}
