//! `memvault bench --adds`: what a client waits for when it adds memories, for each build
//! of the local model side by side in one run (candle fp32, the old default; ONNX
//! Runtime fp32; ONNX Runtime int8), each beside its raw embedder:
//! - one at a time: sequential single creates, throughput and latency;
//! - 8 concurrent clients sending single creates (the embedding thread merges their
//!   texts into shared forward passes);
//! - bulk: 100 memories per request, 2 clients;
//! - import: 1,000 memories per `POST /v1/memory/admin/import` (the synchronous form).
//!
//! Each build gets a fresh server and data dir; the texts are the corpus's, the same for
//! every build.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::corpus::Corpus;
use super::embedder::{self, Build};
use super::process::ServerProcess;
use super::stats::Latencies;
use super::{bulk_load, expect, BenchArgs, BenchError, Report};

const CONCURRENT_CLIENTS: usize = 8;
const IMPORT_SIZE: usize = 1_000;

struct Figures {
    raw_batched: f64,
    raw_single: Latencies,
    sequential: (f64, Latencies),
    concurrent: (f64, Latencies),
    bulk: f64,
    import: f64,
}

pub async fn run(args: &BenchArgs, corpus: &Corpus) -> Result<(), BenchError> {
    let singles = args.latency_samples;
    let bulk = args.memories;
    eprintln!(
        "bench --adds: {singles} single creates (sequential, then {CONCURRENT_CLIENTS} clients), \
         {bulk} bulk, {bulk} imported, per build"
    );
    let mut figures = Vec::new();
    for build in Build::ALL {
        eprintln!("bench --adds: {}", build.label());
        let raw_corpus = corpus.clone();
        let embed_texts = args.embed_texts;
        let raw = tokio::task::spawn_blocking(move || {
            embedder::measure(build, &raw_corpus, embed_texts, 64, 100)
        })
        .await
        .map_err(|error| BenchError::Setup(format!("embedder: {error}")))??;
        figures.push((build, measure(build, corpus, singles, bulk, raw).await?));
    }
    let mut report = Report::default();
    let baseline = &figures[0].1;
    for (build, figures) in &figures {
        let label = build.label();
        let times = |value: f64, base: f64| {
            if *build == Build::Candle {
                String::new()
            } else {
                format!(" ({:.1}× candle)", value / base.max(1e-9))
            }
        };
        report.line(
            &format!("{label}: raw embedder, batches of 64"),
            format!(
                "{:.1} texts/s{}",
                figures.raw_batched,
                times(figures.raw_batched, baseline.raw_batched)
            ),
        );
        report.line(
            &format!("{label}: raw embedder, one text"),
            figures.raw_single.summary(),
        );
        report.line(
            &format!("{label}: add one at a time (n={singles})"),
            format!(
                "{:.1} memories/s{}; {}",
                figures.sequential.0,
                times(figures.sequential.0, baseline.sequential.0),
                figures.sequential.1.summary()
            ),
        );
        report.line(
            &format!("{label}: add one, {CONCURRENT_CLIENTS} clients (n={singles})"),
            format!(
                "{:.1} memories/s{}; {}",
                figures.concurrent.0,
                times(figures.concurrent.0, baseline.concurrent.0),
                figures.concurrent.1.summary()
            ),
        );
        report.line(
            &format!("{label}: bulk, 100 per request, 2 clients (n={bulk})"),
            format!(
                "{:.1} memories/s{}",
                figures.bulk,
                times(figures.bulk, baseline.bulk)
            ),
        );
        report.line(
            &format!("{label}: import, {IMPORT_SIZE} per request (n={bulk})"),
            format!(
                "{:.1} memories/s{}",
                figures.import,
                times(figures.import, baseline.import)
            ),
        );
    }
    report.print();
    Ok(())
}

async fn measure(
    build: Build,
    corpus: &Corpus,
    singles: usize,
    bulk: usize,
    raw: embedder::EmbedderFigures,
) -> Result<Figures, BenchError> {
    let data = tempfile::Builder::new()
        .prefix("memvault-bench-adds-")
        .tempdir()
        .map_err(|error| BenchError::Setup(format!("temp dir: {error}")))?;
    let key = format!("mv_bench_{}", uuid::Uuid::new_v4().simple());
    let environment: Vec<(String, String)> = build
        .server_env()
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    let mut server = ServerProcess::start_with(data.path(), &key, &environment).await?;
    let client = reqwest::Client::new();
    let base = server.base_url.clone();
    // One add before the clock starts, in a collection of its own: a server is healthy
    // before its ONNX Runtime model has finished loading (it loads beside the
    // collections), and the first add would wait for it.
    let response = client
        .post(format!(
            "{base}/v1/memory/collections/bench-warmup/memories"
        ))
        .bearer_auth(&key)
        .json(&json!({ "text": "a first memory, before the clock starts" }))
        .send()
        .await?;
    expect(response, 201, "warm-up create").await?;
    // Texts the other measures do not use, so no write is a duplicate of another.
    let sequential = single_creates(&client, &base, &key, corpus, 0..singles, 1).await?;
    let concurrent = single_creates(
        &client,
        &base,
        &key,
        corpus,
        singles..2 * singles,
        CONCURRENT_CLIENTS,
    )
    .await?;
    let started = Instant::now();
    let offset = 2 * singles;
    bulk_load(&client, &base, &key, corpus, offset..offset + bulk, 2).await?;
    let bulk_rate = bulk as f64 / started.elapsed().as_secs_f64();
    let offset = offset + bulk;
    let started = Instant::now();
    for start in (offset..offset + bulk).step_by(IMPORT_SIZE) {
        let end = (start + IMPORT_SIZE).min(offset + bulk);
        let memories: Vec<Value> = (start..end)
            .map(|index| json!({ "text": corpus.text(index) }))
            .collect();
        let response = client
            .post(format!("{base}/v1/memory/admin/import"))
            .bearer_auth(&key)
            .json(&json!({ "memories": memories, "into_collection": "bench-import" }))
            .send()
            .await?;
        expect(response, 200, "import").await?;
    }
    let import_rate = bulk as f64 / started.elapsed().as_secs_f64();
    server.stop().await?;
    Ok(Figures {
        raw_batched: raw.per_second(),
        raw_single: raw.single,
        sequential,
        concurrent,
        bulk: bulk_rate,
        import: import_rate,
    })
}

/// Single creates of the corpus texts in `range` from `clients` concurrent clients: the
/// throughput and each create's latency.
async fn single_creates(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    corpus: &Corpus,
    range: std::ops::Range<usize>,
    clients: usize,
) -> Result<(f64, Latencies), BenchError> {
    let url = format!("{base}/v1/memory/collections/bench-adds/memories");
    let count = range.len();
    let queue = Arc::new(std::sync::Mutex::new(range));
    let started = Instant::now();
    let workers: Vec<_> = (0..clients.max(1))
        .map(|_| {
            let (client, url, key) = (client.clone(), url.clone(), key.to_owned());
            let (queue, corpus) = (queue.clone(), corpus.clone());
            tokio::spawn(async move {
                let mut samples: Vec<Duration> = Vec::new();
                loop {
                    let next = queue.lock().ok().and_then(|mut queue| queue.next());
                    let Some(index) = next else {
                        return Ok::<_, BenchError>(samples);
                    };
                    let started = Instant::now();
                    let response = client
                        .post(&url)
                        .bearer_auth(&key)
                        .json(&json!({ "text": corpus.text(index) }))
                        .send()
                        .await?;
                    expect(response, 201, "create").await?;
                    samples.push(started.elapsed());
                }
            })
        })
        .collect();
    let mut latencies = Latencies::default();
    for worker in workers {
        let samples = worker
            .await
            .map_err(|error| BenchError::Setup(format!("worker: {error}")))??;
        samples
            .into_iter()
            .for_each(|sample| latencies.record(sample));
    }
    let rate = count as f64 / started.elapsed().as_secs_f64();
    Ok((rate, latencies))
}
