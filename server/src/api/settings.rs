//! Per-tenant settings: `GET/PUT/DELETE /v1/memory/extraction/config` (bring-your-own
//! extraction LLM) and `GET/PUT /v1/memory/spend-cap`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::Settings;
use memvault_core::{ExtractionLlmInput, ExtractionLlmView, SpendView};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Owner};
use super::extract::ApiJson;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_extraction))
        .routes(routes!(put_extraction).audit(Audit::Change("extraction_llm.set")))
        .routes(routes!(delete_extraction).audit(Audit::Change("extraction_llm.delete")))
        .routes(routes!(get_spend_cap))
        .routes(routes!(put_spend_cap).audit(Audit::Change("spend_cap.set")))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractionConfigRequest {
    /// `custom`: any OpenAI-compatible chat-completions endpoint.
    #[schema(pattern = "^custom$")]
    pub provider: String,
    /// The API's base URL, e.g. `https://api.openai.com/v1` (the service POSTs to
    /// `{base_url}/chat/completions`).
    pub base_url: String,
    pub model: String,
    /// Stored encrypted (AES-256-GCM); never returned.
    pub api_key: String,
}

impl ExtractionConfigRequest {
    fn validate(self) -> ApiResult<ExtractionLlmInput> {
        if self.provider != "custom" {
            return Err(ApiError::Validation(format!(
                "provider must be 'custom' (any OpenAI-compatible endpoint), got '{}'",
                self.provider
            )));
        }
        let base_url = self.base_url.trim().trim_end_matches('/').to_owned();
        let parsed = reqwest::Url::parse(&base_url).map_err(|error| {
            ApiError::Validation(format!("base_url is not a valid URL: {error}"))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(ApiError::Validation(
                "base_url must be an http or https URL with a host".to_owned(),
            ));
        }
        for (field, value, max) in [
            ("model", &self.model, 200),
            ("api_key", &self.api_key, 4096),
        ] {
            if value.trim().is_empty() || value.chars().count() > max {
                return Err(ApiError::Validation(format!(
                    "{field} must be 1 to {max} characters"
                )));
            }
        }
        Ok(ExtractionLlmInput {
            provider: self.provider,
            base_url,
            model: self.model.trim().to_owned(),
            api_key: self.api_key,
        })
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ExtractionConfigResponse {
    /// True when the tenant's own LLM serves its extraction; false = the platform default.
    pub configured: bool,
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// Always true when configured: the key is stored, never shown.
    pub has_api_key: bool,
    pub updated_at: Option<DateTime<Utc>>,
}

impl From<Option<ExtractionLlmView>> for ExtractionConfigResponse {
    fn from(view: Option<ExtractionLlmView>) -> Self {
        Self {
            configured: view.is_some(),
            has_api_key: view.is_some(),
            updated_at: view.as_ref().map(|view| view.updated_at),
            provider: view.as_ref().map(|view| view.provider.clone()),
            base_url: view.as_ref().map(|view| view.base_url.clone()),
            model: view.map(|view| view.model),
        }
    }
}

/// The tenant's own extraction LLM, without its key.
#[utoipa::path(get, path = "/extraction/config", tag = "settings",
    responses((status = 200, body = ExtractionConfigResponse), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_extraction(
    State(settings): State<Settings>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<ExtractionConfigResponse>> {
    let view = settings.extraction_llm(&agent.tenant_id)?;
    Ok(Json(view.into()))
}

/// Uses the tenant's own OpenAI-compatible LLM for extraction (never capped). A live
/// self-test call is made first; the configuration is saved only when it succeeds.
#[utoipa::path(put, path = "/extraction/config", tag = "settings",
    request_body = ExtractionConfigRequest,
    responses((status = 200, body = ExtractionConfigResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put_extraction(
    State(settings): State<Settings>,
    Owner(agent): Owner,
    ApiJson(request): ApiJson<ExtractionConfigRequest>,
) -> ApiResult<Json<ExtractionConfigResponse>> {
    let input = request.validate()?;
    let view = settings.set_extraction_llm(&agent.tenant_id, input).await?;
    Ok(Json(Some(view).into()))
}

/// Reverts extraction to the platform default (the platform LLM, or the built-in
/// rule-based extractor when there is none).
#[utoipa::path(delete, path = "/extraction/config", tag = "settings",
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete_extraction(
    State(settings): State<Settings>,
    Owner(agent): Owner,
) -> ApiResult<StatusCode> {
    settings.clear_extraction_llm(&agent.tenant_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SpendCapRequest {
    /// Monthly cap on platform LLM spend in US dollars; null clears it.
    #[schema(value_type = Option<f64>, required = true, minimum = 0.0)]
    pub monthly_usd: Value,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UsageItem {
    /// `extract`, `rewrite`, `rerank`, `profile`, ...
    pub purpose: String,
    pub model: String,
    /// True for calls to the tenant's own LLM (not counted against the cap).
    pub own_llm: bool,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Estimated from the configured per-model prices.
    pub cost_usd: f64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SpendCapResponse {
    pub monthly_usd: Option<f64>,
    /// The current month, `YYYY-MM` (UTC).
    pub month: String,
    /// Platform LLM spend this month, estimated.
    pub spent_usd: f64,
    /// Over the cap, remember stores content without extraction and search skips rewrite
    /// and rerank.
    pub over_cap: bool,
    pub usage: Vec<UsageItem>,
}

impl From<SpendView> for SpendCapResponse {
    fn from(view: SpendView) -> Self {
        Self {
            over_cap: view.monthly_usd.is_some_and(|cap| view.spent_usd >= cap),
            monthly_usd: view.monthly_usd,
            month: view.month,
            spent_usd: view.spent_usd,
            usage: view
                .usage
                .into_iter()
                .map(|row| UsageItem {
                    purpose: row.purpose,
                    model: row.model,
                    own_llm: row.own_llm,
                    calls: row.calls,
                    prompt_tokens: row.prompt_tokens,
                    completion_tokens: row.completion_tokens,
                    cost_usd: row.cost_usd,
                })
                .collect(),
        }
    }
}

/// The monthly cap and this month's LLM usage, per purpose and model.
#[utoipa::path(get, path = "/spend-cap", tag = "settings",
    responses((status = 200, body = SpendCapResponse), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_spend_cap(
    State(settings): State<Settings>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<SpendCapResponse>> {
    Ok(Json(settings.spend(&agent.tenant_id).await?.into()))
}

/// Sets (a non-negative number) or clears (null) the monthly cap.
#[utoipa::path(put, path = "/spend-cap", tag = "settings",
    request_body = SpendCapRequest,
    responses((status = 200, body = SpendCapResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put_spend_cap(
    State(settings): State<Settings>,
    Owner(agent): Owner,
    ApiJson(request): ApiJson<SpendCapRequest>,
) -> ApiResult<Json<SpendCapResponse>> {
    let cap = match request.monthly_usd {
        Value::Null => None,
        Value::Number(number) => match number.as_f64() {
            Some(cap) if cap.is_finite() && cap >= 0.0 => Some(cap),
            _ => {
                return Err(ApiError::Validation(
                    "monthly_usd must be a non-negative number or null".to_owned(),
                ))
            }
        },
        _ => {
            return Err(ApiError::Validation(
                "monthly_usd must be a number or null".to_owned(),
            ))
        }
    };
    Ok(Json(
        settings.set_spend_cap(&agent.tenant_id, cap).await?.into(),
    ))
}
