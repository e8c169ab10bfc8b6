//! Endpoints for memvault's own other processes (a connector worker, a gateway): embed
//! texts with the server's model, so they need no model of their own.

use crate::embedders::Embedders;
use crate::error::{Error, Result};

/// Texts embedded by the server's current model.
#[derive(Debug, Clone)]
pub struct EmbeddedTexts {
    /// One vector per text, in order.
    pub vectors: Vec<Vec<f32>>,
    pub model: String,
    pub dimensions: usize,
}

/// The internal endpoints' use cases. The caller is authenticated by the edge (a shared
/// secret), not by a tenant key: nothing here touches a tenant.
#[derive(Clone)]
pub struct Internal {
    pub(super) embedders: Embedders,
}

impl Internal {
    /// One vector per text by the model new collections are built with.
    pub async fn embed(&self, texts: Vec<String>) -> Result<EmbeddedTexts> {
        let service = self.embedders.current();
        let count = texts.len();
        let vectors = service.embed(texts).await.map_err(Error::from)?;
        if vectors.len() != count {
            return Err(Error::TaskFailed {
                task: "embedding",
                reason: format!("{count} texts gave {} vectors", vectors.len()),
            });
        }
        Ok(EmbeddedTexts {
            vectors,
            model: service.model_name().to_owned(),
            dimensions: service.dimensions(),
        })
    }
}
