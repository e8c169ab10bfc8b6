//! `GET /v1/memory/admin/export` (the account as one JSON download, streamed) and
//! `POST /v1/memory/admin/import` (an export, or any list of memories, into this account).

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::Utc;
use memvault_core::{AccountExport, ImportCollection, ImportedMemory, Portability};
use memvault_portability::IMPORT_SYNC_MAX;
use memvault_storage::{CollectionName, ImportSkipRecord, ImportState, MemoryRecord};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::{Authenticated, Writer};
use super::collections::collection_to_write;
use super::extract::{ApiJson, ApiPath};
use super::memories::{CreateMemoryRequest, MemoryResponse};
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory/admin`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(export))
        .routes(routes!(import).audit(Audit::Change("account.import")))
        .routes(routes!(import_status))
}

/// Memories serialized into one chunk of the export stream.
const EXPORT_CHUNK: usize = 500;
/// Most memories one import takes.
pub const IMPORT_MAX_MEMORIES: usize = 100_000;
/// Where an imported memory without a collection goes.
pub const IMPORT_DEFAULT_COLLECTION: &str = "imported";
/// Skipped items reported by index (the count covers all).
const IMPORT_ERRORS_SHOWN: usize = 50;

/// The whole account as one JSON document, downloaded as `memvault-export-{date}.json`:
/// `tenant`, `collections` (with description, metadata and grants) and `memories` (every
/// field but vectors, with its `collection`; attached files are listed with their names
/// and sizes under `files`). Streamed, so its size is not bounded by memory. A key with
/// grants exports the collections it may read.
#[utoipa::path(get, path = "/export", tag = "account",
    responses((status = 200, description = "the export, as an attachment", content_type = "application/json", body = Object),
        (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn export(
    State(portability): State<Portability>,
    Authenticated(agent): Authenticated,
) -> ApiResult<Response> {
    let export = portability.export(&agent)?;
    let filename = format!("memvault-export-{}.json", Utc::now().format("%Y-%m-%d"));
    let chunks = ExportChunks::new(export);
    let body = Body::from_stream(futures_util::stream::iter(
        chunks.map(Ok::<Bytes, Infallible>),
    ));
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{filename}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// The export document, produced a chunk at a time as the client reads it.
struct ExportChunks {
    export: Arc<AccountExport>,
    /// Before the header, in the memories of collection `collection` from `offset`, or
    /// done.
    step: Step,
    /// Whether a memory has been written (for the commas).
    wrote_memory: bool,
}

enum Step {
    Header,
    Memories { collection: usize, offset: usize },
    Done,
}

impl ExportChunks {
    fn new(export: AccountExport) -> Self {
        Self {
            export: Arc::new(export),
            step: Step::Header,
            wrote_memory: false,
        }
    }

    fn header(&self) -> String {
        let tenant = &self.export.tenant;
        let collections: Vec<Value> = self
            .export
            .collections
            .iter()
            .map(|(view, _)| {
                let record = &view.record;
                json!({
                    "name": record.name.as_str(),
                    "description": record.description,
                    "metadata": record.metadata,
                    "grants": record.grants,
                    "created_at": record.created_at,
                    "memory_count": view.memory_count,
                })
            })
            .collect();
        let head = json!({
            "format": "memvault-export",
            "version": 1,
            "exported_at": Utc::now(),
            "tenant": {
                "id": tenant.id.to_string(),
                "name": tenant.name,
                "email": tenant.email,
                "tier": tenant.tier,
                "created_at": tenant.created_at,
            },
            "collections": collections,
        })
        .to_string();
        // The object without its closing brace, then the memories array opens.
        format!("{},\"memories\":[", &head[..head.len() - 1])
    }
}

/// One memory as exported: the API's memory fields, its collection, and its files by
/// name and size instead of their storage entries.
fn exported_memory(collection: &str, memory: &MemoryRecord) -> Value {
    let mut value = serde_json::to_value(MemoryResponse::from(memory)).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut value {
        let files: Vec<Value> = memory
            .images
            .iter()
            .map(|image| {
                json!({
                    "filename": image.get("filename"),
                    "size": image.get("size"),
                    "content_type": image.get("content_type"),
                    "sha256": image.get("sha256"),
                })
            })
            .collect();
        fields.remove("images");
        fields.insert("files".to_owned(), Value::Array(files));
        fields.insert(
            "collection".to_owned(),
            Value::String(collection.to_owned()),
        );
    }
    value
}

impl Iterator for ExportChunks {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        loop {
            match self.step {
                Step::Header => {
                    self.step = Step::Memories {
                        collection: 0,
                        offset: 0,
                    };
                    return Some(Bytes::from(self.header()));
                }
                Step::Memories { collection, offset } => {
                    let Some((view, memories)) = self.export.collections.get(collection) else {
                        self.step = Step::Done;
                        return Some(Bytes::from_static(b"]}\n"));
                    };
                    if offset >= memories.len() {
                        self.step = Step::Memories {
                            collection: collection + 1,
                            offset: 0,
                        };
                        continue;
                    }
                    let end = (offset + EXPORT_CHUNK).min(memories.len());
                    let mut chunk = Vec::with_capacity(64 * (end - offset));
                    for memory in &memories[offset..end] {
                        if self.wrote_memory {
                            chunk.push(b',');
                        }
                        self.wrote_memory = true;
                        let value = exported_memory(view.record.name.as_str(), memory);
                        if serde_json::to_writer(&mut chunk, &value).is_err() {
                            chunk.extend_from_slice(b"null");
                        }
                    }
                    self.step = Step::Memories {
                        collection,
                        offset: end,
                    };
                    return Some(Bytes::from(chunk));
                }
                Step::Done => return None,
            }
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct ImportRequest {
    /// Memories as the export lists them (or just `{"text", "collection"?}`): `text`,
    /// `collection`, `importance`, `category`, `source`, `metadata`, `container_tag`,
    /// `pinned` and `archived` are read; `id`, times and other fields are ignored (ids
    /// are reassigned). At most 100,000.
    /// Items that are not objects are skipped, each with an error.
    #[schema(value_type = Vec<Value>)]
    pub memories: Vec<Value>,
    /// Collections to create when missing (objects with `name`, `description`?,
    /// `metadata`?, or bare names), even empty ones; checked but not used with
    /// `into_collection`.
    #[schema(value_type = Option<Vec<ImportCollectionItem>>)]
    pub collections: Option<Vec<Value>>,
    /// Put every memory into this one collection instead (created when missing).
    #[schema(max_length = 128, pattern = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")]
    pub into_collection: Option<String>,
}

/// A collection to create on import: its name, or an object with its name.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)] // The schema of what `import_collections` reads.
pub enum ImportCollectionItem {
    Name(ImportCollectionName),
    Collection(ImportCollectionObject),
}

/// A collection's name (the collection naming rule).
#[derive(Debug, Deserialize, ToSchema)]
#[schema(pattern = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")]
#[allow(dead_code)] // The schema of what `import_collections` reads.
pub struct ImportCollectionName(String);

/// A collection to create on import, with its description and metadata.
#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)] // The schema of what `import_collections` reads.
pub struct ImportCollectionObject {
    #[schema(max_length = 128, pattern = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")]
    name: String,
    description: Option<String>,
    #[schema(value_type = Option<Object>)]
    metadata: Option<Value>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ImportSkip {
    /// The item's position in `memories`.
    pub index: usize,
    pub detail: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ImportResponse {
    pub imported: usize,
    /// Items not imported (not an object, no valid text, a bad field or collection name).
    pub skipped: usize,
    /// The collections created or written to.
    pub collections: Vec<String>,
    /// Why items were skipped (the first 50).
    pub errors: Vec<ImportSkip>,
}

/// A large import's progress (`POST /v1/memory/admin/import` answered 202).
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportJobResponse {
    /// The import's id, for `GET /v1/memory/admin/import/{import_id}`.
    pub import_id: String,
    /// `queued`, `running`, `done` or `failed`.
    pub state: &'static str,
    /// Memories to import (the items the request could use).
    pub total: usize,
    /// Memories imported so far.
    pub imported: usize,
    /// Items not imported (see `ImportResponse`).
    pub skipped: usize,
    pub collections: Vec<String>,
    /// Why items were skipped (the first 50).
    pub errors: Vec<ImportSkip>,
    /// Why the import failed.
    pub detail: Option<String>,
    pub created_at: chrono::DateTime<Utc>,
    pub updated_at: chrono::DateTime<Utc>,
}

impl From<memvault_storage::ImportJobRecord> for ImportJobResponse {
    fn from(job: memvault_storage::ImportJobRecord) -> Self {
        Self {
            import_id: job.id,
            state: match job.state {
                ImportState::Queued => "queued",
                ImportState::Running => "running",
                ImportState::Done => "done",
                ImportState::Failed => "failed",
            },
            total: job.total,
            imported: job.cursor,
            skipped: job.skipped,
            collections: job.collections,
            errors: job
                .errors
                .into_iter()
                .map(|skip| ImportSkip {
                    index: skip.index,
                    detail: skip.detail,
                })
                .collect(),
            detail: job.detail,
            created_at: job.created_at,
            updated_at: job.updated_at,
        }
    }
}

/// Imports memories (an export's `memories` and `collections` as they are, or any list
/// of `{text, collection?}`): collections are created as needed, texts re-embedded in
/// batches, ids reassigned. A memory without a collection goes to `imported`;
/// `into_collection` puts all of them into one. Invalid items are skipped and reported.
/// Up to 1,000 memories are imported in the request (200); a larger import is a job that
/// survives restarts (202), followed with `GET /v1/memory/admin/import/{import_id}`.
/// Every collection is authorized, and the tier's memory limit checked, before anything
/// is written.
#[utoipa::path(post, path = "/import", tag = "account",
    request_body = ImportRequest,
    responses((status = 200, body = ImportResponse), (status = 202, body = ImportJobResponse),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn import(
    State(portability): State<Portability>,
    Writer(agent): Writer,
    ApiJson(request): ApiJson<ImportRequest>,
) -> ApiResult<Response> {
    if request.memories.len() > IMPORT_MAX_MEMORIES {
        return Err(ApiError::Validation(format!(
            "at most {IMPORT_MAX_MEMORIES} memories per import, got {}",
            request.memories.len()
        )));
    }
    let into = request
        .into_collection
        .as_deref()
        .map(collection_to_write)
        .transpose()?;
    let listed = import_collections(request.collections.unwrap_or_default())?;
    let collections = match &into {
        Some(name) => vec![ImportCollection {
            name: name.clone(),
            description: None,
            metadata: Map::new(),
        }],
        None => listed,
    };
    let mut memories = Vec::with_capacity(request.memories.len());
    let mut errors = Vec::new();
    let mut skipped = 0;
    for (index, item) in oldest_first(request.memories) {
        match imported_memory(item, into.as_ref()) {
            Ok(memory) => memories.push(memory),
            Err(detail) => {
                skipped += 1;
                if errors.len() < IMPORT_ERRORS_SHOWN {
                    errors.push(ImportSkip { index, detail });
                }
            }
        }
    }
    if memories.len() > IMPORT_SYNC_MAX {
        let errors = errors
            .into_iter()
            .map(|skip| ImportSkipRecord {
                index: skip.index,
                detail: skip.detail,
            })
            .collect();
        let job = portability
            .import_later(&agent, collections, memories, errors, skipped)
            .await?;
        return Ok((StatusCode::ACCEPTED, Json(ImportJobResponse::from(job))).into_response());
    }
    let outcome = portability.import(&agent, collections, memories).await?;
    Ok(Json(ImportResponse {
        imported: outcome.imported,
        skipped,
        collections: outcome.collections,
        errors,
    })
    .into_response())
}

/// How far a large import is.
#[utoipa::path(get, path = "/import/{import_id}", tag = "account",
    params(("import_id" = String, Path)),
    responses((status = 200, body = ImportJobResponse), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn import_status(
    State(portability): State<Portability>,
    Authenticated(agent): Authenticated,
    ApiPath(import_id): ApiPath<String>,
) -> ApiResult<Json<ImportJobResponse>> {
    let job = portability.import_job(&agent, &import_id).await?;
    Ok(Json(ImportJobResponse::from(job)))
}

/// The items with their positions, oldest first: an export lists memories newest first,
/// and importing them in the order they were made keeps listings (newest first) and the
/// indexes' build order as they were. Items are ordered by `created_at`, then `id` (both
/// as the export writes them); items without them keep their place before the others.
fn oldest_first(items: Vec<Value>) -> Vec<(usize, Value)> {
    let mut items: Vec<(usize, Value)> = items.into_iter().enumerate().collect();
    let key = |item: &Value| {
        let field = |name: &str| item.get(name).and_then(Value::as_str).map(str::to_owned);
        (field("created_at"), field("id"))
    };
    items.sort_by_cached_key(|(_, item)| key(item));
    items
}

fn collection_field(field: &str, kind: &str) -> ApiError {
    ApiError::Validation(format!(
        "a collection's `{field}` is {kind} or null in `collections`"
    ))
}

fn import_collections(items: Vec<Value>) -> ApiResult<Vec<ImportCollection>> {
    items
        .into_iter()
        .map(|item| {
            let (name, description, metadata) = match item {
                Value::String(name) => (name, None, Map::new()),
                Value::Object(mut fields) => {
                    let name = match fields.remove("name") {
                        Some(Value::String(name)) => name,
                        _ => {
                            return Err(ApiError::Validation(
                                "each of `collections` is a name or an object with a `name`"
                                    .to_owned(),
                            ))
                        }
                    };
                    let description = match fields.remove("description") {
                        None | Some(Value::Null) => None,
                        Some(Value::String(description)) => Some(description),
                        Some(_) => return Err(collection_field("description", "a string")),
                    };
                    let metadata = match fields.remove("metadata") {
                        None | Some(Value::Null) => Map::new(),
                        Some(Value::Object(metadata)) => metadata,
                        Some(_) => return Err(collection_field("metadata", "an object")),
                    };
                    (name, description, metadata)
                }
                _ => {
                    return Err(ApiError::Validation(
                        "each of `collections` is a name or an object with a `name`".to_owned(),
                    ))
                }
            };
            Ok(ImportCollection {
                name: collection_to_write(&name)?,
                description,
                metadata,
            })
        })
        .collect()
}

/// One item of `memories`, validated as a created memory is; `Err` says why it is skipped.
fn imported_memory(item: Value, into: Option<&CollectionName>) -> Result<ImportedMemory, String> {
    let Value::Object(mut fields) = item else {
        return Err("not an object".to_owned());
    };
    let flag = |fields: &Map<String, Value>, name: &str| {
        fields.get(name).and_then(Value::as_bool).unwrap_or(false)
    };
    let (pinned, archived) = (flag(&fields, "pinned"), flag(&fields, "archived"));
    let collection = match into {
        Some(name) => name.clone(),
        None => match fields.get("collection") {
            Some(Value::String(name)) => {
                collection_to_write(name).map_err(|error| error.to_string())?
            }
            None | Some(Value::Null) => {
                collection_to_write(IMPORT_DEFAULT_COLLECTION).map_err(|error| error.to_string())?
            }
            Some(_) => return Err("`collection` is not a string".to_owned()),
        },
    };
    let mut known = Map::new();
    for name in [
        "text",
        "importance",
        "category",
        "source",
        "metadata",
        "container_tag",
    ] {
        if let Some(value) = fields.remove(name).filter(|value| !value.is_null()) {
            known.insert(name.to_owned(), value);
        }
    }
    let request: CreateMemoryRequest = serde_json::from_value(Value::Object(known))
        .map_err(|error| format!("invalid memory: {error}"))?;
    let memory = request.validate().map_err(|error| error.to_string())?;
    Ok(ImportedMemory {
        collection,
        memory,
        pinned,
        archived,
    })
}
