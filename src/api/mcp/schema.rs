//! The subset of JSON Schema the tools' argument schemas use, checked against a call's
//! arguments: the schema a client sees in `tools/list` is the one its arguments are held
//! to, so the two cannot drift apart.
//!
//! Supported: `type` (object, string, integer, number, boolean), `properties`,
//! `required`, `additionalProperties: false`, `minLength`/`maxLength` (characters),
//! `minimum`/`maximum`, `enum`. Other keywords (`description`, `default`, `format`,
//! `pattern`) are documentation here; the tool checks what they describe itself.

use serde_json::{Map, Value};

/// Checks `value` against `schema`; the error names the offending path and what is wrong.
pub fn check(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    if let Some(expected) = schema.get("type").and_then(Value::as_str) {
        if !has_type(value, expected) {
            return Err(format!(
                "{path} must be {}, got {}",
                article(expected),
                type_name(value)
            ));
        }
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
}
