//! What a tenant actor is asked to do.

use std::sync::Arc;

use memvault_index::VectorIndex;
use memvault_storage::{
    ApiKeyRecord, CollectionName, EmbeddingModel, GrantRecord, TenantRecord, TenantSettings,
};
use ractor::RpcReplyPort;
use serde_json::{Map, Value};

use super::state::CollectionEntry;
use crate::collection::Switch;
use crate::error::Result;

/// A change of a tenant's settings: given the current ones, the new ones (or a refusal).
pub type SettingsChange = Box<dyn FnOnce(&TenantSettings) -> Result<TenantSettings> + Send>;

/// A change of a tenant's record (its tier): given the current one, the new one (or a
/// refusal). The id and creation time are kept whatever the change returns.
pub type RecordChange = Box<dyn FnOnce(&TenantRecord) -> Result<TenantRecord> + Send>;

pub enum TenantMessage {
    /// The collection, created when missing (auto-create on first write).
    EnsureCollection {
        name: CollectionName,
        reply: RpcReplyPort<Result<CollectionEntry>>,
    },
    /// Creates a collection; a conflict when it exists.
    CreateCollection {
        name: CollectionName,
        description: Option<String>,
        metadata: Map<String, Value>,
        reply: RpcReplyPort<Result<CollectionEntry>>,
    },
    /// Changes the given fields of an existing collection.
    UpdateCollection {
        name: CollectionName,
        description: Option<String>,
        metadata: Option<Map<String, Value>>,
        reply: RpcReplyPort<Result<CollectionEntry>>,
    },
    /// Deletes a collection with all its memories.
    DeleteCollection {
        name: CollectionName,
        reply: RpcReplyPort<Result<()>>,
    },
    /// Creates or replaces one agent's grant on a collection (the first restricts it).
    PutGrant {
        name: CollectionName,
        grant: GrantRecord,
        reply: RpcReplyPort<Result<CollectionEntry>>,
    },
    /// Removes one agent's grant (the last one reopens the collection).
    DeleteGrant {
        name: CollectionName,
        agent_key_id: String,
        reply: RpcReplyPort<Result<CollectionEntry>>,
    },
    /// Stores and publishes a new API key of this tenant.
    AddKey {
        key: ApiKeyRecord,
        reply: RpcReplyPort<Result<Arc<ApiKeyRecord>>>,
    },
    /// Soft-revokes a key; refused when it is the tenant's last active key.
    RevokeKey {
        key_id: String,
        reply: RpcReplyPort<Result<Arc<ApiKeyRecord>>>,
    },
    /// Adds `new` and revokes `key_id` (the key making the request) in one step.
    RotateKey {
        key_id: String,
        new: Box<ApiKeyRecord>,
        reply: RpcReplyPort<Result<Arc<ApiKeyRecord>>>,
    },
    /// Changes the tenant's settings: `change` gets the current ones and returns the new
    /// ones (or refuses), so concurrent changes of different fields never undo each other.
    UpdateSettings {
        change: SettingsChange,
        reply: RpcReplyPort<Result<Arc<TenantSettings>>>,
    },
    /// Changes the tenant's record (its tier, after a billing event).
    UpdateRecord {
        change: RecordChange,
        reply: RpcReplyPort<Result<Arc<TenantRecord>>>,
    },
    /// Switches a collection to the vectors `model` made for it (its re-embedding is
    /// staged) and records the model in the collection's record.
    SwitchEmbeddings {
        name: CollectionName,
        model: EmbeddingModel,
        vectors: Box<VectorIndex>,
        reply: RpcReplyPort<Result<Switch>>,
    },
    /// Sent to itself after a back-off: restart a failed collection actor.
    RestartCollection { name: CollectionName },
}
