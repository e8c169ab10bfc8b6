//! `/v1/memory/admin`: tenant creation (admin-flagged tenants), the caller's account, and
//! its usage counts.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_accounts::Accounts;
use memvault_core::service::NewTenant;
use memvault_core::Tenants;
use memvault_types::limits;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Admin, Authenticated, Owner};
use super::extract::ApiJson;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory/admin`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_tenant).audit(Audit::Change("tenant.create")))
        .routes(routes!(me))
        .routes(routes!(stats))
        // Nothing is recorded: an erased account keeps no audit log, and a refused
        // erasure changes nothing.
        .routes(routes!(delete_account).audit(Audit::NoTenantChange))
}

const NAME_MAX_CHARS: usize = 200;
const EMAIL_MAX_CHARS: usize = 254;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTenantRequest {
    pub name: String,
    #[schema(
        max_length = 254,
        pattern = r"^[ \t\r\n]*[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*[ \t\r\n]*$"
    )]
    pub email: String,
    /// Default `free`.
    pub tier: Option<String>,
    /// Admin-flagged tenants may create tenants and read operator endpoints. Default false.
    pub admin: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TenantCreatedResponse {
    pub id: String,
    pub name: String,
    pub email: String,
    pub tier: String,
    pub admin: bool,
    /// The tenant's first API key; shown this once.
    pub api_key: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LimitsResponse {
    pub memory_text_max_chars: usize,
    pub bulk_max_items: usize,
    pub list_limit_max: usize,
    pub search_limit_max: usize,
    pub max_request_body_bytes: usize,
    /// Requests per minute per API key of this tenant's tier (the rate limit).
    pub requests_per_minute: u32,
    /// Collections the tier allows; null is unlimited.
    pub collections: Option<u64>,
    /// Memories the tier allows, over all collections; null is unlimited.
    pub memories: Option<u64>,
    /// Bytes of stored files the tier allows in the server's storage (a tenant's own
    /// bucket does not count); null is unlimited.
    pub storage_bytes: Option<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeySummary {
    pub id: String,
    pub label: String,
    pub read_only: bool,
    /// The tenant's owner key (manages keys, grants, webhooks and settings).
    pub owner: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MeResponse {
    pub id: String,
    pub name: String,
    pub email: String,
    pub tier: String,
    pub admin: bool,
    pub created_at: DateTime<Utc>,
    /// The key this request was made with.
    pub key: KeySummary,
    pub limits: LimitsResponse,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StatsResponse {
    pub collections: usize,
    pub memories: usize,
    /// Bytes the tenant's records and stored files take.
    pub storage_bytes: u64,
    /// Bytes of the stored files alone (dropped, uploaded, attached), part of
    /// `storage_bytes`.
    pub files_bytes: u64,
    pub added_7d: usize,
    pub added_30d: usize,
    /// The account's tier, whose limits `limits` are.
    pub tier: String,
    pub limits: TierLimitsResponse,
}

/// What a tier allows; null is unlimited.
#[derive(Debug, Serialize, ToSchema)]
pub struct TierLimitsResponse {
    pub collections: Option<u64>,
    pub memories: Option<u64>,
    /// Bytes of stored files in the server's storage (compare `files_bytes`).
    pub storage_bytes: Option<u64>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteAccountRequest {
    /// The account's name (`name` in `GET /v1/memory/admin/me`), exactly.
    pub confirm: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeleteAccountResponse {
    /// `erasing`: the account's keys no longer work; its memories, indexes, files, jobs,
    /// webhook, mail-in address and records are being removed in the background.
    pub status: &'static str,
    pub tenant_id: String,
    pub name: String,
    pub erasing_since: DateTime<Utc>,
}

/// The shape of an email the API takes, as its OpenAPI schema states it
/// ([`EMAIL_PATTERN`]): an ASCII dot-atom local part, `@`, a host name; spaces, tabs and
/// line ends around it are trimmed.
pub const EMAIL_PATTERN: &str = r"^[ \t\r\n]*[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*[ \t\r\n]*$";

/// A mail address the service can send to (trimmed), or a 422. The rule is
/// [`EMAIL_PATTERN`] (what `/openapi.json` says), at most 64 characters before the `@`
/// and 254 in all; lettre checks the result as well.
pub fn valid_email(email: &str) -> ApiResult<String> {
    let email = email.trim_matches([' ', '\t', '\r', '\n']);
    let fits = email.chars().count() <= EMAIL_MAX_CHARS && email_shape(email);
    if !fits || !memvault_mail::is_address(email) {
        return Err(ApiError::Validation(format!(
            "email '{email}' is not a valid address"
        )));
    }
    Ok(email.to_owned())
}

/// [`EMAIL_PATTERN`] without its surrounding whitespace, written out (no regex engine).
fn email_shape(email: &str) -> bool {
    const LOCAL_SYMBOLS: &str = "!#$%&'*+/=?^_`{|}~-";
    let Some((local, domain)) = email.split_once('@') else {
        return false;
    };
    let atom = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || LOCAL_SYMBOLS.contains(c))
    };
    let label = |part: &str| {
        (1..=63).contains(&part.len())
            && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !part.starts_with('-')
            && !part.ends_with('-')
    };
    local.len() <= 64 && local.split('.').all(atom) && domain.split('.').all(label)
}

impl CreateTenantRequest {
    fn validate(self) -> ApiResult<NewTenant> {
        let name = self.name.trim().to_owned();
        if name.is_empty() || name.chars().count() > NAME_MAX_CHARS {
            return Err(ApiError::Validation(format!(
                "name must be 1 to {NAME_MAX_CHARS} characters"
            )));
        }
        let email = valid_email(&self.email)?;
        let tier = self.tier.unwrap_or_else(|| "free".to_owned());
        if tier.is_empty() || tier.chars().count() > 50 {
            return Err(ApiError::Validation(
                "tier must be 1 to 50 characters".to_owned(),
            ));
        }
        Ok(NewTenant {
            name,
            email,
            tier,
            admin: self.admin.unwrap_or(false),
        })
    }
}

/// Creates a tenant with its first API key (admin-flagged tenants only).
#[utoipa::path(post, path = "/tenants", tag = "admin",
    request_body = CreateTenantRequest,
    responses((status = 201, body = TenantCreatedResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 409, body = ErrorBody, description = "email taken"),
        (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create_tenant(
    State(tenants): State<Tenants>,
    Admin(_admin): Admin,
    ApiJson(request): ApiJson<CreateTenantRequest>,
) -> ApiResult<(StatusCode, Json<TenantCreatedResponse>)> {
    let new = request.validate()?;
    let (record, api_key) = tenants.create(new).await?;
    Ok((
        StatusCode::CREATED,
        Json(TenantCreatedResponse {
            id: record.id.to_string(),
            name: record.name,
            email: record.email,
            tier: record.tier,
            admin: record.admin,
            api_key,
        }),
    ))
}

/// The caller's tenant, the key in use, and the limits that apply.
#[utoipa::path(get, path = "/me", tag = "admin",
    responses((status = 200, body = MeResponse), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn me(
    State(tenants): State<Tenants>,
    State(state): State<AppState>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<MeResponse>> {
    let tenant = tenants.get(&agent.tenant_id)?;
    let tier_limits = tenants.limits(&agent.tenant_id)?;
    Ok(Json(MeResponse {
        id: tenant.id.to_string(),
        name: tenant.name.clone(),
        email: tenant.email.clone(),
        tier: tenant.tier.clone(),
        admin: tenant.admin,
        created_at: tenant.created_at,
        key: KeySummary {
            id: agent.key_id,
            label: agent.label,
            read_only: agent.read_only,
            owner: agent.owner,
        },
        limits: LimitsResponse {
            memory_text_max_chars: limits::MEMORY_TEXT_MAX_CHARS,
            bulk_max_items: limits::BULK_MAX_ITEMS,
            list_limit_max: limits::LIST_LIMIT_MAX,
            search_limit_max: limits::SEARCH_LIMIT_MAX,
            max_request_body_bytes: state.max_body_bytes,
            requests_per_minute: state.rate_limits.limit_for(&tenant.tier),
            collections: tier_limits.collections,
            memories: tier_limits.memories,
            storage_bytes: tier_limits.storage_bytes,
        },
    }))
}

/// Usage counts of the caller's tenant.
#[utoipa::path(get, path = "/stats", tag = "admin",
    responses((status = 200, body = StatsResponse), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn stats(
    State(tenants): State<Tenants>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<StatsResponse>> {
    let stats = tenants.stats(&agent.tenant_id).await?;
    let tier = tenants.get(&agent.tenant_id)?.tier.clone();
    let limits = tenants.limits(&agent.tenant_id)?;
    Ok(Json(StatsResponse {
        collections: stats.collections,
        memories: stats.memories,
        storage_bytes: stats.storage_bytes,
        files_bytes: stats.files_bytes,
        added_7d: stats.added_7d,
        added_30d: stats.added_30d,
        tier,
        limits: TierLimitsResponse {
            collections: limits.collections,
            memories: limits.memories,
            storage_bytes: limits.storage_bytes,
        },
    }))
}

/// Erases the caller's account, irreversibly: memories, indexes, files, API keys, jobs,
/// webhook, mail-in address and the account itself. Owner key only; `confirm` must be
/// the account's name. Every key of the account stops working before the answer; the
/// rest is removed by a background job that resumes after a crash or restart, until
/// nothing of the account is left. An admin-flagged account cannot erase itself.
#[utoipa::path(post, path = "/delete-account", tag = "account",
    request_body = DeleteAccountRequest,
    responses((status = 202, body = DeleteAccountResponse, description = "erasure begun; the keys are dead already"),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "not the owner key, or an admin-flagged account"),
        (status = 422, body = ErrorBody, description = "confirm missing or not the account's name (confirm_mismatch)")),
    security(("bearer" = [])))]
pub async fn delete_account(
    State(accounts): State<Accounts>,
    Owner(agent): Owner,
    ApiJson(request): ApiJson<DeleteAccountRequest>,
) -> ApiResult<(StatusCode, Json<DeleteAccountResponse>)> {
    let started = accounts.delete_account(&agent, &request.confirm).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(DeleteAccountResponse {
            status: "erasing",
            tenant_id: started.tenant_id.to_string(),
            name: started.name,
            erasing_since: started.since,
        }),
    ))
}
