//! What the service's tests without HTTP share.

use memvault_embed::{Embedder, EmbeddingError};

/// Vectors from text lengths: enough for tests that are about actors, not semantics.
pub struct LengthEmbedder;

impl Embedder for LengthEmbedder {
    fn model_name(&self) -> &str {
        "length"
    }

    fn dimensions(&self) -> usize {
        4
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        Ok(texts
            .iter()
            .map(|text| vec![text.len() as f32, 1.0, 0.0, 0.0])
            .collect())
    }
}
