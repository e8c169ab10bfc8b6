//! Managed connectors, nested at `/v1/memory/connections`: create, list, get and delete
//! connections; sync one now; its runs; and the OAuth start and callback of notion, slack,
//! gdrive and gmail. Credentials go in and are never answered.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_accounts::reveal::escape_html;
use memvault_core::Authorizer;
use memvault_storage::SyncRunRecord;
use memvault_sync::{ConnectionView, Connections, NewConnection, SyncOutcome};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::account::page;
use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Writer};
use super::collections::writable_or_new;
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Runs listed without a `limit`, and the most one page holds.
const RUNS_DEFAULT: usize = 20;
const RUNS_MAX: usize = 200;

/// Nested at `/v1/memory/connections`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create).audit(Audit::Change("connection.create")))
        .routes(routes!(list))
        .routes(routes!(get_one))
        .routes(routes!(delete).audit(Audit::Change("connection.delete")))
        .routes(routes!(sync).audit(Audit::Change("connection.sync")))
        .routes(routes!(runs))
        .routes(routes!(oauth_start))
        // The browser comes back without a key: the state names the tenant.
        .routes(routes!(oauth_callback))
        .routes(routes!(oauth_connected))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateConnectionRequest {
    /// `slack`, `notion`, `gdrive`, `gmail`, `linear`, `confluence` or `hubspot` (`postgres`
    /// is a self-hosted recipe: 422 `provider_not_supported`).
    pub provider: String,
    pub name: Option<String>,
    /// The collection the records become memories of (created on the first sync).
    pub collection: String,
    /// Every synced memory carries it.
    pub container_tag: Option<String>,
    /// The provider's config (slack: channel_id; notion: database_id; gdrive: folder_id or
    /// query; gmail: query; confluence: base_url, space_key), and `sync_interval_minutes`
    /// (1 to 10080, default 60).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub config: Map<String, Value>,
    /// slack, notion, gdrive, gmail, linear, hubspot: `token`; confluence: `email` and
    /// `api_token`. Sealed at rest, never returned.
    #[schema(value_type = Object)]
    pub credentials: Map<String, Value>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConnectionResponse {
    pub id: String,
    pub provider: String,
    pub name: Option<String>,
    pub collection: String,
    pub container_tag: Option<String>,
    #[schema(value_type = Object)]
    pub config: Value,
    /// `active`, `error` (the last sync failed) or `paused` (5 failures in a row: the
    /// scheduler stops until a manual sync succeeds).
    pub status: String,
    /// Why the last sync failed; null after a success.
    pub last_error: Option<String>,
    pub consecutive_failures: u32,
    /// The newest modification time a complete sync saw; null before the first.
    pub cursor: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub last_sync_at: Option<DateTime<Utc>>,
    /// When the scheduler syncs it next; null while paused.
    pub next_sync_at: Option<DateTime<Utc>>,
}

impl From<ConnectionView> for ConnectionResponse {
    fn from(view: ConnectionView) -> Self {
        Self {
            id: view.id,
            provider: view.provider,
            name: view.name,
            collection: view.collection,
            container_tag: view.container_tag,
            config: view.config,
            status: view.status.as_str().to_owned(),
            last_error: view.last_error,
            consecutive_failures: view.consecutive_failures,
            cursor: view.cursor,
            created_at: view.created_at,
            updated_at: view.updated_at,
            last_sync_at: view.last_sync_at,
            next_sync_at: view.next_sync_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RunResponse {
    pub id: String,
    /// `ok`, `partial` (capped; the next run resumes from its checkpoint) or `error`.
    pub status: String,
    /// Records stored (new or changed).
    pub synced_count: u64,
    /// Records skipped as unchanged (same content hash: nothing re-embedded).
    pub unchanged_count: u64,
    /// Memories removed because their record was deleted at the source.
    pub deleted_count: u64,
    pub error: Option<String>,
    /// `manual` or `schedule`.
    pub trigger: String,
    pub created_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
}

impl From<SyncRunRecord> for RunResponse {
    fn from(run: SyncRunRecord) -> Self {
        Self {
            id: run.id,
            status: run.status,
            synced_count: run.synced_count,
            unchanged_count: run.unchanged_count,
            deleted_count: run.deleted_count,
            error: run.error,
            trigger: run.trigger,
            created_at: run.created_at,
            finished_at: run.finished_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SyncResponse {
    /// Records stored (new or changed) by this sync.
    pub synced: u64,
    pub unchanged: u64,
    pub deleted: u64,
    pub cursor: Option<String>,
    /// The connection's status after the sync: `active`, or `error` / `paused` when the
    /// provider refused it (`error` says why).
    pub status: String,
    pub error: Option<String>,
    pub run: RunResponse,
}

impl From<SyncOutcome> for SyncResponse {
    fn from(outcome: SyncOutcome) -> Self {
        Self {
            synced: outcome.synced,
            unchanged: outcome.unchanged,
            deleted: outcome.deleted,
            cursor: outcome.cursor,
            status: outcome.status.as_str().to_owned(),
            error: outcome.error,
            run: outcome.run.into(),
        }
    }
}

/// Creates a connection; the first sync runs on `sync` or at the scheduled time.
#[utoipa::path(post, path = "", tag = "connectors",
    request_body = CreateConnectionRequest,
    responses((status = 201, body = ConnectionResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(connections): State<Connections>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiJson(request): ApiJson<CreateConnectionRequest>,
) -> ApiResult<(StatusCode, Json<ConnectionResponse>)> {
    let access = writable_or_new(&authorizer, &agent, &request.collection)?;
    let container_tag = tag(request.container_tag)?;
    let name = request
        .name
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty());
    if name.as_ref().is_some_and(|name| name.chars().count() > 200) {
        return Err(ApiError::Validation(
            "name is longer than 200 characters".to_owned(),
        ));
    }
    let view = connections
        .create(
            &access,
            NewConnection {
                provider: request.provider,
                name,
                container_tag,
                config: request.config,
                credentials: request.credentials,
            },
        )
        .await?;
    Ok((StatusCode::CREATED, Json(view.into())))
}

fn tag(raw: Option<String>) -> ApiResult<Option<String>> {
    match raw.map(|tag| tag.trim().to_owned()) {
        Some(tag) if tag.is_empty() => Ok(None),
        Some(tag) if tag.chars().count() > 100 => Err(ApiError::Validation(
            "container_tag is longer than 100 characters".to_owned(),
        )),
        other => Ok(other),
    }
}

/// The tenant's connections, oldest first; never their credentials.
#[utoipa::path(get, path = "", tag = "connectors",
    responses((status = 200, body = [ConnectionResponse]), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(connections): State<Connections>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<Vec<ConnectionResponse>>> {
    let views = connections.list(&agent).await?;
    Ok(Json(views.into_iter().map(Into::into).collect()))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ConnectionPath {
    pub connection_id: String,
}

/// One connection.
#[utoipa::path(get, path = "/{connection_id}", tag = "connectors",
    params(ConnectionPath),
    responses((status = 200, body = ConnectionResponse), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_one(
    State(connections): State<Connections>,
    Authenticated(agent): Authenticated,
    ApiPath(path): ApiPath<ConnectionPath>,
) -> ApiResult<Json<ConnectionResponse>> {
    Ok(Json(
        connections.get(&agent, &path.connection_id).await?.into(),
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeleteQuery {
    /// Also delete the memories it synced (default false: they stay in the collection).
    pub delete_memories: Option<bool>,
}

/// Removes the connection with its runs (a run in progress finishes first).
#[utoipa::path(delete, path = "/{connection_id}", tag = "connectors",
    params(ConnectionPath, DeleteQuery),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete(
    State(connections): State<Connections>,
    Writer(agent): Writer,
    ApiPath(path): ApiPath<ConnectionPath>,
    ApiQuery(query): ApiQuery<DeleteQuery>,
) -> ApiResult<StatusCode> {
    connections
        .delete(
            &agent,
            &path.connection_id,
            query.delete_memories.unwrap_or(false),
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Syncs now: records changed since the cursor become memories (edited ones are updated,
/// unchanged ones skipped). Waits for a run in progress. A sync the provider refuses
/// answers 200 with status `error` (or `paused` after 5 in a row) and its `error`.
#[utoipa::path(post, path = "/{connection_id}/sync", tag = "connectors",
    params(ConnectionPath),
    responses((status = 200, body = SyncResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn sync(
    State(connections): State<Connections>,
    Writer(agent): Writer,
    ApiPath(path): ApiPath<ConnectionPath>,
) -> ApiResult<Json<SyncResponse>> {
    // The run is a task of its own: a client that hangs up (a closed tab) does not cut
    // it short, and it is recorded as it ends.
    let run = tokio::spawn(async move { connections.sync(&agent, &path.connection_id).await });
    let outcome = run
        .await
        .map_err(|error| ApiError::Internal(format!("the sync task failed: {error}")))??;
    Ok(Json(outcome.into()))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunsQuery {
    /// 1 to 200; default 20.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
}

/// The connection's sync runs, newest first.
#[utoipa::path(get, path = "/{connection_id}/runs", tag = "connectors",
    params(ConnectionPath, RunsQuery),
    responses((status = 200, body = [RunResponse]), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn runs(
    State(connections): State<Connections>,
    Authenticated(agent): Authenticated,
    ApiPath(path): ApiPath<ConnectionPath>,
    ApiQuery(query): ApiQuery<RunsQuery>,
) -> ApiResult<Json<Vec<RunResponse>>> {
    let limit = match query.limit {
        None => RUNS_DEFAULT,
        Some(limit) if (1..=RUNS_MAX as i64).contains(&limit) => limit as usize,
        Some(_) => {
            return Err(ApiError::InvalidQuery(format!(
                "limit must be 1 to {RUNS_MAX}"
            )))
        }
    };
    let runs = connections.runs(&agent, &path.connection_id, limit).await?;
    Ok(Json(runs.into_iter().map(Into::into).collect()))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ProviderPath {
    /// `notion`, `slack`, `gdrive` or `gmail`: the providers with an OAuth flow (another
    /// is 422 `provider_not_supported`).
    #[param(value_type = OAuthProvider, inline)]
    pub provider: String,
}

/// The providers a connection can be made with through OAuth, for the OpenAPI
/// description; the path stays a string so that another provider gets its own code.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum OAuthProvider {
    Notion,
    Slack,
    Gdrive,
    Gmail,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StartQuery {
    /// The collection the connection will write to (created when missing).
    #[param(max_length = 128, pattern = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")]
    pub collection: String,
    pub name: Option<String>,
    #[param(max_length = 100)]
    pub container_tag: Option<String>,
    /// Slack: the channel to sync.
    pub channel_id: Option<String>,
    /// Notion: one database instead of every shared page.
    pub database_id: Option<String>,
    /// Drive: one folder.
    pub folder_id: Option<String>,
    /// Drive or Gmail: a search query.
    pub query: Option<String>,
    /// Minutes between scheduled syncs (default 60, at most a week).
    #[param(minimum = 1, maximum = 10080)]
    pub sync_interval_minutes: Option<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OAuthStartResponse {
    /// Send the user's browser here; the provider sends it back to the callback.
    pub authorize_url: String,
}

/// Starts an OAuth connection: the provider's authorize URL with a single-use state bound
/// to this tenant and key (valid 10 minutes). 503 when the server has no OAuth app for
/// the provider.
#[utoipa::path(get, path = "/oauth/{provider}/start", tag = "connectors",
    params(ProviderPath, StartQuery),
    responses((status = 200, body = OAuthStartResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn oauth_start(
    State(connections): State<Connections>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(path): ApiPath<ProviderPath>,
    ApiQuery(query): ApiQuery<StartQuery>,
) -> ApiResult<Json<OAuthStartResponse>> {
    let access = writable_or_new(&authorizer, &agent, &query.collection)?;
    let mut config = Map::new();
    for (key, value) in [
        ("channel_id", query.channel_id),
        ("database_id", query.database_id),
        ("folder_id", query.folder_id),
        ("query", query.query),
    ] {
        if let Some(value) = value.filter(|value| !value.trim().is_empty()) {
            config.insert(key.to_owned(), Value::String(value));
        }
    }
    if let Some(minutes) = query.sync_interval_minutes {
        config.insert("sync_interval_minutes".to_owned(), Value::from(minutes));
    }
    let name = query
        .name
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty());
    let authorize_url = connections
        .oauth_start(
            &access,
            &path.provider,
            name,
            tag(query.container_tag)?,
            config,
        )
        .await?;
    Ok(Json(OAuthStartResponse { authorize_url }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    pub code: Option<String>,
    pub state: Option<String>,
    /// Set by the provider when the user declined.
    pub error: Option<String>,
}

/// Where the provider sends the browser back (no key: the state names the tenant). The
/// code is exchanged, the token stored sealed as a new connection, and the browser
/// redirected (303) to the connection's page in the dashboard
/// (`/dashboard/connectors/{id}?connected={provider}` under `server.public_url`). An
/// unknown, used or expired state is 400.
#[utoipa::path(get, path = "/oauth/{provider}/callback", tag = "connectors",
    params(ProviderPath, CallbackQuery),
    responses((status = 303, description = "to the connection's page in the dashboard"), (status = 400, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 502, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn oauth_callback(
    State(connections): State<Connections>,
    ApiPath(path): ApiPath<ProviderPath>,
    ApiQuery(query): ApiQuery<CallbackQuery>,
) -> ApiResult<Response> {
    let view = connections
        .oauth_callback(
            &path.provider,
            query.code.as_deref(),
            query.state.as_deref(),
            query.error.as_deref(),
        )
        .await?;
    let location = format!(
        "{}/dashboard/connectors/{}?connected={}",
        connections.public_url().trim_end_matches('/'),
        view.id,
        view.provider
    );
    Ok((StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response())
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ConnectedQuery {
    /// The new connection's id.
    pub connection: Option<String>,
}

/// The page the browser lands on after the callback: it says the connection was made and
/// how to follow it (it shows nothing but the id the redirect carried). Only the providers
/// with an OAuth flow have one (another is 422 `provider_not_supported`).
#[utoipa::path(get, path = "/oauth/{provider}/connected", tag = "connectors",
    params(ProviderPath, ConnectedQuery),
    responses((status = 200, description = "the landing page", content_type = "text/html", body = String),
        (status = 422, body = ErrorBody)))]
pub async fn oauth_connected(
    ApiPath(path): ApiPath<ProviderPath>,
    ApiQuery(query): ApiQuery<ConnectedQuery>,
) -> ApiResult<Html<String>> {
    let has_oauth = memvault_connectors::ProviderKind::parse(&path.provider)
        .is_some_and(|kind| kind.has_oauth());
    if !has_oauth {
        return Err(memvault_core::Error::ProviderNotSupported(format!(
            "'{}' has no OAuth flow: notion, slack, gdrive and gmail do",
            path.provider
        ))
        .into());
    }
    let id = query.connection.unwrap_or_default();
    let body = format!(
        "<p>memvault is now connected to {provider}. The first sync runs at the next scheduled \
         time, or at once with <code>POST /v1/memory/connections/{id}/sync</code>.</p>\
         <p>Connection id: <code>{id}</code>. You can close this window.</p>",
        provider = escape_html(&path.provider),
        id = escape_html(&id),
    );
    Ok(Html(page("Connected", &body)))
}
