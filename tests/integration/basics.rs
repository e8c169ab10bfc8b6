//! Public endpoints, OpenAPI, authentication failures, error bodies, tenants and account.

use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{create_memory, expect_error, expect_status, new_tenant, unique, Client};

#[test]
fn health_is_public() {
    let body = expect_status(Client::anonymous().get("/v1/memory/health"), 200);
    assert_eq!(body, json!({"status": "healthy"}));
}

#[test]
fn status_reports_uptime_and_checks_without_tenant_data() {
    let client = new_tenant();
    let secret = unique("statusleak");
    create_memory(
        &client,
        &unique("col"),
        json!({"text": format!("private {secret}")}),
    );
    // The shared server checks itself every second; wait for at least one check.
    let mut body = Value::Null;
    for _ in 0..50 {
        body = expect_status(Client::anonymous().get("/v1/status"), 200);
        if body["checks_24h"].as_u64().unwrap_or(0) > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(body["status"], "operational", "{body}");
    assert!(body["checks_24h"].as_u64().unwrap() > 0, "{body}");
    assert_eq!(body["uptime_24h_percent"], 100.0);
    assert_eq!(body["recent_checks"][0]["ok"], true);
    assert!(body["incidents"].as_array().unwrap().is_empty());
    assert!(!body.to_string().contains(&secret));
}

#[test]
fn pageview_beacons_always_answer_204() {
    let anonymous = Client::anonymous();
    let bad_key = Client::new(&crate::support::shared().base_url, Some("mv_not_a_key"));
    for path in ["/v1/pulse", "/v1/track"] {
        let bodies: [(&[u8], &str); 5] = [
            (b"", "application/json"),
            (
                br#"{"path": "/pricing", "referrer": "https://example.com/"}"#,
                "application/json",
            ),
            (br#"{"path": "#, "application/json"),
            (b"\x00\xff\xfe", "application/octet-stream"),
            (&[b'x'; 100_000], "text/plain"),
        ];
        for (body, content_type) in bodies {
            assert_eq!(
                anonymous
                    .post_raw(path, body, content_type)
                    .status()
                    .as_u16(),
                204
            );
        }
        assert_eq!(bad_key.post(path, &json!({})).status().as_u16(), 204);
    }
}

#[test]
fn openapi_is_3_1_and_describes_every_route() {
    let document = expect_status(Client::anonymous().get("/openapi.json"), 200);
    assert!(document["openapi"].as_str().unwrap().starts_with("3.1"));
    assert_eq!(document["info"]["version"], "0.1.0");
    let paths = document["paths"].as_object().unwrap();
    for (path, methods) in [
        ("/v1/memory/health", &["get"][..]),
        ("/v1/status", &["get"]),
        ("/v1/pulse", &["post"]),
        ("/v1/track", &["post"]),
        ("/v1/memory/admin/tenants", &["post"]),
        ("/v1/memory/admin/me", &["get"]),
        ("/v1/memory/admin/stats", &["get"]),
        ("/v1/memory/collections", &["get", "post"]),
        (
            "/v1/memory/collections/{collection}",
            &["get", "put", "delete"],
        ),
        (
            "/v1/memory/collections/{collection}/memories",
            &["get", "post"],
        ),
        (
            "/v1/memory/collections/{collection}/memories/bulk",
            &["post"],
        ),
        (
            "/v1/memory/collections/{collection}/memories/{memory_id}",
            &["get", "patch", "delete"],
        ),
        (
            "/v1/memory/collections/{collection}/memories/{memory_id}/move",
            &["post"],
        ),
        (
            "/v1/memory/collections/{collection}/memories/{memory_id}/pin",
            &["post"],
        ),
        (
            "/v1/memory/collections/{collection}/memories/{memory_id}/archive",
            &["post"],
        ),
        ("/v1/memory/collections/{collection}/dedup", &["post"]),
        (
            "/v1/memory/collections/{collection}/archive-stale",
            &["post"],
        ),
        ("/v1/memory/collections/{collection}/health", &["get"]),
        ("/v1/memory/collections/{collection}/summary", &["get"]),
        ("/v1/memory/admin/memory-health", &["get"]),
        ("/v1/memory/admin/metrics", &["get"]),
        ("/v1/memory/admin/usage", &["get"]),
        ("/v1/memory/admin/connectors", &["get"]),
        ("/v1/memory/admin/connectors/status", &["get"]),
        ("/v1/memory/admin/analytics", &["get"]),
        ("/v1/memory/keys", &["get", "post"]),
        ("/v1/memory/keys/{key_id}", &["delete"]),
        ("/v1/memory/agents", &["get"]),
        ("/v1/memory/admin/rotate-key", &["post"]),
        ("/v1/memory/webhook/config", &["get", "put", "delete"]),
    ] {
        for method in methods {
            assert!(
                paths[path].get(*method).is_some(),
                "{method} {path} missing from /openapi.json"
            );
        }
    }
    let schemas = document["components"]["schemas"].as_object().unwrap();
    for schema in [
        "ErrorBody",
        "MemoryResponse",
        "CreateMemoryRequest",
        "CollectionResponse",
    ] {
        assert!(schemas.contains_key(schema), "schema {schema} missing");
    }
}

#[test]
fn bad_credentials_get_401_with_detail() {
    let tenant = new_tenant();
    let base = &crate::support::shared().base_url;
    let forged = format!("sk_{}", &tenant.key()[3..]);
    let cases: Vec<(&str, Option<String>)> = vec![
        ("missing", None),
        ("scheme only", Some("Bearer".to_owned())),
        ("basic scheme", Some(format!("Basic {}", tenant.key()))),
        ("unknown key", Some(format!("Bearer mv_{}", "0".repeat(40)))),
        ("wrong prefix", Some(format!("Bearer {forged}"))),
        ("garbage", Some("Bearer not a key".to_owned())),
    ];
    let http = reqwest::blocking::Client::new();
    for (case, header) in cases {
        for (method, path) in [
            (Method::GET, "/v1/memory/collections"),
            (Method::POST, "/v1/memory/collections/x/memories"),
            (Method::GET, "/v1/memory/admin/me"),
            (Method::GET, "/v1/memory/not-yet-a-route"),
        ] {
            let mut request = http
                .request(method.clone(), format!("{base}{path}"))
                .json(&json!({"text": "x"}));
            if let Some(header) = &header {
                request = request.header("authorization", header);
            }
            let detail = expect_error(request.send().unwrap(), 401);
            assert!(!detail.is_empty(), "{case}: {method} {path}");
        }
    }
}

#[test]
fn unknown_routes_and_methods_answer_with_detail() {
    let client = new_tenant();
    let detail = expect_error(client.get("/v1/memory/not-yet-a-route"), 404);
    assert!(detail.contains("no route"), "{detail}");
    expect_error(
        client
            .request(Method::PUT, "/v1/memory/health")
            .send()
            .unwrap(),
        405,
    );
}

#[test]
fn admin_creates_tenants_with_a_key_shown_once() {
    let admin = Client::admin();
    let name = unique("tenant");
    let body = expect_status(
        admin.post(
            "/v1/memory/admin/tenants",
            &json!({"name": name, "email": format!("{name}@example.com")}),
        ),
        201,
    );
    assert_eq!(body["name"], name.as_str());
    assert_eq!(body["tier"], "free");
    assert_eq!(body["admin"], false);
    assert!(body["id"].as_str().unwrap().starts_with("ten_"));
    let key = body["api_key"].as_str().unwrap();
    assert!(key.starts_with("mv_"));
    let tenant = Client::new(&crate::support::shared().base_url, Some(key));
    let me = expect_status(tenant.get("/v1/memory/admin/me"), 200);
    assert_eq!(me["name"], name.as_str());
    assert_eq!(me["email"], format!("{name}@example.com"));
    assert_eq!(me["limits"]["bulk_max_items"], 100);
    assert!(
        !me.to_string().contains(key),
        "the key must not be shown again"
    );
    // Same email again: conflict. A non-admin tenant may not create tenants.
    expect_error(
        admin.post(
            "/v1/memory/admin/tenants",
            &json!({"name": "again", "email": format!("{name}@example.com")}),
        ),
        409,
    );
    expect_error(
        tenant.post(
            "/v1/memory/admin/tenants",
            &json!({"name": "x", "email": "x@example.com"}),
        ),
        403,
    );
}

#[test]
fn tenant_creation_validates_its_body() {
    let admin = Client::admin();
    for body in [
        json!({}),
        json!({"name": "x"}),
        json!({"name": "x", "email": "not-an-email"}),
        json!({"name": "", "email": "a@example.com"}),
        json!({"name": "x", "email": "b@example.com", "admin": "yes"}),
        json!({"name": "x", "email": "c@example.com", "extra": 1}),
    ] {
        expect_error(admin.post("/v1/memory/admin/tenants", &body), 422);
    }
}

#[test]
fn stats_count_collections_memories_and_storage() {
    let client = new_tenant();
    let (first, second) = (unique("col"), unique("col"));
    for (collection, text) in [(&first, "one"), (&first, "two"), (&second, "three")] {
        create_memory(&client, collection, json!({"text": text}));
    }
    let stats = expect_status(client.get("/v1/memory/admin/stats"), 200);
    assert_eq!(stats["collections"], 2);
    assert_eq!(stats["memories"], 3);
    assert_eq!(stats["added_7d"], 3);
    assert_eq!(stats["added_30d"], 3);
    assert!(stats["storage_bytes"].as_u64().unwrap() > 3 * 384 * 4);
}
