//! The local model agrees with the Python sentence-transformers reference vectors
//! (`../shared/data/minilm-reference.json`) at cosine > 0.999, and ranks by meaning.

use std::path::PathBuf;

use memvault_embed::{
    default_model_cache_dir, ensure_minilm_weights, Embedder, MiniLmEmbedder, ModelSource,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    dimensions: usize,
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    text: String,
    vector: Vec<f32>,
}

fn reference_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/minilm-reference.json")
}

fn embedder() -> MiniLmEmbedder {
    let source = ModelSource {
        model_dir: None,
        cache_dir: default_model_cache_dir(),
        python: std::env::var("MEMVAULT_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned()),
    };
    let directory = ensure_minilm_weights(&source).expect("model weights");
    MiniLmEmbedder::load(&directory).expect("model loads")
}

fn cosine(left: &[f32], right: &[f32]) -> f32 {
    let dot: f32 = left.iter().zip(right).map(|(a, b)| a * b).sum();
    let norm = |vector: &[f32]| vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(left) * norm(right))
}

#[test]
fn vectors_agree_with_the_python_reference() {
    let text = std::fs::read_to_string(reference_path()).expect("reference file");
    let reference: Reference = serde_json::from_str(&text).expect("reference json");
    let model = embedder();
    assert_eq!(model.dimensions(), reference.dimensions);
    let texts: Vec<&str> = reference
        .items
        .iter()
        .map(|item| item.text.as_str())
        .collect();
    // Once as one padded batch, once one at a time: padding must not change a vector.
    let batched = model.embed_batch(&texts).unwrap();
    for (item, vector) in reference.items.iter().zip(&batched) {
        let single = model.embed_batch(&[item.text.as_str()]).unwrap().remove(0);
        for (label, candidate) in [("batched", vector), ("single", &single)] {
            let similarity = cosine(candidate, &item.vector);
            assert!(
                similarity > 0.999,
                "{label} {:?}: cosine {similarity}",
                &item.text[..item.text.len().min(40)]
            );
            let norm = candidate.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
        }
    }
}

#[test]
fn similar_meanings_are_closer_than_unrelated_ones() {
    let model = embedder();
    let vectors = model
        .embed_batch(&[
            "The cat is sleeping on the sofa.",
            "A kitten naps on the couch.",
            "Quarterly revenue grew by twelve percent.",
        ])
        .unwrap();
    assert!(cosine(&vectors[0], &vectors[1]) > cosine(&vectors[0], &vectors[2]) + 0.3);
}

#[test]
fn empty_and_very_long_texts_embed() {
    let model = embedder();
    let long = "memory ".repeat(5_000);
    let vectors = model.embed_batch(&["", long.as_str()]).unwrap();
    assert_eq!(vectors.len(), 2);
    assert!(vectors.iter().all(|vector| vector.len() == 384));
}
