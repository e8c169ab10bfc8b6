//! `--quantization`: vector-only ranking from standalone usearch indexes of each storage
//! type (f32, f16, i8), built from the stored f32 vectors, against exact f32 search, on a
//! loaded BEIR set.

use std::time::Instant;

use memvault_index::{dot, Quantization, VectorIndex};
use serde_json::Value;

use super::harness::{collection_name, Harness};
use super::metrics::ndcg_at;
use super::set::EvalSet;
use super::{EvalError, CUTOFF};

pub async fn report(harness: &Harness, set: &EvalSet) -> Result<(), EvalError> {
    let service_error = |error: String| EvalError::Service(error);
    for collection in &set.collections {
        let (store, tenant, name) = (
            harness.service.store().clone(),
            harness.agent.tenant_id.clone(),
            collection_name(set, collection)?,
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
                    .get(set.id_field)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            })
            .collect();
        let texts: Vec<String> = collection
            .queries
            .iter()
            .map(|query| query.text.clone())
            .collect();
        let queries = harness
            .service
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
        let score = |ranked: &[Vec<String>]| -> f64 {
            collection
                .queries
                .iter()
                .zip(ranked)
                .map(|(query, ranked)| ndcg_at(ranked, &query.judged, CUTOFF))
                .sum::<f64>()
                / collection.queries.len().max(1) as f64
        };
        println!();
        println!("{}: vector storage against exact search", set.name);
        println!();
        println!("| vector storage | index memory | build | nDCG@10 | overlap@10 with exact f32 |");
        println!("|---|---|---|---|---|");
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
                overlap +=
                    found.iter().filter(|id| exact.contains(id)).count() as f64 / CUTOFF as f64;
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
    }
    Ok(())
}
