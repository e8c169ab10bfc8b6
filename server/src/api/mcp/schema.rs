//! The subset of JSON Schema the tools' argument schemas use, checked against a call's
//! arguments: the schema a client sees in `tools/list` is the one its arguments are held
//! to, so the two cannot drift apart.
//!
//! The schemas are derived from the tools' argument and result types ([`derived`]: the
//! utoipa schema of the type, its references inlined, since a tool's schema must stand
//! alone).
//!
//! Supported: `type` (object, string, integer, number, boolean, null, or a list of
//! them), `properties`, `required`, `additionalProperties: false`,
//! `minLength`/`maxLength` (characters), `minimum`/`maximum`, `enum`. Other keywords
//! (`description`, `default`, `format`, `pattern`) are documentation here; the tool's
//! constructor (the REST API's) checks what they describe itself.

use serde_json::{Map, Value};
use utoipa::openapi::{RefOr, Schema};
use utoipa::ToSchema;

/// `T`'s JSON Schema, standing alone: every `$ref` replaced by the schema it names, an
/// `allOf` (a flattened struct) merged into one object, and an optional reference
/// (`oneOf` of null and the type) turned into the type with `null` allowed.
pub fn derived<T: ToSchema>() -> Value {
    let mut components: Vec<(String, RefOr<Schema>)> = Vec::new();
    T::schemas(&mut components);
    let components: Map<String, Value> = components
        .into_iter()
        .map(|(name, schema)| (name, serde_json::to_value(schema).unwrap_or_default()))
        .collect();
    let root = serde_json::to_value(<T as utoipa::PartialSchema>::schema()).unwrap_or_default();
    standalone(root, &components, 0)
}

/// Deeper than this a reference is left as it is (a recursive type; none of the tools
/// has one).
const INLINE_DEPTH_MAX: usize = 16;

fn standalone(schema: Value, components: &Map<String, Value>, depth: usize) -> Value {
    let Value::Object(mut fields) = schema else {
        return schema;
    };
    if depth < INLINE_DEPTH_MAX {
        if let Some(target) = fields.get("$ref").and_then(Value::as_str) {
            let name = target.rsplit('/').next().unwrap_or_default();
            if let Some(component) = components.get(name) {
                return standalone(component.clone(), components, depth + 1);
            }
        }
    }
    if let Some(Value::Array(parts)) = fields.remove("allOf") {
        let mut merged = Map::new();
        merged.insert("type".to_owned(), Value::from("object"));
        let (mut properties, mut required) = (Map::new(), Vec::new());
        for part in parts {
            let part = standalone(part, components, depth + 1);
            if let Some(Value::Object(more)) = part.get("properties") {
                properties.extend(more.clone());
            }
            if let Some(Value::Array(more)) = part.get("required") {
                required.extend(more.iter().cloned());
            }
        }
        merged.insert("properties".to_owned(), Value::Object(properties));
        merged.insert("required".to_owned(), Value::Array(required));
        fields.extend(merged);
    }
    if let Some(Value::Array(choices)) = fields.get("oneOf") {
        let is_null = |choice: &Value| choice.get("type") == Some(&Value::from("null"));
        if let [first, second] = choices.as_slice() {
            if is_null(first) || is_null(second) {
                let other = if is_null(first) { second } else { first };
                let mut other = standalone(other.clone(), components, depth + 1);
                if let Some(kind) = other.get("type").and_then(Value::as_str) {
                    other["type"] = serde_json::json!([kind, "null"]);
                }
                fields.remove("oneOf");
                if let Value::Object(other) = other {
                    for (key, value) in other {
                        fields.entry(key).or_insert(value);
                    }
                }
            }
        }
    }
    for (key, value) in fields.iter_mut() {
        match key.as_str() {
            "properties" => {
                if let Value::Object(properties) = value {
                    for property in properties.values_mut() {
                        *property = standalone(property.take(), components, depth + 1);
                    }
                }
            }
            "items" | "additionalProperties" => {
                *value = standalone(value.take(), components, depth + 1);
            }
            _ => {}
        }
    }
    Value::Object(fields)
}

/// Checks `value` against `schema`; the error names the offending path and what is wrong.
pub fn check(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let expected: Vec<&str> = match schema.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !expected.is_empty() && !expected.iter().any(|kind| has_type(value, kind)) {
        let kinds: Vec<String> = expected.iter().map(|kind| article(kind)).collect();
        return Err(format!(
            "{path} must be {}, got {}",
            kinds.join(" or "),
            type_name(value)
        ));
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            let names: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(format!(
                "{path} must be one of {}, got {value}",
                names.join(", ")
            ));
        }
    }
    match value {
        Value::String(text) => check_length(schema, text, path),
        Value::Number(_) => check_range(schema, value, path),
        Value::Object(fields) => check_object(schema, fields, path),
        _ => Ok(()),
    }
}

fn check_object(schema: &Value, fields: &Map<String, Value>, path: &str) -> Result<(), String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if fields.get(required).is_none_or(Value::is_null) {
            return Err(format!("{path}.{required} is required"));
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (name, field) in fields {
        match properties.and_then(|properties| properties.get(name)) {
            // An explicit null means "not given" for an optional field.
            Some(_) if field.is_null() => {}
            Some(property) => check(property, field, &format!("{path}.{name}"))?,
            None if closed => {
                let known: Vec<&str> = properties
                    .map(|properties| properties.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                return Err(format!(
                    "{path}.{name} is not a known argument; known: {}",
                    known.join(", ")
                ));
            }
            None => {}
        }
    }
    Ok(())
}

fn check_length(schema: &Value, text: &str, path: &str) -> Result<(), String> {
    let characters = text.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
        if characters < min {
            return Err(format!("{path} must be at least {min} characters"));
        }
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
        if characters > max {
            return Err(format!(
                "{path} must be at most {max} characters, got {characters}"
            ));
        }
    }
    Ok(())
}

fn check_range(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let Some(number) = value.as_f64() else {
        return Ok(());
    };
    let min = schema.get("minimum").and_then(Value::as_f64);
    let max = schema.get("maximum").and_then(Value::as_f64);
    let below = min.is_some_and(|min| number < min);
    let above = max.is_some_and(|max| number > max);
    if below || above {
        let range = match (min, max) {
            (Some(min), Some(max)) => format!("between {min} and {max}"),
            (Some(min), None) => format!("at least {min}"),
            (None, Some(max)) => format!("at most {max}"),
            (None, None) => String::new(),
        };
        return Err(format!("{path} must be {range}, got {value}"));
    }
    Ok(())
}

fn has_type(value: &Value, expected: &str) -> bool {
    match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => as_integer(value).is_some(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// A JSON number with no fractional part (JSON Schema counts `5.0` as an integer).
pub fn as_integer(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        value
            .as_f64()
            .filter(|number| number.fract() == 0.0 && number.abs() < 9.0e15)
            .map(|number| number as i64)
    })
}

fn article(expected: &str) -> String {
    match expected {
        "object" | "array" | "integer" => format!("an {expected}"),
        "null" => "null".to_owned(),
        other => format!("a {other}"),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
