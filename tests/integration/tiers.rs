//! Tier limits, black-box: `admin/me` and `admin/stats` show them; a write past the
//! limit on memories, collections (explicit or auto-created) or stored file bytes answers
//! 403 `tier_limit_reached` and writes nothing; deleting makes room again; tiers without
//! limits are unlimited; the operator's `admin/usage` counts what each tier holds.

use memvault_server::config::{TierConfig, TiersConfig};
use serde_json::{json, Value};

use crate::support::{expect_status, memories_path, start_in_process, unique, Client, TestServer};

fn server() -> TestServer {
    start_in_process(|config| {
        let mut tiers = TiersConfig::default();
        tiers.0.insert(
            "tiny".to_owned(),
            TierConfig {
                collections: Some(2),
                memories: Some(5),
                storage_mb: None,
            },
        );
        tiers.0.insert(
            "tiny-files".to_owned(),
            TierConfig {
                collections: None,
                memories: None,
                storage_mb: Some(1),
            },
        );
        config.tiers = tiers;
    })
}

fn tenant(server: &TestServer, tier: &str) -> Client {
    let admin = Client::new(&server.base_url, Some(&server.admin_key));
    let name = unique("tiered");
    let created = expect_status(
        admin.post(
            "/v1/memory/admin/tenants",
            &json!({"name": name, "email": format!("{name}@example.com"), "tier": tier}),
        ),
        201,
    );
    Client::new(&server.base_url, created["api_key"].as_str())
}

#[track_caller]
fn refused(response: reqwest::blocking::Response, what: &str) -> Value {
    assert_eq!(response.status().as_u16(), 403, "{what}");
    let body: Value = response.json().unwrap();
    assert_eq!(body["code"], "tier_limit_reached", "{what}: {body}");
    assert!(body["detail"].as_str().unwrap().contains("tiny"), "{body}");
    body
}

fn count(client: &Client, collection: &str) -> usize {
    expect_status(client.get(&memories_path(collection)), 200)
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn writes_past_a_tier_limit_are_refused_and_write_nothing() {
    let server = server();
    let client = tenant(&server, "tiny");
    let me = expect_status(client.get("/v1/memory/admin/me"), 200);
    assert_eq!(me["tier"], "tiny");
    assert_eq!(me["limits"]["collections"], 2, "{me:#}");
    assert_eq!(me["limits"]["memories"], 5, "{me:#}");
    assert_eq!(me["limits"]["storage_bytes"], Value::Null, "{me:#}");

    expect_status(
        client.post(&memories_path("a"), &json!({"text": "first"})),
        201,
    );
    let four: Vec<Value> = (0..4)
        .map(|n| json!({"text": format!("bulk {n}")}))
        .collect();
    expect_status(
        client.post(&format!("{}/bulk", memories_path("a")), &json!(four)),
        201,
    );
    refused(
        client.post(&memories_path("a"), &json!({"text": "one too many"})),
        "a sixth memory",
    );
    let two: Vec<Value> = (0..2)
        .map(|n| json!({"text": format!("over {n}")}))
        .collect();
    refused(
        client.post(&format!("{}/bulk", memories_path("a")), &json!(two)),
        "a bulk past the limit",
    );
    refused(
        client.post(
            "/v1/memory/collections/a/remember?sync=true",
            &json!({"content": "My favorite color is teal."}),
        ),
        "a remembered fact past the limit",
    );
    assert_eq!(count(&client, "a"), 5);

    // Deleting makes room again.
    let first = expect_status(client.get(&memories_path("a")), 200)[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    expect_status(
        client.delete(&format!("{}/{first}", memories_path("a"))),
        204,
    );

    expect_status(
        client.post("/v1/memory/collections", &json!({"name": "b"})),
        201,
    );
    refused(
        client.post("/v1/memory/collections", &json!({"name": "c"})),
        "a third collection",
    );
    refused(
        client.post(&memories_path("c"), &json!({"text": "auto-creates c"})),
        "a third collection made by a write",
    );
    let collections = expect_status(client.get("/v1/memory/collections"), 200);
    assert_eq!(collections.as_array().unwrap().len(), 2, "{collections:#}");
    expect_status(
        client.post(&memories_path("b"), &json!({"text": "fits"})),
        201,
    );

    let stats = expect_status(client.get("/v1/memory/admin/stats"), 200);
    assert_eq!(stats["tier"], "tiny");
    assert_eq!(stats["collections"], 2, "{stats:#}");
    assert_eq!(stats["memories"], 5, "{stats:#}");
    assert_eq!(stats["limits"]["memories"], 5, "{stats:#}");

    // A tier without limits (the bootstrap tenant's `admin`) is not held back.
    let admin = Client::new(&server.base_url, Some(&server.admin_key));
    let me = expect_status(admin.get("/v1/memory/admin/me"), 200);
    assert_eq!(me["limits"]["memories"], Value::Null, "{me:#}");
    for name in ["x1", "x2", "x3"] {
        expect_status(
            admin.post(&memories_path(name), &json!({"text": name})),
            201,
        );
    }

    let usage = expect_status(admin.get("/v1/memory/admin/usage"), 200);
    let tiny = usage["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tier| tier["tier"] == "tiny")
        .cloned()
        .unwrap_or_else(|| panic!("no tiny tier in {usage:#}"));
    assert_eq!(
        (&tiny["tenants"], &tiny["collections"], &tiny["memories"]),
        (&json!(1), &json!(2), &json!(5)),
        "{tiny:#}"
    );
}

#[test]
fn files_past_the_storage_limit_are_refused_one_by_one() {
    let server = server();
    let client = tenant(&server, "tiny-files");
    let me = expect_status(client.get("/v1/memory/admin/me"), 200);
    assert_eq!(me["limits"]["storage_bytes"], 1024 * 1024, "{me:#}");
    // 600 KB of bytes but one sentence of text, so reading it is quick.
    let big = format!(
        "The tide tables of the northern harbour, noted by the keeper each dawn.{}",
        " ".repeat(600 * 1024)
    );
    let boundary = unique("boundary");
    let mut body = Vec::new();
    for name in ["first.txt", "second.txt"] {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; \
                 filename=\"{name}\"\r\nContent-Type: text/plain\r\n\r\n{big}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    let response = client
        .request(reqwest::Method::POST, "/v1/memory/collections/docs/drop")
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .timeout(std::time::Duration::from_secs(300))
        .send()
        .unwrap();
    let dropped = expect_status(response, 201);
    let results = dropped["results"].as_array().expect("results");
    assert_eq!(results[0]["status"], "done", "{dropped:#}");
    assert_eq!(results[1]["status"], "failed", "{dropped:#}");
    assert_eq!(results[1]["code"], "tier_limit_reached", "{dropped:#}");
    assert_eq!(results[1]["file_id"], Value::Null, "{dropped:#}");
    let stats = expect_status(client.get("/v1/memory/admin/stats"), 200);
    let files = stats["files_bytes"].as_u64().unwrap();
    assert!(files <= 1024 * 1024, "{stats:#}");
    assert!(files >= big.len() as u64, "{stats:#}");
}
