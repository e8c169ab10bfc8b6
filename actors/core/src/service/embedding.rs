//! Embedding for the services that write or search: the model a collection's texts go
//! through, timed as the `embed` stage of the operator metrics.

use std::sync::Arc;

use memvault_metrics::{Counter, Metrics, Stage};
use memvault_storage::{CollectionName, EmbeddingModel, TenantId};

use super::tree::Tree;
use crate::embedders::Embedders;
use crate::error::Result;

/// Embeds by a collection's model: see the module docs.
#[derive(Clone)]
pub struct Embedding {
    embedders: Embedders,
    metrics: Arc<Metrics>,
    tree: Tree,
}

impl Embedding {
    pub(crate) fn new(embedders: Embedders, metrics: Arc<Metrics>, tree: Tree) -> Self {
        Self {
            embedders,
            metrics,
            tree,
        }
    }

    /// One vector per text by `model`; timed as the `embed` stage.
    pub(crate) async fn embed_texts(
        &self,
        model: &EmbeddingModel,
        texts: Vec<String>,
    ) -> Result<Vec<Vec<f32>>> {
        let started = std::time::Instant::now();
        let count = texts.len() as u64;
        let vectors = self.embedders.embed(model, texts).await;
        self.metrics.record_stage(Stage::Embed, started.elapsed());
        self.metrics.add(Counter::EmbedTexts, count);
        vectors
    }

    /// [`Self::embed_texts`] for one text.
    pub(crate) async fn embed_text(
        &self,
        model: &EmbeddingModel,
        text: String,
    ) -> Result<Vec<f32>> {
        let mut vectors = self.embed_texts(model, vec![text]).await?;
        vectors.pop().ok_or_else(|| {
            memvault_embed::EmbeddingError::Inference("no vector returned".to_owned()).into()
        })
    }

    /// The model that embeds a collection's writes: its own, or the configured one for a
    /// collection that does not exist yet.
    pub(crate) fn collection_model(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> EmbeddingModel {
        match self.tree.collection_entry(tenant, collection) {
            Ok(entry) => (**entry.handle.embedding.load()).clone(),
            Err(_) => self.embedders.current_model().clone(),
        }
    }
}
