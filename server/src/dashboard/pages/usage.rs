//! Usage and spend: memories written per day, LLM tokens and cost per day and this month
//! by purpose and model, and the monthly cap.

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::http::Method;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use chrono::{Duration, Utc};
use maud::html;
use memvault_core::service::access::Read;
use memvault_storage::CollectionName;
use serde_json::{json, Value};

use super::collections::Done;
use crate::dashboard::layout::{self, items, number, text};
use crate::dashboard::session::{Change, Viewer};
use crate::dashboard::{see_other, Dashboard};

/// Days the chart of writes covers.
const DAYS: i64 = 30;

pub fn routes() -> Router<Dashboard> {
    Router::new().route("/dashboard/usage", get(show).post(set_cap))
}

/// Memories created per day over the last [`DAYS`] days, in the collections the viewer
/// may read, oldest day first.
fn writes_per_day(state: &Dashboard, viewer: &Viewer, collections: &Value) -> Vec<(String, f64)> {
    let today = Utc::now().date_naive();
    let first = today - Duration::days(DAYS - 1);
    let mut days: BTreeMap<chrono::NaiveDate, f64> = (0..DAYS)
        .map(|offset| (first + Duration::days(offset), 0.0))
        .collect();
    for collection in collections.as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let Ok(name) = CollectionName::parse(text(collection, "name")) else {
            continue;
        };
        let Ok(access) = state.app.authorizer.authorize::<Read>(&viewer.agent, name) else {
            continue;
        };
        // Listing order is pinned first, then newest first: the walk stops at the first
        // unpinned memory older than the chart.
        let _ = state
            .app
            .memories
            .walk_created(&access, |pinned, created_at| {
                let day = created_at.date_naive();
                if let Some(count) = days.get_mut(&day) {
                    *count += 1.0;
                }
                pinned || day >= first
            });
    }
    days.into_iter()
        .map(|(day, count)| (day.format("%m-%d").to_string(), count))
        .collect()
}

/// `GET /dashboard/usage`.
async fn show(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Query(done): Query<Done>,
) -> Response {
    let spend = match state.api.get(&viewer, "/v1/memory/spend-cap").await {
        Ok(spend) => spend,
        Err(failure) => return layout::failed(&viewer, &failure, "./"),
    };
    let stats = state.api.get(&viewer, "/v1/memory/admin/stats").await.ok();
    let collections = state
        .api
        .get(&viewer, "/v1/memory/collections")
        .await
        .unwrap_or(Value::Null);
    let writes = writes_per_day(&state, &viewer, &collections);
    let by_day = state
        .app
        .settings
        .usage_by_day(&viewer.agent.tenant_id, DAYS as u32)
        .await
        .unwrap_or_default();
    let day_label = |day: &chrono::NaiveDate| day.format("%m-%d").to_string();
    let tokens_per_day: Vec<(String, f64)> = by_day
        .iter()
        .map(|(day, rows)| {
            let tokens: u64 = rows
                .iter()
                .map(|row| row.prompt_tokens + row.completion_tokens)
                .sum();
            (day_label(day), tokens as f64)
        })
        .collect();
    let cost_per_day: Vec<(String, f64)> = by_day
        .iter()
        .map(|(day, rows)| (day_label(day), rows.iter().map(|row| row.cost_usd).sum()))
        .collect();
    let used_days: Vec<_> = by_day
        .iter()
        .rev()
        .filter(|(_, rows)| !rows.is_empty())
        .collect();
    let usage = items(&spend, "usage");
    let tokens: Vec<(String, f64)> = usage
        .iter()
        .map(|row| {
            let total = row["prompt_tokens"].as_f64().unwrap_or(0.0)
                + row["completion_tokens"].as_f64().unwrap_or(0.0);
            (
                format!("{} {}", text(row, "purpose"), text(row, "model")),
                total,
            )
        })
        .collect();
    let content = html! {
        (layout::done_notice(done.message()))
        div.cards {
            div.card { div.n { "$" (format!("{:.4}", spend["spent_usd"].as_f64().unwrap_or(0.0))) } div.l { "LLM spend in " (text(&spend, "month")) } }
            div.card { div.n { @if let Some(cap) = spend["monthly_usd"].as_f64() { "$" (format!("{cap:.2}")) } @else { "none" } } div.l { "monthly cap" } }
            @if let Some(stats) = &stats {
                div.card { div.n { (number(&stats["memories"])) } div.l { "memories" } }
                div.card { div.n { (layout::bytes(stats["storage_bytes"].as_u64().unwrap_or(0))) } div.l { "stored (" (layout::bytes(stats["files_bytes"].as_u64().unwrap_or(0))) " in files)" } }
            }
        }
        @if spend["over_cap"].as_bool() == Some(true) {
            div.notice.error { "Over the cap: remember skips extraction until the month ends or the cap is raised." }
        }
        h2 { "Memories written per day" }
        (layout::bar_chart("Memories written per day, last 30 days", &writes, "memories"))
        h2 { "LLM use per day" }
        @if used_days.is_empty() {
            p.muted { "No LLM call in the last " (DAYS) " days: with no LLM configured, remember uses the built-in rules, which cost nothing." }
        } @else {
            (layout::bar_chart("LLM tokens per day, last 30 days", &tokens_per_day, "tokens"))
            (layout::bar_chart("LLM cost per day (USD), last 30 days", &cost_per_day, "USD"))
            div.table-wrap { table {
                thead { tr { th { "Day" } th { "Purpose" } th { "Model" } th { "Billed" } th.num { "Calls" } th.num { "Tokens" } th.num { "Cost (USD)" } } }
                tbody {
                    @for (day, rows) in &used_days {
                        @for row in rows.iter() {
                            tr {
                                td { (day.format("%Y-%m-%d")) }
                                td { (row.purpose) }
                                td { (row.model) }
                                td { @if row.own_llm { "own LLM" } @else { "platform" } }
                                td.num { (row.calls) }
                                td.num { (row.prompt_tokens + row.completion_tokens) }
                                td.num { (format!("{:.4}", row.cost_usd)) }
                            }
                        }
                    }
                }
            } }
        }
        h2 { "LLM use this month" }
        @if usage.is_empty() {
            p.muted { "No LLM call this month." }
        } @else {
            (layout::bar_chart("Tokens by purpose and model", &tokens, "tokens"))
            div.table-wrap { table {
                thead { tr { th { "Purpose" } th { "Model" } th { "Billed" } th.num { "Calls" } th.num { "Prompt tokens" } th.num { "Completion tokens" } th.num { "Cost (USD)" } } }
                tbody {
                    @for row in usage {
                        tr {
                            td { (text(row, "purpose")) }
                            td { (text(row, "model")) }
                            td { @if row["own_llm"].as_bool() == Some(true) { "own LLM" } @else { "platform" } }
                            td.num { (number(&row["calls"])) }
                            td.num { (number(&row["prompt_tokens"])) }
                            td.num { (number(&row["completion_tokens"])) }
                            td.num { (format!("{:.4}", row["cost_usd"].as_f64().unwrap_or(0.0))) }
                        }
                    }
                }
            } }
        }
        @if viewer.is_owner() {
            h2 { "Monthly cap" }
            form.panel.row method="post" action="usage" {
                (layout::csrf(&viewer))
                label { "USD per month (empty: no cap)" input type="number" name="monthly_usd" min="0" step="0.01"
                    value=(spend["monthly_usd"].as_f64().map(|cap| format!("{cap:.2}")).unwrap_or_default()); }
                button type="submit" { "Save the cap" }
            }
        }
    };
    layout::page(&viewer, "usage", "Usage & spend", content)
}

/// `POST /dashboard/usage`: the cap, or none.
async fn set_cap(State(state): State<Dashboard>, change: Change) -> Response {
    let viewer = &change.viewer;
    let cap = match change.fields.get("monthly_usd") {
        None => Value::Null,
        Some(raw) => match raw.parse::<f64>() {
            Ok(cap) => json!(cap),
            Err(_) => json!(raw),
        },
    };
    let body = json!({ "monthly_usd": cap });
    match state
        .api
        .call(viewer, Method::PUT, "/v1/memory/spend-cap", Some(body))
        .await
    {
        Ok(_) => see_other(&viewer.base, "usage?done=saved"),
        Err(failure) => layout::failed(viewer, &failure, "usage"),
    }
}
