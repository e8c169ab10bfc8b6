//! Text embeddings: the [`Embedder`] trait, the local all-MiniLM-L6-v2 model and an
//! OpenAI-compatible endpoint that implement it, how MiniLM's weights are fetched, and the [`EmbeddingService`] thread that batches requests
//! from concurrent writers into one forward pass.

mod minilm;
mod openai;
mod service;
mod weights;

pub use minilm::MiniLmEmbedder;
pub use openai::{OpenAiEmbedder, OpenAiSettings};
pub use service::EmbeddingService;
pub use weights::{default_model_cache_dir, ensure_minilm_weights, ModelSource};

/// Turns texts into unit-length vectors of a fixed dimension.
///
/// Implementations are synchronous and CPU-bound; callers reach them through
/// [`EmbeddingService`], which runs them on a dedicated thread.
pub trait Embedder: Send + Sync + 'static {
    fn model_name(&self) -> &str;
    fn dimensions(&self) -> usize;
    /// One vector per text, in order.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError>;
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbeddingError {
    /// The weights could not be fetched, verified or read.
    #[error("cannot load the embedding model: {0}")]
    Load(String),
    /// The model failed on an input.
    #[error("embedding failed: {0}")]
    Inference(String),
    /// The embedding thread has stopped.
    #[error("the embedding service is not running")]
    Stopped,
}
