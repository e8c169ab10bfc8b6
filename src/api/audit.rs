//! The audit log at the edge: a middleware that records every authenticated request that
//! changes something (any method but GET, HEAD and OPTIONS, except the POSTs that only
//! read, like search), and `GET /v1/memory/admin/audit`.

use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::Agent;
use memvault_storage::{AuditEntry, TenantId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Admin;
use super::extract::ApiQuery;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory/admin`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(audit))
}

const C: &str = "/v1/memory/collections/{collection}";

/// Route templates (after the collection prefix where they start with `/`) and the action
/// each method on them records.
const ACTIONS: &[(&str, &str, &str)] = &[
    ("POST", "/v1/memory/collections", "collection.create"),
    ("PUT", "", "collection.update"),
    ("DELETE", "", "collection.delete"),
    ("POST", "/memories", "memory.create"),
    ("POST", "/memories/bulk", "memory.bulk_create"),
    ("PATCH", "/memories/{memory_id}", "memory.update"),
    ("DELETE", "/memories/{memory_id}", "memory.delete"),
    ("POST", "/memories/{memory_id}/move", "memory.move"),
    ("POST", "/memories/{memory_id}/pin", "memory.pin"),
    ("POST", "/memories/{memory_id}/archive", "memory.archive"),
    ("POST", "/remember", "memory.remember"),
    ("POST", "/forget", "memory.forget"),
    ("POST", "/dedup", "collection.dedup"),
    ("POST", "/archive-stale", "collection.archive_stale"),
    ("PUT", "/grants", "grant.put"),
    ("DELETE", "/grants/{agent_key_id}", "grant.delete"),
    ("POST", "/v1/memory/keys", "key.create"),
    ("DELETE", "/v1/memory/keys/{key_id}", "key.revoke"),
    ("POST", "/v1/memory/admin/rotate-key", "key.rotate"),
    ("PUT", "/v1/memory/webhook/config", "webhook.set"),
    ("DELETE", "/v1/memory/webhook/config", "webhook.delete"),
    ("PUT", "/v1/memory/extraction/config", "extraction_llm.set"),
    (
        "DELETE",
        "/v1/memory/extraction/config",
        "extraction_llm.delete",
    ),
    ("PUT", "/v1/memory/spend-cap", "spend_cap.set"),
    ("POST", "/v1/memory/admin/tenants", "tenant.create"),
    ("POST", "/v1/proxy/chat/completions", "proxy.chat"),
];

/// POST routes that only read: not audited.
const READS: &[&str] = &[
    "/v1/memory/search",
    "/v1/memory/collections/{collection}/search",
    "/v1/mcp",
];

/// The action a request records, or `None` for one that changes nothing.
fn action(method: &Method, route: &str) -> Option<String> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) || READS.contains(&route) {
        return None;
    }
    let found = ACTIONS.iter().find(|(verb, template, _)| {
        *verb == method.as_str()
            && if template.starts_with("/v1/") {
                route == *template
            } else {
                route.strip_prefix(C) == Some(*template)
            }
    });
    Some(match found {
        Some((_, _, action)) => (*action).to_owned(),
        None => format!("{} {route}", method.as_str().to_lowercase()),
    })
}

fn outcome(status: u16) -> &'static str {
    match status {
        200..=299 => "success",
        401 | 403 | 429 => "denied",
        _ => "failed",
    }
}

/// Records the request after it is answered, when an authenticated agent changed (or
/// tried to change) something. Runs inside the rate limiter, which authenticated.
pub async fn record(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let agent = request.extensions().get::<Agent>().cloned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|matched| matched.as_str().to_owned());
    let method = request.method().clone();
    let resource = request.uri().path().to_owned();
    let response = next.run(request).await;
    let (Some(agent), Some(route)) = (agent, route) else {
        return response;
    };
    let Some(action) = action(&method, &route) else {
        return response;
    };
    let status = response.status().as_u16();
    let at = state.service.now();
    state.service.record_audit(AuditEntry {
        id: uuid::Uuid::now_v7().to_string(),
        tenant_id: agent.tenant_id,
        at,
        agent_id: agent.key_id,
        agent_label: agent.label,
        action,
        method: method.to_string(),
        resource,
        status,
        outcome: outcome(status).to_owned(),
    });
    response
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// How far back, 1 to 3650 days; default 30.
    pub days: Option<i64>,
    /// Most entries, 1 to 1000; default 200.
    pub limit: Option<i64>,
    /// Another tenant's log (operators); default the caller's own tenant.
    pub tenant_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditEntryResponse {
    pub id: String,
    pub at: DateTime<Utc>,
    /// The key (agent identity) that made the request.
    pub agent_id: String,
    pub agent_label: String,
    /// e.g. `memory.create`, `grant.put`, `key.revoke`, `webhook.set`.
    pub action: String,
    pub method: String,
    /// The path the request named.
    pub resource: String,
    pub status: u16,
    /// `success`, `denied` (401, 403, 429) or `failed`.
    pub outcome: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditResponse {
    pub tenant_id: String,
    pub days: i64,
    /// Newest first.
    pub entries: Vec<AuditEntryResponse>,
}

const DAYS_DEFAULT: i64 = 30;
const DAYS_MAX: i64 = 3650;
const LIMIT_DEFAULT: i64 = 200;
const LIMIT_MAX: i64 = 1000;

fn bounded(value: Option<i64>, default: i64, max: i64, name: &str) -> ApiResult<i64> {
    match value.unwrap_or(default) {
        value @ 1.. if value <= max => Ok(value),
        value => Err(ApiError::Validation(format!(
            "{name} must be 1 to {max}, got {value}"
        ))),
    }
}

/// A tenant's audit log, newest first: every write and every key, grant and config
/// change, with who made it and how it ended.
#[utoipa::path(get, path = "/audit", tag = "operator", params(AuditQuery),
    responses((status = 200, body = AuditResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody, description = "no such tenant"),
        (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn audit(
    State(state): State<AppState>,
    Admin(agent): Admin,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> ApiResult<Json<AuditResponse>> {
    let days = bounded(query.days, DAYS_DEFAULT, DAYS_MAX, "days")?;
    let limit = bounded(query.limit, LIMIT_DEFAULT, LIMIT_MAX, "limit")?;
    let tenant = query
        .tenant_id
        .map(TenantId::from_stored)
        .unwrap_or(agent.tenant_id);
    let entries = state
        .service
        .audit_log(&tenant, days as u32, limit as usize)
        .await?;
    Ok(Json(AuditResponse {
        tenant_id: tenant.to_string(),
        days,
        entries: entries
            .into_iter()
            .map(|entry| AuditEntryResponse {
                id: entry.id,
                at: entry.at,
                agent_id: entry.agent_id,
                agent_label: entry.agent_label,
                action: entry.action,
                method: entry.method,
                resource: entry.resource,
                status: entry.status,
                outcome: entry.outcome,
            })
            .collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_name_writes_and_skip_reads() {
        let memory = "/v1/memory/collections/{collection}/memories/{memory_id}";
        assert_eq!(
            action(&Method::PATCH, memory).as_deref(),
            Some("memory.update")
        );
        assert_eq!(action(&Method::GET, memory), None);
        assert_eq!(
            action(&Method::PUT, "/v1/memory/collections/{collection}").as_deref(),
            Some("collection.update")
        );
        assert_eq!(
            action(
                &Method::DELETE,
                "/v1/memory/collections/{collection}/grants/{agent_key_id}"
            )
            .as_deref(),
            Some("grant.delete")
        );
        assert_eq!(
            action(&Method::POST, "/v1/memory/collections/{collection}/search"),
            None
        );
        assert_eq!(
            action(&Method::POST, "/v1/memory/new/thing").as_deref(),
            Some("post /v1/memory/new/thing")
        );
    }
}
