//! Public endpoints (no key): health, status, and the pageview beacon.

use std::sync::Arc;

use crate::pageviews::Pageviews;
use crate::status::{HealthCheck, Incident, StatusMonitor};
use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::AppState;

/// The beacon reads at most this much of a body; the rest is ignored.
const BEACON_BODY_MAX: usize = 16 * 1024;

/// Nested at `/v1`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(health))
        .routes(routes!(status))
        .routes(routes!(pulse).audit(Audit::NoTenantChange))
        .routes(routes!(track).audit(Audit::NoTenantChange))
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ServiceHealthResponse)]
pub struct HealthResponse {
    /// Always `healthy` once the server serves.
    #[schema(example = "healthy")]
    pub status: &'static str,
}

/// Readiness: 200 `{"status":"healthy"}` once the server serves.
#[utoipa::path(get, path = "/memory/health", tag = "public",
    responses((status = 200, body = HealthResponse)))]
pub async fn health() -> Json<HealthResponse> {
    Json(HealthResponse { status: "healthy" })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StatusCheckResponse {
    pub at: DateTime<Utc>,
    pub ok: bool,
    pub latency_ms: f64,
    pub detail: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IncidentResponse {
    pub started_at: DateTime<Utc>,
    /// Null while the incident is ongoing.
    pub resolved_at: Option<DateTime<Utc>>,
    pub failed_checks: usize,
    pub detail: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StatusResponse {
    /// `operational` when the last self-check passed and nothing is degraded, else
    /// `degraded`.
    pub status: &'static str,
    pub started_at: DateTime<Utc>,
    /// Share of passed self-checks over the last 24 hours, in percent.
    pub uptime_24h_percent: f64,
    pub checks_24h: usize,
    /// The latest self-checks, newest first.
    pub recent_checks: Vec<StatusCheckResponse>,
    /// Runs of failed self-checks in the last 24 hours, newest first.
    pub incidents: Vec<IncidentResponse>,
    /// What the supervisors find degraded now (parts that keep failing and are being
    /// restarted slowly, supervisors down); any of it makes `status` `degraded`.
    pub degraded: DegradedResponse,
    /// Several nodes (`[cluster]`): the node that answered and every node with the
    /// number of accounts it serves; absent on a server alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<StatusClusterResponse>,
}

/// Node ids and counts only: no addresses, no tenant data.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusClusterResponse {
    /// The node that answered.
    pub node: String,
    pub nodes: Vec<StatusNodeResponse>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StatusNodeResponse {
    pub id: String,
    /// Whether its last heartbeat is within the lease time.
    pub live: bool,
    /// Accounts it holds the lease of.
    pub tenants: usize,
    /// Jobs queued and running on it, all kinds together, at its last heartbeat.
    pub jobs_queued: u64,
    pub jobs_running: u64,
}

/// Counts and kind names only: no tenant data.
#[derive(Debug, Serialize, ToSchema)]
pub struct DegradedResponse {
    pub tenants: u64,
    pub collections: u64,
    pub job_kinds: Vec<&'static str>,
    /// Resident loops (`audit_writer`, `webhook_recorder`) restarted again and again.
    pub tasks: Vec<&'static str>,
    pub supervisors_down: Vec<&'static str>,
}

impl From<HealthCheck> for StatusCheckResponse {
    fn from(check: HealthCheck) -> Self {
        Self {
            at: check.at,
            ok: check.ok,
            latency_ms: check.latency_ms,
            detail: check.detail,
        }
    }
}

impl From<Incident> for IncidentResponse {
    fn from(incident: Incident) -> Self {
        Self {
            started_at: incident.started_at,
            resolved_at: incident.resolved_at,
            failed_checks: incident.failed_checks,
            detail: incident.detail,
        }
    }
}

/// Service status: current state, 24-hour uptime from periodic self-checks, recent checks
/// and incidents. Carries no tenant data.
#[utoipa::path(get, path = "/status", tag = "public",
    responses((status = 200, body = StatusResponse)))]
pub async fn status(
    State(status): State<Arc<StatusMonitor>>,
    State(cluster): State<Option<Arc<crate::cluster::Cluster>>>,
) -> Json<StatusResponse> {
    let report = status.report();
    // The status page answers even when the cluster's database does not.
    let cluster = match cluster {
        Some(cluster) => cluster.view().await.ok().map(|view| StatusClusterResponse {
            node: view.node,
            nodes: view
                .nodes
                .into_iter()
                .map(|node| StatusNodeResponse {
                    id: node.id,
                    live: node.live,
                    tenants: node.leases.len(),
                    jobs_queued: node.stats.jobs.values().map(|jobs| jobs.queued).sum(),
                    jobs_running: node.stats.jobs.values().map(|jobs| jobs.running).sum(),
                })
                .collect(),
        }),
        None => None,
    };
    Json(StatusResponse {
        status: report.state,
        started_at: report.started_at,
        uptime_24h_percent: report.uptime_24h_percent,
        checks_24h: report.checks_24h,
        recent_checks: report.recent_checks.into_iter().map(Into::into).collect(),
        incidents: report.incidents.into_iter().map(Into::into).collect(),
        degraded: DegradedResponse {
            tenants: report.degraded.degraded_tenants,
            collections: report.degraded.degraded_collections,
            job_kinds: report.degraded.degraded_job_kinds,
            tasks: report.degraded.degraded_tasks,
            supervisors_down: report.degraded.supervisors_down,
        },
        cluster,
    })
}

/// Cookieless pageview beacon: counts the page path and the referrer's host. Always 204,
/// whatever the body or credentials.
#[utoipa::path(post, path = "/pulse", tag = "public",
    request_body(content = Option<serde_json::Value>, description = "`{\"path\": \"/pricing\", \"referrer\": \"https://...\"}`; any body, or none, is accepted"),
    responses((status = 204, description = "always")))]
pub async fn pulse(State(pageviews): State<Arc<Pageviews>>, request: Request) -> StatusCode {
    let body = to_bytes(request.into_body(), BEACON_BODY_MAX)
        .await
        .unwrap_or_default();
    pageviews.record(&body);
    StatusCode::NO_CONTENT
}

/// Legacy alias of `/v1/pulse`.
#[utoipa::path(post, path = "/track", tag = "public",
    request_body(content = Option<serde_json::Value>, description = "as for /v1/pulse"),
    responses((status = 204, description = "always")))]
pub async fn track(pageviews: State<Arc<Pageviews>>, request: Request) -> StatusCode {
    pulse(pageviews, request).await
}
