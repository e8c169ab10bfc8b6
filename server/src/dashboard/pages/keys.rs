//! Keys and agents: every key with its role and state, the collections granted to it,
//! creating one (its secret shown once), revoking one.

use axum::extract::{Path, Query, State};
use axum::http::Method;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use maud::html;
use serde_json::{json, Value};

use super::collections::Done;
use crate::dashboard::client::segment;
use crate::dashboard::layout::{self, items, text};
use crate::dashboard::session::{Change, Viewer};
use crate::dashboard::{see_other, Dashboard};

pub fn routes() -> Router<Dashboard> {
    Router::new()
        .route("/dashboard/keys", get(list).post(create))
        .route("/dashboard/keys/{key_id}/revoke", post(revoke))
}

/// Which collections grant each key: (collection, can_read, can_write) per key id.
async fn grants_by_key(
    state: &Dashboard,
    viewer: &Viewer,
) -> std::collections::HashMap<String, Vec<(String, bool, bool)>> {
    let mut by_key: std::collections::HashMap<String, Vec<(String, bool, bool)>> =
        Default::default();
    let collections = state
        .api
        .get(viewer, "/v1/memory/collections")
        .await
        .unwrap_or(Value::Null);
    for collection in collections.as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let name = text(collection, "name");
        let path = format!("/v1/memory/collections/{}/grants", segment(name));
        if let Ok(grants) = state.api.get(viewer, &path).await {
            for grant in items(&grants, "grants") {
                by_key
                    .entry(text(grant, "agent_key_id").to_owned())
                    .or_default()
                    .push((
                        name.to_owned(),
                        grant["can_read"].as_bool() == Some(true),
                        grant["can_write"].as_bool() == Some(true),
                    ));
            }
        }
    }
    by_key
}

/// `GET /dashboard/keys`.
async fn list(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Query(done): Query<Done>,
) -> Response {
    if let Some(refused) = layout::owner_only(&viewer) {
        return refused;
    }
    render(&state, &viewer, done.message(), None).await
}

async fn render(
    state: &Dashboard,
    viewer: &Viewer,
    done: Option<&str>,
    created: Option<(&str, &Value)>,
) -> Response {
    let keys = match state.api.get(viewer, "/v1/memory/keys").await {
        Ok(keys) => keys,
        Err(failure) => return layout::failed(viewer, &failure, "./"),
    };
    let grants = grants_by_key(state, viewer).await;
    let content = html! {
        (layout::done_notice(done))
        @if let Some((secret, details)) = created {
            div.notice.secret role="status" {
                p { strong { "New key “" (text(details, "label")) "”. Copy it now: it is shown only this once." } }
                p { code #new-key { (secret) } " " button.secondary type="button" data-copy="new-key" { "Copy" } }
                p.small { "Grant it collections on each collection's page; with no grant anywhere it reaches every open collection." }
            }
        }
        div.table-wrap { table {
            thead { tr { th { "Label" } th { "Key" } th { "Role" } th { "State" } th.hide-narrow { "Collections granted" } th.hide-narrow { "Created" } th {} } }
            tbody {
                @for key in items(&keys, "keys") {
                    @let id = text(key, "id");
                    @let active = key["active"].as_bool() == Some(true);
                    tr {
                        td { (text(key, "label")) }
                        td.mono { (text(key, "masked")) br; span.muted { (id) } }
                        td {
                            @if key["owner"].as_bool() == Some(true) { (layout::badge("info", "owner")) }
                            @else if key["read_only"].as_bool() == Some(true) { (layout::badge("", "read-only agent")) }
                            @else { (layout::badge("", "agent")) }
                        }
                        td {
                            @if active { (layout::badge("good", "active")) }
                            @else if !key["revoked_at"].is_null() { (layout::badge("bad", "revoked")) }
                            @else { (layout::badge("warn", "expired")) }
                            @if !key["expires_at"].is_null() { br; span.small.muted { "expires " (layout::when(&key["expires_at"])) } }
                        }
                        td.hide-narrow.small {
                            @match grants.get(id) {
                                Some(list) => {
                                    @for (i, (collection, read, write)) in list.iter().enumerate() {
                                        @if i > 0 { ", " }
                                        a href=(format!("collections/{}", segment(collection))) { (collection) }
                                        " (" @if *read { "read" } @if *read && *write { "+" } @if *write { "write" } ")"
                                    }
                                }
                                None => span.muted { "open collections only" },
                            }
                        }
                        td.hide-narrow.small { (layout::when(&key["created_at"])) }
                        td {
                            @if active && key["owner"].as_bool() != Some(true) {
                                form.inline method="post" action=(format!("keys/{}/revoke", segment(id))) data-confirm="Revoke this key? Its API calls and dashboard sessions stop at once." {
                                    (layout::csrf(viewer))
                                    button.danger type="submit" { "Revoke" }
                                }
                            }
                        }
                    }
                }
            }
        } }
        h2 { "New agent key" }
        form.panel.row method="post" action="keys" {
            (layout::csrf(viewer))
            label { "Label" input type="text" name="label" required maxlength="200" placeholder="support-bot"; }
            label { span { input type="checkbox" name="read_only"; " read-only" } }
            label { "Expires (optional)" input type="date" name="expires"; }
            button type="submit" { "Create key" }
        }
    };
    layout::page(viewer, "keys", "Keys & agents", content)
}

/// `POST /dashboard/keys`: the new key's page shows the secret once.
async fn create(State(state): State<Dashboard>, change: Change) -> Response {
    let viewer = &change.viewer;
    let fields = &change.fields;
    let mut body = json!({
        "label": fields.raw("label"),
        "read_only": fields.flag("read_only"),
    });
    if let Some(day) = fields.get("expires") {
        body["expires_at"] = json!(format!("{day}T00:00:00Z"));
    }
    match state
        .api
        .call(viewer, Method::POST, "/v1/memory/keys", Some(body))
        .await
    {
        Ok(created) => {
            let secret = text(&created, "key").to_owned();
            render(&state, viewer, None, Some((&secret, &created))).await
        }
        Err(failure) => layout::failed(viewer, &failure, "keys"),
    }
}

/// `POST /dashboard/keys/{key_id}/revoke`.
async fn revoke(
    State(state): State<Dashboard>,
    Path(key_id): Path<String>,
    change: Change,
) -> Response {
    let viewer = &change.viewer;
    let path = format!("/v1/memory/keys/{}", segment(&key_id));
    match state.api.call(viewer, Method::DELETE, &path, None).await {
        Ok(_) => see_other(&viewer.base, "keys?done=revoked"),
        Err(failure) => layout::failed(viewer, &failure, "keys"),
    }
}
