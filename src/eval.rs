//! `memvault eval DIR`: retrieval quality on a BEIR folder (corpus.jsonl, queries.jsonl,
//! qrels/test.tsv). The corpus goes through the real write path (embedding, store, indexes)
//! of an in-process service on a temporary data dir; every judged query is then searched in
//! each mode and scored with nDCG@10 (graded gains, log2 discount, as pytrec_eval) and
//! Recall@10. `--grid` also scores a grid of hybrid fusion settings (how the defaults were
//! chosen).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use memvault_core::memory::NewMemory;
use memvault_core::service::{Read, Write};
use memvault_core::{Agent, Memvault};
use memvault_index::search::{FusionParams, SearchFilter, SearchMode, SearchQuery};
use memvault_index::{dot, Quantization, VectorIndex};
use memvault_storage::CollectionName;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::config::Config;
use crate::server;

const CUTOFF: usize = 10;

#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// A BEIR folder: corpus.jsonl, queries.jsonl and qrels/test.tsv.
    pub dir: PathBuf,
    /// Also score a grid of hybrid fusion settings.
    #[arg(long)]
    pub grid: bool,
    /// Also compare the vector index's storage types (f32, f16, i8) against exact search.
    #[arg(long)]
    pub quantization: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{0}")]
    Data(String),
    #[error("{0}")]
    Service(String),
}

pub fn run(args: EvalArgs) -> Result<(), EvalError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| EvalError::Service(format!("runtime: {error}")))?;
    runtime.block_on(evaluate(args))
}

#[derive(Deserialize)]
struct Document {
    #[serde(rename = "_id")]
    id: String,
    #[serde(default)]
    title: String,
    text: String,
}

struct Benchmark {
    documents: Vec<Document>,
    queries: Vec<(String, String)>,
    /// Query id → document id → graded relevance.
    qrels: HashMap<String, HashMap<String, u32>>,
}

fn load(dir: &Path) -> Result<Benchmark, EvalError> {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .map_err(|error| EvalError::Data(format!("{}: {error}", dir.join(name).display())))
    };
    let documents = read("corpus.jsonl")?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str::<Document>(line)
                .map_err(|error| EvalError::Data(format!("corpus.jsonl: {error}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut qrels: HashMap<String, HashMap<String, u32>> = HashMap::new();
    for line in read("qrels/test.tsv")?.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let [query, document, score] = fields[..] else {
            continue;
        };
        // The optional header ("query-id corpus-id score") does not parse as a number.
        let Ok(score) = score.trim().parse::<u32>() else {
            continue;
        };
        qrels
            .entry(query.to_owned())
            .or_default()
            .insert(document.to_owned(), score);
    }
    #[derive(Deserialize)]
    struct Query {
        #[serde(rename = "_id")]
        id: String,
        text: String,
    }
    let queries = read("queries.jsonl")?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| serde_json::from_str::<Query>(line).ok())
        .filter(|query| qrels.contains_key(&query.id))
        .map(|query| (query.id, query.text))
        .collect();
    Ok(Benchmark {
        documents,
        queries,
        qrels,
    })
}

async fn evaluate(args: EvalArgs) -> Result<(), EvalError> {
    let benchmark = load(&args.dir)?;
    let data = tempfile::tempdir().map_err(|error| EvalError::Service(error.to_string()))?;
    let mut config = Config::default();
    config.server.data_dir = data.path().to_owned();
    config.search.result_cache_entries = 0;
    let key = format!("mv_eval_{}", uuid::Uuid::new_v4().simple());
    let service_error = |error: server::StartupError| EvalError::Service(error.to_string());
    let embedder = server::start_embedder(&config)
        .await
        .map_err(service_error)?;
    let started = server::start_service(&config, embedder, Some(key.clone()))
        .await
        .map_err(service_error)?;
    let service = started.service;
    let agent = service
        .authorizer()
        .authenticate(&key)
        .ok_or_else(|| EvalError::Service("the bootstrap key does not authenticate".to_owned()))?;
    let collection = CollectionName::parse("eval").map_err(EvalError::Service)?;
    eprintln!(
        "eval: {} documents, {} judged queries from {}",
        benchmark.documents.len(),
        benchmark.queries.len(),
        args.dir.display()
    );
    load_corpus(&service, &agent, &collection, &benchmark.documents).await?;

    let mut rows = vec![
        ("text", SearchMode::Text, 0.0, FusionParams::default()),
        ("vector", SearchMode::Vector, 0.0, FusionParams::default()),
        ("hybrid", SearchMode::Hybrid, 0.0, FusionParams::default()),
        (
            "hybrid (min_score 0.3, the default)",
            SearchMode::Hybrid,
            0.3,
            FusionParams::default(),
        ),
    ];
    if args.grid {
        for k in [5.0, 20.0, 60.0] {
            for window in [20, 50, 100] {
                for (vector_weight, text_weight) in [(1.0, 1.0), (1.0, 0.7), (0.7, 1.0)] {
                    let fusion = FusionParams {
                        k,
                        window,
                        vector_weight,
                        text_weight,
                    };
                    rows.push(("grid", SearchMode::Hybrid, 0.0, fusion));
                }
            }
        }
    }
    println!("| mode | k | window | weights (vector, text) | nDCG@10 | Recall@10 |");
    println!("|---|---|---|---|---|---|");
    for (label, mode, min_score, fusion) in rows {
        let (ndcg, recall) = score_mode(
            &service,
            &agent,
            &collection,
            &benchmark,
            mode,
            min_score,
            fusion,
        )
        .await?;
        println!(
            "| {label} | {} | {} | {}, {} | {ndcg:.4} | {recall:.4} |",
            fusion.k, fusion.window, fusion.vector_weight, fusion.text_weight
        );
    }
    if args.quantization {
        quantization_report(&service, &agent, &collection, &benchmark).await?;
    }
    service.shutdown().await;
    Ok(())
}

/// Vector-only ranking from standalone usearch indexes of each storage type, built from the
/// stored f32 vectors, against exact f32 search.
async fn quantization_report(
    service: &Memvault,
    agent: &Agent,
    collection: &CollectionName,
    benchmark: &Benchmark,
) -> Result<(), EvalError> {
    let service_error = |error: String| EvalError::Service(error);
    let (store, tenant, name) = (
        service.store().clone(),
        agent.tenant_id.clone(),
        collection.clone(),
    );
    let stored = tokio::task::spawn_blocking(move || store.memories(&tenant, &name))
        .await
        .map_err(|error| service_error(error.to_string()))?
        .map_err(|error| service_error(error.to_string()))?;
    let ids: Vec<String> = stored
        .iter()
        .map(|memory| {
            memory
                .record
                .metadata
                .get("doc_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    let texts: Vec<String> = benchmark
        .queries
        .iter()
        .map(|(_, text)| text.clone())
        .collect();
    let queries = service
        .embedder()
        .embed(texts)
        .await
        .map_err(|error| service_error(error.to_string()))?;
    let exact: Vec<Vec<String>> = queries
        .iter()
        .map(|query| {
            let mut scored: Vec<(usize, f32)> = stored
                .iter()
                .enumerate()
                .map(|(index, memory)| (index, dot(query, &memory.embedding)))
                .collect();
            scored.sort_by(|a, b| b.1.total_cmp(&a.1));
            scored
                .iter()
                .take(CUTOFF)
                .map(|(index, _)| ids[*index].clone())
                .collect()
        })
        .collect();
    println!();
    println!("| vector storage | index memory | build | nDCG@10 | overlap@10 with exact f32 |");
    println!("|---|---|---|---|---|");
    let score = |ranked: &[Vec<String>]| -> f64 {
        benchmark
            .queries
            .iter()
            .zip(ranked)
            .map(|((query_id, _), ranked)| ndcg_at(ranked, &benchmark.qrels[query_id], CUTOFF))
            .sum::<f64>()
            / benchmark.queries.len().max(1) as f64
    };
    println!(
        "| exact f32 (brute force) | - | - | {:.4} | 1.0000 |",
        score(&exact)
    );
    for quantization in [Quantization::F32, Quantization::F16, Quantization::I8] {
        let dimensions = stored.first().map_or(384, |memory| memory.embedding.len());
        let index = VectorIndex::with_quantization(dimensions, quantization)
            .map_err(|error| service_error(error.to_string()))?;
        let started = Instant::now();
        index
            .ensure_capacity(stored.len())
            .map_err(|error| service_error(error.to_string()))?;
        for (key, memory) in stored.iter().enumerate() {
            index
                .add(key as u64, &memory.embedding)
                .map_err(|error| service_error(error.to_string()))?;
        }
        let build = started.elapsed();
        let mut ranked = Vec::new();
        let mut overlap = 0.0;
        for (query, exact) in queries.iter().zip(&exact) {
            let hits = index
                .search(query, CUTOFF, |_| true)
                .map_err(|error| service_error(error.to_string()))?;
            let found: Vec<String> = hits
                .iter()
                .map(|hit| ids[hit.key as usize].clone())
                .collect();
            overlap += found.iter().filter(|id| exact.contains(id)).count() as f64 / CUTOFF as f64;
            ranked.push(found);
        }
        println!(
            "| {quantization:?} HNSW | {:.1} MiB | {:.2} s | {:.4} | {:.4} |",
            index.memory_bytes() as f64 / (1024.0 * 1024.0),
            build.as_secs_f64(),
            score(&ranked),
            overlap / queries.len().max(1) as f64
        );
    }
    Ok(())
}

async fn load_corpus(
    service: &Memvault,
    agent: &Agent,
    collection: &CollectionName,
    documents: &[Document],
) -> Result<(), EvalError> {
    let started = Instant::now();
    for (done, batch) in documents.chunks(100).enumerate() {
        let memories = batch
            .iter()
            .map(|document| {
                let text = match document.title.trim() {
                    "" => document.text.clone(),
                    title => format!("{title}. {}", document.text),
                };
                let mut metadata = Map::new();
                metadata.insert("doc_id".to_owned(), json!(document.id));
                NewMemory {
                    text: text.chars().take(10_000).collect(),
                    importance: 0.5,
                    category: "other".to_owned(),
                    source: "beir".to_owned(),
                    metadata,
                    container_tag: None,
                }
            })
            .collect();
        let access = service
            .authorizer()
            .authorize::<Write>(agent, collection.clone())
            .map_err(|error| EvalError::Service(error.to_string()))?;
        service
            .memories()
            .create(&access, memories)
            .await
            .map_err(|error| EvalError::Service(error.to_string()))?;
        eprint!(
            "\reval: loaded {}/{} ({:.0}/s) ",
            (done + 1) * 100,
            documents.len(),
            ((done + 1) * 100) as f64 / started.elapsed().as_secs_f64()
        );
    }
    eprintln!();
    Ok(())
}

async fn score_mode(
    service: &Memvault,
    agent: &Agent,
    collection: &CollectionName,
    benchmark: &Benchmark,
    mode: SearchMode,
    min_score: f32,
    fusion: FusionParams,
) -> Result<(f64, f64), EvalError> {
    let (mut ndcg_total, mut recall_total) = (0.0, 0.0);
    let access = service
        .authorizer()
        .authorize::<Read>(agent, collection.clone())
        .map_err(|error| EvalError::Service(error.to_string()))?;
    for (query_id, text) in &benchmark.queries {
        let query = SearchQuery {
            text: text.clone(),
            limit: CUTOFF,
            min_score,
            mode,
            filter: SearchFilter::default(),
            rewrite: false,
            rerank: false,
            fusion,
        };
        let outcome = service
            .search()
            .search(agent, Some(&access), query)
            .await
            .map_err(|error| EvalError::Service(error.to_string()))?;
        let ranked: Vec<String> = outcome
            .hits
            .iter()
            .filter_map(|hit| hit.memory.metadata.get("doc_id").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        let judged = &benchmark.qrels[query_id];
        ndcg_total += ndcg_at(&ranked, judged, CUTOFF);
        recall_total += recall_at(&ranked, judged, CUTOFF);
    }
    let count = benchmark.queries.len().max(1) as f64;
    Ok((ndcg_total / count, recall_total / count))
}

/// nDCG@k with linear graded gains and a log2(rank + 1) discount.
pub fn ndcg_at(ranked: &[String], judged: &HashMap<String, u32>, k: usize) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(index, id)| {
            f64::from(judged.get(id).copied().unwrap_or(0)) / (index as f64 + 2.0).log2()
        })
        .sum();
    let mut ideal: Vec<u32> = judged.values().copied().filter(|gain| *gain > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(index, gain)| f64::from(*gain) / (index as f64 + 2.0).log2())
        .sum();
    if idcg == 0.0 {
        0.0
    } else {
        dcg / idcg
    }
}

/// The share of relevant documents (gain > 0) found in the top k.
pub fn recall_at(ranked: &[String], judged: &HashMap<String, u32>, k: usize) -> f64 {
    let relevant = judged.values().filter(|gain| **gain > 0).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = ranked
        .iter()
        .take(k)
        .filter(|id| judged.get(*id).is_some_and(|gain| *gain > 0))
        .count();
    found as f64 / relevant as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(pairs: &[(&str, u32)]) -> HashMap<String, u32> {
        pairs
            .iter()
            .map(|(id, gain)| ((*id).to_owned(), *gain))
            .collect()
    }

    fn ranked(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|id| (*id).to_owned()).collect()
    }

    #[test]
    fn perfect_and_empty_rankings() {
        let qrels = judged(&[("a", 3), ("b", 1), ("c", 0)]);
        assert!((ndcg_at(&ranked(&["a", "b"]), &qrels, 10) - 1.0).abs() < 1e-12);
        assert_eq!(ndcg_at(&ranked(&[]), &qrels, 10), 0.0);
        assert_eq!(recall_at(&ranked(&["c", "x"]), &qrels, 10), 0.0);
        assert_eq!(recall_at(&ranked(&["b", "x", "a"]), &qrels, 10), 1.0);
    }

    #[test]
    fn ndcg_matches_a_hand_computation() {
        // Ranked b (1) then a (3): DCG = 1/log2(2) + 3/log2(3); IDCG = 3 + 1/log2(3).
        let qrels = judged(&[("a", 3), ("b", 1)]);
        let expected = (1.0 + 3.0 / 3f64.log2()) / (3.0 + 1.0 / 3f64.log2());
        assert!((ndcg_at(&ranked(&["b", "a"]), &qrels, 10) - expected).abs() < 1e-12);
        assert_eq!(recall_at(&ranked(&["b"]), &qrels, 1), 0.5);
    }
}
