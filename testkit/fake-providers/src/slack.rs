//! A fake Slack Web API: `GET /conversations.history` (channel, oldest and latest, exclusive
//! unless inclusive=true, limit, cursor) newest first with `has_more` and
//! `response_metadata.next_cursor`; `Authorization: Bearer xoxb-...` (a token in the query
//! string is not read); errors as HTTP 200 `{"ok": false, "error": ...}` (not_authed,
//! invalid_auth, channel_not_found, invalid_cursor, internal_error for a server fault);
//! rate limits as HTTP 429 with Retry-After: 1 and `{"ok": false, "error": "ratelimited"}`.
//!
//! A record's id is its message `ts` (when it was posted); an edit sets `edited.ts` and keeps
//! `ts`, so `oldest` does not see it, as in Slack. Deleted messages leave the history.

use std::collections::HashMap;

use axum::extract::{Query, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use sha2::Digest;

use super::{bearer, window, Admit, CallKind, Fake, FakeRecord, FakeServer, FaultKind, State};
use memvault_connectors::ProviderKind;

#[derive(Clone)]
struct Slack {
    fake: Fake,
    channel: String,
    team: String,
}

pub async fn start(records: usize) -> FakeServer {
    let token = format!(
        "xoxb-{:012}-{:012}-{}",
        rand::random::<u64>() % 1_000_000_000_000,
        rand::random::<u64>() % 1_000_000_000_000,
        hex::encode(rand::random::<[u8; 12]>())
    );
    let fake = Fake::new(ProviderKind::Slack, token.clone());
    for _ in 0..records {
        fake.add_in(ts_id, None);
    }
    let channel = format!("C{}", hex::encode_upper(rand::random::<[u8; 5]>()));
    let slack = Slack {
        fake: fake.clone(),
        channel: channel.clone(),
        team: format!("T{}", hex::encode_upper(rand::random::<[u8; 5]>())),
    };
    let router = Router::new()
        .route("/conversations.history", get(history))
        .with_state(slack);
    let mut credentials = Map::new();
    credentials.insert("token".into(), Value::String(token));
    FakeServer::serve(
        ProviderKind::Slack,
        router,
        fake,
        ts_id,
        credentials,
        move |_| json!({"channel_id": channel}),
    )
    .await
}

/// A message ts from the fake's clock: when it was posted.
pub fn ts_id(state: &mut State) -> String {
    ts(state.now())
}

fn ts(time: DateTime<Utc>) -> String {
    format!(
        "{}.{:06}",
        time.timestamp(),
        time.timestamp_subsec_micros().min(999_999)
    )
}

/// A ts (or an `oldest`/`latest` argument) in microseconds.
fn micros(ts: &str) -> Option<i64> {
    let (seconds, fraction) = ts.trim().split_once('.').unwrap_or((ts.trim(), ""));
    if fraction.len() > 6 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seconds: i64 = seconds.parse().ok()?;
    let fraction: i64 = format!("{fraction:0<6}").parse().ok()?;
    seconds.checked_mul(1_000_000)?.checked_add(fraction)
}

fn error(code: &str) -> Response {
    Json(json!({"ok": false, "error": code})).into_response()
}

fn rate_limited() -> Response {
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        Json(json!({"ok": false, "error": "ratelimited"})),
    )
        .into_response();
    response
        .headers_mut()
        .insert("retry-after", "1".parse().expect("a header value"));
    response
}

fn user_id(author: &str) -> String {
    let digest = sha2::Sha256::digest(author.as_bytes());
    format!("U{}", hex::encode_upper(&digest[..5]))
}

fn message(record: &FakeRecord, team: &str) -> Value {
    let user = user_id(&record.author);
    let mut message = json!({
        "type": "message",
        "user": user,
        "text": record.text,
        "ts": record.id,
        "team": team,
    });
    if record.version > 1 {
        message["edited"] = json!({"user": user, "ts": ts(record.modified)});
    }
    message
}

async fn history(
    AxumState(slack): AxumState<Slack>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let presented = bearer(&headers);
    let mut state = slack.fake.lock();
    match state.admit(
        CallKind::List,
        "/conversations.history",
        presented.as_deref(),
    ) {
        Admit::Ok => {}
        Admit::Unauthorized if presented.is_none() => return error("not_authed"),
        Admit::Unauthorized | Admit::Fault(FaultKind::Auth) => return error("invalid_auth"),
        Admit::Fault(FaultKind::RateLimit) => return rate_limited(),
        Admit::Fault(FaultKind::Server) => return error("internal_error"),
    }
    if params.get("channel") != Some(&slack.channel) {
        return error("channel_not_found");
    }
    let argument = |name: &str| params.get(name).filter(|value| !value.is_empty());
    let oldest = match argument("oldest").map(|value| micros(value)) {
        None => 0,
        Some(Some(oldest)) => oldest,
        Some(None) => return error("invalid_arguments"),
    };
    let latest = match argument("latest").map(|value| micros(value)) {
        None => None,
        Some(Some(latest)) => Some(latest),
        Some(None) => return error("invalid_arguments"),
    };
    let limit = match argument("limit").map(|value| value.parse::<i64>()) {
        None => 100,
        Some(Ok(limit)) => limit,
        Some(Err(_)) => return error("invalid_arguments"),
    };
    let inclusive = matches!(
        params.get("inclusive").map(|value| value.to_ascii_lowercase()),
        Some(value) if value == "1" || value == "true"
    );
    let mut messages: Vec<(i64, FakeRecord)> = state
        .records
        .iter()
        .filter(|record| !record.deleted)
        .filter_map(|record| micros(&record.id).map(|at| (at, record.clone())))
        .filter(|(at, _)| {
            let above = if inclusive {
                *at >= oldest
            } else {
                *at > oldest
            };
            let below = latest.is_none_or(|latest| {
                if inclusive {
                    *at <= latest
                } else {
                    *at < latest
                }
            });
            above && below
        })
        .collect();
    messages.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    let start = match argument("cursor") {
        None => 0,
        Some(cursor) => {
            let marker = base64::engine::general_purpose::STANDARD
                .decode(cursor)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok());
            let Some(at) = marker
                .as_deref()
                .and_then(|marker| marker.strip_prefix("next_ts:"))
                .and_then(micros)
            else {
                return error("invalid_cursor");
            };
            messages
                .iter()
                .position(|(ts, _)| *ts <= at)
                .unwrap_or(messages.len())
        }
    };
    let asked = usize::try_from(limit).ok().filter(|limit| *limit > 0);
    let (page, more) = window(&messages, start, asked);
    let next_cursor = if more {
        let next = &messages[start + page.len()].1.id;
        base64::engine::general_purpose::STANDARD.encode(format!("next_ts:{next}"))
    } else {
        String::new()
    };
    let messages: Vec<Value> = page
        .iter()
        .map(|(_, record)| message(record, &slack.team))
        .collect();
    Json(json!({
        "ok": true,
        "messages": messages,
        "has_more": more,
        "pin_count": 0,
        "response_metadata": {"next_cursor": next_cursor},
    }))
    .into_response()
}
