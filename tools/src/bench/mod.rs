//! `memvault bench`: measures a real server process over HTTP, the way a client sees it.
//!
//! It starts `memvault serve` (this same binary) on a fresh temporary data dir with the
//! search result cache off, then measures: the raw embedder alone; start-up to healthy;
//! RSS; single-create latency; bulk-create throughput; search latency per mode at 10k and
//! at N memories, with the query embedded and with its embedding already cached; bytes on
//! disk; the cold start with N memories; and the write path without the model (an
//! in-process service fed the vectors the first run stored). Numbers are printed, never
//! asserted. `--maintenance` instead times health, summary, dedup and archive-stale on an
//! in-process service (see `maintenance`); `--rate-limit` what the per-key rate limiter
//! costs (see `ratelimit`); `--reembed` a live model switch with a kill -9 in the middle
//! (see `reembed`); `--files` file ingestion over `drop` (see `files`); `--cluster` the
//! store and several nodes on Postgres (see `cluster`); `--dashboard` page weight and
//! time per dashboard page (see `dashboard`).

mod adds;
mod cluster;
pub mod corpus;
mod dashboard;
mod embedder;
pub mod fake_embeddings;
mod files;
mod ingest;
pub mod maintenance;
mod process;
mod ratelimit;
mod reembed;
mod scale;
pub mod stats;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};

use self::corpus::Corpus;
use self::process::ServerProcess;
use self::stats::{Latencies, Progress};

const BULK_SIZE: usize = 100;
const CHECKPOINT: usize = 10_000;

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Memories to load through the bulk endpoint.
    #[arg(long, default_value_t = 100_000)]
    pub memories: usize,
    /// Single creates timed one after another for the latency figures.
    #[arg(long, default_value_t = 300)]
    pub latency_samples: usize,
    /// Searches timed per mode and measurement.
    #[arg(long, default_value_t = 200)]
    pub search_samples: usize,
    /// Concurrent clients sending bulk requests.
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
    /// A JSON-lines file whose "text" (and "title") fields supply memory texts, one memory
    /// per sentence; default: the BEIR MS MARCO sample next to the repository.
    #[arg(long, default_value = "../shared/data/beir-msmarco-5k/corpus.jsonl")]
    pub corpus: PathBuf,
    /// Texts embedded in-process for the raw embedder throughput.
    #[arg(long, default_value_t = 512)]
    pub embed_texts: usize,
    /// Only measure the raw embedder, then stop.
    #[arg(long)]
    pub embedder_only: bool,
    /// Skip the in-process ingest without the model.
    #[arg(long)]
    pub skip_no_embedding: bool,
    /// Load the --memories through an in-process service whose embedder answers with
    /// vectors computed once per corpus sentence by the default model (copies moved a
    /// little off them), then measure a server process on that data: cold start, RSS,
    /// disk, and search p50/p95/p99 per mode with the query embedding cached. The way to
    /// a million memories in minutes instead of hours (see `scale`).
    #[arg(long, conflicts_with_all = ["existing_data", "embedder_only", "maintenance", "rate_limit", "reembed", "files", "cluster", "dashboard", "adds"])]
    pub precomputed: bool,
    /// Keep the data dir instead of deleting it at the end.
    #[arg(long)]
    pub keep_data: bool,
    /// Measure start-up, RSS and search latency on the data dir of an earlier run (kept
    /// with --keep-data or copied) instead of loading; --memories names its size.
    #[arg(long, requires = "key")]
    pub existing_data: Option<PathBuf>,
    /// The admin key of --existing-data (a --keep-data run prints it).
    #[arg(long)]
    pub key: Option<String>,
    /// Only measure maintenance (health, summary, dedup, archive-stale) on an in-process
    /// service loaded with --memories memories and seeded random vectors, then stop.
    #[arg(long, conflicts_with_all = ["existing_data", "embedder_only"])]
    pub maintenance: bool,
    /// Only measure what per-key rate limiting costs (the limiter alone and a request
    /// through the router with it on and off), then stop.
    #[arg(long, conflicts_with_all = ["existing_data", "embedder_only", "maintenance"])]
    pub rate_limit: bool,
    /// Only measure a live model switch: --memories memories loaded on a stand-in
    /// OpenAI-compatible endpoint, re-embedded with all-MiniLM-L6-v2 while a client
    /// searches throughout, with a kill -9 at --kill-at of the way; then stop.
    #[arg(long, conflicts_with_all = ["existing_data", "embedder_only", "maintenance", "rate_limit"])]
    pub reembed: bool,
    /// With --reembed: the share of memories staged at which the server is killed (0
    /// for no kill).
    #[arg(long, default_value_t = 0.4)]
    pub kill_at: f64,
    /// Only measure file ingestion over `drop`: a mixed folder (sync and async), OCR and
    /// transcription, server and worker RSS, and pathological files; then stop.
    #[arg(long, conflicts_with_all = ["existing_data", "embedder_only", "maintenance", "rate_limit", "reembed"])]
    pub files: bool,
    /// With --files: the directory of the real files (read at run time).
    #[arg(long, default_value = "../shared/data/files")]
    pub files_dir: PathBuf,
    /// With --files: how many times the folder drops are repeated (the OCR and
    /// transcription runs: one more, at least three).
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// With --files: collections per folder drop (each binary file once per collection).
    #[arg(long, default_value_t = 4)]
    pub collections: usize,
    /// Only measure the store and several nodes on Postgres (see `cluster`): sled against
    /// Postgres, one to three nodes, a kill -9, and the takeover of an account of
    /// --memories memories; then stop.
    #[arg(long, conflicts_with_all = ["existing_data", "embedder_only", "maintenance", "rate_limit", "reembed", "files"])]
    pub cluster: bool,
    /// With --cluster: memories each store is searched over in the sled/Postgres measure.
    #[arg(long, default_value_t = 2_000)]
    pub cluster_memories: usize,
    /// With --cluster: a Postgres where the role may CREATE DATABASE (one per measure,
    /// dropped at the end).
    #[arg(long, env = "MEMVAULT_PG_URL")]
    pub postgres_url: Option<String>,
    /// With --cluster: which measures, `all`, `stores` (sled against Postgres), `nodes`
    /// (one to three nodes, then the kill -9) or `takeover` (an account of --memories).
    #[arg(long, default_value = "all", value_parser = ["all", "stores", "nodes", "takeover"])]
    pub cluster_part: String,
    /// Only measure adding memories (one at a time, 8 clients, bulk, import) with each
    /// build of the local model side by side (candle fp32, ONNX Runtime fp32 and int8),
    /// beside each raw embedder; --memories is the bulk and import size, --latency-samples
    /// the single creates; then stop.
    #[arg(long, conflicts_with_all = ["existing_data", "embedder_only", "maintenance", "rate_limit", "reembed", "files", "cluster", "dashboard"])]
    pub adds: bool,
    /// Only measure the dashboard: page weight and server time per page on an account
    /// of --memories memories in one collection (see `dashboard`); then stop.
    #[arg(long, conflicts_with_all = ["existing_data", "embedder_only", "maintenance", "rate_limit", "reembed", "files", "cluster"])]
    pub dashboard: bool,
    /// With --dashboard: timed requests per page (after three warm-ups).
    #[arg(long, default_value_t = 30)]
    pub page_samples: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Setup(String),
    #[error("HTTP: {0}")]
    Http(#[from] reqwest::Error),
    #[error("unexpected response {status} from {what}: {body}")]
    Status {
        what: String,
        status: u16,
        body: String,
    },
}

pub fn run(args: BenchArgs) -> Result<(), BenchError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| BenchError::Setup(format!("runtime: {error}")))?;
    runtime.block_on(bench(args))
}

async fn bench(args: BenchArgs) -> Result<(), BenchError> {
    if args.maintenance {
        return maintenance::run(&args).await;
    }
    if args.rate_limit {
        return ratelimit::run().await;
    }
    if args.files {
        return files::run(&args).await;
    }
    let corpus = Corpus::load(&args.corpus)?;
    if args.reembed {
        return reembed::run(&args, &corpus).await;
    }
    if args.cluster {
        return cluster::run(&args, &corpus).await;
    }
    if args.dashboard {
        return dashboard::run(&args, &corpus).await;
    }
    if args.adds {
        return adds::run(&args, &corpus).await;
    }
    if args.precomputed {
        return scale::run(&args, &corpus).await;
    }
    if let Some(existing) = &args.existing_data {
        return bench_existing(&args, &corpus, existing).await;
    }
    let data = tempfile::Builder::new()
        .prefix("memvault-bench-")
        .tempdir()
        .map_err(|error| BenchError::Setup(format!("temp dir: {error}")))?;
    let key = format!("mv_bench_{}", uuid::Uuid::new_v4().simple());
    let mut report = Report::default();
    eprintln!(
        "bench: {} memories, one per sentence of {} ({} distinct sentences), data in {}",
        args.memories,
        args.corpus.display(),
        corpus.len(),
        data.path().display()
    );

    // The raw embedder, every build; the server below runs the configured one.
    let mut raw_rate = 0.0;
    for build in embedder::Build::ALL {
        let (embed_corpus, embed_texts) = (corpus.clone(), args.embed_texts);
        let figures = tokio::task::spawn_blocking(move || {
            embedder::measure(build, &embed_corpus, embed_texts, 64, 100)
        })
        .await
        .map_err(|error| BenchError::Setup(format!("embedder: {error}")))??;
        raw_rate = figures.per_second();
        report.line(
            &format!(
                "raw embedder, {}, batches of {} (n={})",
                build.label(),
                figures.batch,
                figures.texts
            ),
            format!("{raw_rate:.1} texts/s"),
        );
        report.line(
            &format!("raw embedder, {}, one text (n=100)", build.label()),
            figures.single.summary(),
        );
    }
    if args.embedder_only {
        report.print();
        return Ok(());
    }

    let mut server = ServerProcess::start(data.path(), &key).await?;
    report.line(
        "start-up to healthy, empty",
        format_duration(server.startup),
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    report.line("RSS idle", format_bytes(server.rss_bytes()));

    let client = reqwest::Client::new();
    let base = server.base_url.clone();
    let latencies = single_creates(&client, &base, &key, &corpus, args.latency_samples).await?;
    report.line(
        &format!("create one memory, sequential (n={})", args.latency_samples),
        latencies.summary(),
    );

    let mut queries = corpus.queries(args.search_samples * 2).into_iter();
    let started = Instant::now();
    let checkpoint = CHECKPOINT.min(args.memories);
    bulk_load(
        &client,
        &base,
        &key,
        &corpus,
        0..checkpoint,
        args.concurrency,
    )
    .await?;
    let mut loading = started.elapsed();
    if checkpoint < args.memories {
        let batch: Vec<String> = queries.by_ref().take(args.search_samples).collect();
        search_latencies(&client, &base, &key, &batch, checkpoint, &mut report).await?;
        let resumed = Instant::now();
        bulk_load(
            &client,
            &base,
            &key,
            &corpus,
            checkpoint..args.memories,
            args.concurrency,
        )
        .await?;
        loading += resumed.elapsed();
    }
    let bulk_rate = args.memories as f64 / loading.as_secs_f64();
    report.line(
        &format!(
            "bulk create with embedding ({BULK_SIZE}/request, {} clients)",
            args.concurrency
        ),
        format!(
            "{bulk_rate:.1} memories/s ({} in {}; {:.0}% of the raw embedder)",
            args.memories,
            format_duration(loading),
            100.0 * bulk_rate / raw_rate.max(1e-9)
        ),
    );
    let batch: Vec<String> = queries.take(args.search_samples).collect();
    search_latencies(&client, &base, &key, &batch, args.memories, &mut report).await?;
    let total = args.memories + args.latency_samples;
    report.line(
        &format!("RSS after {total} memories"),
        format_bytes(server.rss_bytes()),
    );
    server.stop().await?;
    let bytes = process::directory_bytes(data.path());
    report.line(
        "data dir on disk (store + indexes)",
        format!(
            "{} ({} per memory)",
            format_bytes(bytes),
            format_bytes(bytes / total.max(1) as u64)
        ),
    );

    let mut server = ServerProcess::start(data.path(), &key).await?;
    report.line(
        &format!("cold start to healthy, {total} memories"),
        format_duration(server.startup),
    );
    report.line("RSS after cold start", format_bytes(server.rss_bytes()));
    server.stop().await?;

    // This measure reads the vectors the run stored from the sled store under the data
    // dir; a server on another store (MEMVAULT__STORE__BACKEND) left none there.
    let on_sled =
        std::env::var("MEMVAULT__STORE__BACKEND").map_or(true, |backend| backend == "sled");
    if !on_sled {
        eprintln!("bench: bulk create without the model skipped: it needs the sled store");
    }
    if !args.skip_no_embedding && on_sled {
        let (rate, count) = ingest::without_model(data.path(), args.concurrency).await?;
        report.line(
            "bulk create without the model (in-process, stored vectors)",
            format!("{rate:.0} memories/s ({count} memories)"),
        );
    }

    if args.keep_data {
        let kept = data.keep();
        eprintln!("bench: data kept in {} (admin key {key})", kept.display());
    }
    report.print();
    Ok(())
}

/// Start-up, RSS and search latency on an already loaded data dir.
async fn bench_existing(
    args: &BenchArgs,
    corpus: &Corpus,
    data_dir: &std::path::Path,
) -> Result<(), BenchError> {
    let key = args
        .key
        .clone()
        .ok_or_else(|| BenchError::Setup("--existing-data needs --key".to_owned()))?;
    let mut report = Report::default();
    let server = ServerProcess::start(data_dir, &key).await?;
    report.line(
        &format!(
            "cold start to healthy, existing data ({} memories)",
            args.memories
        ),
        format_duration(server.startup),
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    report.line("RSS after cold start", format_bytes(server.rss_bytes()));
    let client = reqwest::Client::new();
    // Fresh query texts: a run on this data dir must not find its embeddings cached.
    let queries: Vec<String> = corpus
        .queries(args.search_samples)
        .into_iter()
        .map(|query| format!("{query} again {}", uuid::Uuid::new_v4().simple()))
        .collect();
    let base = server.base_url.clone();
    search_latencies(&client, &base, &key, &queries, args.memories, &mut report).await?;
    report.line("RSS after searches", format_bytes(server.rss_bytes()));
    let mut server = server;
    server.stop().await?;
    report.print();
    Ok(())
}

async fn single_creates(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    corpus: &Corpus,
    samples: usize,
) -> Result<Latencies, BenchError> {
    let url = format!("{base}/v1/memory/collections/bench-latency/memories");
    let mut latencies = Latencies::default();
    let mut progress = Progress::new("single creates", samples);
    for index in 0..samples {
        let body = json!({ "text": corpus.text(index) });
        let started = Instant::now();
        let response = client
            .post(&url)
            .bearer_auth(key)
            .json(&body)
            .send()
            .await?;
        expect(response, 201, "create").await?;
        latencies.record(started.elapsed());
        progress.advance(1);
    }
    progress.finish();
    Ok(latencies)
}

pub(crate) async fn bulk_load(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    corpus: &Corpus,
    range: std::ops::Range<usize>,
    concurrency: usize,
) -> Result<(), BenchError> {
    let url = format!("{base}/v1/memory/collections/bench/memories/bulk");
    let batches: Vec<(usize, usize)> = range
        .clone()
        .step_by(BULK_SIZE)
        .map(|start| (start, (start + BULK_SIZE).min(range.end)))
        .collect();
    let queue = std::sync::Arc::new(std::sync::Mutex::new(batches.into_iter()));
    let progress = std::sync::Arc::new(std::sync::Mutex::new(Progress::new("bulk", range.len())));
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (client, url, key) = (client.clone(), url.clone(), key.to_owned());
            let (queue, progress, corpus) = (queue.clone(), progress.clone(), corpus.clone());
            tokio::spawn(async move {
                loop {
                    let next = queue.lock().map(|mut queue| queue.next()).ok().flatten();
                    let Some((start, end)) = next else {
                        return Ok::<(), BenchError>(());
                    };
                    let body: Vec<Value> = (start..end)
                        .map(|index| json!({ "text": corpus.text(index), "importance": 0.5 }))
                        .collect();
                    let response = client
                        .post(&url)
                        .bearer_auth(&key)
                        .json(&body)
                        .send()
                        .await?;
                    expect(response, 201, "bulk create").await?;
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
            .map_err(|error| BenchError::Setup(format!("worker: {error}")))??;
    }
    if let Ok(mut progress) = progress.lock() {
        progress.finish();
    }
    Ok(())
}

/// Each query once in `mode` (limit 10): the HTTP round trips and the server's own
/// `search_ms`.
pub(crate) async fn timed_searches(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    mode: &str,
    queries: &[String],
) -> Result<(Latencies, Latencies), BenchError> {
    let (mut http, mut server_side) = (Latencies::default(), Latencies::default());
    for query in queries {
        let body = json!({ "query": query, "mode": mode, "limit": 10 });
        let started = Instant::now();
        let response = client.post(url).bearer_auth(key).json(&body).send().await?;
        let elapsed = started.elapsed();
        if response.status().as_u16() != 200 {
            expect(response, 200, "search").await?;
            continue;
        }
        let answer: Value = response.json().await?;
        http.record(elapsed);
        let search_ms = answer["search_ms"].as_f64().unwrap_or(0.0);
        server_side.record(Duration::from_secs_f64(search_ms / 1000.0));
    }
    Ok((http, server_side))
}

/// Per mode: each query once with its embedding computed (cold), then again with the
/// embedding cached (the result cache is off in the server under test). Reports the
/// client-side latency and the server's own `search_ms`.
async fn search_latencies(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    queries: &[String],
    memories: usize,
    report: &mut Report,
) -> Result<(), BenchError> {
    let url = format!("{base}/v1/memory/collections/bench/search");
    for mode in ["vector", "text", "hybrid"] {
        // Distinct query texts per mode so the vector run does not warm hybrid's cache.
        let texts: Vec<String> = queries
            .iter()
            .map(|query| format!("{query} {mode}"))
            .collect();
        let passes: &[&str] = if mode == "text" {
            &["no embedding needed"]
        } else {
            &["query embedded", "query embedding cached"]
        };
        for pass in passes {
            let (http, server_side) = timed_searches(client, &url, key, mode, &texts).await?;
            report.line(
                &format!("search {mode} at {memories}, {pass} (n={})", texts.len()),
                format!(
                    "HTTP {}; server search_ms p50 {:.2} ms, p95 {:.2} ms",
                    http.summary(),
                    server_side.quantile(0.5).as_secs_f64() * 1000.0,
                    server_side.quantile(0.95).as_secs_f64() * 1000.0
                ),
            );
        }
    }
    Ok(())
}

pub(crate) async fn expect(
    response: reqwest::Response,
    status: u16,
    what: &str,
) -> Result<(), BenchError> {
    if response.status().as_u16() == status {
        return Ok(());
    }
    Err(BenchError::Status {
        what: what.to_owned(),
        status: response.status().as_u16(),
        body: response.text().await.unwrap_or_default(),
    })
}

#[derive(Default)]
pub(crate) struct Report {
    lines: Vec<(String, String)>,
}

impl Report {
    fn line(&mut self, name: &str, value: impl Into<String>) {
        let value = value.into();
        eprintln!("bench: {name}: {value}");
        self.lines.push((name.to_owned(), value));
    }

    fn print(&self) {
        let width = self
            .lines
            .iter()
            .map(|(name, _)| name.len())
            .max()
            .unwrap_or(0);
        println!();
        println!("| {:width$} | result |", "measure");
        println!("|{}|--------|", "-".repeat(width + 2));
        for (name, value) in &self.lines {
            println!("| {name:width$} | {value} |");
        }
    }
}

fn format_duration(duration: Duration) -> String {
    let millis = duration.as_secs_f64() * 1000.0;
    if millis >= 10_000.0 {
        format!("{:.1} s", millis / 1000.0)
    } else {
        format!("{millis:.1} ms")
    }
}

fn format_bytes(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if bytes as f64 >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}
