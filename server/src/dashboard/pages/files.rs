//! Files and ingest batches: drop files into a collection (read in the background), the
//! recent batches, one batch's items with their state and reason (updating by itself while
//! it runs), and retrying the failed ones.

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use maud::{html, Markup};
use memvault_core::service::access::Read;
use memvault_storage::{CollectionName, IngestBatchRecord, IngestItemState};
use serde::Deserialize;
use serde_json::Value;

use super::collections::Done;
use crate::dashboard::client::{read_json, segment, Failure};
use crate::dashboard::layout::{self, items, text};
use crate::dashboard::session::{Change, Upload, Viewer};
use crate::dashboard::{see_other, Dashboard};

pub fn routes() -> Router<Dashboard> {
    Router::new()
        .route("/dashboard/files", get(list))
        .route("/dashboard/files/upload", post(upload))
        .route("/dashboard/files/batches/{batch_id}", get(batch))
        .route("/dashboard/files/batches/{batch_id}/retry", post(retry))
}

#[derive(Deserialize, Default)]
struct FilesQuery {
    collection: Option<String>,
    /// Only the batches holding this file.
    file: Option<String>,
    done: Option<String>,
}

fn progress(batch: &IngestBatchRecord) -> Markup {
    let total = batch.items.len().max(1);
    let finished = batch
        .items
        .iter()
        .filter(|item| item.state.is_finished())
        .count();
    let failed = batch
        .items
        .iter()
        .filter(|item| item.state == IngestItemState::Failed)
        .count();
    html! {
        progress max=(total) value=(finished) title=(format!("{finished} of {total} finished")) {}
        " "
        span.small.muted { (finished) " of " (batch.items.len()) " finished"
            @if failed > 0 { ", " (failed) " failed" } }
    }
}

/// `GET /dashboard/files`.
async fn list(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Query(query): Query<FilesQuery>,
) -> Response {
    let collections = match state.api.get(&viewer, "/v1/memory/collections").await {
        Ok(value) => value,
        Err(failure) => return layout::failed(&viewer, &failure, "./"),
    };
    let names: Vec<String> = collections
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .map(|collection| text(collection, "name").to_owned())
        .collect();
    let chosen = query
        .collection
        .as_deref()
        .filter(|name| names.iter().any(|known| known == name))
        .or(names.first().map(String::as_str))
        .map(str::to_owned);
    let batches = state
        .app
        .files
        .batches(&viewer.agent.tenant_id)
        .await
        .unwrap_or_default();
    let readable = |batch: &&IngestBatchRecord| {
        state
            .app
            .authorizer
            .authorize::<Read>(&viewer.agent, batch.collection.clone())
            .is_ok()
    };
    let shown: Vec<&IngestBatchRecord> = batches
        .iter()
        .filter(readable)
        .filter(|batch| {
            query
                .file
                .as_deref()
                .is_none_or(|file| batch.items.iter().any(|item| item.file_id == file))
        })
        .take(50)
        .collect();
    let done = Done {
        done: query.done.clone(),
    };
    let content = html! {
        (layout::done_notice(done.message()))
        @if viewer.may_write() {
            @if let Some(chosen) = &chosen {
                h2 { "Drop files" }
                form.panel.row method="get" action="files" {
                    label { "Into collection" select name="collection" {
                        @for name in &names { option value=(name) selected[name == chosen] { (name) } }
                    } }
                    button.secondary type="submit" { "Choose" }
                }
                form.panel.stack method="post" enctype="multipart/form-data" hx-boost="false"
                    action=(format!("files/upload?collection={}&csrf={}", segment(chosen), viewer.csrf)) {
                    input type="hidden" name="async_ingest" value="true";
                    div { label for="files" { "Files for " strong { (chosen) } " (PDF, Office, text, images, audio, mail, archives; 10 MB each)" }
                        input #files type="file" name="files" multiple required; }
                    button type="submit" { "Upload" }
                }
            } @else {
                (layout::empty("Create a collection first: files become memories of a collection.", html! { p { a href="collections" { "Collections" } } }))
            }
        }
        h2 { "Recent batches" }
        @if shown.is_empty() {
            p.muted { "No files dropped yet." }
        } @else {
            div.table-wrap { table {
                thead { tr { th { "Batch" } th { "Collection" } th { "Files" } th { "Progress" } th.hide-narrow { "Created" } } }
                tbody {
                    @for batch in &shown {
                        tr {
                            td { a href=(format!("files/batches/{}", segment(&batch.id))) { (batch.id) } }
                            td { (batch.collection.as_str()) }
                            td { @for (i, item) in batch.items.iter().take(3).enumerate() { @if i > 0 { ", " } (item.filename) }
                                @if batch.items.len() > 3 { " and " (batch.items.len() - 3) " more" } }
                            td { (progress(batch)) }
                            td.hide-narrow.small { (batch.created_at.format("%Y-%m-%d %H:%M")) }
                        }
                    }
                }
            } }
        }
    };
    layout::page(&viewer, "files", "Files & ingest", content)
}

/// `POST /dashboard/files/upload?collection=&csrf=`: the multipart body goes to the API's
/// drop endpoint as it came; the new batch's page follows.
async fn upload(
    State(state): State<Dashboard>,
    Query(query): Query<FilesQuery>,
    upload: Upload,
) -> Response {
    let viewer = &upload.viewer;
    let Some(collection) = query
        .collection
        .filter(|name| CollectionName::parse(name).is_ok())
    else {
        let failure = Failure {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            detail: "choose a collection to drop the files into".to_owned(),
            code: "validation_failed".to_owned(),
        };
        return layout::failed(viewer, &failure, "files");
    };
    let content_type = upload
        .request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = Body::new(upload.request.into_body());
    let path = format!("/v1/memory/collections/{}/drop", segment(&collection));
    let response = state
        .api
        .send(viewer, Method::POST, &path, Some(&content_type), body)
        .await;
    match read_json(response).await {
        Ok(accepted) => see_other(
            &viewer.base,
            &format!("files/batches/{}", segment(text(&accepted, "batch_id"))),
        ),
        Err(failure) => layout::failed(
            viewer,
            &failure,
            &format!("files?collection={}", segment(&collection)),
        ),
    }
}

fn item_badge(state: &str) -> Markup {
    let kind = match state {
        "done" => "good",
        "failed" => "bad",
        _ => "warn",
    };
    layout::badge(kind, state)
}

/// `GET /dashboard/files/batches/{batch_id}`: while it runs, the panel reloads itself
/// every two seconds (htmx; without script, the page's refresh does the same).
async fn batch(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Path(batch_id): Path<String>,
    headers: axum::http::HeaderMap,
) -> Response {
    let path = format!("/v1/memory/ingest/batch/{}", segment(&batch_id));
    let batch = match state.api.get(&viewer, &path).await {
        Ok(batch) => batch,
        Err(failure) => return layout::failed(&viewer, &failure, "files"),
    };
    let complete = batch["complete"].as_bool() == Some(true);
    let collection = text(&batch, "collection").to_owned();
    let memory = |id: &str| {
        format!(
            "collections/{}/memories/{}",
            segment(&collection),
            segment(id)
        )
    };
    let panel = html! {
        div #batch hx-get=[(!complete).then(|| format!("files/batches/{}", segment(&batch_id)))]
            hx-trigger=[(!complete).then_some("every 2s")] hx-select="#batch" hx-swap="outerHTML" hx-disinherit="*" {
            div.cards {
                div.card { div.n { (layout::number(&batch["total"])) } div.l { "files" } }
                div.card { div.n { (layout::number(&batch["done"])) } div.l { "done" } }
                div.card { div.n { (layout::number(&batch["failed"])) } div.l { "failed" } }
                div.card { div.n { (layout::number(&batch["pending"])) } div.l { "pending" } }
            }
            p { @if complete { (layout::badge("good", "complete")) } @else { (layout::badge("warn", "running")) " updates by itself" } }
            div.table-wrap { table {
                thead { tr { th { "File" } th { "State" } th { "Why / memories" } th.num { "Size" } th.num.hide-narrow { "Attempts" } } }
                tbody {
                    @for item in items(&batch, "items") {
                        tr {
                            td { (text(item, "filename")) }
                            td { (item_badge(text(item, "state"))) }
                            td {
                                @if let Some(reason) = item["reason"].as_str() { span.small { (reason) } }
                                @for (i, id) in items(item, "memory_ids").iter().filter_map(Value::as_str).enumerate().take(20) {
                                    @if i > 0 { ", " }
                                    a href=(memory(id)) { "memory " (i + 1) }
                                }
                            }
                            td.num { (layout::bytes(item["size"].as_u64().unwrap_or(0))) }
                            td.num.hide-narrow { (layout::number(&item["attempts"])) }
                        }
                    }
                }
            } }
        }
    };
    if headers.contains_key("hx-request") {
        return (StatusCode::OK, axum::response::Html(panel.into_string())).into_response();
    }
    let failed = batch["failed"].as_u64().unwrap_or(0);
    let content = html! {
        p.small { "Into " a href=(format!("collections/{}", segment(&collection))) { (collection) } " · " a href="files" { "all batches" } }
        (panel)
        @if complete && failed > 0 && viewer.may_write() {
            form method="post" action=(format!("files/batches/{}/retry", segment(&batch_id))) {
                (layout::csrf(&viewer))
                button type="submit" { "Retry the failed files" }
            }
        }
        @if !complete { noscript { p.small { "This page does not update without JavaScript: reload it to see progress." } } }
    };
    layout::page(&viewer, "files", &format!("Batch {batch_id}"), content)
}

/// `POST /dashboard/files/batches/{batch_id}/retry`.
async fn retry(
    State(state): State<Dashboard>,
    Path(batch_id): Path<String>,
    change: Change,
) -> Response {
    let viewer = &change.viewer;
    let page = format!("files/batches/{}", segment(&batch_id));
    let path = format!("/v1/memory/ingest/batch/{}/retry", segment(&batch_id));
    match state.api.call(viewer, Method::POST, &path, None).await {
        Ok(_) => see_other(&viewer.base, &format!("{page}?done=retried")),
        Err(failure) => layout::failed(viewer, &failure, &page),
    }
}
