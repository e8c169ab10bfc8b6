//! An in-process service on a temporary data dir with the evaluation sets loaded through
//! the real write path (embedding, store, indexes), and the searches that score them.

use std::time::Instant;

use memvault_core::memory::NewMemory;
use memvault_core::service::{Read, Write};
use memvault_core::{Agent, Memvault};
use memvault_index::search::{SearchFilter, SearchQuery};
use memvault_storage::CollectionName;
use serde_json::{json, Map, Value};

use super::metrics::{ndcg_at, recall_at};
use super::set::{EvalCollection, EvalSet};
use super::variant::Variant;
use super::{EvalError, CUTOFF};
use memvault_server::config::{Config, LocalModel, LocalRuntime};
use memvault_server::server;

/// Memories per create call: one embedding batch each.
const LOAD_BATCH: usize = 100;

/// Mean nDCG@10 and Recall@10 of one variant over a set's queries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scores {
    pub ndcg: f64,
    pub recall: f64,
}

/// Which build of the local model embeds (the configuration's defaults unless set).
#[derive(Debug, Clone, Copy, Default)]
pub struct EmbeddingChoice {
    pub model: LocalModel,
    pub runtime: LocalRuntime,
}

impl EmbeddingChoice {
    /// How the table names it.
    pub fn label(&self) -> String {
        let model = match self.model {
            LocalModel::MiniLm => "all-MiniLM-L6-v2",
            LocalModel::MiniLmInt8 => "all-MiniLM-L6-v2-int8",
        };
        let runtime = match self.runtime {
            LocalRuntime::Auto => "auto",
            LocalRuntime::Onnx => "ONNX Runtime",
            LocalRuntime::Candle => "candle",
        };
        format!("{model} on {runtime}")
    }
}

pub struct Harness {
    pub service: Memvault,
    pub agent: Agent,
    /// Keeps the data dir alive as long as the service.
    _data: tempfile::TempDir,
}

impl Harness {
    /// Starts a service with the result cache off (every search is computed); query
    /// embeddings stay cached, so asking a query again in another mode embeds nothing.
    pub async fn start() -> Result<Self, EvalError> {
        Self::start_with(&EmbeddingChoice::default()).await
    }

    /// [`Self::start`] with the local model built and run as `embedding` says.
    pub async fn start_with(embedding: &EmbeddingChoice) -> Result<Self, EvalError> {
        let data = tempfile::tempdir().map_err(|error| EvalError::Service(error.to_string()))?;
        let mut config = Config::default();
        config.embedding.local_model = embedding.model;
        config.embedding.runtime = embedding.runtime;
        config.server.data_dir = data.path().to_owned();
        config.search.result_cache_entries = 0;
        let key = format!("mv_eval_{}", uuid::Uuid::new_v4().simple());
        let service_error = |error: server::StartupError| EvalError::Service(error.to_string());
        let embedder = server::start_embedder(&config)
            .await
            .map_err(service_error)?;
        let started = server::start_service(&config, embedder, Some(key.clone()))
            .await
            .map_err(service_error)?;
        let service = started.service;
        let agent = service.authorizer().authenticate(&key).ok_or_else(|| {
            EvalError::Service("the bootstrap key does not authenticate".to_owned())
        })?;
        Ok(Self {
            service,
            agent,
            _data: data,
        })
    }

    pub async fn shutdown(self) {
        self.service.shutdown().await;
    }

    /// Stores every document of `set` as a memory of its collection.
    pub async fn load(&self, set: &EvalSet) -> Result<(), EvalError> {
        let started = Instant::now();
        let total = set.document_count();
        let mut done = 0;
        for collection in &set.collections {
            let access = self
                .service
                .authorizer()
                .authorize::<Write>(&self.agent, collection_name(set, collection)?)
                .map_err(service_error)?;
            for batch in collection.documents.chunks(LOAD_BATCH) {
                let memories = batch
                    .iter()
                    .map(|document| {
                        let mut metadata = Map::new();
                        metadata.insert(set.id_field.to_owned(), json!(document.id));
                        NewMemory {
                            text: document.text.chars().take(10_000).collect(),
                            importance: 0.5,
                            category: "other".to_owned(),
                            source: "eval".to_owned(),
                            metadata,
                            container_tag: None,
                            images: Vec::new(),
                        }
                    })
                    .collect();
                self.service
                    .memories()
                    .create(&access, memories)
                    .await
                    .map_err(service_error)?;
                done += batch.len();
                eprint!(
                    "\reval: {} loaded {done}/{total} ({:.0}/s) ",
                    set.name,
                    done as f64 / started.elapsed().as_secs_f64().max(1e-9)
                );
            }
        }
        eprintln!();
        Ok(())
    }

    /// Asks every query of `set` the way `variant` says, top [`CUTOFF`], and averages
    /// nDCG@10 and Recall@10 over the queries.
    pub async fn score(&self, set: &EvalSet, variant: &Variant) -> Result<Scores, EvalError> {
        let (mut ndcg_total, mut recall_total) = (0.0, 0.0);
        for collection in &set.collections {
            let access = self
                .service
                .authorizer()
                .authorize::<Read>(&self.agent, collection_name(set, collection)?)
                .map_err(service_error)?;
            for query in &collection.queries {
                let request = SearchQuery {
                    text: query.text.clone(),
                    limit: CUTOFF,
                    min_score: variant.min_score,
                    mode: variant.mode,
                    filter: SearchFilter::default(),
                    rewrite: false,
                    rerank: false,
                    fusion: variant.fusion,
                };
                let outcome = self
                    .service
                    .search()
                    .search(&self.agent, Some(&access), request)
                    .await
                    .map_err(service_error)?;
                let ranked: Vec<String> = outcome
                    .hits
                    .iter()
                    .filter_map(|hit| hit.memory.metadata.get(set.id_field))
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect();
                ndcg_total += ndcg_at(&ranked, &query.judged, CUTOFF);
                recall_total += recall_at(&ranked, &query.judged, CUTOFF);
            }
        }
        let count = set.query_count().max(1) as f64;
        Ok(Scores {
            ndcg: ndcg_total / count,
            recall: recall_total / count,
        })
    }
}

/// The collection a set's collection is stored in: unique across the loaded sets.
pub fn collection_name(
    set: &EvalSet,
    collection: &EvalCollection,
) -> Result<CollectionName, EvalError> {
    let raw: String = format!("{}-{}", set.name, collection.name)
        .chars()
        .map(|character| match character {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => character,
            _ => '-',
        })
        .take(CollectionName::MAX_LEN)
        .collect();
    CollectionName::parse(raw.trim_start_matches('.')).map_err(EvalError::Service)
}

fn service_error(error: impl std::fmt::Display) -> EvalError {
    EvalError::Service(error.to_string())
}
