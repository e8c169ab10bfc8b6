//! An OpenAI-compatible `/embeddings` endpoint as an [`Embedder`]: OpenAI itself, or any
//! server that speaks its wire format (Ollama, vLLM, text-embeddings-inference, LiteLLM).
//!
//! One POST per batch: `{"model", "input": [texts], "encoding_format": "float"}` (and
//! `"dimensions"` when configured), answered by `{"data": [{"index", "embedding"}]}`.
//! Vectors are put in input order by `index` and scaled to unit length, so a cosine is a
//! dot product whatever the server returns. 429, 5xx and transport errors are retried
//! with back-off; other statuses fail the batch with the server's message.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{Embedder, EmbeddingError};

/// Attempts per batch, the first included.
const ATTEMPTS: u32 = 4;
/// How much of an error body a message quotes.
const QUOTED_BODY: usize = 300;

/// Where the endpoint is and which model it runs.
#[derive(Debug, Clone)]
pub struct OpenAiSettings {
    /// The API base, e.g. `https://api.openai.com/v1`; `/embeddings` is appended.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    /// Asked of models that can shorten their vectors (OpenAI's `dimensions`); when unset,
    /// the model's own dimension, learnt from one probe at start-up.
    pub dimensions: Option<usize>,
    pub timeout: Duration,
}

pub struct OpenAiEmbedder {
    settings: OpenAiSettings,
    dimensions: usize,
    client: reqwest::blocking::Client,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    index: usize,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    /// Connects to the endpoint; without configured dimensions, embeds one probe text to
    /// learn them. Blocking: call it off the async threads.
    pub fn connect(settings: OpenAiSettings) -> Result<Self, EmbeddingError> {
        let client = reqwest::blocking::Client::builder()
            .timeout(settings.timeout)
            .build()
            .map_err(|error| EmbeddingError::Load(format!("HTTP client: {error}")))?;
        let mut embedder = Self {
            dimensions: settings.dimensions.unwrap_or(0),
            settings,
            client,
        };
        if embedder.dimensions == 0 {
            let probe = embedder.request(&["dimension probe"]).map_err(|error| {
                EmbeddingError::Load(format!(
                    "cannot reach the embedding endpoint {} to learn the dimensions of {} \
                     (set embedding.dimensions to start without it): {error}",
                    embedder.settings.base_url, embedder.settings.model
                ))
            })?;
            embedder.dimensions = probe.first().map_or(0, Vec::len);
            if embedder.dimensions == 0 {
                return Err(EmbeddingError::Load(
                    "the embedding endpoint answered an empty vector".to_owned(),
                ));
            }
        }
        Ok(embedder)
    }

    fn endpoint(&self) -> String {
        format!(
            "{}/embeddings",
            self.settings.base_url.trim_end_matches('/')
        )
    }

    /// One POST (with retries); vectors in input order, unit length.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        let mut body = json!({
            "model": self.settings.model,
            "input": texts,
            "encoding_format": "float",
        });
        if let Some(dimensions) = self.settings.dimensions {
            body["dimensions"] = json!(dimensions);
        }
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(250 << attempt));
            }
            let mut request = self.client.post(self.endpoint()).json(&body);
            if let Some(key) = &self.settings.api_key {
                request = request.bearer_auth(key);
            }
            let response = match request.send() {
                Ok(response) => response,
                Err(error) => {
                    last = format!("request failed: {error}");
                    continue;
                }
            };
            let status = response.status();
            if status.is_success() {
                let parsed: EmbeddingsResponse = response.json().map_err(|error| {
                    EmbeddingError::Inference(format!("unreadable embeddings answer: {error}"))
                })?;
                return self.ordered(parsed, texts.len());
            }
            let text = response.text().unwrap_or_default();
            let quoted: String = text.chars().take(QUOTED_BODY).collect();
            last = format!("the endpoint answered {status}: {quoted}");
            let retryable = status.as_u16() == 429 || status.is_server_error();
            if !retryable {
                break;
            }
        }
        Err(EmbeddingError::Inference(last))
    }

    fn ordered(
        &self,
        response: EmbeddingsResponse,
        expected: usize,
    ) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; expected];
        for item in response.data {
            let slot = vectors.get_mut(item.index).ok_or_else(|| {
                EmbeddingError::Inference(format!(
                    "the endpoint answered index {} for {expected} texts",
                    item.index
                ))
            })?;
            *slot = Some(unit(item.embedding));
        }
        vectors
            .into_iter()
            .enumerate()
            .map(|(index, vector)| {
                let vector = vector.ok_or_else(|| {
                    EmbeddingError::Inference(format!("no vector for text {index}"))
                })?;
                if self.dimensions != 0 && vector.len() != self.dimensions {
                    return Err(EmbeddingError::Inference(format!(
                        "a vector of {} dimensions from a model of {}",
                        vector.len(),
                        self.dimensions
                    )));
                }
                Ok(vector)
            })
            .collect()
    }
}

fn unit(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        for value in &mut vector {
            *value /= norm;
        }
    }
    vector
}

impl Embedder for OpenAiEmbedder {
    fn model_name(&self) -> &str {
        &self.settings.model
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.request(texts)
    }
}
