//! `memvault bench --reembed`: a live model switch over `--memories` memories, measured
//! from outside. The collection is loaded on one model (a stand-in OpenAI-compatible
//! endpoint, see `fake_embeddings`), then the server restarts on the local
//! all-MiniLM-L6-v2 and re-embeds it in the background while a client searches without
//! pause (vector and hybrid). At `--kill-at` of the way the server is killed with
//! SIGKILL and started again; the re-embedding resumes from what it staged. Reported: the
//! time and rate of the re-embedding, where it resumed, and every search answered during
//! it: how many, the 5xx and other failures, the empty answers (every query had hits on
//! the old index), and their latency.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::corpus::Corpus;
use super::process::ServerProcess;
use super::stats::Latencies;
use super::{bulk_load, fake_embeddings, format_duration, BenchArgs, BenchError, Report};

/// Queries the searching client cycles through.
const QUERIES: usize = 50;
const POLL: Duration = Duration::from_millis(200);

/// What the searching client saw.
#[derive(Default)]
struct Tally {
    searches: usize,
    server_errors: usize,
    other_errors: usize,
    empty: usize,
    http: Latencies,
    server_side: Latencies,
    first_failure: Option<String>,
}

pub async fn run(args: &BenchArgs, corpus: &Corpus) -> Result<(), BenchError> {
    let data = tempfile::Builder::new()
        .prefix("memvault-bench-reembed-")
        .tempdir()
        .map_err(|error| BenchError::Setup(format!("temp dir: {error}")))?;
    let key = format!("mv_bench_{}", uuid::Uuid::new_v4().simple());
    let mut report = Report::default();
    let old_model = fake_embeddings::server_environment(&fake_embeddings::start().await?);
    eprintln!(
        "bench: loading {} memories on {}, then re-embedding them with all-MiniLM-L6-v2",
        args.memories,
        fake_embeddings::MODEL
    );
    let mut server = ServerProcess::start_with(data.path(), &key, &old_model).await?;
    let client = reqwest::Client::new();
    bulk_load(
        &client,
        &server.base_url,
        &key,
        corpus,
        0..args.memories,
        args.concurrency,
    )
    .await?;
    let queries = corpus.queries(QUERIES);
    for query in &queries {
        for mode in ["vector", "hybrid"] {
            let answer = search(&client, &server.base_url, &key, query, mode).await?;
            if answer.results == 0 {
                return Err(BenchError::Setup(format!(
                    "{mode} search for {query:?} found nothing before the switch"
                )));
            }
        }
    }
    server.stop().await?;

    // The configured model is now the local one: the server re-embeds on start. The
    // endpoint stays configured so the old vectors can still be queried meanwhile.
    let mut new_model = old_model.clone();
    new_model[0].1 = "local".to_owned();
    let started = Instant::now();
    let mut server = ServerProcess::start_with(data.path(), &key, &new_model).await?;
    report.line(
        &format!(
            "start-up to healthy, {} memories to re-embed",
            args.memories
        ),
        format_duration(server.startup),
    );
    let base = Arc::new(Mutex::new(server.base_url.clone()));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let (running, paused) = (
        Arc::new(AtomicBool::new(true)),
        Arc::new(AtomicBool::new(false)),
    );
    let searcher = tokio::spawn(search_throughout(
        client.clone(),
        base.clone(),
        key.clone(),
        queries,
        tally.clone(),
        running.clone(),
        paused.clone(),
    ));

    let kill_at = (args.memories as f64 * args.kill_at) as usize;
    let mut killed = None;
    let mut downtime = Duration::ZERO;
    loop {
        let state = embeddings(&client, &server.base_url, &key).await?;
        let left = state["reembedding"]["collections_left"]
            .as_u64()
            .unwrap_or(0);
        let done = state["reembedding"]["memories_done"].as_u64().unwrap_or(0) as usize;
        if left == 0 {
            break;
        }
        if killed.is_none() && args.kill_at > 0.0 && done >= kill_at {
            paused.store(true, Ordering::SeqCst);
            server.kill_hard().await?;
            let down = Instant::now();
            server = ServerProcess::start_with(data.path(), &key, &new_model).await?;
            downtime = down.elapsed();
            *base.lock().unwrap_or_else(PoisonError::into_inner) = server.base_url.clone();
            paused.store(false, Ordering::SeqCst);
            let resumed = resumed_at(&client, &server.base_url, &key).await?;
            killed = Some((done, resumed));
        }
        tokio::time::sleep(POLL).await;
    }
    let elapsed = started.elapsed();
    running.store(false, Ordering::SeqCst);
    searcher
        .await
        .map_err(|error| BenchError::Setup(format!("searcher: {error}")))?;

    let state = embeddings(&client, &server.base_url, &key).await?;
    let model = state["models"][0]["model"].as_str().unwrap_or_default();
    if model != "all-MiniLM-L6-v2" || state["models"].as_array().map_or(0, Vec::len) != 1 {
        return Err(BenchError::Setup(format!(
            "the collection did not end on all-MiniLM-L6-v2: {state}"
        )));
    }
    let rate = args.memories as f64 / (elapsed - downtime).as_secs_f64().max(1e-9);
    report.line(
        &format!("re-embed {} memories to all-MiniLM-L6-v2", args.memories),
        format!(
            "{} ({rate:.0} memories/s, restart after kill -9 excluded)",
            format_duration(elapsed)
        ),
    );
    if let Some((at, resumed)) = killed {
        report.line(
            "kill -9 during the re-embedding",
            format!(
                "at {at} memories staged; restarted in {}, resumed at {resumed} (nothing staged was embedded again)",
                format_duration(downtime)
            ),
        );
    }
    let tally = Arc::try_unwrap(tally)
        .map_err(|_| BenchError::Setup("searcher still running".to_owned()))?
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    report.line(
        "searches during the re-embedding (vector and hybrid)",
        format!(
            "{} answered; {} 5xx, {} other failures, {} empty{}",
            tally.searches,
            tally.server_errors,
            tally.other_errors,
            tally.empty,
            tally
                .first_failure
                .map(|failure| format!(" (first: {failure})"))
                .unwrap_or_default()
        ),
    );
    report.line(
        "search latency during the re-embedding",
        format!(
            "HTTP {}; server search_ms p50 {:.2} ms, p95 {:.2} ms",
            tally.http.summary(),
            tally.server_side.quantile(0.5).as_secs_f64() * 1000.0,
            tally.server_side.quantile(0.95).as_secs_f64() * 1000.0
        ),
    );
    report.line(
        "RSS after the switch",
        super::format_bytes(server.rss_bytes()),
    );
    server.stop().await?;
    report.print();
    Ok(())
}

struct Answer {
    results: usize,
    search_ms: f64,
}

async fn search(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    query: &str,
    mode: &str,
) -> Result<Answer, BenchError> {
    let response = client
        .post(format!("{base}/v1/memory/collections/bench/search"))
        .bearer_auth(key)
        .json(&json!({"query": query, "mode": mode, "limit": 10, "min_score": 0.0}))
        .send()
        .await?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err(BenchError::Status {
            what: format!("{mode} search"),
            status,
            body: response.text().await.unwrap_or_default(),
        });
    }
    let answer: Value = response.json().await?;
    Ok(Answer {
        results: answer["results"].as_array().map_or(0, Vec::len),
        search_ms: answer["search_ms"].as_f64().unwrap_or(0.0),
    })
}

/// Searches one query after another until `running` is cleared, skipping the restart
/// (`paused`), and tallies what came back.
async fn search_throughout(
    client: reqwest::Client,
    base: Arc<Mutex<String>>,
    key: String,
    queries: Vec<String>,
    tally: Arc<Mutex<Tally>>,
    running: Arc<AtomicBool>,
    paused: Arc<AtomicBool>,
) {
    let modes = ["vector", "hybrid"];
    let mut turn = 0_usize;
    while running.load(Ordering::SeqCst) {
        if paused.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        let (query, mode) = (&queries[turn / 2 % queries.len()], modes[turn % 2]);
        turn += 1;
        let url = base.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let sent = Instant::now();
        let outcome = search(&client, &url, &key, query, mode).await;
        let elapsed = sent.elapsed();
        if paused.load(Ordering::SeqCst) {
            // Sent to the server being killed: not an answer of a running server.
            continue;
        }
        let mut tally = tally.lock().unwrap_or_else(PoisonError::into_inner);
        tally.searches += 1;
        match outcome {
            Ok(answer) => {
                tally.http.record(elapsed);
                tally
                    .server_side
                    .record(Duration::from_secs_f64(answer.search_ms / 1000.0));
                if answer.results == 0 {
                    tally.empty += 1;
                    tally
                        .first_failure
                        .get_or_insert_with(|| format!("{mode} {query:?} found nothing"));
                }
            }
            Err(error) => {
                match &error {
                    BenchError::Status { status, .. } if *status >= 500 => {
                        tally.server_errors += 1;
                    }
                    _ => tally.other_errors += 1,
                }
                tally.first_failure.get_or_insert_with(|| error.to_string());
            }
        }
    }
}

async fn embeddings(client: &reqwest::Client, base: &str, key: &str) -> Result<Value, BenchError> {
    let response = client
        .get(format!("{base}/v1/memory/admin/embeddings"))
        .bearer_auth(key)
        .send()
        .await?;
    if response.status().as_u16() != 200 {
        return Err(BenchError::Status {
            what: "admin/embeddings".to_owned(),
            status: response.status().as_u16(),
            body: response.text().await.unwrap_or_default(),
        });
    }
    Ok(response.json().await?)
}

/// How many memories the restarted server found staged: its first progress figure.
async fn resumed_at(client: &reqwest::Client, base: &str, key: &str) -> Result<u64, BenchError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let state = embeddings(client, base, key).await?;
        let done = state["reembedding"]["memories_done"].as_u64().unwrap_or(0);
        if done > 0 || Instant::now() > deadline {
            return Ok(done);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
