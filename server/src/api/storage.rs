//! The tenant's own object storage: `GET/PUT/DELETE /v1/memory/storage/config` (SPEC
//! "Bring-your-own configuration").

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use memvault_core::{Settings, StorageConfigInput, StorageConfigView};
use serde::{Deserialize, Serialize};
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
        .routes(routes!(get_storage))
        .routes(routes!(put_storage).audit(Audit::Change("storage.set")))
        .routes(routes!(delete_storage).audit(Audit::Change("storage.delete")))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StorageConfigRequest {
    /// `s3`: any S3-compatible bucket (AWS, MinIO, Garage, R2, ...).
    #[schema(pattern = "^s3$")]
    pub backend: String,
    /// The endpoint, e.g. `https://s3.eu-central-1.amazonaws.com` or
    /// `https://minio.example.com`; omitted or null: AWS's own for `region`. Must be a
    /// public address unless the server allows private ones.
    #[serde(default)]
    pub endpoint_url: Option<String>,
    /// An S3 bucket name: 3 to 63 lowercase letters, digits, dots or hyphens, starting
    /// and ending with a letter or digit.
    #[schema(pattern = r"^[ \t\r\n]*[a-z0-9][a-z0-9.-]{1,61}[a-z0-9][ \t\r\n]*$")]
    pub bucket: String,
    /// Default `us-east-1`. A region name: letters, digits, `-`, `_` and `.` (it becomes
    /// part of AWS's host name when no endpoint is given).
    #[serde(default)]
    #[schema(pattern = r"^[ \t\r\n]*([A-Za-z0-9][A-Za-z0-9._-]{0,63}[ \t\r\n]*)?$")]
    pub region: Option<String>,
    #[schema(pattern = r"^[ \t\r\n]*[!-~]{1,256}[ \t\r\n]*$")]
    pub access_key: String,
    /// Stored encrypted (AES-256-GCM); never returned.
    #[schema(min_length = 1, max_length = 1024)]
    pub secret_key: String,
    /// `https://endpoint/bucket/key` rather than `https://bucket.endpoint/key`; default
    /// true (what most self-hosted servers need).
    #[serde(default)]
    pub force_path_style: Option<bool>,
}

/// Without the spaces, tabs and line breaks around it (what the schema's patterns allow).
fn trim_ascii_spaces(value: &str) -> &str {
    value.trim_matches([' ', '\t', '\r', '\n'])
}

impl StorageConfigRequest {
    fn validate(self) -> ApiResult<StorageConfigInput> {
        if self.backend != "s3" {
            return Err(ApiError::Validation(format!(
                "backend must be 's3' (any S3-compatible bucket), got '{}'",
                self.backend
            )));
        }
        let endpoint_url = match self.endpoint_url.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(endpoint) => {
                let endpoint = endpoint.trim_end_matches('/');
                let parsed = reqwest::Url::parse(endpoint).map_err(|error| {
                    ApiError::Validation(format!("endpoint_url is not a valid URL: {error}"))
                })?;
                if !matches!(parsed.scheme(), "http" | "https")
                    || parsed.host_str().is_none()
                    || !matches!(parsed.path(), "" | "/")
                    || parsed.query().is_some()
                    || !parsed.username().is_empty()
                {
                    return Err(ApiError::Validation(
                        "endpoint_url must be an http or https URL with a host and nothing \
                         after it (no path, query or credentials)"
                            .to_owned(),
                    ));
                }
                Some(endpoint.to_owned())
            }
        };
        let bucket = trim_ascii_spaces(&self.bucket).to_owned();
        let bucket_ok = (3..=63).contains(&bucket.len())
            && bucket.chars().all(|char| {
                char.is_ascii_lowercase() || char.is_ascii_digit() || char == '-' || char == '.'
            })
            && bucket.starts_with(|char: char| char.is_ascii_alphanumeric())
            && bucket.ends_with(|char: char| char.is_ascii_alphanumeric());
        if !bucket_ok {
            return Err(ApiError::Validation(
                "bucket must be an S3 bucket name: 3 to 63 lowercase letters, digits, dots or \
                 hyphens, starting and ending with a letter or digit"
                    .to_owned(),
            ));
        }
        let region = self
            .region
            .map(|region| trim_ascii_spaces(&region).to_owned())
            .filter(|region| !region.is_empty())
            .unwrap_or_else(|| "us-east-1".to_owned());
        // Without an endpoint the region is part of AWS's host name, and a name that
        // makes no URL made the S3 client panic (object_store expects a valid request).
        let region_ok = region.starts_with(|char: char| char.is_ascii_alphanumeric())
            && region
                .chars()
                .all(|char| char.is_ascii_alphanumeric() || matches!(char, '-' | '_' | '.'));
        if !region_ok {
            return Err(ApiError::Validation(
                "region must be 1 to 64 letters, digits, '-', '_' or '.', starting with a letter \
                 or digit"
                    .to_owned(),
            ));
        }
        // The region and the access key go into the signed request's headers: visible
        // ASCII only (a control character there made the S3 client panic).
        for (field, value, max) in [
            ("region", region.as_str(), 64),
            ("access_key", trim_ascii_spaces(&self.access_key), 256),
        ] {
            let visible = value.chars().all(|char| char.is_ascii_graphic());
            if value.is_empty() || value.len() > max || !visible {
                return Err(ApiError::Validation(format!(
                    "{field} must be 1 to {max} visible ASCII characters (no spaces)"
                )));
            }
        }
        if self.secret_key.trim().is_empty() || self.secret_key.chars().count() > 1024 {
            return Err(ApiError::Validation(
                "secret_key must be 1 to 1024 characters".to_owned(),
            ));
        }
        Ok(StorageConfigInput {
            endpoint_url,
            bucket,
            region,
            access_key: trim_ascii_spaces(&self.access_key).to_owned(),
            secret_key: self.secret_key,
            force_path_style: self.force_path_style.unwrap_or(true),
        })
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StorageConfigResponse {
    /// True when the tenant's new files go to its own bucket; false = the platform's
    /// storage.
    pub configured: bool,
    /// `s3` when configured, else `platform`.
    pub backend: String,
    /// Names the bucket (endpoint and bucket name); files remember it.
    pub store_id: Option<String>,
    pub endpoint_url: Option<String>,
    pub bucket: Option<String>,
    pub region: Option<String>,
    /// The access key's last four characters, e.g. `…WXYZ`.
    pub access_key_hint: Option<String>,
    /// Always true when configured: the secret key is stored, never shown.
    pub has_secret_key: bool,
    pub force_path_style: Option<bool>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl From<Option<StorageConfigView>> for StorageConfigResponse {
    fn from(view: Option<StorageConfigView>) -> Self {
        match view {
            None => Self {
                configured: false,
                backend: "platform".to_owned(),
                store_id: None,
                endpoint_url: None,
                bucket: None,
                region: None,
                access_key_hint: None,
                has_secret_key: false,
                force_path_style: None,
                updated_at: None,
            },
            Some(view) => Self {
                configured: true,
                backend: "s3".to_owned(),
                store_id: Some(view.store_id),
                endpoint_url: view.endpoint_url,
                bucket: Some(view.bucket),
                region: Some(view.region),
                access_key_hint: Some(view.access_key_hint),
                has_secret_key: true,
                force_path_style: Some(view.force_path_style),
                updated_at: Some(view.updated_at),
            },
        }
    }
}

/// Where the tenant's new files go, without the secret key.
#[utoipa::path(get, path = "/storage/config", tag = "settings",
    responses((status = 200, body = StorageConfigResponse), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_storage(
    State(settings): State<Settings>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Json<StorageConfigResponse>> {
    Ok(Json(settings.storage(&agent.tenant_id)?.into()))
}

/// Sends the tenant's new files to its own S3-compatible bucket. The endpoint is checked
/// against private addresses, then a live self-test puts, reads back and deletes a probe
/// object under the tenant's prefix; the configuration is saved only when both pass
/// (422 `storage_target_rejected` / `storage_self_test_failed` otherwise).
#[utoipa::path(put, path = "/storage/config", tag = "settings",
    request_body = StorageConfigRequest,
    responses((status = 200, body = StorageConfigResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put_storage(
    State(settings): State<Settings>,
    Owner(agent): Owner,
    ApiJson(request): ApiJson<StorageConfigRequest>,
) -> ApiResult<Json<StorageConfigResponse>> {
    let input = request.validate()?;
    let view = settings.set_storage(&agent.tenant_id, input).await?;
    Ok(Json(Some(view).into()))
}

/// Reverts to the platform's storage and drops the bucket's credentials. Files already in
/// the bucket stay there; reads list them without a URL until it is configured again.
#[utoipa::path(delete, path = "/storage/config", tag = "settings",
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete_storage(
    State(settings): State<Settings>,
    Owner(agent): Owner,
) -> ApiResult<StatusCode> {
    settings.clear_storage(&agent.tenant_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
