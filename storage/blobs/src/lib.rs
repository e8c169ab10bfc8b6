//! memvault-blobs: files (uploads, extracted images, exports), tenant-scoped, over
//! `object_store`.
//!
//! # Layout
//!
//! - [`blob_store`]: the [`BlobStore`] trait and the shapes it answers with.
//! - [`key`]: [`BlobKey`] (`{tenant}/{path}`) and [`BlobPrefix`], validated so that no key
//!   escapes its tenant.
//! - [`presign`]: memvault's own presigned URLs (`/v1/blobs/...`, HMAC-SHA256, expiring)
//!   and [`UrlSigner::verify_presigned`], which the HTTP layer checks them with.
//! - `objects`: [`ObjectBlobStore`], the one implementation, over any object_store
//!   backend; each backend module adds its constructor:
//!   - `local`: the default, files under `{data_dir}/blobs` ([`ObjectBlobStore::local`]);
//!   - `memory`: in memory, for tests ([`ObjectBlobStore::in_memory`]);
//!   - `s3` (feature `s3`): an S3-compatible bucket with S3's own SigV4 presigned URLs.
//! - [`config`]: which backend to open; [`open_blob_store`] (here) opens it.
//! - `blob_suite` (feature `testing`): one conformance suite, one `#[test]` per check for
//!   each backend through [`blob_suite!`].
//!
//! The S3 backend's tests (and the edge's) run against a real S3-compatible server,
//! `memvault-s3-test-server` (s3s over a temporary directory, SigV4 verified).
//!
//! # Why this trait is async
//!
//! The store traits of `memvault-storage` are blocking (sled is an embedded engine, and
//! callers hop to a blocking thread). [`BlobStore`] is async instead: object_store is
//! async all the way down (S3 is a network call; even its local backend hops to a
//! blocking thread itself), and the Postgres clients that may later hold blob metadata
//! are async too. A blocking wrapper would tie a runtime thread up for the length of an
//! upload, or nest runtimes; an async trait lets the caller await a multi-megabyte
//! transfer without holding a thread. `async_trait` keeps it object safe
//! (`Arc<dyn BlobStore>`).
//!
//! This crate knows nothing of actors or HTTP.

pub mod blob_store;
pub mod config;
pub mod error;
pub mod key;
mod local;
mod memory;
mod objects;
pub mod presign;
#[cfg(feature = "s3")]
mod s3;

#[cfg(any(test, feature = "testing"))]
pub mod blob_suite;

pub use blob_store::{
    BlobEntry, BlobMeta, BlobStore, PutReceipt, DEFAULT_CONTENT_TYPE, MAX_PRESIGN_EXPIRY,
};
pub use config::{BlobBackendConfig, S3Config};
pub use error::BlobError;
pub use key::{BlobKey, BlobPrefix};
pub use objects::ObjectBlobStore;
pub use presign::{PresignMethod, UrlSigner};

/// Opens the configured backend. `signer` mints the URLs of the backends that have no
/// signing of their own (local).
pub fn open_blob_store(
    config: &BlobBackendConfig,
    signer: UrlSigner,
) -> error::Result<std::sync::Arc<dyn BlobStore>> {
    match config {
        BlobBackendConfig::Local { root } => {
            Ok(std::sync::Arc::new(ObjectBlobStore::local(root, signer)?))
        }
        BlobBackendConfig::S3(s3) => open_s3(s3),
    }
}

/// Opens a bucket someone else runs (a tenant's own) with short timeouts: see
/// `ObjectBlobStore::s3_with_timeout`.
#[cfg(feature = "s3")]
pub fn open_foreign_s3(
    config: &S3Config,
    timeout: std::time::Duration,
) -> error::Result<std::sync::Arc<dyn BlobStore>> {
    Ok(std::sync::Arc::new(ObjectBlobStore::s3_with_timeout(
        config, timeout,
    )?))
}

/// Without the `s3` feature there is no S3 client: a clear error.
#[cfg(not(feature = "s3"))]
pub fn open_foreign_s3(
    _config: &S3Config,
    _timeout: std::time::Duration,
) -> error::Result<std::sync::Arc<dyn BlobStore>> {
    open_s3(_config)
}

#[cfg(feature = "s3")]
fn open_s3(config: &S3Config) -> error::Result<std::sync::Arc<dyn BlobStore>> {
    Ok(std::sync::Arc::new(ObjectBlobStore::s3(config)?))
}

#[cfg(not(feature = "s3"))]
fn open_s3(_config: &S3Config) -> error::Result<std::sync::Arc<dyn BlobStore>> {
    Err(BlobError::Backend(
        "blobs backend \"s3\" is not in this build (build with the `s3` feature)".to_owned(),
    ))
}
