//! Which backend to open, as the edge's `[blobs]` config section describes it. The types
//! exist with or without the `s3` feature, so a config naming S3 in a build without it
//! gets a clear error instead of a parse failure.

use std::fmt;
use std::path::PathBuf;

/// `[blobs] backend = "local"` or `"s3"`, with the backend's own keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobBackendConfig {
    /// Files under `root` (by default [`crate::ObjectBlobStore::default_root`] of the data dir).
    Local { root: PathBuf },
    /// An S3-compatible bucket.
    S3(S3Config),
}

/// An S3-compatible bucket (AWS, MinIO, Garage, R2, ...).
#[derive(Clone, PartialEq, Eq)]
pub struct S3Config {
    /// The endpoint, e.g. `http://127.0.0.1:9000`; `None` is AWS's own for `region`.
    pub endpoint_url: Option<String>,
    pub bucket: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
    /// `https://endpoint/bucket/key` rather than `https://bucket.endpoint/key`: what most
    /// self-hosted servers need.
    pub force_path_style: bool,
}

impl fmt::Debug for S3Config {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("S3Config")
            .field("endpoint_url", &self.endpoint_url)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("access_key", &self.access_key)
            .field("secret_key", &"<redacted>")
            .field("force_path_style", &self.force_path_style)
            .finish()
    }
}
