//! JSON as indented `key: value` lines in document order: keys stay next to their values
//! (they carry the meaning), quotes and braces go. Arrays become `-` items.

use std::fmt::{self, Write};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::decode;
use crate::error::IngestError;
use crate::extracted::{Extracted, TextBuilder};
use crate::kind::Kind;
use crate::limits::Limits;

pub(super) fn extract(bytes: &[u8], limits: &Limits) -> Result<Extracted, IngestError> {
    let text = decode::decode_text(bytes);
    // serde_json stops at 128 levels of nesting, which also bounds `render`'s recursion.
    let value: Value = serde_json::from_str(text.trim_start_matches('\u{FEFF}'))
        .map_err(|error| IngestError::invalid(Kind::Json, error.to_string()))?;
    let mut rendered = String::new();
    render(&value, 0, &mut rendered, limits.max_chars);
    let mut builder = TextBuilder::new(limits.max_chars);
    builder.push(rendered.trim_end());
    Ok(builder.finish(Kind::Json, None))
}

/// Writes `value` at `indent` levels; stops early once `out` holds `budget` bytes (the
/// builder cuts to characters afterwards).
fn render(value: &Value, indent: usize, out: &mut String, budget: usize) {
    if out.len() > budget {
        return;
    }
    let padding = "  ".repeat(indent);
    match value {
        Value::Object(entries) => {
            for (key, item) in entries {
                match item {
                    Value::Object(inner) if !inner.is_empty() => {
                        let _ = writeln!(out, "{padding}{key}:");
                        render(item, indent + 1, out, budget);
                    }
                    Value::Array(inner) if !inner.is_empty() => {
                        let _ = writeln!(out, "{padding}{key}:");
                        render(item, indent + 1, out, budget);
                    }
                    scalar => {
                        let _ = writeln!(out, "{padding}{key}: {}", scalar_text(scalar));
                    }
                }
                if out.len() > budget {
                    return;
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Object(inner) if !inner.is_empty() => {
                        let _ = writeln!(out, "{padding}-");
                        render(item, indent + 1, out, budget);
                    }
                    Value::Array(inner) if !inner.is_empty() => {
                        let _ = writeln!(out, "{padding}-");
                        render(item, indent + 1, out, budget);
                    }
                    scalar => {
                        let _ = writeln!(out, "{padding}- {}", scalar_text(scalar));
                    }
                }
                if out.len() > budget {
                    return;
                }
            }
        }
        scalar => {
            let _ = writeln!(out, "{padding}{}", scalar_text(scalar));
        }
    }
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Scalar(text) => text.clone(),
        Value::Object(_) => "{}".to_owned(),
        Value::Array(_) => "[]".to_owned(),
    }
}

/// A JSON value whose objects keep their keys in document order (serde_json's `Value`
/// sorts them unless the workspace-wide `preserve_order` feature is on).
enum Value {
    Object(Vec<(String, Value)>),
    Array(Vec<Value>),
    String(String),
    /// A number, boolean or null, as written.
    Scalar(String),
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Scalar(value.to_string()))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Scalar(value.to_string()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Scalar(value.to_string()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Value::Scalar(value.to_string()))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Scalar("null".to_owned()))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Scalar("null".to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut sequence: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = sequence.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            entries.push((key, value));
        }
        Ok(Value::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_stay_together() {
        let json = br#"{"route": "A to B", "sailings": [{"depart": "07:40", "free": true}, 3], "none": {}}"#;
        let extracted = extract(json, &Limits::default()).unwrap();
        assert_eq!(
            extracted.text,
            "route: A to B\nsailings:\n  -\n    depart: 07:40\n    free: true\n  - 3\nnone: {}"
        );
    }

    #[test]
    fn invalid_json_is_an_error() {
        let error = extract(b"{\"a\":", &Limits::default()).unwrap_err();
        assert!(error.to_string().starts_with("not a valid JSON"));
    }
}
