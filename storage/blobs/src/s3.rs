//! The S3 backend (feature `s3`): object_store's `AmazonS3` for the bytes, its SigV4
//! [`Signer`] for presigned URLs, so those point at the bucket, not at memvault.

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::signer::{Method, Signer};
use url::Url;

use crate::config::S3Config;
use crate::error::{BlobError, Result};
use crate::key::BlobKey;
use crate::objects::{MetadataPlacement, ObjectBlobStore, Presigner};
use crate::presign::{check_expiry, PresignMethod};

impl ObjectBlobStore {
    /// Blobs as objects in one bucket, at `{tenant}/{path}`; content type and digest as
    /// the object's `Content-Type` and `x-amz-meta-sha256`; presigned URLs are the
    /// bucket's own (SigV4). A client only: nothing is sent until the first call.
    pub fn s3(config: &S3Config) -> Result<Self> {
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
        Ok(Self::new(
            client.clone(),
            MetadataPlacement::Attributes,
            Presigner::S3(client),
        ))
    }
}

/// A SigV4 URL for `key` (the lifetime checked against S3's limits first).
pub(crate) async fn presign(
    client: &AmazonS3,
    method: PresignMethod,
    key: &BlobKey,
    expires_in: Duration,
) -> Result<Url> {
    check_expiry(expires_in)?;
    let method = match method {
        PresignMethod::Get => Method::GET,
        PresignMethod::Put => Method::PUT,
    };
    client
        .signed_url(method, &key.object_path(), expires_in)
        .await
        .map_err(|error| BlobError::Backend(error.to_string()))
}
