//! What the service's tests without HTTP share.

use std::sync::Arc;

use memvault_core::embedders::Embedders;
use memvault_core::memory::NewMemory;
use memvault_core::service::NewTenant;
use memvault_embed::{Embedder, EmbeddingError, EmbeddingService};

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

/// The service's embedders: the length embedder, no second model.
pub fn length_embedders() -> Embedders {
    Embedders::new(EmbeddingService::start(Arc::new(LengthEmbedder), 16), None)
}

/// The one tenant the tests create.
pub fn tenant() -> NewTenant {
    NewTenant {
        name: "t".to_owned(),
        email: "t@example.com".to_owned(),
        tier: "free".to_owned(),
        admin: false,
    }
}

/// A memory of `text` with the API's defaults.
pub fn new_memory(text: &str) -> NewMemory {
    NewMemory {
        text: text.to_owned(),
        importance: 0.5,
        category: "other".to_owned(),
        source: "api".to_owned(),
        metadata: Default::default(),
        container_tag: None,
        images: Vec::new(),
    }
}
