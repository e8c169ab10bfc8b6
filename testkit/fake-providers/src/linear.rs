//! A fake Linear GraphQL endpoint: `POST /graphql` answering the `issues` query (first,
//! after, orderBy updatedAt, filter updatedAt gte/gt, includeArchived) newest first with
//! nodes and pageInfo; `Authorization: <lin_api_ key>` without Bearer; errors as HTTP 400
//! with `extensions.code` (AUTHENTICATION_ERROR, RATELIMITED with Retry-After: 1), server
//! faults as 500 INTERNAL_SERVER_ERROR.

use axum::extract::State as AxumState;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use super::{uuid_id, window, Admit, CallKind, Fake, FakeRecord, FakeServer, FaultKind};
use memvault_connectors::ProviderKind;

pub async fn start(records: usize) -> FakeServer {
    let token = format!("lin_api_{}", hex::encode(rand::random::<[u8; 16]>()));
    let fake = Fake::new(ProviderKind::Linear, token.clone());
    for _ in 0..records {
        fake.add_in(uuid_id, None);
    }
    let router = Router::new()
        .route("/graphql", post(graphql))
        .with_state(fake.clone());
    let mut credentials = Map::new();
    credentials.insert("token".into(), Value::String(token));
    FakeServer::serve(
        ProviderKind::Linear,
        router,
        fake,
        uuid_id,
        credentials,
        |_| json!({}),
    )
    .await
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    let mut response = (
        status,
        Json(json!({"errors": [{"message": message, "extensions": {"code": code}}]})),
    )
        .into_response();
    if code == "RATELIMITED" {
        response
            .headers_mut()
            .insert("retry-after", "1".parse().expect("a header value"));
    }
    response
}

async fn graphql(
    AxumState(fake): AxumState<Fake>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let query = body["query"].as_str().unwrap_or_default().to_owned();
    let variables = body["variables"].clone();
    let kind = if query.contains("issues(") {
        CallKind::List
    } else {
        CallKind::Meta
    };
    let presented = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .map(str::to_owned);
    let mut state = fake.lock();
    if let Some(value) = presented.as_deref() {
        if value.starts_with("Bearer lin_api_") {
            state.admit(kind, "/graphql", None);
            return error(
                StatusCode::BAD_REQUEST,
                "AUTHENTICATION_ERROR",
                "Remove the Bearer prefix",
            );
        }
    }
    match state.admit(kind, "/graphql", presented.as_deref()) {
        Admit::Ok => {}
        Admit::Unauthorized | Admit::Fault(FaultKind::Auth) => {
            return error(
                StatusCode::BAD_REQUEST,
                "AUTHENTICATION_ERROR",
                "Authentication required, not authenticated",
            )
        }
        Admit::Fault(FaultKind::RateLimit) => {
            return error(
                StatusCode::BAD_REQUEST,
                "RATELIMITED",
                "Rate limit exceeded",
            )
        }
        Admit::Fault(FaultKind::Server) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL_SERVER_ERROR",
                "Internal server error",
            )
        }
    }
    if kind != CallKind::List {
        return Json(json!({"data": {"viewer": {"id": "viewer", "name": "Ada Lovelace"}}}))
            .into_response();
    }
    let include_archived = query.contains("includeArchived: true")
        || variables["includeArchived"].as_bool() == Some(true);
    let since = bound(&variables["filter"]["updatedAt"]);
    let mut issues: Vec<FakeRecord> = state
        .records
        .iter()
        .filter(|record| include_archived || !record.deleted)
        .filter(|record| {
            since.is_none_or(|(at, inclusive)| {
                record.modified > at || (inclusive && record.modified == at)
            })
        })
        .cloned()
        .collect();
    issues.sort_by_key(|issue| std::cmp::Reverse(issue.modified));
    let start = match variables["after"].as_str() {
        Some(after) => match issues.iter().position(|issue| issue.id == after) {
            Some(index) => index + 1,
            None => return error(StatusCode::BAD_REQUEST, "INVALID_INPUT", "invalid cursor"),
        },
        None => 0,
    };
    let first = variables["first"].as_u64().map(|first| first as usize);
    let (page, more) = window(&issues, start, first);
    let nodes: Vec<Value> = page
        .iter()
        .map(|record| {
            let number = state
                .records
                .iter()
                .position(|r| r.id == record.id)
                .unwrap_or(0);
            issue(record, number)
        })
        .collect();
    let end = nodes
        .last()
        .map(|node| node["id"].clone())
        .unwrap_or(Value::Null);
    Json(json!({"data": {"issues": {
        "nodes": nodes,
        "pageInfo": {"hasNextPage": more, "endCursor": end},
    }}}))
    .into_response()
}

/// `{gte: time}` or `{gt: time}`: the bound and whether it is inclusive.
fn bound(condition: &Value) -> Option<(DateTime<Utc>, bool)> {
    let (raw, inclusive) = match (condition.get("gte"), condition.get("gt")) {
        (Some(raw), _) => (raw, true),
        (None, Some(raw)) => (raw, false),
        _ => return None,
    };
    let at = DateTime::parse_from_rfc3339(raw.as_str()?)
        .ok()?
        .with_timezone(&Utc);
    Some((at, inclusive))
}

fn issue(record: &FakeRecord, n: usize) -> Value {
    let iso = |time: DateTime<Utc>| time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    json!({
        "id": record.id,
        "identifier": format!("MV-{}", n + 1),
        "title": record.title,
        "description": record.text,
        "url": format!("https://linear.app/fake/issue/{}", record.id),
        "createdAt": iso(record.created),
        "updatedAt": iso(record.modified),
        "archivedAt": if record.deleted { Value::String(iso(record.modified)) } else { Value::Null },
        "creator": {"name": record.author},
    })
}
