//! `memvault bench --files`: file ingestion, measured from outside. A real server process
//! (with its `ingest-worker` children) is fed files over `drop`:
//! - a folder of mixed documents (the real files of `--files-dir`, each binary one once
//!   per collection, each text one several times with a unique line appended), dropped
//!   synchronously and asynchronously into `--collections` collections per round: files
//!   and MB per second until the last marker is found by a text search;
//! - OCR seconds per page (`google-doc-document-page1.png`) and transcription seconds per
//!   audio minute (`jfk.wav`, and the same speech repeated to about a minute, written at
//!   run time), each run into a fresh collection so nothing is a duplicate;
//! - the server's RSS (VmRSS, VmHWM) and the peak RSS of the worker processes, sampled
//!   from `/proc` every 50 ms while each phase runs;
//! - pathological files made at run time, each dropped alone: zip bombs (DOCX, XLSX), a
//!   10 MB single-line text, a PDF of 5,000 blank pages, a 20000×20000 PNG header.
//!
//! Numbers are printed, never asserted. A warm-up drop of every kind runs first so the
//! engines (pdfium, Tesseract, Moonshine) are located, fetched or loaded before timing.

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::process::{proc_status_bytes, ServerProcess};
use super::{format_bytes, format_duration, BenchArgs, BenchError, Report};

/// Makes one pathological file at run time.
type MakeUpload = Box<dyn Fn() -> Result<Upload, BenchError>>;

/// Binary documents, each dropped once per collection.
const BINARY: [&str; 9] = [
    "minimal-document.pdf",
    "libre-office-writer.pdf",
    "pdflatex-4-pages.pdf",
    "google-doc-document.pdf",
    "par-known-paragraphs.docx",
    "blk-paras-and-tables.docx",
    "test-slides.pptx",
    "any-sheets.xlsx",
    "libre-office-writer.odt",
];
/// Text documents, each dropped `TEXT_COPIES` times per collection with a unique edit.
const TEXT: [&str; 5] = [
    "aldermoor-field-notes.md",
    "skerryvane-lighthouse.html",
    "pigments.csv",
    "ferry-timetable.json",
    "hare-and-tortoise.eml",
];
const TEXT_COPIES: usize = 3;
const OCR_IMAGE: &str = "google-doc-document-page1.png";
const AUDIO: &str = "jfk.wav";
const SAMPLE_EVERY: Duration = Duration::from_millis(50);
const POLL: Duration = Duration::from_millis(50);

/// One file of a drop.
#[derive(Clone)]
struct Upload {
    name: String,
    bytes: Vec<u8>,
}

pub async fn run(args: &BenchArgs) -> Result<(), BenchError> {
    let dir = &args.files_dir;
    let read = |name: &str| -> Result<Upload, BenchError> {
        let bytes = std::fs::read(dir.join(name))
            .map_err(|error| BenchError::Setup(format!("{}: {error}", dir.join(name).display())))?;
        Ok(Upload {
            name: name.to_owned(),
            bytes,
        })
    };
    let binaries = BINARY
        .iter()
        .map(|name| read(name))
        .collect::<Result<Vec<_>, _>>()?;
    let texts = TEXT
        .iter()
        .map(|name| read(name))
        .collect::<Result<Vec<_>, _>>()?;
    let image = read(OCR_IMAGE)?;
    let audio = read(AUDIO)?;

    let data = tempfile::Builder::new()
        .prefix("memvault-bench-files-")
        .tempdir()
        .map_err(|error| BenchError::Setup(format!("temp dir: {error}")))?;
    let key = format!("mv_bench_{}", uuid::Uuid::new_v4().simple());
    let mut report = Report::default();
    eprintln!(
        "bench: files from {}, {} round(s) of {} collection(s), data in {}",
        dir.display(),
        args.rounds,
        args.collections,
        data.path().display()
    );
    report.line("machine", machine());
    let mut server = ServerProcess::start(data.path(), &key).await?;
    let pid = server
        .pid()
        .ok_or_else(|| BenchError::Setup("the server has no pid".to_owned()))?;
    report.line("start-up to healthy", format_duration(server.startup));
    tokio::time::sleep(Duration::from_secs(1)).await;
    report.line("server RSS idle", format_bytes(server.rss_bytes()));
    let bench = Bench {
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(30 * 60))
            .build()?,
        base: server.base_url.clone(),
        key: key.clone(),
    };

    // Warm-up: every kind once, so engines are found (or fetched) and loaded.
    let mut warm = vec![image.clone(), audio.clone()];
    warm.extend(folder(&binaries, &texts, "warm-up", 1));
    let sampler = Sampler::start(pid);
    let started = Instant::now();
    let results = bench.drop_sync("bench-warm-up", &warm).await?;
    let peaks = sampler.stop();
    report.line(
        &format!("warm-up drop, every kind once ({} files)", warm.len()),
        format!(
            "{} ({}); {}",
            format_duration(started.elapsed()),
            outcome_summary(&results),
            peaks.describe(pid)
        ),
    );

    // 1. The mixed folder, synchronously and asynchronously.
    for round in 1..=args.rounds {
        for asynchronous in [false, true] {
            let mode = if asynchronous { "async" } else { "sync" };
            let folders: Vec<(String, Vec<Upload>, String)> = (0..args.collections)
                .map(|index| {
                    let marker = format!("zqmark{}", uuid::Uuid::new_v4().simple());
                    let files = folder(&binaries, &texts, &marker, TEXT_COPIES);
                    (format!("bench-{mode}-r{round}-c{index}"), files, marker)
                })
                .collect();
            let count: usize = folders.iter().map(|(_, files, _)| files.len()).sum();
            let bytes: usize = folders
                .iter()
                .flat_map(|(_, files, _)| files.iter().map(|file| file.bytes.len()))
                .sum();
            let sampler = Sampler::start(pid);
            let started = Instant::now();
            let mut failures = Vec::new();
            let mut accepted = Duration::ZERO;
            if asynchronous {
                let mut batches = Vec::new();
                for (collection, files, _) in &folders {
                    batches.push(bench.drop_async(collection, files).await?);
                }
                accepted = started.elapsed();
                for batch in batches {
                    let finished = bench.wait_batch(&batch).await?;
                    failures.extend(batch_failures(&finished));
                }
            } else {
                for (collection, files, _) in &folders {
                    let results = bench.drop_sync(collection, files).await?;
                    failures.extend(result_failures(&results));
                }
            }
            let complete = started.elapsed();
            let (collection, _, marker) = &folders[folders.len() - 1];
            let found = bench.until_found(collection, marker).await?;
            let elapsed = started.elapsed();
            let peaks = sampler.stop();
            let seconds = elapsed.as_secs_f64();
            let mut value = format!(
                "{:.1} files/s, {:.2} MB/s ({count} files, {:.2} MB in {}; {} until {}, \
                 +{} until the last marker is found{})",
                count as f64 / seconds,
                bytes as f64 / 1e6 / seconds,
                bytes as f64 / 1e6,
                format_duration(elapsed),
                format_duration(complete),
                if asynchronous {
                    "every batch complete"
                } else {
                    "the last 201"
                },
                format_duration(elapsed - complete),
                if found { "" } else { ", NOT FOUND" },
            );
            if asynchronous {
                value.push_str(&format!(
                    "; all {} drops accepted in {}",
                    folders.len(),
                    format_duration(accepted)
                ));
            }
            value.push_str(&format!("; {}", peaks.describe(pid)));
            if !failures.is_empty() {
                value.push_str(&format!("; FAILED: {}", failures.join("; ")));
            }
            report.line(
                &format!(
                    "mixed folder {mode}, round {round} ({} collections)",
                    args.collections
                ),
                value,
            );
        }
    }

    // 2. OCR and transcription, each run into a fresh collection.
    let minute = repeated_wav(&audio.bytes, 60.0)?;
    let cases = [
        (
            "OCR, 1 page (google-doc-document-page1.png)",
            image.clone(),
            1.0,
            "page",
        ),
        (
            "transcription, jfk.wav (11 s)",
            audio.clone(),
            wav_seconds(&audio.bytes)? / 60.0,
            "audio minute",
        ),
        (
            "transcription, jfk.wav repeated (written at run time)",
            Upload {
                name: "jfk-minute.wav".to_owned(),
                bytes: minute.clone(),
            },
            wav_seconds(&minute)? / 60.0,
            "audio minute",
        ),
    ];
    for (name, upload, units, unit) in cases {
        for run in 1..=args.rounds.max(2) + 1 {
            let collection = format!("bench-engine-{}", uuid::Uuid::new_v4().simple());
            let sampler = Sampler::start(pid);
            let started = Instant::now();
            let results = bench
                .drop_sync(&collection, std::slice::from_ref(&upload))
                .await?;
            let elapsed = started.elapsed();
            let peaks = sampler.stop();
            report.line(
                &format!("{name}, run {run}"),
                format!(
                    "{:.2} s per {unit} ({} for {:.2} {unit}s; {}); {}",
                    elapsed.as_secs_f64() / units,
                    format_duration(elapsed),
                    units,
                    outcome_summary(&results),
                    peaks.describe(pid)
                ),
            );
        }
    }

    // 4. Pathological files, each alone.
    let pathological: Vec<(&str, MakeUpload)> = vec![
        (
            "zip bomb DOCX (word/document.xml: 1 GiB of zeros)",
            Box::new(|| zip_bomb("bomb.docx", "word/document.xml", WORD_TYPES)),
        ),
        (
            "zip bomb XLSX (xl/worksheets/sheet1.xml: 1 GiB of zeros)",
            Box::new(|| zip_bomb("bomb.xlsx", "xl/worksheets/sheet1.xml", SHEET_TYPES)),
        ),
        (
            "10 MB single-line text",
            Box::new(|| Ok(one_line_text(10_000_000))),
        ),
        (
            "PDF of 5,000 blank pages",
            Box::new(|| Ok(blank_pdf(5_000))),
        ),
        (
            "20000x20000 PNG header (pixel bomb)",
            Box::new(|| Ok(pixel_bomb(20_000, 20_000))),
        ),
    ];
    for (name, make) in pathological {
        let made = Instant::now();
        let upload = make()?;
        let making = made.elapsed();
        let collection = format!("bench-bad-{}", uuid::Uuid::new_v4().simple());
        let sampler = Sampler::start(pid);
        let started = Instant::now();
        let (status, body) = bench
            .drop_raw(&collection, std::slice::from_ref(&upload), false)
            .await?;
        let elapsed = started.elapsed();
        let peaks = sampler.stop();
        let what = match serde_json::from_str::<Value>(&body) {
            Ok(answer) if answer["results"].is_array() => answer["results"]
                .as_array()
                .map(|results| results.iter().map(describe_result).collect::<Vec<_>>())
                .unwrap_or_default()
                .join("; "),
            _ => clip(&body, 200),
        };
        report.line(
            &format!(
                "{name} [{}, made in {}]",
                format_bytes(upload.bytes.len() as u64),
                format_duration(making)
            ),
            format!(
                "HTTP {status} in {}: {what}; {}",
                format_duration(elapsed),
                peaks.describe(pid)
            ),
        );
    }
    let alive = bench.healthy().await;
    report.line(
        "server after the pathological files",
        format!(
            "{}; RSS {}, VmHWM {}",
            if alive { "healthy" } else { "NOT HEALTHY" },
            format_bytes(proc_status_bytes(&pid.to_string(), "VmRSS:")),
            format_bytes(proc_status_bytes(&pid.to_string(), "VmHWM:"))
        ),
    );
    server.stop().await?;
    if args.keep_data {
        let kept = data.keep();
        eprintln!("bench: data kept in {} (admin key {key})", kept.display());
    }
    report.print();
    Ok(())
}

/// The connection to the server under test.
struct Bench {
    client: reqwest::Client,
    base: String,
    key: String,
}

impl Bench {
    /// A drop, answered with its status and body whatever they are.
    async fn drop_raw(
        &self,
        collection: &str,
        files: &[Upload],
        asynchronous: bool,
    ) -> Result<(u16, String), BenchError> {
        let boundary = format!("memvault-bench-{}", uuid::Uuid::new_v4().simple());
        let body = multipart(&boundary, files, asynchronous);
        let response = self
            .client
            .post(format!(
                "{}/v1/memory/collections/{collection}/drop",
                self.base
            ))
            .bearer_auth(&self.key)
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body)
            .send()
            .await?;
        let status = response.status().as_u16();
        Ok((status, response.text().await.unwrap_or_default()))
    }

    /// A synchronous drop: its per-file results.
    async fn drop_sync(&self, collection: &str, files: &[Upload]) -> Result<Value, BenchError> {
        let (status, body) = self.drop_raw(collection, files, false).await?;
        if status != 201 {
            return Err(BenchError::Status {
                what: format!("drop into {collection}"),
                status,
                body,
            });
        }
        serde_json::from_str(&body).map_err(|error| BenchError::Setup(format!("drop: {error}")))
    }

    /// An asynchronous drop: its batch id.
    async fn drop_async(&self, collection: &str, files: &[Upload]) -> Result<String, BenchError> {
        let (status, body) = self.drop_raw(collection, files, true).await?;
        if status != 202 {
            return Err(BenchError::Status {
                what: format!("async drop into {collection}"),
                status,
                body,
            });
        }
        let answer: Value = serde_json::from_str(&body)
            .map_err(|error| BenchError::Setup(format!("async drop: {error}")))?;
        answer["batch_id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| BenchError::Setup(format!("no batch_id in {body}")))
    }

    /// Polls a batch until it is complete.
    async fn wait_batch(&self, batch: &str) -> Result<Value, BenchError> {
        loop {
            let response = self
                .client
                .get(format!("{}/v1/memory/ingest/batch/{batch}", self.base))
                .bearer_auth(&self.key)
                .send()
                .await?;
            let status = response.status().as_u16();
            if status != 200 {
                return Err(BenchError::Status {
                    what: format!("batch {batch}"),
                    status,
                    body: response.text().await.unwrap_or_default(),
                });
            }
            let answer: Value = response.json().await?;
            if answer["complete"].as_bool() == Some(true) {
                return Ok(answer);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Text-searches `marker` in `collection` until it is found (true) or 30 s pass.
    async fn until_found(&self, collection: &str, marker: &str) -> Result<bool, BenchError> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let response = self
                .client
                .post(format!(
                    "{}/v1/memory/collections/{collection}/search",
                    self.base
                ))
                .bearer_auth(&self.key)
                .json(&json!({"query": marker, "mode": "text", "limit": 5}))
                .send()
                .await?;
            if response.status().as_u16() == 200 {
                let answer: Value = response.json().await?;
                let hits = answer["results"].as_array().map_or(0, Vec::len);
                if hits > 0 {
                    return Ok(true);
                }
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(false)
    }

    async fn healthy(&self) -> bool {
        self.client
            .get(format!("{}/v1/memory/health", self.base))
            .send()
            .await
            .is_ok_and(|response| response.status().is_success())
    }
}

/// One collection's folder: every binary document once, every text one `copies` times,
/// each copy with a unique line naming `marker`.
fn folder(binaries: &[Upload], texts: &[Upload], marker: &str, copies: usize) -> Vec<Upload> {
    let mut files = binaries.to_vec();
    for copy in 0..copies {
        for text in texts {
            let line = format!("{marker} copy {copy} {}", uuid::Uuid::new_v4().simple());
            files.push(Upload {
                name: format!("{copy}-{}", text.name),
                bytes: edited(&text.name, &text.bytes, &line),
            });
        }
    }
    files
}

/// `bytes` with `line` added the way the format allows: a field of a JSON object, a
/// paragraph of HTML, a row of CSV, a line of anything else.
fn edited(name: &str, bytes: &[u8], line: &str) -> Vec<u8> {
    if name.ends_with(".json") {
        if let Ok(Value::Object(mut object)) = serde_json::from_slice::<Value>(bytes) {
            object.insert("bench_note".to_owned(), Value::String(line.to_owned()));
            return serde_json::to_vec_pretty(&Value::Object(object)).unwrap_or_default();
        }
    }
    let text = String::from_utf8_lossy(bytes);
    if name.ends_with(".html") {
        if let Some(at) = text.rfind("</body>") {
            return format!("{}<p>{line}</p>\n{}", &text[..at], &text[at..]).into_bytes();
        }
    }
    if name.ends_with(".eml") {
        // In the first text part's body would need MIME surgery; a header is unique too.
        return format!("X-Bench-Note: {line}\r\n{text}").into_bytes();
    }
    let mut out = bytes.to_vec();
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    if name.ends_with(".csv") {
        let columns = text
            .lines()
            .next()
            .map_or(1, |header| header.split(',').count());
        out.extend_from_slice(line.as_bytes());
        out.extend(std::iter::repeat_n(b',', columns.saturating_sub(1)));
    } else {
        out.extend_from_slice(line.as_bytes());
    }
    out.push(b'\n');
    out
}

/// A `multipart/form-data` body: each file a part named `files`, then `async_ingest`.
fn multipart(boundary: &str, files: &[Upload], asynchronous: bool) -> Vec<u8> {
    let mut body = Vec::new();
    for file in files {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; \
                 filename=\"{}\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                file.name
            )
            .as_bytes(),
        );
        body.extend_from_slice(&file.bytes);
        body.extend_from_slice(b"\r\n");
    }
    if asynchronous {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"async_ingest\"\r\n\r\n\
                 true\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

fn outcome_summary(answer: &Value) -> String {
    let failures = result_failures(answer);
    let mut summary = format!(
        "{} done, {} failed",
        answer["done"].as_u64().unwrap_or(0),
        answer["failed"].as_u64().unwrap_or(0)
    );
    if let Some(results) = answer["results"].as_array() {
        let memories: usize = results
            .iter()
            .map(|result| result["memory_ids"].as_array().map_or(0, Vec::len))
            .sum();
        summary.push_str(&format!(", {memories} memories"));
        let details: Vec<String> = results
            .iter()
            .filter(|result| result["status"] != "failed" && result["detail"].is_string())
            .map(|result| {
                format!(
                    "{}: {}",
                    result["filename"].as_str().unwrap_or("?"),
                    clip(result["detail"].as_str().unwrap_or_default(), 120)
                )
            })
            .collect();
        if !details.is_empty() {
            summary.push_str(&format!("; notes: {}", details.join("; ")));
        }
    }
    if !failures.is_empty() {
        summary.push_str(&format!("; FAILED: {}", failures.join("; ")));
    }
    summary
}

fn result_failures(answer: &Value) -> Vec<String> {
    answer["results"]
        .as_array()
        .map(|results| {
            results
                .iter()
                .filter(|result| result["status"] != "done")
                .map(describe_result)
                .collect()
        })
        .unwrap_or_default()
}

fn describe_result(result: &Value) -> String {
    let mut text = format!(
        "{} {} (kind {}, {} memories",
        result["filename"].as_str().unwrap_or("?"),
        result["status"].as_str().unwrap_or("?"),
        result["kind"].as_str().unwrap_or("-"),
        result["memory_ids"].as_array().map_or(0, Vec::len)
    );
    if let Some(code) = result["code"].as_str() {
        text.push_str(&format!(", code {code}"));
    }
    if let Some(detail) = result["detail"].as_str() {
        text.push_str(&format!(", {}", clip(detail, 200)));
    }
    text.push(')');
    text
}

fn batch_failures(batch: &Value) -> Vec<String> {
    batch["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|item| item["state"] != "done")
                .map(|item| {
                    format!(
                        "{} {} ({})",
                        item["filename"].as_str().unwrap_or("?"),
                        item["state"].as_str().unwrap_or("?"),
                        clip(item["reason"].as_str().unwrap_or_default(), 200)
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn clip(text: &str, chars: usize) -> String {
    let text = text.replace('\n', " ");
    if text.chars().count() <= chars {
        return text;
    }
    format!("{}…", text.chars().take(chars).collect::<String>())
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!("{cores} cores, load average {} at start", load.join(" "))
}

// --- Memory of the server and its workers, sampled from /proc.

/// Peaks seen while one phase ran.
#[derive(Default)]
struct Peaks {
    server_rss: u64,
    /// The largest RSS of one `ingest-worker` process.
    worker_rss: u64,
    /// The largest VmHWM of one `ingest-worker` process (as last sampled).
    worker_hwm: u64,
    /// The largest sum of the RSS of every descendant (workers and their tools).
    descendants_rss: u64,
    workers_seen: usize,
    samples: usize,
}

impl Peaks {
    fn describe(&self, pid: u32) -> String {
        format!(
            "server RSS peak {} (VmHWM {}), worker RSS peak {} (VmHWM {}; {} worker(s) \
             seen), children sum peak {}, {} samples",
            format_bytes(self.server_rss),
            format_bytes(proc_status_bytes(&pid.to_string(), "VmHWM:")),
            format_bytes(self.worker_rss),
            format_bytes(self.worker_hwm),
            self.workers_seen,
            format_bytes(self.descendants_rss),
            self.samples
        )
    }
}

/// A thread sampling `/proc` every 50 ms until stopped.
struct Sampler {
    running: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Peaks>,
}

impl Sampler {
    fn start(pid: u32) -> Self {
        let running = Arc::new(AtomicBool::new(true));
        let flag = running.clone();
        let thread = std::thread::spawn(move || {
            let mut peaks = Peaks::default();
            let mut workers = HashSet::new();
            loop {
                sample(pid, &mut peaks, &mut workers);
                if !flag.load(Ordering::SeqCst) {
                    break;
                }
                std::thread::sleep(SAMPLE_EVERY);
            }
            peaks.workers_seen = workers.len();
            peaks
        });
        Self { running, thread }
    }

    fn stop(self) -> Peaks {
        self.running.store(false, Ordering::SeqCst);
        self.thread.join().unwrap_or_default()
    }
}

fn sample(server: u32, peaks: &mut Peaks, workers: &mut HashSet<u32>) {
    peaks.samples += 1;
    peaks.server_rss = peaks
        .server_rss
        .max(proc_status_bytes(&server.to_string(), "VmRSS:"));
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    let mut parents: HashMap<u32, u32> = HashMap::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let ppid = stat
            .rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parents.insert(pid, ppid);
        }
    }
    let descends = |mut pid: u32| {
        for _ in 0..64 {
            match parents.get(&pid) {
                Some(&parent) if parent == server => return true,
                Some(&parent) if parent > 1 => pid = parent,
                _ => return false,
            }
        }
        false
    };
    // A child forked but not yet exec'd still has the server's command line and counts
    // the pages it shares with the server as its own: it is not counted.
    let own = std::fs::read(format!("/proc/{server}/cmdline")).unwrap_or_default();
    let mut total = 0;
    for &pid in parents.keys() {
        if pid == server || !descends(pid) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if cmdline == own {
            continue;
        }
        let rss = proc_status_bytes(&pid.to_string(), "VmRSS:");
        total += rss;
        if String::from_utf8_lossy(&cmdline).contains("ingest-worker") {
            workers.insert(pid);
            peaks.worker_rss = peaks.worker_rss.max(rss);
            peaks.worker_hwm = peaks
                .worker_hwm
                .max(proc_status_bytes(&pid.to_string(), "VmHWM:"));
        }
    }
    peaks.descendants_rss = peaks.descendants_rss.max(total);
}

// --- Inputs made at run time.

const WORD_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;
const SHEET_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>"#;

/// An OOXML package whose `bomb` entry is 1 GiB of zeros, deflated (about 1 MB).
fn zip_bomb(name: &str, bomb: &str, types: &str) -> Result<Upload, BenchError> {
    use zip::write::SimpleFileOptions;
    let fail = |error: &dyn std::fmt::Display| BenchError::Setup(format!("zip bomb: {error}"));
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    writer
        .start_file("[Content_Types].xml", options)
        .map_err(|e| fail(&e))?;
    writer.write_all(types.as_bytes()).map_err(|e| fail(&e))?;
    writer
        .start_file("_rels/.rels", options)
        .map_err(|e| fail(&e))?;
    let main = if bomb.starts_with("word/") {
        "word/document.xml"
    } else {
        "xl/workbook.xml"
    };
    writer
        .write_all(
            format!(
                r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="{main}"/></Relationships>"#
            )
            .as_bytes(),
        )
        .map_err(|e| fail(&e))?;
    if main != bomb {
        writer.start_file(main, options).map_err(|e| fail(&e))?;
        writer
            .write_all(
                br#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>"#,
            )
            .map_err(|e| fail(&e))?;
        writer
            .start_file("xl/_rels/workbook.xml.rels", options)
            .map_err(|e| fail(&e))?;
        writer
            .write_all(
                br#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#,
            )
            .map_err(|e| fail(&e))?;
    }
    writer.start_file(bomb, options).map_err(|e| fail(&e))?;
    let zeros = vec![0_u8; 1 << 20];
    for _ in 0..1024 {
        writer.write_all(&zeros).map_err(|e| fail(&e))?;
    }
    let bytes = writer.finish().map_err(|e| fail(&e))?.into_inner();
    Ok(Upload {
        name: name.to_owned(),
        bytes,
    })
}

/// `bytes` of words separated by spaces, no line break.
fn one_line_text(bytes: usize) -> Upload {
    const WORDS: [&str; 16] = [
        "harbour", "lantern", "granite", "ferry", "pigment", "tortoise", "meadow", "signal",
        "copper", "willow", "tide", "beacon", "orchard", "cobalt", "sparrow", "quarry",
    ];
    let mut text = String::with_capacity(bytes + 16);
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    while text.len() < bytes {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        text.push_str(WORDS[(state % 16) as usize]);
        text.push(' ');
    }
    text.truncate(bytes);
    Upload {
        name: "one-line.txt".to_owned(),
        bytes: text.into_bytes(),
    }
}

/// A PDF whose Pages node has `pages` empty Page objects, with a correct xref table.
fn blank_pdf(pages: usize) -> Upload {
    let mut out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::with_capacity(pages + 2);
    let mut object = |out: &mut Vec<u8>, text: String| {
        offsets.push(out.len());
        out.extend_from_slice(text.as_bytes());
    };
    object(
        &mut out,
        "1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n".to_owned(),
    );
    let kids: Vec<String> = (0..pages).map(|page| format!("{} 0 R", page + 3)).collect();
    object(
        &mut out,
        format!(
            "2 0 obj\n<< /Type /Pages /Kids [{}] /Count {pages} >>\nendobj\n",
            kids.join(" ")
        ),
    );
    for page in 0..pages {
        object(
            &mut out,
            format!(
                "{} 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
                 /Resources << >> >>\nendobj\n",
                page + 3
            ),
        );
    }
    let xref = out.len();
    let size = pages + 3;
    out.extend_from_slice(format!("xref\n0 {size}\n0000000000 65535 f \n").as_bytes());
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes(),
    );
    Upload {
        name: "blank-5000-pages.pdf".to_owned(),
        bytes: out,
    }
}

/// A PNG whose header declares `width` × `height` 8-bit grey pixels, with a token IDAT.
fn pixel_bomb(width: u32, height: u32) -> Upload {
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut crc_input = kind.to_vec();
        crc_input.extend_from_slice(data);
        out.extend_from_slice(&crc_input);
        out.extend_from_slice(&crc32(&crc_input).to_be_bytes());
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut header = Vec::new();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 0, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &header);
    // A zlib stream of one empty stored block: the data ends long before the image does.
    chunk(
        &mut out,
        b"IDAT",
        &[0x78, 0x01, 0x01, 0x00, 0x00, 0xff, 0xff, 0, 0, 0, 1],
    );
    chunk(&mut out, b"IEND", &[]);
    Upload {
        name: "pixel-bomb.png".to_owned(),
        bytes: out,
    }
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffff_u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A WAV's `fmt ` fields and where its `data` chunk lies.
struct Wav {
    channels: u16,
    rate: u32,
    bits: u16,
    data: std::ops::Range<usize>,
}

fn parse_wav(bytes: &[u8]) -> Result<Wav, BenchError> {
    let bad = || BenchError::Setup("jfk.wav is not a RIFF/WAVE file".to_owned());
    if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Err(bad());
    }
    let (mut at, mut format, mut data) = (12, None, None);
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]])
            as usize;
        let body = at + 8..(at + 8 + size).min(bytes.len());
        if id == b"fmt " && body.len() >= 16 {
            let field = |offset: usize| &bytes[body.start + offset..];
            format = Some((
                u16::from_le_bytes([field(2)[0], field(2)[1]]),
                u32::from_le_bytes([field(4)[0], field(4)[1], field(4)[2], field(4)[3]]),
                u16::from_le_bytes([field(14)[0], field(14)[1]]),
            ));
        } else if id == b"data" {
            data = Some(body.clone());
        }
        at = body.end + (size & 1);
    }
    let ((channels, rate, bits), data) = format.zip(data).ok_or_else(bad)?;
    Ok(Wav {
        channels,
        rate,
        bits,
        data,
    })
}

fn wav_seconds(bytes: &[u8]) -> Result<f64, BenchError> {
    let wav = parse_wav(bytes)?;
    let frame = f64::from(wav.channels) * f64::from(wav.bits / 8).max(1.0);
    Ok(wav.data.len() as f64 / frame / f64::from(wav.rate.max(1)))
}

/// The speech of `bytes` repeated until it lasts at least `seconds`, as one WAV.
fn repeated_wav(bytes: &[u8], seconds: f64) -> Result<Vec<u8>, BenchError> {
    let wav = parse_wav(bytes)?;
    let once = wav_seconds(bytes)?;
    let times = (seconds / once.max(0.1)).ceil().max(1.0) as usize;
    let samples = &bytes[wav.data.clone()];
    let data_len = samples.len() * times;
    let block = wav.channels * (wav.bits / 8);
    let mut out = Vec::with_capacity(44 + data_len);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&((36 + data_len) as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16_u32.to_le_bytes());
    out.extend_from_slice(&1_u16.to_le_bytes());
    out.extend_from_slice(&wav.channels.to_le_bytes());
    out.extend_from_slice(&wav.rate.to_le_bytes());
    out.extend_from_slice(&(wav.rate * u32::from(block)).to_le_bytes());
    out.extend_from_slice(&block.to_le_bytes());
    out.extend_from_slice(&wav.bits.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(data_len as u32).to_le_bytes());
    for _ in 0..times {
        out.extend_from_slice(samples);
    }
    Ok(out)
}
