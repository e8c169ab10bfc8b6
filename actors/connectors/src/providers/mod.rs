//! One small file per provider; [`provider`] picks it by kind.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::provider::{Provider, ProviderKind};

pub mod hubspot;
pub mod linear;
pub mod slack;

/// The provider implementation of `kind`.
pub fn provider(kind: ProviderKind) -> Option<&'static dyn Provider> {
    match kind {
        ProviderKind::Linear => Some(&linear::Linear),
        ProviderKind::Slack => Some(&slack::Slack),
        ProviderKind::Hubspot => Some(&hubspot::Hubspot),
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

/// A short title from a text: its first non-blank line, at most `max` characters (an
/// ellipsis marks a cut); None when the text is blank.
pub fn first_line(text: &str, max: usize) -> Option<String> {
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    if line.chars().count() <= max {
        return Some(line.to_owned());
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    Some(format!("{}…", cut.trim_end()))
}

/// A provider's free-form error text made safe to keep: at most 200 characters, with every
/// secret of the connection's credentials replaced.
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut clean = text.to_owned();
    for secret in secrets {
        if !secret.is_empty() {
            clean = clean.replace(secret.as_str(), "<redacted>");
        }
    }
    clean.chars().take(200).collect()
}

/// A provider's error code (Slack's `error`, HubSpot's `category`) kept to the characters
/// such codes use, so nothing else from an answer reaches an error text.
pub fn code_of(value: &Value) -> Option<String> {
    let code: String = value
        .as_str()?
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .take(64)
        .collect();
    (!code.is_empty()).then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_line_is_short_and_cut_on_a_character() {
        assert_eq!(
            first_line("\n  hello there \nmore", 80).as_deref(),
            Some("hello there")
        );
        assert_eq!(first_line("   \n ", 80), None);
        assert_eq!(first_line("ééééé", 3).as_deref(), Some("éé…"));
    }

    #[test]
    fn scrub_removes_secrets() {
        let text = scrub("bad token xoxb-123 here", &["xoxb-123".to_owned()]);
        assert_eq!(text, "bad token <redacted> here");
    }

    #[test]
    fn codes_keep_only_code_characters() {
        assert_eq!(
            code_of(&serde_json::json!("invalid_auth")).as_deref(),
            Some("invalid_auth")
        );
        assert_eq!(
            code_of(&serde_json::json!("a b<c>")).as_deref(),
            Some("abc")
        );
        assert_eq!(code_of(&serde_json::json!(3)), None);
    }
}
