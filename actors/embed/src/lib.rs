//! Text embeddings: the [`Embedder`] trait; the local all-MiniLM-L6-v2 model on ONNX
//! Runtime (fp32, or int8 as a model of its own name) or on candle (fp32, the fallback
//! where ONNX Runtime cannot load); an OpenAI-compatible endpoint; how MiniLM's weights
//! and ONNX Runtime are fetched; and the [`EmbeddingService`] thread that batches requests
//! from concurrent writers into one forward pass.

mod deferred;
mod minilm;
mod onnx;
mod openai;
mod service;
mod weights;

pub use deferred::Deferred;
pub use minilm::MiniLmEmbedder;
pub use onnx::{
    ensure_onnxruntime, OnnxEmbedder, OnnxLoad, Precision, MINILM_INT8, ONNXRUNTIME_VERSION,
};
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
    /// Counts a text's tokens the way this model reads it (without its special tokens),
    /// for sizing chunks; `None` when the model's tokenizer is not known here (a remote
    /// endpoint), and callers estimate.
    fn token_counter(&self) -> Option<TokenCounter> {
        None
    }
    /// The most tokens the model reads of one text; the rest is cut.
    fn max_tokens(&self) -> Option<usize> {
        None
    }
}

/// Counts the tokens of a text (see [`Embedder::token_counter`]).
pub type TokenCounter = std::sync::Arc<dyn Fn(&str) -> usize + Send + Sync>;

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
