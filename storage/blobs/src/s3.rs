//! The S3 backend (feature `s3`): object_store's `AmazonS3` for the bytes, its SigV4
//! [`Signer`] for presigned URLs, so those point at the bucket, not at memvault.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::signer::{Method, Signer};
use url::Url;

use crate::blob_store::{BlobEntry, BlobMeta, BlobStore, PutReceipt};
use crate::config::S3Config;
use crate::error::{BlobError, Result};
use crate::key::{BlobKey, BlobPrefix};
use crate::objects::{MetadataPlacement, ObjectBlobs};
use crate::presign::check_expiry;

/// Blobs as objects in one bucket, at `{tenant}/{path}`; content type and digest as the
/// object's `Content-Type` and `x-amz-meta-sha256`.
#[derive(Debug, Clone)]
pub struct S3BlobStore {
    /// The shared object_store logic over the bucket.
    blobs: ObjectBlobs,
    /// The same client, as a SigV4 signer.
    signer: Arc<AmazonS3>,
}

impl S3BlobStore {
    /// A client for the bucket; nothing is sent until the first call.
    pub fn open(config: &S3Config) -> Result<Self> {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&config.bucket)
            .with_region(&config.region)
            .with_access_key_id(&config.access_key)
            .with_secret_access_key(&config.secret_key)
            .with_virtual_hosted_style_request(!config.force_path_style);
        if let Some(endpoint) = &config.endpoint_url {
            builder = builder
                .with_endpoint(endpoint)
                // A local test server speaks plain HTTP; only an explicit http:// allows it.
                .with_allow_http(endpoint.starts_with("http://"));
        }
        let client = Arc::new(
            builder
                .build()
                .map_err(|error| BlobError::Backend(error.to_string()))?,
        );
        Ok(Self {
            blobs: ObjectBlobs::new(client.clone(), MetadataPlacement::Attributes),
            signer: client,
        })
    }

    async fn presign(&self, method: Method, key: &BlobKey, expires_in: Duration) -> Result<Url> {
        check_expiry(expires_in)?;
        self.signer
            .signed_url(method, &key.object_path(), expires_in)
            .await
            .map_err(|error| BlobError::Backend(error.to_string()))
    }
}

#[async_trait]
impl BlobStore for S3BlobStore {
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
        self.presign(Method::GET, key, expires_in).await
    }

    async fn presign_put(&self, key: &BlobKey, expires_in: Duration) -> Result<Url> {
        self.presign(Method::PUT, key, expires_in).await
    }
}
