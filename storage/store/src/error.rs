//! The storage crate's one error type.

/// Why a store call failed. Every variant is an operator problem (disk, corruption),
/// never a client one: the HTTP edge maps all of them to 5xx.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("storage engine error: {0}")]
    Engine(#[from] sled::Error),
    #[error("corrupt record under key {key}: {reason}")]
    Corrupt { key: String, reason: String },
    #[error("could not encode record: {0}")]
    Encode(#[from] serde_json::Error),
    /// A database server's error (memvault-postgres: a failed query, a lost connection,
    /// a migration that did not apply), as text so that this crate needs no driver.
    #[error("database error: {0}")]
    Backend(String),
    /// A write of a tenant's data refused because this node no longer owns the tenant
    /// (several nodes: another node took its lease). Nothing was written.
    #[error("not the owner: {0}")]
    Fenced(String),
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;
