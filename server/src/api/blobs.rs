//! `/v1/blobs/{tenant}/{path...}`: memvault's own presigned URLs (the local blob backend).
//! No API key: the URL's `expires` and `sig` are the credential, checked in constant time
//! against the method, the key and the expiry. Downloads are always attachments with
//! `X-Content-Type-Options: nosniff`, so an uploaded HTML page is never rendered inline.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use memvault_intake::Files;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::extract::ApiQuery;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(download))
        .routes(routes!(upload).audit(Audit::Change("blob.upload")))
}

/// The credential of a presigned URL. `expires` is read as text: a value that is not a
/// Unix time memvault could have signed is a bad signature (403), like a wrong `sig`.
#[derive(Debug, Deserialize, IntoParams)]
pub struct Presigned {
    /// Unix seconds after which the URL no longer works.
    #[param(value_type = Option<i64>)]
    pub expires: Option<String>,
    /// Hex HMAC-SHA256 of the method, the key and `expires`.
    pub sig: Option<String>,
}

impl Presigned {
    fn parts(&self) -> ApiResult<(i64, &str)> {
        let expires = self.expires.as_deref().map(str::parse::<i64>);
        match (expires, self.sig.as_deref()) {
            (Some(Ok(expires)), Some(sig)) => Ok((expires, sig)),
            _ => Err(ApiError::Service(memvault_core::Error::BadSignature)),
        }
    }
}

/// Downloads a stored file through a presigned URL (from a memory's `images`).
#[utoipa::path(get, path = "/blobs/{*key}", tag = "files",
    params(("key" = String, Path, description = "the blob's key: tenant and path"), Presigned),
    responses((status = 200, description = "the file's exact bytes, as an attachment", content_type = "application/octet-stream"),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn download(
    State(files): State<Files>,
    Path(key): Path<String>,
    ApiQuery(presigned): ApiQuery<Presigned>,
) -> ApiResult<Response> {
    let (expires, sig) = presigned.parts()?;
    let download = files.download(&key, expires, sig).await?;
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(&download.content_type)
            .unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    let disposition = format!(
        "attachment; filename=\"{}\"",
        download.filename.replace(['"', '\\'], "_")
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&disposition).unwrap_or(HeaderValue::from_static("attachment")),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    Ok((StatusCode::OK, headers, download.bytes).into_response())
}

/// Uploads a file's bytes to a presigned URL (from `drop/presign`); at most the per-file
/// limit.
#[utoipa::path(put, path = "/blobs/{*key}", tag = "files",
    params(("key" = String, Path, description = "the blob's key: tenant and path"), Presigned),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 200, description = "stored"), (status = 403, body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn upload(
    State(files): State<Files>,
    Path(key): Path<String>,
    ApiQuery(presigned): ApiQuery<Presigned>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<StatusCode> {
    let (expires, sig) = presigned.parts()?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok());
    files
        .upload_presigned(&key, expires, sig, body, content_type)
        .await?;
    Ok(StatusCode::OK)
}
