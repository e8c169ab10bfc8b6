//! The raw embedder, in-process and alone: the ceiling for any write path that embeds.

use std::time::{Duration, Instant};

use memvault_embed::{
    default_model_cache_dir, ensure_minilm_weights, Embedder, MiniLmEmbedder, ModelSource,
};

use super::corpus::Corpus;
use super::BenchError;

pub struct EmbedderFigures {
    pub texts: usize,
    pub batch: usize,
    pub elapsed: Duration,
}

impl EmbedderFigures {
    pub fn per_second(&self) -> f64 {
        self.texts as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Embeds the first `texts` corpus texts in batches of `batch` on this thread.
pub fn measure(corpus: &Corpus, texts: usize, batch: usize) -> Result<EmbedderFigures, BenchError> {
    let source = ModelSource {
        model_dir: None,
        cache_dir: default_model_cache_dir(),
        python: "python3".to_owned(),
    };
    let setup = |error: memvault_embed::EmbeddingError| BenchError::Setup(error.to_string());
    let directory = ensure_minilm_weights(&source).map_err(setup)?;
    let model = MiniLmEmbedder::load(&directory).map_err(setup)?;
    let inputs: Vec<String> = (0..texts).map(|index| corpus.text(index)).collect();
    // One warm-up batch so allocation and page-in are not measured.
    let warm: Vec<&str> = inputs.iter().take(batch).map(String::as_str).collect();
    model.embed_batch(&warm).map_err(setup)?;
    let started = Instant::now();
    for chunk in inputs.chunks(batch.max(1)) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        model.embed_batch(&refs).map_err(setup)?;
    }
    Ok(EmbedderFigures {
        texts,
        batch,
        elapsed: started.elapsed(),
    })
}
