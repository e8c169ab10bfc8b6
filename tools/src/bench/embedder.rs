//! The raw embedder, in-process and alone: the ceiling for any write path that embeds.
//! Each build of all-MiniLM-L6-v2 this machine runs — candle fp32 (the old default), ONNX
//! Runtime fp32 and ONNX Runtime int8 — on the same texts: batches of 64 and one text at
//! a time.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memvault_embed::{
    default_model_cache_dir, ensure_minilm_weights, ensure_onnxruntime, Embedder, EmbeddingError,
    MiniLmEmbedder, ModelSource, OnnxEmbedder, Precision,
};

use super::corpus::Corpus;
use super::stats::Latencies;
use super::BenchError;

/// A build of the local model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    Candle,
    OnnxFp32,
    OnnxInt8,
}

impl Build {
    pub const ALL: [Build; 3] = [Build::Candle, Build::OnnxFp32, Build::OnnxInt8];

    pub fn label(self) -> &'static str {
        match self {
            Build::Candle => "candle fp32",
            Build::OnnxFp32 => "ONNX Runtime fp32",
            Build::OnnxInt8 => "ONNX Runtime int8",
        }
    }

    /// The server's `embedding.*` settings that run this build.
    pub fn server_env(self) -> [(&'static str, &'static str); 2] {
        match self {
            Build::Candle => [
                ("MEMVAULT__EMBEDDING__RUNTIME", "candle"),
                ("MEMVAULT__EMBEDDING__LOCAL_MODEL", "all-MiniLM-L6-v2"),
            ],
            Build::OnnxFp32 => [
                ("MEMVAULT__EMBEDDING__RUNTIME", "onnx"),
                ("MEMVAULT__EMBEDDING__LOCAL_MODEL", "all-MiniLM-L6-v2"),
            ],
            Build::OnnxInt8 => [
                ("MEMVAULT__EMBEDDING__RUNTIME", "onnx"),
                ("MEMVAULT__EMBEDDING__LOCAL_MODEL", "all-MiniLM-L6-v2-int8"),
            ],
        }
    }

    /// This build, its weights fetched into the default cache first.
    pub fn open(self) -> Result<Arc<dyn Embedder>, EmbeddingError> {
        let source = ModelSource {
            model_dir: None,
            cache_dir: default_model_cache_dir(),
            python: "python3".to_owned(),
        };
        self.load(&ensure_minilm_weights(&source)?)
    }

    fn load(self, directory: &Path) -> Result<Arc<dyn Embedder>, EmbeddingError> {
        let onnx = |precision| {
            let library = ensure_onnxruntime(&default_model_cache_dir(), "python3")?;
            OnnxEmbedder::load(directory, &library, precision)
        };
        Ok(match self {
            Build::Candle => Arc::new(MiniLmEmbedder::load(directory)?),
            Build::OnnxFp32 => Arc::new(onnx(Precision::Fp32)?),
            Build::OnnxInt8 => Arc::new(onnx(Precision::Int8)?),
        })
    }
}

pub struct EmbedderFigures {
    pub texts: usize,
    pub batch: usize,
    pub elapsed: Duration,
    /// One text per call.
    pub single: Latencies,
}

impl EmbedderFigures {
    pub fn per_second(&self) -> f64 {
        self.texts as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Embeds the first `texts` corpus texts in batches of `batch` on this thread, then
/// `singles` of them one per call, with `build`.
pub fn measure(
    build: Build,
    corpus: &Corpus,
    texts: usize,
    batch: usize,
    singles: usize,
) -> Result<EmbedderFigures, BenchError> {
    let source = ModelSource {
        model_dir: None,
        cache_dir: default_model_cache_dir(),
        python: "python3".to_owned(),
    };
    let setup = |error: EmbeddingError| BenchError::Setup(format!("{}: {error}", build.label()));
    let directory = ensure_minilm_weights(&source).map_err(setup)?;
    let model = build.load(&directory).map_err(setup)?;
    let inputs: Vec<String> = (0..texts).map(|index| corpus.text(index)).collect();
    // One warm-up batch so allocation and page-in are not measured.
    let warm: Vec<&str> = inputs.iter().take(batch).map(String::as_str).collect();
    model.embed_batch(&warm).map_err(setup)?;
    let started = Instant::now();
    for chunk in inputs.chunks(batch.max(1)) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        model.embed_batch(&refs).map_err(setup)?;
    }
    let elapsed = started.elapsed();
    let mut single = Latencies::default();
    for text in inputs.iter().cycle().take(singles) {
        let started = Instant::now();
        model.embed_batch(&[text.as_str()]).map_err(setup)?;
        single.record(started.elapsed());
    }
    Ok(EmbedderFigures {
        texts,
        batch,
        elapsed,
        single,
    })
}
