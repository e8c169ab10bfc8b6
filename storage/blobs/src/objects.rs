//! [`ObjectBlobStore`], the one [`BlobStore`] implementation, over any `object_store`
//! backend: a [`BlobKey`] mapped onto an object path, the SHA-256 computed on put,
//! object_store's errors mapped to ours. The backends (`local.rs`, `memory.rs`, `s3.rs`
//! construct one each) differ only in where a blob's content type and digest live
//! ([`MetadataPlacement`]) and in how URLs are presigned ([`Presigner`]).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::{
    Attribute, AttributeValue, Attributes, GetOptions, ObjectStore, ObjectStoreExt, PutOptions,
    PutPayload,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use url::Url;

use crate::blob_store::{BlobEntry, BlobMeta, BlobStore, PutReceipt, DEFAULT_CONTENT_TYPE};
use crate::error::{BlobError, Result};
use crate::key::{BlobKey, BlobPrefix};
use crate::presign::{PresignMethod, UrlSigner};
use memvault_storage::TenantId;

/// The user-metadata name of the digest on backends with object attributes (S3 sends it
/// as `x-amz-meta-sha256`).
const SHA256_ATTRIBUTE: &str = "sha256";

/// Where a backend keeps a blob's content type and digest.
#[derive(Debug, Clone)]
pub(crate) enum MetadataPlacement {
    /// As object attributes next to the bytes (S3, in-memory).
    Attributes,
    /// In a JSON sidecar at the same path in a second store: object_store's local file
    /// system has no attributes.
    Sidecar(Arc<dyn ObjectStore>),
}

/// A sidecar's content. `e_tag` is the tag of the bytes it describes: after a crash
/// between writing the bytes and the sidecar, the tags differ and the stale sidecar is
/// ignored rather than reporting the old digest for new bytes.
#[derive(Debug, Serialize, Deserialize)]
struct Sidecar {
    content_type: String,
    sha256: String,
    e_tag: Option<String>,
}

/// How a backend presigns URLs.
#[derive(Debug, Clone)]
pub(crate) enum Presigner {
    /// memvault's own signed `/v1/blobs/...` URLs, served by memvault (local, in memory).
    Memvault(UrlSigner),
    /// The bucket's own SigV4 URLs (S3).
    #[cfg(feature = "s3")]
    S3(Arc<object_store::aws::AmazonS3>),
}

impl Presigner {
    async fn sign(
        &self,
        method: PresignMethod,
        key: &BlobKey,
        expires_in: Duration,
    ) -> Result<Url> {
        match self {
            Self::Memvault(signer) => signer.sign(method, key, expires_in, chrono::Utc::now()),
            #[cfg(feature = "s3")]
            Self::S3(client) => crate::s3::presign(client, method, key, expires_in).await,
        }
    }
}

/// Blobs over an object store: local files (`ObjectBlobStore::local`), memory
/// (`ObjectBlobStore::in_memory`) or an S3 bucket (`ObjectBlobStore::s3`, feature `s3`).
#[derive(Debug, Clone)]
pub struct ObjectBlobStore {
    /// The blobs' bytes, at `{tenant}/{path}`.
    objects: Arc<dyn ObjectStore>,
    /// Where content type and digest live.
    metadata: MetadataPlacement,
    /// Mints presigned URLs.
    presigner: Presigner,
    /// The local backend's directories (bytes, sidecars), each holding one directory per
    /// tenant that [`BlobStore::delete_tenant`] removes; none for the other backends.
    directories: Vec<std::path::PathBuf>,
}

impl ObjectBlobStore {
    pub(crate) fn new(
        objects: Arc<dyn ObjectStore>,
        metadata: MetadataPlacement,
        presigner: Presigner,
    ) -> Self {
        Self {
            objects,
            metadata,
            presigner,
            directories: Vec::new(),
        }
    }

    /// Names the directories a local backend keeps per-tenant folders in.
    pub(crate) fn with_directories(mut self, directories: Vec<std::path::PathBuf>) -> Self {
        self.directories = directories;
        self
    }
}

#[async_trait]
impl BlobStore for ObjectBlobStore {
    async fn put(&self, key: &BlobKey, bytes: Bytes, content_type: &str) -> Result<PutReceipt> {
        let receipt = PutReceipt {
            size: bytes.len() as u64,
            sha256: hex::encode(Sha256::digest(&bytes)),
        };
        let location = key.object_path();
        let full_key = key.as_string();
        match &self.metadata {
            MetadataPlacement::Attributes => {
                let mut attributes = Attributes::new();
                attributes.insert(
                    Attribute::ContentType,
                    AttributeValue::from(content_type.to_owned()),
                );
                attributes.insert(
                    Attribute::Metadata(SHA256_ATTRIBUTE.into()),
                    AttributeValue::from(receipt.sha256.clone()),
                );
                let options = PutOptions {
                    attributes,
                    ..PutOptions::default()
                };
                self.objects
                    .put_opts(&location, PutPayload::from_bytes(bytes), options)
                    .await
                    .map_err(|error| BlobError::from_object_store(&full_key, error))?;
            }
            MetadataPlacement::Sidecar(sidecars) => {
                let written = self
                    .objects
                    .put(&location, PutPayload::from_bytes(bytes))
                    .await
                    .map_err(|error| BlobError::from_object_store(&full_key, error))?;
                let sidecar = Sidecar {
                    content_type: content_type.to_owned(),
                    sha256: receipt.sha256.clone(),
                    e_tag: written.e_tag,
                };
                let encoded = serde_json::to_vec(&sidecar)
                    .map_err(|error| BlobError::Backend(error.to_string()))?;
                sidecars
                    .put(&location, PutPayload::from(encoded))
                    .await
                    .map_err(|error| BlobError::from_object_store(&full_key, error))?;
            }
        }
        Ok(receipt)
    }

    async fn get(&self, key: &BlobKey) -> Result<Bytes> {
        let full_key = key.as_string();
        let found = self
            .objects
            .get(&key.object_path())
            .await
            .map_err(|error| BlobError::from_object_store(&full_key, error))?;
        found
            .bytes()
            .await
            .map_err(|error| BlobError::from_object_store(&full_key, error))
    }

    async fn head(&self, key: &BlobKey) -> Result<BlobMeta> {
        let full_key = key.as_string();
        let location = key.object_path();
        // A HEAD-style get: the metadata and, where the backend has them, the attributes.
        let found = self
            .objects
            .get_opts(&location, GetOptions::default().with_head(true))
            .await
            .map_err(|error| BlobError::from_object_store(&full_key, error))?;
        let (content_type, sha256) = match &self.metadata {
            MetadataPlacement::Attributes => (
                found
                    .attributes
                    .get(&Attribute::ContentType)
                    .map(|value| value.as_ref().to_owned()),
                found
                    .attributes
                    .get(&Attribute::Metadata(SHA256_ATTRIBUTE.into()))
                    .map(|value| value.as_ref().to_owned()),
            ),
            MetadataPlacement::Sidecar(sidecars) => {
                match read_sidecar(sidecars.as_ref(), &location, &full_key).await? {
                    Some(sidecar) if sidecar.e_tag == found.meta.e_tag => {
                        (Some(sidecar.content_type), Some(sidecar.sha256))
                    }
                    _ => (None, None),
                }
            }
        };
        Ok(BlobMeta {
            key: key.clone(),
            size: found.meta.size,
            content_type: content_type.unwrap_or_else(|| DEFAULT_CONTENT_TYPE.to_owned()),
            sha256,
            last_modified: found.meta.last_modified,
        })
    }

    async fn delete(&self, key: &BlobKey) -> Result<()> {
        let full_key = key.as_string();
        let location = key.object_path();
        ignore_not_found(self.objects.delete(&location).await)
            .map_err(|error| BlobError::from_object_store(&full_key, error))?;
        // The sidecar goes second: one left behind by a crash is ignored (its tag matches
        // no bytes) and replaced by the next put.
        if let MetadataPlacement::Sidecar(sidecars) = &self.metadata {
            ignore_not_found(sidecars.delete(&location).await)
                .map_err(|error| BlobError::from_object_store(&full_key, error))?;
        }
        Ok(())
    }

    async fn list(&self, prefix: &BlobPrefix) -> Result<Vec<BlobEntry>> {
        let location = prefix.object_path();
        let listed: Vec<object_store::ObjectMeta> = self
            .objects
            .list(Some(&location))
            .try_collect()
            .await
            .map_err(|error| BlobError::Backend(error.to_string()))?;
        let mut entries = listed
            .into_iter()
            .map(|meta| {
                Ok(BlobEntry {
                    key: BlobKey::from_object_path(&meta.location)?,
                    size: meta.size,
                    last_modified: meta.last_modified,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        entries.sort_by(|left, right| left.key.cmp(&right.key));
        Ok(entries)
    }

    async fn delete_tenant(&self, tenant: &TenantId) -> Result<usize> {
        let listed = self.list(&BlobPrefix::tenant(tenant)?).await?;
        for entry in &listed {
            self.delete(&entry.key).await?;
        }
        for directory in &self.directories {
            let folder = directory.join(tenant.as_str());
            match tokio::fs::remove_dir_all(&folder).await {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    return Err(BlobError::Backend(format!(
                        "cannot remove {}: {error}",
                        folder.display()
                    )))
                }
            }
        }
        Ok(listed.len())
    }

    async fn presign_get(&self, key: &BlobKey, expires_in: Duration) -> Result<Url> {
        self.presigner
            .sign(PresignMethod::Get, key, expires_in)
            .await
    }

    async fn presign_put(&self, key: &BlobKey, expires_in: Duration) -> Result<Url> {
        self.presigner
            .sign(PresignMethod::Put, key, expires_in)
            .await
    }
}

async fn read_sidecar(
    sidecars: &dyn ObjectStore,
    location: &object_store::path::Path,
    full_key: &str,
) -> Result<Option<Sidecar>> {
    let found = match sidecars.get(location).await {
        Ok(found) => found,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(error) => return Err(BlobError::from_object_store(full_key, error)),
    };
    let bytes = found
        .bytes()
        .await
        .map_err(|error| BlobError::from_object_store(full_key, error))?;
    // A torn or foreign sidecar is as good as none: the bytes are still served.
    Ok(serde_json::from_slice(&bytes).ok())
}

fn ignore_not_found(outcome: object_store::Result<()>) -> object_store::Result<()> {
    match outcome {
        Err(object_store::Error::NotFound { .. }) => Ok(()),
        other => other,
    }
}
