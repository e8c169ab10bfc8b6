//! The operator's pages (the owner key of an admin-flagged tenant; aggregates only):
//! request and stage metrics, tenants by tier and LLM spend, connectors, memory health
//! across tenants, analytics; and the public status page as HTML (`/status`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use maud::html;
use serde_json::Value;

use crate::dashboard::layout::{self, items, number, text};
use crate::dashboard::session::Viewer;
use crate::dashboard::Dashboard;

pub fn routes() -> Router<Dashboard> {
    Router::new()
        .route("/dashboard/operator/metrics", get(metrics))
        .route("/dashboard/operator/tenants", get(tenants))
        .route("/dashboard/operator/health", get(health))
        .route("/dashboard/operator/analytics", get(analytics))
        .route("/dashboard/operator/status", get(status_for_operator))
        .route("/status", get(public_status))
}

fn ms(value: &Value) -> String {
    format!("{:.2}", value.as_f64().unwrap_or(0.0))
}

/// `GET /dashboard/operator/metrics`.
async fn metrics(State(state): State<Dashboard>, viewer: Viewer) -> Response {
    if let Some(refused) = layout::operator_only(&viewer) {
        return refused;
    }
    let metrics = match state.api.get(&viewer, "/v1/memory/admin/metrics").await {
        Ok(metrics) => metrics,
        Err(failure) => return layout::failed(&viewer, &failure, "./"),
    };
    let mut routes: Vec<&Value> = items(&metrics, "routes").iter().collect();
    routes.sort_by(|a, b| b["count"].as_u64().cmp(&a["count"].as_u64()));
    let p95: Vec<(String, f64)> = routes
        .iter()
        .take(12)
        .map(|route| {
            (
                text(route, "route")
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .to_owned(),
                route["p95_ms"].as_f64().unwrap_or(0.0),
            )
        })
        .collect();
    let stages = &metrics["stages"];
    let content = html! {
        p.muted.small { "This process, since " (layout::when(&metrics["since"])) "." }
        h2 { "Stages" }
        div.table-wrap { table {
            thead { tr { th { "Stage" } th.num { "Count" } th.num { "avg ms" } th.num { "p50 ms" } th.num { "p95 ms" } } }
            tbody {
                @for stage in ["embed", "cache_get", "search", "llm_extract"] {
                    tr { td { (stage) } td.num { (number(&stages[stage]["count"])) } td.num { (ms(&stages[stage]["avg_ms"])) }
                        td.num { (ms(&stages[stage]["p50_ms"])) } td.num { (ms(&stages[stage]["p95_ms"])) } }
                }
            }
        } }
        h2 { "p95 latency of the busiest routes" }
        (layout::bar_chart("p95 latency per route (ms)", &p95, "ms"))
        h2 { "Routes" }
        div.table-wrap { table {
            thead { tr { th { "Route" } th.num { "Count" } th.num { "4xx" } th.num { "5xx" } th.num { "avg ms" } th.num { "p50 ms" } th.num { "p95 ms" } } }
            tbody {
                @for route in &routes {
                    tr { td.mono { (text(route, "route")) } td.num { (number(&route["count"])) } td.num { (number(&route["errors_4xx"])) }
                        td.num { (number(&route["errors_5xx"])) } td.num { (ms(&route["avg_ms"])) } td.num { (ms(&route["p50_ms"])) } td.num { (ms(&route["p95_ms"])) } }
                }
            }
        } }
        h2 { "Counters" }
        @if let Some(counters) = metrics["counters"].as_object() {
            div.cards { @for (name, value) in counters { div.card { div.n { (number(value)) } div.l { (name) } } } }
        }
    };
    layout::page(&viewer, "op-metrics", "Metrics", content)
}

/// `GET /dashboard/operator/tenants`: tenants, memories and files by tier; LLM spend.
async fn tenants(State(state): State<Dashboard>, viewer: Viewer) -> Response {
    if let Some(refused) = layout::operator_only(&viewer) {
        return refused;
    }
    let usage = match state
        .api
        .get(&viewer, "/v1/memory/admin/usage?days=30")
        .await
    {
        Ok(usage) => usage,
        Err(failure) => return layout::failed(&viewer, &failure, "./"),
    };
    let content = html! {
        div.cards {
            div.card { div.n { (number(&usage["tenants"])) } div.l { "tenants" } }
            div.card { div.n { (layout::bytes(usage["storage"]["db_bytes"].as_u64().unwrap_or(0))) } div.l { "database" } }
            div.card { div.n { (layout::bytes(usage["storage"]["files_bytes"].as_u64().unwrap_or(0))) } div.l { "files" } }
            div.card { div.n { "$" (format!("{:.2}", usage["llm"]["total_cost_usd"].as_f64().unwrap_or(0.0))) } div.l { "LLM cost, 30 days" } }
        }
        h2 { "By tier" }
        div.table-wrap { table {
            thead { tr { th { "Tier" } th.num { "Tenants" } th.num { "Collections" } th.num { "Memories" } th.num { "Files" } } }
            tbody { @for tier in items(&usage, "tiers") {
                tr { td { (text(tier, "tier")) } td.num { (number(&tier["tenants"])) } td.num { (number(&tier["collections"])) }
                    td.num { (number(&tier["memories"])) } td.num { (layout::bytes(tier["files_bytes"].as_u64().unwrap_or(0))) } }
            } }
        } }
        h2 { "LLM use by purpose" }
        div.table-wrap { table {
            thead { tr { th { "Purpose" } th.num { "Calls" } th.num { "Prompt tokens" } th.num { "Completion tokens" } th.num { "Cost (USD)" } } }
            tbody { @for row in items(&usage["llm"], "by_purpose") {
                tr { td { (text(row, "purpose")) } td.num { (number(&row["calls"])) } td.num { (number(&row["prompt_tokens"])) }
                    td.num { (number(&row["completion_tokens"])) } td.num { (format!("{:.4}", row["cost_usd"].as_f64().unwrap_or(0.0))) } }
            } }
        } }
    };
    layout::page(&viewer, "op-tenants", "Tenants", content)
}

/// `GET /dashboard/operator/health`: memory health across tenants, and the connectors.
async fn health(State(state): State<Dashboard>, viewer: Viewer) -> Response {
    if let Some(refused) = layout::operator_only(&viewer) {
        return refused;
    }
    let health = match state
        .api
        .get(&viewer, "/v1/memory/admin/memory-health")
        .await
    {
        Ok(health) => health,
        Err(failure) => return layout::failed(&viewer, &failure, "./"),
    };
    let connectors = state
        .api
        .get(&viewer, "/v1/memory/admin/connectors?hours=24")
        .await
        .ok();
    let statuses = state
        .api
        .get(&viewer, "/v1/memory/admin/connectors/status")
        .await
        .ok();
    let counts = &health;
    let content = html! {
        div.cards {
            div.card { div.n { (number(&health["tenants"])) } div.l { "tenants" } }
            div.card { div.n { (number(&health["collections"])) } div.l { "collections" } }
            @for (field, label) in [("total", "memories"), ("current", "current"), ("archived", "archived"), ("stale", "stale"), ("expired", "expired"), ("supersessions", "superseded"), ("needs_attention", "need attention")] {
                div.card { div.n { (number(&counts[field])) } div.l { (label) } }
            }
        }
        h2 { "Connectors, last 24 hours" }
        @if let Some(statuses) = &statuses {
            @let list: &[Value] = statuses.as_array().map(Vec::as_slice).unwrap_or(&[]);
            p { @for (i, status) in list.iter().enumerate() { @if i > 0 { " · " } (number(&status["n"])) " " (text(status, "status")) } }
        }
        @if let Some(connectors) = &connectors {
            div.table-wrap { table {
                thead { tr { th { "Provider" } th.num { "Runs" } th.num { "Errors" } th { "Last run" } } }
                tbody { @for provider in items(connectors, "providers") {
                    tr { td { (text(provider, "provider")) } td.num { (number(&provider["runs"])) } td.num { (number(&provider["errors"])) } td { (layout::when(&provider["last_run"])) } }
                } }
            } }
        }
    };
    layout::page(&viewer, "op-health", "Memory health", content)
}

/// `GET /dashboard/operator/analytics`: signups and pageviews.
async fn analytics(State(state): State<Dashboard>, viewer: Viewer) -> Response {
    if let Some(refused) = layout::operator_only(&viewer) {
        return refused;
    }
    let analytics = match state
        .api
        .get(&viewer, "/v1/memory/admin/analytics?days=30")
        .await
    {
        Ok(analytics) => analytics,
        Err(failure) => return layout::failed(&viewer, &failure, "./"),
    };
    let by_day = |value: &Value| -> Vec<(String, f64)> {
        items(value, "by_day")
            .iter()
            .map(|day| {
                (
                    text(day, "day").get(5..).unwrap_or("").to_owned(),
                    day["n"].as_f64().unwrap_or(0.0),
                )
            })
            .collect()
    };
    let pageviews = &analytics["pageviews"];
    let content = html! {
        div.cards {
            div.card { div.n { (number(&analytics["signups"]["total"])) } div.l { "signups, 30 days" } }
            div.card { div.n { (number(&pageviews["total"])) } div.l { "pageviews, 30 days" } }
            div.card { div.n { (number(&analytics["funnel"]["signups"])) " / " (number(&analytics["funnel"]["pageviews"])) } div.l { "funnel: signups / pageviews" } }
        }
        h2 { "Signups by day" }
        (layout::bar_chart("Signups by day", &by_day(&analytics["signups"]), "signups"))
        h2 { "Pageviews by day" }
        (layout::bar_chart("Pageviews by day", &by_day(pageviews), "pageviews"))
        div.pair {
            div {
                h2 { "By path" }
                div.table-wrap { table { tbody { @for path in items(pageviews, "by_path") {
                    tr { td.mono { (text(path, "path")) } td.num { (number(&path["n"])) } } } } } }
            }
            div {
                h2 { "By referrer" }
                div.table-wrap { table { tbody { @for referrer in items(pageviews, "by_referrer") {
                    tr { td.mono { (text(referrer, "referrer")) } td.num { (number(&referrer["n"])) } } } } } }
            }
        }
    };
    layout::page(&viewer, "op-analytics", "Analytics", content)
}

fn status_body(status: &Value) -> maud::Markup {
    let latencies: Vec<(String, f64)> = items(status, "recent_checks")
        .iter()
        .rev()
        .take(48)
        .rev()
        .map(|check| {
            (
                text(check, "at").get(11..16).unwrap_or("").to_owned(),
                check["latency_ms"].as_f64().unwrap_or(0.0),
            )
        })
        .collect();
    let state = text(status, "status");
    html! {
        p { (layout::badge(if state == "ok" || state == "operational" || state == "healthy" { "good" } else { "bad" }, state))
            " · up " (format!("{:.2}", status["uptime_24h_percent"].as_f64().unwrap_or(0.0))) "% of the last 24 hours ("
            (number(&status["checks_24h"])) " checks) · running since " (layout::when(&status["started_at"])) }
        h2 { "Check latency" }
        (layout::bar_chart("Self-check latency (ms)", &latencies, "ms"))
        h2 { "Incidents" }
        @let incidents = items(status, "incidents");
        @if incidents.is_empty() {
            p.muted { "No incident recorded." }
        } @else {
            div.table-wrap { table {
                thead { tr { th { "Started" } th { "Resolved" } th.num { "Failed checks" } th { "What" } } }
                tbody { @for incident in incidents {
                    tr { td { (layout::when(&incident["started_at"])) } td { @if incident["resolved_at"].is_null() { (layout::badge("bad", "ongoing")) } @else { (layout::when(&incident["resolved_at"])) } }
                        td.num { (number(&incident["failed_checks"])) } td { (text(incident, "detail")) } }
                } }
            } }
        }
    }
}

/// `GET /dashboard/operator/status`.
async fn status_for_operator(State(state): State<Dashboard>, viewer: Viewer) -> Response {
    if let Some(refused) = layout::operator_only(&viewer) {
        return refused;
    }
    let status = match state.api.get(&viewer, "/v1/status").await {
        Ok(status) => status,
        Err(failure) => return layout::failed(&viewer, &failure, "./"),
    };
    let content = html! {
        p.small { "The public page, without a session: " a href="../status" { "/status" } }
        (status_body(&status))
    };
    layout::page(&viewer, "op-status", "Status", content)
}

/// `GET /status`: the public status page, as HTML (no tenant data; the same figures as
/// `GET /v1/status`).
async fn public_status(State(state): State<Dashboard>) -> Response {
    let response = state.api.public_get("/v1/status").await;
    let status = crate::dashboard::client::read_json(response)
        .await
        .unwrap_or(Value::Null);
    layout::bare(
        StatusCode::OK,
        "dashboard/",
        "Status",
        html! {
            h1 { "memvault status" }
            (status_body(&status))
        },
    )
}
