//! The default backend: files under a directory (`{data_dir}/blobs`), presigned URLs
//! signed and served by memvault itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use object_store::local::LocalFileSystem;

use crate::error::{BlobError, Result};
use crate::objects::{MetadataPlacement, ObjectBlobStore, Presigner};
use crate::presign::UrlSigner;

impl ObjectBlobStore {
    /// The default root under a data dir.
    pub fn default_root(data_dir: &Path) -> PathBuf {
        data_dir.join("blobs")
    }

    /// Blobs as files, opened (created when missing) under `root`: bytes under
    /// `{root}/objects/{tenant}/{path}`, content type and digest in a sidecar under
    /// `{root}/metadata/{tenant}/{path}`; presigned URLs are memvault's own.
    ///
    /// A file system cannot hold both `a` and `a/b`; the second put of such a pair fails
    /// with [`BlobError::Backend`] (S3 would take both).
    pub fn local(root: &Path, signer: UrlSigner) -> Result<Self> {
        let objects = open_directory(&root.join("objects"))?;
        let sidecars = open_directory(&root.join("metadata"))?;
        Ok(Self::new(
            Arc::new(objects),
            MetadataPlacement::Sidecar(Arc::new(sidecars)),
            Presigner::Memvault(signer),
        )
        .with_directories(vec![root.join("objects"), root.join("metadata")]))
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

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::blob_store::BlobStore;
    use crate::blob_suite::test_signer;
    use crate::key::BlobKey;
    use memvault_storage::TenantId;

    crate::blob_suite!(local, || {
        let directory = tempfile::tempdir().unwrap();
        let store = ObjectBlobStore::local(directory.path(), test_signer()).unwrap();
        (store, directory)
    });

    #[tokio::test]
    async fn delete_tenant_leaves_no_folder_of_the_tenant() {
        let directory = tempfile::tempdir().unwrap();
        let store = ObjectBlobStore::local(directory.path(), test_signer()).unwrap();
        let (doomed, kept) = (TenantId::generate(), TenantId::generate());
        for tenant in [&doomed, &kept] {
            for path in ["files/a/one.txt", "files/b/deep/two.pdf"] {
                let key = BlobKey::new(tenant, path).unwrap();
                store
                    .put(&key, Bytes::from_static(b"bytes"), "text/plain")
                    .await
                    .unwrap();
            }
        }
        assert_eq!(store.delete_tenant(&doomed).await.unwrap(), 2);
        for part in ["objects", "metadata"] {
            assert!(!directory.path().join(part).join(doomed.as_str()).exists());
            assert!(directory.path().join(part).join(kept.as_str()).exists());
        }
        assert_eq!(store.delete_tenant(&doomed).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn blobs_survive_reopening_the_directory() {
        let directory = tempfile::tempdir().unwrap();
        let key = BlobKey::new(&TenantId::generate(), "kept.txt").unwrap();
        {
            let store = ObjectBlobStore::local(directory.path(), test_signer()).unwrap();
            store
                .put(&key, Bytes::from_static(b"kept"), "text/plain")
                .await
                .unwrap();
        }
        let store = ObjectBlobStore::local(directory.path(), test_signer()).unwrap();
        assert_eq!(store.get(&key).await.unwrap(), Bytes::from_static(b"kept"));
        assert_eq!(store.head(&key).await.unwrap().content_type, "text/plain");
    }

    #[tokio::test]
    async fn a_stale_sidecar_is_not_reported_for_new_bytes() {
        let directory = tempfile::tempdir().unwrap();
        let store = ObjectBlobStore::local(directory.path(), test_signer()).unwrap();
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
