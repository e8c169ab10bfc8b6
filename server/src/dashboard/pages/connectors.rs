//! Connectors and mail-in: the account's connections with their state, connecting one
//! through OAuth (the callback lands on the connection's page) or with a token, a
//! connection's runs, sync now and disconnect; the drop address and its senders.

use axum::extract::{Path, Query, State};
use axum::http::Method;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::collections::Done;
use crate::dashboard::client::segment;
use crate::dashboard::layout::{self, items, text};
use crate::dashboard::session::{Change, Viewer};
use crate::dashboard::{see_other, Dashboard};

/// The providers a connection can be made to, with what each needs.
const PROVIDERS: [(&str, &str, bool); 7] = [
    ("notion", "Notion", true),
    ("slack", "Slack", true),
    ("gdrive", "Google Drive", true),
    ("gmail", "Gmail", true),
    ("linear", "Linear", false),
    ("confluence", "Confluence", false),
    ("hubspot", "HubSpot", false),
];

pub fn routes() -> Router<Dashboard> {
    Router::new()
        .route("/dashboard/connectors", get(list).post(create))
        .route("/dashboard/connectors/oauth", post(oauth))
        .route("/dashboard/connectors/mail/senders", post(senders))
        .route("/dashboard/connectors/mail/rotate", post(rotate))
        .route("/dashboard/connectors/{connection_id}", get(show))
        .route("/dashboard/connectors/{connection_id}/sync", post(sync))
        .route("/dashboard/connectors/{connection_id}/delete", post(delete))
}

fn status_badge(status: &str) -> Markup {
    let kind = match status {
        "active" => "good",
        "error" => "warn",
        _ => "bad",
    };
    layout::badge(kind, status)
}

fn run_badge(status: &str) -> Markup {
    let kind = match status {
        "ok" | "success" | "succeeded" | "done" => "good",
        "running" | "queued" => "warn",
        _ => "bad",
    };
    layout::badge(kind, status)
}

/// `GET /dashboard/connectors`.
async fn list(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Query(done): Query<Done>,
) -> Response {
    let connections = match state.api.get(&viewer, "/v1/memory/connections").await {
        Ok(value) => value,
        Err(failure) => return layout::failed(&viewer, &failure, "./"),
    };
    let connections: Vec<Value> = match &connections {
        Value::Array(list) => list.clone(),
        other => items(other, "connections").to_vec(),
    };
    let address = state
        .api
        .get(&viewer, "/v1/memory/email/address")
        .await
        .ok();
    let senders = state
        .api
        .get(&viewer, "/v1/memory/email/senders")
        .await
        .ok();
    let content = html! {
        (layout::done_notice(done.message()))
        @if connections.is_empty() {
            (layout::empty("No connectors yet: connect Notion, Slack, Google Drive or Gmail with one click below, or another source with its token.", html! {}))
        } @else {
            div.table-wrap { table {
                thead { tr { th { "Connection" } th { "Provider" } th { "Collection" } th { "State" } th.hide-narrow { "Last sync" } th.hide-narrow { "Next" } } }
                tbody {
                    @for connection in &connections {
                        @let id = text(connection, "id");
                        tr {
                            td { a href=(format!("connectors/{}", segment(id))) { (connection["name"].as_str().unwrap_or(id)) } }
                            td { (text(connection, "provider")) }
                            td { (text(connection, "collection")) }
                            td { (status_badge(text(connection, "status")))
                                @if let Some(error) = connection["last_error"].as_str() { br; span.small.muted { (error) } } }
                            td.hide-narrow.small { (layout::when(&connection["last_sync_at"])) }
                            td.hide-narrow.small { (layout::when(&connection["next_sync_at"])) }
                        }
                    }
                }
            } }
        }
        @if viewer.may_write() {
            h2 { "Connect through OAuth" }
            form.panel.row method="post" action="connectors/oauth" hx-boost="false" {
                (layout::csrf(&viewer))
                label { "Provider" select name="provider" {
                    @for (provider, label, oauth) in PROVIDERS { @if oauth { option value=(provider) { (label) } } }
                } }
                label { "Into collection" input type="text" name="collection" required; }
                label { "Name (optional)" input type="text" name="name"; }
                button type="submit" { "Connect" }
            }
            h2 { "Connect with a token" }
            form.panel.stack method="post" action="connectors" {
                (layout::csrf(&viewer))
                div.row {
                    label { "Provider" select name="provider" {
                        @for (provider, label, _) in PROVIDERS { option value=(provider) { (label) } }
                    } }
                    label { "Into collection" input type="text" name="collection" required; }
                    label { "Name (optional)" input type="text" name="name"; }
                }
                div.row {
                    label { "Token" input type="password" name="token" autocomplete="off"; }
                    label { "Email (Confluence)" input type="email" name="email"; }
                    label { "API token (Confluence)" input type="password" name="api_token" autocomplete="off"; }
                }
                div.row {
                    label { "Channel id (Slack)" input type="text" name="channel_id"; }
                    label { "Database id (Notion)" input type="text" name="database_id"; }
                    label { "Base URL (Confluence)" input type="url" name="base_url"; }
                    label { "Space key (Confluence)" input type="text" name="space_key"; }
                    label { "Query (Drive, Gmail)" input type="text" name="query"; }
                    label { "Sync every (minutes)" input type="number" name="sync_interval_minutes" min="1" placeholder="60"; }
                }
                p.small.muted { "Credentials are sealed at rest and never shown again." }
                button type="submit" { "Create connection" }
            }
        }
        h2 { "Mail-in" }
        @if let Some(address) = &address {
            div.panel {
                p { "Mail sent to " code { (text(address, "address")) } " becomes memories of " strong { (text(address, "collection")) } "." }
                @if viewer.is_owner() {
                    form.inline method="post" action="connectors/mail/rotate" data-confirm="The old address stops working at once. Rotate?" {
                        (layout::csrf(&viewer))
                        button.secondary type="submit" { "Rotate the address" }
                    }
                }
            }
        }
        @if let Some(senders) = &senders {
            @let list: Vec<&str> = items(senders, "senders").iter().filter_map(Value::as_str).collect();
            div.panel {
                p { "Accepted senders (addresses, or whole domains as " code { "@example.org" } "):" }
                @if viewer.is_owner() {
                    form.stack method="post" action="connectors/mail/senders" {
                        (layout::csrf(&viewer))
                        textarea name="senders" rows="4" { (list.join("\n")) }
                        button type="submit" { "Save senders" }
                    }
                } @else {
                    ul { @for sender in &list { li { (sender) } } }
                }
            }
        }
    };
    layout::page(&viewer, "connectors", "Connectors & mail", content)
}

/// `POST /dashboard/connectors`: a connection made with a token.
async fn create(State(state): State<Dashboard>, change: Change) -> Response {
    let viewer = &change.viewer;
    let fields = &change.fields;
    let mut credentials = Map::new();
    for name in ["token", "email", "api_token"] {
        if let Some(value) = fields.get(name) {
            credentials.insert(name.to_owned(), json!(value));
        }
    }
    let mut config = Map::new();
    for name in [
        "channel_id",
        "database_id",
        "base_url",
        "space_key",
        "query",
    ] {
        if let Some(value) = fields.get(name) {
            config.insert(name.to_owned(), json!(value));
        }
    }
    if let Some(minutes) = fields.get("sync_interval_minutes") {
        config.insert(
            "sync_interval_minutes".to_owned(),
            minutes
                .parse::<u64>()
                .map(|n| json!(n))
                .unwrap_or(json!(minutes)),
        );
    }
    let mut body = json!({
        "provider": fields.get("provider").unwrap_or(""),
        "collection": fields.get("collection").unwrap_or(""),
        "config": config,
        "credentials": credentials,
    });
    if let Some(name) = fields.get("name") {
        body["name"] = json!(name);
    }
    match state
        .api
        .call(viewer, Method::POST, "/v1/memory/connections", Some(body))
        .await
    {
        Ok(made) => see_other(
            &viewer.base,
            &format!("connectors/{}?done=created", segment(text(&made, "id"))),
        ),
        Err(failure) => layout::failed(viewer, &failure, "connectors"),
    }
}

/// `POST /dashboard/connectors/oauth`: to the provider's consent page; its callback
/// brings the browser back to the new connection's page.
async fn oauth(State(state): State<Dashboard>, change: Change) -> Response {
    let viewer = &change.viewer;
    let fields = &change.fields;
    let provider = fields.get("provider").unwrap_or("");
    let query = {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("collection", fields.get("collection").unwrap_or(""));
        if let Some(name) = fields.get("name") {
            query.append_pair("name", name);
        }
        query.finish()
    };
    let path = format!(
        "/v1/memory/connections/oauth/{}/start?{query}",
        segment(provider)
    );
    match state.api.get(viewer, &path).await {
        Ok(started) => {
            // A link, not a redirect: the page's `form-action 'self'` would stop a form
            // post that redirects to the provider.
            let url = text(&started, "authorize_url").to_owned();
            let safe = url.starts_with("https://") || url.starts_with("http://");
            layout::page(
                viewer,
                "connectors",
                "Connect",
                html! {
                    @if safe {
                        p { "The provider asks you to allow memvault to read your data; it then sends you back to the new connection's page." }
                        p { a.button href=(url) hx-boost="false" rel="noreferrer" { "Continue to " (provider) } }
                    } @else {
                        (layout::error_notice("the provider's authorize address is not an http(s) URL", "upstream_failed"))
                    }
                    p { a href="connectors" { "Cancel" } }
                },
            )
        }
        Err(failure) => layout::failed(viewer, &failure, "connectors"),
    }
}

#[derive(Deserialize, Default)]
struct ShowQuery {
    done: Option<String>,
    connected: Option<String>,
}

/// `GET /dashboard/connectors/{connection_id}`: the connection and its runs.
async fn show(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Path(id): Path<String>,
    Query(query): Query<ShowQuery>,
) -> Response {
    let path = format!("/v1/memory/connections/{}", segment(&id));
    let connection = match state.api.get(&viewer, &path).await {
        Ok(value) => value,
        Err(failure) => return layout::failed(&viewer, &failure, "connectors"),
    };
    let runs = state
        .api
        .get(&viewer, &format!("{path}/runs?limit=20"))
        .await
        .ok();
    let runs: Vec<Value> = match &runs {
        Some(Value::Array(list)) => list.clone(),
        Some(other) => items(other, "runs").to_vec(),
        None => Vec::new(),
    };
    let here = format!("connectors/{}", segment(&id));
    let busy = matches!(text(&connection, "status"), "syncing" | "running")
        || runs
            .iter()
            .any(|run| matches!(text(run, "status"), "running" | "queued"));
    let done = Done {
        done: query.done.clone(),
    };
    let content = html! {
        (layout::done_notice(done.message()))
        @if query.connected.is_some() {
            div.notice.ok role="status" { "Connected to " (text(&connection, "provider")) ". The first sync runs at the next scheduled time, or now with “Sync now”." }
        }
        p.small { a href="connectors" { "← Connectors" } }
        @if viewer.may_write() {
            div.row {
                form.inline method="post" action=(format!("{here}/sync")) {
                    (layout::csrf(&viewer))
                    button type="submit" { "Sync now" }
                }
                form.inline method="post" action=(format!("{here}/delete")) data-confirm="Disconnect? Its memories stay unless you tick the box." {
                    (layout::csrf(&viewer))
                    label.small { input type="checkbox" name="delete_memories"; " and delete its memories" } " "
                    button.danger type="submit" { "Disconnect" }
                }
            }
        }
        // While a sync runs, the state and the runs refresh themselves every 3 s.
        div #connection hx-get=[busy.then(|| here.clone())] hx-trigger=[busy.then_some("every 3s")]
            hx-select="#connection" hx-swap="outerHTML" hx-disinherit="*" {
            div.panel {
                dl.facts {
                    dt { "Provider" } dd { (text(&connection, "provider")) }
                    dt { "Collection" } dd { a href=(format!("collections/{}", segment(text(&connection, "collection")))) { (text(&connection, "collection")) } }
                    dt { "State" } dd { (status_badge(text(&connection, "status")))
                        @if connection["status"] == "paused" { " " span.small { "paused after 5 failed syncs in a row: a manual sync that succeeds resumes it" } } }
                    @if let Some(error) = connection["last_error"].as_str() { dt { "Last error" } dd { (error) } }
                    dt { "Last sync" } dd { (layout::when(&connection["last_sync_at"])) }
                    dt { "Next sync" } dd { (layout::when(&connection["next_sync_at"])) }
                    @if let Some(cursor) = connection["cursor"].as_str() { dt { "Cursor" } dd.mono { (cursor) } }
                }
            }
            h2 { "Runs" }
            @if runs.is_empty() {
                p.muted { "No run yet." }
            } @else {
                div.table-wrap { table {
                    thead { tr { th { "Started" } th { "Trigger" } th { "State" } th.num { "Synced" } th.num { "Unchanged" } th.num { "Deleted" } th { "Error" } } }
                    tbody {
                        @for run in &runs {
                            tr {
                                td.small { (layout::when(&run["created_at"])) }
                                td { (text(run, "trigger")) }
                                td { (run_badge(text(run, "status"))) }
                                td.num { (layout::number(&run["synced_count"])) }
                                td.num { (layout::number(&run["unchanged_count"])) }
                                td.num { (layout::number(&run["deleted_count"])) }
                                td.small { (text(run, "error")) }
                            }
                        }
                    }
                } }
            }
        }
    };
    let title = connection["name"].as_str().unwrap_or(&id).to_owned();
    layout::page(
        &viewer,
        "connectors",
        &format!("Connector {title}"),
        content,
    )
}

/// `POST .../{connection_id}/sync`.
async fn sync(State(state): State<Dashboard>, Path(id): Path<String>, change: Change) -> Response {
    let viewer = &change.viewer;
    let here = format!("connectors/{}", segment(&id));
    let path = format!("/v1/memory/connections/{}/sync", segment(&id));
    match state.api.call(viewer, Method::POST, &path, None).await {
        Ok(_) => see_other(&viewer.base, &format!("{here}?done=synced")),
        Err(failure) => layout::failed(viewer, &failure, &here),
    }
}

/// `POST .../{connection_id}/delete`.
async fn delete(
    State(state): State<Dashboard>,
    Path(id): Path<String>,
    change: Change,
) -> Response {
    let viewer = &change.viewer;
    let here = format!("connectors/{}", segment(&id));
    let path = format!(
        "/v1/memory/connections/{}?delete_memories={}",
        segment(&id),
        change.fields.flag("delete_memories")
    );
    match state.api.call(viewer, Method::DELETE, &path, None).await {
        Ok(_) => see_other(&viewer.base, "connectors?done=removed"),
        Err(failure) => layout::failed(viewer, &failure, &here),
    }
}

/// `POST /dashboard/connectors/mail/senders`: one address or domain per line.
async fn senders(State(state): State<Dashboard>, change: Change) -> Response {
    let viewer = &change.viewer;
    let list: Vec<&str> = change
        .fields
        .raw("senders")
        .split(['\n', ',', ' '])
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let body = json!({ "senders": list });
    match state
        .api
        .call(viewer, Method::PUT, "/v1/memory/email/senders", Some(body))
        .await
    {
        Ok(_) => see_other(&viewer.base, "connectors?done=saved"),
        Err(failure) => layout::failed(viewer, &failure, "connectors"),
    }
}

/// `POST /dashboard/connectors/mail/rotate`.
async fn rotate(State(state): State<Dashboard>, change: Change) -> Response {
    let viewer = &change.viewer;
    match state
        .api
        .call(
            viewer,
            Method::POST,
            "/v1/memory/email/address/rotate",
            None,
        )
        .await
    {
        Ok(_) => see_other(&viewer.base, "connectors?done=saved"),
        Err(failure) => layout::failed(viewer, &failure, "connectors"),
    }
}
