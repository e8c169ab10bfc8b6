//! Memories: browse and search one collection with filters, bulk archive and delete, add
//! one; a memory's page (text, metadata, author, provenance, supersession history,
//! related memories; edit, pin, archive, delete); the contradictions review.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::Method;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use chrono::{DateTime, NaiveDate, Utc};
use maud::{html, Markup};
use memvault_core::service::access::{CollectionAccess, Read};
use memvault_storage::{CollectionName, MemoryRecord};
use serde::Deserialize;
use serde_json::{json, Value};

use super::collections::Done;
use crate::dashboard::client::{segment, Failure};
use crate::dashboard::layout::{self, items, text};
use crate::dashboard::session::{Change, Viewer};
use crate::dashboard::{see_other, Dashboard};

/// Memories per page.
const PAGE: usize = 50;

pub fn routes() -> Router<Dashboard> {
    Router::new()
        .route(
            "/dashboard/collections/{collection}/memories",
            get(browse).post(add),
        )
        .route(
            "/dashboard/collections/{collection}/memories/bulk",
            post(bulk),
        )
        .route(
            "/dashboard/collections/{collection}/memories/{id}",
            get(show),
        )
        .route(
            "/dashboard/collections/{collection}/memories/{id}/edit",
            post(edit),
        )
        .route(
            "/dashboard/collections/{collection}/memories/{id}/pin",
            post(pin),
        )
        .route(
            "/dashboard/collections/{collection}/memories/{id}/archive",
            post(archive),
        )
        .route(
            "/dashboard/collections/{collection}/memories/{id}/delete",
            post(delete),
        )
        .route(
            "/dashboard/collections/{collection}/memories/{id}/reinstate",
            post(reinstate),
        )
        .route(
            "/dashboard/collections/{collection}/contradictions",
            get(contradictions),
        )
}

/// A memory's state as the filters name it (pinned is apart: a pinned memory is also
/// current, archived, ...).
fn status_of(memory: &MemoryRecord, now: DateTime<Utc>) -> &'static str {
    if memory.superseded_by.is_some() {
        "superseded"
    } else if memory.expires_at.is_some_and(|expiry| expiry <= now) {
        "expired"
    } else if memory.archived {
        "archived"
    } else if memory
        .suspensions
        .iter()
        .any(|suspension| suspension.from <= now && now < suspension.until)
    {
        "set aside"
    } else {
        "current"
    }
}

fn status_badge(memory: &MemoryRecord, now: DateTime<Utc>) -> Markup {
    let status = status_of(memory, now);
    let kind = match status {
        "current" => "good",
        "archived" | "set aside" => "warn",
        _ => "bad",
    };
    html! {
        (layout::badge(kind, status))
        @if memory.pinned { " " (layout::badge("info", "pinned")) }
    }
}

#[derive(Deserialize, Default)]
struct Filters {
    q: Option<String>,
    /// `current` (default), `pinned`, `archived`, `superseded`, `expired`, `all`.
    status: Option<String>,
    source: Option<String>,
    agent: Option<String>,
    tag: Option<String>,
    /// Created on or after (YYYY-MM-DD).
    from: Option<String>,
    /// Created on or before (YYYY-MM-DD).
    to: Option<String>,
    mode: Option<String>,
    page: Option<String>,
    done: Option<String>,
}

fn blank(value: &Option<String>) -> Option<&str> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|value| !value.is_empty())
}

impl Filters {
    fn status(&self) -> &str {
        blank(&self.status).unwrap_or("current")
    }

    fn keeps(&self, memory: &MemoryRecord, now: DateTime<Utc>) -> bool {
        let status = status_of(memory, now);
        let by_status = match self.status() {
            "all" => true,
            "pinned" => memory.pinned,
            "current" => status == "current" || status == "set aside",
            other => status == other,
        };
        let day = |value: &Option<String>| {
            blank(value).and_then(|day| NaiveDate::parse_from_str(day, "%Y-%m-%d").ok())
        };
        let created = memory.created_at.date_naive();
        by_status
            && blank(&self.source).is_none_or(|source| memory.source == source)
            && blank(&self.agent).is_none_or(|agent| {
                memory.created_by.id == agent || memory.created_by.label == agent
            })
            && blank(&self.tag).is_none_or(|tag| memory.container_tag.as_deref() == Some(tag))
            && day(&self.from).is_none_or(|from| created >= from)
            && day(&self.to).is_none_or(|to| created <= to)
    }

    /// The query string of these filters on another page.
    fn with_page(&self, page: usize) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (name, value) in [
            ("q", &self.q),
            ("status", &self.status),
            ("source", &self.source),
            ("agent", &self.agent),
            ("tag", &self.tag),
            ("from", &self.from),
            ("to", &self.to),
            ("mode", &self.mode),
        ] {
            if let Some(value) = blank(value) {
                query.append_pair(name, value);
            }
        }
        query.append_pair("page", &page.to_string());
        query.finish()
    }
}

fn collection_path(name: &str) -> String {
    format!("/v1/memory/collections/{}", segment(name))
}

fn read_access(
    state: &Dashboard,
    viewer: &Viewer,
    name: &str,
) -> Result<CollectionAccess<Read>, Failure> {
    let collection = CollectionName::parse(name).map_err(invalid)?;
    Ok(state
        .app
        .authorizer
        .authorize::<Read>(&viewer.agent, collection)?)
}

/// `GET /dashboard/collections/{collection}/memories`.
async fn browse(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Path(name): Path<String>,
    Query(filters): Query<Filters>,
) -> Response {
    let here = format!("collections/{}", segment(&name));
    let access = match read_access(&state, &viewer, &name) {
        Ok(access) => access,
        Err(failure) => return layout::failed(&viewer, &failure, "collections"),
    };
    let now = Utc::now();
    let page = filters
        .page
        .as_deref()
        .and_then(|page| page.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, MAX_PAGE);
    let query = blank(&filters.q).map(str::to_owned);
    let searchable = matches!(filters.status(), "current" | "pinned" | "archived" | "all");
    let mut scores = std::collections::HashMap::new();
    let listed = match &query {
        // Search leaves superseded and expired memories out: those are matched by words.
        Some(query) if searchable => {
            let mode = blank(&filters.mode)
                .filter(|mode| matches!(*mode, "vector" | "text" | "hybrid"))
                .unwrap_or("hybrid");
            let mut body = json!({
                "query": query, "limit": 50, "mode": mode,
                "include_archived": matches!(filters.status(), "archived" | "all"),
            });
            if let Some(tag) = blank(&filters.tag) {
                body["container_tag"] = json!(tag);
            }
            let path = format!("{}/search", collection_path(&name));
            let results = match state
                .api
                .call(&viewer, Method::POST, &path, Some(body))
                .await
            {
                Ok(results) => results,
                Err(failure) => return layout::failed(&viewer, &failure, &here),
            };
            let found: Vec<Arc<MemoryRecord>> = items(&results, "results")
                .iter()
                .filter_map(|result| {
                    let id = result["id"].as_str()?;
                    scores.insert(id.to_owned(), result["score"].as_f64().unwrap_or(0.0));
                    state.app.memories.get(&access, id).ok()
                })
                .filter(|memory| filters.keeps(memory, now))
                .collect();
            let more = found.len() > page * PAGE;
            Ok((
                found
                    .into_iter()
                    .skip((page - 1) * PAGE)
                    .take(PAGE)
                    .collect(),
                more,
            ))
        }
        Some(query) => {
            let words: Vec<String> = query
                .to_lowercase()
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            page_of(&state, &access, &filters, page, |memory| {
                let text = memory.text.to_lowercase();
                filters.keeps(memory, now) && words.iter().all(|word| text.contains(word.as_str()))
            })
        }
        None => page_of(&state, &access, &filters, page, |memory| {
            filters.keeps(memory, now)
        }),
    };
    let (shown, more): (Vec<Arc<MemoryRecord>>, bool) = match listed {
        Ok(listed) => listed,
        Err(error) => return layout::failed(&viewer, &Failure::from(error), &here),
    };
    let mut sources: Vec<&str> = shown.iter().map(|memory| memory.source.as_str()).collect();
    sources.sort_unstable();
    sources.dedup();
    let mut any = false;
    if shown.is_empty() {
        // Only the empty state needs to know whether the collection has any memory.
        let _ = state.app.memories.walk(&access, |_| {
            any = true;
            false
        });
    }
    let done = Done {
        done: filters.done.clone(),
    };
    let status = filters.status().to_owned();
    let content = html! {
        (layout::done_notice(done.message()))
        p.small { a href=(here) { "← " (name) } }
        form.panel.row method="get" action=(format!("{here}/memories")) role="search" {
            label { "Search" input type="search" name="q" value=(filters.q.as_deref().unwrap_or("")) placeholder="words or a question"; }
            label { "Mode" select name="mode" {
                @for mode in ["hybrid", "vector", "text"] {
                    option value=(mode) selected[blank(&filters.mode).unwrap_or("hybrid") == mode] { (mode) }
                }
            } }
            label { "Status" select name="status" {
                @for option in ["current", "pinned", "archived", "superseded", "expired", "all"] {
                    option value=(option) selected[status == option] { (option) }
                }
            } }
            label { "Source" input type="text" name="source" list="sources" value=(filters.source.as_deref().unwrap_or("")) placeholder="any"; }
            datalist #sources { @for source in &sources { option value=(source) {} } }
            label { "Agent (key id or label)" input type="text" name="agent" value=(filters.agent.as_deref().unwrap_or("")); }
            label { "Container tag" input type="text" name="tag" value=(filters.tag.as_deref().unwrap_or("")); }
            label { "Created from" input type="date" name="from" value=(filters.from.as_deref().unwrap_or("")); }
            label { "to" input type="date" name="to" value=(filters.to.as_deref().unwrap_or("")); }
            button type="submit" { "Apply" }
        }
        p.muted.small {
            "Page " (page) ": " (shown.len()) " memories"
            @if query.is_some() && searchable { " (best 50 search results, then the filters)" }
            @if query.is_some() && !searchable { " (search leaves " (status) " memories out, so these are matched by their words)" }
        }
        @if shown.is_empty() {
            @if !any {
                (layout::empty("This collection has no memories yet.", html! {
                    p { "Add one below, drop files on the " a href="files" { "Files" } " page, or connect a source on the " a href="connectors" { "Connectors" } " page." }
                }))
            } @else {
                (layout::empty("No memory matches these filters.", html! { p { a href=(format!("{here}/memories?status=all")) { "Show every memory" } } }))
            }
        } @else {
            form method="post" action=(format!("{here}/memories/bulk")) {
                (layout::csrf(&viewer))
                div.table-wrap { table {
                    thead { tr {
                        @if viewer.may_write() { th { input type="checkbox" data-select-all aria-label="Select all"; } }
                        th { "Memory" } th { "State" } th.hide-narrow { "Source" } th.hide-narrow { "By" } th.hide-narrow { "Created" }
                        @if !scores.is_empty() { th.num { "Score" } }
                    } }
                    tbody {
                        @for memory in &shown {
                            tr {
                                @if viewer.may_write() { td { input type="checkbox" name="ids" value=(memory.id) aria-label="Select"; } }
                                td { a href=(format!("{here}/memories/{}", segment(&memory.id))) { (preview(&memory.text, 160)) }
                                    @if let Some(tag) = &memory.container_tag { " " (layout::badge("", tag)) } }
                                td { (status_badge(memory, now)) }
                                td.hide-narrow { (memory.source) }
                                td.hide-narrow { (memory.created_by.label) }
                                td.hide-narrow.small { (memory.created_at.format("%Y-%m-%d %H:%M")) }
                                @if !scores.is_empty() { td.num { (format!("{:.3}", scores.get(&memory.id).copied().unwrap_or(0.0))) } }
                            }
                        }
                    }
                } }
                @if viewer.may_write() {
                    div.row {
                        button.secondary type="submit" name="action" value="archive" { "Archive selected" }
                        button.secondary type="submit" name="action" value="restore" { "Restore selected" }
                        button.danger type="submit" name="action" value="delete" data-confirm="Delete the selected memories for good?" { "Delete selected" }
                    }
                }
            }
            div.pager {
                @if page > 1 { a href=(format!("{here}/memories?{}", filters.with_page(page - 1))) { "← Newer" } }
                span.muted { "Page " (page) }
                @if more { a href=(format!("{here}/memories?{}", filters.with_page(page + 1))) { "Older →" } }
            }
        }
        @if viewer.may_write() {
            h2 { "Add a memory" }
            form.panel.stack method="post" action=(format!("{here}/memories")) {
                (layout::csrf(&viewer))
                div { label for="new-text" { "Text" } textarea #new-text name="text" required maxlength="10000" {} }
                div.row {
                    label { "Category" input type="text" name="category" placeholder="other"; }
                    label { "Importance (0 to 1)" input type="number" name="importance" min="0" max="1" step="0.05"; }
                    label { "Container tag" input type="text" name="container_tag"; }
                }
                button type="submit" { "Add" }
            }
        }
    };
    layout::page(
        &viewer,
        "collections",
        &format!("Memories of {name}"),
        content,
    )
}

/// The deepest page the browser walks to (`PAGE` memories each).
const MAX_PAGE: usize = 10_000;

/// The memories of `page` (from 1) among those `keeps` accepts, and whether more follow:
/// a walk of the collection in listing order that stops after the page, so the first
/// pages cost the same in any collection. Superseded ones are walked from their own
/// index, most recently superseded first.
fn page_of(
    state: &Dashboard,
    access: &CollectionAccess<Read>,
    filters: &Filters,
    page: usize,
    keeps: impl Fn(&MemoryRecord) -> bool,
) -> Result<(Vec<Arc<MemoryRecord>>, bool), memvault_core::Error> {
    let mut skip = (page - 1) * PAGE;
    let mut shown = Vec::with_capacity(PAGE);
    let mut more = false;
    let visit = |memory: &Arc<MemoryRecord>| {
        if !keeps(memory) {
            return true;
        }
        if skip > 0 {
            skip -= 1;
            return true;
        }
        if shown.len() == PAGE {
            more = true;
            return false;
        }
        shown.push(memory.clone());
        true
    };
    if filters.status() == "superseded" {
        state.app.memories.walk_superseded(access, visit)?;
    } else {
        state.app.memories.walk(access, visit)?;
    }
    Ok((shown, more))
}

/// The first `chars` characters of a text, with an ellipsis when cut.
fn preview(text: &str, chars: usize) -> String {
    let mut cut: String = text.chars().take(chars).collect();
    if text.chars().nth(chars).is_some() {
        cut.push('…');
    }
    cut
}

/// `POST .../memories`: one new memory.
async fn add(State(state): State<Dashboard>, Path(name): Path<String>, change: Change) -> Response {
    let viewer = &change.viewer;
    let fields = &change.fields;
    let here = format!("collections/{}/memories", segment(&name));
    let mut body = json!({ "text": fields.raw("text"), "source": "dashboard" });
    if let Some(category) = fields.get("category") {
        body["category"] = json!(category);
    }
    if let Some(tag) = fields.get("container_tag") {
        body["container_tag"] = json!(tag);
    }
    if let Some(importance) = fields.get("importance") {
        match importance.parse::<f64>() {
            Ok(importance) => body["importance"] = json!(importance),
            Err(_) => {
                return layout::failed(
                    viewer,
                    &invalid("importance must be a number from 0 to 1"),
                    &here,
                )
            }
        }
    }
    let path = format!("{}/memories", collection_path(&name));
    match state
        .api
        .call(viewer, Method::POST, &path, Some(body))
        .await
    {
        Ok(memory) => see_other(
            &viewer.base,
            &format!("{here}/{}?done=created", segment(text(&memory, "id"))),
        ),
        Err(failure) => layout::failed(viewer, &failure, &here),
    }
}

fn invalid(detail: impl Into<String>) -> Failure {
    Failure::from(crate::error::ApiError::Validation(detail.into()))
}

/// `POST .../memories/bulk`: archive, restore or delete the selected memories, one API
/// call each; the first failure stops and is shown.
async fn bulk(
    State(state): State<Dashboard>,
    Path(name): Path<String>,
    change: Change,
) -> Response {
    let viewer = &change.viewer;
    let here = format!("collections/{}/memories", segment(&name));
    let ids = change.fields.all("ids");
    if ids.is_empty() {
        return layout::failed(viewer, &invalid("select at least one memory"), &here);
    }
    if ids.len() > 200 {
        return layout::failed(viewer, &invalid("at most 200 memories at once"), &here);
    }
    let action = change.fields.get("action").unwrap_or("");
    let done = match action {
        "archive" => "archived",
        "restore" => "restored",
        "delete" => "deleted",
        _ => {
            return layout::failed(
                viewer,
                &invalid("the action must be archive, restore or delete"),
                &here,
            )
        }
    };
    for id in ids {
        let path = format!("{}/memories/{}", collection_path(&name), segment(id));
        let outcome = match action {
            "delete" => state.api.call(viewer, Method::DELETE, &path, None).await,
            _ => {
                let body = json!({ "archived": action == "archive" });
                state
                    .api
                    .call(viewer, Method::POST, &format!("{path}/archive"), Some(body))
                    .await
            }
        };
        if let Err(failure) = outcome {
            return layout::failed(viewer, &failure, &here);
        }
    }
    see_other(&viewer.base, &format!("{here}?done={done}&status=all"))
}

/// `GET .../memories/{id}`.
async fn show(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Path((name, id)): Path<(String, String)>,
    Query(done): Query<Done>,
) -> Response {
    let here = format!("collections/{}/memories", segment(&name));
    let access = match read_access(&state, &viewer, &name) {
        Ok(access) => access,
        Err(failure) => return layout::failed(&viewer, &failure, "collections"),
    };
    let memory = match state.app.memories.get(&access, &id) {
        Ok(memory) => memory,
        Err(error) => return layout::failed(&viewer, &Failure::from(error), &here),
    };
    let path = format!("{}/memories/{}", collection_path(&name), segment(&id));
    let history = state
        .api
        .get(&viewer, &format!("{path}/history"))
        .await
        .ok();
    let related = state
        .api
        .get(&viewer, &format!("{path}/related?limit=5"))
        .await
        .ok();
    let now = Utc::now();
    let link = |other: &str| format!("{here}/{}", segment(other));
    let content = html! {
        (layout::done_notice(done.message()))
        p.small { a href=(here) { "← Memories of " (name) } }
        div.panel {
            p { (status_badge(&memory, now)) }
            p.text { (memory.text) }
        }
        div.panel {
            dl.facts {
                dt { "Id" } dd.mono { (memory.id) }
                dt { "Category" } dd { (memory.category) }
                dt { "Importance" } dd { (format!("{:.2}", memory.importance)) }
                dt { "Source" } dd { (memory.source) }
                dt { "Written by" } dd { (memory.created_by.label) " " span.mono.muted { (memory.created_by.id) } }
                dt { "Created" } dd { (memory.created_at.format("%Y-%m-%d %H:%M:%S UTC")) }
                dt { "Updated" } dd { (memory.updated_at.format("%Y-%m-%d %H:%M:%S UTC")) }
                @if let Some(tag) = &memory.container_tag { dt { "Container tag" } dd { (tag) } }
                @if let Some(slot) = &memory.slot { dt { "Slot" } dd { code { (slot) } } }
                @if let Some(expiry) = memory.expires_at { dt { "Expires" } dd { (expiry.format("%Y-%m-%d %H:%M UTC")) } }
                @if let Some(newer) = &memory.superseded_by {
                    dt { "Superseded by" } dd { a href=(link(newer)) { (newer) }
                        @if let Some(at) = memory.superseded_at { " on " (at.format("%Y-%m-%d %H:%M")) } }
                }
            }
        }
        (provenance(&memory))
        @if !memory.metadata.is_empty() {
            h2 { "Metadata" }
            div.table-wrap { table { tbody {
                @for (key, value) in &memory.metadata {
                    tr { th { (key) } td.mono { (match value { Value::String(s) => s.clone(), other => other.to_string() }) } }
                }
            } } }
        }
        @if let Some(history) = &history {
            @let entries = items(history, "history");
            @if entries.len() > 1 {
                h2 { "History of " code { (text(history, "slot")) } }
                div.timeline {
                    @for entry in entries {
                        @let other = &entry["memory"];
                        div.entry.current[entry["current"].as_bool() == Some(true)] {
                            a href=(link(text(other, "id"))) { (preview(text(other, "text"), 140)) }
                            div.small.muted {
                                "valid from " (layout::when(&entry["valid_from"]))
                                @if !entry["valid_until"].is_null() { " until " (layout::when(&entry["valid_until"])) }
                                @if entry["current"].as_bool() == Some(true) { " · " (layout::badge("good", "current")) }
                                @for aside in items(entry, "set_aside") {
                                    " · set aside " (layout::when(&aside["from"])) " to " (layout::when(&aside["until"]))
                                }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(related) = &related {
            @let results = items(related, "results");
            @if !results.is_empty() {
                h2 { "Related" }
                ul {
                    @for result in results {
                        li { a href=(link(text(result, "id"))) { (preview(text(result, "text"), 140)) }
                            " " span.small.muted { (format!("{:.2}", result["score"].as_f64().unwrap_or(0.0))) } }
                    }
                }
            }
        }
        @if viewer.may_write() {
            h2 { "Change" }
            div.row {
                form.inline method="post" action=(format!("{here}/{}/pin", segment(&id))) {
                    (layout::csrf(&viewer))
                    input type="hidden" name="pinned" value=(if memory.pinned { "false" } else { "true" });
                    button.secondary type="submit" { @if memory.pinned { "Unpin" } @else { "Pin" } }
                }
                form.inline method="post" action=(format!("{here}/{}/archive", segment(&id))) {
                    (layout::csrf(&viewer))
                    input type="hidden" name="archived" value=(if memory.archived { "false" } else { "true" });
                    button.secondary type="submit" { @if memory.archived { "Restore" } @else { "Archive" } }
                }
                form.inline method="post" action=(format!("{here}/{}/delete", segment(&id))) data-confirm="Delete this memory and its files for good?" {
                    (layout::csrf(&viewer))
                    button.danger type="submit" { "Delete" }
                }
            }
            form.panel.stack method="post" action=(format!("{here}/{}/edit", segment(&id))) {
                (layout::csrf(&viewer))
                div { label for="edit-text" { "Text" } textarea #edit-text name="text" required maxlength="10000" { (memory.text) } }
                div.row {
                    label { "Category" input type="text" name="category" value=(memory.category); }
                    label { "Importance" input type="number" name="importance" min="0" max="1" step="0.05" value=(format!("{:.2}", memory.importance)); }
                }
                button type="submit" { "Save" }
            }
        }
    };
    layout::page(&viewer, "collections", "Memory", content)
}

/// Where a memory came from: a file, a mail, a connector's record.
fn provenance(memory: &MemoryRecord) -> Markup {
    let meta = &memory.metadata;
    let field = |name: &str| meta.get(name).and_then(Value::as_str);
    html! {
        @if let Some(file_id) = field("file_id") {
            div.panel {
                strong { "From a file: " } (field("filename").unwrap_or(file_id))
                @if let (Some(index), Some(count)) = (meta.get("chunk_index").and_then(Value::as_u64), meta.get("chunk_count").and_then(Value::as_u64)) {
                    " · part " (index + 1) " of " (count)
                }
                @if let Some(page) = meta.get("page").and_then(Value::as_u64) { " · page " (page) }
                " · " a href=(format!("files?file={}", segment(file_id))) { "its ingest" }
            }
        }
        @if let Some(connection) = field("connection_id") {
            div.panel {
                strong { "From a connector: " }
                a href=(format!("connectors/{}", segment(connection))) { (connection) }
                @if let Some(title) = field("title") { " · " (title) }
                @if let Some(url) = field("url") {
                    @if url.starts_with("https://") || url.starts_with("http://") {
                        " · " a href=(url) rel="noopener noreferrer" { "the original" }
                    }
                }
            }
        }
        @if let Some(message) = field("message_id") {
            div.panel {
                strong { "From a mail" }
                @if let Some(from) = field("from") { " from " (from) }
                @if let Some(subject) = field("subject") { ": " em { (subject) } }
                " " span.mono.muted { (message) }
            }
        }
    }
}

/// One change to one memory through the API: `method` on the memory's path plus `suffix`.
struct Act<'a> {
    method: Method,
    suffix: &'a str,
    body: Option<Value>,
    /// The `?done=` of the redirect back to the memory.
    done: &'a str,
}

async fn act(state: &Dashboard, change: &Change, name: &str, id: &str, act: Act<'_>) -> Response {
    let viewer = &change.viewer;
    let page = format!("collections/{}/memories/{}", segment(name), segment(id));
    let path = format!(
        "{}/memories/{}{}",
        collection_path(name),
        segment(id),
        act.suffix
    );
    match state.api.call(viewer, act.method, &path, act.body).await {
        Ok(_) => see_other(&viewer.base, &format!("{page}?done={}", act.done)),
        Err(failure) => layout::failed(viewer, &failure, &page),
    }
}

/// `POST .../{id}/edit`: text, category and importance, by PATCH.
async fn edit(
    State(state): State<Dashboard>,
    Path((name, id)): Path<(String, String)>,
    change: Change,
) -> Response {
    let fields = &change.fields;
    let mut body = json!({ "text": fields.raw("text") });
    if let Some(category) = fields.get("category") {
        body["category"] = json!(category);
    }
    if let Some(importance) = fields.get("importance") {
        match importance.parse::<f64>() {
            Ok(importance) => body["importance"] = json!(importance),
            Err(_) => {
                let back = format!("collections/{}/memories/{}", segment(&name), segment(&id));
                return layout::failed(
                    &change.viewer,
                    &invalid("importance must be a number from 0 to 1"),
                    &back,
                );
            }
        }
    }
    let edit = Act {
        method: Method::PATCH,
        suffix: "",
        body: Some(body),
        done: "saved",
    };
    act(&state, &change, &name, &id, edit).await
}

/// `POST .../{id}/pin`.
async fn pin(
    State(state): State<Dashboard>,
    Path((name, id)): Path<(String, String)>,
    change: Change,
) -> Response {
    let pinned = change.fields.flag("pinned");
    let done = if pinned { "pinned" } else { "unpinned" };
    let pin = Act {
        method: Method::POST,
        suffix: "/pin",
        body: Some(json!({ "pinned": pinned })),
        done,
    };
    act(&state, &change, &name, &id, pin).await
}

/// `POST .../{id}/archive`.
async fn archive(
    State(state): State<Dashboard>,
    Path((name, id)): Path<(String, String)>,
    change: Change,
) -> Response {
    let archived = change.fields.flag("archived");
    let done = if archived { "archived" } else { "restored" };
    let archive = Act {
        method: Method::POST,
        suffix: "/archive",
        body: Some(json!({ "archived": archived })),
        done,
    };
    act(&state, &change, &name, &id, archive).await
}

/// `POST .../{id}/delete`.
async fn delete(
    State(state): State<Dashboard>,
    Path((name, id)): Path<(String, String)>,
    change: Change,
) -> Response {
    let viewer = &change.viewer;
    let path = format!("{}/memories/{}", collection_path(&name), segment(&id));
    let list = format!("collections/{}/memories", segment(&name));
    match state.api.call(viewer, Method::DELETE, &path, None).await {
        Ok(_) => see_other(&viewer.base, &format!("{list}?done=deleted")),
        Err(failure) => layout::failed(viewer, &failure, &list),
    }
}

/// `POST .../{id}/reinstate`: the superseded value is current again, as a new memory
/// (the API's `reinstate`); on to that memory, whose history shows the whole chain.
async fn reinstate(
    State(state): State<Dashboard>,
    Path((name, id)): Path<(String, String)>,
    change: Change,
) -> Response {
    let viewer = &change.viewer;
    let path = format!(
        "{}/memories/{}/reinstate",
        collection_path(&name),
        segment(&id)
    );
    let back = format!("collections/{}/contradictions", segment(&name));
    match state.api.call(viewer, Method::POST, &path, None).await {
        Ok(memory) => see_other(
            &viewer.base,
            &format!(
                "collections/{}/memories/{}?done=reinstated",
                segment(&name),
                segment(text(&memory, "id"))
            ),
        ),
        Err(failure) => layout::failed(viewer, &failure, &back),
    }
}

/// `GET .../contradictions`: each superseded memory beside the one that replaced it.
async fn contradictions(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Path(name): Path<String>,
) -> Response {
    let here = format!("collections/{}", segment(&name));
    let path = format!("{}/contradictions?limit=100", collection_path(&name));
    let pairs = match state.api.get(&viewer, &path).await {
        Ok(pairs) => pairs,
        Err(failure) => return layout::failed(&viewer, &failure, &here),
    };
    let pairs = items(&pairs, "contradictions");
    let memory = |value: &Value| format!("{here}/memories/{}", segment(text(value, "id")));
    let content = html! {
        p.small { a href=(here) { "← " (name) } }
        p.muted { "When a newer fact replaces an older one on the same slot, the older leaves search. Review each pair: keep the newer (nothing to do), restore the older (it becomes current again, and the newer is kept in the history), archive the newer to drop it from search, or edit either." }
        @if pairs.is_empty() {
            (layout::empty("No contradictions: no memory of this collection has been superseded.", html! {}))
        }
        @for pair in pairs {
            div.panel {
                p.small.muted {
                    @if let Some(slot) = pair["slot"].as_str() { "Slot " code { (slot) } " · " }
                    "superseded " (layout::when(&pair["superseded_at"]))
                    @if !pair["until"].is_null() { " · the newer holds until " (layout::when(&pair["until"])) }
                }
                div.pair {
                    div {
                        (layout::badge("good", "newer, current"))
                        p.text { (text(&pair["current"], "text")) }
                        a href=(memory(&pair["current"])) { "Open" }
                        @if viewer.may_write() {
                            " "
                            form.inline method="post" action=(format!("{}/archive", memory(&pair["current"]))) {
                                (layout::csrf(&viewer))
                                input type="hidden" name="archived" value="true";
                                button.secondary type="submit" { "Archive the newer" }
                            }
                        }
                    }
                    div {
                        (layout::badge("bad", "older, superseded"))
                        p.text { (text(&pair["superseded"], "text")) }
                        a href=(memory(&pair["superseded"])) { "Open" }
                        @if viewer.may_write() && pair["until"].is_null() {
                            " "
                            form.inline method="post" action=(format!("{}/reinstate", memory(&pair["superseded"]))) {
                                (layout::csrf(&viewer))
                                button.secondary type="submit" { "Restore the older" }
                            }
                        }
                    }
                }
            }
        }
    };
    layout::page(
        &viewer,
        "collections",
        &format!("Contradictions in {name}"),
        content,
    )
}
