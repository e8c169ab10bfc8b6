//! Where a tenant's files live: the platform's store, or the tenant's own S3-compatible
//! bucket once it configured one (`PUT /v1/memory/storage/config`).
//!
//! A file remembers the store it was put in (`Attachment::store`, `IngestItemRecord::
//! blob_store`): `None` for the platform's, else the bucket's [`store_id`], which names
//! the endpoint and bucket, not the credentials. Rotating the keys of the same bucket keeps
//! every file reachable; a file in a bucket that is no longer configured stays in that
//! bucket, and memvault no longer links it (it has no credentials for it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use memvault_blobs::{BlobError, BlobKey, BlobStore, S3Config};
use memvault_storage::crypto::SecretBox;
use memvault_storage::{StorageConfigRecord, TenantId};
use sha2::{Digest, Sha256};

/// A store and the id that files put in it remember (`None`: the platform's).
#[derive(Clone)]
pub struct PlacedStore {
    pub id: Option<String>,
    pub store: Arc<dyn BlobStore>,
}

/// The id of a bucket: the same endpoint and bucket name give the same id, whatever the
/// keys.
pub fn store_id(endpoint_url: Option<&str>, bucket: &str) -> String {
    let mut digest = Sha256::new();
    digest.update(endpoint_url.unwrap_or("aws").as_bytes());
    digest.update(b"\n");
    digest.update(bucket.as_bytes());
    format!("s3-{}", &hex::encode(digest.finalize())[..16])
}

/// The platform's store and the tenants' own buckets, opened on first use and kept while
/// their configuration is unchanged.
pub struct TenantStores {
    platform: Arc<dyn BlobStore>,
    opened: Mutex<HashMap<TenantId, Opened>>,
    /// Each request to a tenant's bucket gives up after this long.
    timeout: Duration,
}

struct Opened {
    store_id: String,
    updated_at: DateTime<Utc>,
    store: Arc<dyn BlobStore>,
}

impl TenantStores {
    pub fn new(platform: Arc<dyn BlobStore>, timeout: Duration) -> Self {
        Self {
            platform,
            opened: Mutex::new(HashMap::new()),
            timeout,
        }
    }

    pub fn platform(&self) -> &Arc<dyn BlobStore> {
        &self.platform
    }

    /// Where the tenant's new files go: its own bucket when it configured one.
    pub fn active(
        &self,
        tenant: &TenantId,
        config: Option<&StorageConfigRecord>,
        secrets: Option<&SecretBox>,
    ) -> Result<PlacedStore, BlobError> {
        match config {
            None => Ok(PlacedStore {
                id: None,
                store: self.platform.clone(),
            }),
            Some(config) => Ok(PlacedStore {
                id: Some(config.store_id.clone()),
                store: self.open(tenant, config, secrets)?,
            }),
        }
    }

    /// The store holding a file put in `store_id`; `None` when that bucket is not the one
    /// configured now.
    pub fn holding(
        &self,
        tenant: &TenantId,
        store_id: Option<&str>,
        config: Option<&StorageConfigRecord>,
        secrets: Option<&SecretBox>,
    ) -> Result<Option<Arc<dyn BlobStore>>, BlobError> {
        match (store_id, config) {
            (None, _) => Ok(Some(self.platform.clone())),
            (Some(id), Some(config)) if config.store_id == id => {
                self.open(tenant, config, secrets).map(Some)
            }
            (Some(_), _) => Ok(None),
        }
    }

    /// Drops the tenant's opened bucket (its configuration changed).
    pub fn forget(&self, tenant: &TenantId) {
        self.lock().remove(tenant);
    }

    fn open(
        &self,
        tenant: &TenantId,
        config: &StorageConfigRecord,
        secrets: Option<&SecretBox>,
    ) -> Result<Arc<dyn BlobStore>, BlobError> {
        if let Some(opened) = self.lock().get(tenant) {
            if opened.store_id == config.store_id && opened.updated_at == config.updated_at {
                return Ok(opened.store.clone());
            }
        }
        let secrets = secrets.ok_or_else(|| {
            BlobError::Backend("the server has no encryption key to open the bucket's".to_owned())
        })?;
        let secret_key = secrets
            .open_string(&config.secret_key_sealed)
            .map_err(|error| BlobError::Backend(format!("the bucket's secret key: {error}")))?;
        let store = open_bucket(&s3_config(config, secret_key), self.timeout)?;
        self.lock().insert(
            tenant.clone(),
            Opened {
                store_id: config.store_id.clone(),
                updated_at: config.updated_at,
                store: store.clone(),
            },
        );
        Ok(store)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TenantId, Opened>> {
        self.opened
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The client configuration of a stored bucket, with its secret opened.
pub fn s3_config(config: &StorageConfigRecord, secret_key: String) -> S3Config {
    S3Config {
        endpoint_url: config.endpoint_url.clone(),
        bucket: config.bucket.clone(),
        region: config.region.clone(),
        access_key: config.access_key.clone(),
        secret_key,
        force_path_style: config.force_path_style,
    }
}

/// A client for a tenant's bucket (each request bounded by `timeout`).
pub fn open_bucket(config: &S3Config, timeout: Duration) -> Result<Arc<dyn BlobStore>, BlobError> {
    memvault_blobs::open_foreign_s3(config, timeout)
}

/// The live self-test a bucket passes before it is saved: a probe object is put, read
/// back byte for byte, and deleted, under the tenant's own prefix. The text says which
/// step failed and why.
pub async fn self_test(store: &dyn BlobStore, tenant: &TenantId) -> Result<(), String> {
    let path = format!("memvault-self-test/{}.txt", uuid::Uuid::new_v4().simple());
    let key = BlobKey::new(tenant, &path).map_err(|error| error.to_string())?;
    let probe = Bytes::from(format!(
        "memvault storage self-test {}",
        Utc::now().to_rfc3339()
    ));
    store
        .put(&key, probe.clone(), "text/plain")
        .await
        .map_err(|error| format!("writing a probe object failed: {error}"))?;
    let read = store.get(&key).await;
    let deleted = store.delete(&key).await;
    match read {
        Ok(bytes) if bytes == probe => {}
        Ok(_) => return Err("the probe object read back differs from what was written".to_owned()),
        Err(error) => return Err(format!("reading the probe object back failed: {error}")),
    }
    deleted.map_err(|error| format!("deleting the probe object failed: {error}"))?;
    match store.head(&key).await {
        Err(BlobError::NotFound { .. }) => Ok(()),
        Ok(_) => Err("the probe object is still there after its delete".to_owned()),
        Err(error) => Err(format!(
            "checking the probe object's delete failed: {error}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_names_the_bucket_not_the_keys() {
        let one = store_id(Some("https://s3.example.com"), "files");
        assert_eq!(one, store_id(Some("https://s3.example.com"), "files"));
        assert_ne!(one, store_id(Some("https://s3.example.com"), "other"));
        assert_ne!(one, store_id(Some("https://minio.example.com"), "files"));
        assert_ne!(one, store_id(None, "files"));
        assert!(one.starts_with("s3-") && one.len() == 19, "{one}");
    }

    #[tokio::test]
    async fn a_self_test_passes_on_a_working_store() {
        let signer = memvault_blobs::UrlSigner::new("http://127.0.0.1:8420", vec![7u8; 32])
            .expect("a 32-byte secret and an absolute URL");
        let store = memvault_blobs::ObjectBlobStore::in_memory(signer);
        let tenant = TenantId::generate();
        assert_eq!(self_test(&store, &tenant).await, Ok(()));
    }
}
