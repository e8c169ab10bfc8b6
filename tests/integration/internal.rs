//! `POST /v1/memory/_internal/embed`: the server's model for memvault's own other
//! processes, behind a shared secret (`internal.embed_secret`), never a tenant key.

use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::support::{expect_status, shared, start_in_process, tenant_on, Client, TestServer};

const PATH: &str = "/v1/memory/_internal/embed";
const SECRET: &str = "internal-embed-test-secret-9f2c";

fn server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        start_in_process(|config| config.internal.embed_secret = Some(SECRET.to_owned()))
    })
}

fn embed(
    base_url: &str,
    key: Option<&str>,
    secret: Option<&str>,
    body: &Value,
) -> reqwest::blocking::Response {
    let client = Client::new(base_url, key);
    let mut request = client.request(reqwest::Method::POST, PATH).json(body);
    if let Some(secret) = secret {
        request = request.header("X-Memvault-Internal-Secret", secret);
    }
    request.send().unwrap()
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

fn vectors(body: &Value) -> Vec<Vec<f64>> {
    body["embeddings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|vector| {
            vector
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn the_secret_embeds_texts_with_the_servers_model() {
    let base = &server().base_url;
    let texts = [
        "The lighthouse keeper logs the fog horn hours.",
        "A recipe for a lemon drizzle cake.",
        "The lighthouse keeper logs the fog horn hours.",
    ];
    let body = expect_status(
        embed(base, None, Some(SECRET), &json!({"texts": texts})),
        200,
    );
    let dimension = body["dimension"].as_u64().unwrap() as usize;
    assert_eq!(dimension, 384, "{body}");
    assert_eq!(body["model"], "all-MiniLM-L6-v2-int8", "{body}");
    let found = vectors(&body);
    assert_eq!(found.len(), 3);
    assert!(found.iter().all(|vector| vector.len() == dimension));
    assert!(cosine(&found[0], &found[2]) > 0.9999);
    assert!(cosine(&found[0], &found[1]) < 0.9);
    // The same text in another call: the same vector.
    let again = expect_status(
        embed(base, None, Some(SECRET), &json!({"texts": [texts[1]]})),
        200,
    );
    assert!(cosine(&vectors(&again)[0], &found[1]) > 0.9999);
}

#[test]
fn no_secret_a_wrong_one_or_a_tenant_key_is_401_and_bad_bodies_are_422() {
    let base = &server().base_url;
    let tenant = tenant_on(server());
    let body = json!({"texts": ["Who may embed?"]});
    for (key, secret) in [
        (None, None),
        (None, Some("wrong-secret")),
        (None, Some("")),
        (Some(tenant.key()), None),
        (Some(tenant.key()), Some("internal-embed-test-secret-9f2")),
    ] {
        let response = embed(base, key, secret, &body);
        assert_eq!(response.status(), 401, "key {key:?}, secret {secret:?}");
        let error: Value = response.json().unwrap();
        assert_eq!(error["code"], "internal_secret_invalid", "{error}");
    }
    for bad in [
        json!({}),
        json!({"texts": "not a list"}),
        json!({"texts": [5]}),
        json!({"texts": []}),
        json!({"texts": ["  "]}),
        json!({"texts": ["x".repeat(32_001)]}),
        json!({"texts": vec!["a"; 257]}),
        json!({"texts": ["a"], "model": "other"}),
    ] {
        let response = embed(base, None, Some(SECRET), &bad);
        assert_eq!(response.status(), 422, "{bad}");
    }
}

#[test]
fn without_a_configured_secret_the_endpoint_is_off() {
    let response = embed(
        &shared().base_url,
        None,
        Some("anything"),
        &json!({"texts": ["a"]}),
    );
    assert_eq!(response.status(), 503);
    let error: Value = response.json().unwrap();
    assert_eq!(error["code"], "internal_not_configured", "{error}");
}
