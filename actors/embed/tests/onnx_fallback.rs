//! A missing or corrupt ONNX Runtime library is a clear load error, never a crash. Its own
//! test binary: a process keeps the first library that loads, so no other test may load
//! the real one first.

use memvault_embed::{
    default_model_cache_dir, ensure_minilm_weights, EmbeddingError, ModelSource, OnnxEmbedder,
    Precision,
};

fn weights() -> std::path::PathBuf {
    let source = ModelSource {
        model_dir: None,
        cache_dir: default_model_cache_dir(),
        python: std::env::var("MEMVAULT_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned()),
    };
    ensure_minilm_weights(&source).expect("model weights")
}

#[test]
fn a_missing_or_corrupt_library_is_a_load_error() {
    let directory = tempfile::tempdir().unwrap();
    let missing = directory.path().join("libonnxruntime.so");
    let error = OnnxEmbedder::load(&weights(), &missing, Precision::Int8)
        .err()
        .expect("a missing library fails");
    assert!(matches!(error, EmbeddingError::Load(_)), "{error}");
    assert!(error.to_string().contains("does not exist"), "{error}");
    let corrupt = directory.path().join("corrupt.so");
    std::fs::write(&corrupt, b"\x7fELF but not really a library").unwrap();
    let error = OnnxEmbedder::load(&weights(), &corrupt, Precision::Int8)
        .err()
        .expect("a corrupt library fails");
    assert!(
        error.to_string().contains("cannot load ONNX Runtime"),
        "{error}"
    );
}
