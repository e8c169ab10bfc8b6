//! A tenant's own object storage (`GET/PUT/DELETE /v1/memory/storage/config`): an
//! S3-compatible bucket its new files go to. The PUT checks the endpoint against the SSRF
//! guard, then runs a live self-test (put, read back, delete a probe object) and saves
//! only when that passes, the secret key sealed. DELETE reverts to the platform's storage.
//! See `memvault_files::TenantStores` for what happens to files already stored.

use chrono::{DateTime, Utc};
use memvault_blobs::S3Config;
use memvault_storage::{StorageConfigRecord, TenantId, TenantSettings};

use super::Settings;
use crate::error::{Error, Result};
use memvault_files::{open_bucket, self_test, store_id};
use memvault_webhooks::guard::check_target;

/// How long the whole self-test may take.
const SELF_TEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// A tenant's bucket as shown to it: never the secret key, the access key masked.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageConfigView {
    pub store_id: String,
    pub endpoint_url: Option<String>,
    pub bucket: String,
    pub region: String,
    /// The access key's last four characters, after `…`.
    pub access_key_hint: String,
    pub force_path_style: bool,
    pub updated_at: DateTime<Utc>,
}

/// What `PUT /v1/memory/storage/config` carries, validated.
#[derive(Clone)]
pub struct StorageConfigInput {
    pub endpoint_url: Option<String>,
    pub bucket: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
    pub force_path_style: bool,
}

impl std::fmt::Debug for StorageConfigInput {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("StorageConfigInput")
            .field("endpoint_url", &self.endpoint_url)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl From<&StorageConfigRecord> for StorageConfigView {
    fn from(record: &StorageConfigRecord) -> Self {
        let tail: String = {
            let chars: Vec<char> = record.access_key.chars().collect();
            chars[chars.len().saturating_sub(4)..].iter().collect()
        };
        Self {
            store_id: record.store_id.clone(),
            endpoint_url: record.endpoint_url.clone(),
            bucket: record.bucket.clone(),
            region: record.region.clone(),
            access_key_hint: format!("…{tail}"),
            force_path_style: record.force_path_style,
            updated_at: record.updated_at,
        }
    }
}

impl Settings {
    /// The tenant's own bucket, if it configured one.
    pub fn storage(&self, tenant: &TenantId) -> Result<Option<StorageConfigView>> {
        let settings = self.tree.tenant_handle(tenant)?.snapshot().settings.clone();
        Ok(settings.storage.as_ref().map(StorageConfigView::from))
    }

    /// Checks the endpoint, runs the self-test, and saves the bucket only when both pass.
    pub async fn set_storage(
        &self,
        tenant: &TenantId,
        input: StorageConfigInput,
    ) -> Result<StorageConfigView> {
        let secrets = self.llms.intelligence().secrets()?;
        if let Some(endpoint) = &input.endpoint_url {
            let url = url::Url::parse(endpoint)
                .map_err(|error| Error::Invalid(format!("endpoint_url: {error}")))?;
            check_target(&url, self.allow_private_buckets)
                .await
                .map_err(|reason| {
                    Error::StorageTargetRejected(format!("endpoint_url: {reason}"))
                })?;
        }
        let client = S3Config {
            endpoint_url: input.endpoint_url.clone(),
            bucket: input.bucket.clone(),
            region: input.region.clone(),
            access_key: input.access_key.clone(),
            secret_key: input.secret_key.clone(),
            force_path_style: input.force_path_style,
        };
        let store = open_bucket(&client, SELF_TEST_TIMEOUT / 3)
            .map_err(|error| Error::StorageSelfTestFailed(error.to_string()))?;
        match tokio::time::timeout(SELF_TEST_TIMEOUT, self_test(&*store, tenant)).await {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => return Err(Error::StorageSelfTestFailed(reason)),
            Err(_) => {
                return Err(Error::StorageSelfTestFailed(format!(
                    "the bucket did not answer within {} s",
                    SELF_TEST_TIMEOUT.as_secs()
                )))
            }
        }
        let record = StorageConfigRecord {
            store_id: store_id(input.endpoint_url.as_deref(), &input.bucket),
            endpoint_url: input.endpoint_url,
            bucket: input.bucket,
            region: input.region,
            access_key: input.access_key,
            secret_key_sealed: secrets.seal_str(&input.secret_key),
            force_path_style: input.force_path_style,
            updated_at: self.tree.now(),
        };
        let view = StorageConfigView::from(&record);
        self.update_settings(tenant, move |settings| TenantSettings {
            storage: Some(record),
            ..settings.clone()
        })
        .await?;
        self.stores.forget(tenant);
        Ok(view)
    }

    /// Reverts to the platform's storage (the credentials are dropped); false when
    /// nothing was configured.
    pub async fn clear_storage(&self, tenant: &TenantId) -> Result<bool> {
        let had = self.storage(tenant)?.is_some();
        self.update_settings(tenant, |settings| TenantSettings {
            storage: None,
            ..settings.clone()
        })
        .await?;
        self.stores.forget(tenant);
        Ok(had)
    }
}
