//! The narrow trait memvault stores files through, and the shapes it answers with. Each
//! call is async (see the crate docs for why) and durable on return: a write that
//! returned `Ok` survives a process crash.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use memvault_storage::TenantId;
use url::Url;

use crate::error::Result;

use crate::key::{BlobKey, BlobPrefix};

/// The longest lifetime of a presigned URL: S3's own limit for SigV4, applied to every
/// backend so a URL means the same wherever the bytes live.
pub const MAX_PRESIGN_EXPIRY: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The content type of a blob stored without one (e.g. uploaded through a presigned URL
/// that sent none).
pub const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";

/// What a put stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutReceipt {
    pub size: u64,
    /// Lowercase hex SHA-256 of the bytes.
    pub sha256: String,
}

/// A blob's metadata, without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobMeta {
    pub key: BlobKey,
    pub size: u64,
    pub content_type: String,
    /// Lowercase hex SHA-256, known when the bytes came through [`BlobStore::put`]; `None`
    /// for bytes written behind the store's back (a presigned S3 upload).
    pub sha256: Option<String>,
    pub last_modified: DateTime<Utc>,
}

/// One line of a listing: cheap to get from every backend (no per-blob read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobEntry {
    pub key: BlobKey,
    pub size: u64,
    pub last_modified: DateTime<Utc>,
}

/// Files (uploads, extracted images, exports), tenant-scoped by their [`BlobKey`].
#[async_trait]
pub trait BlobStore: Send + Sync + 'static {
    /// Stores `bytes` under `key`, replacing any blob there, in one step: a reader sees
    /// the old bytes or the new ones, never a mix; durable on return.
    async fn put(&self, key: &BlobKey, bytes: Bytes, content_type: &str) -> Result<PutReceipt>;
    /// The blob's bytes; [`crate::BlobError::NotFound`] when there is none.
    async fn get(&self, key: &BlobKey) -> Result<Bytes>;
    /// The blob's metadata without reading its bytes; `NotFound` when there is none.
    async fn head(&self, key: &BlobKey) -> Result<BlobMeta>;
    /// Removes the blob; an absent one is not an error.
    async fn delete(&self, key: &BlobKey) -> Result<()>;
    /// Every blob under `prefix` (its tenant's only), sorted by key.
    async fn list(&self, prefix: &BlobPrefix) -> Result<Vec<BlobEntry>>;
    /// Removes every blob of `tenant` and whatever the backend kept for them (a local
    /// backend's directories too); returns how many blobs there were. Safe to repeat.
    async fn delete_tenant(&self, tenant: &TenantId) -> Result<usize>;
    /// A URL that lets its holder GET the blob until `expires_in` (1 s to
    /// [`MAX_PRESIGN_EXPIRY`]) has passed; it does not check that the blob exists.
    async fn presign_get(&self, key: &BlobKey, expires_in: Duration) -> Result<Url>;
    /// A URL that lets its holder PUT the blob's bytes until `expires_in` has passed.
    async fn presign_put(&self, key: &BlobKey, expires_in: Duration) -> Result<Url>;
}
