//! JSON as indented `key: value` lines: keys stay next to their values (they carry the
//! meaning), quotes and braces go. Arrays become `-` items.

use std::fmt::Write;

use serde_json::Value;

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
        Value::Object(map) => {
            for (key, item) in map {
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
        Value::Null => "null".to_owned(),
        Value::Object(_) => "{}".to_owned(),
        Value::Array(_) => "[]".to_owned(),
        other => other.to_string(),
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
