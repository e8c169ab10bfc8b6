//! all-MiniLM-L6-v2 on candle: BERT, mean pooling over the attention mask, L2 normalisation —
//! the same pipeline as sentence-transformers, so vectors agree with the Python reference.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::{Embedder, EmbeddingError};

/// The model's name, whichever runtime computes its fp32 vectors.
pub(crate) const MINILM: &str = "all-MiniLM-L6-v2";
/// Its vectors' length.
pub(crate) const DIMENSIONS: usize = 384;
/// sentence-transformers' `max_seq_length` for this model; the tokenizer file says 128.
pub(crate) const MAX_TOKENS: usize = 256;
/// Texts per forward pass; longer inputs are split so padding stays small.
pub(crate) const CHUNK: usize = 16;

/// A vector with the position of its text in the request.
type Indexed = (usize, Vec<f32>);

pub struct MiniLmEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    dimensions: usize,
    device: Device,
    /// Chunks embedded at once, one thread each.
    threads: usize,
}

impl MiniLmEmbedder {
    /// Loads `config.json`, `tokenizer.json` and `model.safetensors` from `directory`.
    pub fn load(directory: &Path) -> Result<Self, EmbeddingError> {
        let device = Device::Cpu;
        let config_text = std::fs::read_to_string(directory.join("config.json"))
            .map_err(|error| load_error("config.json", error))?;
        let config: Config =
            serde_json::from_str(&config_text).map_err(|error| load_error("config.json", error))?;
        let tokenizer = load_tokenizer(directory)?;
        let tensors = candle_core::safetensors::load(directory.join("model.safetensors"), &device)
            .map_err(|error| load_error("model.safetensors", error))?;
        let weights = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let model =
            BertModel::load(weights, &config).map_err(|error| load_error("model", error))?;
        Ok(Self {
            model,
            tokenizer,
            dimensions: config.hidden_size,
            device,
            threads: std::thread::available_parallelism().map_or(1, |count| count.get()),
        })
    }

    fn embed_chunk(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, candle_core::Error> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(candle_core::Error::wrap)?;
        let rows = encodings.len();
        let width = encodings
            .first()
            .map_or(0, |encoding| encoding.get_ids().len());
        let flatten = |field: fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings
                .iter()
                .flat_map(|encoding| field(encoding).iter().copied())
                .collect()
        };
        let ids = Tensor::from_vec(flatten(|e| e.get_ids()), (rows, width), &self.device)?;
        let type_ids =
            Tensor::from_vec(flatten(|e| e.get_type_ids()), (rows, width), &self.device)?;
        let mask = Tensor::from_vec(
            flatten(|e| e.get_attention_mask()),
            (rows, width),
            &self.device,
        )?;
        let hidden = self.model.forward(&ids, &type_ids, Some(&mask))?;
        // Mean over the real tokens only: padded positions are zeroed by the mask.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        mean.broadcast_div(&norms)?.to_vec2::<f32>()
    }
}

impl Embedder for MiniLmEmbedder {
    fn model_name(&self) -> &str {
        MINILM
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn token_counter(&self) -> Option<crate::TokenCounter> {
        token_counter(&self.tokenizer)
    }

    fn max_tokens(&self) -> Option<usize> {
        Some(MAX_TOKENS)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        // Similar lengths share a chunk, so a long text does not pad short ones.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&index| texts[index].len());
        let chunks: Vec<&[usize]> = order.chunks(CHUNK).collect();
        // candle parallelises only its large matrix products; most of a forward pass is
        // single-threaded element-wise work. Running chunks on one thread per core keeps
        // every core busy (measured: 1.15 cores used with one thread, ~1.9 with two).
        let workers = self.threads.min(chunks.len()).max(1);
        let next = AtomicUsize::new(0);
        let results: Vec<Result<Vec<Indexed>, EmbeddingError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            let position = next.fetch_add(1, Ordering::Relaxed);
                            let Some(chunk) = chunks.get(position) else {
                                return Ok(done);
                            };
                            let batch: Vec<&str> =
                                chunk.iter().map(|&index| texts[index]).collect();
                            let embedded = self
                                .embed_chunk(&batch)
                                .map_err(|error| EmbeddingError::Inference(error.to_string()))?;
                            done.extend(chunk.iter().copied().zip(embedded));
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle.join().unwrap_or_else(|_| {
                        Err(EmbeddingError::Inference(
                            "an embedding worker panicked".into(),
                        ))
                    })
                })
                .collect()
        });
        let mut vectors = vec![Vec::new(); texts.len()];
        for result in results {
            for (index, vector) in result? {
                vectors[index] = vector;
            }
        }
        Ok(vectors)
    }
}

/// The model's tokenizer, truncating at [`MAX_TOKENS`] and padding a batch to its longest
/// text.
pub(crate) fn load_tokenizer(directory: &Path) -> Result<Tokenizer, EmbeddingError> {
    let mut tokenizer = Tokenizer::from_file(directory.join("tokenizer.json"))
        .map_err(|error| load_error("tokenizer.json", error))?;
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: MAX_TOKENS,
            ..TruncationParams::default()
        }))
        .map_err(|error| load_error("tokenizer.json", error))?;
    tokenizer.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        ..PaddingParams::default()
    }));
    Ok(tokenizer)
}

/// Counts a text's tokens without special tokens, padding or truncation.
pub(crate) fn token_counter(tokenizer: &Tokenizer) -> Option<crate::TokenCounter> {
    let mut tokenizer = tokenizer.clone();
    tokenizer.with_padding(None);
    tokenizer.with_truncation(None).ok()?;
    Some(std::sync::Arc::new(move |text: &str| {
        tokenizer
            .encode(text, false)
            .map_or(text.len() / 4, |encoding| encoding.get_ids().len())
    }))
}

/// Sentence-transformers' pooling of a `[rows, width, DIMENSIONS]` hidden state: the mean
/// over each row's real tokens (`mask` 1), scaled to unit length.
pub(crate) fn mean_pool_normalized(
    hidden: &[f32],
    mask: &[i64],
    rows: usize,
    width: usize,
) -> Vec<Vec<f32>> {
    (0..rows)
        .map(|row| {
            let mut sum = vec![0.0f32; DIMENSIONS];
            let mut count = 0.0f32;
            for token in 0..width {
                if mask[row * width + token] == 0 {
                    continue;
                }
                count += 1.0;
                let start = (row * width + token) * DIMENSIONS;
                for (total, value) in sum.iter_mut().zip(&hidden[start..start + DIMENSIONS]) {
                    *total += value;
                }
            }
            let count = count.max(1e-9);
            sum.iter_mut().for_each(|value| *value /= count);
            let norm = sum
                .iter()
                .map(|value| value * value)
                .sum::<f32>()
                .sqrt()
                .max(1e-12);
            sum.iter_mut().for_each(|value| *value /= norm);
            sum
        })
        .collect()
}

fn load_error(what: &str, error: impl std::fmt::Display) -> EmbeddingError {
    EmbeddingError::Load(format!("{what}: {error}"))
}
