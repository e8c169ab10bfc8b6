//! Every error code the API answers with, its HTTP status and what it means: the one table.
//!
//! A code is part of the API contract (`{"detail": "...", "code": "..."}`): it is stable,
//! snake_case, and listed in `/openapi.json` and README.md, both generated from or checked
//! against this table. Each crate's error type maps its variants to a code with a `match`
//! that has no catch-all arm; the status is the code's, never chosen apart from it. Several
//! variants may share a code when a client has no reason to tell them apart.

/// Declares [`ErrorCode`] from rows of `Variant = ("code", status, "description");`, so
/// that the code, its status and its description are written once.
macro_rules! make_error_codes {
    ($($variant:ident = ($code:literal, $status:literal, $description:literal);)*) => {
        /// A stable, machine-readable error code; see the module docs.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $(
                #[doc = $description]
                $variant,
            )*
        }

        impl ErrorCode {
            /// Every code, in the table's order (grouped by status).
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The code as clients see it, e.g. `"collection_not_found"`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)*
                }
            }

            /// The HTTP status every error with this code is answered with.
            pub const fn status(self) -> u16 {
                match self {
                    $(ErrorCode::$variant => $status,)*
                }
            }

            /// When the code is used, in a sentence for the API's documentation.
            pub const fn description(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $description,)*
                }
            }
        }
    };
}

make_error_codes! {
    BodyUnreadable = ("body_unreadable", 400, "The request body could not be read (the connection failed or the body is not valid for its encoding).");
    OauthStateInvalid = ("oauth_state_invalid", 400, "An OAuth callback whose state is unknown, already used, expired or another provider's; start the connection again.");
    StripeSignatureInvalid = ("stripe_signature_invalid", 400, "A Stripe webhook delivery whose Stripe-Signature is missing, malformed, stale (over 5 minutes) or does not match the body.");
    MissingApiKey = ("missing_api_key", 401, "No API key: the Authorization header is missing or has nothing after 'Bearer'.");
    InternalSecretInvalid = ("internal_secret_invalid", 401, "An internal endpoint was called without its shared secret (X-Memvault-Internal-Secret) or with a wrong one.");
    InboundSecretInvalid = ("inbound_secret_invalid", 401, "The mail-in handoff (POST /v1/memory/email/inbound) came without its shared secret (X-Memvault-Inbound-Secret) or with a wrong one.");
    InvalidApiKey = ("invalid_api_key", 401, "The Authorization header is not 'Bearer mv_...', or the key is unknown, revoked or expired.");
    ReadOnlyKey = ("read_only_key", 403, "A read-only key tried to write.");
    OwnerKeyRequired = ("owner_key_required", 403, "Only the tenant's owner key may manage keys, grants, webhooks and settings.");
    SignupDisabled = ("signup_disabled", 403, "Public signup is turned off on this server; its operator creates accounts.");
    AdminKeyRequired = ("admin_key_required", 403, "The endpoint needs the owner key of an admin-flagged tenant.");
    TierLimitReached = ("tier_limit_reached", 403, "The write would take the account past its tier's limit on collections, memories or stored file bytes (GET /v1/memory/admin/me shows them); nothing was written.");
    AdminAccountProtected = ("admin_account_protected", 403, "An admin-flagged tenant (the operator's account) cannot erase itself through the API.");
    NoGrant = ("no_grant", 403, "The collection is restricted and the agent has no grant with the needed permission on it.");
    BadSignature = ("bad_signature", 403, "The presigned URL's signature does not match its key, method and expiry.");
    UrlExpired = ("url_expired", 403, "The presigned URL has expired; read the memory again for a fresh one.");
    CsrfTokenInvalid = ("csrf_token_invalid", 403, "A dashboard change (a form post) came without its session's CSRF token, or with another session's; nothing was done. Reload the page and try again.");
    CrossOriginRefused = ("cross_origin_refused", 403, "A dashboard change (or sign-in) came from another origin (its Origin is not the dashboard's own, or it names none); nothing was done.");
    RouteNotFound = ("route_not_found", 404, "No endpoint has this path.");
    TenantNotFound = ("tenant_not_found", 404, "No such tenant.");
    CollectionNotFound = ("collection_not_found", 404, "No such collection in this tenant.");
    MemoryNotFound = ("memory_not_found", 404, "No such memory in the collection.");
    KeyNotFound = ("key_not_found", 404, "No such API key in this tenant.");
    GrantNotFound = ("grant_not_found", 404, "The collection has no grant for this agent.");
    JobNotFound = ("job_not_found", 404, "No such extract job.");
    ImportNotFound = ("import_not_found", 404, "No such import in this tenant.");
    ConnectionNotFound = ("connection_not_found", 404, "No such connection in this tenant.");
    ImageNotFound = ("image_not_found", 404, "The memory has no attached file at this index.");
    BatchNotFound = ("batch_not_found", 404, "No such ingest batch (or batch item) in this tenant.");
    BlobNotFound = ("blob_not_found", 404, "No file is stored under this presigned URL's key (it was deleted, or never uploaded).");
    WebhookNotFound = ("webhook_not_found", 404, "The tenant has no webhook configured.");
    RevealLinkInvalid = ("reveal_link_invalid", 404, "The key reveal link was already used, expired, or never existed; ask for a new one with POST /v1/memory/recover-key.");
    MethodNotAllowed = ("method_not_allowed", 405, "The path exists but not with this HTTP method.");
    TenantExists = ("tenant_exists", 409, "A tenant with this email exists already.");
    BillingNoCustomer = ("billing_no_customer", 409, "The account has no Stripe customer yet: subscribe with a checkout first.");
    CollectionExists = ("collection_exists", 409, "A collection with this name exists already.");
    BatchConflict = ("batch_conflict", 409, "The ingest batch is still being processed, or the item did not fail: only a finished batch's failed items are retried or removed.");
    DatabaseSwitchInProgress = ("database_switch_in_progress", 409, "The tenant's data is being copied to or from its own database; wait until GET /v1/memory/database/config shows it done.");
    DatabaseInUse = ("database_in_use", 409, "The tenant's data is in its own database already: DELETE /v1/memory/database/config moves it back before another database can be set.");
    KeyRevoked = ("key_revoked", 409, "The API key is revoked already.");
    KeyInactive = ("key_inactive", 409, "The API key is revoked or expired; grants are for active keys.");
    LastActiveKey = ("last_active_key", 409, "The tenant's last active key cannot be revoked; create another key first.");
    OwnerKeyNotRevocable = ("owner_key_not_revocable", 409, "The owner key cannot be revoked; rotate it instead.");
    PayloadTooLarge = ("payload_too_large", 413, "The request body is larger than the server accepts.");
    FileTooLarge = ("file_too_large", 413, "A file is over the per-file upload limit (10 MiB).");
    InvalidBody = ("invalid_body", 422, "The request body is missing, not JSON, or does not have the documented shape.");
    InvalidQuery = ("invalid_query", 422, "A query parameter is malformed.");
    InvalidPath = ("invalid_path", 422, "A path parameter is malformed.");
    ValidationFailed = ("validation_failed", 422, "A well-formed request with a value outside what the field allows.");
    MessageUnreadable = ("message_unreadable", 422, "The mail-in handoff's body is not an RFC 822 message: no header block could be read from it.");
    WebhookTargetRejected = ("webhook_target_rejected", 422, "The webhook URL is not http(s) with a host, or is or resolves to a private, loopback, link-local or metadata address.");
    LlmConfigInvalid = ("llm_config_invalid", 422, "An LLM client cannot be set up from this configuration.");
    LlmSelfTestFailed = ("llm_self_test_failed", 422, "The LLM self-test failed, so the configuration was not saved.");
    StorageTargetRejected = ("storage_target_rejected", 422, "The storage endpoint is or resolves to a private, loopback, link-local or metadata address.");
    StorageSelfTestFailed = ("storage_self_test_failed", 422, "The storage self-test (put, read back, delete a probe object) failed, so the configuration was not saved.");
    DatabaseTargetRejected = ("database_target_rejected", 422, "The database URL is not a postgres:// URL with a host, or its host is or resolves to a private, loopback, link-local or metadata address.");
    DatabaseSelfTestFailed = ("database_self_test_failed", 422, "The database self-test (connect, version, schema, a probe row written and read back) failed, so the configuration was not saved.");
    ConfirmMismatch = ("confirm_mismatch", 422, "An irreversible request's `confirm` is not exactly what it must be (for delete-account, the account's name); nothing was done.");
    ProviderNotSupported = ("provider_not_supported", 422, "The provider is not synced server-side (postgres: see the README's self-hosted recipe), or has no OAuth flow (linear, confluence and hubspot take their token in the create body).");
    ConnectionTargetRejected = ("connection_target_rejected", 422, "Confluence's config.base_url is not http(s) with a host, or is or resolves to a private, loopback, link-local or metadata address.");
    ModelNotOffered = ("model_not_offered", 422, "The chat proxy's model is neither the server LLM's model nor one priced for it.");
    RateLimited = ("rate_limited", 429, "The API key is over its rate limit; retry after Retry-After seconds.");
    InternalError = ("internal_error", 500, "An unexpected failure; the detail says only \"internal error\" and the cause is logged.");
    UpstreamFailed = ("upstream_failed", 502, "An LLM the request depends on failed or answered nonsense.");
    ConnectorUpstreamFailed = ("connector_upstream_failed", 502, "The provider's OAuth token endpoint failed or refused the code; the detail has its answer.");
    BillingUpstreamFailed = ("billing_upstream_failed", 502, "Stripe failed or refused the call; the detail has its message.");
    ActorUnavailable = ("actor_unavailable", 503, "The part of the service that owns the resource is restarting, stopped or could not start; retry shortly.");
    TaskFailed = ("task_failed", 503, "Background work the request waited for did not complete; retry shortly.");
    IndexFailed = ("index_failed", 503, "The collection's search index failed; it is rebuilt, retry shortly.");
    StoreInconsistent = ("store_inconsistent", 503, "A memory is in the collection's state but not in the store; the collection reloads, retry shortly.");
    EmbeddingModelUnavailable = ("embedding_model_unavailable", 503, "The model that built the collection's vectors cannot run on this server; the collection is being re-embedded with the configured model, retry when that is done.");
    ExtractionUnavailable = ("extraction_unavailable", 503, "The extraction queue is not running.");
    DatabaseUnavailable = ("database_unavailable", 503, "The database holding this data (the platform's Postgres, or the account's own database) did not answer; retry shortly.");
    OwnershipMoved = ("ownership_moved", 503, "Several nodes: another node took over this account while the request ran here, and nothing of it was written; retry (any node sends it to the new owner).");
    OwnerUnreachable = ("owner_unreachable", 503, "Several nodes: the node that serves this account did not answer; another node takes the account over within the lease time (10 s by default); retry.");
    StorageUnavailable = ("storage_unavailable", 503, "The file storage (local directory or S3 bucket) failed; retry shortly.");
    MailNotConfigured = ("mail_not_configured", 503, "The server sends no mail, so signup and key recovery are off.");
    OauthNotConfigured = ("oauth_not_configured", 503, "The server has no OAuth app for this provider (connectors.<provider>.client_id and client_secret).");
    BillingNotConfigured = ("billing_not_configured", 503, "Billing is off on this server: no Stripe secret key, price or webhook secret is configured.");
    InternalNotConfigured = ("internal_not_configured", 503, "The internal endpoint is off: the server has no shared secret for it (e.g. internal.embed_secret).");
    InboundNotConfigured = ("inbound_not_configured", 503, "Mail-in is off: the server has no shared secret for the relay's handoff (email.inbound_secret).");
    EncryptionKeyMissing = ("encryption_key_missing", 503, "The server has no encryption key, so it cannot store credentials.");
    LlmKeyUnreadable = ("llm_key_unreadable", 503, "The tenant's stored LLM key cannot be decrypted.");
    LlmNotConfigured = ("llm_not_configured", 503, "No LLM is configured for the call.");
    SpendCapReached = ("spend_cap_reached", 503, "The tenant's monthly LLM spend cap is reached.");
    ActorTimeout = ("actor_timeout", 504, "The part of the service that owns the resource did not answer in time.");
    UpstreamTimeout = ("upstream_timeout", 504, "An LLM the request depends on did not answer in time.");
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::ErrorCode;

    #[test]
    fn codes_are_unique_snake_case() {
        let mut seen = HashSet::new();
        for code in ErrorCode::ALL {
            let text = code.as_str();
            assert!(seen.insert(text), "{text} is in the table twice");
            assert!(
                !text.is_empty()
                    && text
                        .chars()
                        .all(|char| char.is_ascii_lowercase() || char == '_')
                    && !text.starts_with('_')
                    && !text.ends_with('_'),
                "{text} is not snake_case"
            );
            assert!(!code.description().is_empty(), "{text} has no description");
        }
    }

    #[test]
    fn statuses_are_error_statuses_grouped_in_order() {
        let statuses: Vec<u16> = ErrorCode::ALL.iter().map(|code| code.status()).collect();
        assert!(statuses.iter().all(|status| (400..600).contains(status)));
        assert!(statuses.windows(2).all(|pair| pair[0] <= pair[1]));
    }

    #[test]
    fn statuses_follow_the_spec() {
        // SPEC.md "Errors": 401 credentials, 403 grants, 404 missing resources, 422
        // validation, 429 rate limit.
        assert_eq!(ErrorCode::MissingApiKey.status(), 401);
        assert_eq!(ErrorCode::InvalidApiKey.status(), 401);
        assert_eq!(ErrorCode::NoGrant.status(), 403);
        assert_eq!(ErrorCode::ReadOnlyKey.status(), 403);
        assert_eq!(ErrorCode::MemoryNotFound.status(), 404);
        assert_eq!(ErrorCode::CollectionNotFound.status(), 404);
        assert_eq!(ErrorCode::RouteNotFound.status(), 404);
        assert_eq!(ErrorCode::InvalidBody.status(), 422);
        assert_eq!(ErrorCode::ValidationFailed.status(), 422);
        assert_eq!(ErrorCode::RateLimited.status(), 429);
        assert_eq!(ErrorCode::InternalError.status(), 500);
        assert_eq!(ErrorCode::UpstreamFailed.status(), 502);
        assert_eq!(ErrorCode::ActorUnavailable.status(), 503);
        assert_eq!(ErrorCode::ActorTimeout.status(), 504);
    }
}
