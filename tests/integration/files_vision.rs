//! Images captioned by a configured vision-capable OpenAI-compatible chat model (a local
//! fake that speaks `chat/completions`: the image inline as a `data:` URL in an
//! `image_url` part, bearer key, the caption as the first choice's content). The caption
//! is found by a search; a failing model leaves the image a memory with a `detail`.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine as _;
use serde_json::{json, Value};

use crate::support::{expect_status, serve_fake, start_in_process, tenant_on, unique, Client};

const CAPTION: &str = "A ring-tailed coati foraging on a forest floor.";

#[derive(Default)]
struct Seen {
    bodies: Vec<Value>,
    authorization: Option<String>,
}

async fn completions(
    State((seen, fail)): State<(Arc<Mutex<Seen>>, bool)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let mut seen = seen.lock().unwrap();
    seen.authorization = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    seen.bodies.push(body);
    if fail {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"error": {"message": "overloaded"}})),
        );
    }
    (
        StatusCode::OK,
        Json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "vision-test",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": CAPTION}}],
            "usage": {"prompt_tokens": 90, "completion_tokens": 12, "total_tokens": 102},
        })),
    )
}

/// Starts the fake model on a thread of its own; its base URL.
fn fake_model(seen: Arc<Mutex<Seen>>, fail: bool) -> String {
    let app = Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state((seen, fail));
    format!("http://{}/v1", serve_fake(app))
}

fn coati() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/files/coati.jpg"
    ))
    .unwrap()
}

fn drop_image(client: &Client, collection: &str, bytes: &[u8]) -> Value {
    let form = reqwest::blocking::multipart::Form::new().part(
        "files",
        reqwest::blocking::multipart::Part::bytes(bytes.to_vec())
            .file_name("coati.jpg")
            .mime_str("image/jpeg")
            .unwrap(),
    );
    let response = client
        .request(
            reqwest::Method::POST,
            &format!("/v1/memory/collections/{collection}/drop"),
        )
        .multipart(form)
        .send()
        .unwrap();
    expect_status(response, 201)
}

#[test]
fn images_are_captioned_by_the_configured_vision_model() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let base = fake_model(seen.clone(), false);
    std::env::set_var("MEMVAULT_TEST_VISION_KEY", "sk-vision-test");
    let server = start_in_process(|config| {
        config.files.vision_base_url = Some(base.clone());
        config.files.vision_model = "vision-test".to_owned();
        config.files.vision_api_key_env = "MEMVAULT_TEST_VISION_KEY".to_owned();
        config.files.fetch_engines = false;
    });
    let client = tenant_on(&server);
    let collection = unique("vision");
    let image = coati();
    let body = drop_image(&client, &collection, &image);
    let result = &body["results"][0];
    assert_eq!(result["status"], "done", "{body}");
    assert_eq!(result["kind"], "jpeg", "{body}");
    assert!(
        result["detail"]
            .as_str()
            .is_some_and(|detail| detail.contains("captioned by")),
        "{body}"
    );
    let search = expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &json!({"query": "coati foraging forest", "mode": "text"}),
        ),
        200,
    );
    let text = search["results"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with(&format!("Caption: {CAPTION}")), "{search}");

    // The request: the model, the key, a text part and the exact image as a data: URL.
    let seen = seen.lock().unwrap();
    assert_eq!(seen.bodies.len(), 1);
    let request = &seen.bodies[0];
    assert_eq!(request["model"], "vision-test");
    assert_eq!(seen.authorization.as_deref(), Some("Bearer sk-vision-test"));
    let content = request["messages"][0]["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "text");
    assert_eq!(content[1]["type"], "image_url");
    let url = content[1]["image_url"]["url"].as_str().unwrap();
    let encoded = url
        .strip_prefix("data:image/jpeg;base64,")
        .unwrap_or_else(|| panic!("a data: URL of a JPEG: {}", &url[..40]));
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    assert!(decoded == image, "the image sent is the file's exact bytes");
}

#[test]
fn a_failing_vision_model_leaves_the_image_a_memory_with_a_detail() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let base = fake_model(seen.clone(), true);
    let server = start_in_process(|config| {
        config.files.vision_base_url = Some(base.clone());
        config.files.fetch_engines = false;
    });
    let client = tenant_on(&server);
    let body = drop_image(&client, &unique("vision-down"), &coati());
    let result = &body["results"][0];
    assert_eq!(result["status"], "done", "{body}");
    assert_eq!(
        result["memory_ids"].as_array().map(Vec::len),
        Some(1),
        "{body}"
    );
    let detail = result["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("no caption") && detail.contains("503"),
        "{body}"
    );
    assert_eq!(seen.lock().unwrap().bodies.len(), 1);
}
