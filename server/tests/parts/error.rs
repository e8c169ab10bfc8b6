use std::collections::HashSet;

use axum::http::Method;
use memvault_core::Error;
use memvault_storage::{CollectionName, TenantId};

use memvault_server::error::*;
use memvault_types::ErrorCode;

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
        Error::DatabaseTargetRejected(text()),
        Error::DatabaseSelfTestFailed(text()),
        Error::DatabaseSwitchInProgress("copied to"),
        Error::DatabaseInUse,
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
        Error::Storage(memvault_storage::StorageError::Backend(text())),
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
        ApiError::OwnershipMoved(text()),
        ApiError::OwnerUnreachable(text()),
        ApiError::CsrfTokenInvalid,
        ApiError::CrossOriginRefused(text()),
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
    let readme = include_str!("../../../README.md");
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

/// README.md's "Error codes" table, as generated from the code table.
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
