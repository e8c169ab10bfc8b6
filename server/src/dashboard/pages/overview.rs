//! The overview: memories per collection, what needs attention, spend against the cap,
//! and the latest entries of the audit log.

use axum::extract::State;
use axum::response::Response;
use maud::html;
use serde_json::Value;

use crate::dashboard::client::segment;
use crate::dashboard::layout::{self, number, text};
use crate::dashboard::session::Viewer;
use crate::dashboard::Dashboard;

/// `GET /dashboard/`.
pub async fn show(State(state): State<Dashboard>, viewer: Viewer) -> Response {
    let api = &state.api;
    let collections = match api.get(&viewer, "/v1/memory/collections").await {
        Ok(value) => value,
        Err(failure) => return layout::failed(&viewer, &failure, "./"),
    };
    let collections = collections.as_array().cloned().unwrap_or_default();
    let stats = api.get(&viewer, "/v1/memory/admin/stats").await.ok();
    let spend = api.get(&viewer, "/v1/memory/spend-cap").await.ok();
    let mut attention = Vec::new();
    for collection in &collections {
        let name = text(collection, "name");
        let path = format!("/v1/memory/collections/{}/health", segment(name));
        if let Ok(health) = api.get(&viewer, &path).await {
            let counts = &health;
            let needs = counts["needs_attention"].as_u64().unwrap_or(0);
            if needs > 0 {
                attention.push((name.to_owned(), counts.clone()));
            }
        }
    }
    let recent = if viewer.is_owner() {
        state
            .app
            .audit
            .entries(&viewer.agent.tenant_id, 7, 8)
            .await
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let readable: Vec<&Value> = collections.iter().collect();
    let content = html! {
        div.cards {
            div.card { div.n { (collections.len()) } div.l { @if collections.len() == 1 { "collection" } @else { "collections" } } }
            @if let Some(stats) = &stats {
                div.card { div.n { (number(&stats["memories"])) } div.l { "memories" } }
                div.card { div.n { (number(&stats["added_7d"])) } div.l { "added in 7 days" } }
                div.card { div.n { (layout::bytes(stats["storage_bytes"].as_u64().unwrap_or(0))) } div.l { "stored" } }
            }
            @if let Some(spend) = &spend {
                div.card {
                    div.n { "$" (format!("{:.2}", spend["spent_usd"].as_f64().unwrap_or(0.0).max(0.0))) }
                    div.l {
                        "LLM spend in " (text(spend, "month"))
                        @if let Some(cap) = spend["monthly_usd"].as_f64() { " of $" (format!("{cap:.2}")) }
                        @else { ", no cap" }
                    }
                    @if spend["over_cap"].as_bool() == Some(true) {
                        (layout::badge("bad", "over the cap: extraction paused"))
                    }
                }
            }
        }
        h2 { "Collections" }
        @if readable.is_empty() {
            (layout::empty("No collections yet.", html! {
                p { "Create one on the " a href="collections" { "Collections" } " page, or write a memory through the API: "
                    code { "POST /v1/memory/collections/{name}/memories" } " creates its collection." }
            }))
        } @else {
            div.table-wrap { table {
                thead { tr { th { "Collection" } th.num { "Memories" } th.hide-narrow { "Description" } } }
                tbody {
                    @for collection in &readable {
                        @let name = text(collection, "name");
                        tr {
                            td { a href=(format!("collections/{}", segment(name))) { (name) } }
                            td.num { (number(&collection["memory_count"])) }
                            td.hide-narrow.muted { (text(collection, "description")) }
                        }
                    }
                }
            } }
        }
        h2 { "Needs attention" }
        @if attention.is_empty() {
            p.muted { "Nothing: no stale, expired or superseded memories waiting for review." }
        } @else {
            ul {
                @for (name, counts) in &attention {
                    li {
                        a href=(format!("collections/{}", segment(name))) { (name) } ": "
                        (number(&counts["stale"])) " stale, "
                        (number(&counts["expired"])) " expired, "
                        a href=(format!("collections/{}/contradictions", segment(name))) {
                            (number(&counts["supersessions"])) " superseded"
                        }
                    }
                }
            }
        }
        @if viewer.is_owner() {
            h2 { "Latest activity" }
            @if recent.is_empty() {
                p.muted { "No changes in the last 7 days." }
            } @else {
                div.table-wrap { table {
                    thead { tr { th { "When" } th { "Who" } th { "Action" } th.hide-narrow { "Resource" } th.num { "Status" } } }
                    tbody {
                        @for entry in &recent {
                            tr {
                                td.small { (entry.at.format("%Y-%m-%d %H:%M")) }
                                td { (entry.agent_label) }
                                td { code { (entry.action) } }
                                td.hide-narrow.mono { (entry.resource) }
                                td.num { (entry.status) }
                            }
                        }
                    }
                } }
                p { a href="audit" { "The whole audit log" } }
            }
        }
    };
    layout::page(&viewer, "overview", "Overview", content)
}
