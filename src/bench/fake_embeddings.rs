//! A stand-in OpenAI-compatible `/embeddings` endpoint for the re-embedding benchmark: a
//! hashed bag of words (word overlap is similarity), answered in the endpoint's wire
//! format, on a loopback port of this process.

use axum::Json;
use serde_json::{json, Value};

use super::BenchError;

pub const MODEL: &str = "bench-bag-of-words";
const DIMENSIONS: usize = 256;

/// Serves `POST /v1/embeddings` on a loopback port until the process ends; returns the
/// API base (`http://127.0.0.1:PORT/v1`).
pub async fn start() -> Result<String, BenchError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|error| BenchError::Setup(format!("fake embeddings endpoint: {error}")))?;
    let address = listener
        .local_addr()
        .map_err(|error| BenchError::Setup(format!("fake embeddings endpoint: {error}")))?;
    let app = axum::Router::new().route("/v1/embeddings", axum::routing::post(embeddings));
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            eprintln!("bench: the fake embeddings endpoint stopped: {error}");
        }
    });
    Ok(format!("http://{address}/v1"))
}

async fn embeddings(Json(body): Json<Value>) -> Json<Value> {
    let inputs: Vec<&str> = body["input"]
        .as_array()
        .map(|texts| texts.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": bag_of_words(text)}))
        .collect();
    Json(json!({"object": "list", "data": data, "model": MODEL}))
}

fn bag_of_words(text: &str) -> Vec<f32> {
    let mut vector = vec![0.0_f32; DIMENSIONS];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        let hash = word
            .to_lowercase()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
            });
        vector[(hash % DIMENSIONS as u64) as usize] += 1.0;
    }
    vector
}
