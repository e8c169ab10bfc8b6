//! A stand-in OpenAI-compatible `/embeddings` endpoint for the re-embedding benchmark: a
//! hashed bag of words (word overlap is similarity), answered in the endpoint's wire
//! format, on a loopback port of this process. The re-embedding tests' fake endpoint
//! embeds with the same [`bag_of_words`].

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

/// The environment of a server whose embedding model is this endpoint at `base`.
pub fn server_environment(base: &str) -> Vec<(String, String)> {
    vec![
        (
            "MEMVAULT__EMBEDDING__PROVIDER".to_owned(),
            "openai".to_owned(),
        ),
        ("MEMVAULT__EMBEDDING__BASE_URL".to_owned(), base.to_owned()),
        ("MEMVAULT__EMBEDDING__MODEL".to_owned(), MODEL.to_owned()),
    ]
}

async fn embeddings(Json(body): Json<Value>) -> Json<Value> {
    let inputs: Vec<&str> = body["input"]
        .as_array()
        .map(|texts| texts.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": bag_of_words(text, DIMENSIONS)}))
        .collect();
    Json(json!({"object": "list", "data": data, "model": MODEL}))
}

/// Each lower-cased word adds 1 at a position given by an FNV-style hash; not normalised
/// (a client must scale vectors to unit length).
pub fn bag_of_words(text: &str, dimensions: usize) -> Vec<f32> {
    let mut vector = vec![0.0_f32; dimensions];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        let hash = word
            .to_lowercase()
            .bytes()
            .fold(1_469_598_103_934_665_603_u64, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(1_099_511_628_211)
            });
        if let Some(slot) = vector.get_mut((hash % dimensions.max(1) as u64) as usize) {
            *slot += 1.0;
        }
    }
    vector
}
