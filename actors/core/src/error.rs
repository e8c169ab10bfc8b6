//! The actors crate's one error type. The HTTP edge maps each variant to a status with a
//! `match` that has no catch-all arm.

use memvault_storage::StorageError;

use memvault_embed::EmbeddingError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A collection, memory or tenant that does not exist (for this tenant).
    #[error("{0}")]
    NotFound(String),
    /// A request that conflicts with the current state, e.g. creating an existing collection.
    #[error("{0}")]
    Conflict(String),
    /// The caller's key may not do this: a read-only key writing, or an agent without the
    /// needed grant on a restricted collection.
    #[error("{0}")]
    Forbidden(String),
    /// A request that is well-formed but not allowed by the current state.
    #[error("{0}")]
    Invalid(String),
    /// The actor that owns the resource is restarting or gone; retrying later may succeed.
    #[error("{0}")]
    Unavailable(String),
    /// The owning actor did not answer within the call timeout.
    #[error("the request timed out waiting for {0}")]
    Timeout(String),
    /// An outside service the request depends on (an LLM) failed or answered nonsense.
    #[error("{0}")]
    Upstream(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Embedding(#[from] EmbeddingError),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
