//! BM25 latency at scale, without the service around it: builds (or reopens) a text index
//! of N memory-like sentences (copies marked with their number, as `memvault bench` makes
//! them) and times queries of the benchmark's shape at the depths text and hybrid search
//! read, and the exact scoring of a hybrid's vector candidates. A measurement, not a test:
//! `cargo run --release -p memvault-index --example text_scale -- CORPUS.jsonl DIR N`.

use std::sync::Arc;
use std::time::Instant;

use memvault_index::TextIndex;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let corpus = std::fs::read_to_string(&args[1]).unwrap();
    let dir = std::path::PathBuf::from(&args[2]);
    let n: usize = args[3].parse().unwrap();
    let sentences: Vec<String> = corpus
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .flat_map(|v| {
            v["text"]
                .as_str()
                .unwrap_or("")
                .split(". ")
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|s| s.len() > 20)
        .collect();
    let fresh = !dir.exists();
    let index = TextIndex::open(&dir).unwrap();
    if fresh {
        let started = Instant::now();
        for i in 0..n {
            let s = &sentences[i % sentences.len()];
            let text = match i / sentences.len() {
                0 => s.clone(),
                copy => format!("{s} (copy {copy})"),
            };
            index.add(i as u64 + 1, &text).unwrap();
            if i % 2000 == 1999 {
                index.commit().unwrap();
            }
        }
        index.commit().unwrap();
        eprintln!("built {n} in {:.0?}", started.elapsed());
    }
    let segments = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "idx")
        })
        .count();
    eprintln!("{} sentences, {segments} segments", sentences.len());
    if std::env::var_os("MERGE").is_some() {
        let started = Instant::now();
        let merged = index.merge_segments().unwrap();
        eprintln!("merged {merged} segments in {:.0?}", started.elapsed());
    }
    let step = sentences.len() / 200;
    let queries: Vec<String> = (0..200)
        .map(|i| {
            let s = &sentences[(i * step + 7) % sentences.len()];
            let words: Vec<&str> = s.split_whitespace().take(6).collect();
            format!("{} {i}", words.join(" "))
        })
        .collect();
    let report = |label: &str, mut times: Vec<f64>| {
        times.sort_by(f64::total_cmp);
        let p = |q: f64| times[((times.len() as f64 - 1.0) * q) as usize];
        println!(
            "{label:>24}: p50 {:.2} p95 {:.2} p99 {:.2} ms",
            p(0.5),
            p(0.95),
            p(0.99)
        );
    };
    for depth in [10, 20, 50] {
        let mut times = Vec::new();
        for round in 0..2 {
            for query in &queries {
                let started = Instant::now();
                let hits = index.search(query, depth, Arc::new(|_| true)).unwrap();
                std::hint::black_box(hits);
                if round == 1 {
                    times.push(started.elapsed().as_secs_f64() * 1000.0);
                }
            }
        }
        if std::env::var_os("SLOWEST").is_some() {
            let mut slowest: Vec<(f64, &String)> = times.iter().copied().zip(&queries).collect();
            slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
            for (ms, query) in slowest.iter().take(8) {
                println!("{depth:>4} {ms:6.2} ms  {query}");
            }
        }
        report(&format!("top {depth}"), times);
    }
    // Twenty keys spread over the collection, as a hybrid's vector candidates are.
    let keys: Vec<u64> = (0..20).map(|i| (i * n / 20 + 1) as u64).collect();
    let mut times = Vec::new();
    for query in &queries {
        let started = Instant::now();
        std::hint::black_box(index.score(query, &keys).unwrap());
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    report("score 20 given keys", times);
}
