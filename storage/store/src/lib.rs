//! memvault-storage: records and their persistence.
//!
//! # Layout
//!
//! - [`records`]: the persisted shapes (tenant, API key, collection, memory) and the
//!   identifiers every store call takes ([`TenantId`], [`CollectionName`]).
//! - [`store`]: the narrow traits the rest of memvault persists through
//!   ([`MetaStore`] for tenants, keys and collections; [`MemoryStore`] for memories and
//!   their embeddings; [`JobStore`] for extraction jobs; [`OutboxStore`] for webhook
//!   deliveries not yet delivered). Postgres will implement them next to sled.
//! - [`sled_store`]: the embedded default, one sled directory under the data dir.
//! - `store_suite` (feature `testing`): one behavioural test suite, one `#[test]` per
//!   check for each implementation through [`store_suite!`].
//!
//! This crate knows nothing of actors or HTTP.

pub mod crypto;
pub mod error;
pub mod records;
pub mod sled_store;
pub mod store;
#[cfg(any(test, feature = "testing"))]
pub mod store_suite;

pub use crypto::{CryptoError, SecretBox};
pub use error::StorageError;
pub use records::{
    ApiKeyRecord, CollectionName, CollectionRecord, CreatedBy, ExtractJobRecord,
    ExtractionLlmRecord, GrantRecord, JobState, MemoryRecord, RememberedFact, StoredMemory,
    TenantId, TenantRecord, TenantSettings, UsageRow,
};
pub use records::{AuditEntry, OutboxDelivery, WebhookRecord};
pub use sled_store::SledStore;
pub use store::{AuditStore, JobStore, MemoryStore, MetaStore, OutboxStore, Store};
