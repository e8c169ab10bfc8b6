//! The write path without the model: an in-process service on a fresh data dir whose
//! embedder returns the vectors the HTTP run stored, so the figure is actors + store +
//! indexes alone.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use memvault_core::service::Write;
use memvault_core::{Agent, Memvault};
use memvault_embed::{Embedder, EmbeddingError, EmbeddingService};
use memvault_storage::{CollectionName, MemoryStore, MetaStore, SledStore};

use super::BenchError;
use memvault_server::config::Config;
use memvault_server::server;

/// Answers with stored vectors; a text it does not know is an error, never a made-up vector.
struct StoredVectors {
    vectors: HashMap<String, Vec<f32>>,
    dimensions: usize,
}

impl Embedder for StoredVectors {
    fn model_name(&self) -> &str {
        "stored vectors"
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        texts
            .iter()
            .map(|text| {
                self.vectors.get(*text).cloned().ok_or_else(|| {
                    EmbeddingError::Inference(format!("no stored vector for {text:?}"))
                })
            })
            .collect()
    }
}

/// A service on `data_dir` with `embedder`, its bootstrap agent, and collection `bench`.
pub async fn in_process_service(
    data_dir: &Path,
    embedder: EmbeddingService,
) -> Result<(Memvault, Agent, CollectionName), String> {
    let key = format!("mv_bench_{}", uuid::Uuid::new_v4().simple());
    in_process_service_with_key(data_dir, embedder, &key).await
}

/// [`in_process_service`] whose bootstrap key is `key` (a server started on the same
/// data dir later takes the same key).
pub async fn in_process_service_with_key(
    data_dir: &Path,
    embedder: EmbeddingService,
    key: &str,
) -> Result<(Memvault, Agent, CollectionName), String> {
    let mut config = Config::default();
    config.server.data_dir = data_dir.to_owned();
    let started = server::start_service(
        &config,
        memvault_core::embedders::Embedders::new(embedder, None),
        Some(key.to_owned()),
    )
    .await
    .map_err(|error| error.to_string())?;
    let service = started.service;
    let agent = service
        .authorizer()
        .authenticate(key)
        .ok_or_else(|| "the bootstrap key does not authenticate".to_owned())?;
    let name = CollectionName::parse("bench")?;
    Ok((service, agent, name))
}

/// Returns (memories per second, memories written).
pub async fn without_model(source: &Path, concurrency: usize) -> Result<(f64, usize), BenchError> {
    let setup = |error: String| BenchError::Setup(format!("ingest without model: {error}"));
    let store_dir = source.join("store");
    let stored = tokio::task::spawn_blocking(move || -> Result<_, String> {
        let store = SledStore::open(&store_dir).map_err(|error| error.to_string())?;
        let name = CollectionName::parse("bench")?;
        let mut memories = Vec::new();
        for tenant in store.tenants().map_err(|error| error.to_string())? {
            memories.extend(
                store
                    .memories(&tenant.id, &name)
                    .map_err(|error| error.to_string())?,
            );
        }
        Ok(memories)
    })
    .await
    .map_err(|error| setup(error.to_string()))?
    .map_err(setup)?;
    let dimensions = stored.first().map_or(384, |memory| memory.embedding.len());
    let texts: Vec<String> = stored
        .iter()
        .map(|memory| memory.record.text.clone())
        .collect();
    let vectors = stored
        .into_iter()
        .map(|memory| (memory.record.text, memory.embedding))
        .collect();
    let embedder = EmbeddingService::start(
        Arc::new(StoredVectors {
            vectors,
            dimensions,
        }),
        1_000,
    );
    let data = tempfile::tempdir().map_err(|error| setup(error.to_string()))?;
    let (service, agent, name) = in_process_service(data.path(), embedder)
        .await
        .map_err(setup)?;
    let batches: Vec<Vec<String>> = texts.chunks(100).map(<[String]>::to_vec).collect();
    let count = texts.len();
    let queue = Arc::new(std::sync::Mutex::new(batches.into_iter()));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (service, agent, name, queue) =
                (service.clone(), agent.clone(), name.clone(), queue.clone());
            tokio::spawn(async move {
                let access = service
                    .authorizer()
                    .authorize::<Write>(&agent, name)
                    .map_err(|error| error.to_string())?;
                loop {
                    let next = queue.lock().map(|mut queue| queue.next()).ok().flatten();
                    let Some(batch) = next else {
                        return Ok::<(), String>(());
                    };
                    let memories = batch
                        .into_iter()
                        .map(|text| super::maintenance::new_memory(text, 0.5))
                        .collect();
                    service
                        .memories()
                        .create(&access, memories)
                        .await
                        .map_err(|error| error.to_string())?;
                }
            })
        })
        .collect();
    for worker in workers {
        worker
            .await
            .map_err(|error| setup(error.to_string()))?
            .map_err(setup)?;
    }
    let rate = count as f64 / started.elapsed().as_secs_f64().max(1e-9);
    service.shutdown().await;
    Ok((rate, count))
}
