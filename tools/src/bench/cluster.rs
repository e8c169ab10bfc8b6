//! `memvault bench --cluster`: the store and several nodes, measured from outside.
//!
//! On the Postgres `--postgres-url` names (`scripts/cluster --nodes 0 -- COMMAND` starts a
//! throwaway one from the OS packages), each measure on a fresh database:
//!
//! 1. sled against Postgres, one node each: single creates, then searches per mode over
//!    `--cluster-memories` memories (the local model);
//! 2. one, two and three nodes: creates and hybrid searches sent to the node serving the
//!    account and to another node (which forwards them), and creates from four clients
//!    over four accounts spread over every node;
//! 3. on the three nodes, `kill -9` of the node serving a busy account: the time until a
//!    write to it is accepted again on another node;
//! 4. the takeover of an account of `--memories` memories (the stand-in embedding endpoint
//!    of `fake_embeddings`, so loading takes minutes, not hours) on two nodes sharing a
//!    blob directory: `kill -9` of its node, then the time until another node accepts a
//!    write and answers a search; first from the index snapshot the killed node kept,
//!    then (the killed node back, the snapshot deleted, the other node killed) without.
//!
//! Numbers are printed, never asserted.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::corpus::Corpus;
use super::process::ServerProcess;
use super::stats::Latencies;
use super::{
    bulk_load, fake_embeddings, format_duration, search_latencies, single_creates, BenchArgs,
    BenchError, Report,
};

const SECRET: &str = "memvault-bench-cluster-secret";
const ENCRYPTION_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
/// Lease time of the nodes under measurement: the default.
const LEASE_TTL_MS: u64 = 10_000;
const NODE_HEADER: &str = "x-memvault-node";

/// The bench's Postgres: where it makes a fresh database for each measure, and drops
/// them at the end.
struct Databases {
    /// `--postgres-url`: a server where the role may `CREATE DATABASE`.
    url: String,
    made: Vec<String>,
}

impl Databases {
    async fn connect(&self) -> Result<tokio_postgres::Client, BenchError> {
        let (client, connection) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
            .await
            .map_err(|error| BenchError::Setup(format!("Postgres at --postgres-url: {error}")))?;
        tokio::spawn(connection);
        Ok(client)
    }

    /// A new, empty database; its connection string.
    async fn fresh(&mut self) -> Result<String, BenchError> {
        let name = format!("memvault_bench_{}", uuid::Uuid::new_v4().simple());
        self.connect()
            .await?
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .map_err(|error| BenchError::Setup(format!("CREATE DATABASE {name}: {error}")))?;
        self.made.push(name.clone());
        Ok(with_database(&self.url, &name))
    }

    /// Drops the databases made (best effort: the nodes using them are stopped first).
    async fn drop_all(&self) {
        let Ok(client) = self.connect().await else {
            return;
        };
        for name in &self.made {
            let _ = client
                .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .await;
        }
    }
}

/// `url` (a `postgres://` URL or `key=value` string) naming `database` instead of its own.
fn with_database(url: &str, database: &str) -> String {
    for scheme in ["postgresql://", "postgres://"] {
        if let Some(rest) = url.strip_prefix(scheme) {
            let (main, query) = rest
                .split_once('?')
                .map_or((rest, None), |(main, query)| (main, Some(query)));
            let authority = main
                .split_once('/')
                .map_or(main, |(authority, _)| authority);
            return match query {
                Some(query) => format!("{scheme}{authority}/{database}?{query}"),
                None => format!("{scheme}{authority}/{database}"),
            };
        }
    }
    // key=value: a later key wins.
    format!("{url} dbname={database}")
}

fn free_port() -> Result<u16, BenchError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|error| BenchError::Setup(format!("a free port: {error}")))
}

/// One node of a cluster under measurement.
struct Node {
    server: ServerProcess,
    id: String,
    port: u16,
    data: tempfile::TempDir,
}

async fn start_nodes(
    count: usize,
    database: &str,
    key: &str,
    extra: &[(String, String)],
) -> Result<Vec<Node>, BenchError> {
    let mut nodes = Vec::new();
    for index in 0..count {
        let data = tempfile::Builder::new()
            .prefix("memvault-bench-node-")
            .tempdir()
            .map_err(|error| BenchError::Setup(format!("temp dir: {error}")))?;
        let port = free_port()?;
        let (server, id) = start_node(index, port, data.path(), database, key, extra).await?;
        nodes.push(Node {
            server,
            id,
            port,
            data,
        });
    }
    Ok(nodes)
}

/// Starts node `index` (or starts it again, on the same port and data directory); the
/// process and its node id.
async fn start_node(
    index: usize,
    port: u16,
    data: &std::path::Path,
    database: &str,
    key: &str,
    extra: &[(String, String)],
) -> Result<(ServerProcess, String), BenchError> {
    let mut environment: Vec<(String, String)> = vec![
        ("MEMVAULT__STORE__BACKEND".into(), "postgres".into()),
        ("MEMVAULT__STORE__URL".into(), database.to_owned()),
        (
            "MEMVAULT__CLUSTER__ADVERTISE_URL".into(),
            format!("http://127.0.0.1:{port}"),
        ),
        ("MEMVAULT__CLUSTER__SECRET".into(), SECRET.into()),
        ("MEMVAULT__CLUSTER__NODE_NAME".into(), format!("n{index}")),
        (
            "MEMVAULT__CLUSTER__LEASE_TTL_MS".into(),
            LEASE_TTL_MS.to_string(),
        ),
        (
            "MEMVAULT__SECURITY__ENCRYPTION_KEY".into(),
            ENCRYPTION_KEY.into(),
        ),
    ];
    environment.extend(extra.iter().cloned());
    let server =
        ServerProcess::start_at(data, key, &format!("127.0.0.1:{port}"), &environment).await?;
    let status: Value = reqwest::get(format!("{}/v1/status", server.base_url))
        .await?
        .json()
        .await?;
    let id = status["cluster"]["node"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok((server, id))
}

async fn new_account(
    client: &reqwest::Client,
    base: &str,
    admin: &str,
    name: &str,
) -> Result<String, BenchError> {
    let response = client
        .post(format!("{base}/v1/memory/admin/tenants"))
        .bearer_auth(admin)
        // `pro`: the free tier's 100,000 memories would stop the large account's writes.
        .json(&json!({"name": name, "email": format!("{name}@example.com"), "tier": "pro"}))
        .send()
        .await?;
    let status = response.status().as_u16();
    let body: Value = response.json().await?;
    if status != 201 {
        return Err(BenchError::Status {
            what: "create an account".into(),
            status,
            body: body.to_string(),
        });
    }
    Ok(body["api_key"].as_str().unwrap_or_default().to_owned())
}

/// The index of the node serving `key`'s account (the first request places it).
async fn owner_of(
    client: &reqwest::Client,
    nodes: &[Node],
    key: &str,
) -> Result<usize, BenchError> {
    let response = client
        .get(format!("{}/v1/memory/admin/me", nodes[0].server.base_url))
        .bearer_auth(key)
        .send()
        .await?;
    let owner = response
        .headers()
        .get(NODE_HEADER)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    Ok(nodes.iter().position(|node| node.id == owner).unwrap_or(0))
}

pub async fn run(args: &BenchArgs, corpus: &Corpus) -> Result<(), BenchError> {
    let Some(url) = args.postgres_url.clone() else {
        return Err(BenchError::Setup(
            "--cluster needs --postgres-url (or MEMVAULT_PG_URL): a Postgres where the role \
             may CREATE DATABASE; `scripts/cluster --nodes 0 -- COMMAND` starts a throwaway \
             one and sets MEMVAULT_PG_URL"
                .into(),
        ));
    };
    let mut databases = Databases {
        url,
        made: Vec::new(),
    };
    let outcome = measure(args, corpus, &mut databases).await;
    databases.drop_all().await;
    outcome
}

async fn measure(
    args: &BenchArgs,
    corpus: &Corpus,
    databases: &mut Databases,
) -> Result<(), BenchError> {
    let mut report = Report::default();
    let client = reqwest::Client::new();
    let key = format!("mv_bench_{}", uuid::Uuid::new_v4().simple());
    let preload = args.cluster_memories;

    // 1. sled against Postgres, one node.
    let part = |name: &str| args.cluster_part == "all" || args.cluster_part == name;
    let backends: &[&str] = if part("stores") {
        &["sled", "postgres"]
    } else {
        &[]
    };
    for &backend in backends {
        let data = tempfile::Builder::new()
            .prefix("memvault-bench-store-")
            .tempdir()
            .map_err(|error| BenchError::Setup(format!("temp dir: {error}")))?;
        let mut environment = vec![("MEMVAULT__STORE__BACKEND".to_owned(), backend.to_owned())];
        if backend == "postgres" {
            environment.push(("MEMVAULT__STORE__URL".to_owned(), databases.fresh().await?));
        }
        let mut server = ServerProcess::start_with(data.path(), &key, &environment).await?;
        let base = server.base_url.clone();
        let creates = single_creates(&client, &base, &key, corpus, args.latency_samples).await?;
        report.line(
            &format!("{backend}: create one memory (n={})", args.latency_samples),
            creates.summary(),
        );
        let started = Instant::now();
        bulk_load(&client, &base, &key, corpus, 0..preload, args.concurrency).await?;
        report.line(
            &format!("{backend}: bulk create with embedding"),
            format!(
                "{:.1} memories/s",
                preload as f64 / started.elapsed().as_secs_f64()
            ),
        );
        let queries: Vec<String> = corpus
            .queries(args.search_samples)
            .into_iter()
            .map(|query| format!("{query} {backend}"))
            .collect();
        let mut lines = Report::default();
        search_latencies(&client, &base, &key, &queries, preload, &mut lines).await?;
        for (name, value) in lines.lines {
            report.line(&format!("{backend}: {name}"), value);
        }
        server.stop().await?;
    }

    // 2. One, two and three nodes.
    let mut three = None;
    let counts: &[usize] = if part("nodes") { &[1, 2, 3] } else { &[] };
    for &count in counts {
        let database = databases.fresh().await?;
        let nodes = start_nodes(count, &database, &key, &[]).await?;
        let account = new_account(&client, &nodes[0].server.base_url, &key, "bench-a").await?;
        let owner = owner_of(&client, &nodes, &account).await?;
        let mut targets = vec![("owner-local", owner)];
        if count > 1 {
            targets.push(("forwarded", (owner + 1) % count));
        }
        let samples = args.latency_samples / 2;
        for (label, target) in &targets {
            let base = nodes[*target].server.base_url.clone();
            let creates = single_creates(&client, &base, &account, corpus, samples).await?;
            report.line(
                &format!("{count} node(s), create one memory, {label} (n={samples})"),
                creates.summary(),
            );
        }
        bulk_load(
            &client,
            &nodes[owner].server.base_url,
            &account,
            corpus,
            0..200,
            1,
        )
        .await?;
        for (label, target) in &targets {
            let base = &nodes[*target].server.base_url;
            let queries: Vec<String> = corpus
                .queries(args.search_samples)
                .into_iter()
                .map(|query| format!("{query} {label} {count}"))
                .collect();
            // Each query twice: embedded, then with its embedding cached (the result
            // cache is off), which leaves the search and the hop.
            for pass in ["query embedded", "query embedding cached"] {
                let mut latencies = Latencies::default();
                let mut failed: Vec<String> = Vec::new();
                for query in &queries {
                    let started = Instant::now();
                    let response = client
                        .post(format!("{base}/v1/memory/collections/bench/search"))
                        .bearer_auth(&account)
                        .json(&json!({"query": query, "limit": 10}))
                        .send()
                        .await?;
                    let status = response.status().as_u16();
                    if status == 200 {
                        latencies.record(started.elapsed());
                    } else {
                        failed.push(format!(
                            "{status} {}",
                            response.text().await.unwrap_or_default()
                        ));
                    }
                }
                let failures = match failed.first() {
                    Some(first) => format!("; {} failed, the first: {first}", failed.len()),
                    None => String::new(),
                };
                report.line(
                    &format!(
                        "{count} node(s), hybrid search, {pass}, {label} (n={})",
                        queries.len()
                    ),
                    format!("{}{failures}", latencies.summary()),
                );
            }
        }
        let rate = spread_creates(&client, &nodes, &key, corpus, count).await?;
        report.line(
            &format!("{count} node(s), creates from 4 clients over 4 accounts, every node"),
            format!("{rate:.1} memories/s"),
        );
        if count == 3 {
            three = Some((nodes, account, owner));
        }
    }

    // 3. kill -9 of the node serving a busy account.
    if let Some((mut nodes, account, owner)) = three {
        let resumed = kill_and_resume(&client, &mut nodes, owner, &account, "notes").await?;
        report.line(
            &format!("3 nodes: kill -9 of an account's node to its first accepted write (lease {LEASE_TTL_MS} ms)"),
            format_duration(resumed),
        );
    }

    // 4. The takeover of a large account, from the index snapshot its last node kept in
    // the shared blob store, then without one.
    if !part("takeover") {
        report.print();
        return Ok(());
    }
    let blobs = tempfile::Builder::new()
        .prefix("memvault-bench-blobs-")
        .tempdir()
        .map_err(|error| BenchError::Setup(format!("temp dir: {error}")))?;
    let mut extra = fake_embeddings::server_environment(&fake_embeddings::start().await?);
    extra.push((
        "MEMVAULT__BLOBS__ROOT".into(),
        blobs.path().display().to_string(),
    ));
    let database = databases.fresh().await?;
    let mut nodes = start_nodes(2, &database, &key, &extra).await?;
    let account = new_account(&client, &nodes[0].server.base_url, &key, "bench-large").await?;
    let owner = owner_of(&client, &nodes, &account).await?;
    let started = Instant::now();
    bulk_load(
        &client,
        &nodes[owner].server.base_url,
        &account,
        corpus,
        0..args.memories,
        args.concurrency,
    )
    .await?;
    let loaded = std::time::SystemTime::now();
    report.line(
        &format!(
            "2 nodes: load {} memories (stand-in embedding)",
            args.memories
        ),
        format_duration(started.elapsed()),
    );
    // A snapshot is kept at most once a minute while a collection changes: wait for one
    // taken after the load (there is none when fewer than 1,000 memories came after the
    // one before; the takeover then replays those).
    let snapshot = wait_for_snapshot(blobs.path(), loaded).await;
    report.line(
        "   its index snapshot in the blob store",
        match &snapshot {
            Some((bytes, age)) => format!(
                "{:.1} MB, kept {} after the last write",
                *bytes as f64 / 1e6,
                format_duration(*age)
            ),
            None => "none newer than the load".to_owned(),
        },
    );
    let (resumed, searched) = takeover(&client, &mut nodes, owner, &account, corpus).await?;
    report.line(
        &format!(
            "2 nodes: kill -9 of the node of {} memories to its first accepted write, from the snapshot",
            args.memories
        ),
        format_duration(resumed),
    );
    report.line("   then its first search on the new node", searched);

    // Without a snapshot: the killed node comes back, the snapshot is deleted, and the
    // node that took the account over is killed in turn.
    let (server, id) = start_node(
        owner,
        nodes[owner].port,
        nodes[owner].data.path(),
        &database,
        &key,
        &extra,
    )
    .await?;
    (nodes[owner].server, nodes[owner].id) = (server, id);
    for path in snapshots_in(blobs.path()) {
        std::fs::remove_file(&path)
            .map_err(|error| BenchError::Setup(format!("{}: {error}", path.display())))?;
    }
    let (resumed, searched) = takeover(&client, &mut nodes, 1 - owner, &account, corpus).await?;
    report.line(
        &format!(
            "2 nodes: kill -9 of the node of {} memories to its first accepted write, no snapshot",
            args.memories
        ),
        format_duration(resumed),
    );
    report.line("   then its first search on the new node", searched);
    report.print();
    Ok(())
}

/// The snapshot files in a local blob store's root.
fn snapshots_in(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    fn walk(directory: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(directory).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.ends_with("snapshot") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&root.join("objects"), &mut found);
    found
}

/// Waits (up to 75 s) for an index snapshot written after `since`; its size and how long
/// after `since` it was written.
async fn wait_for_snapshot(
    root: &std::path::Path,
    since: std::time::SystemTime,
) -> Option<(u64, Duration)> {
    let deadline = Instant::now() + Duration::from_secs(75);
    loop {
        for path in snapshots_in(root) {
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if let Ok(age) = meta.modified().ok()?.duration_since(since) {
                return Some((meta.len(), age));
            }
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// `kill -9` of the account's node, the time until another node accepts a write, and how
/// the first search there went.
async fn takeover(
    client: &reqwest::Client,
    nodes: &mut [Node],
    owner: usize,
    account: &str,
    corpus: &Corpus,
) -> Result<(Duration, String), BenchError> {
    let resumed = kill_and_resume(client, nodes, owner, account, "bench").await?;
    let survivor = &nodes[(owner + 1) % nodes.len()].server.base_url;
    let started = Instant::now();
    let response = client
        .post(format!("{survivor}/v1/memory/collections/bench/search"))
        .bearer_auth(account)
        .json(&json!({"query": corpus.queries(1).pop().unwrap_or_default(), "mode": "hybrid", "limit": 10}))
        .send()
        .await?;
    let status = response.status().as_u16();
    let answer: Value = response.json().await.unwrap_or_default();
    let searched = format!(
        "{} ({status}, {} results)",
        format_duration(started.elapsed()),
        answer["results"].as_array().map_or(0, Vec::len)
    );
    Ok((resumed, searched))
}

/// Creates from four clients over four accounts for ten seconds, each request to the
/// next node in turn (a round-robin balancer); memories per second.
async fn spread_creates(
    client: &reqwest::Client,
    nodes: &[Node],
    admin: &str,
    corpus: &Corpus,
    count: usize,
) -> Result<f64, BenchError> {
    let mut accounts = Vec::new();
    for index in 0..4 {
        accounts.push(
            new_account(
                client,
                &nodes[index % count].server.base_url,
                admin,
                &format!("spread-{count}-{index}"),
            )
            .await?,
        );
    }
    let bases: Arc<Vec<String>> = Arc::new(
        nodes
            .iter()
            .map(|node| node.server.base_url.clone())
            .collect(),
    );
    let done = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = accounts
        .into_iter()
        .enumerate()
        .map(|(worker, account)| {
            let (client, bases, done, stop) =
                (client.clone(), bases.clone(), done.clone(), stop.clone());
            let corpus = corpus.clone();
            tokio::spawn(async move {
                let mut turn = worker;
                while !stop.load(Ordering::Relaxed) {
                    let base = &bases[turn % bases.len()];
                    turn += 1;
                    let response = client
                        .post(format!("{base}/v1/memory/collections/spread/memories"))
                        .bearer_auth(&account)
                        .json(&json!({"text": corpus.text(turn * 7 + worker)}))
                        .send()
                        .await;
                    if response.is_ok_and(|response| response.status().as_u16() == 201) {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(10)).await;
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        let _ = worker.await;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

/// Kills the account's node with SIGKILL, then writes to `collection` through the other
/// nodes in turn until one is accepted; the time from the kill.
async fn kill_and_resume(
    client: &reqwest::Client,
    nodes: &mut [Node],
    owner: usize,
    account: &str,
    collection: &str,
) -> Result<Duration, BenchError> {
    nodes[owner].server.kill_hard().await?;
    let killed = Instant::now();
    let survivors: Vec<String> = nodes
        .iter()
        .enumerate()
        .filter(|(index, _)| *index != owner)
        .map(|(_, node)| node.server.base_url.clone())
        .collect();
    let mut attempt = 0;
    let mut refusals: Vec<String> = Vec::new();
    loop {
        let base = &survivors[attempt % survivors.len()];
        attempt += 1;
        let response = client
            .post(format!(
                "{base}/v1/memory/collections/{collection}/memories"
            ))
            .bearer_auth(account)
            .json(&json!({"text": format!("written after the kill, attempt {attempt}")}))
            .timeout(Duration::from_secs(120))
            .send()
            .await;
        let refusal = match response {
            Ok(response) if response.status().as_u16() == 201 => return Ok(killed.elapsed()),
            Ok(response) => {
                let status = response.status().as_u16();
                let body = response.text().await.unwrap_or_default();
                format!("{status} {body}")
            }
            Err(error) => error.to_string(),
        };
        if refusals.last() != Some(&refusal) {
            eprintln!(
                "bench: {:.1} s after the kill: {refusal}",
                killed.elapsed().as_secs_f64()
            );
            refusals.push(refusal);
        }
        if killed.elapsed() > Duration::from_secs(600) {
            return Err(BenchError::Setup(format!(
                "no write was accepted within 10 minutes of the kill: {refusals:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
