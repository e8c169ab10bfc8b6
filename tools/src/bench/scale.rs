//! A node at scale (`memvault bench --memories 1000000 --precomputed`): loading a million
//! memories through the model would take hours here, so the corpus's distinct sentences
//! are embedded once with the default model (ONNX Runtime int8) and every memory gets its
//! sentence's real vector, a copy's vector moved a little off it (see
//! [`PrecomputedVectors`]). The memories go through the ordinary write path of an
//! in-process service (actors, store, indexes; bulk creates of 100), whose embedder
//! answers with those vectors under the default model's name, so the server that opens
//! the data dir afterwards serves them as its own. Then a real server process is started
//! on it: cold start, RSS, bytes on disk, and search p50/p95/p99 per mode with the query
//! embedding cached (so the model is not measured). Numbers are printed, never asserted.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memvault_core::service::Write;
use memvault_embed::{Embedder, EmbeddingError, EmbeddingService, MINILM_INT8};
use serde_json::json;

use super::corpus::Corpus;
use super::embedder::Build;
use super::ingest::in_process_service_with_key;
use super::maintenance::new_memory;
use super::process::{self, ServerProcess};
use super::stats::Progress;
use super::{
    expect, format_bytes, format_duration, timed_searches, BenchArgs, BenchError, Report, BULK_SIZE,
};

const DIMENSIONS: usize = 384;
/// How far a copy's vector moves off its sentence's: the noise vector's length before
/// the sum is normalized again (cosine to the original about 0.93).
const COPY_NOISE: f32 = 0.4;
/// Batches of the in-process loader in flight at once.
const LOADERS: usize = 2;

/// The default model's vectors of the corpus sentences, looked up by text. A text
/// `"{sentence} (copy N)"` gets the sentence's vector plus a noise vector seeded by the
/// text, normalized: near its sentence and its other copies, never equal to them. A text
/// the corpus does not hold (the service's own self-check) gets a seeded random vector.
struct PrecomputedVectors {
    positions: HashMap<String, usize>,
    vectors: Vec<Vec<f32>>,
}

impl PrecomputedVectors {
    fn vector(&self, text: &str) -> Option<Vec<f32>> {
        let (sentence, copy) = match text.rsplit_once(" (copy ") {
            Some((sentence, rest)) if rest.ends_with(')') => (sentence, true),
            _ => (text, false),
        };
        let base = &self.vectors[*self.positions.get(sentence)?];
        if !copy {
            return Some(base.clone());
        }
        let noise = super::maintenance::seeded_unit_vector(text);
        let moved: Vec<f32> = base
            .iter()
            .zip(&noise)
            .map(|(value, noise)| value + COPY_NOISE * noise)
            .collect();
        let norm = moved.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        Some(moved.iter().map(|x| x / norm).collect())
    }
}

impl Embedder for PrecomputedVectors {
    fn model_name(&self) -> &str {
        MINILM_INT8
    }

    fn dimensions(&self) -> usize {
        DIMENSIONS
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        Ok(texts
            .iter()
            .map(|text| {
                self.vector(text)
                    .unwrap_or_else(|| super::maintenance::seeded_unit_vector(text))
            })
            .collect())
    }
}

/// Embeds every distinct corpus sentence once with the default model.
fn precompute(corpus: &Corpus) -> Result<PrecomputedVectors, BenchError> {
    let setup = |error: EmbeddingError| BenchError::Setup(format!("precompute: {error}"));
    let model = Build::OnnxInt8.open().map_err(setup)?;
    if model.dimensions() != DIMENSIONS {
        return Err(BenchError::Setup(format!(
            "precompute: the model has {} dimensions, not {DIMENSIONS}",
            model.dimensions()
        )));
    }
    let sentences: Vec<String> = (0..corpus.len()).map(|index| corpus.text(index)).collect();
    let mut vectors = Vec::with_capacity(sentences.len());
    let mut progress = Progress::new("embedding the corpus once", sentences.len());
    for chunk in sentences.chunks(64) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        vectors.extend(model.embed_batch(&refs).map_err(setup)?);
        progress.advance(chunk.len());
    }
    progress.finish();
    let positions = sentences
        .into_iter()
        .enumerate()
        .map(|(position, sentence)| (sentence, position))
        .collect();
    Ok(PrecomputedVectors { positions, vectors })
}

pub async fn run(args: &BenchArgs, corpus: &Corpus) -> Result<(), BenchError> {
    let setup = |error: String| BenchError::Setup(format!("scale: {error}"));
    let data = tempfile::Builder::new()
        .prefix("memvault-bench-scale-")
        .tempdir()
        .map_err(|error| setup(error.to_string()))?;
    let key = format!("mv_bench_{}", uuid::Uuid::new_v4().simple());
    let count = args.memories;
    let mut report = Report::default();
    eprintln!(
        "bench: {count} memories with precomputed vectors ({} distinct sentences of {}), data in {}",
        corpus.len(),
        args.corpus.display(),
        data.path().display()
    );

    let precompute_corpus = corpus.clone();
    let started = Instant::now();
    let vectors = tokio::task::spawn_blocking(move || precompute(&precompute_corpus))
        .await
        .map_err(|error| setup(error.to_string()))??;
    report.line(
        &format!(
            "embedding the {} corpus sentences once ({})",
            corpus.len(),
            Build::OnnxInt8.label()
        ),
        format_duration(started.elapsed()),
    );

    // The loader runs on a runtime of its own, dropped with every task it spawned, so
    // the store it opened is closed (and its lock free) before the server opens it.
    let (load_dir, load_key, load_corpus) = (data.path().to_owned(), key.clone(), corpus.clone());
    let loading = tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|error| BenchError::Setup(format!("load runtime: {error}")))?;
        let loading = runtime.block_on(load(&load_dir, &load_key, &load_corpus, vectors, count));
        runtime.shutdown_timeout(Duration::from_secs(30));
        loading
    })
    .await
    .map_err(|error| setup(error.to_string()))??;
    report.line(
        &format!("load {count} memories in process (bulk of {BULK_SIZE}, {LOADERS} at once)"),
        format!(
            "{} ({:.0} memories/s; loader peak RSS {})",
            format_duration(loading),
            count as f64 / loading.as_secs_f64().max(1e-9),
            format_bytes(process::proc_status_bytes("self", "VmHWM:"))
        ),
    );
    let bytes = process::directory_bytes(data.path());
    report.line(
        "data dir on disk (store + indexes)",
        format!(
            "{} ({} per memory)",
            format_bytes(bytes),
            format_bytes(bytes / count.max(1) as u64)
        ),
    );
    for part in ["store", "indexes"] {
        report.line(
            &format!("  of which {part}/"),
            format_bytes(process::directory_bytes(&data.path().join(part))),
        );
    }

    measure_server(args, corpus, data.path(), &key, count, &mut report).await?;

    if args.keep_data {
        let kept = data.keep();
        eprintln!("bench: data kept in {} (admin key {key})", kept.display());
    }
    report.print();
    Ok(())
}

/// Creates `count` memories (corpus texts `0..count`) in collection `bench` through an
/// in-process service on `data_dir` whose bootstrap key is `key`; returns the time taken,
/// shutdown (indexes saved) included.
async fn load(
    data_dir: &Path,
    key: &str,
    corpus: &Corpus,
    vectors: PrecomputedVectors,
    count: usize,
) -> Result<Duration, BenchError> {
    let setup = |error: String| BenchError::Setup(format!("load: {error}"));
    let embedder = EmbeddingService::start(Arc::new(vectors), 1_000);
    let (service, agent, name) = in_process_service_with_key(data_dir, embedder, key)
        .await
        .map_err(setup)?;
    let started = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let progress = Arc::new(std::sync::Mutex::new(Progress::new("load", count)));
    let workers: Vec<_> = (0..LOADERS)
        .map(|_| {
            let (service, agent, name) = (service.clone(), agent.clone(), name.clone());
            let (next, progress, corpus) = (next.clone(), progress.clone(), corpus.clone());
            tokio::spawn(async move {
                let access = service
                    .authorizer()
                    .authorize::<Write>(&agent, name)
                    .map_err(|error| error.to_string())?;
                loop {
                    let start = next.fetch_add(BULK_SIZE, std::sync::atomic::Ordering::Relaxed);
                    if start >= count {
                        return Ok::<(), String>(());
                    }
                    let end = (start + BULK_SIZE).min(count);
                    let memories = (start..end)
                        .map(|index| new_memory(corpus.text(index), 0.5))
                        .collect();
                    service
                        .memories()
                        .create(&access, memories)
                        .await
                        .map_err(|error| error.to_string())?;
                    if let Ok(mut progress) = progress.lock() {
                        progress.advance(end - start);
                    }
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
    if let Ok(mut progress) = progress.lock() {
        progress.finish();
    }
    service.shutdown().await;
    Ok(started.elapsed())
}

/// Starts the server on the loaded data dir twice over: cold start to healthy and to
/// the first answered search, RSS, then every mode's latency with the query embedding
/// cached.
async fn measure_server(
    args: &BenchArgs,
    corpus: &Corpus,
    data_dir: &Path,
    key: &str,
    count: usize,
    report: &mut Report,
) -> Result<(), BenchError> {
    let client = reqwest::Client::new();
    for round in ["first", "second"] {
        let started = Instant::now();
        let mut server = ServerProcess::start(data_dir, key).await?;
        report.line(
            &format!("cold start to healthy, {round} start"),
            format_duration(server.startup),
        );
        // The collection is opened by its first request: a text search needs no model.
        let url = format!("{}/v1/memory/collections/bench/search", server.base_url);
        let response = client
            .post(&url)
            .bearer_auth(key)
            .json(&json!({"query": "first answer", "mode": "text", "limit": 10}))
            .send()
            .await?;
        expect(response, 200, "first search").await?;
        report.line(
            &format!("cold start to the first search answered, {round} start"),
            format_duration(started.elapsed()),
        );
        report.line(
            &format!("RSS after the first search, {round} start"),
            format_bytes(server.rss_bytes()),
        );
        if round == "second" {
            let queries = corpus.queries(args.search_samples);
            latencies(&client, &server.base_url, key, &queries, count, report).await?;
            report.line("RSS after the searches", format_bytes(server.rss_bytes()));
        }
        server.stop().await?;
    }
    Ok(())
}

/// Per mode: every query once to warm its embedding, then timed with it cached: the HTTP
/// round trip and the server's own `search_ms`, p50/p95/p99.
async fn latencies(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    queries: &[String],
    count: usize,
    report: &mut Report,
) -> Result<(), BenchError> {
    let url = format!("{base}/v1/memory/collections/bench/search");
    for mode in ["vector", "text", "hybrid"] {
        let search = |query: &String| {
            client
                .post(&url)
                .bearer_auth(key)
                .json(&json!({"query": query, "mode": mode, "limit": 10}))
                .send()
        };
        for query in queries {
            expect(search(query).await?, 200, "warm-up search").await?;
        }
        let (http, server_side) = timed_searches(client, &url, key, mode, queries).await?;
        report.line(
            &format!(
                "search {mode} at {count}, embedding cached (n={})",
                queries.len()
            ),
            format!(
                "server search_ms {}; HTTP {}",
                server_side.summary(),
                http.summary()
            ),
        );
    }
    Ok(())
}
