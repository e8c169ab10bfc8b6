//! Audio sent to a configured OpenAI-compatible `/audio/transcriptions` endpoint (a local
//! fake that speaks its wire format: multipart `file` and `model`, bearer key, JSON
//! `{"text"}` answer) instead of the offline model.

use std::sync::{Arc, Mutex};

use axum::extract::{Multipart, State};
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::support::{expect_status, serve_fake, start_in_process, tenant_on, unique};

#[derive(Default)]
struct Seen {
    model: Option<String>,
    filename: Option<String>,
    bytes: usize,
    authorization: Option<String>,
}

async fn transcriptions(
    State(seen): State<Arc<Mutex<Seen>>>,
    headers: HeaderMap,
    mut form: Multipart,
) -> Json<Value> {
    let mut record = Seen {
        authorization: headers
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
        ..Seen::default()
    };
    while let Ok(Some(field)) = form.next_field().await {
        match field.name() {
            Some("model") => record.model = field.text().await.ok(),
            Some("file") => {
                record.filename = field.file_name().map(str::to_owned);
                record.bytes = field.bytes().await.map(|bytes| bytes.len()).unwrap_or(0);
            }
            _ => {}
        }
    }
    *seen.lock().unwrap() = record;
    Json(json!({"text": "And so my fellow quokkas, ask what the reef can do for you."}))
}

/// Starts the fake endpoint on a thread of its own; its base URL.
fn fake_endpoint(seen: Arc<Mutex<Seen>>) -> String {
    let app = Router::new()
        .route("/v1/audio/transcriptions", post(transcriptions))
        .with_state(seen);
    format!("http://{}/v1", serve_fake(app))
}

#[test]
fn audio_goes_to_the_configured_transcription_endpoint() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let base = fake_endpoint(seen.clone());
    std::env::set_var("MEMVAULT_TEST_TRANSCRIPTION_KEY", "sk-transcribe-test");
    let server = start_in_process(|config| {
        config.files.transcription_base_url = Some(base.clone());
        config.files.transcription_model = "whisper-test".to_owned();
        config.files.transcription_api_key_env = "MEMVAULT_TEST_TRANSCRIPTION_KEY".to_owned();
        // The offline model is not needed: the endpoint's transcript is what counts.
        config.files.fetch_engines = false;
    });
    let client = tenant_on(&server);
    let collection = unique("audio");
    let audio = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/actors/speech/tests/fixtures/jfk.mp3"
    ))
    .unwrap();
    let form = reqwest::blocking::multipart::Form::new().part(
        "files",
        reqwest::blocking::multipart::Part::bytes(audio.clone())
            .file_name("speech.mp3")
            .mime_str("audio/mpeg")
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
    let body = expect_status(response, 201);
    let result = &body["results"][0];
    assert_eq!(result["status"], "done", "{body}");
    assert_eq!(result["kind"], "mp3", "{body}");
    assert!(
        result["detail"]
            .as_str()
            .is_some_and(|detail| detail.contains("transcribed by")),
        "{body}"
    );
    let search = expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &json!({"query": "fellow quokkas reef", "mode": "text"}),
        ),
        200,
    );
    assert!(
        search["results"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("fellow quokkas")),
        "{search}"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.model.as_deref(), Some("whisper-test"));
    assert_eq!(seen.filename.as_deref(), Some("speech.mp3"));
    assert_eq!(seen.bytes, audio.len());
    assert_eq!(
        seen.authorization.as_deref(),
        Some("Bearer sk-transcribe-test")
    );
}
