//! A fake Notion API (2025-09-03), mirroring the conformance fake: `POST /v1/search`
//! (filter object page / database / data_source, sort last_edited_time ascending or
//! descending, query, page_size, start_cursor), `GET /v1/databases/{id}` with
//! `data_sources[]`, `POST /v1/data_sources/{id}/query` (timestamp filters on
//! last_edited_time / created_time, and / or, sorts), `GET /v1/blocks/{id}/children` (three
//! top-level blocks per page, the first holding the record's word, the second with a nested
//! child), `GET /v1/users/{id}` (the authors). Bearer `ntn_` token; every call needs `Notion-Version` (400 missing_version);
//! errors `{object: "error", status, code, message}`: 401 unauthorized, 429 rate_limited
//! with Retry-After: 1, 500 internal_server_error, 404 object_not_found for unknown ids, 400
//! validation_error for a bad start_cursor. `last_edited_time` and `created_time` are
//! rounded down to the minute, as Notion's are. Deleted records leave the listings.
//! Records whose scope is [`DATABASE_ID`] are the database's pages (title property "Name").

use axum::body::Bytes;
use axum::extract::{Path, Query, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::MutexGuard;

use super::{
    bearer, uuid_id, window, Admit, CallKind, Fake, FakeRecord, FakeServer, FaultKind, State,
};
use memvault_connectors::ProviderKind;

/// The one database of the fake workspace (a record's scope puts it there).
pub const DATABASE_ID: &str = "8c2a4f7e-1b3d-4e5f-9a6b-7c8d9e0f1a2b";
/// The database's data source.
pub const DATA_SOURCE_ID: &str = "3d4e5f6a-7b8c-4d9e-8f0a-1b2c3d4e5f6a";

pub async fn start(records: usize) -> FakeServer {
    let token = format!("ntn_{}", hex::encode(rand::random::<[u8; 20]>()));
    let fake = Fake::new(ProviderKind::Notion, token.clone());
    for _ in 0..records {
        fake.add_in(uuid_id, None);
    }
    let router = Router::new()
        .route("/v1/search", post(search))
        .route("/v1/databases/{id}", get(database))
        .route("/v1/data_sources/{id}/query", post(query))
        .route("/v1/blocks/{id}/children", get(children))
        .route("/v1/users/{id}", get(user_get))
        .with_state(fake.clone());
    let mut credentials = Map::new();
    credentials.insert("token".into(), Value::String(token));
    FakeServer::serve(
        ProviderKind::Notion,
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
        Json(json!({
            "object": "error", "status": status.as_u16(), "code": code, "message": message,
            "request_id": uuid::Uuid::new_v4().to_string(),
        })),
    )
        .into_response();
    if code == "rate_limited" {
        response
            .headers_mut()
            .insert("retry-after", "1".parse().expect("a header value"));
    }
    response
}

/// Logs the call and checks its faults, token and Notion-Version; the state to answer from.
// An axum answer is the natural error of a handler's helper; a fake's speed is moot.
#[allow(clippy::result_large_err)]
fn admit<'a>(
    fake: &'a Fake,
    headers: &HeaderMap,
    kind: CallKind,
    path: &str,
) -> Result<MutexGuard<'a, State>, Response> {
    let mut state = fake.lock();
    match state.admit(kind, path, bearer(headers).as_deref()) {
        Admit::Ok => {}
        Admit::Unauthorized | Admit::Fault(FaultKind::Auth) => {
            return Err(error(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "API token is invalid.",
            ))
        }
        Admit::Fault(FaultKind::RateLimit) => {
            return Err(error(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "You have been rate limited. Please try again in a few minutes.",
            ))
        }
        Admit::Fault(FaultKind::Server) => {
            return Err(error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_server_error",
                "Unexpected error occurred.",
            ))
        }
    }
    let version = headers
        .get("notion-version")
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .unwrap_or("");
    if version.is_empty() {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "missing_version",
            "Notion-Version header failed validation: Notion-Version header should be defined, instead was `undefined`.",
        ));
    }
    let shaped = version.len() == 10
        && version.char_indices().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        });
    if !shaped {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "validation_error",
            "Notion-Version header failed validation: not a version.",
        ));
    }
    Ok(state)
}

fn minute(time: DateTime<Utc>) -> DateTime<Utc> {
    time.duration_trunc(TimeDelta::minutes(1)).unwrap_or(time)
}

fn iso(time: DateTime<Utc>) -> String {
    minute(time).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn dashless(id: &str) -> String {
    id.replace('-', "").to_ascii_lowercase()
}

fn in_database(record: &FakeRecord) -> bool {
    record.scope.as_deref() == Some(DATABASE_ID)
}

fn rich_text(text: &str) -> Value {
    json!({
        "type": "text", "text": {"content": text, "link": null},
        "annotations": {"bold": false, "italic": false, "strikethrough": false, "underline": false, "code": false, "color": "default"},
        "plain_text": text, "href": null,
    })
}

fn user(author: &str) -> Value {
    json!({"object": "user", "id": stable_id(&["notion-user", author])})
}

/// A uuid derived from `parts`, the same every time.
fn stable_id(parts: &[&str]) -> String {
    let digest = Sha256::digest(parts.join("/").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Uuid::from_bytes(bytes).to_string()
}

fn page(record: &FakeRecord) -> Value {
    let title = json!({"id": "title", "type": "title", "title": [rich_text(&record.title)]});
    let (parent, properties) = if in_database(record) {
        (
            json!({"type": "database_id", "database_id": DATABASE_ID, "data_source_id": DATA_SOURCE_ID}),
            json!({"Name": title, "Status": {"id": "st%3A", "type": "select", "select": {"id": "1", "name": "Open", "color": "green"}}}),
        )
    } else {
        (
            json!({"type": "workspace", "workspace": true}),
            json!({"title": title}),
        )
    };
    let slug: String = record
        .title
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("-");
    json!({
        "object": "page", "id": record.id, "created_time": iso(record.created),
        "last_edited_time": iso(record.modified), "created_by": user(&record.author),
        "last_edited_by": user(&record.author), "cover": null, "icon": null, "parent": parent,
        "archived": record.deleted, "in_trash": record.deleted, "properties": properties,
        "url": format!("https://www.notion.so/{slug}-{}", dashless(&record.id)), "public_url": null,
    })
}

fn database_object() -> Value {
    json!({
        "object": "database", "id": DATABASE_ID, "title": [rich_text("Fake tasks")], "description": [],
        "parent": {"type": "workspace", "workspace": true}, "archived": false, "in_trash": false,
        "is_inline": false, "url": format!("https://www.notion.so/{}", dashless(DATABASE_ID)),
        "data_sources": [{"id": DATA_SOURCE_ID, "name": "Fake tasks"}],
    })
}

fn block(
    record: &FakeRecord,
    key: &str,
    kind: &str,
    text: &str,
    parent: Option<&str>,
    children: bool,
) -> Value {
    json!({
        "object": "block", "id": stable_id(&["notion-block", &record.id, key]),
        "parent": match parent {
            Some(parent) => json!({"type": "block_id", "block_id": parent}),
            None => json!({"type": "page_id", "page_id": record.id}),
        },
        "created_time": iso(record.created), "last_edited_time": iso(record.modified),
        "has_children": children, "archived": false, "in_trash": false, "type": kind,
        kind: {"rich_text": [rich_text(text)], "color": "default"},
    })
}

/// The page's top-level blocks and, by block id, the children of those that have some.
fn blocks(record: &FakeRecord) -> (Vec<Value>, HashMap<String, Vec<Value>>) {
    let (head, rest) = record
        .text
        .split_once(". ")
        .map(|(head, rest)| (format!("{head}."), rest.to_owned()))
        .unwrap_or_else(|| (record.text.clone(), String::new()));
    let rest = if rest.is_empty() {
        "Nothing else was noted.".to_owned()
    } else {
        rest
    };
    let top = vec![
        block(record, "0", "paragraph", &head, None, false),
        block(record, "1", "bulleted_list_item", &rest, None, true),
        block(
            record,
            "2",
            "quote",
            &format!("Filed by {}.", record.author),
            None,
            false,
        ),
    ];
    let second = top[1]["id"].as_str().unwrap_or_default().to_owned();
    let nested = vec![block(
        record,
        "1/0",
        "paragraph",
        &format!("Nested detail for {}.", record.title),
        Some(&second),
        false,
    )];
    (top, HashMap::from([(second, nested)]))
}

/// A listing page of `objects` from `cursor` (the id of its first object).
fn list(objects: &[Value], page_size: &Value, cursor: &Value, kind: &str) -> Response {
    let asked = match page_size {
        Value::Null => None,
        Value::Number(n) => match n.as_u64().filter(|n| (1..=100).contains(n)) {
            Some(n) => Some(n as usize),
            None => return page_size_error(),
        },
        _ => return page_size_error(),
    };
    let ids: Vec<&str> = objects
        .iter()
        .map(|o| o["id"].as_str().unwrap_or(""))
        .collect();
    let start = match cursor {
        Value::Null => 0,
        Value::String(cursor) => match ids.iter().position(|id| id == cursor) {
            Some(index) => index,
            None => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "validation_error",
                    &format!("The start_cursor provided is invalid: {cursor}"),
                )
            }
        },
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "validation_error",
                "body.start_cursor should be a string",
            )
        }
    };
    let (page, more) = window(objects, start, asked);
    let next = if more {
        Value::String(ids[start + page.len()].to_owned())
    } else {
        Value::Null
    };
    Json(json!({
        "object": "list", "results": page, "next_cursor": next, "has_more": more,
        "type": kind, kind: {}, "request_id": uuid::Uuid::new_v4().to_string(),
    }))
    .into_response()
}

fn page_size_error() -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "validation_error",
        "body failed validation: body.page_size should be a number between 1 and 100.",
    )
}

// An axum answer is the natural error of a handler's helper; a fake's speed is moot.
#[allow(clippy::result_large_err)]
fn body_json(body: &Bytes) -> Result<Value, Response> {
    if body.is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(Value::Null) => Ok(json!({})),
        _ => Err(error(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "Error parsing JSON body.",
        )),
    }
}

/// Sorted by (minute, exact time, id), as Notion's rounded times with a stable tie-break.
fn ordered(mut items: Vec<(DateTime<Utc>, Value)>, descending: bool) -> Vec<Value> {
    items.sort_by(|(a, x), (b, y)| {
        (minute(*a), *a, x["id"].as_str()).cmp(&(minute(*b), *b, y["id"].as_str()))
    });
    if descending {
        items.reverse();
    }
    items.into_iter().map(|(_, object)| object).collect()
}

async fn search(AxumState(fake): AxumState<Fake>, headers: HeaderMap, body: Bytes) -> Response {
    let state = match admit(&fake, &headers, CallKind::List, "/v1/search") {
        Ok(state) => state,
        Err(response) => return response,
    };
    let body = match body_json(&body) {
        Ok(body) => body,
        Err(response) => return response,
    };
    let wanted = match &body["filter"] {
        Value::Null => None,
        filter
            if filter["property"] == "object"
                && matches!(
                    filter["value"].as_str(),
                    Some("page" | "database" | "data_source")
                ) =>
        {
            filter["value"].as_str()
        }
        _ => return error(
            StatusCode::BAD_REQUEST,
            "validation_error",
            "body failed validation: body.filter.value should be `\"page\"` or `\"data_source\"`.",
        ),
    };
    let sort = &body["sort"];
    let direction = sort["direction"].as_str().unwrap_or("descending");
    if !sort.is_null()
        && (sort["timestamp"] != "last_edited_time"
            || !matches!(direction, "ascending" | "descending"))
    {
        return error(
            StatusCode::BAD_REQUEST,
            "validation_error",
            "body failed validation: body.sort.timestamp should be `\"last_edited_time\"`.",
        );
    }
    let query = body["query"].as_str().unwrap_or("").to_lowercase();
    let mut items = Vec::new();
    if matches!(wanted, None | Some("page")) {
        for record in state.records.iter().filter(|r| !r.deleted) {
            if record.title.to_lowercase().contains(&query) {
                items.push((record.modified, page(record)));
            }
        }
    }
    if matches!(wanted, None | Some("database" | "data_source"))
        && state.records.iter().any(|r| !r.deleted && in_database(r))
        && "fake tasks".contains(&query)
    {
        let created = state
            .records
            .iter()
            .map(|r| r.created)
            .min()
            .unwrap_or_else(Utc::now);
        items.push((created, database_object()));
    }
    let objects = ordered(items, direction == "descending");
    list(
        &objects,
        &body["page_size"],
        &body["start_cursor"],
        "page_or_database",
    )
}

fn not_found(what: &str, id: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "object_not_found",
        &format!("Could not find {what} with ID: {id}. Make sure the relevant pages and databases are shared with your integration."),
    )
}

async fn database(
    AxumState(fake): AxumState<Fake>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(response) = admit(
        &fake,
        &headers,
        CallKind::Meta,
        &format!("/v1/databases/{id}"),
    ) {
        return response;
    }
    if dashless(&id) != dashless(DATABASE_ID) {
        return not_found("database", &id);
    }
    Json(database_object()).into_response()
}

/// Notion's date condition (`on_or_after`, `after`, `before`, `on_or_before`, `equals`).
fn date_ok(value: DateTime<Utc>, condition: &Value) -> Result<bool, String> {
    let conditions = condition
        .as_object()
        .filter(|c| !c.is_empty())
        .ok_or("a date filter condition must be an object")?;
    for (operator, raw) in conditions {
        let target = raw
            .as_str()
            .and_then(|raw| DateTime::parse_from_rfc3339(raw).ok())
            .map(|t| t.with_timezone(&Utc))
            .ok_or_else(|| format!("{operator} should be an ISO 8601 date"))?;
        let ok = match operator.as_str() {
            "equals" => value == target,
            "before" => value < target,
            "after" => value > target,
            "on_or_before" => value <= target,
            "on_or_after" => value >= target,
            other => return Err(format!("unsupported date filter condition {other}")),
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

fn matches(record: &FakeRecord, filter: &Value) -> Result<bool, String> {
    if filter.is_null() {
        return Ok(true);
    }
    if let Some(all) = filter["and"].as_array() {
        for part in all {
            if !matches(record, part)? {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    if let Some(any) = filter["or"].as_array() {
        for part in any {
            if matches(record, part)? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    match filter["timestamp"].as_str() {
        Some("last_edited_time") => date_ok(minute(record.modified), &filter["last_edited_time"]),
        Some("created_time") => date_ok(minute(record.created), &filter["created_time"]),
        _ => Err("unsupported filter".to_owned()),
    }
}

async fn query(
    AxumState(fake): AxumState<Fake>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let state = match admit(
        &fake,
        &headers,
        CallKind::List,
        &format!("/v1/data_sources/{id}/query"),
    ) {
        Ok(state) => state,
        Err(response) => return response,
    };
    if dashless(&id) != dashless(DATA_SOURCE_ID) {
        return not_found("data_source", &id);
    }
    let body = match body_json(&body) {
        Ok(body) => body,
        Err(response) => return response,
    };
    let mut pages = Vec::new();
    for record in state
        .records
        .iter()
        .filter(|r| !r.deleted && in_database(r))
    {
        match matches(record, &body["filter"]) {
            Ok(true) => pages.push(record),
            Ok(false) => {}
            Err(message) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "validation_error",
                    &format!("body failed validation: {message}"),
                )
            }
        }
    }
    let (descending, key) = match body["sorts"].as_array().and_then(|sorts| sorts.first()) {
        Some(sort) => (
            sort["direction"].as_str().unwrap_or("ascending") == "descending",
            sort["timestamp"].as_str().unwrap_or("last_edited_time"),
        ),
        None => (true, "last_edited_time"),
    };
    let items = pages
        .into_iter()
        .map(|r| {
            (
                if key == "created_time" {
                    r.created
                } else {
                    r.modified
                },
                page(r),
            )
        })
        .collect();
    list(
        &ordered(items, descending),
        &body["page_size"],
        &body["start_cursor"],
        "page_or_database",
    )
}

async fn children(
    AxumState(fake): AxumState<Fake>,
    Path(id): Path<String>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let state = match admit(
        &fake,
        &headers,
        CallKind::Content,
        &format!("/v1/blocks/{id}/children"),
    ) {
        Ok(state) => state,
        Err(response) => return response,
    };
    let wanted = dashless(&id);
    for record in state.records.iter().filter(|r| !r.deleted) {
        let (top, nested) = blocks(record);
        let found = if dashless(&record.id) == wanted {
            Some(top.clone())
        } else {
            top.iter()
                .chain(nested.values().flatten())
                .find(|block| block["id"].as_str().map(dashless) == Some(wanted.clone()))
                .map(|block| {
                    nested
                        .get(block["id"].as_str().unwrap_or_default())
                        .cloned()
                        .unwrap_or_default()
                })
        };
        if let Some(blocks) = found {
            let page_size = match params.get("page_size").map(|size| size.parse::<u64>()) {
                None => Value::Null,
                Some(Ok(size)) => json!(size),
                Some(Err(_)) => {
                    return error(
                        StatusCode::BAD_REQUEST,
                        "validation_error",
                        "page_size should be a number.",
                    )
                }
            };
            let cursor = params.get("start_cursor").map_or(Value::Null, |c| json!(c));
            return list(&blocks, &page_size, &cursor, "block");
        }
    }
    not_found("block", &id)
}

async fn user_get(
    AxumState(fake): AxumState<Fake>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let state = match admit(&fake, &headers, CallKind::Meta, &format!("/v1/users/{id}")) {
        Ok(state) => state,
        Err(response) => return response,
    };
    let found = state
        .records
        .iter()
        .map(|record| record.author.clone())
        .find(|author| user(author)["id"].as_str() == Some(id.as_str()));
    match found {
        Some(name) => Json(json!({
            "object": "user", "id": id, "type": "person", "name": name, "avatar_url": null,
            "person": {"email": format!("{}@example.org", name.to_lowercase().replace(' ', "-"))},
        }))
        .into_response(),
        None => not_found("user", &id),
    }
}
