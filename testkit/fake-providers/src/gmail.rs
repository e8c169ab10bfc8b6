//! A fake Gmail API: `GET /gmail/v1/users/me/messages` (q: `after:` / `before:` in epoch
//! seconds against the message's internalDate, `from:`, `subject:`, bare words, `-`
//! negation; maxResults 1..=500; pageToken; includeSpamTrash) newest first, answering
//! `{"resultSizeEstimate": 0}` alone when nothing matches; and
//! `GET /gmail/v1/users/me/messages/{id}` (`format=full`, the default: headers and a
//! multipart/alternative payload with base64url text/plain and text/html parts; `metadata`,
//! `minimal`). A message's internalDate is the record's creation time: messages cannot be
//! edited, only deleted, which moves them to TRASH and out of the listing. Bearer tokens;
//! 401 Google errors; rate limit 403 rateLimitExceeded without Retry-After; server fault
//! 500 backendError; a user other than `me` gets 403.

use axum::extract::{Path, Query, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::google::{self, admit, invalid, param};
use super::{window, CallKind, Fake, FakeRecord, FakeServer, State};
use memvault_connectors::ProviderKind;

const ADDRESS: &str = "reader@example.com";
const RATE_LIMIT_REASON: &str = "rateLimitExceeded";
/// Page tokens are 20-digit numbers: this plus the offset.
const TOKEN_BASE: u64 = 10_000_000_000_000_000_000;

pub async fn start(records: usize) -> FakeServer {
    let token = google::new_token();
    let fake = Fake::new(ProviderKind::Gmail, token.clone());
    for _ in 0..records {
        fake.add_in(message_id, None);
    }
    let router = Router::new()
        .route("/gmail/v1/users/{user}/messages", get(list))
        .route("/gmail/v1/users/{user}/messages/{id}", get(message))
        .with_state(fake.clone());
    let mut credentials = Map::new();
    credentials.insert("token".into(), Value::String(token));
    FakeServer::serve(
        ProviderKind::Gmail,
        router,
        fake,
        message_id,
        credentials,
        |_| json!({}),
    )
    .await
}

/// Gmail's id shape: 16 hex digits, the receipt time in ms and a random tail.
pub fn message_id(state: &mut State) -> String {
    let n = state.next_number();
    let millis = chrono::Utc::now().timestamp_millis();
    format!(
        "{millis:011x}{:05x}",
        (n as u32 ^ rand::random::<u32>()) & 0xfffff
    )
}

fn forbidden_user(user: &str) -> Option<Response> {
    (user != "me" && user != ADDRESS).then(|| {
        google::error(
            StatusCode::FORBIDDEN,
            "forbidden",
            &format!("Delegation denied for {ADDRESS}"),
            "global",
        )
    })
}

fn internal_date(record: &FakeRecord) -> i64 {
    record.created.timestamp_millis()
}

fn sender(record: &FakeRecord) -> String {
    let address = record.author.to_lowercase().replace(' ', ".");
    format!("{} <{address}@example.org>", record.author)
}

/// Gmail's search operators the provider sends; every term must hold.
fn predicate(q: &str) -> Result<Vec<(bool, Term)>, String> {
    q.split_whitespace()
        .filter(|term| !term.eq_ignore_ascii_case("and"))
        .map(|term| {
            let (negated, term) = match term.strip_prefix('-') {
                Some(rest) if !rest.is_empty() => (true, rest),
                _ => (false, term),
            };
            let parsed = match term.split_once(':') {
                Some((operator, value)) => {
                    let value = value.trim_matches('"');
                    match operator.to_ascii_lowercase().as_str() {
                        "after" | "before" => {
                            let seconds: i64 = value
                                .parse()
                                .map_err(|_| format!("{operator}:{value} is not epoch seconds"))?;
                            if operator.eq_ignore_ascii_case("after") {
                                Term::After(seconds * 1000)
                            } else {
                                Term::Before(seconds * 1000)
                            }
                        }
                        "from" => Term::From(value.to_lowercase()),
                        "subject" => Term::Subject(value.to_lowercase()),
                        other => return Err(format!("this fake does not model {other}:")),
                    }
                }
                None => Term::Word(term.trim_matches('"').to_lowercase()),
            };
            Ok((negated, parsed))
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
enum Term {
    /// Received after these epoch ms (exclusive).
    After(i64),
    Before(i64),
    From(String),
    Subject(String),
    Word(String),
}

impl Term {
    fn holds(&self, record: &FakeRecord) -> bool {
        match self {
            Term::After(millis) => internal_date(record) > *millis,
            Term::Before(millis) => internal_date(record) < *millis,
            Term::From(part) => sender(record).to_lowercase().contains(part),
            Term::Subject(part) => record.title.to_lowercase().contains(part),
            Term::Word(word) => format!("{} {} {}", record.title, record.text, sender(record))
                .to_lowercase()
                .contains(word),
        }
    }
}

async fn list(
    AxumState(fake): AxumState<Fake>,
    Path(user): Path<String>,
    headers: HeaderMap,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let mut state = fake.lock();
    let path = format!("/gmail/v1/users/{user}/messages");
    if let Some(refused) = admit(
        &mut state,
        CallKind::List,
        &path,
        &headers,
        RATE_LIMIT_REASON,
    ) {
        return refused;
    }
    if let Some(refused) = forbidden_user(&user) {
        return refused;
    }
    let terms = match predicate(param(&params, "q").unwrap_or_default()) {
        Ok(terms) => terms,
        Err(reason) => return invalid("q", &format!("Invalid query: {reason}")),
    };
    let Some(size) = google::page_size(param(&params, "maxResults"), 100, 500) else {
        return invalid("maxResults", "Invalid value");
    };
    let include_trash = param(&params, "includeSpamTrash") == Some("true");
    let mut messages: Vec<&FakeRecord> = state
        .records
        .iter()
        .filter(|record| include_trash || !record.deleted)
        .filter(|record| {
            terms
                .iter()
                .all(|(negated, term)| term.holds(record) != *negated)
        })
        .collect();
    messages.sort_by(|a, b| {
        internal_date(b)
            .cmp(&internal_date(a))
            .then_with(|| b.id.cmp(&a.id))
    });
    let start = match param(&params, "pageToken") {
        None => 0,
        Some(token) => match token
            .parse::<u64>()
            .ok()
            .filter(|_| token.len() == 20)
            .and_then(|token| token.checked_sub(TOKEN_BASE))
        {
            Some(offset) => offset as usize,
            None => return invalid("pageToken", "Invalid pageToken"),
        },
    };
    let (page, more) = window(&messages, start, Some(size));
    let mut out = json!({"resultSizeEstimate": messages.len()});
    if !page.is_empty() {
        out["messages"] = page
            .iter()
            .map(|record| json!({"id": record.id, "threadId": record.id}))
            .collect();
    }
    if more {
        out["nextPageToken"] =
            Value::String((TOKEN_BASE + (start + page.len()) as u64).to_string());
    }
    Json(out).into_response()
}

async fn message(
    AxumState(fake): AxumState<Fake>,
    Path((user, id)): Path<(String, String)>,
    headers: HeaderMap,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let mut state = fake.lock();
    let path = format!("/gmail/v1/users/{user}/messages/{id}");
    if let Some(refused) = admit(
        &mut state,
        CallKind::Content,
        &path,
        &headers,
        RATE_LIMIT_REASON,
    ) {
        return refused;
    }
    if let Some(refused) = forbidden_user(&user) {
        return refused;
    }
    let format = param(&params, "format")
        .unwrap_or("full")
        .to_ascii_lowercase();
    if !matches!(format.as_str(), "full" | "metadata" | "minimal") {
        return invalid("format", "Invalid value for format");
    }
    let Some(record) = state.records.iter().find(|record| record.id == id) else {
        return google::error(
            StatusCode::NOT_FOUND,
            "notFound",
            "Requested entity was not found.",
            "global",
        );
    };
    Json(render(record, &format)).into_response()
}

fn render(record: &FakeRecord, format: &str) -> Value {
    let labels = if record.deleted {
        json!(["TRASH"])
    } else {
        json!(["INBOX", "UNREAD", "CATEGORY_PERSONAL"])
    };
    let mut message = json!({
        "id": record.id, "threadId": record.id, "labelIds": labels,
        "snippet": escape_html(&record.text.chars().take(140).collect::<String>()),
        "internalDate": internal_date(record).to_string(),
        "sizeEstimate": record.text.len() * 2 + 600,
    });
    if format == "minimal" {
        return message;
    }
    let headers = json!([
        {"name": "Delivered-To", "value": ADDRESS},
        {"name": "MIME-Version", "value": "1.0"},
        {"name": "Date", "value": record.created.to_rfc2822()},
        {"name": "Message-ID", "value": format!("<{}@mail.fake.test>", record.id)},
        {"name": "Subject", "value": record.title},
        {"name": "From", "value": sender(record)},
        {"name": "To", "value": ADDRESS},
        {"name": "Content-Type", "value": format!("multipart/alternative; boundary=\"{}\"", record.id)},
    ]);
    let mut payload = json!({"partId": "", "mimeType": "multipart/alternative", "filename": "",
                             "headers": headers, "body": {"size": 0}});
    if format == "full" {
        let html = format!("<div dir=\"ltr\">{}</div>\r\n", escape_html(&record.text));
        let parts: Vec<Value> = [("text/plain", format!("{}\r\n", record.text)), ("text/html", html)]
            .into_iter()
            .enumerate()
            .map(|(index, (mime, data))| {
                json!({
                    "partId": index.to_string(), "mimeType": mime, "filename": "",
                    "headers": [{"name": "Content-Type", "value": format!("{mime}; charset=\"UTF-8\"")}],
                    // Padded base64url, as Gmail sends it.
                    "body": {"size": data.len(),
                             "data": base64::engine::general_purpose::URL_SAFE.encode(&data)},
                })
            })
            .collect();
        payload["parts"] = Value::Array(parts);
    }
    message["payload"] = payload;
    message
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_reads_what_the_provider_sends() {
        let terms = predicate("from:ada -subject:\"budget\" after:1714557599").unwrap();
        assert_eq!(
            terms,
            vec![
                (false, Term::From("ada".into())),
                (true, Term::Subject("budget".into())),
                (false, Term::After(1_714_557_599_000)),
            ]
        );
        assert!(predicate("after:2024/01/01").is_err());
        assert!(predicate("in:chats").is_err());
        assert_eq!(predicate("").unwrap(), vec![]);
    }
}
