//! The account: who it is, its limits, export (a download), import (a JSON file of an
//! export), and deletion with confirmation.

use axum::extract::{FromRequest, Multipart, Path, State};
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE, SET_COOKIE};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use maud::html;
use serde_json::{json, Value};

use crate::dashboard::client::{read_json, segment, Failure};
use crate::dashboard::layout::{self, items, number, text};
use crate::dashboard::session::{self, Change, Upload, Viewer};
use crate::dashboard::{see_other, Dashboard};

/// The largest import file the dashboard takes (the API's body limit applies too).
const MAX_IMPORT_BYTES: usize = 64 * 1024 * 1024;

pub fn routes() -> Router<Dashboard> {
    Router::new()
        .route("/dashboard/account", get(show))
        .route("/dashboard/account/export", get(export))
        .route("/dashboard/account/import", post(import))
        .route(
            "/dashboard/account/imports/{import_id}",
            get(import_progress),
        )
        .route("/dashboard/account/delete", post(delete))
}

/// `GET /dashboard/account`.
async fn show(State(state): State<Dashboard>, viewer: Viewer) -> Response {
    let me = match state.api.get(&viewer, "/v1/memory/admin/me").await {
        Ok(me) => me,
        Err(failure) => return layout::failed(&viewer, &failure, "./"),
    };
    let stats = state.api.get(&viewer, "/v1/memory/admin/stats").await.ok();
    let limits = &me["limits"];
    let content = html! {
        div.panel {
            dl.facts {
                dt { "Name" } dd { (text(&me, "name")) }
                dt { "Email" } dd { (text(&me, "email")) }
                dt { "Tier" } dd { (text(&me, "tier")) @if me["admin"].as_bool() == Some(true) { " " (layout::badge("info", "operator")) } }
                dt { "Since" } dd { (layout::when(&me["created_at"])) }
                dt { "Signed in with" } dd { (text(&me["key"], "label")) " " span.mono.muted { (text(&me["key"], "id")) } }
            }
        }
        h2 { "Limits" }
        div.table-wrap { table { tbody {
            tr { th { "Memory text" } td { (number(&limits["memory_text_max_chars"])) " characters" } }
            tr { th { "Requests per minute per key" } td { (number(&limits["requests_per_minute"])) } }
            tr { th { "Collections" } td { @if limits["collections"].is_null() { "no limit" } @else { (number(&limits["collections"])) } } }
            tr { th { "Memories" } td { @if limits["memories"].is_null() { "no limit" } @else { (number(&limits["memories"])) }
                @if let Some(stats) = &stats { " (" (number(&stats["memories"])) " used)" } } }
            tr { th { "Storage" } td { @if limits["storage_bytes"].is_null() { "no limit" } @else { (layout::bytes(limits["storage_bytes"].as_u64().unwrap_or(0))) } } }
        } } }
        h2 { "Export" }
        p { "Every collection and memory (text and metadata, no vectors) as one JSON file. " a.button.secondary href="account/export" download hx-boost="false" { "Download the export" } }
        @if viewer.is_owner() {
            h2 { "Import" }
            form.panel.stack method="post" enctype="multipart/form-data" hx-boost="false"
                action=(format!("account/import?csrf={}", viewer.csrf)) {
                div { label for="import-file" { "An export of memvault (or a JSON object with a memories array)" }
                    input #import-file type="file" name="file" accept="application/json,.json" required; }
                div { label for="into" { "Into one collection (optional)" } input #into type="text" name="into_collection"; }
                button type="submit" { "Import" }
            }
            h2 { "Delete the account" }
            form.panel.row method="post" action="account/delete" data-confirm="Delete the account with every memory, file and key? This cannot be undone." {
                (layout::csrf(&viewer))
                label { "Type the account's name (" (text(&me, "name")) ") to erase it, with every memory, file and key"
                    input type="text" name="confirm" required autocomplete="off"; }
                button.danger type="submit" { "Delete the account" }
            }
        }
    };
    layout::page(&viewer, "account", "Account", content)
}

/// `GET /dashboard/account/export`: the API's export, as a download.
async fn export(State(state): State<Dashboard>, viewer: Viewer) -> Response {
    let response = state
        .api
        .send(
            &viewer,
            Method::GET,
            "/v1/memory/admin/export",
            None,
            axum::body::Body::empty(),
        )
        .await;
    if !response.status().is_success() {
        return match read_json(response).await {
            Err(failure) => layout::failed(&viewer, &failure, "account"),
            Ok(_) => layout::failed(&viewer, &unexpected(), "account"),
        };
    }
    let (mut parts, body) = response.into_parts();
    parts
        .headers
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if !parts.headers.contains_key(CONTENT_DISPOSITION) {
        parts.headers.insert(
            CONTENT_DISPOSITION,
            HeaderValue::from_static("attachment; filename=\"memvault-export.json\""),
        );
    }
    Response::from_parts(parts, body)
}

fn unexpected() -> Failure {
    Failure {
        status: StatusCode::BAD_GATEWAY,
        detail: "the API answered in a way the dashboard did not expect".to_owned(),
        code: "internal_error".to_owned(),
    }
}

fn invalid(detail: impl Into<String>) -> Failure {
    Failure {
        status: StatusCode::UNPROCESSABLE_ENTITY,
        detail: detail.into(),
        code: "validation_failed".to_owned(),
    }
}

/// `POST /dashboard/account/import?csrf=`: the uploaded JSON becomes the import's body.
async fn import(State(state): State<Dashboard>, upload: Upload) -> Response {
    let Upload { viewer, request } = upload;
    let mut multipart = match Multipart::from_request(request, &()).await {
        Ok(multipart) => multipart,
        Err(error) => return layout::failed(&viewer, &invalid(error.body_text()), "account"),
    };
    let mut file: Option<Vec<u8>> = None;
    let mut into: Option<String> = None;
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(error) => return layout::failed(&viewer, &invalid(error.body_text()), "account"),
        };
        let name = field.name().unwrap_or("").to_owned();
        let bytes = match field.bytes().await {
            Ok(bytes) => bytes,
            Err(error) => return layout::failed(&viewer, &invalid(error.body_text()), "account"),
        };
        if bytes.len() > MAX_IMPORT_BYTES {
            return layout::failed(
                &viewer,
                &invalid("the import file is larger than 64 MiB"),
                "account",
            );
        }
        match name.as_str() {
            "file" => file = Some(bytes.to_vec()),
            "into_collection" => {
                into = Some(String::from_utf8_lossy(&bytes).trim().to_owned())
                    .filter(|value| !value.is_empty())
            }
            _ => {}
        }
    }
    let Some(file) = file else {
        return layout::failed(&viewer, &invalid("choose a JSON file to import"), "account");
    };
    let mut body: Value = match serde_json::from_slice(&file) {
        Ok(body) => body,
        Err(error) => {
            return layout::failed(
                &viewer,
                &invalid(format!("the file is not JSON: {error}")),
                "account",
            )
        }
    };
    if let (Some(into), Some(object)) = (into, body.as_object_mut()) {
        object.insert("into_collection".to_owned(), json!(into));
    }
    let outcome = state
        .api
        .call(&viewer, Method::POST, "/v1/memory/admin/import", Some(body))
        .await;
    match outcome {
        // A large import runs in the background: on to its progress.
        Ok(result) if result["import_id"].is_string() => see_other(
            &viewer.base,
            &format!("account/imports/{}", segment(text(&result, "import_id"))),
        ),
        Ok(result) => {
            let content = html! {
                div.notice.ok { "Imported " (number(&result["imported"])) " memories; skipped " (number(&result["skipped"])) "." }
                @let collections = items(&result, "collections");
                @if !collections.is_empty() {
                    p { "Into: " @for (i, name) in collections.iter().enumerate() { @if i > 0 { ", " }
                        a href=(format!("collections/{}", segment(name.as_str().unwrap_or("")))) { (name.as_str().unwrap_or("")) } } }
                }
                @for error in items(&result, "errors") { p.small.muted { (error.to_string()) } }
                p { a href="account" { "Back to the account" } }
            };
            layout::page(&viewer, "account", "Import", content)
        }
        Err(failure) => layout::failed(&viewer, &failure, "account"),
    }
}

/// `POST /dashboard/account/delete`: erasure starts; the session ends with the account.
async fn delete(
    State(state): State<Dashboard>,
    headers: axum::http::HeaderMap,
    change: Change,
) -> Response {
    let viewer = &change.viewer;
    let body = json!({ "confirm": change.fields.raw("confirm").trim() });
    match state
        .api
        .call(
            viewer,
            Method::POST,
            "/v1/memory/admin/delete-account",
            Some(body),
        )
        .await
    {
        Ok(_) => {
            if let Some(id) = session::cookie(&headers) {
                // The erasure removes the account's sessions too; this one ends now.
                if let Err(error) = state.sessions.close(&id).await {
                    tracing::warn!(%error, "the deleted account's session could not be closed");
                }
            }
            let mut response = layout::bare(
                StatusCode::OK,
                &viewer.base,
                "Account deleted",
                html! {
                    h1 { "The account is being erased" }
                    p { "Every memory, file and key of it goes; its keys no longer work." }
                },
            );
            response
                .headers_mut()
                .insert(SET_COOKIE, session::cleared_cookie(state.secure_cookies));
            response.into_response()
        }
        Err(failure) => layout::failed(viewer, &failure, "account"),
    }
}

/// `GET /dashboard/account/imports/{import_id}`: a background import's progress; the page
/// refreshes itself every 2 s (htmx) until it is done or failed.
async fn import_progress(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Response {
    let path = format!("/v1/memory/admin/import/{}", segment(&id));
    let job = match state.api.get(&viewer, &path).await {
        Ok(job) => job,
        Err(failure) => return layout::failed(&viewer, &failure, "account"),
    };
    let running = matches!(text(&job, "state"), "queued" | "running");
    let total = job["total"].as_u64().unwrap_or(0);
    let imported = job["imported"].as_u64().unwrap_or(0);
    let here = format!("account/imports/{}", segment(&id));
    let content = html! {
        div #import hx-get=[running.then(|| here.clone())] hx-trigger=[running.then_some("every 2s")]
            hx-select="#import" hx-swap="outerHTML" hx-disinherit="*" {
            div.panel {
                dl.facts {
                    dt { "Import" } dd.mono { (id) }
                    dt { "State" } dd { (layout::badge(match text(&job, "state") { "done" => "good", "failed" => "bad", _ => "warn" }, text(&job, "state"))) }
                    dt { "Progress" } dd {
                        progress max=(total.max(1)) value=(imported) title=(format!("{imported} of {total} imported")) {}
                        " " (imported) " of " (total) " imported"
                    }
                    dt { "Skipped" } dd { (number(&job["skipped"])) }
                    @if let Some(detail) = job["detail"].as_str() { dt { "Why it failed" } dd { (detail) } }
                    dt { "Started" } dd { (layout::when(&job["created_at"])) }
                }
            }
            @let collections = items(&job, "collections");
            @if !collections.is_empty() {
                p { "Into: " @for (i, name) in collections.iter().enumerate() { @if i > 0 { ", " }
                    a href=(format!("collections/{}", segment(name.as_str().unwrap_or("")))) { (name.as_str().unwrap_or("")) } } }
            }
            @for error in items(&job, "errors") { p.small.muted { (error.to_string()) } }
        }
        @if running { noscript { p.small { "This page does not update without JavaScript: reload it to see progress." } } }
        p { a href="account" { "Back to the account" } }
    };
    layout::page(&viewer, "account", "Import", content)
}
