//! Which embedding model embeds what. The configured model embeds every new collection
//! and every re-embedding; a collection whose vectors another model made keeps using
//! that one (for its writes and its queries) until its re-embedding switches it, so
//! search answers from the old vectors meanwhile. Other models are started on first use
//! through the [`ModelCatalog`] the binary provides.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use memvault_embed::{EmbeddingError, EmbeddingService};
use memvault_storage::EmbeddingModel;
use tokio::sync::OnceCell;

use crate::error::{Error, Result};

/// Starts the models this process can run besides the configured one.
pub trait ModelCatalog: Send + Sync + 'static {
    /// Starts `model`, or says why it cannot run here. Blocking (it may load weights).
    fn open(&self, model: &EmbeddingModel) -> std::result::Result<EmbeddingService, String>;
}

type Opened = std::result::Result<EmbeddingService, String>;

#[derive(Clone)]
pub struct Embedders {
    inner: Arc<Inner>,
}

struct Inner {
    current: EmbeddingService,
    current_model: EmbeddingModel,
    catalog: Option<Arc<dyn ModelCatalog>>,
    others: Mutex<HashMap<EmbeddingModel, Arc<OnceCell<Opened>>>>,
}

impl Embedders {
    /// The configured model and, when given, where other models come from.
    pub fn new(current: EmbeddingService, catalog: Option<Arc<dyn ModelCatalog>>) -> Self {
        let current_model = EmbeddingModel::new(current.model_name(), current.dimensions());
        Self {
            inner: Arc::new(Inner {
                current,
                current_model,
                catalog,
                others: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The configured model.
    pub fn current(&self) -> &EmbeddingService {
        &self.inner.current
    }

    /// The configured model's identity: what new collections record.
    pub fn current_model(&self) -> &EmbeddingModel {
        &self.inner.current_model
    }

    /// The service that runs `model`: the configured one, or another started once.
    pub async fn for_model(&self, model: &EmbeddingModel) -> Result<EmbeddingService> {
        if *model == self.inner.current_model {
            return Ok(self.inner.current.clone());
        }
        let unavailable = |reason: String| Error::EmbeddingModelUnavailable {
            model: model.to_string(),
            reason,
        };
        let Some(catalog) = self.inner.catalog.clone() else {
            return Err(unavailable(
                "only the configured model runs here".to_owned(),
            ));
        };
        let cell = self
            .inner
            .others
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(model.clone())
            .or_default()
            .clone();
        let wanted = model.clone();
        let opened = cell
            .get_or_init(|| async move {
                let started = tokio::task::spawn_blocking(move || {
                    let service = catalog.open(&wanted)?;
                    if service.model_name() != wanted.name
                        || service.dimensions() != wanted.dimensions
                    {
                        return Err(format!(
                            "the catalog started {} ({} dimensions) instead",
                            service.model_name(),
                            service.dimensions()
                        ));
                    }
                    Ok(service)
                })
                .await;
                let opened = started.unwrap_or_else(|error| Err(error.to_string()));
                match &opened {
                    Ok(_) => tracing::info!(model = %model, "started an earlier embedding model for the collections it built"),
                    Err(reason) => tracing::warn!(model = %model, %reason, "an earlier embedding model cannot run; its collections answer 503 until re-embedded"),
                }
                opened
            })
            .await;
        opened.clone().map_err(unavailable)
    }

    /// One vector per text, by `model`.
    pub async fn embed(&self, model: &EmbeddingModel, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
        let service = self.for_model(model).await?;
        service
            .embed(texts)
            .await
            .map_err(|error: EmbeddingError| error.into())
    }
}
