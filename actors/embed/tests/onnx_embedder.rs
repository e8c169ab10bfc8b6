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
