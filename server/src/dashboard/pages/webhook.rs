//! The account's webhook: its URL and events, setting it (the signing secret shown once),
//! removing it, and its deliveries (waiting, and the latest attempts with their outcome).

use axum::extract::{Query, State};
use axum::http::Method;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use maud::{html, Markup};
use serde_json::{json, Value};

use super::collections::Done;
use crate::dashboard::layout::{self, items, text};
use crate::dashboard::session::{Change, Viewer};
use crate::dashboard::{see_other, Dashboard};

pub fn routes() -> Router<Dashboard> {
    Router::new()
        .route("/dashboard/webhook", get(show).post(set))
        .route("/dashboard/webhook/delete", post(delete))
}

async fn render(
    state: &Dashboard,
    viewer: &Viewer,
    done: Option<&str>,
    created: Option<&Value>,
) -> Response {
    let config = state
        .api
        .get(viewer, "/v1/memory/webhook/config")
        .await
        .ok();
    let deliveries = if viewer.is_owner() {
        state
            .api
            .get(viewer, "/v1/memory/webhook/deliveries")
            .await
            .ok()
    } else {
        None
    };
    let content = html! {
        (layout::done_notice(done))
        @if let Some(created) = created {
            div.notice.secret role="status" {
                p { strong { "Webhook set. Its signing secret is shown only this once:" } }
                p { code #webhook-secret { (text(created, "secret")) } " " button.secondary type="button" data-copy="webhook-secret" { "Copy" } }
                p.small { "Each delivery carries " code { "X-Service-Signature" } ", the HMAC-SHA256 of its body keyed by this secret." }
            }
        }
        @match &config {
            Some(config) if !text(config, "url").is_empty() => {
                div.panel {
                    dl.facts {
                        dt { "URL" } dd.mono { (text(config, "url")) }
                        dt { "Events" } dd { @for (i, event) in items(config, "events").iter().enumerate() { @if i > 0 { ", " } code { (event.as_str().unwrap_or("")) } } }
                        dt { "Since" } dd { (layout::when(&config["created_at"])) }
                    }
                }
                @if let Some(deliveries) = &deliveries {
                    (recent(deliveries))
                }
                @if viewer.is_owner() {
                    form method="post" action="webhook/delete" data-confirm="Remove the webhook? Deliveries stop." {
                        (layout::csrf(viewer))
                        button.danger type="submit" { "Remove the webhook" }
                    }
                }
            }
            _ => {
                (layout::empty("No webhook: memvault announces nothing. Set a URL to receive memory.created, memory.updated and memory.deleted.", html! {}))
            }
        }
        @if viewer.is_owner() {
            h2 { "Set the URL" }
            form.panel.row method="post" action="webhook" {
                (layout::csrf(viewer))
                label { "URL (https, or http to a host you name)" input type="url" name="url" required placeholder="https://example.com/hooks/memvault"; }
                button type="submit" { "Save and show the secret" }
            }
            p.small.muted { "Saving a URL makes a new signing secret; the old one stops verifying." }
        }
    };
    layout::page(viewer, "webhook", "Webhook", content)
}

/// The events still to be sent and the latest attempts; refreshes itself every 5 s
/// while the page is open (htmx), and reads as it is without script.
fn recent(deliveries: &Value) -> Markup {
    let pending = items(deliveries, "pending");
    let attempts = items(deliveries, "attempts");
    html! {
        div #deliveries hx-get="webhook" hx-trigger="every 5s" hx-select="#deliveries" hx-swap="outerHTML" hx-disinherit="*" {
            h2 { "Deliveries" }
            @if !pending.is_empty() {
                p { (pending.len()) " event(s) waiting to be sent; the oldest is due " (layout::when(&pending[0]["next_attempt_at"])) "." }
            }
            @if attempts.is_empty() {
                (layout::empty("No delivery attempted yet on this server since it started. Add, change or delete a memory to send one.", html! {}))
            } @else {
                div.table-wrap { table {
                    thead { tr { th { "When" } th { "Event" } th { "Attempt" } th { "Outcome" } th.hide-narrow { "Delivery" } th.num { "ms" } } }
                    tbody {
                        @for attempt in attempts {
                            tr {
                                td.small { (layout::when(&attempt["at"])) }
                                td { code { (text(attempt, "event")) } }
                                td.num { (attempt["attempt"].as_u64().unwrap_or(0)) }
                                td {
                                    @match text(attempt, "outcome") {
                                        "delivered" => (layout::badge("good", "delivered")),
                                        "retrying" => (layout::badge("warn", "retrying")),
                                        other => (layout::badge("bad", other)),
                                    }
                                    @if let Some(reason) = attempt["reason"].as_str() { " " span.small { (reason) } }
                                }
                                td.hide-narrow.mono.small { (text(attempt, "delivery_id")) }
                                td.num { (attempt["duration_ms"].as_u64().unwrap_or(0)) }
                            }
                        }
                    }
                } }
            }
        }
    }
}

/// `GET /dashboard/webhook`.
async fn show(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Query(done): Query<Done>,
) -> Response {
    render(&state, &viewer, done.message(), None).await
}

/// `POST /dashboard/webhook`.
async fn set(State(state): State<Dashboard>, change: Change) -> Response {
    let viewer = &change.viewer;
    let body = json!({ "url": change.fields.get("url").unwrap_or("") });
    match state
        .api
        .call(viewer, Method::PUT, "/v1/memory/webhook/config", Some(body))
        .await
    {
        Ok(created) => render(&state, viewer, None, Some(&created)).await,
        Err(failure) => layout::failed(viewer, &failure, "webhook"),
    }
}

/// `POST /dashboard/webhook/delete`.
async fn delete(State(state): State<Dashboard>, change: Change) -> Response {
    let viewer = &change.viewer;
    match state
        .api
        .call(viewer, Method::DELETE, "/v1/memory/webhook/config", None)
        .await
    {
        Ok(_) => see_other(&viewer.base, "webhook?done=removed"),
        Err(failure) => layout::failed(viewer, &failure, "webhook"),
    }
}
