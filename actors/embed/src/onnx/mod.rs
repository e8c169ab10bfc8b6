//! all-MiniLM-L6-v2 on ONNX Runtime: the same tokenizer, pooling and normalisation as the
//! candle embedder, with the encoder run by a graph this crate builds from the pinned
//! weights ([`graph`]) on the library of the pinned `onnxruntime` wheel ([`runtime`]).
//! In fp32 its vectors equal candle's; the int8 build is a model of its own name.

mod graph;
mod proto;
mod runtime;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use ort::session::builder::{GraphOptimizationLevel, PrepackedWeights, SessionBuilder};
use ort::session::Session;
use ort::value::{DynValue, Tensor};
use tokenizers::Tokenizer;

pub use graph::Precision;
pub use runtime::{ensure_onnxruntime, ONNXRUNTIME_VERSION};

use crate::minilm::{self, CHUNK, MAX_TOKENS};
use crate::{Deferred, Embedder, EmbeddingError};

/// The int8 model's name: its vectors are not fp32's, so collections record it apart and
/// the re-embed machinery converts between the two.
pub const MINILM_INT8: &str = "all-MiniLM-L6-v2-int8";

/// A vector with the position of its text in the request.
type Indexed = (usize, Vec<f32>);

pub struct OnnxEmbedder {
    /// One session per worker thread (ONNX Runtime's `Run` takes the session mutably in
    /// `ort`); each runs its chunk on one intra-op thread, so a batch keeps every core
    /// busy and a single text is not split across threads that would mostly wait.
    sessions: Vec<Mutex<Session>>,
    /// One more session whose single pass runs on every core: a request of one pass (a
    /// single add, a search's query) takes it, so a lone text is not held to one core
    /// while the others idle. `None` on one core.
    solo: Option<Mutex<Session>>,
    tokenizer: Tokenizer,
    precision: Precision,
}

/// The quick half of loading the model: ONNX Runtime's library loaded and the tokenizer
/// read, so a library that cannot run here is known at once. [`OnnxLoad::open`] does the
/// slow half (the graph built from the weights, the sessions opened: most of a second),
/// which a server's start runs beside its collections' loading
/// ([`OnnxLoad::open_beside`]).
pub struct OnnxLoad {
    environment: ort::environment::Environment,
    tokenizer: Tokenizer,
    directory: PathBuf,
    precision: Precision,
}

impl OnnxEmbedder {
    /// Builds the graph of `directory`'s weights in `precision` and opens it on the
    /// ONNX Runtime library at `library`.
    pub fn load(
        directory: &Path,
        library: &Path,
        precision: Precision,
    ) -> Result<Self, EmbeddingError> {
        Self::prepare(directory, library, precision)?.open()
    }

    /// Loads ONNX Runtime from `library` and the tokenizer of `directory` (see
    /// [`OnnxLoad`]).
    pub fn prepare(
        directory: &Path,
        library: &Path,
        precision: Precision,
    ) -> Result<OnnxLoad, EmbeddingError> {
        Ok(OnnxLoad {
            environment: runtime::environment(library)?,
            tokenizer: minilm::load_tokenizer(directory)?,
            directory: directory.to_owned(),
            precision,
        })
    }
}

impl OnnxLoad {
    /// The model's name once open.
    pub fn model_name(&self) -> &'static str {
        model_name(self.precision)
    }

    /// The rest of the load on a thread of its own: the embedder answers for its name,
    /// dimensions and tokens at once, and its first embedding waits for the load.
    pub fn open_beside(self) -> Deferred {
        let counter = minilm::token_counter(&self.tokenizer);
        Deferred::spawn(
            self.model_name(),
            minilm::DIMENSIONS,
            counter,
            Some(MAX_TOKENS),
            move || {
                self.open()
                    .map(|embedder| Arc::new(embedder) as Arc<dyn Embedder>)
            },
        )
    }

    /// Builds the graph and opens the sessions.
    pub fn open(self) -> Result<OnnxEmbedder, EmbeddingError> {
        let Self {
            environment,
            tokenizer,
            directory,
            precision,
        } = self;
        let started = std::time::Instant::now();
        let graph::Built {
            model,
            word_embeddings: (shape, words),
        } = graph::build(&directory.join("model.safetensors"), precision)?;
        // The sessions share one word-embedding table (each held its own copy: 45 MiB a
        // session, the model's largest weight).
        let words: Arc<DynValue> = Arc::new(
            Tensor::from_array((shape, words))
                .map_err(|error| {
                    EmbeddingError::Load(format!("ONNX Runtime word embeddings: {error}"))
                })?
                .into_dyn(),
        );
        let built = started.elapsed();
        let workers = std::thread::available_parallelism().map_or(1, |count| count.get());
        let session_error =
            |error: ort::Error| EmbeddingError::Load(format!("ONNX Runtime session: {error}"));
        let option_error = |error: ort::Error<SessionBuilder>| session_error(error.into());
        // The sessions share one copy of the weights ONNX Runtime lays out for its kernels
        // (each kept its own: three copies of the model in memory).
        let prepacked = PrepackedWeights::new();
        let session = |threads: usize| {
            Session::builder(&environment)
                .map_err(session_error)?
                .with_prepacked_weights(&prepacked)
                .map_err(option_error)?
                .with_initializer(graph::WORD_EMBEDDINGS, words.clone())
                .map_err(option_error)?
                .with_optimization_level(GraphOptimizationLevel::All)
                .map_err(option_error)?
                .with_intra_threads(threads)
                .map_err(option_error)?
                .with_inter_threads(1)
                .map_err(option_error)?
                .with_intra_op_spinning(false)
                .map_err(option_error)?
                .commit_from_memory(&model)
                .map(Mutex::new)
                .map_err(session_error)
        };
        // The sessions are opened side by side: each optimizes the graph on its own, and
        // one after another they took nearly half of the model's start, which a server's
        // start waits for (0.43 of 0.93 s on two cores; 0.27 s side by side).
        let (sessions, solo) = std::thread::scope(|scope| {
            let opening: Vec<_> = (0..workers).map(|_| scope.spawn(|| session(1))).collect();
            let solo = (workers > 1).then(|| session(workers)).transpose();
            let sessions = opening
                .into_iter()
                .map(|opening| {
                    opening.join().unwrap_or_else(|_| {
                        Err(EmbeddingError::Load(
                            "opening an ONNX Runtime session panicked".to_owned(),
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>();
            (sessions, solo)
        });
        let (sessions, solo) = (sessions?, solo?);
        tracing::debug!(
            graph_ms = built.as_millis() as u64,
            sessions_ms = (started.elapsed() - built).as_millis() as u64,
            "ONNX Runtime model opened"
        );
        Ok(OnnxEmbedder {
            sessions,
            solo,
            tokenizer,
            precision,
        })
    }
}

impl OnnxEmbedder {
    fn embed_chunk(&self, session: &mut Session, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|error| error.to_string())?;
        let rows = encodings.len();
        let width = encodings
            .first()
            .map_or(0, |encoding| encoding.get_ids().len());
        let flatten = |field: fn(&tokenizers::Encoding) -> &[u32]| -> Vec<i64> {
            encodings
                .iter()
                .flat_map(|encoding| field(encoding).iter().map(|&value| i64::from(value)))
                .collect()
        };
        let mask = flatten(|encoding| encoding.get_attention_mask());
        let shape = [rows, width];
        let ids = Tensor::from_array((shape, flatten(|encoding| encoding.get_ids())))
            .map_err(|error| error.to_string())?;
        let mask_tensor =
            Tensor::from_array((shape, mask.clone())).map_err(|error| error.to_string())?;
        let outputs = session
            .run(ort::inputs![
                graph::INPUT_IDS => ids,
                graph::ATTENTION_MASK => mask_tensor,
            ])
            .map_err(|error| error.to_string())?;
        let (_, hidden) = outputs[graph::HIDDEN_STATE]
            .try_extract_tensor::<f32>()
            .map_err(|error| error.to_string())?;
        Ok(minilm::mean_pool_normalized(hidden, &mask, rows, width))
    }
}

impl OnnxEmbedder {
    /// Texts per forward pass. The int8 graph quantizes each product's input with one
    /// scale for the whole tensor, so a text embedded beside others (and their padding)
    /// would get a slightly different vector than alone: it runs one text per pass, which
    /// keeps a text's vector the same in any request, and is faster too (no padding).
    fn chunk(&self) -> usize {
        match self.precision {
            Precision::Fp32 => CHUNK,
            Precision::Int8 => 1,
        }
    }
}

fn model_name(precision: Precision) -> &'static str {
    match precision {
        Precision::Fp32 => minilm::MINILM,
        Precision::Int8 => MINILM_INT8,
    }
}

impl Embedder for OnnxEmbedder {
    fn model_name(&self) -> &str {
        model_name(self.precision)
    }

    fn dimensions(&self) -> usize {
        minilm::DIMENSIONS
    }

    fn token_counter(&self) -> Option<crate::TokenCounter> {
        minilm::token_counter(&self.tokenizer)
    }

    fn max_tokens(&self) -> Option<usize> {
        Some(MAX_TOKENS)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        // Similar lengths share a chunk, so a long text does not pad short ones.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&index| texts[index].len());
        let chunks: Vec<&[usize]> = order.chunks(self.chunk()).collect();
        if let ([chunk], Some(solo)) = (chunks.as_slice(), &self.solo) {
            let mut session = solo.lock().unwrap_or_else(PoisonError::into_inner);
            let batch: Vec<&str> = chunk.iter().map(|&index| texts[index]).collect();
            let mut embedded = self
                .embed_chunk(&mut session, &batch)
                .map_err(EmbeddingError::Inference)?;
            let mut vectors = vec![Vec::new(); texts.len()];
            for (&index, vector) in chunk.iter().zip(embedded.drain(..)) {
                vectors[index] = vector;
            }
            return Ok(vectors);
        }
        let workers = self.sessions.len().min(chunks.len()).max(1);
        let next = AtomicUsize::new(0);
        // Pulls chunks until none is left, on one session.
        let work = |session: &Mutex<Session>| -> Result<Vec<Indexed>, EmbeddingError> {
            let mut session = session.lock().unwrap_or_else(PoisonError::into_inner);
            let mut done = Vec::new();
            loop {
                let position = next.fetch_add(1, Ordering::Relaxed);
                let Some(chunk) = chunks.get(position) else {
                    return Ok(done);
                };
                let batch: Vec<&str> = chunk.iter().map(|&index| texts[index]).collect();
                let embedded = self
                    .embed_chunk(&mut session, &batch)
                    .map_err(EmbeddingError::Inference)?;
                done.extend(chunk.iter().copied().zip(embedded));
            }
        };
        // The calling thread (the embedding service's, which lives as long as the model)
        // is the first worker: ONNX Runtime's per-thread buffers are made once, not per
        // call. Others start only for a batch of several passes.
        let results: Vec<Result<Vec<Indexed>, EmbeddingError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = self.sessions[1..workers]
                .iter()
                .map(|session| scope.spawn(|| work(session)))
                .collect();
            let mut results = vec![work(&self.sessions[0])];
            results.extend(handles.into_iter().map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(EmbeddingError::Inference(
                        "an embedding worker panicked".into(),
                    ))
                })
            }));
            results
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
