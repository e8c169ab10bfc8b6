//! memvault-storage: records and their persistence.
//!
//! # Layout
//!
//! - [`records`]: the persisted shapes (tenant, API key, collection, memory) and the
//!   identifiers every store call takes ([`TenantId`], [`CollectionName`]).
//! - [`store`]: the narrow traits the rest of memvault persists through
//!   ([`MetaStore`] for tenants, keys and collections; [`MemoryStore`] for memories and
//!   their embeddings; [`JobStore`] for extraction jobs; [`OutboxStore`] for webhook
//!   deliveries not yet delivered; [`ReembedStore`] for the vectors of a re-embedding in
//!   progress). `memvault-postgres` implements them next to sled.
//! - [`sled_store`]: the embedded default, one sled directory under the data dir.
//! - [`routed`]: [`RoutedStore`], the platform store with the data of some tenants in
//!   databases of their own, and [`copy_tenant_data`], which moves it.
//! - [`store_suite`]: one behavioural test suite, one `#[test]` per check for each
//!   implementation through [`store_suite!`]. It is compiled unconditionally (no feature),
//!   so another crate's tests (memvault-postgres) run it without changing the feature set
//!   of a workspace build.
//!
//! # Blocking traits, and how Postgres fits
//!
//! The store traits ([`MetaStore`], [`MemoryStore`], [`JobStore`], [`OutboxStore`],
//! [`AuditStore`]) stay blocking: sled is an embedded engine whose calls (and fsyncs)
//! block, and every async caller already reaches the store through `spawn_blocking` (the
//! core crate's `blocking` helper). Postgres (`memvault-postgres`) is a blocking adapter
//! over an async client: it owns a small tokio runtime and `block_on`s each query from
//! the blocking thread it is called on. That keeps one trait per concern, one suite, and the
//! async/blocking hop in one place (`blocking`), instead of async twins of every trait
//! that each caller would have to choose between. Blobs differ (`memvault-blobs` is async)
//! because object_store is async and a blob transfer is long; records are small and
//! quick.
//!
//! This crate knows nothing of actors or HTTP.

pub mod crypto;
pub mod error;
pub mod ownership;
pub mod records;
pub mod routed;
pub mod sled_store;
pub mod store;
pub mod store_suite;

pub use crypto::{CryptoError, SecretBox};
pub use error::StorageError;
pub use ownership::TenantOwnership;
pub use records::{
    ApiKeyRecord, CollectionName, CollectionRecord, CreatedBy, EmbeddingModel, ExtractJobRecord,
    ExtractionLlmRecord, GrantRecord, IngestBatchRecord, IngestItemRecord, IngestItemState,
    JobState, MemoryRecord, RememberedFact, StagedEmbedding, StoredMemory, Suspension, TenantId,
    TenantRecord, TenantSettings, UsageRow,
};
pub use records::{
    AuditEntry, BillingRecord, DatabaseConfigRecord, DatabaseState, EmailAddressRecord, MailRecord,
    OutboxDelivery, RevealPurpose, RevealRecord, SessionRecord, StorageConfigRecord, WebhookRecord,
};
pub use records::{
    ConnectionRecord, ConnectionStatus, OAuthStateRecord, SyncRunRecord, SyncedRecord,
};
pub use records::{
    ImportCollectionRecord, ImportItemRecord, ImportJobRecord, ImportPayload, ImportSkipRecord,
    ImportState,
};
pub use routed::{copy_tenant_data, CopyProgress, RoutedStore, ServedTenants};
pub use sled_store::SledStore;
pub use store::{
    AccountStore, AuditStore, ConnectorStore, ImportStore, IngestStore, JobStore, MemoryStore,
    MetaStore, OutboxStore, ReembedStore, SessionStore, Store,
};
/// The vector type of a record's rarely filled lists (see [`MemoryRecord::images`]).
pub use thin_vec::ThinVec;
