//! memvault-core: the actors and the behaviour they run.
//!
//! # Layout
//!
//! - [`root`]: the root supervisor; one tenant actor per tenant.
//! - [`tenant`]: the tenant actor (collections, keys) and what it publishes.
//! - [`collection`]: the collection actor, which serializes a collection's writes and
//!   publishes snapshots that reads use without touching a mailbox.
//! - [`service`]: [`Memvault`], the facade the HTTP edge calls, one method per use case.
//! - [`agent`]: API keys as agent identities, and the key directory used to authenticate.
//! - [`memory`]: what creating or changing a memory carries, and its validation rules.
//! - [`metrics`]: per-route, per-stage and cache figures for the operator endpoints.
//! - [`pageviews`]: cookieless pageview counts from the public beacon.
//! - [`status`]: periodic self-checks behind the public status page.
//! - [`maintenance`]: dedup clustering and the extractive collection summary.
//! - [`events`]: the event broker: memory changes published once, subscribed to by
//!   webhooks (and later caches, metering, connectors).
//! - [`extraction`]: asynchronous remember as a job kind on `memvault-jobs`.
//! - [`webhooks`]: signed outbound webhooks for memory events, from a durable outbox.
//! - [`billing`]: Stripe sessions and the webhook signature.
//! - [`account`]: outgoing mail as a job kind, one-time reveal links and their letters.
//! - [`email`]: mail-in: drop addresses, the sender allowlist, the relay's
//!   authentication verdicts, and a raw message split into batch items.
//!
//! Actors know nothing of HTTP; storage goes through `memvault-storage`'s traits.

pub mod account;
pub mod agent;
pub mod audit;
pub mod billing;
mod call;
pub mod collection;
pub mod connectors;
pub mod email;
pub mod embedders;
pub mod error;
pub mod events;
pub mod extraction;
pub mod files;
pub mod maintenance;
pub mod memory;
pub mod metrics;
pub mod pageviews;
pub mod ratelimit;
pub mod reembed;
pub mod root;
pub mod service;
pub mod status;
pub mod tenant;
pub mod webhooks;

pub use agent::Agent;
pub use error::{Error, Result};
pub use memvault_storage::RevealPurpose;
pub use service::{AccountExport, ImportCollection, ImportOutcome, ImportedMemory, Portability};
pub use service::{
    Accounts, Billing, ErasureStarted, EventOutcome, ReturnUrls, RevealView, RevealedKey,
};
pub use service::{
    AuditTrail, Authorizer, Collections, Contradiction, ExtractionLlmInput, ExtractionLlmView,
    Extractor, Graph, Keys, ListPage, Maintenance, Memories, Memvault, Operator, Profile, Proxy,
    RememberInput, RememberOutcome, Search, ServiceConfig, Settings, SlotHistory, SpendView,
    Tenants,
};
pub use service::{
    BlobBackend, CompletedUpload, Download, FileResult, Files, Incoming, StagedFile, UploadSpec,
    UploadTicket,
};
pub use service::{ConnectionView, Connections, NewConnection, ProviderRuns, SyncOutcome};
pub use service::{DropAddress, Email, Inbound};
pub use service::{EmbeddedTexts, Internal, StorageConfigInput, StorageConfigView};
