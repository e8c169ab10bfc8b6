//! What the Drive and Gmail fakes share: Google's JSON error shape, the bearer check with
//! its two 401 answers (reason `required` without a credential, `authError` with a refused
//! one), the rate-limit answer (403 with the API's reason, no Retry-After) and the server
//! fault (500 backendError).

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::{bearer, Admit, CallKind, FaultKind, State};

/// A fresh OAuth access token in Google's shape.
pub fn new_token() -> String {
    format!("ya29.a0{}", hex::encode(rand::random::<[u8; 24]>()))
}

/// Google's error body: `{"error": {"code", "message", "errors": [{..., "reason"}], "status"}}`.
pub fn error(status: StatusCode, reason: &str, message: &str, domain: &str) -> Response {
    let code = status.as_u16();
    let status_name = match code {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        500 => "INTERNAL",
        _ => "UNKNOWN",
    };
    let body = json!({"error": {
        "code": code,
        "message": message,
        "errors": [{"message": message, "domain": domain, "reason": reason}],
        "status": status_name,
    }});
    (status, Json(body)).into_response()
}

/// 400 invalid for a parameter the fake cannot read.
pub fn invalid(parameter: &str, message: &str) -> Response {
    let body = json!({"error": {
        "code": 400,
        "message": message,
        "errors": [{"message": message, "domain": "global", "reason": "invalid",
                    "location": parameter, "locationType": "parameter"}],
        "status": "INVALID_ARGUMENT",
    }});
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

/// Logs the call and answers its refusal, if it gets one (None: serve it): an injected
/// fault or an auth failure. `rate_limit_reason` is the API's (`userRateLimitExceeded` for Drive,
/// `rateLimitExceeded` for Gmail).
pub fn admit(
    state: &mut State,
    kind: CallKind,
    path: &str,
    headers: &HeaderMap,
    rate_limit_reason: &str,
) -> Option<Response> {
    let presented = bearer(headers);
    match state.admit(kind, path, presented.as_deref()) {
        Admit::Ok => None,
        Admit::Unauthorized if presented.is_none() => Some(error(
            StatusCode::UNAUTHORIZED,
            "required",
            "Request is missing required authentication credential.",
            "global",
        )),
        Admit::Unauthorized | Admit::Fault(FaultKind::Auth) => {
            let mut response = error(
                StatusCode::UNAUTHORIZED,
                "authError",
                "Request had invalid authentication credentials.",
                "global",
            );
            response.headers_mut().insert(
                "www-authenticate",
                "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\""
                    .parse()
                    .expect("a header value"),
            );
            Some(response)
        }
        Admit::Fault(FaultKind::RateLimit) => {
            let message = if rate_limit_reason == "userRateLimitExceeded" {
                "User Rate Limit Exceeded"
            } else {
                "Rate Limit Exceeded"
            };
            Some(error(
                StatusCode::FORBIDDEN,
                rate_limit_reason,
                message,
                "usageLimits",
            ))
        }
        Admit::Fault(FaultKind::Server) => Some(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "backendError",
            "Internal Error",
            "global",
        )),
    }
}

/// A query parameter's value, if given.
pub fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// `maxResults` / `pageSize`: absent (the default), or an integer in `1..=max`.
pub fn page_size(raw: Option<&str>, default: usize, max: usize) -> Option<usize> {
    match raw {
        None => Some(default),
        Some(raw) => raw
            .parse::<usize>()
            .ok()
            .filter(|size| (1..=max).contains(size)),
    }
}

/// A JSON value with only the fields a Google partial-response mask names
/// ("nextPageToken,files(id,owners(displayName))"); `*` keeps everything.
pub fn project(value: &Value, mask: &Mask) -> Value {
    match (mask, value) {
        (Mask::All, _) => value.clone(),
        (Mask::Fields(_), Value::Array(items)) => {
            Value::Array(items.iter().map(|item| project(item, mask)).collect())
        }
        (Mask::Fields(fields), Value::Object(object)) if !fields.contains_key("*") => {
            Value::Object(
                fields
                    .iter()
                    .filter_map(|(name, sub)| {
                        object
                            .get(name)
                            .map(|found| (name.clone(), project(found, sub)))
                    })
                    .collect(),
            )
        }
        _ => value.clone(),
    }
}

/// A parsed partial-response mask.
#[derive(Debug, Clone, PartialEq)]
pub enum Mask {
    All,
    Fields(std::collections::BTreeMap<String, Mask>),
}

/// Parses a `fields` mask; None when its parentheses do not balance.
pub fn parse_mask(mask: &str) -> Option<Mask> {
    let chars: Vec<char> = mask.chars().collect();
    let (fields, end) = parse_fields(&chars, 0, false)?;
    (end == chars.len()).then_some(Mask::Fields(fields))
}

fn parse_fields(
    chars: &[char],
    mut pos: usize,
    nested: bool,
) -> Option<(std::collections::BTreeMap<String, Mask>, usize)> {
    let mut fields = std::collections::BTreeMap::new();
    let mut name = String::new();
    while pos < chars.len() {
        match chars[pos] {
            '(' => {
                let (sub, end) = parse_fields(chars, pos + 1, true)?;
                fields.insert(name.trim().to_owned(), Mask::Fields(sub));
                name.clear();
                pos = end;
                continue;
            }
            ')' if nested => {
                if !name.trim().is_empty() {
                    fields.insert(name.trim().to_owned(), Mask::All);
                }
                return Some((fields, pos + 1));
            }
            ')' => return None,
            ',' => {
                if !name.trim().is_empty() {
                    fields.insert(name.trim().to_owned(), Mask::All);
                }
                name.clear();
            }
            c => name.push(c),
        }
        pos += 1;
    }
    if nested {
        return None;
    }
    if !name.trim().is_empty() {
        fields.insert(name.trim().to_owned(), Mask::All);
    }
    Some((fields, pos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_keep_what_they_name() {
        let mask = parse_mask("nextPageToken,files(id,owners(displayName)),kind").unwrap();
        let value = json!({"kind": "k", "nextPageToken": "t", "other": 1, "files": [
            {"id": "a", "name": "n", "owners": [{"displayName": "Ada", "emailAddress": "e"}]},
        ]});
        assert_eq!(
            project(&value, &mask),
            json!({"kind": "k", "nextPageToken": "t", "files": [
                {"id": "a", "owners": [{"displayName": "Ada"}]},
            ]})
        );
        assert_eq!(parse_mask("files(id"), None);
        assert_eq!(parse_mask("files)"), None);
    }
}
