//! The audit log at the edge: each write route declares what it records ([`Audit`], next
//! to its `routes!`), a change route stamps its responses with the action, and the
//! [`record`] middleware logs every authenticated request so stamped; and
//! `GET /v1/memory/admin/audit`.

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::Agent;
use memvault_core::AuditTrail;
use memvault_storage::{AuditEntry, TenantId};
use serde::{Deserialize, Serialize};
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::OpenApi;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

use super::auth::Admin;
use super::client::ClientAddress;
use super::extract::ApiQuery;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory/admin`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(audit))
}

/// What a write route records in the audit log, declared where the route is declared:
/// `.routes(routes!(create).audit(Audit::Change("memory.create")))`. Every POST, PUT,
/// PATCH and DELETE route must declare one (a test walks the API and fails otherwise):
/// there is no fallback name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audit {
    /// A change, recorded under this action once it is answered (whatever the status).
    Change(&'static str),
    /// A write method that changes no tenant data: a POST that only reads (search) or a
    /// public beacon.
    NoTenantChange,
    /// The handler records its own entries: each MCP tool call is audited by the tool.
    ByHandler,
}

/// The action a change route stamps on its responses for [`record`] to find.
#[derive(Clone, Copy, Debug)]
struct AuditAction(&'static str);

/// The OpenAPI extension that carries a route's [`Audit`] from its declaration to the
/// check that every write declares one; [`strip_declarations`] removes it before
/// `/openapi.json` is served.
pub const DECLARATION: &str = "x-memvault-audit";

impl Audit {
    fn declaration(self) -> &'static str {
        match self {
            Audit::Change(action) => action,
            Audit::NoTenantChange => "no tenant change",
            Audit::ByHandler => "by handler",
        }
    }
}

/// Declares the audit of the routes of one `routes!(...)`: on their OpenAPI operations,
/// and, for a change, as a route layer that stamps each response with the action.
pub trait AuditRoutes {
    /// Panics (when the router is built, so at start-up and in every test) when the
    /// routes include a read method: a GET is never audited.
    fn audit(self, audit: Audit) -> Self;
}

impl AuditRoutes for UtoipaMethodRouter<AppState> {
    fn audit(self, audit: Audit) -> Self {
        let (schemas, mut paths, method_router) = self;
        for (path, item) in paths.paths.iter_mut() {
            for (method, operation) in operations_mut(item) {
                assert!(
                    is_write(method),
                    "audit declared on {method} {path}: only writes are audited"
                );
                operation
                    .extensions
                    .get_or_insert_with(Default::default)
                    .insert(DECLARATION.to_owned(), audit.declaration().into());
            }
        }
        let method_router = match audit {
            Audit::Change(action) => method_router.route_layer(middleware::map_response(
                move |mut response: Response| async move {
                    response.extensions_mut().insert(AuditAction(action));
                    response
                },
            )),
            Audit::NoTenantChange | Audit::ByHandler => method_router,
        };
        (schemas, paths, method_router)
    }
}

/// The write operations of `document` that declare no audit, as `METHOD path`: what the
/// rule "every write route says what it records" finds broken (none in `documented_routes`).
pub fn undeclared_writes(document: &mut OpenApi) -> Vec<String> {
    let mut undeclared = Vec::new();
    for (path, item) in document.paths.paths.iter_mut() {
        for (method, operation) in operations_mut(item) {
            let declared = operation
                .extensions
                .as_ref()
                .is_some_and(|extensions| extensions.contains_key(DECLARATION));
            if is_write(method) && !declared {
                undeclared.push(format!("{method} {path}"));
            }
        }
    }
    undeclared
}

fn is_write(method: &str) -> bool {
    matches!(method, "POST" | "PUT" | "PATCH" | "DELETE")
}

/// A path's operations with their methods.
fn operations_mut(item: &mut PathItem) -> impl Iterator<Item = (&'static str, &mut Operation)> {
    [
        ("GET", item.get.as_mut()),
        ("PUT", item.put.as_mut()),
        ("POST", item.post.as_mut()),
        ("DELETE", item.delete.as_mut()),
        ("OPTIONS", item.options.as_mut()),
        ("HEAD", item.head.as_mut()),
        ("PATCH", item.patch.as_mut()),
        ("TRACE", item.trace.as_mut()),
    ]
    .into_iter()
    .filter_map(|(method, operation)| Some((method, operation?)))
}

/// Removes the audit declarations from the served document: they are this server's
/// bookkeeping, not part of the API.
pub fn strip_declarations(document: &mut OpenApi) {
    for item in document.paths.paths.values_mut() {
        for (_, operation) in operations_mut(item) {
            if let Some(extensions) = operation.extensions.as_mut() {
                extensions.remove(DECLARATION);
            }
            if operation
                .extensions
                .as_ref()
                .is_some_and(|extensions| extensions.is_empty())
            {
                operation.extensions = None;
            }
        }
    }
}

fn outcome(status: u16) -> &'static str {
    match status {
        200..=299 => "success",
        401 | 403 | 429 => "denied",
        _ => "failed",
    }
}

/// Records the request after it is answered, when an authenticated agent called a route
/// declared as a change ([`Audit::Change`]), whatever the answer. Runs inside the rate
/// limiter, which authenticated.
pub async fn record(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let agent = request.extensions().get::<Agent>().cloned();
    let client = ClientAddress::of(
        request.extensions(),
        request.headers(),
        &state.trusted_proxies,
    )
    .0;
    let method = request.method().clone();
    let resource = request.uri().path().to_owned();
    let response = next.run(request).await;
    let Some(agent) = agent else {
        return response;
    };
    let Some(&AuditAction(action)) = response.extensions().get::<AuditAction>() else {
        return response;
    };
    let status = response.status().as_u16();
    let at = state.audit.now();
    state.audit.record(AuditEntry {
        id: uuid::Uuid::now_v7().to_string(),
        tenant_id: agent.tenant_id,
        at,
        agent_id: agent.key_id,
        agent_label: agent.label,
        action: action.to_owned(),
        method: method.to_string(),
        resource,
        status,
        outcome: outcome(status).to_owned(),
        client_address: (client != "unknown").then_some(client),
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
    /// The client's address: the TCP peer, or behind a trusted proxy
    /// (`server.trusted_proxies`) the address it forwarded. Absent when unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_address: Option<String>,
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
    State(audit): State<AuditTrail>,
    Admin(agent): Admin,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> ApiResult<Json<AuditResponse>> {
    let days = bounded(query.days, DAYS_DEFAULT, DAYS_MAX, "days")?;
    let limit = bounded(query.limit, LIMIT_DEFAULT, LIMIT_MAX, "limit")?;
    let tenant = query
        .tenant_id
        .map(TenantId::from_stored)
        .unwrap_or(agent.tenant_id);
    let entries = audit.entries(&tenant, days as u32, limit as usize).await?;
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
                client_address: entry.client_address,
            })
            .collect(),
    }))
}
