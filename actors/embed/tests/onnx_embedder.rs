//! The ONNX Runtime embedder: its fp32 graph gives the Python reference vectors
//! (`../shared/data/minilm-reference.json`, cosine > 0.999), batched or one at a time; its
//! int8 graph stays close (cosine > 0.98 to the reference, > 0.99 on average) and ranks
//! by meaning. (A missing or corrupt library: `onnx_fallback.rs`, a process of its own.)

use std::path::PathBuf;

use memvault_embed::{
    default_model_cache_dir, ensure_minilm_weights, ensure_onnxruntime, Embedder, ModelSource,
    OnnxEmbedder, Precision, MINILM_INT8,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    text: String,
    vector: Vec<f32>,
}

fn reference() -> Reference {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/minilm-reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("reference file"))
        .expect("reference json")
}

fn python() -> String {
    std::env::var("MEMVAULT_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

fn weights() -> PathBuf {
    let source = ModelSource {
        model_dir: None,
        cache_dir: default_model_cache_dir(),
        python: python(),
    };
    ensure_minilm_weights(&source).expect("model weights")
}

fn embedder(precision: Precision) -> OnnxEmbedder {
    let library = ensure_onnxruntime(&default_model_cache_dir(), &python()).expect("onnxruntime");
    OnnxEmbedder::load(&weights(), &library, precision).expect("the ONNX model loads")
}

fn cosine(left: &[f32], right: &[f32]) -> f32 {
    let dot: f32 = left.iter().zip(right).map(|(a, b)| a * b).sum();
    let norm = |vector: &[f32]| vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(left) * norm(right))
}

/// The cosine of each reference item's vector, batched and single, to the reference
/// (checking that both are unit length and agree with each other).
fn agreement(model: &OnnxEmbedder) -> Vec<f32> {
    let reference = reference();
    let texts: Vec<&str> = reference
        .items
        .iter()
        .map(|item| item.text.as_str())
        .collect();
    let batched = model.embed_batch(&texts).unwrap();
    let mut similarities = Vec::new();
    for (item, vector) in reference.items.iter().zip(&batched) {
        let single = model.embed_batch(&[item.text.as_str()]).unwrap().remove(0);
        // A text's vector does not depend on the texts it is embedded with.
        assert!(cosine(vector, &single) > 0.9999, "{:?}", item.text);
        for candidate in [vector, &single] {
            let norm = candidate.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
            similarities.push(cosine(candidate, &item.vector));
        }
    }
    similarities
}

#[test]
fn fp32_vectors_equal_the_python_reference() {
    let model = embedder(Precision::Fp32);
    assert_eq!(model.model_name(), "all-MiniLM-L6-v2");
    assert_eq!(model.dimensions(), 384);
    let similarities = agreement(&model);
    let worst = similarities.iter().copied().fold(f32::MAX, f32::min);
    assert!(worst > 0.999, "the least similar vector: cosine {worst}");
}

#[test]
fn int8_vectors_stay_close_to_the_reference_and_rank_by_meaning() {
    let model = embedder(Precision::Int8);
    assert_eq!(model.model_name(), MINILM_INT8);
    let similarities = agreement(&model);
    let worst = similarities.iter().copied().fold(f32::MAX, f32::min);
    let mean = similarities.iter().sum::<f32>() / similarities.len() as f32;
    eprintln!("int8 against the reference: mean cosine {mean:.4}, least {worst:.4}");
    assert!(worst > 0.98, "the least similar vector: cosine {worst}");
    assert!(mean > 0.99, "mean cosine {mean}");
    let vectors = model
        .embed_batch(&[
            "The cat is sleeping on the sofa.",
            "A kitten naps on the couch.",
            "Quarterly revenue grew by twelve percent.",
        ])
        .unwrap();
    assert!(cosine(&vectors[0], &vectors[1]) > cosine(&vectors[0], &vectors[2]) + 0.2);
}

/// The dedup threshold (0.95) and search's `min_score` (0.3) were calibrated on fp32
/// vectors. On 300 conversation turns (LoCoMo, read from `../shared/data` at test time),
/// a pair's cosine moves by 0.011 on average under int8 (at most 0.064, measured); the
/// near-duplicate pairs (≥ 0.95) are the same ones, and the pairs above 0.3 change by
/// under 1% (35,600 and 35,582 of 51,040, measured).
#[test]
fn int8_keeps_pair_similarities_so_the_thresholds_hold() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/locomo-dev/locomo-dev.json");
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("locomo")).expect("json");
    let conversation = &data[0]["conversation"];
    let mut turns: Vec<String> = Vec::new();
    for session in 1.. {
        let Some(list) = conversation[format!("session_{session}")].as_array() else {
            break;
        };
        turns.extend(list.iter().map(|turn| {
            format!(
                "{}: {}",
                turn["speaker"].as_str().unwrap_or_default(),
                turn["text"].as_str().unwrap_or_default()
            )
        }));
    }
    turns.truncate(300);
    // A few exact and near repeats, as dedup meets them.
    let repeats: Vec<String> = turns[..20].iter().map(|turn| format!("{turn}!")).collect();
    turns.extend(repeats);
    let texts: Vec<&str> = turns.iter().map(String::as_str).collect();
    let fp32 = embedder(Precision::Fp32).embed_batch(&texts).unwrap();
    let int8 = embedder(Precision::Int8).embed_batch(&texts).unwrap();
    let (mut largest, mut total, mut pairs) = (0.0f32, 0.0f32, 0usize);
    let mut counts = [[0usize; 2]; 2];
    for left in 0..texts.len() {
        for right in left + 1..texts.len() {
            let (before, after) = (
                cosine(&fp32[left], &fp32[right]),
                cosine(&int8[left], &int8[right]),
            );
            largest = largest.max((before - after).abs());
            total += (before - after).abs();
            pairs += 1;
            for (side, threshold) in [0.95f32, 0.3].iter().enumerate() {
                counts[side][0] += usize::from(before >= *threshold);
                counts[side][1] += usize::from(after >= *threshold);
            }
        }
    }
    eprintln!(
        "{pairs} pairs: largest change {largest:.4}, mean {:.4}; ≥ 0.95: {} fp32, {} int8; ≥ 0.3: {} fp32, {} int8",
        total / pairs as f32,
        counts[0][0],
        counts[0][1],
        counts[1][0],
        counts[1][1]
    );
    assert!(largest < 0.1, "a pair's cosine moved by {largest}");
    assert!(
        total / (pairs as f32) < 0.02,
        "mean change {}",
        total / pairs as f32
    );
    assert_eq!(counts[0][0], counts[0][1], "near-duplicates found by 0.95");
    let (above_fp32, above_int8) = (counts[1][0] as f64, counts[1][1] as f64);
    assert!(
        (above_fp32 - above_int8).abs() / above_fp32 < 0.01,
        "pairs above 0.3: {above_fp32} and {above_int8}"
    );
}
