//! The account's audit log, with filters: who, what, outcome, how far back.

use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use maud::html;
use serde::Deserialize;

use crate::dashboard::layout;
use crate::dashboard::session::Viewer;
use crate::dashboard::Dashboard;

pub fn routes() -> Router<Dashboard> {
    Router::new().route("/dashboard/audit", get(show))
}

#[derive(Deserialize, Default)]
struct AuditFilters {
    /// How far back, 1 to 365 days; default 30.
    days: Option<String>,
    /// A key's id or label.
    agent: Option<String>,
    /// The action, or its start (`memory.` for every memory action).
    action: Option<String>,
    /// `success`, `denied` or `failed`.
    outcome: Option<String>,
    /// From 1.
    page: Option<String>,
}

/// Entries per page.
const PAGE: usize = 100;

impl AuditFilters {
    /// The query string of these filters on another page.
    fn with_page(&self, days: u32, page: usize) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("days", &days.to_string());
        for (name, value) in [
            ("agent", &self.agent),
            ("action", &self.action),
            ("outcome", &self.outcome),
        ] {
            if let Some(value) = blank(value) {
                query.append_pair(name, value);
            }
        }
        query.append_pair("page", &page.to_string());
        query.finish()
    }
}

fn blank(value: &Option<String>) -> Option<&str> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|value| !value.is_empty())
}

/// `GET /dashboard/audit`: the entries that pass the filters, newest first, 100 to a page.
async fn show(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Query(filters): Query<AuditFilters>,
) -> Response {
    if let Some(refused) = layout::owner_only(&viewer) {
        return refused;
    }
    let days = filters
        .days
        .as_deref()
        .and_then(|days| days.trim().parse::<u32>().ok())
        .unwrap_or(30)
        .clamp(1, 365);
    let entries = match state
        .app
        .audit
        .entries(&viewer.agent.tenant_id, days, 10_000)
        .await
    {
        Ok(entries) => entries,
        Err(error) => {
            let error = crate::error::ApiError::from(error);
            let failure = crate::dashboard::client::Failure {
                status: error.status(),
                detail: error.detail_logged("dashboard audit"),
                code: error.code().as_str().to_owned(),
            };
            return layout::failed(&viewer, &failure, "./");
        }
    };
    let page = filters
        .page
        .as_deref()
        .and_then(|page| page.trim().parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, 10_000);
    let mut shown: Vec<_> = entries
        .iter()
        .filter(|entry| {
            blank(&filters.agent)
                .is_none_or(|agent| entry.agent_id == agent || entry.agent_label == agent)
        })
        .filter(|entry| {
            blank(&filters.action).is_none_or(|action| entry.action.starts_with(action))
        })
        .filter(|entry| blank(&filters.outcome).is_none_or(|outcome| entry.outcome == outcome))
        .skip((page - 1) * PAGE)
        .take(PAGE + 1)
        .collect();
    let more = shown.len() > PAGE;
    shown.truncate(PAGE);
    let mut actions: Vec<&str> = entries.iter().map(|entry| entry.action.as_str()).collect();
    actions.sort_unstable();
    actions.dedup();
    let content = html! {
        form.panel.row method="get" action="audit" {
            label { "Days back" input type="number" name="days" min="1" max="365" value=(days); }
            label { "Key (id or label)" input type="text" name="agent" value=(filters.agent.as_deref().unwrap_or("")); }
            label { "Action" select name="action" {
                option value="" { "any" }
                @for action in &actions { option value=(action) selected[blank(&filters.action) == Some(*action)] { (action) } }
            } }
            label { "Outcome" select name="outcome" {
                @for outcome in ["", "success", "denied", "failed"] {
                    option value=(outcome) selected[blank(&filters.outcome).unwrap_or("") == outcome] { @if outcome.is_empty() { "any" } @else { (outcome) } }
                }
            } }
            button type="submit" { "Filter" }
        }
        p.small.muted { "Page " (page) ": " (shown.len()) " entries (newest first) of " (entries.len()) " in " (days) " days" }
        @if shown.is_empty() {
            (layout::empty("No entry matches: changes made with any key of the account are logged here.", html! {}))
        } @else {
            div.table-wrap { table {
                thead { tr { th { "When" } th { "Key" } th { "Action" } th.hide-narrow { "Request" } th.num { "Status" } th.hide-narrow { "Client" } } }
                tbody {
                    @for entry in &shown {
                        tr {
                            td.small { (entry.at.format("%Y-%m-%d %H:%M:%S")) }
                            td { (entry.agent_label) br; span.mono.muted { (entry.agent_id) } }
                            td { code { (entry.action) } }
                            td.hide-narrow.mono { (entry.method) " " (entry.resource) }
                            td.num { (layout::badge(match entry.outcome.as_str() { "success" => "good", "denied" => "warn", _ => "bad" }, &entry.status.to_string())) }
                            td.hide-narrow.small { (entry.client_address.as_deref().unwrap_or("")) }
                        }
                    }
                }
            } }
            div.pager {
                @if page > 1 { a href=(format!("audit?{}", filters.with_page(days, page - 1))) { "← Newer" } }
                span.muted { "Page " (page) }
                @if more { a href=(format!("audit?{}", filters.with_page(days, page + 1))) { "Older →" } }
            }
        }
    };
    layout::page(&viewer, "audit", "Audit log", content)
}
