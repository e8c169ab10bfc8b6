//! Files: `C/{collection}/drop` (now, or `async_ingest` as a batch), `drop/presign`,
//! `drop/complete`, `GET /v1/memory/ingest/batch/{batch_id}`, and on memories `upload`
//! (one memory with attached files), `folder` (one memory per file), `{id}/images` (attach
//! one) and `{id}/images/{image_index}` (remove one).
//!
//! Multipart parts are read one at a time and each file is stored as soon as it is read,
//! so a request holds at most one file (the per-file limit) in memory; a file over the
//! limit is counted to its end but not kept, and fails alone.

use axum::extract::multipart::{Field, Multipart, MultipartRejection};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use bytes::{Bytes, BytesMut};
use chrono::{DateTime, Utc};
use memvault_core::memory::{validate_text, NewMemory};
use memvault_core::Authorizer;
use memvault_intake::{
    CompletedUpload, FileResult, Files, Incoming, StagedFile, UploadSpec, UploadTicket,
};
use memvault_storage::{IngestBatchRecord, MemoryRecord, TenantId};
use memvault_types::limits::DEFAULT_IMPORTANCE;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Writer};
use super::collections::{writable, writable_or_new};
use super::extract::{ApiJsonArray, ApiPath};
use super::memories::MemoryResponse;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory/collections/{collection}`.
pub fn collection_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(drop_files).audit(Audit::Change("file.drop")))
        .routes(routes!(presign).audit(Audit::Change("file.presign")))
        .routes(routes!(complete).audit(Audit::Change("file.complete")))
}

/// Nested at `/v1/memory/collections/{collection}/memories`.
pub fn memory_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(upload).audit(Audit::Change("memory.upload")))
        .routes(routes!(folder).audit(Audit::Change("memory.folder")))
        .routes(routes!(add_image).audit(Audit::Change("memory.image_add")))
        .routes(routes!(delete_image).audit(Audit::Change("memory.image_delete")))
}

/// Nested at `/v1/memory`.
pub fn batch_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(batch))
        .routes(routes!(retry_batch).audit(Audit::Change("ingest.retry")))
        .routes(routes!(delete_batch_item).audit(Audit::Change("ingest.item_delete")))
}

/// How one file of a synchronous drop or a folder upload ended.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileResultResponse {
    pub filename: String,
    /// The file's id (its memories carry it as `metadata.file_id`); absent when the file
    /// was refused before it was stored.
    pub file_id: Option<String>,
    /// `done`, `duplicate` (the same bytes are stored already in the collection: its
    /// memories are named, nothing is stored twice) or `failed`.
    pub status: String,
    /// What the file was read as, by content: `pdf`, `docx`, `png`, `wav`, ...; null only
    /// for a file refused before it was stored (empty, over the size limit).
    pub kind: Option<String>,
    pub size: u64,
    /// The memories made from the file (one per chunk; one for a folder upload).
    pub memory_ids: Vec<String>,
    /// The start of the file's text (at most 200 characters).
    pub preview: Option<String>,
    /// Why it failed, or what was skipped (OCR or transcription not available, pages
    /// over a cap).
    pub detail: Option<String>,
    /// A failure's stable code: `file_too_large`, `empty`, `encrypted`, `invalid`,
    /// `no_text`, `timed_out`, `worker_crashed`, `out_of_memory`, ...
    pub code: Option<String>,
}

impl From<FileResult> for FileResultResponse {
    fn from(result: FileResult) -> Self {
        Self {
            filename: result.filename,
            file_id: result.file_id,
            status: result.status.to_owned(),
            kind: result.kind,
            size: result.size,
            memory_ids: result.memory_ids,
            preview: result.preview,
            detail: result.detail,
            code: result.code,
        }
    }
}

/// The answer of a synchronous drop and of a folder upload.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileResultsResponse {
    /// One per file, in the order sent.
    pub results: Vec<FileResultResponse>,
    /// Files stored (done or duplicate).
    pub done: usize,
    pub failed: usize,
}

impl FileResultsResponse {
    fn of(results: Vec<FileResult>) -> Self {
        let failed = results.iter().filter(|r| r.status == "failed").count();
        Self {
            done: results.len() - failed,
            failed,
            results: results.into_iter().map(FileResultResponse::from).collect(),
        }
    }
}

/// One file of an ingest batch.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchItemResponse {
    pub index: usize,
    pub filename: String,
    pub file_id: String,
    pub size: u64,
    /// `queued`, `extracting`, `embedding`, `done` or `failed`.
    pub state: String,
    /// Why it failed, or what was skipped, or that it was a duplicate.
    pub reason: Option<String>,
    pub memory_ids: Vec<String>,
    /// Times processing started (a restart mid-way counts).
    pub attempts: u32,
}

/// An ingest batch and where each of its files is.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchResponse {
    pub batch_id: String,
    pub collection: String,
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    /// Queued, extracting or embedding.
    pub pending: usize,
    /// Every file is done or failed.
    pub complete: bool,
    pub items: Vec<BatchItemResponse>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&IngestBatchRecord> for BatchResponse {
    fn from(batch: &IngestBatchRecord) -> Self {
        use memvault_storage::IngestItemState as State;
        let count = |state: State| batch.items.iter().filter(|i| i.state == state).count();
        let (done, failed) = (count(State::Done), count(State::Failed));
        Self {
            batch_id: batch.id.clone(),
            collection: batch.collection.to_string(),
            total: batch.items.len(),
            done,
            failed,
            pending: batch.items.len() - done - failed,
            complete: batch.is_finished(),
            items: batch
                .items
                .iter()
                .enumerate()
                .map(|(index, item)| BatchItemResponse {
                    index,
                    filename: item.filename.clone(),
                    file_id: item.file_id.clone(),
                    size: item.size,
                    state: item.state.as_str().to_owned(),
                    reason: item.reason.clone(),
                    memory_ids: item.memory_ids.clone(),
                    attempts: item.attempts,
                })
                .collect(),
            created_at: batch.created_at,
            updated_at: batch.updated_at,
        }
    }
}

/// The answer of an asynchronous drop: the batch to poll.
#[derive(Debug, Serialize, ToSchema)]
pub struct DropAcceptedResponse {
    pub batch_id: String,
    /// Files queued for extraction.
    pub queued: usize,
    /// Files refused at intake (over the limit, empty); they are failed items of the batch.
    pub failed: usize,
    pub batch: BatchResponse,
}

/// The multipart form of a drop.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct DropForm {
    /// The files, each a part named `files` (at least one).
    #[schema(value_type = Vec<String>, format = Binary, min_items = 1)]
    pub files: Vec<Vec<u8>>,
    /// `true` stores the files and answers 202 with a batch to poll; `false` (default)
    /// extracts them before answering 201.
    #[schema(nullable = false)]
    pub async_ingest: Option<bool>,
}

/// Drops files into the collection: each is stored, extracted (OCR, transcription where
/// available), chunked and stored as memories whose `images` link the original. By
/// default the answer (201) comes when every file is done, one result per file; with
/// `async_ingest=true` it is 202 with a batch to poll. One failing file never fails the
/// others.
#[utoipa::path(post, path = "/drop", tag = "files",
    params(("collection" = String, Path)),
    request_body(content = DropForm, content_type = "multipart/form-data"),
    responses((status = 201, body = FileResultsResponse), (status = 202, body = DropAcceptedResponse),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn drop_files(
    State(files): State<Files>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(collection): ApiPath<String>,
    multipart: Result<Multipart, MultipartRejection>,
) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let access = writable_or_new(&authorizer, &agent, &collection)?;
    let form = read_form(
        &files,
        &agent.tenant_id,
        multipart?,
        usize::MAX,
        &["async_ingest"],
    )
    .await?;
    let async_ingest = match form.fields.get("async_ingest") {
        None => false,
        Some(value) => parse_bool("async_ingest", value)?,
    };
    if form.files.is_empty() {
        return Err(ApiError::Validation(
            "the form has no file: send each file as a part named `files`".to_owned(),
        ));
    }
    if async_ingest {
        let batch = files.drop_later(&access, form.files, "drop").await?;
        let response = BatchResponse::from(&batch);
        let body = DropAcceptedResponse {
            batch_id: batch.id.clone(),
            queued: response.pending,
            failed: response.failed,
            batch: response,
        };
        return Ok((StatusCode::ACCEPTED, Json(body)).into_response());
    }
    let results = files.drop_now(&access, form.files).await?;
    Ok((StatusCode::CREATED, Json(FileResultsResponse::of(results))).into_response())
}

bounded_array_schema!(
    /// The files to presign: 1 to 100.
    PresignRequest,
    PresignRequestItem,
    1,
    FILES_PER_REQUEST
);

bounded_array_schema!(
    /// The uploaded files to ingest: 1 to 100.
    CompleteRequest,
    CompleteRequestItem,
    1,
    FILES_PER_REQUEST
);

/// Files one presign or complete call takes.
const FILES_PER_REQUEST: usize = 100;

/// One file to presign.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PresignRequestItem {
    pub filename: String,
    pub content_type: Option<String>,
    /// Bytes; over the per-file limit (10 MiB) the file is refused, not signed.
    #[serde(deserialize_with = "super::extract::size")]
    #[schema(minimum = 0)]
    pub size: u64,
}

/// A presigned upload.
#[derive(Debug, Serialize, ToSchema)]
pub struct PresignedUpload {
    pub filename: String,
    /// The storage key to send to `drop/complete`.
    pub key: String,
    /// PUT the file's bytes here, without an API key, before `expires_at`.
    pub url: String,
    pub method: String,
    pub expires_at: DateTime<Utc>,
}

/// A file that was not signed.
#[derive(Debug, Serialize, ToSchema)]
pub struct RefusedUpload {
    pub filename: String,
    pub reason: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PresignResponse {
    pub uploads: Vec<PresignedUpload>,
    /// Files not signed (over the per-file limit).
    pub rejected: Vec<RefusedUpload>,
}

/// Presigned PUT URLs for uploading files straight to storage; then `drop/complete`.
#[utoipa::path(post, path = "/drop/presign", tag = "files",
    params(("collection" = String, Path)), request_body = PresignRequest,
    responses((status = 200, body = PresignResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn presign(
    State(files): State<Files>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(collection): ApiPath<String>,
    ApiJsonArray(items): ApiJsonArray<PresignRequestItem>,
) -> ApiResult<Json<PresignResponse>> {
    let access = writable_or_new(&authorizer, &agent, &collection)?;
    check_count(items.len())?;
    for (index, item) in items.iter().enumerate() {
        check_size(index, Some(item.size))?;
    }
    let specs = items
        .into_iter()
        .map(|item| UploadSpec {
            filename: item.filename,
            content_type: item.content_type,
            size: item.size,
        })
        .collect();
    let mut response = PresignResponse {
        uploads: Vec::new(),
        rejected: Vec::new(),
    };
    for ticket in files.presign_uploads(&access, specs).await? {
        match ticket {
            UploadTicket::Signed {
                filename,
                key,
                url,
                expires_at,
            } => response.uploads.push(PresignedUpload {
                filename,
                key,
                url,
                method: "PUT".to_owned(),
                expires_at,
            }),
            UploadTicket::Refused { filename, reason } => {
                response.rejected.push(RefusedUpload { filename, reason })
            }
        }
    }
    Ok(Json(response))
}

/// A declared size must fit the schema's integer (`int64`); anything above the per-file
/// limit is then refused per file, with a reason.
fn check_size(index: usize, size: Option<u64>) -> ApiResult<()> {
    match size {
        Some(size) if size > i64::MAX as u64 => Err(ApiError::Validation(format!(
            "[{index}].size must be at most {}, got {size}",
            i64::MAX
        ))),
        _ => Ok(()),
    }
}

/// A file uploaded through a presigned URL.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteRequestItem {
    /// The key `drop/presign` gave.
    pub key: String,
    pub filename: String,
    pub mime: Option<String>,
    /// The size the client sent; the stored object's real size is what is checked.
    #[serde(default, deserialize_with = "super::extract::optional_size")]
    #[schema(minimum = 0)]
    pub size: Option<u64>,
}

/// A key that was not accepted.
#[derive(Debug, Serialize, ToSchema)]
pub struct RejectedKey {
    pub key: String,
    pub filename: String,
    pub reason: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CompleteResponse {
    pub batch_id: String,
    pub queued: usize,
    /// Keys outside this tenant's uploads, never uploaded, or over the limit.
    pub rejected: Vec<RejectedKey>,
    pub batch: BatchResponse,
}

/// Ingests files uploaded through presigned URLs, as a batch. Each key must be one of
/// this tenant's uploads, present, and within the per-file limit by its stored size.
#[utoipa::path(post, path = "/drop/complete", tag = "files",
    params(("collection" = String, Path)), request_body = CompleteRequest,
    responses((status = 202, body = CompleteResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn complete(
    State(files): State<Files>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(collection): ApiPath<String>,
    ApiJsonArray(items): ApiJsonArray<CompleteRequestItem>,
) -> ApiResult<(StatusCode, Json<CompleteResponse>)> {
    let access = writable_or_new(&authorizer, &agent, &collection)?;
    check_count(items.len())?;
    for (index, item) in items.iter().enumerate() {
        check_size(index, item.size)?;
    }
    let uploads = items
        .into_iter()
        .map(|item| CompletedUpload {
            key: item.key,
            filename: item.filename,
            mime: item.mime,
            size: item.size,
        })
        .collect();
    let (batch, rejected) = files.complete_uploads(&access, uploads).await?;
    let response = BatchResponse::from(&batch);
    Ok((
        StatusCode::ACCEPTED,
        Json(CompleteResponse {
            batch_id: batch.id.clone(),
            queued: response.total - rejected.len(),
            rejected: rejected
                .into_iter()
                .map(|(upload, reason)| RejectedKey {
                    key: upload.key,
                    filename: upload.filename,
                    reason,
                })
                .collect(),
            batch: response,
        }),
    ))
}

/// An ingest batch: counts and each file's state.
#[utoipa::path(get, path = "/ingest/batch/{batch_id}", tag = "files",
    params(("batch_id" = String, Path)),
    responses((status = 200, body = BatchResponse), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn batch(
    State(files): State<Files>,
    Authenticated(agent): Authenticated,
    ApiPath(batch_id): ApiPath<String>,
) -> ApiResult<Json<BatchResponse>> {
    let batch = files.batch(&agent.tenant_id, &batch_id).await?;
    Ok(Json(BatchResponse::from(&batch)))
}

/// Queues a finished batch's failed files again (those that were stored; a file refused
/// at intake cannot be retried). Needs write access to the batch's collection.
#[utoipa::path(post, path = "/ingest/batch/{batch_id}/retry", tag = "files",
    params(("batch_id" = String, Path)),
    responses((status = 202, body = BatchResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn retry_batch(
    State(files): State<Files>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(batch_id): ApiPath<String>,
) -> ApiResult<(StatusCode, Json<BatchResponse>)> {
    let batch = files.batch(&agent.tenant_id, &batch_id).await?;
    let access = writable(&authorizer, &agent, batch.collection.as_str())?;
    let batch = files.retry_failed(&access, &batch_id).await?;
    Ok((StatusCode::ACCEPTED, Json(BatchResponse::from(&batch))))
}

/// Removes a failed file from a finished batch, with its stored bytes; the items after
/// it move up one index.
#[utoipa::path(delete, path = "/ingest/batch/{batch_id}/items/{item_index}", tag = "files",
    params(("batch_id" = String, Path), ("item_index" = u32, Path)),
    responses((status = 200, body = BatchResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete_batch_item(
    State(files): State<Files>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath((batch_id, index)): ApiPath<(String, String)>,
) -> ApiResult<Json<BatchResponse>> {
    let index: usize = index.parse().map_err(|_| {
        ApiError::InvalidPath(format!(
            "item_index must be a non-negative integer, got '{index}'"
        ))
    })?;
    let batch = files.batch(&agent.tenant_id, &batch_id).await?;
    let access = writable(&authorizer, &agent, batch.collection.as_str())?;
    let batch = files.delete_failed_item(&access, &batch_id, index).await?;
    Ok(Json(BatchResponse::from(&batch)))
}

/// The text parts of an upload's form.
const UPLOAD_FIELDS: &[&str] = &[
    "text",
    "importance",
    "category",
    "source",
    "container_tag",
    "metadata",
];

/// The multipart form of an upload.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The memory's text (1 to 10,000 characters); without it the file names.
    #[schema(min_length = 1, max_length = 10000, nullable = false)]
    pub text: Option<String>,
    /// Files to attach, each a part named `files` (any number, none included).
    #[schema(value_type = Vec<String>, format = Binary, required = false)]
    pub files: Vec<Vec<u8>>,
    #[schema(minimum = 0, maximum = 1, nullable = false)]
    pub importance: Option<f64>,
    #[schema(min_length = 1, max_length = 200, nullable = false)]
    pub category: Option<String>,
    #[schema(min_length = 1, max_length = 200, nullable = false)]
    pub source: Option<String>,
    #[schema(min_length = 1, max_length = 200, nullable = false)]
    pub container_tag: Option<String>,
    /// A JSON object (a part whose text is the object).
    #[schema(value_type = Object, required = false)]
    pub metadata: Option<String>,
}

/// Creates one memory with the files attached (stored as they are, not extracted);
/// `images` lists them with presigned URLs.
#[utoipa::path(post, path = "/upload", tag = "files",
    params(("collection" = String, Path)),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 201, body = MemoryResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn upload(
    State(files): State<Files>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(collection): ApiPath<String>,
    multipart: Result<Multipart, MultipartRejection>,
) -> ApiResult<(StatusCode, Json<MemoryResponse>)> {
    let access = writable_or_new(&authorizer, &agent, &collection)?;
    let form = read_form(
        &files,
        &agent.tenant_id,
        multipart?,
        usize::MAX,
        UPLOAD_FIELDS,
    )
    .await?;
    let staged = match all_staged(form.files) {
        Ok(staged) => staged,
        Err((error, staged)) => {
            files.discard(&agent.tenant_id, &staged).await;
            return Err(error);
        }
    };
    let memory = match memory_of_form(&form.fields, &staged) {
        Ok(memory) => memory,
        Err(error) => {
            files.discard(&agent.tenant_id, &staged).await;
            return Err(error);
        }
    };
    let created = files.upload_memory(&access, memory, staged).await?;
    let response = signed_memory(&files, &agent.tenant_id, &created).await;
    Ok((StatusCode::CREATED, Json(response)))
}

/// The answer of a folder upload: one result per file and the memories made.
#[derive(Debug, Serialize, ToSchema)]
pub struct FolderResponse {
    pub results: Vec<FileResultResponse>,
    pub done: usize,
    pub failed: usize,
}

/// The multipart form of a folder upload: files only.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct FolderForm {
    /// The files, each a part named `files` (1 to 50).
    #[schema(value_type = Vec<String>, format = Binary, min_items = 1, max_items = 50)]
    pub files: Vec<Vec<u8>>,
}

/// One memory per file (at most 50): the file's text, cut to the memory limit, with the
/// file attached.
#[utoipa::path(post, path = "/folder", tag = "files",
    params(("collection" = String, Path)),
    request_body(content = FolderForm, content_type = "multipart/form-data"),
    responses((status = 201, body = FolderResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn folder(
    State(files): State<Files>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath(collection): ApiPath<String>,
    multipart: Result<Multipart, MultipartRejection>,
) -> ApiResult<(StatusCode, Json<FolderResponse>)> {
    let access = writable_or_new(&authorizer, &agent, &collection)?;
    let max = files.folder_max_files();
    let form = read_form(&files, &agent.tenant_id, multipart?, max, &[]).await?;
    if form.files.is_empty() {
        return Err(ApiError::Validation(
            "the form has no file: send each file as a part named `files`".to_owned(),
        ));
    }
    let results = FileResultsResponse::of(files.folder(&access, form.files).await?);
    Ok((
        StatusCode::CREATED,
        Json(FolderResponse {
            results: results.results,
            done: results.done,
            failed: results.failed,
        }),
    ))
}

/// The multipart form that attaches one file.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct ImageForm {
    /// The file, a part named `files` (or `file`); not empty.
    #[schema(value_type = String, format = Binary, min_length = 1)]
    pub files: Vec<u8>,
}

/// Attaches one file to a memory (appended to `images`).
#[utoipa::path(post, path = "/{memory_id}/images", tag = "files",
    params(("collection" = String, Path), ("memory_id" = String, Path)),
    request_body(content = ImageForm, content_type = "multipart/form-data"),
    responses((status = 201, body = MemoryResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn add_image(
    State(files): State<Files>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath((collection, id)): ApiPath<(String, String)>,
    multipart: Result<Multipart, MultipartRejection>,
) -> ApiResult<(StatusCode, Json<MemoryResponse>)> {
    let access = writable(&authorizer, &agent, &collection)?;
    let form = read_form(&files, &agent.tenant_id, multipart?, 1, &[]).await?;
    let mut staged = match all_staged(form.files) {
        Ok(staged) => staged,
        Err((error, staged)) => {
            files.discard(&agent.tenant_id, &staged).await;
            return Err(error);
        }
    };
    let Some(file) = staged.pop() else {
        return Err(ApiError::Validation(
            "the form has no file: send it as a part named `files`".to_owned(),
        ));
    };
    let updated = files.add_image(&access, &id, file).await?;
    let response = signed_memory(&files, &agent.tenant_id, &updated).await;
    Ok((StatusCode::CREATED, Json(response)))
}

/// Removes the attached file at `image_index` (counted from 0), and its stored bytes
/// when no other memory references them.
#[utoipa::path(delete, path = "/{memory_id}/images/{image_index}", tag = "files",
    params(("collection" = String, Path), ("memory_id" = String, Path), ("image_index" = u32, Path)),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete_image(
    State(files): State<Files>,
    State(authorizer): State<Authorizer>,
    Writer(agent): Writer,
    ApiPath((collection, id, index)): ApiPath<(String, String, String)>,
) -> ApiResult<StatusCode> {
    let access = writable(&authorizer, &agent, &collection)?;
    let index: usize = index.parse().map_err(|_| {
        ApiError::InvalidPath(format!(
            "image_index must be a non-negative integer, got '{index}'"
        ))
    })?;
    files.delete_image(&access, &id, index).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A memory as a read shows it: file URLs presigned now.
pub async fn signed_memory(
    files: &Files,
    tenant: &TenantId,
    memory: &MemoryRecord,
) -> MemoryResponse {
    let mut response = MemoryResponse::from(memory);
    sign_memory(files, tenant, &mut response).await;
    response
}

/// The memory's files presigned now, in place (a memory inside a larger response).
pub async fn sign_memory(files: &Files, tenant: &TenantId, memory: &mut MemoryResponse) {
    if !memory.images.is_empty() {
        memory.images = files.sign_images(tenant, &memory.images).await;
    }
}

/// Every `images` array inside a JSON result (an MCP tool's), presigned now: stored file
/// entries get their URL, other entries stay as they are.
pub async fn sign_nested_images(files: &Files, tenant: &TenantId, value: &mut Value) {
    let mut found = Vec::new();
    collect_images(value, &mut found);
    if found.is_empty() {
        return;
    }
    let mut signed = Vec::with_capacity(found.len());
    for images in &found {
        signed.push(files.sign_images(tenant, images).await);
    }
    replace_images(value, &mut signed.into_iter());
}

fn collect_images(value: &Value, found: &mut Vec<Vec<Value>>) {
    match value {
        Value::Object(map) => {
            for (name, inner) in map {
                match (name.as_str(), inner) {
                    ("images", Value::Array(images)) => found.push(images.clone()),
                    _ => collect_images(inner, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_images(item, found)),
        _ => {}
    }
}

/// Puts the signed arrays back in the order [`collect_images`] found them.
fn replace_images(value: &mut Value, signed: &mut impl Iterator<Item = Vec<Value>>) {
    match value {
        Value::Object(map) => {
            for (name, inner) in map.iter_mut() {
                match (name.as_str(), &mut *inner) {
                    ("images", Value::Array(images)) => {
                        if let Some(next) = signed.next() {
                            *images = next;
                        }
                    }
                    _ => replace_images(inner, signed),
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| replace_images(item, signed)),
        _ => {}
    }
}

/// The parts of a multipart form: files (stored as read) and the other fields.
struct Form {
    files: Vec<Incoming>,
    fields: Map<String, Value>,
}

/// Reads the form part by part ([`next_part`]) and stores each file as it comes. More than
/// `max_files` files, or a part that is neither a file nor one of `fields`, is a 422, and
/// what was stored is removed.
async fn read_form(
    files: &Files,
    tenant: &TenantId,
    mut multipart: Multipart,
    max_files: usize,
    fields: &[&str],
) -> ApiResult<Form> {
    let mut form = Form {
        files: Vec::new(),
        fields: Map::new(),
    };
    loop {
        let part = match next_part(&mut multipart, files.max_file_bytes()).await {
            Ok(Some(part)) => part,
            Ok(None) => break,
            Err(error) => {
                discard_all(files, tenant, &form.files).await;
                return Err(error);
            }
        };
        match part {
            FormPart::Field { name, .. } if !fields.contains(&name.as_str()) => {
                discard_all(files, tenant, &form.files).await;
                let known: Vec<&str> = ["files"].iter().chain(fields).copied().collect();
                return Err(ApiError::Validation(format!(
                    "unknown part '{name}': this form takes {}",
                    known.join(", ")
                )));
            }
            FormPart::Field { name, .. } if form.fields.contains_key(&name) => {
                discard_all(files, tenant, &form.files).await;
                return Err(ApiError::Validation(format!(
                    "part '{name}' is given more than once: it takes one value"
                )));
            }
            FormPart::Field { name, text } => {
                form.fields.insert(name, Value::String(text));
            }
            FormPart::File { .. } if form.files.len() >= max_files => {
                discard_all(files, tenant, &form.files).await;
                return Err(ApiError::Validation(format!(
                    "at most {max_files} file(s) per request"
                )));
            }
            FormPart::File {
                filename,
                read: Read::TooLarge(size),
                ..
            } => form.files.push(files.refuse_oversize(&filename, size)),
            FormPart::File {
                filename,
                declared,
                read: Read::Whole(bytes),
            } => match files.stage(tenant, &filename, declared, bytes).await {
                Ok(incoming) => form.files.push(incoming),
                Err(error) => {
                    discard_all(files, tenant, &form.files).await;
                    return Err(error.into());
                }
            },
        }
    }
    Ok(form)
}

/// One part of a multipart form as read.
#[derive(Debug)]
pub enum FormPart {
    /// A part named `files` or `file`, or any part with a file name.
    File {
        filename: String,
        declared: Option<String>,
        read: Read,
    },
    /// Any other part, as text.
    Field { name: String, text: String },
}

/// A file part's bytes, or its size when it is over the limit.
#[derive(Debug)]
pub enum Read {
    Whole(Bytes),
    /// Over the limit: the size seen (the part was read to its end, not kept).
    TooLarge(u64),
}

/// The next part of the form; `None` after the last. A file part is read up to `limit`
/// bytes and kept only within it; a malformed body is a 400 or 422.
pub async fn next_part(multipart: &mut Multipart, limit: u64) -> ApiResult<Option<FormPart>> {
    let field = match multipart.next_field().await {
        Ok(Some(field)) => field,
        Ok(None) => return Ok(None),
        Err(error) => return Err(multipart_error(error)),
    };
    let name = field.name().unwrap_or_default().to_owned();
    let filename = field.file_name().map(str::to_owned);
    if name == "files" || name == "file" {
        let Some(filename) = filename else {
            return Err(ApiError::Validation(format!(
                "the part '{name}' must be a file upload: its Content-Disposition needs a \
                 filename"
            )));
        };
        let declared = field.content_type().map(str::to_owned);
        let read = read_file(field, limit).await?;
        Ok(Some(FormPart::File {
            filename,
            declared,
            read,
        }))
    } else {
        let text = field.text().await.map_err(multipart_error)?;
        Ok(Some(FormPart::Field { name, text }))
    }
}

/// Every part of a multipart body (`content_type` names its boundary), each file read up
/// to `limit` bytes: what the file routes read, without storing anything. For the fuzz
/// target and the property test of the reader; at most `max_parts` parts are read.
pub async fn parse_form(
    body: Bytes,
    content_type: &str,
    limit: u64,
    max_parts: usize,
) -> ApiResult<Vec<FormPart>> {
    use axum::extract::FromRequest;
    let request = axum::http::Request::builder()
        .method("POST")
        .header(axum::http::header::CONTENT_TYPE, content_type)
        .body(axum::body::Body::from(body))
        .map_err(|error| ApiError::Validation(error.to_string()))?;
    let mut multipart = Multipart::from_request(request, &()).await?;
    let mut parts = Vec::new();
    while parts.len() < max_parts {
        match next_part(&mut multipart, limit).await? {
            Some(part) => parts.push(part),
            None => break,
        }
    }
    Ok(parts)
}

async fn read_file(mut field: Field<'_>, limit: u64) -> ApiResult<Read> {
    let mut buffer = BytesMut::new();
    let mut seen: u64 = 0;
    loop {
        match field.chunk().await {
            Ok(Some(chunk)) => {
                seen += chunk.len() as u64;
                if seen <= limit {
                    buffer.extend_from_slice(&chunk);
                } else if !buffer.is_empty() {
                    buffer = BytesMut::new();
                }
            }
            Ok(None) => break,
            Err(error) => return Err(multipart_error(error)),
        }
    }
    if seen > limit {
        Ok(Read::TooLarge(seen))
    } else {
        Ok(Read::Whole(buffer.freeze()))
    }
}

async fn discard_all(files: &Files, tenant: &TenantId, incoming: &[Incoming]) {
    let staged: Vec<StagedFile> = incoming
        .iter()
        .filter_map(|file| match file {
            Incoming::Staged(staged) => Some(staged.clone()),
            Incoming::Refused { .. } => None,
        })
        .collect();
    files.discard(tenant, &staged).await;
}

/// Every file stored; else the first refusal as an error (and the stored ones, to
/// discard).
fn all_staged(incoming: Vec<Incoming>) -> Result<Vec<StagedFile>, (ApiError, Vec<StagedFile>)> {
    let mut staged = Vec::new();
    let mut refusal = None;
    for file in incoming {
        match file {
            Incoming::Staged(file) => staged.push(file),
            Incoming::Refused {
                filename,
                size,
                code,
                reason,
            } if refusal.is_none() => {
                refusal = Some(if code == "file_too_large" {
                    ApiError::Service(memvault_core::Error::FileTooLarge {
                        filename,
                        size,
                        limit: memvault_types::limits::FILE_MAX_BYTES,
                    })
                } else {
                    ApiError::Validation(format!("'{filename}': {reason}"))
                });
            }
            Incoming::Refused { .. } => {}
        }
    }
    match refusal {
        Some(error) => Err((error, staged)),
        None => Ok(staged),
    }
}

/// The memory an upload form describes.
fn memory_of_form(fields: &Map<String, Value>, staged: &[StagedFile]) -> ApiResult<NewMemory> {
    let field = |name: &str| fields.get(name).and_then(Value::as_str).map(str::to_owned);
    let text = match field("text") {
        Some(text) => text,
        None if !staged.is_empty() => staged
            .iter()
            .map(|file| file.filename.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        None => {
            return Err(ApiError::Validation(
                "`text` is required when no file is sent".to_owned(),
            ))
        }
    };
    validate_text(&text).map_err(ApiError::Validation)?;
    let importance = match field("importance") {
        Some(raw) => {
            let value: f64 = raw.parse().map_err(|_| {
                ApiError::Validation(format!("importance must be a number, got '{raw}'"))
            })?;
            memvault_core::memory::validate_importance(value).map_err(ApiError::Validation)?;
            value
        }
        None => DEFAULT_IMPORTANCE,
    };
    let metadata = match field("metadata") {
        Some(raw) => match serde_json::from_str::<Value>(&raw) {
            Ok(Value::Object(map)) => {
                memvault_core::memory::validate_metadata(&map).map_err(ApiError::Validation)?;
                map
            }
            _ => {
                return Err(ApiError::Validation(
                    "metadata must be a JSON object".to_owned(),
                ))
            }
        },
        None => Map::new(),
    };
    for name in ["category", "source", "container_tag"] {
        if let Some(value) = field(name) {
            memvault_core::memory::validate_short_field(name, &value)
                .map_err(ApiError::Validation)?;
        }
    }
    Ok(NewMemory {
        text,
        importance,
        category: field("category").unwrap_or_else(|| "other".to_owned()),
        source: field("source").unwrap_or_else(|| "file".to_owned()),
        metadata,
        container_tag: field("container_tag"),
        images: Vec::new(),
    })
}

fn parse_bool(name: &str, value: &Value) -> ApiResult<bool> {
    match value.as_str().map(str::trim) {
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        _ => Err(ApiError::Validation(format!(
            "{name} must be true or false, got {value}"
        ))),
    }
}

fn check_count(count: usize) -> ApiResult<()> {
    if count == 0 || count > FILES_PER_REQUEST {
        return Err(ApiError::Validation(format!(
            "1 to 100 files per request, got {count}"
        )));
    }
    Ok(())
}

fn multipart_error(error: axum::extract::multipart::MultipartError) -> ApiError {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::PayloadTooLarge(error.body_text())
    } else {
        ApiError::InvalidBody(format!(
            "the multipart body is not valid: {}",
            error.body_text()
        ))
    }
}

impl From<MultipartRejection> for ApiError {
    fn from(rejection: MultipartRejection) -> Self {
        ApiError::InvalidBody(format!(
            "expected a multipart/form-data body: {}",
            rejection.body_text()
        ))
    }
}
