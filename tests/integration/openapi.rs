//! `/openapi.json` as tools read it: every secured operation documents the errors any
//! authenticated request can get, path parameters are named so tools can link operations,
//! and every `$ref` resolves. (The schemathesis run in `tests/clients/` checks the
//! description against the running server.)

use serde_json::Value;

use crate::support::{expect_status, Client};

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

fn document() -> Value {
    expect_status(Client::anonymous().get("/openapi.json"), 200)
}

fn operations(document: &Value) -> Vec<(String, String, Value)> {
    let paths = document["paths"].as_object().expect("openapi paths");
    let mut found = Vec::new();
    for (path, item) in paths {
        for method in METHODS {
            if let Some(operation) = item.get(method) {
                found.push((method.to_owned(), path.clone(), operation.clone()));
            }
        }
    }
    found
}

fn secured(operation: &Value) -> bool {
    operation["security"]
        .as_array()
        .is_some_and(|requirements| !requirements.is_empty())
}

#[test]
fn every_secured_operation_documents_401_422_and_429_with_retry_after() {
    let document = document();
    let mut missing = Vec::new();
    let mut secured_count = 0;
    for (method, path, operation) in operations(&document) {
        if !secured(&operation) {
            continue;
        }
        secured_count += 1;
        for status in ["401", "422", "429"] {
            if operation["responses"].get(status).is_none() {
                missing.push(format!("{method} {path}: {status}"));
            }
        }
    }
    assert!(
        secured_count > 40,
        "only {secured_count} secured operations"
    );
    assert!(
        missing.is_empty(),
        "undocumented error responses: {missing:#?}"
    );
    let too_many = &document["components"]["responses"]["TooManyRequests"];
    for header in [
        "Retry-After",
        "RateLimit-Limit",
        "RateLimit-Remaining",
        "RateLimit-Reset",
    ] {
        assert!(
            too_many["headers"].get(header).is_some(),
            "the 429 response does not document {header}: {too_many}"
        );
    }
}

#[test]
fn public_operations_take_no_key() {
    let document = document();
    for (method, path) in [
        ("get", "/v1/memory/health"),
        ("get", "/v1/status"),
        ("post", "/v1/pulse"),
        ("post", "/v1/track"),
    ] {
        let operation = &document["paths"][path][method];
        assert!(operation.is_object(), "{method} {path} is not described");
        assert!(!secured(operation), "{method} {path} asks for a key");
    }
}

#[test]
fn path_parameters_are_named_for_linking_never_id() {
    let document = document();
    let mut unnamed = Vec::new();
    for (method, path, operation) in operations(&document) {
        if path.contains("{id}") {
            unnamed.push(format!("{method} {path}: template"));
        }
        for parameter in operation["parameters"].as_array().into_iter().flatten() {
            if parameter["in"] == "path" && parameter["name"] == "id" {
                unnamed.push(format!("{method} {path}: parameter"));
            }
        }
    }
    assert!(
        unnamed.is_empty(),
        "path parameters named `id`: {unnamed:#?}"
    );
    let memory = "/v1/memory/collections/{collection}/memories/{memory_id}";
    assert!(document["paths"].get(memory).is_some(), "{memory} missing");
}

/// Every `$ref` in the document points at a component that exists.
#[test]
fn every_ref_resolves() {
    fn refs(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    found.push(target.clone());
                }
                map.values().for_each(|inner| refs(inner, found));
            }
            Value::Array(items) => items.iter().for_each(|inner| refs(inner, found)),
            _ => {}
        }
    }
    let document = document();
    let mut found = Vec::new();
    refs(&document, &mut found);
    assert!(!found.is_empty());
    let dangling: Vec<&String> = found
        .iter()
        .filter(|target| {
            let pointer = target.trim_start_matches('#');
            !target.starts_with("#/") || document.pointer(pointer).is_none()
        })
        .collect();
    assert!(dangling.is_empty(), "dangling $refs: {dangling:?}");
}

#[test]
fn no_content_responses_have_no_body() {
    let document = document();
    for (method, path, operation) in operations(&document) {
        if let Some(response) = operation["responses"].get("204") {
            assert!(
                response.get("content").is_none(),
                "{method} {path}: 204 documents a body"
            );
        }
    }
}
