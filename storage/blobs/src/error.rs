//! The blobs crate's one error type.

/// Why a blob call failed. `NotFound`, `InvalidKey`, `InvalidExpiry`, `Expired` and
/// `BadSignature` are the client's doing (4xx at the edge); `Backend` is the operator's
/// (disk, network, credentials: 5xx).
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("blob not found: {key}")]
    NotFound { key: String },
    #[error("invalid blob key: {reason}")]
    InvalidKey { reason: String },
    #[error("presigned URL lifetime must be 1 second to {max_secs} seconds")]
    InvalidExpiry { max_secs: u64 },
    #[error("presigned URL has expired")]
    Expired,
    #[error("presigned URL signature does not match")]
    BadSignature,
    #[error("blob backend error: {0}")]
    Backend(String),
}

impl BlobError {
    pub(crate) fn invalid_key(reason: impl Into<String>) -> Self {
        Self::InvalidKey {
            reason: reason.into(),
        }
    }

    /// Maps an object_store error for `key`: its `NotFound` is ours, everything else is
    /// the backend's.
    pub(crate) fn from_object_store(key: &str, error: object_store::Error) -> Self {
        match error {
            object_store::Error::NotFound { .. } => Self::NotFound {
                key: key.to_owned(),
            },
            other => Self::Backend(other.to_string()),
        }
    }
}

pub type Result<T, E = BlobError> = std::result::Result<T, E>;
