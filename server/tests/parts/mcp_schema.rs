use serde_json::json;

use memvault_server::api::mcp::schema::*;
use serde_json::Value;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 5},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "mode": {"type": "string", "enum": ["hybrid", "text"]},
        },
        "required": ["query"],
        "additionalProperties": false,
    })
}

#[derive(serde::Serialize, utoipa::ToSchema)]
struct Inner {
    name: String,
}

#[derive(serde::Serialize, utoipa::ToSchema)]
#[allow(dead_code)]
enum Kind {
    One,
    Two,
}

#[derive(serde::Serialize, utoipa::ToSchema)]
struct Outer {
    #[serde(flatten)]
    inner: Inner,
    nested: Inner,
    kind: Option<Kind>,
    count: u32,
}

#[test]
fn a_derived_schema_stands_alone() {
    let schema = derived::<Outer>();
    let text = schema.to_string();
    assert!(!text.contains("$ref") && !text.contains("allOf") && !text.contains("oneOf"));
    assert_eq!(schema["type"], "object");
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for field in ["name", "nested", "count"] {
        assert!(required.contains(&field), "{field} in {schema}");
    }
    assert_eq!(
        schema["properties"]["nested"]["properties"]["name"]["type"],
        "string"
    );
    assert_eq!(
        schema["properties"]["kind"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(schema["properties"]["kind"]["enum"], json!(["One", "Two"]));
    check(
        &schema,
        &json!({"name": "a", "nested": {"name": "b"}, "count": 1}),
        "x",
    )
    .unwrap();
    check(
        &schema,
        &json!({"name": "a", "nested": {"name": "b"}, "count": 1, "kind": null}),
        "x",
    )
    .unwrap();
    let error = check(
        &schema,
        &json!({"name": "a", "nested": {}, "count": 1}),
        "x",
    )
    .unwrap_err();
    assert!(error.contains("x.nested.name is required"), "{error}");
}

#[test]
fn valid_arguments_pass_and_null_means_absent() {
    check(&schema(), &json!({"query": "a", "limit": 5.0}), "arguments").unwrap();
    check(&schema(), &json!({"query": "a", "mode": null}), "arguments").unwrap();
}

#[test]
fn each_violation_names_the_argument() {
    let cases = [
        (json!({}), "arguments.query is required"),
        (json!({"query": 3}), "arguments.query must be a string"),
        (json!({"query": ""}), "at least 1 characters"),
        (json!({"query": "abcdef"}), "at most 5 characters"),
        (json!({"query": "a", "limit": 0}), "between 1 and 50, got 0"),
        (json!({"query": "a", "limit": 1.5}), "must be an integer"),
        (json!({"query": "a", "mode": "x"}), "must be one of"),
        (
            json!({"query": "a", "other": 1}),
            "arguments.other is not a known",
        ),
        (json!([]), "arguments must be an object"),
    ];
    for (arguments, expected) in cases {
        let error = check(&schema(), &arguments, "arguments").unwrap_err();
        assert!(error.contains(expected), "{arguments}: {error}");
    }
}
