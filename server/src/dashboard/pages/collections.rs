//! Collections: the list and create form; one collection's description, health, summary,
//! grants and deletion.

use axum::extract::{Path, Query, State};
use axum::http::Method;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use maud::html;
use serde::Deserialize;
use serde_json::json;

use crate::dashboard::client::segment;
use crate::dashboard::layout::{self, items, number, text};
use crate::dashboard::session::{Change, Viewer};
use crate::dashboard::{see_other, Dashboard};

pub fn routes() -> Router<Dashboard> {
    Router::new()
        .route("/dashboard/collections", get(list).post(create))
        .route("/dashboard/collections/{collection}", get(show))
        .route(
            "/dashboard/collections/{collection}/describe",
            post(describe),
        )
        .route(
            "/dashboard/collections/{collection}/grants",
            post(put_grant),
        )
        .route(
            "/dashboard/collections/{collection}/grants/{key_id}/delete",
            post(delete_grant),
        )
        .route("/dashboard/collections/{collection}/delete", post(delete))
}

/// `?done=` after a change: which fixed message to show.
#[derive(Deserialize, Default)]
pub struct Done {
    pub done: Option<String>,
}

impl Done {
    pub fn message(&self) -> Option<&'static str> {
        Some(match self.done.as_deref()? {
            "created" => "Created.",
            "saved" => "Saved.",
            "granted" => "Grant saved.",
            "ungranted" => "Grant removed.",
            "deleted" => "Deleted.",
            "archived" => "Archived.",
            "restored" => "Restored.",
            "reinstated" => "The older value is current again: the history below shows the chain.",
            "pinned" => "Pinned.",
            "unpinned" => "Unpinned.",
            "revoked" => "Key revoked: its sessions and API calls end now.",
            "synced" => "Sync finished.",
            "removed" => "Removed.",
            "queued" => "Queued.",
            "retried" => "Failed items queued again.",
            _ => return None,
        })
    }
}

fn collection_path(name: &str) -> String {
    format!("/v1/memory/collections/{}", segment(name))
}

/// `GET /dashboard/collections`.
async fn list(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Query(done): Query<Done>,
) -> Response {
    let collections = match state.api.get(&viewer, "/v1/memory/collections").await {
        Ok(value) => value,
        Err(failure) => return layout::failed(&viewer, &failure, "./"),
    };
    let collections = collections.as_array().cloned().unwrap_or_default();
    let content = html! {
        (layout::done_notice(done.message()))
        @if collections.is_empty() {
            (layout::empty("No collections yet. A collection holds memories: one per agent, project or end user is common.", html! {}))
        } @else {
            div.table-wrap { table {
                thead { tr { th { "Name" } th.num { "Memories" } th.hide-narrow { "Description" } th.hide-narrow { "Updated" } } }
                tbody {
                    @for collection in &collections {
                        @let name = text(collection, "name");
                        tr {
                            td { a href=(format!("collections/{}", segment(name))) { (name) } }
                            td.num { (number(&collection["memory_count"])) }
                            td.hide-narrow.muted { (text(collection, "description")) }
                            td.hide-narrow.small { (layout::when(&collection["updated_at"])) }
                        }
                    }
                }
            } }
        }
        @if viewer.may_write() {
            h2 { "New collection" }
            form.panel.row method="post" action="collections" {
                (layout::csrf(&viewer))
                label { "Name" input type="text" name="name" required pattern="[A-Za-z0-9_.\\-]+" placeholder="support-agent"; }
                label { "Description (optional)" input type="text" name="description"; }
                button type="submit" { "Create" }
            }
        }
    };
    layout::page(&viewer, "collections", "Collections", content)
}

/// `POST /dashboard/collections`.
async fn create(State(state): State<Dashboard>, change: Change) -> Response {
    let viewer = &change.viewer;
    let name = change.fields.get("name").unwrap_or("");
    let mut body = json!({ "name": name });
    if let Some(description) = change.fields.get("description") {
        body["description"] = json!(description);
    }
    match state
        .api
        .call(viewer, Method::POST, "/v1/memory/collections", Some(body))
        .await
    {
        Ok(_) => see_other(
            &viewer.base,
            &format!("collections/{}?done=created", segment(name)),
        ),
        Err(failure) => layout::failed(viewer, &failure, "collections"),
    }
}

/// `GET /dashboard/collections/{collection}`.
async fn show(
    State(state): State<Dashboard>,
    viewer: Viewer,
    Path(name): Path<String>,
    Query(done): Query<Done>,
) -> Response {
    let api = &state.api;
    let path = collection_path(&name);
    let collection = match api.get(&viewer, &path).await {
        Ok(value) => value,
        Err(failure) => return layout::failed(&viewer, &failure, "collections"),
    };
    let health = api.get(&viewer, &format!("{path}/health")).await.ok();
    let summary = api.get(&viewer, &format!("{path}/summary")).await.ok();
    let grants = api.get(&viewer, &format!("{path}/grants")).await.ok();
    let agents = if viewer.is_owner() {
        api.get(&viewer, "/v1/memory/keys").await.ok()
    } else {
        None
    };
    let here = format!("collections/{}", segment(&name));
    let content = html! {
        (layout::done_notice(done.message()))
        p {
            a.button href=(format!("{here}/memories")) { "Browse and search memories" } " "
            a.button.secondary href=(format!("{here}/contradictions")) { "Contradictions" } " "
            a.button.secondary href=(format!("files?collection={}", segment(&name))) { "Files" }
        }
        @if let Some(health) = &health {
            @let counts = &health;
            div.cards {
                div.card { div.n { (number(&counts["total"])) } div.l { "memories" } }
                div.card { div.n { (number(&counts["current"])) } div.l { "current" } }
                div.card { div.n { (number(&counts["pinned"])) } div.l { "pinned" } }
                div.card { div.n { (number(&counts["archived"])) } div.l { "archived" } }
                div.card { div.n { (number(&counts["supersessions"])) } div.l { "superseded" } }
                div.card { div.n { (number(&counts["expired"])) } div.l { "expired" } }
                div.card { div.n { (number(&counts["stale"])) } div.l { "stale (90 days)" } }
            }
        }
        @if let Some(summary) = &summary {
            @if !text(summary, "summary").is_empty() {
                div.panel {
                    h2 { "Summary" }
                    p { (text(summary, "summary")) }
                    @let themes = items(summary, "themes");
                    @if !themes.is_empty() {
                        p.small { "Themes: "
                            @for (i, theme) in themes.iter().enumerate() {
                                @if i > 0 { ", " }
                                (theme.as_str().unwrap_or(""))
                            }
                        }
                    }
                    p.small.muted { "Based on " (number(&summary["based_on"])) " memories, by " (text(summary, "generated_by")) "." }
                }
            }
        }
        h2 { "Description" }
        @if viewer.may_write() {
            form.panel.stack method="post" action=(format!("{here}/describe")) {
                (layout::csrf(&viewer))
                div { label for="description" { "Description" }
                    input.wide #description type="text" name="description" value=(text(&collection, "description")); }
                button type="submit" { "Save" }
            }
        } @else {
            p { (text(&collection, "description")) }
        }
        h2 { "Access" }
        @if let Some(grants) = &grants {
            @let list = items(grants, "grants");
            @if list.is_empty() {
                p.muted { "Open: every key of the account may read and write it. The first grant restricts it to the keys granted." }
            } @else {
                p { (layout::badge("warn", "restricted")) " Only these keys (and the owner key) reach it." }
                div.table-wrap { table {
                    thead { tr { th { "Key" } th { "Read" } th { "Write" } th {} } }
                    tbody {
                        @for grant in list {
                            @let key = text(grant, "agent_key_id");
                            tr {
                                td { (grant["label"].as_str().unwrap_or(key)) " " span.mono.muted { (key) } }
                                td { @if grant["can_read"].as_bool() == Some(true) { "yes" } @else { "no" } }
                                td { @if grant["can_write"].as_bool() == Some(true) { "yes" } @else { "no" } }
                                td {
                                    @if viewer.is_owner() {
                                        form.inline method="post" action=(format!("{here}/grants/{}/delete", segment(key))) {
                                            (layout::csrf(&viewer))
                                            button.secondary type="submit" { "Remove" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                } }
            }
        }
        @if let Some(agents) = &agents {
            @let agents: Vec<&serde_json::Value> = items(agents, "keys").iter()
                .filter(|key| key["owner"].as_bool() != Some(true) && key["active"].as_bool() == Some(true))
                .collect();
            @if !agents.is_empty() {
                form.panel.row method="post" action=(format!("{here}/grants")) {
                    (layout::csrf(&viewer))
                    label { "Agent key"
                        select name="agent_key_id" required {
                            @for agent in &agents {
                                option value=(text(agent, "id")) { (text(agent, "label")) " (" (text(agent, "id")) ")" }
                            }
                        }
                    }
                    label { span { input type="checkbox" name="can_read" checked; " may read" } }
                    label { span { input type="checkbox" name="can_write"; " may write" } }
                    button type="submit" { "Grant" }
                }
            } @else {
                p.small.muted { "Create an agent key on the " a href="keys" { "Keys" } " page to grant it this collection." }
            }
        }
        @if viewer.may_write() {
            h2 { "Delete" }
            form.panel.row method="post" action=(format!("{here}/delete")) data-confirm="Delete this collection with all its memories and files?" {
                (layout::csrf(&viewer))
                label { "Type the collection's name to delete it with all its memories and files"
                    input type="text" name="confirm" required autocomplete="off"; }
                button.danger type="submit" { "Delete collection" }
            }
        }
    };
    layout::page(
        &viewer,
        "collections",
        &format!("Collection {name}"),
        content,
    )
}

/// `POST .../describe`.
async fn describe(
    State(state): State<Dashboard>,
    Path(name): Path<String>,
    change: Change,
) -> Response {
    let viewer = &change.viewer;
    let body = json!({ "description": change.fields.get("description").unwrap_or("") });
    let here = format!("collections/{}", segment(&name));
    match state
        .api
        .call(viewer, Method::PUT, &collection_path(&name), Some(body))
        .await
    {
        Ok(_) => see_other(&viewer.base, &format!("{here}?done=saved")),
        Err(failure) => layout::failed(viewer, &failure, &here),
    }
}

/// `POST .../grants`.
async fn put_grant(
    State(state): State<Dashboard>,
    Path(name): Path<String>,
    change: Change,
) -> Response {
    let viewer = &change.viewer;
    let body = json!({
        "agent_key_id": change.fields.get("agent_key_id").unwrap_or(""),
        "can_read": change.fields.flag("can_read"),
        "can_write": change.fields.flag("can_write"),
    });
    let here = format!("collections/{}", segment(&name));
    let path = format!("{}/grants", collection_path(&name));
    match state.api.call(viewer, Method::PUT, &path, Some(body)).await {
        Ok(_) => see_other(&viewer.base, &format!("{here}?done=granted")),
        Err(failure) => layout::failed(viewer, &failure, &here),
    }
}

/// `POST .../grants/{key_id}/delete`.
async fn delete_grant(
    State(state): State<Dashboard>,
    Path((name, key_id)): Path<(String, String)>,
    change: Change,
) -> Response {
    let viewer = &change.viewer;
    let here = format!("collections/{}", segment(&name));
    let path = format!("{}/grants/{}", collection_path(&name), segment(&key_id));
    match state.api.call(viewer, Method::DELETE, &path, None).await {
        Ok(_) => see_other(&viewer.base, &format!("{here}?done=ungranted")),
        Err(failure) => layout::failed(viewer, &failure, &here),
    }
}

/// `POST .../delete`: only when the name was typed again.
async fn delete(
    State(state): State<Dashboard>,
    Path(name): Path<String>,
    change: Change,
) -> Response {
    let viewer = &change.viewer;
    let here = format!("collections/{}", segment(&name));
    if change.fields.get("confirm") != Some(name.as_str()) {
        return layout::failed(
            viewer,
            &crate::dashboard::client::Failure {
                status: axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                detail: format!("type the collection's name ({name}) to delete it"),
                code: "validation_failed".to_owned(),
            },
            &here,
        );
    }
    match state
        .api
        .call(viewer, Method::DELETE, &collection_path(&name), None)
        .await
    {
        Ok(_) => see_other(&viewer.base, "collections?done=deleted"),
        Err(failure) => layout::failed(viewer, &failure, &here),
    }
}
