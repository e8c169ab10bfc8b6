//! Notion (API version 2025-09-03): every page shared with the integration through
//! `POST /v1/search` (object page, `last_edited_time` descending; search has no time filter,
//! so the walk stops at the first page older than the window), or one database's pages
//! through `GET /v1/databases/{id}` (its first data source) and
//! `POST /v1/data_sources/{id}/query` with an `on_or_after` filter. A page's text is its
//! blocks' rich text, read recursively from `GET /v1/blocks/{id}/children`; its author the
//! creator's name from `GET /v1/users/{id}` (none when the integration may not read users).
//!
//! `last_edited_time` is rounded to the minute, so the window starts at a whole minute and
//! the overlap is two minutes: pages edited again within a minute are read again and the
//! engine's content hash decides. Trashed (`in_trash`, formerly `archived`) pages are
//! deletions. Errors are `{object: "error", status, code, message}`: 401 `unauthorized`,
//! 429 `rate_limited` with Retry-After, 5xx (500, 502, 503, 504, 529) transient, 400
//! `validation_error` / `missing_version` refused.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, DurationRound, SecondsFormat, TimeDelta, Utc};
use serde_json::{json, Value};

use crate::http::Answer;
use crate::provider::{
    Change, Context, Credentials, IdPage, Page, Provider, ProviderError, ProviderKind, Record,
    Window,
};
use crate::providers::{parse_time, scrub, text_of};

/// The API version every call pins (data sources replace database queries in it).
pub const NOTION_VERSION: &str = "2025-09-03";

/// Results per listing page (Notion's maximum).
const PAGE: u32 = 100;

/// How deep nested blocks are read (toggles in toggles in columns ...).
const MAX_DEPTH: usize = 8;

/// The most block-children calls one page's text may take; the rest of a huge page is left
/// out rather than holding up the sync.
const MAX_BLOCK_CALLS: usize = 200;

pub struct Notion;

#[async_trait]
impl Provider for Notion {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Notion
    }

    /// Two minutes: `last_edited_time` is rounded to the minute.
    fn overlap(&self) -> Duration {
        Duration::from_secs(120)
    }

    fn validate(&self, config: &Value, credentials: &Credentials) -> Result<(), String> {
        credentials.require("token")?;
        match config.get("database_id") {
            None | Some(Value::Null) => Ok(()),
            Some(Value::String(id)) if id.trim().is_empty() => Ok(()),
            Some(Value::String(id)) if notion_id(id.trim()).is_some() => Ok(()),
            Some(Value::String(_)) => Err(
                "config.database_id must be a Notion database id (32 hexadecimal digits, dashes allowed)"
                    .to_owned(),
            ),
            Some(_) => Err("config.database_id must be a string".to_owned()),
        }
    }

    async fn changes(
        &self,
        cx: &Context<'_>,
        window: &Window,
        page: Option<&str>,
    ) -> Result<Page, ProviderError> {
        let since = window.since.map(floor_minute);
        let listed = list(cx, page, since, Direction::Descending).await?;
        let mut changes = Vec::new();
        let mut older_reached = false;
        let mut names = Names::default();
        for object in &listed.results {
            if object["object"].as_str().is_some_and(|kind| kind != "page") {
                continue;
            }
            let Some(id) = object["id"].as_str().and_then(notion_id) else {
                continue;
            };
            let modified = parse_time(&object["last_edited_time"]).ok_or_else(|| {
                ProviderError::Transient(format!("page {id} has no last_edited_time"))
            })?;
            // Search cannot filter by time: newest first, so the first page older than the
            // window ends the walk (a database query filtered already).
            if since.is_some_and(|since| modified < since) {
                older_reached = true;
                break;
            }
            if trashed(object) {
                changes.push(Change::Delete(id.to_owned()));
                continue;
            }
            let text = page_text(cx, id).await?;
            changes.push(Change::Upsert(Record {
                id: id.to_owned(),
                modified,
                title: title_of(object),
                text,
                url: text_of(&object["url"]),
                author: names.of(cx, &object["created_by"]).await?,
            }));
        }
        Ok(Page {
            changes,
            next: if older_reached { None } else { listed.next },
            token: None,
        })
    }

    async fn ids(&self, cx: &Context<'_>, page: Option<&str>) -> Result<IdPage, ProviderError> {
        // Oldest edit first: a page edited while the listing runs moves to the end, where
        // it is listed (again), instead of to the front the walk has passed.
        let listed = list(cx, page, None, Direction::Ascending).await?;
        Ok(IdPage {
            ids: listed
                .results
                .iter()
                .filter(|object| object["object"].as_str().is_none_or(|kind| kind == "page"))
                .filter(|object| !trashed(object))
                .filter_map(|object| object["id"].as_str().and_then(notion_id))
                .map(str::to_owned)
                .collect(),
            next: listed.next,
        })
    }
}

/// Users' names by id, looked up once per listing page (`created_by` holds only the id).
#[derive(Default)]
struct Names(HashMap<String, Option<String>>);

impl Names {
    /// The name of a (partial) user: its `name`, else `GET /v1/users/{id}`. An integration
    /// without the user-information capability gets a 403: no name, not a failed sync.
    async fn of(
        &mut self,
        cx: &Context<'_>,
        user: &Value,
    ) -> Result<Option<String>, ProviderError> {
        if let Some(name) = text_of(&user["name"]) {
            return Ok(Some(name));
        }
        let Some(id) = user["id"].as_str().and_then(notion_id) else {
            return Ok(None);
        };
        if let Some(name) = self.0.get(id) {
            return Ok(name.clone());
        }
        let url = format!("{}/v1/users/{id}", cx.base_url);
        let name = call(cx, Method::Get, &url, &[400, 403, 404])
            .await?
            .and_then(|found| text_of(&found["name"]));
        self.0.insert(id.to_owned(), name.clone());
        Ok(name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Ascending,
    Descending,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::Ascending => "ascending",
            Direction::Descending => "descending",
        }
    }
}

/// One page of a listing: the objects and the page token of the rest.
struct Listed {
    results: Vec<Value>,
    next: Option<String>,
}

/// Where a walk continues: the data source being queried (None: search) and Notion's cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resume {
    source: Option<String>,
    cursor: Option<String>,
}

impl Resume {
    /// A search cursor is kept as it is; a database walk's as `{"ds": .., "cursor": ..}`, so
    /// that a resumed run need not look the data source up again.
    fn encode(&self) -> Option<String> {
        let cursor = self.cursor.clone()?;
        Some(match &self.source {
            None => cursor,
            Some(source) => json!({"ds": source, "cursor": cursor}).to_string(),
        })
    }

    fn decode(token: &str) -> Resume {
        if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(token) {
            return Resume {
                source: object
                    .get("ds")
                    .and_then(Value::as_str)
                    .and_then(notion_id)
                    .map(str::to_owned),
                cursor: object
                    .get("cursor")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            };
        }
        Resume {
            source: None,
            cursor: Some(token.to_owned()),
        }
    }
}

/// One page of the connection's pages: search, or the database's data source query.
async fn list(
    cx: &Context<'_>,
    page: Option<&str>,
    since: Option<DateTime<Utc>>,
    direction: Direction,
) -> Result<Listed, ProviderError> {
    let resume = page.map(Resume::decode);
    let database = match cx.config_str("database_id") {
        None => None,
        Some(id) => Some(notion_id(id).ok_or_else(|| {
            ProviderError::Invalid("config.database_id is not a Notion id".to_owned())
        })?),
    };
    let Some(database) = database else {
        let mut body = json!({
            "filter": {"property": "object", "value": "page"},
            "sort": {"timestamp": "last_edited_time", "direction": direction.as_str()},
            "page_size": PAGE,
        });
        let cursor = resume.and_then(|resume| resume.cursor);
        let url = format!("{}/v1/search", cx.base_url);
        let answer = post_list(cx, &url, &mut body, cursor).await?;
        return Ok(Listed {
            next: next_cursor(&answer).and_then(|cursor| {
                Resume {
                    source: None,
                    cursor: Some(cursor),
                }
                .encode()
            }),
            results: results(answer),
        });
    };
    let (source, cursor) = match resume {
        Some(Resume {
            source: Some(source),
            cursor,
        }) => (source, cursor),
        other => (
            data_source(cx, database).await?,
            other.and_then(|resume| resume.cursor),
        ),
    };
    let mut body = json!({
        "sorts": [{"timestamp": "last_edited_time", "direction": direction.as_str()}],
        "page_size": PAGE,
    });
    if let Some(since) = since {
        body["filter"] = json!({
            "timestamp": "last_edited_time",
            "last_edited_time": {"on_or_after": since.to_rfc3339_opts(SecondsFormat::Millis, true)},
        });
    }
    let url = format!("{}/v1/data_sources/{source}/query", cx.base_url);
    let answer = post_list(cx, &url, &mut body, cursor).await?;
    Ok(Listed {
        next: next_cursor(&answer).and_then(|cursor| {
            Resume {
                source: Some(source.clone()),
                cursor: Some(cursor),
            }
            .encode()
        }),
        results: results(answer),
    })
}

/// POSTs a listing body from `cursor`. A cursor Notion no longer takes (400 "start_cursor
/// provided is invalid", as after the page it pointed at went away) restarts the walk from
/// its first page: the window is the same and the content hash skips what was stored.
async fn post_list(
    cx: &Context<'_>,
    url: &str,
    body: &mut Value,
    cursor: Option<String>,
) -> Result<Value, ProviderError> {
    if let Some(cursor) = &cursor {
        body["start_cursor"] = Value::String(cursor.clone());
    }
    match call(cx, Method::Post(body), url, &[]).await {
        Err(ProviderError::Invalid(reason))
            if cursor.is_some() && reason.contains("start_cursor") =>
        {
            tracing::debug!(%reason, "Notion refused the page cursor; restarting the walk");
            if let Some(object) = body.as_object_mut() {
                object.remove("start_cursor");
            }
            call(cx, Method::Post(body), url, &[]).await
        }
        other => other,
    }
    .map(Option::unwrap_or_default)
}

fn results(mut answer: Value) -> Vec<Value> {
    match answer.get_mut("results").map(Value::take) {
        Some(Value::Array(results)) => results,
        _ => Vec::new(),
    }
}

fn next_cursor(answer: &Value) -> Option<String> {
    if answer["has_more"].as_bool() == Some(true) {
        text_of(&answer["next_cursor"])
    } else {
        None
    }
}

/// The id of the database's first data source (API 2025-09-03).
async fn data_source(cx: &Context<'_>, database: &str) -> Result<String, ProviderError> {
    let url = format!("{}/v1/databases/{database}", cx.base_url);
    let answer = call(cx, Method::Get, &url, &[]).await?.unwrap_or_default();
    answer["data_sources"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|source| source["id"].as_str().and_then(notion_id))
        .map(str::to_owned)
        .ok_or_else(|| {
            ProviderError::Invalid(format!("the Notion database {database} has no data source"))
        })
}

/// The text of a page: its blocks' text, one block a line, in the page's order, nested
/// blocks read up to [`MAX_DEPTH`] deep. A block Notion does not show the integration (404)
/// is left out.
async fn page_text(cx: &Context<'_>, page_id: &str) -> Result<String, ProviderError> {
    enum Item {
        Text(String),
        Children(String, usize),
    }
    let mut lines: Vec<String> = Vec::new();
    // Popped in the page's order: a block's text, then its children, then its next sibling.
    let mut stack = vec![Item::Children(page_id.to_owned(), 0)];
    let mut calls = 0;
    while let Some(item) = stack.pop() {
        let (block_id, depth) = match item {
            Item::Text(text) => {
                if !text.trim().is_empty() {
                    lines.push(text);
                }
                continue;
            }
            Item::Children(block_id, depth) => (block_id, depth),
        };
        let mut read: Vec<Item> = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            if calls >= MAX_BLOCK_CALLS {
                tracing::debug!(
                    page = page_id,
                    "the page has too many blocks; its text is cut"
                );
                break;
            }
            calls += 1;
            let mut url = format!(
                "{}/v1/blocks/{block_id}/children?page_size={PAGE}",
                cx.base_url
            );
            if let Some(cursor) = &cursor {
                url.push_str("&start_cursor=");
                url.push_str(&encode_component(cursor));
            }
            let Some(answer) = call(cx, Method::Get, &url, &[404]).await? else {
                break;
            };
            for block in answer["results"].as_array().into_iter().flatten() {
                read.push(Item::Text(block_text(block)));
                let nested = block["has_children"].as_bool() == Some(true)
                    && depth + 1 < MAX_DEPTH
                    // Child pages and databases are pages of their own; synced blocks
                    // repeat text kept elsewhere.
                    && !matches!(
                        block["type"].as_str(),
                        Some("child_page" | "child_database" | "synced_block")
                    );
                if let Some(child) = block["id"].as_str().and_then(notion_id).filter(|_| nested) {
                    read.push(Item::Children(child.to_owned(), depth + 1));
                }
            }
            cursor = next_cursor(&answer);
            if cursor.is_none() {
                break;
            }
        }
        stack.extend(read.into_iter().rev());
    }
    Ok(lines.join("\n"))
}

/// The text of one block: its rich text (paragraphs, headings, list items, to-dos, quotes,
/// callouts, code, toggles), a caption (images, files, bookmarks, code), a table row's
/// cells, an equation, a child page's title.
pub fn block_text(block: &Value) -> String {
    let Some(kind) = block["type"].as_str() else {
        return String::new();
    };
    let body = &block[kind];
    let mut parts: Vec<String> = Vec::new();
    for key in ["rich_text", "text", "caption"] {
        let text = rich_text(&body[key]);
        if !text.trim().is_empty() {
            parts.push(text);
        }
    }
    if let Some(cells) = body["cells"].as_array() {
        let row: Vec<String> = cells.iter().map(rich_text).collect();
        if row.iter().any(|cell| !cell.trim().is_empty()) {
            parts.push(row.join(" | "));
        }
    }
    for key in ["expression", "title"] {
        if let Some(text) = text_of(&body[key]) {
            parts.push(text);
        }
    }
    parts.join(" ")
}

/// The plain text of a rich-text array (`plain_text`, else `text.content`).
pub fn rich_text(value: &Value) -> String {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| {
            part["plain_text"]
                .as_str()
                .or_else(|| part["text"]["content"].as_str())
        })
        .collect()
}

/// The page's title: the text of its title-typed property (named "title" for pages in the
/// workspace, whatever the database calls it for database pages).
pub fn title_of(page: &Value) -> String {
    page["properties"]
        .as_object()
        .into_iter()
        .flat_map(|properties| properties.values())
        .find(|property| property["type"].as_str() == Some("title"))
        .map(|property| rich_text(&property["title"]).trim().to_owned())
        .unwrap_or_default()
}

/// Whether the page is in the trash (`in_trash`; `archived` before API 2024-04).
fn trashed(page: &Value) -> bool {
    page["in_trash"].as_bool() == Some(true) || page["archived"].as_bool() == Some(true)
}

/// `id` when it is a Notion id (a uuid, with or without dashes): safe in a URL path.
pub fn notion_id(id: &str) -> Option<&str> {
    let digits = id.chars().filter(char::is_ascii_hexdigit).count();
    let dashes = id.chars().filter(|c| *c == '-').count();
    (digits == 32 && digits + dashes == id.len() && dashes <= 4).then_some(id)
}

/// A time rounded down to the minute, as Notion keeps `last_edited_time`.
pub fn floor_minute(time: DateTime<Utc>) -> DateTime<Utc> {
    time.duration_trunc(TimeDelta::minutes(1)).unwrap_or(time)
}

fn encode_component(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

enum Method<'a> {
    Get,
    Post(&'a Value),
}

/// One Notion call. An answer whose status is in `absent` is `None` instead of an error (a
/// block not shared with the integration is a 404; a user the integration may not read, a
/// 403).
async fn call(
    cx: &Context<'_>,
    method: Method<'_>,
    url: &str,
    absent: &[u16],
) -> Result<Option<Value>, ProviderError> {
    let token = cx
        .credentials
        .token()
        .ok_or_else(|| ProviderError::Unauthorized("the connection has no token".to_owned()))?;
    let secrets = cx.credentials.secrets();
    cx.http
        .call(
            ProviderKind::Notion,
            &cx.pace_key(ProviderKind::Notion),
            |client| {
                let request = match &method {
                    Method::Get => client.get(url),
                    Method::Post(body) => client.post(url).json(body),
                };
                request
                    .bearer_auth(token)
                    .header("Notion-Version", NOTION_VERSION)
            },
            |answer| judge(answer, absent, &secrets),
        )
        .await
}

/// Notion's answers in the engine's terms.
fn judge(
    answer: Answer,
    absent: &[u16],
    secrets: &[String],
) -> Result<Option<Value>, ProviderError> {
    let status = answer.status.as_u16();
    if answer.status.is_success() {
        return answer.json().map(Some);
    }
    if absent.contains(&status) {
        return Ok(None);
    }
    let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    let code = body["code"].as_str().unwrap_or("").to_owned();
    let message: String = body["message"]
        .as_str()
        .unwrap_or("")
        .chars()
        .take(300)
        .collect();
    let reason = scrub(
        format!("HTTP {status} {code}: {message}").trim_end_matches([' ', ':']),
        secrets,
    );
    match (status, code.as_str()) {
        (429, _) | (_, "rate_limited") => Err(ProviderError::RateLimited {
            retry_after: answer.retry_after(),
        }),
        (401, _) | (_, "unauthorized") => Err(ProviderError::Unauthorized(reason)),
        (403, _) | (_, "restricted_resource") => Err(ProviderError::Unauthorized(reason)),
        (500..=599, _)
        | (_, "service_unavailable" | "internal_server_error" | "conflict_error") => {
            Err(ProviderError::Transient(reason))
        }
        _ => Err(ProviderError::Invalid(reason)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rich_text_and_titles() {
        let page = json!({"properties": {
            "Status": {"type": "select", "select": {"name": "Open"}},
            "Name": {"type": "title", "title": [
                {"type": "text", "plain_text": "Harbour ", "text": {"content": "Harbour "}},
                {"type": "mention", "plain_text": "schedule"},
            ]},
        }});
        assert_eq!(title_of(&page), "Harbour schedule");
        assert_eq!(title_of(&json!({"properties": {}})), "");
        assert_eq!(title_of(&json!({"properties": "odd"})), "");
        assert_eq!(
            rich_text(&json!([{"text": {"content": "no plain"}}, {"plain_text": 3}, "junk"])),
            "no plain"
        );
        let paragraph = json!({"type": "paragraph", "paragraph": {"rich_text": [
            {"plain_text": "The ferry "}, {"plain_text": "leaves at nine."}]}});
        assert_eq!(block_text(&paragraph), "The ferry leaves at nine.");
        let row = json!({"type": "table_row", "table_row": {"cells": [
            [{"plain_text": "a"}], [], [{"plain_text": "c"}]]}});
        assert_eq!(block_text(&row), "a |  | c");
        let image = json!({"type": "image", "image": {"caption": [{"plain_text": "A map"}]}});
        assert_eq!(block_text(&image), "A map");
        let equation = json!({"type": "equation", "equation": {"expression": "e=mc^2"}});
        assert_eq!(block_text(&equation), "e=mc^2");
        assert_eq!(block_text(&json!({"type": 5})), "");
        assert_eq!(block_text(&json!({"type": "divider", "divider": {}})), "");
    }

    #[test]
    fn ids_and_minutes() {
        assert!(notion_id("59833787-2cf9-4fdf-8782-e53db20768a5").is_some());
        assert!(notion_id("598337872cf94fdf8782e53db20768a5").is_some());
        assert!(notion_id("../../v1/users").is_none());
        assert!(notion_id("598337872cf94fdf8782e53db20768a5/x").is_none());
        assert!(notion_id("").is_none());
        let time = DateTime::parse_from_rfc3339("2025-01-02T03:04:59.999Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            floor_minute(time).to_rfc3339_opts(SecondsFormat::Millis, true),
            "2025-01-02T03:04:00.000Z"
        );
    }

    #[test]
    fn page_tokens_round_trip() {
        let search = Resume {
            source: None,
            cursor: Some("abc".to_owned()),
        };
        assert_eq!(Resume::decode(&search.encode().unwrap()), search);
        let database = Resume {
            source: Some("598337872cf94fdf8782e53db20768a5".to_owned()),
            cursor: Some("a{b".to_owned()),
        };
        assert_eq!(Resume::decode(&database.encode().unwrap()), database);
        // A data source id that is not one is not put in a path.
        let forged = Resume::decode(r#"{"ds": "../users", "cursor": "x"}"#);
        assert_eq!(forged.source, None);
    }

    #[test]
    fn errors_keep_no_secret() {
        let answer = |status: u16, body: Value| Answer {
            status: reqwest::StatusCode::from_u16(status).unwrap(),
            headers: reqwest::header::HeaderMap::new(),
            body: serde_json::to_vec(&body).unwrap(),
        };
        let secrets = vec!["ntn_secret".to_owned()];
        let refused = judge(
            answer(
                401,
                json!({"code": "unauthorized", "message": "bad ntn_secret"}),
            ),
            &[],
            &secrets,
        );
        assert_eq!(
            refused,
            Err(ProviderError::Unauthorized(
                "HTTP 401 unauthorized: bad <redacted>".to_owned()
            ))
        );
        assert_eq!(judge(answer(404, json!({})), &[404], &secrets), Ok(None));
        assert!(matches!(
            judge(answer(404, json!({})), &[], &secrets),
            Err(ProviderError::Invalid(_))
        ));
        assert!(matches!(
            judge(
                answer(529, json!({"code": "service_overload"})),
                &[],
                &secrets
            ),
            Err(ProviderError::Transient(_))
        ));
        assert!(matches!(
            judge(answer(200, json!(null)), &[], &secrets),
            Ok(Some(Value::Null))
        ));
        let garbage = Answer {
            status: reqwest::StatusCode::OK,
            headers: reqwest::header::HeaderMap::new(),
            body: b"<html>".to_vec(),
        };
        assert!(matches!(
            judge(garbage, &[], &secrets),
            Err(ProviderError::Transient(_))
        ));
    }
}
