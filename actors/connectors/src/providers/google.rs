//! What Drive and Gmail share: a GET with the connection's OAuth access token as a bearer,
//! and Google's JSON error shape (`{"error": {"code", "message", "errors": [{"reason"}],
//! "status"}}`) judged in the engine's terms: 401 unauthorized; 429, or 403 with reason
//! `userRateLimitExceeded` / `rateLimitExceeded`, rate limited (Google sends no
//! Retry-After, so the client's back-off applies); 5xx transient; any other 4xx invalid.
//! The token is refreshed by the service before a sync, never here.

use serde_json::Value;

use crate::http::Answer;
use crate::provider::{Context, ProviderError, ProviderKind};

/// The longest part of Google's error message kept in an error.
const MESSAGE_CHARS: usize = 300;

/// GETs `url` with `query` and answers the body as JSON.
pub(crate) async fn get_json(
    cx: &Context<'_>,
    kind: ProviderKind,
    url: &str,
    query: &[(&str, String)],
) -> Result<Value, ProviderError> {
    get(cx, kind, url, query, |answer| {
        judge(&answer)?;
        // Checked inside the retry loop: a truncated or garbled answer is worth another try.
        answer.json()
    })
    .await
}

/// GETs `url` with `query` and answers the body's bytes (file contents, exports).
pub(crate) async fn get_bytes(
    cx: &Context<'_>,
    kind: ProviderKind,
    url: &str,
    query: &[(&str, String)],
) -> Result<Vec<u8>, ProviderError> {
    get(cx, kind, url, query, |answer| {
        judge(&answer)?;
        Ok(answer.body)
    })
    .await
}

async fn get<T>(
    cx: &Context<'_>,
    kind: ProviderKind,
    url: &str,
    query: &[(&str, String)],
    read: impl Fn(Answer) -> Result<T, ProviderError>,
) -> Result<T, ProviderError> {
    let token = cx
        .credentials
        .token()
        .ok_or_else(|| ProviderError::Unauthorized("the connection has no token".to_owned()))?;
    cx.http
        .call(
            kind,
            &cx.pace_key(kind),
            |client| client.get(url).query(query).bearer_auth(token),
            read,
        )
        .await
}

/// Google's answer in the engine's terms (see the module docs).
pub(crate) fn judge(answer: &Answer) -> Result<(), ProviderError> {
    let status = answer.status.as_u16();
    if answer.status.is_success() {
        return Ok(());
    }
    let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    let error = &body["error"];
    let reason = error["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|entry| entry["reason"].as_str())
        .unwrap_or_default();
    // Only Google's own message, never the raw body: it is short and holds no credential.
    let message: String = error["message"]
        .as_str()
        .or_else(|| error.as_str())
        .unwrap_or("no error message")
        .chars()
        .take(MESSAGE_CHARS)
        .collect();
    let described = if reason.is_empty() {
        format!("HTTP {status}: {message}")
    } else {
        format!("HTTP {status} {reason}: {message}")
    };
    Err(match status {
        401 => ProviderError::Unauthorized(described),
        429 => ProviderError::RateLimited {
            retry_after: answer.retry_after(),
        },
        403 if matches!(reason, "userRateLimitExceeded" | "rateLimitExceeded") => {
            ProviderError::RateLimited {
                retry_after: answer.retry_after(),
            }
        }
        500..=599 => ProviderError::Transient(described),
        _ => ProviderError::Invalid(described),
    })
}

/// A string for a `q` literal in single quotes: backslashes and quotes escaped.
pub(crate) fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        if matches!(c, '\'' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderMap;
    use reqwest::StatusCode;
    use serde_json::json;

    use super::*;

    fn answer(status: u16, body: Value) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            headers: HeaderMap::new(),
            body: serde_json::to_vec(&body).unwrap(),
        }
    }

    fn google_error(status: u16, reason: &str) -> Value {
        json!({"error": {"code": status, "message": "Something", "errors": [
            {"message": "Something", "domain": "global", "reason": reason}
        ]}})
    }

    #[test]
    fn google_errors_map_to_the_engine_s_terms() {
        assert!(judge(&answer(200, json!({}))).is_ok());
        assert!(matches!(
            judge(&answer(401, google_error(401, "authError"))),
            Err(ProviderError::Unauthorized(_))
        ));
        for reason in ["userRateLimitExceeded", "rateLimitExceeded"] {
            assert_eq!(
                judge(&answer(403, google_error(403, reason))),
                Err(ProviderError::RateLimited { retry_after: None })
            );
        }
        assert!(matches!(
            judge(&answer(429, json!({}))),
            Err(ProviderError::RateLimited { .. })
        ));
        assert!(matches!(
            judge(&answer(
                403,
                google_error(403, "insufficientFilePermissions")
            )),
            Err(ProviderError::Invalid(_))
        ));
        assert!(matches!(
            judge(&answer(500, google_error(500, "backendError"))),
            Err(ProviderError::Transient(_))
        ));
        assert!(matches!(
            judge(&answer(503, json!("not an object"))),
            Err(ProviderError::Transient(_))
        ));
        assert!(matches!(
            judge(&answer(404, Value::Null)),
            Err(ProviderError::Invalid(_))
        ));
    }

    #[test]
    fn q_literals_are_escaped() {
        assert_eq!(quoted("abc"), "'abc'");
        assert_eq!(quoted("it's"), r"'it\'s'");
        assert_eq!(quoted(r"a\b'"), r"'a\\b\''");
    }
}
