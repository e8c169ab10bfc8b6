//! The shared blob store as the shelf of collections' index snapshots (several nodes):
//! each collection's latest snapshot is one blob, `{tenant}/indexes/{collection}/snapshot`,
//! so a tenant's erasure removes it with the tenant's files. See
//! `memvault_index::SnapshotShelf` for what a snapshot is and why a stale one is harmless.

use std::sync::Arc;

use bytes::Bytes;
use memvault_blobs::{BlobError, BlobKey, BlobStore};
use memvault_index::{snapshot_path, SnapshotShelf};
use memvault_storage::{CollectionName, TenantId};
use tokio::runtime::Handle;

/// Index snapshots in the platform's blob store. Its calls block their thread on the
/// runtime (the indexes call them from blocking threads).
pub struct BlobShelf {
    blobs: Arc<dyn BlobStore>,
    runtime: Handle,
}

impl BlobShelf {
    /// A shelf on `blobs`; call from within the runtime.
    pub fn new(blobs: Arc<dyn BlobStore>) -> Self {
        Self {
            blobs,
            runtime: Handle::current(),
        }
    }

    fn key(tenant: &TenantId, collection: &CollectionName) -> Result<BlobKey, String> {
        BlobKey::new(tenant, &snapshot_path(collection)).map_err(|error| error.to_string())
    }
}

impl std::fmt::Debug for BlobShelf {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("BlobShelf")
    }
}

impl SnapshotShelf for BlobShelf {
    fn fetch(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Option<Vec<u8>>, String> {
        let key = Self::key(tenant, collection)?;
        match self.runtime.block_on(self.blobs.get(&key)) {
            Ok(bytes) => Ok(Some(bytes.to_vec())),
            Err(BlobError::NotFound { .. }) => Ok(None),
            Err(error) => Err(error.to_string()),
        }
    }

    fn keep(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        snapshot: Vec<u8>,
    ) -> Result<(), String> {
        let key = Self::key(tenant, collection)?;
        let put = self
            .blobs
            .put(&key, Bytes::from(snapshot), "application/octet-stream");
        self.runtime
            .block_on(put)
            .map(|_| ())
            .map_err(|error| error.to_string())
    }

    fn discard(&self, tenant: &TenantId, collection: &CollectionName) -> Result<(), String> {
        let key = Self::key(tenant, collection)?;
        self.runtime
            .block_on(self.blobs.delete(&key))
            .map_err(|error| error.to_string())
    }
}
