//! The tenant's own database: `GET/PUT/DELETE /v1/memory/database/config` (SPEC
//! "Bring-your-own configuration"). See `memvault_core`'s `service/database.rs` for what
//! moves and how.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::{DatabaseConfigView, Settings};
use memvault_storage::DatabaseState;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Owner};
use super::extract::ApiJson;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// The longest connection string accepted.
const MAX_URL_CHARS: usize = 2_048;

/// Nested at `/v1/memory`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_database))
        .routes(routes!(put_database).audit(Audit::Change("database.set")))
        .routes(routes!(delete_database).audit(Audit::Change("database.delete")))
}

/// SPEC leaves the field's name open: `url` (as the server's own `[store] url`), with
/// `connection_string` accepted too.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DatabaseConfigRequest {
    /// A Postgres URL, `postgresql://user:password@host:5432/database` (or `postgres://`);
    /// `?sslmode=require` (or `verify-full`, with `sslrootcert=`) for TLS. The host must be
    /// a public address unless the server allows private ones. Stored encrypted; never
    /// returned.
    #[serde(alias = "connection_string")]
    #[schema(
        min_length = 1,
        max_length = 2048,
        example = "postgresql://memvault:secret@db.example.com:5432/memvault?sslmode=require"
    )]
    pub url: String,
}

impl DatabaseConfigRequest {
    fn validate(self) -> ApiResult<String> {
        let url = self.url.trim().to_owned();
        if url.is_empty() || url.chars().count() > MAX_URL_CHARS {
            return Err(ApiError::Validation(format!(
                "url must be 1 to {MAX_URL_CHARS} characters"
            )));
        }
        if url.chars().any(char::is_control) {
            return Err(ApiError::Validation(
                "url must not contain control characters".to_owned(),
            ));
        }
        let parsed = reqwest::Url::parse(&url)
            .map_err(|error| ApiError::Validation(format!("url is not a valid URL: {error}")))?;
        if !matches!(parsed.scheme(), "postgres" | "postgresql")
            || parsed.host_str().is_none_or(str::is_empty)
        {
            return Err(ApiError::Validation(
                "url must be a postgres:// or postgresql:// URL with a host, e.g. \
                 postgresql://user:password@db.example.com:5432/memvault"
                    .to_owned(),
            ));
        }
        if parsed.path().trim_start_matches('/').is_empty() {
            return Err(ApiError::Validation(
                "url must name the database: postgresql://user:password@host:5432/<database>"
                    .to_owned(),
            ));
        }
        Ok(url)
    }
}

/// Where the tenant's data is. Never the connection string or its password.
#[derive(Debug, Serialize, ToSchema)]
pub struct DatabaseConfigResponse {
    /// True when a database of the tenant's own is configured (whatever its state).
    pub configured: bool,
    /// `platform`: the data is in the platform store, nothing configured. `copying`: it
    /// is being copied to the tenant's database (served from the platform meanwhile);
    /// `active`: it is in the tenant's database; `reverting`: it is being copied back
    /// (DELETE; served from the tenant's database meanwhile); `failed`: the copy gave up
    /// (`detail` says why) and the data stayed in the platform store.
    #[schema(pattern = "^(platform|copying|active|reverting|failed)$")]
    pub state: String,
    /// `user@host:port/database`, without the password.
    pub target: Option<String>,
    /// The server's version as its self-test found it.
    pub server_version: Option<String>,
    /// While a switch runs: how far its copy has come.
    pub progress: Option<DatabaseProgress>,
    /// Why the last switch failed (while it is retried, or after it gave up).
    pub detail: Option<String>,
    pub created_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DatabaseProgress {
    pub collections_total: u64,
    pub collections_done: u64,
    /// Memories, jobs, ingest batches and imports copied so far.
    pub records_copied: u64,
}

impl From<Option<DatabaseConfigView>> for DatabaseConfigResponse {
    fn from(view: Option<DatabaseConfigView>) -> Self {
        let Some(view) = view else {
            return Self {
                configured: false,
                state: "platform".to_owned(),
                target: None,
                server_version: None,
                progress: None,
                detail: None,
                created_at: None,
                updated_at: None,
            };
        };
        Self {
            configured: true,
            state: match view.state {
                DatabaseState::Copying => "copying",
                DatabaseState::Active => "active",
                DatabaseState::Reverting => "reverting",
                DatabaseState::Failed => "failed",
            }
            .to_owned(),
            target: Some(view.target),
            server_version: Some(view.server_version),
            progress: view.progress.map(|progress| DatabaseProgress {
                collections_total: progress.collections_total,
                collections_done: progress.collections_done,
                records_copied: progress.records_copied,
            }),
            detail: view.detail,
            created_at: Some(view.created_at),
            updated_at: Some(view.updated_at),
        }
    }
}

/// Where the tenant's data is, and how far a switch has come; never the connection
/// string.
#[utoipa::path(get, path = "/database/config", tag = "settings",
    responses((status = 200, body = DatabaseConfigResponse), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_database(
    State(settings): State<Settings>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<DatabaseConfigResponse>> {
    Ok(Json(settings.database(&agent.tenant_id)?.into()))
}

/// Moves the tenant's data (collections, memories, jobs, ingest batches, imports) to a
/// Postgres database of its own. The URL's host is checked against private addresses
/// (422 `database_target_rejected`), then a live self-test connects (20 s at most),
/// checks the version (13 or newer), applies memvault's schema and writes and reads back
/// a probe row (422 `database_self_test_failed`, nothing saved). Then the connection
/// string is stored encrypted and the copy starts: 202 with `state: copying`; GET shows
/// its progress and `active` when done. Writes made during the copy wait for it and land
/// in the new database; nothing is lost. The account itself (keys, settings, usage,
/// audit, connectors) stays on the platform. 409 while a switch runs, or when the data is
/// in a database of its own already (DELETE first).
#[utoipa::path(put, path = "/database/config", tag = "settings",
    request_body = DatabaseConfigRequest,
    responses((status = 202, body = DatabaseConfigResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put_database(
    State(settings): State<Settings>,
    Owner(agent): Owner,
    ApiJson(request): ApiJson<DatabaseConfigRequest>,
) -> ApiResult<(StatusCode, Json<DatabaseConfigResponse>)> {
    let url = request.validate()?;
    let view = settings.set_database(&agent.tenant_id, url).await?;
    Ok((StatusCode::ACCEPTED, Json(Some(view).into())))
}

/// Moves the tenant's data back to the platform store and drops the connection string.
/// 202 with `state: reverting` while the data is copied back (GET shows `platform` when
/// done); 200 with the dropped configuration when the data never left the platform (a
/// `failed` switch); 204 when nothing was configured. The tenant's database keeps its
/// copy: memvault does not delete data in a database it stops using. 409 while a switch
/// runs.
#[utoipa::path(delete, path = "/database/config", tag = "settings",
    responses((status = 200, body = DatabaseConfigResponse),
        (status = 202, body = DatabaseConfigResponse), (status = 204),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete_database(
    State(settings): State<Settings>,
    Owner(agent): Owner,
) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    Ok(match settings.clear_database(&agent.tenant_id).await? {
        None => StatusCode::NO_CONTENT.into_response(),
        Some(view) if view.state == DatabaseState::Reverting => (
            StatusCode::ACCEPTED,
            Json(DatabaseConfigResponse::from(Some(view))),
        )
            .into_response(),
        Some(view) => Json(DatabaseConfigResponse::from(Some(view))).into_response(),
    })
}
