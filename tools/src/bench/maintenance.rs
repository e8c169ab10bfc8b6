//! Maintenance without the model (`memvault bench --maintenance`): an in-process service on
//! a fresh data dir whose embedder returns seeded random unit vectors, loaded with N
//! memories (about 5% exact repeats, so dedup has clusters to find), then collection and
//! service health, the collection summary (uncached, cached and after a write), dedup and
//! archive-stale timed through the service facade. Numbers are printed, never asserted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use memvault_core::memory::NewMemory;
use memvault_core::service::{Read, Write};
use memvault_core::{Agent, Memvault};
use memvault_embed::{Embedder, EmbeddingError, EmbeddingService};
use memvault_storage::CollectionName;

use super::corpus::Corpus;
use super::ingest::in_process_service;
use super::process::proc_status_bytes;
use super::stats::{Latencies, Progress};
use super::{format_bytes, format_duration, BenchArgs, BenchError, Report};

pub const DIMENSIONS: usize = 384;
const BATCH: usize = 100;
/// One text in this many repeats the text ten places before it, in the same batch.
const REPEAT_EVERY: usize = 20;
const STALE_DAYS: u32 = 90;
const SUMMARY_LIMIT: usize = 50;
const DEDUP_THRESHOLD: f32 = 0.95;

/// For each text, a pseudo-random unit vector seeded by the text's FNV-1a hash: identical
/// texts get identical vectors, different texts nearly orthogonal ones.
pub(super) struct SeededVectors;

impl Embedder for SeededVectors {
    fn model_name(&self) -> &str {
        "seeded random unit vectors"
    }

    fn dimensions(&self) -> usize {
        DIMENSIONS
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        Ok(texts.iter().map(|text| seeded_unit_vector(text)).collect())
    }
}

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Gaussian components (Box-Muller), normalised: uniform on the sphere.
pub fn seeded_unit_vector(text: &str) -> Vec<f32> {
    let mut state = fnv1a(text);
    let mut uniform = || ((splitmix64(&mut state) >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let mut vector = Vec::with_capacity(DIMENSIONS);
    while vector.len() < DIMENSIONS {
        let (u, v) = (uniform(), uniform());
        let radius = (-2.0 * u.ln()).sqrt();
        let angle = std::f64::consts::TAU * v;
        vector.push(radius * angle.cos());
        vector.push(radius * angle.sin());
    }
    vector.truncate(DIMENSIONS);
    let norm = vector.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
    vector.iter().map(|x| (x / norm) as f32).collect()
}

/// The `index`th memory text: unique (suffixed with its index), except every
/// [`REPEAT_EVERY`]th, which repeats the text ten places before it exactly.
pub fn memory_text(corpus: Option<&Corpus>, index: usize) -> String {
    let index = if index % REPEAT_EVERY == REPEAT_EVERY - 1 {
        index - 10
    } else {
        index
    };
    let base = match corpus {
        Some(corpus) => corpus.text(index),
        None => format!("Memory number {index} about topic {}.", index % 97),
    };
    format!("{base} #{index}")
}

/// A plain memory of the benchmarks: category "other", source "bench".
pub(super) fn new_memory(text: String, importance: f64) -> NewMemory {
    NewMemory {
        text,
        importance,
        category: "other".to_owned(),
        source: "bench".to_owned(),
        metadata: Default::default(),
        container_tag: None,
        images: Vec::new(),
    }
}

/// `n=200: p50 1.2 µs, p95 2.0 µs, max 15.3 µs`.
fn figures(latencies: &Latencies, count: usize) -> String {
    format!(
        "n={count}: p50 {}, p95 {}, max {}",
        format_fine(latencies.quantile(0.50)),
        format_fine(latencies.quantile(0.95)),
        format_fine(latencies.quantile(1.0))
    )
}

/// Microseconds under a millisecond, else milliseconds.
fn format_fine(duration: Duration) -> String {
    let micros = duration.as_secs_f64() * 1_000_000.0;
    if micros < 1_000.0 {
        format!("{micros:.1} µs")
    } else {
        format!("{:.2} ms", micros / 1000.0)
    }
}

/// This process's resident set size and its peak, from /proc (0 where /proc is absent).
fn own_rss() -> (u64, u64) {
    (
        proc_status_bytes("self", "VmRSS:"),
        proc_status_bytes("self", "VmHWM:"),
    )
}

pub async fn run(args: &BenchArgs) -> Result<(), BenchError> {
    let setup = |error: String| BenchError::Setup(format!("maintenance: {error}"));
    let count = args.memories;
    let corpus = if args.corpus.exists() {
        match Corpus::load(&args.corpus) {
            Ok(corpus) => Some(corpus),
            Err(error) => {
                eprintln!("bench: {error}; generated texts instead");
                None
            }
        }
    } else {
        None
    };
    let data = tempfile::Builder::new()
        .prefix("memvault-bench-maintenance-")
        .tempdir()
        .map_err(|error| setup(format!("temp dir: {error}")))?;
    eprintln!(
        "bench: maintenance on {count} memories in collection \"bench\", texts from {}, \
         data in {}",
        match &corpus {
            Some(_) => args.corpus.display().to_string(),
            None => "generated sentences".to_owned(),
        },
        data.path().display()
    );
    eprintln!(
        "bench: vectors are seeded random unit vectors ({DIMENSIONS} dims, from a hash of \
         the text; identical text, identical vector), not the model: maintenance cost does \
         not depend on the model"
    );
    eprintln!(
        "bench: 1 text in {REPEAT_EVERY} repeats an earlier one exactly, so dedup finds \
         clusters"
    );

    let embedder = EmbeddingService::start(Arc::new(SeededVectors), 1_000);
    let (service, agent, name) = in_process_service(data.path(), embedder)
        .await
        .map_err(setup)?;
    let mut report = Report::default();

    let loading = load(
        &service,
        &agent,
        &name,
        corpus.as_ref(),
        count,
        args.concurrency,
    )
    .await;
    let loading = match loading {
        Ok(loading) => loading,
        Err(error) => {
            service.shutdown().await;
            return Err(setup(error));
        }
    };
    report.line(
        &format!(
            "load {count} memories ({BATCH}/call, {} workers, seeded vectors)",
            args.concurrency.max(1)
        ),
        format!(
            "{} ({:.0} memories/s)",
            format_duration(loading),
            count as f64 / loading.as_secs_f64().max(1e-9)
        ),
    );
    let (rss, peak) = own_rss();
    report.line(
        "RSS of the bench process after the load (peak)",
        format!("{} ({})", format_bytes(rss), format_bytes(peak)),
    );
    let measured = measure(&service, &agent, &name, count, &mut report).await;
    let (rss, peak) = own_rss();
    report.line(
        "RSS of the bench process at the end (peak)",
        format!("{} ({})", format_bytes(rss), format_bytes(peak)),
    );
    service.shutdown().await;
    report.print();
    measured.map_err(setup)
}

/// Creates `count` memories through `create_memories`, [`BATCH`] per call, from
/// `concurrency` workers; returns the elapsed time.
async fn load(
    service: &Memvault,
    agent: &Agent,
    name: &CollectionName,
    corpus: Option<&Corpus>,
    count: usize,
    concurrency: usize,
) -> Result<Duration, String> {
    let batches: Vec<(usize, usize)> = (0..count)
        .step_by(BATCH)
        .map(|start| (start, (start + BATCH).min(count)))
        .collect();
    let queue = Arc::new(std::sync::Mutex::new(batches.into_iter()));
    let progress = Arc::new(std::sync::Mutex::new(Progress::new("load", count)));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (service, agent, name, queue, progress) = (
                service.clone(),
                agent.clone(),
                name.clone(),
                queue.clone(),
                progress.clone(),
            );
            let corpus = corpus.cloned();
            tokio::spawn(async move {
                let access = service
                    .authorizer()
                    .authorize::<Write>(&agent, name)
                    .map_err(|error| error.to_string())?;
                loop {
                    let next = queue.lock().map(|mut queue| queue.next()).ok().flatten();
                    let Some((start, end)) = next else {
                        return Ok::<(), String>(());
                    };
                    let memories = (start..end)
                        .map(|index| {
                            let importance = ((index * 37) % 100) as f64 / 100.0;
                            new_memory(memory_text(corpus.as_ref(), index), importance)
                        })
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
        worker.await.map_err(|error| error.to_string())??;
    }
    let elapsed = started.elapsed();
    if let Ok(mut progress) = progress.lock() {
        progress.finish();
    }
    Ok(elapsed)
}

async fn measure(
    service: &Memvault,
    agent: &Agent,
    name: &CollectionName,
    count: usize,
    report: &mut Report,
) -> Result<(), String> {
    let text = |error: memvault_core::Error| error.to_string();
    let read = service
        .authorizer()
        .authorize::<Read>(agent, name.clone())
        .map_err(text)?;
    let write = service
        .authorizer()
        .authorize::<Write>(agent, name.clone())
        .map_err(text)?;
    let dry_run = service
        .authorizer()
        .authorize_sweep(agent, name.clone(), true)
        .map_err(text)?;
    let apply = service
        .authorizer()
        .authorize_sweep(agent, name.clone(), false)
        .map_err(text)?;

    // Health: read from the published snapshot's counters.
    let mut latencies = Latencies::default();
    let mut health = None;
    for _ in 0..200 {
        let started = Instant::now();
        health = service
            .maintenance()
            .collection_health(&read, STALE_DAYS)
            .map_err(text)?;
        latencies.record(started.elapsed());
    }
    report.line(
        &format!("collection_health ({STALE_DAYS} days), {count} memories"),
        figures(&latencies, 200),
    );
    if let Some(health) = health.map(|report| report.health) {
        report.line(
            "  health",
            format!(
                "total {}, current {}, archived {}, stale {}",
                health.total, health.current, health.archived, health.stale
            ),
        );
    }
    let mut latencies = Latencies::default();
    let mut total = None;
    for _ in 0..50 {
        let started = Instant::now();
        total = Some(service.maintenance().service_health(STALE_DAYS));
        latencies.record(started.elapsed());
    }
    report.line(
        &format!("service_health ({STALE_DAYS} days)"),
        figures(&latencies, 50),
    );
    if let Some(total) = total {
        report.line(
            "  service",
            format!(
                "{} tenants, {} collections, {} memories",
                total.tenants, total.collections, total.health.total
            ),
        );
    }

    // Summary: uncached, cached, and uncached again after each write.
    let started = Instant::now();
    let summary = service
        .maintenance()
        .summary(&read, SUMMARY_LIMIT)
        .await
        .map_err(text)?;
    let first = started.elapsed();
    report.line(
        &format!("summary (limit {SUMMARY_LIMIT}), first call, uncached"),
        format_fine(first),
    );
    if let Some(summary) = summary {
        report.line(
            "  summary",
            format!(
                "{}, based on {}, {} themes",
                summary.generated_by,
                summary.based_on,
                summary.themes.len()
            ),
        );
    }
    let mut latencies = Latencies::default();
    for _ in 0..200 {
        let started = Instant::now();
        service
            .maintenance()
            .summary(&read, SUMMARY_LIMIT)
            .await
            .map_err(text)?;
        latencies.record(started.elapsed());
    }
    report.line(
        &format!("summary (limit {SUMMARY_LIMIT}), cached"),
        figures(&latencies, 200),
    );
    let mut latencies = Latencies::default();
    for round in 0..10 {
        let memory = new_memory(
            format!("A memory written between summaries, round {round}."),
            0.5,
        );
        service
            .memories()
            .create(&write, vec![memory])
            .await
            .map_err(text)?;
        let started = Instant::now();
        service
            .maintenance()
            .summary(&read, SUMMARY_LIMIT)
            .await
            .map_err(text)?;
        latencies.record(started.elapsed());
    }
    report.line(
        &format!("summary (limit {SUMMARY_LIMIT}), after a write"),
        figures(&latencies, 10),
    );

    // Dedup over the most recent memories (the window).
    let mut latencies = Latencies::default();
    let mut last = None;
    for _ in 0..20 {
        let started = Instant::now();
        last = Some(
            service
                .maintenance()
                .dedup(&dry_run, DEDUP_THRESHOLD)
                .await
                .map_err(text)?,
        );
        latencies.record(started.elapsed());
    }
    report.line(
        &format!("dedup ({DEDUP_THRESHOLD}), dry run"),
        figures(&latencies, 20),
    );
    if let Some(last) = last {
        let duplicates: usize = last
            .clusters
            .iter()
            .map(|cluster| cluster.duplicates.len())
            .sum();
        report.line(
            "  dedup dry run, last",
            format!(
                "{} clusters ({duplicates} duplicates), {} scanned",
                last.clusters.len(),
                last.scanned
            ),
        );
    }
    let started = Instant::now();
    let deleted = service.maintenance().dedup(&apply, DEDUP_THRESHOLD).await;
    let elapsed = started.elapsed();
    report.line(
        &format!("dedup ({DEDUP_THRESHOLD}), deleting"),
        match deleted {
            Ok(deleted) => format!(
                "{} ({} deleted, {} clusters, {} scanned)",
                format_fine(elapsed),
                deleted.deleted.len(),
                deleted.clusters.len(),
                deleted.scanned
            ),
            Err(error) => format!("failed after {}: {error}", format_fine(elapsed)),
        },
    );

    // Archive-stale older than 0 days: every memory, the worst case.
    let mut latencies = Latencies::default();
    let mut stale = 0;
    for _ in 0..5 {
        let started = Instant::now();
        stale = service
            .maintenance()
            .archive_stale(&dry_run, 0)
            .await
            .map_err(text)?
            .len();
        latencies.record(started.elapsed());
    }
    report.line(
        "archive_stale (0 days: all), dry run",
        format!("{} ({stale} would be archived)", figures(&latencies, 5)),
    );
    let started = Instant::now();
    let archived = service.maintenance().archive_stale(&apply, 0).await;
    let elapsed = started.elapsed();
    report.line(
        "archive_stale (0 days: all), archiving",
        match archived {
            Ok(archived) => format!("{} ({} archived)", format_duration(elapsed), archived.len()),
            Err(error) => format!("failed after {}: {error}", format_duration(elapsed)),
        },
    );
    let started = Instant::now();
    let health = service
        .maintenance()
        .collection_health(&read, STALE_DAYS)
        .map_err(text)?;
    let elapsed = started.elapsed();
    report.line(
        "collection_health after the mass archive",
        match health.map(|report| report.health) {
            Some(health) => format!(
                "{} (total {}, current {}, archived {}, stale {})",
                format_fine(elapsed),
                health.total,
                health.current,
                health.archived,
                health.stale
            ),
            None => format!("{} (no collection)", format_fine(elapsed)),
        },
    );
    Ok(())
}
