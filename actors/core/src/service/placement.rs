//! Where a tenant's files live: the platform's store or the tenant's own bucket, the
//! signer of memvault's own presigned URLs, the platform storage a tenant's tier counts,
//! and the release of files no memory references any more.
//!
//! Core keeps this part of files because deleting memories (one, a collection, a sweep)
//! releases the files they attached. Everything that puts files in (drops, uploads, mail)
//! is `memvault-intake`, above core, through [`Placement`].

use std::collections::HashSet;
use std::sync::Arc;

use memvault_blobs::{BlobError, BlobKey, BlobStore, UrlSigner};
use memvault_files::{Attachment, PlacedStore, TenantStores};
use memvault_storage::crypto::SecretBox;
use memvault_storage::{StorageConfigRecord, TenantId};
use serde_json::Value;

use super::quotas::Quotas;
use super::tree::Tree;
use crate::error::{Error, Result};

/// Where files live: see the module docs.
#[derive(Clone)]
pub struct Placement {
    tree: Tree,
    stores: Arc<TenantStores>,
    signer: UrlSigner,
    /// Opens the credentials of tenants' own buckets.
    secrets: Option<Arc<SecretBox>>,
    quotas: Quotas,
}

impl Placement {
    pub(crate) fn new(
        tree: Tree,
        stores: Arc<TenantStores>,
        signer: UrlSigner,
        secrets: Option<Arc<SecretBox>>,
        quotas: Quotas,
    ) -> Self {
        Self {
            tree,
            stores,
            signer,
            secrets,
            quotas,
        }
    }

    /// The platform's store: where memvault's own presigned URLs point.
    pub fn platform(&self) -> &Arc<dyn BlobStore> {
        self.stores.platform()
    }

    /// Signs and checks memvault's own presigned URLs.
    pub fn signer(&self) -> &UrlSigner {
        &self.signer
    }

    /// Where the tenant's new files go: its own bucket when it configured one.
    pub fn active(&self, tenant: &TenantId) -> Result<PlacedStore> {
        let config = self.storage_config(tenant)?;
        self.stores
            .active(tenant, config.as_ref(), self.secrets.as_deref())
            .map_err(storage_error)
    }

    /// The store a file put in `store` is in; `None` when that bucket is no longer
    /// configured (the file stays there, memvault cannot reach it).
    pub fn holding(
        &self,
        tenant: &TenantId,
        store: Option<&str>,
    ) -> Result<Option<Arc<dyn BlobStore>>> {
        let config = match store {
            None => None,
            Some(_) => self.storage_config(tenant)?,
        };
        self.stores
            .holding(tenant, store, config.as_ref(), self.secrets.as_deref())
            .map_err(storage_error)
    }

    fn storage_config(&self, tenant: &TenantId) -> Result<Option<StorageConfigRecord>> {
        Ok(self
            .tree
            .tenant_handle(tenant)?
            .snapshot()
            .settings
            .storage
            .clone())
    }

    /// Refuses `bytes` more in the platform's storage when they would take the tenant
    /// past its tier's limit.
    pub async fn admit(&self, tenant: &TenantId, bytes: u64) -> Result<()> {
        let growth = memvault_types::tiers::Growth::StorageBytes(bytes);
        self.quotas.admit(tenant, growth).await
    }

    /// Adds freshly stored bytes to the tenant's count in the platform's storage.
    pub fn note_stored(&self, tenant: &TenantId, bytes: u64) {
        self.quotas.note_files_stored(tenant, bytes);
    }

    /// Deletes the blobs of these `images` entries that no memory of the tenant
    /// references any more.
    pub async fn release(&self, tenant: &TenantId, images: &[Value]) {
        let candidates: Vec<Attachment> =
            images.iter().filter_map(Attachment::from_value).collect();
        if candidates.is_empty() {
            return;
        }
        let referenced = self.referenced_files(tenant);
        for attachment in candidates {
            if !referenced.contains(&attachment.file_id) {
                self.delete(tenant, attachment.store.as_deref(), &attachment.path)
                    .await;
            }
        }
    }

    /// Every file id a memory of the tenant references.
    fn referenced_files(&self, tenant: &TenantId) -> HashSet<String> {
        let mut referenced = HashSet::new();
        let Ok(handle) = self.tree.tenant_handle(tenant) else {
            return referenced;
        };
        for entry in handle.snapshot().collections.values() {
            for memory in entry.handle.snapshot().memories.values() {
                for image in &memory.images {
                    if let Some(id) = image.get("file_id").and_then(Value::as_str) {
                        referenced.insert(id.to_owned());
                    }
                }
            }
        }
        referenced
    }

    /// Deletes a blob from the store it was put in (nothing when that bucket is no
    /// longer configured: memvault has no credentials for it).
    pub async fn delete(&self, tenant: &TenantId, store: Option<&str>, path: &str) {
        let Ok(key) = blob_key(tenant, path) else {
            return;
        };
        match self.holding(tenant, store) {
            Ok(Some(holding)) => {
                if let Err(error) = holding.delete(&key).await {
                    tracing::warn!(%key, %error, "a file was not deleted");
                }
            }
            Ok(None) => {
                tracing::info!(%key, "a file in a bucket no longer configured is left there")
            }
            Err(error) => tracing::warn!(%key, %error, "a file was not deleted"),
        }
    }

    /// Deletes every file of a tenant that is being erased: in the platform's store, and
    /// in its own bucket (`storage`, from its settings) when that can still be reached (a
    /// bucket gone or no longer ours must not hold the erasure up). Returns how many were
    /// deleted.
    pub async fn erase_tenant(
        &self,
        tenant: &TenantId,
        storage: Option<&StorageConfigRecord>,
    ) -> Result<usize> {
        let mut erased = self
            .platform()
            .delete_tenant(tenant)
            .await
            .map_err(storage_error)?;
        if let Some(config) = storage {
            match self
                .stores
                .active(tenant, Some(config), self.secrets.as_deref())
            {
                Ok(placed) => match placed.store.delete_tenant(tenant).await {
                    Ok(count) => erased += count,
                    Err(error) => {
                        tracing::warn!(tenant = %tenant, %error, "the tenant's own bucket could not be emptied")
                    }
                },
                Err(error) => {
                    tracing::warn!(tenant = %tenant, %error, "the tenant's own bucket could not be opened")
                }
            }
        }
        self.forget(tenant);
        Ok(erased)
    }

    /// Forgets what is kept of a tenant that left the service: its opened bucket and its
    /// counted bytes.
    pub(crate) fn forget(&self, tenant: &TenantId) {
        self.stores.forget(tenant);
        self.quotas.forget(tenant);
    }

    /// Bytes stored for the tenant (files, uploads) in the platform's storage (a tenant's
    /// own bucket is its own to count).
    pub async fn stored_bytes(&self, tenant: &TenantId) -> Result<u64> {
        super::quotas::stored_bytes(self.platform(), tenant).await
    }
}

/// The key of a tenant's file at `path`.
pub fn blob_key(tenant: &TenantId, path: &str) -> Result<BlobKey> {
    BlobKey::new(tenant, path).map_err(storage_error)
}

/// A storage failure.
pub fn storage_error(error: BlobError) -> Error {
    Error::Blobs(error.to_string())
}

/// A blob error of a presigned request: the client's, or the storage's.
pub fn blob_error(error: BlobError) -> Error {
    match error {
        BlobError::NotFound { .. } => Error::BlobNotFound,
        BlobError::BadSignature | BlobError::InvalidKey { .. } => Error::BadSignature,
        BlobError::Expired => Error::UrlExpired,
        other => storage_error(other),
    }
}
