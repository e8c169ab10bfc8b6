//! The narrow traits memvault persists through. Each call is blocking (callers run it on
//! a blocking thread) and durable on return: a write that returned `Ok` survives a
//! process crash.

use crate::error::Result;
use crate::records::{
    ApiKeyRecord, CollectionName, CollectionRecord, StoredMemory, TenantId, TenantRecord,
};

/// Tenants, their API keys and their collections.
pub trait MetaStore: Send + Sync + 'static {
    fn put_tenant(&self, tenant: &TenantRecord) -> Result<()>;
    fn tenants(&self) -> Result<Vec<TenantRecord>>;

    fn put_api_key(&self, key: &ApiKeyRecord) -> Result<()>;
    fn api_keys(&self, tenant: &TenantId) -> Result<Vec<ApiKeyRecord>>;

    fn put_collection(&self, tenant: &TenantId, collection: &CollectionRecord) -> Result<()>;
    fn collections(&self, tenant: &TenantId) -> Result<Vec<CollectionRecord>>;
    /// Removes the collection and every memory in it, atomically.
    fn delete_collection(&self, tenant: &TenantId, name: &CollectionName) -> Result<()>;

    /// Bytes the tenant's records take in the store (keys and values).
    fn tenant_bytes(&self, tenant: &TenantId) -> Result<u64>;
}

/// Memories and their embeddings, per collection.
pub trait MemoryStore: Send + Sync + 'static {
    /// Inserts or replaces memories (record and embedding together), atomically.
    fn put_memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        memories: &[StoredMemory],
    ) -> Result<()>;
    fn memory(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        id: &str,
    ) -> Result<Option<StoredMemory>>;
    /// Every memory of a collection with its embedding, in no particular order.
    fn memories(&self, tenant: &TenantId, collection: &CollectionName)
        -> Result<Vec<StoredMemory>>;
    fn delete_memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        ids: &[String],
    ) -> Result<()>;
    /// Moves one memory between two collections of a tenant in one atomic write: it is
    /// never in both, nor in neither.
    fn move_memory(
        &self,
        tenant: &TenantId,
        from: &CollectionName,
        to: &CollectionName,
        memory: &StoredMemory,
    ) -> Result<()>;
}

/// Everything the service persists; one value of it is shared by all actors.
pub trait Store: MetaStore + MemoryStore {}

impl<T: MetaStore + MemoryStore> Store for T {}
