//! The core crate's one error type: one variant per domain fact a client may act on, each
//! with a stable [`ErrorCode`] (`code()`, a `match` without a catch-all arm, so a new
//! variant does not compile until it has a code). The HTTP status is the code's, from the
//! one table in `memvault_types::error_code`. The `Display` text is the `detail` clients
//! see, so a text built in several places is built here once.

use memvault_embed::EmbeddingError;
use memvault_storage::{CollectionName, StorageError, TenantId};
use memvault_types::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("tenant {0} not found")]
    TenantNotFound(TenantId),
    #[error("collection '{0}' not found")]
    CollectionNotFound(CollectionName),
    #[error("memory '{id}' not found in collection '{collection}'")]
    MemoryNotFound {
        collection: CollectionName,
        id: String,
    },
    /// A memory's attached file at an index it does not have.
    #[error("memory '{id}' has no attached file at index {index}")]
    ImageNotFound { id: String, index: usize },
    /// An ingest batch this tenant does not have.
    #[error("ingest batch '{0}' not found")]
    BatchNotFound(String),
    /// A batch still being processed (retry and item removal wait for it to finish).
    #[error("ingest batch '{0}' is still being processed; retry when it is complete")]
    BatchRunning(String),
    /// A batch item index the batch does not have.
    #[error("ingest batch '{batch}' has no item {index}")]
    BatchItemNotFound { batch: String, index: usize },
    /// Only failed items may be removed.
    #[error("item {index} of ingest batch '{batch}' did not fail; only failed items are removed")]
    BatchItemNotFailed { batch: String, index: usize },
    /// A file over the per-file limit.
    #[error("'{filename}' is {size} bytes, over the per-file limit of {limit} bytes")]
    FileTooLarge {
        filename: String,
        size: u64,
        limit: u64,
    },
    /// No blob under a presigned URL's key.
    #[error("no file is stored under this URL")]
    BlobNotFound,
    /// A presigned URL whose signature does not match.
    #[error("the URL's signature does not match its key, method and expiry")]
    BadSignature,
    /// A presigned URL past its expiry.
    #[error("the URL has expired; read the memory again for a fresh one")]
    UrlExpired,
    /// The blob store failed.
    #[error("file storage failed: {0}")]
    Blobs(String),
    /// An API key the URL names (revoke, rotate) that this tenant does not have.
    #[error("key '{0}' not found")]
    KeyNotFound(String),
    /// A grant names a key that this tenant does not have.
    #[error("no API key '{0}' in this tenant (see GET /v1/memory/agents)")]
    GrantKeyNotFound(String),
    #[error("collection '{collection}' has no grant for agent '{agent_key_id}'")]
    GrantNotFound {
        collection: CollectionName,
        agent_key_id: String,
    },
    #[error("extract job '{0}' not found")]
    JobNotFound(String),

    #[error("a tenant with email '{email}' already exists")]
    TenantExists { email: String },
    /// A reveal link that does not exist, was used, or expired (one answer for all three).
    #[error("this link is not valid: it was already used, it expired, or it never existed; ask for a new one with POST /v1/memory/recover-key")]
    RevealLinkInvalid,
    #[error("import '{0}' not found")]
    ImportNotFound(String),
    #[error("connection '{0}' not found")]
    ConnectionNotFound(String),
    /// A provider memvault does not sync server-side (postgres), or OAuth for a provider
    /// without an OAuth flow.
    #[error("{0}")]
    ProviderNotSupported(String),
    /// OAuth start or callback for a provider whose OAuth app is not configured.
    #[error("{0}")]
    OAuthNotConfigured(String),
    /// An OAuth callback whose state is unknown, used, expired or another provider's.
    #[error("the OAuth state is unknown, already used or expired: start the connection again")]
    OAuthStateInvalid,
    /// The provider's token endpoint failed or refused the code.
    #[error("{0}")]
    ConnectorUpstream(String),
    /// Confluence's site URL is not http(s) or is a private address.
    #[error("{0}")]
    ConnectionTargetRejected(String),
    /// A write that would take the account past its tier's limit.
    #[error("the {tier} tier allows {limit} {what}; this account holds {held}: delete some, or upgrade with POST /v1/memory/stripe/checkout/create")]
    TierLimitReached {
        tier: String,
        what: &'static str,
        limit: u64,
        held: u64,
    },
    /// A delete-account whose `confirm` is not the account's name.
    #[error("confirm must be the account's name, '{expected}', exactly: nothing was erased")]
    ConfirmMismatch { expected: String },
    /// The operator's own (admin-flagged) account asked to erase itself.
    #[error("an admin-flagged account cannot erase itself: it is the operator's account")]
    AdminAccountProtected,
    /// Billing is not set up on this server (no Stripe key, price or webhook secret).
    #[error("{0}")]
    BillingNotConfigured(String),
    /// The billing portal for a tenant that never completed a checkout.
    #[error("this account has no Stripe customer yet: subscribe first with POST /v1/memory/stripe/checkout/create")]
    BillingNoCustomer,
    /// Stripe failed or refused a call.
    #[error("{0}")]
    BillingUpstream(String),
    /// A Stripe webhook delivery whose signature does not check out.
    #[error("{0}")]
    StripeSignatureInvalid(String),
    /// Signup or recovery on a server that cannot send mail.
    #[error("this server sends no mail (no [mail] configured), so signup and key recovery are off; ask the operator for a key")]
    MailNotConfigured,
    #[error("collection '{0}' already exists")]
    CollectionExists(CollectionName),
    #[error("key '{0}' is already revoked")]
    KeyRevoked(String),
    /// A grant for a key that is revoked or expired.
    #[error("key '{0}' is revoked or expired; grants are for active keys")]
    KeyInactive(String),
    #[error(
        "key '{0}' is the tenant's last active key and cannot be revoked; create another key first"
    )]
    LastActiveKey(String),
    #[error(
        "key '{0}' is the tenant's owner key and cannot be revoked; rotate it instead \
         (POST /v1/memory/admin/rotate-key)"
    )]
    OwnerKeyNotRevocable(String),

    #[error("this API key is read-only; writes need a read-write key")]
    ReadOnlyKey,
    /// An agent without the needed grant (`can_read` or `can_write`) on a restricted
    /// collection.
    #[error(
        "collection '{collection}' is restricted and agent '{agent_key_id}' has no grant with \
         {needed} on it"
    )]
    NoGrant {
        collection: CollectionName,
        agent_key_id: String,
        needed: &'static str,
    },

    /// A well-formed request with a value the rules do not allow; the text names the field.
    #[error("{0}")]
    Invalid(String),
    /// A mail-in handoff whose body is not an RFC 822 message.
    #[error("the body is not an RFC 822 message: {0}")]
    MessageUnreadable(String),
    /// The webhook URL failed the SSRF guard or is not an http(s) URL; the text says why.
    #[error("{0}")]
    WebhookTargetRejected(String),
    /// An LLM client cannot be built from a configuration (`what`: which one).
    #[error("{what} cannot be set up: {reason}")]
    LlmConfigInvalid { what: &'static str, reason: String },
    #[error("the LLM self-test failed, so the configuration was not saved: {0}")]
    LlmSelfTestFailed(String),
    /// The storage endpoint failed the SSRF guard; the text says why.
    #[error("{0}")]
    StorageTargetRejected(String),
    #[error("the storage self-test failed, so the configuration was not saved: {0}")]
    StorageSelfTestFailed(String),
    /// The database URL failed the SSRF guard; the text says why.
    #[error("{0}")]
    DatabaseTargetRejected(String),
    #[error("the database self-test failed, so the configuration was not saved: {0}")]
    DatabaseSelfTestFailed(String),
    #[error(
        "the account's data is being {0} its own database; wait until GET \
         /v1/memory/database/config shows the switch done"
    )]
    DatabaseSwitchInProgress(&'static str),
    #[error(
        "the account's data is in its own database already; DELETE \
         /v1/memory/database/config moves it back before another can be set"
    )]
    DatabaseInUse,
    #[error(
        "model '{model}' is not offered by this server's LLM; use '{offered}' or a model \
         priced in its [llm.prices]"
    )]
    ModelNotOffered { model: String, offered: String },

    /// The actor that owns the resource is gone for now (`what`: "the tenant",
    /// "collection 'x'"); retrying later may succeed.
    #[error("{what} is restarting; retry shortly")]
    Restarting { what: String },
    /// The actor failed while handling the call.
    #[error("{what} stopped while handling the request; retry shortly")]
    ActorStopped { what: String },
    /// An actor or queue could not be started (`what`: which one).
    #[error("{what} could not be started: {reason}")]
    StartFailed { what: String, reason: String },
    /// Blocking or background work (`task`: "storage task", "search", ...) panicked or was
    /// cancelled.
    #[error("{task} did not complete: {reason}")]
    TaskFailed { task: &'static str, reason: String },
    #[error("the search index failed: {0}")]
    IndexFailed(String),
    /// The collection's state names a memory the store does not have; the actor restarts.
    #[error("memory '{0}' is in the collection's state but not in the store")]
    MemoryNotInStore(String),
    /// The extraction queue is not running or refused the job; the text says which.
    #[error("{0}")]
    ExtractionUnavailable(String),
    #[error("this server has no encryption key, so it cannot store LLM credentials")]
    EncryptionKeyMissing,
    /// The tenant's sealed LLM key cannot be opened (`reason` continues "the stored LLM
    /// key ...").
    #[error("the stored LLM key {reason}")]
    LlmKeyUnreadable { reason: String },
    #[error(
        "no LLM is configured for the chat proxy: set the server's [llm] base_url, or your \
         own LLM with PUT /v1/memory/extraction/config"
    )]
    LlmNotConfigured,
    #[error(
        "the monthly LLM spend cap (${cap_usd:.2}) is reached, so the chat proxy is paused; \
         raise it with PUT /v1/memory/spend-cap"
    )]
    SpendCapReached { cap_usd: f64 },

    /// The owning actor did not answer within the call timeout (`0`: which actor).
    #[error("the request timed out waiting for {0}")]
    ActorTimeout(String),
    #[error("the request timed out waiting for the upstream LLM")]
    UpstreamTimeout,
    /// An LLM the request depends on failed or answered nonsense; the text says how.
    #[error("{0}")]
    UpstreamFailed(String),
    /// The LLM could not be reached or is overloaded (timeout, transport error, 429,
    /// 5xx): the same request may work later. Extraction jobs wait instead of failing.
    #[error("{0}")]
    LlmUnreachable(String),

    /// The model that built a collection's vectors cannot run here (the configuration
    /// names another; the collection is being re-embedded).
    #[error("the collection's vectors were made by {model}, which this server cannot run ({reason}); it is being re-embedded with the configured model")]
    EmbeddingModelUnavailable { model: String, reason: String },

    /// A write brought vectors of the model the collection has just switched away from;
    /// the caller embeds again.
    #[error(
        "collection '{collection}' has switched to {model} since the texts were embedded; retry"
    )]
    EmbeddingSwitched {
        collection: CollectionName,
        model: String,
    },

    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Embedding(#[from] EmbeddingError),
}

impl Error {
    /// The stable code clients see; its status comes from the code table.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::TenantNotFound(_) => ErrorCode::TenantNotFound,
            Error::CollectionNotFound(_) => ErrorCode::CollectionNotFound,
            Error::MemoryNotFound { .. } => ErrorCode::MemoryNotFound,
            Error::ImageNotFound { .. } => ErrorCode::ImageNotFound,
            Error::BatchNotFound(_) | Error::BatchItemNotFound { .. } => ErrorCode::BatchNotFound,
            Error::BatchRunning(_) | Error::BatchItemNotFailed { .. } => ErrorCode::BatchConflict,
            Error::FileTooLarge { .. } => ErrorCode::FileTooLarge,
            Error::Blobs(_) => ErrorCode::StorageUnavailable,
            Error::BlobNotFound => ErrorCode::BlobNotFound,
            Error::BadSignature => ErrorCode::BadSignature,
            Error::UrlExpired => ErrorCode::UrlExpired,
            Error::KeyNotFound(_) | Error::GrantKeyNotFound(_) => ErrorCode::KeyNotFound,
            Error::GrantNotFound { .. } => ErrorCode::GrantNotFound,
            Error::JobNotFound(_) => ErrorCode::JobNotFound,
            Error::TenantExists { .. } => ErrorCode::TenantExists,
            Error::RevealLinkInvalid => ErrorCode::RevealLinkInvalid,
            Error::ConfirmMismatch { .. } => ErrorCode::ConfirmMismatch,
            Error::TierLimitReached { .. } => ErrorCode::TierLimitReached,
            Error::ImportNotFound(_) => ErrorCode::ImportNotFound,
            Error::ConnectionNotFound(_) => ErrorCode::ConnectionNotFound,
            Error::ProviderNotSupported(_) => ErrorCode::ProviderNotSupported,
            Error::OAuthNotConfigured(_) => ErrorCode::OauthNotConfigured,
            Error::OAuthStateInvalid => ErrorCode::OauthStateInvalid,
            Error::ConnectorUpstream(_) => ErrorCode::ConnectorUpstreamFailed,
            Error::ConnectionTargetRejected(_) => ErrorCode::ConnectionTargetRejected,
            Error::AdminAccountProtected => ErrorCode::AdminAccountProtected,
            Error::MailNotConfigured => ErrorCode::MailNotConfigured,
            Error::BillingNotConfigured(_) => ErrorCode::BillingNotConfigured,
            Error::BillingNoCustomer => ErrorCode::BillingNoCustomer,
            Error::BillingUpstream(_) => ErrorCode::BillingUpstreamFailed,
            Error::StripeSignatureInvalid(_) => ErrorCode::StripeSignatureInvalid,
            Error::CollectionExists(_) => ErrorCode::CollectionExists,
            Error::KeyRevoked(_) => ErrorCode::KeyRevoked,
            Error::KeyInactive(_) => ErrorCode::KeyInactive,
            Error::LastActiveKey(_) => ErrorCode::LastActiveKey,
            Error::OwnerKeyNotRevocable(_) => ErrorCode::OwnerKeyNotRevocable,
            Error::ReadOnlyKey => ErrorCode::ReadOnlyKey,
            Error::NoGrant { .. } => ErrorCode::NoGrant,
            Error::Invalid(_) => ErrorCode::ValidationFailed,
            Error::MessageUnreadable(_) => ErrorCode::MessageUnreadable,
            Error::WebhookTargetRejected(_) => ErrorCode::WebhookTargetRejected,
            Error::LlmConfigInvalid { .. } => ErrorCode::LlmConfigInvalid,
            Error::LlmSelfTestFailed(_) => ErrorCode::LlmSelfTestFailed,
            Error::StorageTargetRejected(_) => ErrorCode::StorageTargetRejected,
            Error::StorageSelfTestFailed(_) => ErrorCode::StorageSelfTestFailed,
            Error::DatabaseTargetRejected(_) => ErrorCode::DatabaseTargetRejected,
            Error::DatabaseSelfTestFailed(_) => ErrorCode::DatabaseSelfTestFailed,
            Error::DatabaseSwitchInProgress(_) => ErrorCode::DatabaseSwitchInProgress,
            Error::DatabaseInUse => ErrorCode::DatabaseInUse,
            Error::ModelNotOffered { .. } => ErrorCode::ModelNotOffered,
            Error::Restarting { .. } | Error::ActorStopped { .. } | Error::StartFailed { .. } => {
                ErrorCode::ActorUnavailable
            }
            Error::TaskFailed { .. } | Error::EmbeddingSwitched { .. } => ErrorCode::TaskFailed,
            Error::IndexFailed(_) => ErrorCode::IndexFailed,
            Error::MemoryNotInStore(_) => ErrorCode::StoreInconsistent,
            Error::ExtractionUnavailable(_) => ErrorCode::ExtractionUnavailable,
            Error::EmbeddingModelUnavailable { .. } => ErrorCode::EmbeddingModelUnavailable,
            Error::EncryptionKeyMissing => ErrorCode::EncryptionKeyMissing,
            Error::LlmKeyUnreadable { .. } => ErrorCode::LlmKeyUnreadable,
            Error::LlmNotConfigured => ErrorCode::LlmNotConfigured,
            Error::SpendCapReached { .. } => ErrorCode::SpendCapReached,
            Error::ActorTimeout(_) => ErrorCode::ActorTimeout,
            Error::UpstreamTimeout => ErrorCode::UpstreamTimeout,
            Error::UpstreamFailed(_) | Error::LlmUnreachable(_) => ErrorCode::UpstreamFailed,
            // A database that did not answer (Postgres down, a tenant's own database
            // unreachable): worth a retry, not a bug.
            Error::Storage(StorageError::Backend(_)) => ErrorCode::DatabaseUnavailable,
            Error::Storage(StorageError::Fenced(_)) => ErrorCode::OwnershipMoved,
            Error::Storage(_) | Error::Embedding(_) => ErrorCode::InternalError,
        }
    }

    /// Whether the thing asked for (its tenant, collection or memory) does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Error::TenantNotFound(_) | Error::CollectionNotFound(_) | Error::MemoryNotFound { .. }
        )
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error crossing a seam (a job kind, the sync engine's sink, an ingest step) keeps its
/// code; retryable when the code's status says the service or a dependency failed.
impl From<Error> for memvault_types::Failure {
    fn from(error: Error) -> Self {
        memvault_types::Failure::new(error.code(), error.to_string())
    }
}
