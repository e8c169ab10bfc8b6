//! `memvault bench --dashboard`: the server-rendered dashboard seen from a browser on
//! loopback. A real server (the stand-in OpenAI-compatible embedder, see
//! `fake_embeddings`) is loaded with `--memories` memories in one collection, a few of
//! them pinned and archived; then the bench signs in like a browser (form POST with an
//! `Origin`, the `mv_session` cookie) and times each main page, a fresh request each
//! time, `--page-samples` samples after three warm-ups. Reported per page: the bytes of
//! HTML and the client-side p50/p95; then the sizes of the CSS and scripts every page
//! loads. Numbers are printed, never asserted.

use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_TYPE, COOKIE, ORIGIN, SET_COOKIE};
use serde_json::{json, Value};

use super::corpus::Corpus;
use super::process::ServerProcess;
use super::stats::Latencies;
use super::{bulk_load, expect, fake_embeddings, format_bytes, format_duration};
use super::{BenchArgs, BenchError};

const WARM_UPS: usize = 3;
const ASSETS: [&str; 3] = ["style.css", "dashboard.js", "htmx-2.0.11.min.js"];
/// Memories pinned and archived (each) so the status filters have work.
const MARKED: usize = 20;

pub async fn run(args: &BenchArgs, corpus: &Corpus) -> Result<(), BenchError> {
    let data = tempfile::Builder::new()
        .prefix("memvault-bench-dashboard-")
        .tempdir()
        .map_err(|error| BenchError::Setup(format!("temp dir: {error}")))?;
    let key = format!("mv_bench_{}", uuid::Uuid::new_v4().simple());
    let model = fake_embeddings::server_environment(&fake_embeddings::start().await?);
    let mut server = ServerProcess::start_with(data.path(), &key, &model).await?;
    let base = server.base_url.clone();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    eprintln!(
        "bench: loading {} memories on {} into collection bench, data in {}",
        args.memories,
        fake_embeddings::MODEL,
        data.path().display()
    );
    let started = Instant::now();
    let loaded = args.memories.saturating_sub(MARKED * 2);
    bulk_load(
        &client,
        &base,
        &key,
        corpus,
        0..loaded,
        args.concurrency.max(3),
    )
    .await?;
    let ids = mark(&client, &base, &key, corpus, loaded).await?;
    let load_time = started.elapsed();
    eprintln!(
        "bench: loaded {} memories in {} ({:.0}/s)",
        args.memories,
        format_duration(load_time),
        args.memories as f64 / load_time.as_secs_f64().max(1e-9)
    );

    let cookie = sign_in(&client, &base, &key).await?;
    let word = search_word(corpus);
    let c = "/dashboard/collections/bench".to_owned();
    let memory = ids.last().cloned().unwrap_or_default();
    let pages: Vec<(String, String)> = [
        ("overview", "/dashboard/".to_owned()),
        ("collections", "/dashboard/collections".to_owned()),
        ("collection", c.clone()),
        ("memories, first page (current)", format!("{c}/memories")),
        (
            "memories, status=all page=1000",
            format!("{c}/memories?status=all&page=1000"),
        ),
        (
            "memories, q= (hybrid search)",
            format!("{c}/memories?q={word}"),
        ),
        (
            "memories, status=superseded q=",
            format!("{c}/memories?status=superseded&q={word}"),
        ),
        ("memory page", format!("{c}/memories/{memory}")),
        ("contradictions", format!("{c}/contradictions")),
        ("files", "/dashboard/files".to_owned()),
        ("keys", "/dashboard/keys".to_owned()),
        ("audit", "/dashboard/audit".to_owned()),
        ("usage", "/dashboard/usage".to_owned()),
        ("account", "/dashboard/account".to_owned()),
        ("operator metrics", "/dashboard/operator/metrics".to_owned()),
        ("/status (public)", "/status".to_owned()),
    ]
    .into_iter()
    .map(|(name, path)| (name.to_owned(), path))
    .collect();

    let mut rows = Vec::new();
    for (name, path) in &pages {
        let url = format!("{base}{path}");
        let mut latencies = Latencies::default();
        let mut bytes = 0;
        for sample in 0..WARM_UPS + args.page_samples {
            let sent = Instant::now();
            let response = client.get(&url).header(COOKIE, &cookie).send().await?;
            let status = response.status().as_u16();
            let body = response.bytes().await?;
            let elapsed = sent.elapsed();
            if status != 200 {
                return Err(BenchError::Status {
                    what: format!("GET {path}"),
                    status,
                    body: String::from_utf8_lossy(&body).chars().take(300).collect(),
                });
            }
            bytes = body.len();
            if sample >= WARM_UPS {
                latencies.record(elapsed);
            }
        }
        let ms = |duration: Duration| duration.as_secs_f64() * 1000.0;
        let (p50, p95) = (ms(latencies.quantile(0.5)), ms(latencies.quantile(0.95)));
        eprintln!("bench: {name} ({path}): {bytes} B, p50 {p50:.2} ms, p95 {p95:.2} ms");
        rows.push((name.clone(), path.clone(), bytes, p50, p95));
    }

    let mut assets = Vec::new();
    for asset in ASSETS {
        let response = client
            .get(format!("{base}/dashboard/assets/{asset}"))
            .send()
            .await?;
        let status = response.status().as_u16();
        let body = response.bytes().await?;
        if status != 200 {
            return Err(BenchError::Status {
                what: format!("asset {asset}"),
                status,
                body: String::new(),
            });
        }
        assets.push((asset, body.len()));
    }
    server.stop().await?;

    let asset_bytes: usize = assets.iter().map(|(_, bytes)| bytes).sum();
    println!();
    println!(
        "dashboard at {} memories in one collection (loaded in {}); {} samples per page after {WARM_UPS} warm-ups, client-side over loopback, a fresh request each",
        args.memories,
        format_duration(load_time),
        args.page_samples
    );
    println!();
    println!("| page | path | HTML bytes | p50 ms | p95 ms | with assets |");
    println!("|------|------|-----------:|-------:|-------:|------------:|");
    for (name, path, bytes, p50, p95) in &rows {
        println!(
            "| {name} | `{path}` | {bytes} | {p50:.2} | {p95:.2} | {} |",
            format_bytes((bytes + asset_bytes) as u64)
        );
    }
    println!();
    for (asset, bytes) in &assets {
        println!(
            "asset /dashboard/assets/{asset}: {bytes} B ({})",
            format_bytes(*bytes as u64)
        );
    }
    println!(
        "assets total: {asset_bytes} B ({}), loaded by every page (but /status); a browser caches them after the first page, so later pages weigh their HTML alone",
        format_bytes(asset_bytes as u64)
    );
    Ok(())
}

/// Creates the last memories in one bulk request, then pins `MARKED` and archives
/// `MARKED` of them; returns their ids.
async fn mark(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    corpus: &Corpus,
    from: usize,
) -> Result<Vec<String>, BenchError> {
    let url = format!("{base}/v1/memory/collections/bench/memories");
    let body: Vec<Value> = (from..from + MARKED * 2)
        .map(|index| json!({ "text": format!("{} (marked)", corpus.text(index)) }))
        .collect();
    let response = client
        .post(format!("{url}/bulk"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await?;
    if response.status().as_u16() != 201 {
        expect(response, 201, "bulk create").await?;
        return Ok(Vec::new());
    }
    let created: Value = response.json().await?;
    let ids: Vec<String> = created["memories"]
        .as_array()
        .map(|memories| {
            memories
                .iter()
                .filter_map(|memory| memory["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    for (index, id) in ids.iter().enumerate() {
        let (action, body) = if index < MARKED {
            ("pin", json!({ "pinned": true }))
        } else {
            ("archive", json!({ "archived": true }))
        };
        let response = client
            .post(format!("{url}/{id}/{action}"))
            .bearer_auth(key)
            .json(&body)
            .send()
            .await?;
        expect(response, 200, action).await?;
    }
    Ok(ids)
}

/// Signs in like a browser; returns the `Cookie` header value.
async fn sign_in(client: &reqwest::Client, base: &str, key: &str) -> Result<String, BenchError> {
    let response = client
        .post(format!("{base}/dashboard/login"))
        .header(ORIGIN, base)
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(format!("key={key}"))
        .send()
        .await?;
    let status = response.status().as_u16();
    let cookie = response
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(|value| value.split(';').next()?.strip_prefix("mv_session="))
        .map(|session| format!("mv_session={session}"));
    cookie.ok_or_else(|| BenchError::Status {
        what: "dashboard sign-in (no mv_session cookie)".to_owned(),
        status,
        body: String::new(),
    })
}

/// A common word of the corpus, at least six letters, for the searches.
fn search_word(corpus: &Corpus) -> String {
    let mut counts = std::collections::HashMap::new();
    for index in 0..corpus.len().min(5_000) {
        for word in corpus.text(index).split_whitespace() {
            let word = word
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            if word.len() >= 6 && word.chars().all(|c| c.is_ascii_alphabetic()) {
                *counts.entry(word).or_insert(0_usize) += 1;
            }
        }
    }
    counts
        .into_iter()
        .max_by(|(a, x), (b, y)| x.cmp(y).then(b.cmp(a)))
        .map_or_else(|| "water".to_owned(), |(word, _)| word)
}
