//! memvault-core: the actors and the behaviour they run.
//!
//! # Layout
//!
//! - [`root`]: the root supervisor; one tenant actor per tenant.
//! - [`tenant`]: the tenant actor (collections, keys) and what it publishes.
//! - [`collection`]: the collection actor, which serializes a collection's writes and
//!   publishes snapshots that reads use without touching a mailbox.
//! - [`service`]: [`Memvault`], the facade the HTTP edge calls, one method per use case.
//! - [`cluster`]: the seam to the server's leases when several nodes share one database.
//! - [`agent`]: API keys as agent identities, and the key directory used to authenticate.
//! - [`memory`]: what creating or changing a memory carries, and its validation rules.
//! - [`extraction`]: asynchronous remember as a job kind on `memvault-jobs`.
//!
//! Actors know nothing of HTTP; storage goes through `memvault-storage`'s traits.

pub mod agent;
pub mod audit;
mod call;
pub mod cluster;
pub mod collection;
pub mod embedders;
pub mod error;
pub mod extraction;
pub mod memory;
pub mod reembed;
pub mod root;
pub mod service;
pub mod tenant;

pub use agent::Agent;
pub use call::blocking;
pub use error::{Error, Result};
pub use service::{AccountExport, ImportCollection, ImportOutcome, ImportedMemory, Portability};
pub use service::{
    AuditTrail, Authorizer, Collections, Contradiction, ExtractionLlmInput, ExtractionLlmView,
    Extractor, Graph, Keys, ListPage, Maintenance, Memories, Memvault, Operator, Profile, Proxy,
    RememberInput, RememberOutcome, Search, ServiceConfig, Settings, SlotHistory, SpendView,
    Supervision, Tenants,
};
pub use service::{BlobBackend, Placement};
pub use service::{DatabaseConfigView, DatabaseOpener, DatabaseSupport, OpenedDatabase};
pub use service::{EmbeddedTexts, Internal, StorageConfigInput, StorageConfigView};
