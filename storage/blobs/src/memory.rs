//! A blob store in memory, for tests: object_store's `InMemory` with memvault's own
//! presigned URLs, run through the same suite as the real backends.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use object_store::memory::InMemory;
use url::Url;

use crate::blob_store::{BlobEntry, BlobMeta, BlobStore, PutReceipt};
use crate::error::Result;
use crate::key::{BlobKey, BlobPrefix};
use crate::objects::{MetadataPlacement, ObjectBlobs};
use crate::presign::{PresignMethod, UrlSigner};

/// Blobs in a map; gone with the value.
#[derive(Debug, Clone)]
pub struct InMemoryBlobStore {
    /// The shared object_store logic over `InMemory`, which keeps attributes itself.
    blobs: ObjectBlobs,
    /// Mints URLs as the local backend does, so the edge can serve them in tests.
    signer: UrlSigner,
}

impl InMemoryBlobStore {
    pub fn new(signer: UrlSigner) -> Self {
        Self {
            blobs: ObjectBlobs::new(Arc::new(InMemory::new()), MetadataPlacement::Attributes),
            signer,
        }
    }
}

#[async_trait]
impl BlobStore for InMemoryBlobStore {
    async fn put(&self, key: &BlobKey, bytes: Bytes, content_type: &str) -> Result<PutReceipt> {
        self.blobs.put(key, bytes, content_type).await
    }

    async fn get(&self, key: &BlobKey) -> Result<Bytes> {
        self.blobs.get(key).await
    }

    async fn head(&self, key: &BlobKey) -> Result<BlobMeta> {
        self.blobs.head(key).await
    }

    async fn delete(&self, key: &BlobKey) -> Result<()> {
        self.blobs.delete(key).await
    }

    async fn list(&self, prefix: &BlobPrefix) -> Result<Vec<BlobEntry>> {
        self.blobs.list(prefix).await
    }

    async fn presign_get(&self, key: &BlobKey, expires_in: Duration) -> Result<Url> {
        self.signer
            .sign(PresignMethod::Get, key, expires_in, chrono::Utc::now())
    }

    async fn presign_put(&self, key: &BlobKey, expires_in: Duration) -> Result<Url> {
        self.signer
            .sign(PresignMethod::Put, key, expires_in, chrono::Utc::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob_suite::test_signer;

    crate::blob_suite!(in_memory, || (InMemoryBlobStore::new(test_signer()), ()));
}
