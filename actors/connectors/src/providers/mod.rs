//! One small file per provider; [`provider`] picks it by kind.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::provider::{Provider, ProviderKind};

pub mod linear;

/// The provider implementation of `kind`.
pub fn provider(kind: ProviderKind) -> Option<&'static dyn Provider> {
    match kind {
        ProviderKind::Linear => Some(&linear::Linear),
        _ => None,
    }
}

/// A JSON time: an RFC 3339 string, or epoch milliseconds (a number or a numeric string).
pub fn parse_time(value: &Value) -> Option<DateTime<Utc>> {
    match value {
        Value::String(text) => DateTime::parse_from_rfc3339(text.trim())
            .map(|time| time.with_timezone(&Utc))
            .ok()
            .or_else(|| {
                text.trim()
                    .parse::<i64>()
                    .ok()
                    .and_then(DateTime::from_timestamp_millis)
            }),
        Value::Number(number) => number.as_i64().and_then(DateTime::from_timestamp_millis),
        _ => None,
    }
}

/// A non-empty trimmed string.
pub fn text_of(value: &Value) -> Option<String> {
    value
        .as_str()
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}
