//! The default backend: files under a directory (`{data_dir}/blobs`), presigned URLs
//! signed and served by memvault itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use object_store::local::LocalFileSystem;
use url::Url;

use crate::blob_store::{BlobEntry, BlobMeta, BlobStore, PutReceipt};
use crate::error::{BlobError, Result};
use crate::key::{BlobKey, BlobPrefix};
use crate::objects::{MetadataPlacement, ObjectBlobs};
use crate::presign::{PresignMethod, UrlSigner};

/// Blobs as files: bytes under `{root}/objects/{tenant}/{path}`, content type and digest
/// in a sidecar under `{root}/metadata/{tenant}/{path}`.
///
/// A file system cannot hold both `a` and `a/b`; the second put of such a pair fails with
/// [`BlobError::Backend`] (S3 would take both).
#[derive(Debug, Clone)]
pub struct LocalBlobStore {
    /// The shared object_store logic over the two directories.
    blobs: ObjectBlobs,
    /// Mints the `/v1/blobs/...` URLs memvault serves.
    signer: UrlSigner,
}

impl LocalBlobStore {
    /// The default root under a data dir.
    pub fn default_root(data_dir: &Path) -> PathBuf {
        data_dir.join("blobs")
    }

    /// Opens (creating when missing) the store under `root`.
    pub fn open(root: &Path, signer: UrlSigner) -> Result<Self> {
        let objects = open_directory(&root.join("objects"))?;
        let sidecars = open_directory(&root.join("metadata"))?;
        Ok(Self {
            blobs: ObjectBlobs::new(
                Arc::new(objects),
                MetadataPlacement::Sidecar(Arc::new(sidecars)),
            ),
            signer,
        })
    }
}

fn open_directory(directory: &Path) -> Result<LocalFileSystem> {
    std::fs::create_dir_all(directory).map_err(|error| {
        BlobError::Backend(format!("cannot create {}: {error}", directory.display()))
    })?;
    let store = LocalFileSystem::new_with_prefix(directory)
        .map_err(|error| BlobError::Backend(error.to_string()))?;
    // Durable on return: fsync each written file and its directory.
    Ok(store.with_fsync(true))
}

#[async_trait]
impl BlobStore for LocalBlobStore {
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
    use memvault_storage::TenantId;

    crate::blob_suite!(local, || {
        let directory = tempfile::tempdir().unwrap();
        let store = LocalBlobStore::open(directory.path(), test_signer()).unwrap();
        (store, directory)
    });

    #[tokio::test]
    async fn blobs_survive_reopening_the_directory() {
        let directory = tempfile::tempdir().unwrap();
        let key = BlobKey::new(&TenantId::generate(), "kept.txt").unwrap();
        {
            let store = LocalBlobStore::open(directory.path(), test_signer()).unwrap();
            store
                .put(&key, Bytes::from_static(b"kept"), "text/plain")
                .await
                .unwrap();
        }
        let store = LocalBlobStore::open(directory.path(), test_signer()).unwrap();
        assert_eq!(store.get(&key).await.unwrap(), Bytes::from_static(b"kept"));
        assert_eq!(store.head(&key).await.unwrap().content_type, "text/plain");
    }

    #[tokio::test]
    async fn a_stale_sidecar_is_not_reported_for_new_bytes() {
        let directory = tempfile::tempdir().unwrap();
        let store = LocalBlobStore::open(directory.path(), test_signer()).unwrap();
        let key = BlobKey::new(&TenantId::generate(), "doc.txt").unwrap();
        store
            .put(&key, Bytes::from_static(b"old"), "text/plain")
            .await
            .unwrap();
        // New bytes written without their sidecar, as after a crash between the two.
        let file = directory
            .path()
            .join("objects")
            .join(key.tenant().as_str())
            .join("doc.txt");
        std::fs::write(&file, b"newer bytes").unwrap();
        let meta = store.head(&key).await.unwrap();
        assert_eq!(meta.size, 11);
        assert_eq!(meta.sha256, None);
        assert_eq!(meta.content_type, crate::DEFAULT_CONTENT_TYPE);
    }
}
