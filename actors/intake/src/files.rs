//! Files: drop (now or as a batch), presigned uploads and their completion, a memory with
//! attached files, a folder of files, adding and removing one file, downloads through
//! presigned URLs, and removing files that no memory references any more.
//!
//! Every file is stored as a blob first (its original stays downloadable), then read by a
//! worker process ([`FileReader`]), chunked ([`Chunker`]) and stored as memories whose
//! `images` reference the original. One failing file never fails the others.

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use memvault_blobs::{BlobError, BlobKey, BlobStore, PresignMethod, UrlSigner};
use memvault_core::blocking;
use memvault_core::memory::NewMemory;
use memvault_core::service::access::{CollectionAccess, Write};
use memvault_core::service::placement::{blob_error, blob_key, storage_error};
use memvault_core::{Error, Result};
use memvault_files::{Attachment, FileReader, SignedAttachment};
use memvault_ingest::Kind;
use memvault_storage::{
    CreatedBy, IngestBatchRecord, IngestItemRecord, IngestItemState, MemoryRecord, TenantId,
};
use serde_json::{Map, Value};

use crate::ingest::{FileContext, Outcome};
use crate::Parts;

/// Characters of a file's text shown in a drop's per-file result.
pub(crate) const PREVIEW_CHARS: usize = 200;

/// A file stored as a blob, not yet read.
#[derive(Debug, Clone)]
pub struct StagedFile {
    pub file_id: String,
    pub filename: String,
    pub declared_type: Option<String>,
    /// The blob's path under the tenant.
    pub path: String,
    /// The tenant's own bucket it is in (`None`: the platform's storage).
    pub store: Option<String>,
    pub size: u64,
    pub sha256: String,
    /// What the bytes are, by content.
    pub kind: Kind,
    /// The bytes, kept while the request that staged them runs.
    pub bytes: Bytes,
}

impl StagedFile {
    pub(crate) fn attachment(&self) -> Attachment {
        Attachment {
            file_id: self.file_id.clone(),
            path: self.path.clone(),
            filename: self.filename.clone(),
            content_type: self.kind.mime().to_owned(),
            size: self.size,
            sha256: self.sha256.clone(),
            store: self.store.clone(),
        }
    }
}

/// A file of a request: stored, or refused before it was stored.
#[derive(Debug, Clone)]
pub enum Incoming {
    Staged(StagedFile),
    Refused {
        filename: String,
        size: u64,
        code: String,
        reason: String,
    },
}

impl Incoming {
    pub fn filename(&self) -> &str {
        match self {
            Self::Staged(file) => &file.filename,
            Self::Refused { filename, .. } => filename,
        }
    }
}

/// How one file of a synchronous drop or a folder ended.
#[derive(Debug, Clone, PartialEq)]
pub struct FileResult {
    pub filename: String,
    pub file_id: Option<String>,
    /// `done`, `duplicate` or `failed`.
    pub status: &'static str,
    /// What the file was read as (`pdf`, `docx`, `png`, ...).
    pub kind: Option<String>,
    pub size: u64,
    pub memory_ids: Vec<String>,
    /// The start of the file's text.
    pub preview: Option<String>,
    /// Why it failed, or what was skipped.
    pub detail: Option<String>,
    /// A failure's stable code.
    pub code: Option<String>,
}

/// One file a client wants to upload straight to storage.
#[derive(Debug, Clone)]
pub struct UploadSpec {
    pub filename: String,
    pub content_type: Option<String>,
    pub size: u64,
}

/// A signed upload, or why a file was not signed.
#[derive(Debug, Clone)]
pub enum UploadTicket {
    Signed {
        filename: String,
        key: String,
        url: String,
        expires_at: DateTime<Utc>,
    },
    Refused {
        filename: String,
        reason: String,
    },
}

/// A file the client says it uploaded (`complete`).
#[derive(Debug, Clone)]
pub struct CompletedUpload {
    pub key: String,
    pub filename: String,
    pub mime: Option<String>,
    pub size: Option<u64>,
}

/// A blob served through a presigned URL.
#[derive(Debug, Clone)]
pub struct Download {
    pub bytes: Bytes,
    pub content_type: String,
    pub filename: String,
}

/// Files: see the module docs.
#[derive(Clone)]
pub struct Files {
    pub(crate) parts: Arc<Parts>,
}

impl Files {
    pub(crate) fn settings(&self) -> &memvault_files::FileSettings {
        &self.parts.settings
    }

    /// The per-file limit in bytes.
    pub fn max_file_bytes(&self) -> u64 {
        self.settings().max_file_bytes
    }

    /// The most files one folder upload takes.
    pub fn folder_max_files(&self) -> usize {
        self.settings().folder_max_files
    }

    /// Stores a file of a request as a blob under `files/{file_id}/`; an empty file is
    /// refused here.
    pub async fn stage(
        &self,
        tenant: &TenantId,
        filename: &str,
        declared_type: Option<String>,
        bytes: Bytes,
    ) -> Result<Incoming> {
        let filename = clean_filename(filename);
        if bytes.is_empty() {
            return Ok(Incoming::Refused {
                filename,
                size: 0,
                code: "empty".to_owned(),
                reason: "the file is empty".to_owned(),
            });
        }
        let file_id = uuid::Uuid::now_v7().simple().to_string();
        let path = format!("files/{file_id}/{}", blob_name(&filename));
        let kind = FileReader::sniff(&bytes, &filename);
        let key = blob_key(tenant, &path)?;
        let placed = self.parts.placement.active(tenant)?;
        // The platform's storage counts against the tier; a tenant's own bucket is its own.
        if placed.id.is_none() {
            let admitted = self.parts.placement.admit(tenant, bytes.len() as u64);
            if let Err(error) = admitted.await {
                return Ok(Incoming::Refused {
                    filename,
                    size: bytes.len() as u64,
                    code: error.code().as_str().to_owned(),
                    reason: error.to_string(),
                });
            }
        }
        let receipt = placed
            .store
            .put(&key, bytes.clone(), kind.mime())
            .await
            .map_err(storage_error)?;
        if placed.id.is_none() {
            self.parts.placement.note_stored(tenant, receipt.size);
        }
        Ok(Incoming::Staged(StagedFile {
            file_id,
            filename,
            declared_type,
            path,
            store: placed.id,
            size: receipt.size,
            sha256: receipt.sha256,
            kind,
            bytes,
        }))
    }

    /// Removes files a request stored but will not use (the request failed).
    pub async fn discard(&self, tenant: &TenantId, files: &[StagedFile]) {
        for file in files {
            self.parts
                .placement
                .delete(tenant, file.store.as_deref(), &file.path)
                .await;
        }
    }

    /// A file over the per-file limit, refused without being stored.
    pub fn refuse_oversize(&self, filename: &str, size: u64) -> Incoming {
        Incoming::Refused {
            filename: clean_filename(filename),
            size,
            code: "file_too_large".to_owned(),
            reason: format!(
                "the file is over the per-file limit of {} bytes",
                self.max_file_bytes()
            ),
        }
    }

    /// Reads, chunks and stores each file now; one result per file.
    pub async fn drop_now(
        &self,
        access: &CollectionAccess<Write>,
        files: Vec<Incoming>,
    ) -> Result<Vec<FileResult>> {
        let mut results = Vec::with_capacity(files.len());
        for file in files {
            results.push(self.ingest_now(access, file, FileContext::plain()).await?);
        }
        Ok(results)
    }

    /// One file of a synchronous drop (chunked) or a folder (`FileContext::whole`):
    /// read, stored as memories, its result; the blob is removed unless memories keep it.
    async fn ingest_now(
        &self,
        access: &CollectionAccess<Write>,
        file: Incoming,
        context: FileContext,
    ) -> Result<FileResult> {
        let staged = match file {
            Incoming::Refused {
                filename,
                size,
                code,
                reason,
            } => return Ok(failed_result(filename, None, size, code, reason)),
            Incoming::Staged(staged) => staged,
        };
        let prepared = match self.prepare_staged(access, &staged, &context).await {
            Ok(prepared) => prepared,
            Err(outcome) => {
                // Nothing of the file is kept: a duplicate or a file that gave no memories.
                self.discard(access.tenant(), std::slice::from_ref(&staged))
                    .await;
                return Ok(match outcome {
                    Outcome::Duplicate { memory_ids, note } => FileResult {
                        filename: staged.filename.clone(),
                        file_id: Some(staged.file_id.clone()),
                        status: "duplicate",
                        kind: Some(staged.kind.name().to_owned()),
                        size: staged.size,
                        memory_ids,
                        preview: None,
                        detail: Some(note),
                        code: None,
                    },
                    Outcome::Failed { code, reason } => FileResult {
                        kind: Some(staged.kind.name().to_owned()),
                        ..failed_result(
                            staged.filename.clone(),
                            Some(staged.file_id.clone()),
                            staged.size,
                            code,
                            reason,
                        )
                    },
                });
            }
        };
        match self.store_chunks(access, prepared.memories).await {
            Ok(ids) => Ok(FileResult {
                filename: staged.filename.clone(),
                file_id: Some(staged.file_id.clone()),
                status: "done",
                kind: Some(staged.kind.name().to_owned()),
                size: staged.size,
                memory_ids: ids,
                preview: prepared.preview,
                detail: prepared.note,
                code: None,
            }),
            Err(error) => {
                self.discard(access.tenant(), std::slice::from_ref(&staged))
                    .await;
                Err(error)
            }
        }
    }

    /// Stores the files as a batch and queues it; the batch as stored (refused files are
    /// failed items from the start).
    pub async fn drop_later(
        &self,
        access: &CollectionAccess<Write>,
        files: Vec<Incoming>,
        origin: &str,
    ) -> Result<IngestBatchRecord> {
        let items = files.into_iter().map(batch_item).collect();
        self.start_batch(access, items, origin, "file", Map::new())
            .await
    }

    /// [`Self::drop_later`] for files that came another way than a file drop: their
    /// memories get `source` and `metadata` (mail-in: `email`, the sender, subject, date
    /// and message id).
    pub async fn drop_later_from(
        &self,
        access: &CollectionAccess<Write>,
        files: Vec<Incoming>,
        origin: &str,
        source: &str,
        metadata: Map<String, Value>,
    ) -> Result<IngestBatchRecord> {
        let items = files.into_iter().map(batch_item).collect();
        self.start_batch(access, items, origin, source, metadata)
            .await
    }

    async fn start_batch(
        &self,
        access: &CollectionAccess<Write>,
        items: Vec<IngestItemRecord>,
        origin: &str,
        source: &str,
        metadata: Map<String, Value>,
    ) -> Result<IngestBatchRecord> {
        let now = self.parts.clock.now();
        let agent = access.agent();
        let batch = IngestBatchRecord {
            id: uuid::Uuid::now_v7().to_string(),
            tenant_id: agent.tenant_id.clone(),
            collection: access.collection().clone(),
            created_by: CreatedBy {
                id: agent.key_id.clone(),
                label: agent.label.clone(),
            },
            origin: origin.to_owned(),
            metadata,
            source: source.to_owned(),
            items,
            created_at: now,
            updated_at: now,
        };
        let (store, stored) = (self.parts.store.clone(), batch.clone());
        blocking(move || store.put_batch(&stored)).await?;
        if !batch.is_finished() {
            self.parts
                .queue
                .submit((batch.tenant_id.clone(), batch.id.clone()))
                .map_err(|error| Error::TaskFailed {
                    task: "ingest queue",
                    reason: error.to_string(),
                })?;
        }
        Ok(batch)
    }

    /// One of the tenant's batches.
    pub async fn batch(&self, tenant: &TenantId, id: &str) -> Result<IngestBatchRecord> {
        let (store, owner, key) = (self.parts.store.clone(), tenant.clone(), id.to_owned());
        blocking(move || store.batch(&owner, &key))
            .await?
            .ok_or_else(|| Error::BatchNotFound(id.to_owned()))
    }

    /// Every batch of the tenant, newest first.
    pub async fn batches(&self, tenant: &TenantId) -> Result<Vec<IngestBatchRecord>> {
        let (store, owner) = (self.parts.store.clone(), tenant.clone());
        let mut batches = blocking(move || store.batches_of(&owner)).await?;
        batches.sort_by_key(|batch| std::cmp::Reverse(batch.created_at));
        Ok(batches)
    }

    /// Queues a finished batch's failed items again (those whose file is stored); the
    /// batch as stored.
    pub async fn retry_failed(
        &self,
        access: &CollectionAccess<Write>,
        batch_id: &str,
    ) -> Result<IngestBatchRecord> {
        let mut batch = self.batch(access.tenant(), batch_id).await?;
        if &batch.collection != access.collection() {
            return Err(Error::BatchNotFound(batch_id.to_owned()));
        }
        if !batch.is_finished() {
            return Err(Error::BatchRunning(batch_id.to_owned()));
        }
        let mut retried = 0;
        for item in &mut batch.items {
            if item.state == IngestItemState::Failed && item.blob_path.is_some() {
                item.state = IngestItemState::Queued;
                item.attempts = 0;
                item.reason = None;
                item.started_at = None;
                retried += 1;
            }
        }
        if retried == 0 {
            return Ok(batch);
        }
        batch.updated_at = self.parts.clock.now();
        let (store, stored) = (self.parts.store.clone(), batch.clone());
        blocking(move || store.put_batch(&stored)).await?;
        self.parts
            .queue
            .submit((batch.tenant_id.clone(), batch.id.clone()))
            .map_err(|error| Error::TaskFailed {
                task: "ingest queue",
                reason: error.to_string(),
            })?;
        Ok(batch)
    }

    /// Removes a failed item from a finished batch, with its stored file; the batch as
    /// stored.
    pub async fn delete_failed_item(
        &self,
        access: &CollectionAccess<Write>,
        batch_id: &str,
        index: usize,
    ) -> Result<IngestBatchRecord> {
        let mut batch = self.batch(access.tenant(), batch_id).await?;
        if &batch.collection != access.collection() {
            return Err(Error::BatchNotFound(batch_id.to_owned()));
        }
        if !batch.is_finished() {
            return Err(Error::BatchRunning(batch_id.to_owned()));
        }
        let Some(item) = batch.items.get(index) else {
            return Err(Error::BatchItemNotFound {
                batch: batch_id.to_owned(),
                index,
            });
        };
        if item.state != IngestItemState::Failed {
            return Err(Error::BatchItemNotFailed {
                batch: batch_id.to_owned(),
                index,
            });
        }
        let removed = batch.items.remove(index);
        batch.updated_at = self.parts.clock.now();
        let (store, stored) = (self.parts.store.clone(), batch.clone());
        blocking(move || store.put_batch(&stored)).await?;
        if let Some(path) = &removed.blob_path {
            self.parts
                .placement
                .delete(access.tenant(), removed.blob_store.as_deref(), path)
                .await;
        }
        Ok(batch)
    }

    /// Presigned PUT URLs under the tenant's `uploads/` space; files over the limit are
    /// refused and not signed.
    pub async fn presign_uploads(
        &self,
        access: &CollectionAccess<Write>,
        specs: Vec<UploadSpec>,
    ) -> Result<Vec<UploadTicket>> {
        let expiry = self.settings().url_expiry;
        let placed = self.parts.placement.active(access.tenant())?;
        let mut tickets = Vec::with_capacity(specs.len());
        for spec in specs {
            let filename = clean_filename(&spec.filename);
            if spec.size > self.max_file_bytes() {
                tickets.push(UploadTicket::Refused {
                    reason: format!(
                        "{} bytes is over the per-file limit of {} bytes",
                        spec.size,
                        self.max_file_bytes()
                    ),
                    filename: spec.filename,
                });
                continue;
            }
            let path = format!(
                "uploads/{}/{}",
                uuid::Uuid::new_v4().simple(),
                blob_name(&filename)
            );
            let key = blob_key(access.tenant(), &path)?;
            let url = placed
                .store
                .presign_put(&key, expiry)
                .await
                .map_err(storage_error)?;
            tickets.push(UploadTicket::Signed {
                filename: spec.filename,
                key: key.as_string(),
                url: url.to_string(),
                expires_at: self.parts.clock.now()
                    + chrono::Duration::from_std(expiry).unwrap_or(chrono::Duration::zero()),
            });
        }
        Ok(tickets)
    }

    /// Checks each uploaded key (the caller's tenant, its `uploads/` space, present, within
    /// the limit by its stored size) and queues the good ones as a batch. Returns the batch
    /// and the refused keys with reasons.
    pub async fn complete_uploads(
        &self,
        access: &CollectionAccess<Write>,
        uploads: Vec<CompletedUpload>,
    ) -> Result<(IngestBatchRecord, Vec<(CompletedUpload, String)>)> {
        let mut items = Vec::new();
        let mut rejected = Vec::new();
        let placed = self.parts.placement.active(access.tenant())?;
        for upload in uploads {
            match self
                .check_upload(access.tenant(), &*placed.store, &upload)
                .await
            {
                Ok((path, size)) => items.push(IngestItemRecord {
                    file_id: uuid::Uuid::now_v7().simple().to_string(),
                    filename: clean_filename(&upload.filename),
                    declared_type: upload.mime.clone(),
                    blob_path: Some(path),
                    blob_store: placed.id.clone(),
                    size,
                    state: IngestItemState::Queued,
                    reason: None,
                    memory_ids: Vec::new(),
                    attempts: 0,
                    started_at: None,
                }),
                Err(reason) => {
                    items.push(refused_item(
                        clean_filename(&upload.filename),
                        upload.size.unwrap_or(0),
                        reason.clone(),
                    ));
                    rejected.push((upload, reason));
                }
            }
        }
        let batch = self
            .start_batch(access, items, "complete", "file", Map::new())
            .await?;
        Ok((batch, rejected))
    }

    async fn check_upload(
        &self,
        tenant: &TenantId,
        store: &dyn BlobStore,
        upload: &CompletedUpload,
    ) -> std::result::Result<(String, u64), String> {
        let outside = || "the key is not an upload of this tenant".to_owned();
        let key = BlobKey::parse(&upload.key).map_err(|_| outside())?;
        if key.tenant() != tenant || !key.path().starts_with("uploads/") {
            return Err(outside());
        }
        let meta = match store.head(&key).await {
            Ok(meta) => meta,
            Err(BlobError::NotFound { .. }) => {
                return Err("nothing was uploaded under this key".to_owned())
            }
            Err(error) => return Err(format!("the upload could not be checked: {error}")),
        };
        if meta.size > self.max_file_bytes() {
            let _ = store.delete(&key).await;
            return Err(format!(
                "the uploaded file is {} bytes, over the per-file limit of {} bytes",
                meta.size,
                self.max_file_bytes()
            ));
        }
        if meta.size == 0 {
            return Err("the uploaded file is empty".to_owned());
        }
        Ok((key.path().to_owned(), meta.size))
    }

    /// One memory with `text` and the files attached (not extracted).
    pub async fn upload_memory(
        &self,
        access: &CollectionAccess<Write>,
        mut memory: NewMemory,
        files: Vec<StagedFile>,
    ) -> Result<Arc<MemoryRecord>> {
        memory.images = files
            .iter()
            .map(|file| file.attachment().to_value())
            .collect();
        match self.parts.memories.create(access, vec![memory]).await {
            Ok(mut created) => created.pop().ok_or_else(|| Error::TaskFailed {
                task: "memory create",
                reason: "no memory was created".to_owned(),
            }),
            Err(error) => {
                self.discard(access.tenant(), &files).await;
                Err(error)
            }
        }
    }

    /// One memory per file: its text (cut to the memory limit) and the file attached.
    pub async fn folder(
        &self,
        access: &CollectionAccess<Write>,
        files: Vec<Incoming>,
    ) -> Result<Vec<FileResult>> {
        let mut results = Vec::with_capacity(files.len());
        for file in files {
            results.push(self.ingest_now(access, file, FileContext::whole()).await?);
        }
        Ok(results)
    }

    /// Attaches one more file to a memory.
    pub async fn add_image(
        &self,
        access: &CollectionAccess<Write>,
        id: &str,
        file: StagedFile,
    ) -> Result<Arc<MemoryRecord>> {
        let image = file.attachment().to_value();
        let updated = self.parts.memories.add_image(access, id, image).await;
        if updated.is_err() {
            self.discard(access.tenant(), std::slice::from_ref(&file))
                .await;
        }
        updated
    }

    /// Removes the file at `index` from a memory, and its blob when nothing else
    /// references it.
    pub async fn delete_image(
        &self,
        access: &CollectionAccess<Write>,
        id: &str,
        index: usize,
    ) -> Result<()> {
        self.parts.memories.remove_image(access, id, index).await
    }

    /// The `images` entries as a read shows them: each stored file with a fresh presigned
    /// URL. Entries of another shape are shown as stored.
    pub async fn sign_images(&self, tenant: &TenantId, images: &[Value]) -> Vec<Value> {
        let expiry = self.settings().url_expiry;
        let mut signed = Vec::with_capacity(images.len());
        for image in images {
            let Some(attachment) = Attachment::from_value(image) else {
                signed.push(image.clone());
                continue;
            };
            let signed_url = self.signed_url(tenant, &attachment, expiry).await;
            let (url, detail) = match signed_url {
                Ok(url) => (Some(url.to_string()), None),
                Err(detail) => {
                    tracing::warn!(file = %attachment.file_id, %detail, "no file URL");
                    (None, Some(detail))
                }
            };
            let entry = SignedAttachment {
                expires_at: url.as_ref().map(|_| {
                    self.parts.clock.now()
                        + chrono::Duration::from_std(expiry).unwrap_or(chrono::Duration::zero())
                }),
                file_id: attachment.file_id,
                filename: attachment.filename,
                content_type: attachment.content_type,
                size: attachment.size,
                sha256: attachment.sha256,
                url,
                detail,
            };
            signed.push(serde_json::to_value(entry).unwrap_or(Value::Null));
        }
        signed
    }

    /// A download URL for the attachment, or why there is none.
    async fn signed_url(
        &self,
        tenant: &TenantId,
        attachment: &Attachment,
        expiry: std::time::Duration,
    ) -> std::result::Result<url::Url, String> {
        let key = blob_key(tenant, &attachment.path).map_err(|error| error.to_string())?;
        let store = self
            .parts
            .placement
            .holding(tenant, attachment.store.as_deref())
            .map_err(|error| error.to_string())?
            .ok_or_else(|| {
                "the file is in a storage bucket that is no longer configured for this \
                 account; configure that bucket again to reach it"
                    .to_owned()
            })?;
        store
            .presign_get(&key, expiry)
            .await
            .map_err(|error| format!("the file URL could not be signed: {error}"))
    }

    /// The blob a memvault-presigned GET URL names, after its signature and expiry are
    /// checked.
    pub async fn download(&self, key: &str, expires: i64, signature: &str) -> Result<Download> {
        let key = self.verified_key(PresignMethod::Get, key, expires, signature)?;
        let meta = self
            .parts
            .placement
            .platform()
            .head(&key)
            .await
            .map_err(blob_error)?;
        let bytes = self
            .parts
            .placement
            .platform()
            .get(&key)
            .await
            .map_err(blob_error)?;
        let filename = key.path().rsplit('/').next().unwrap_or("file").to_owned();
        Ok(Download {
            bytes,
            content_type: meta.content_type,
            filename,
        })
    }

    /// Stores the body of a PUT to a memvault-presigned upload URL.
    pub async fn upload_presigned(
        &self,
        key: &str,
        expires: i64,
        signature: &str,
        bytes: Bytes,
        content_type: Option<&str>,
    ) -> Result<()> {
        let key = self.verified_key(PresignMethod::Put, key, expires, signature)?;
        if bytes.len() as u64 > self.max_file_bytes() {
            return Err(Error::FileTooLarge {
                filename: key.path().rsplit('/').next().unwrap_or("file").to_owned(),
                size: bytes.len() as u64,
                limit: self.max_file_bytes(),
            });
        }
        let content_type = content_type.unwrap_or(memvault_blobs::DEFAULT_CONTENT_TYPE);
        self.parts
            .placement
            .platform()
            .put(&key, bytes, content_type)
            .await
            .map_err(storage_error)?;
        Ok(())
    }

    fn verified_key(
        &self,
        method: PresignMethod,
        key: &str,
        expires: i64,
        signature: &str,
    ) -> Result<BlobKey> {
        let signer: &UrlSigner = self.parts.placement.signer();
        let key = BlobKey::parse(key).map_err(|_| Error::BadSignature)?;
        signer
            .verify_presigned(method, &key, expires, signature, Utc::now())
            .map_err(blob_error)?;
        Ok(key)
    }
}

fn failed_result(
    filename: String,
    file_id: Option<String>,
    size: u64,
    code: String,
    reason: String,
) -> FileResult {
    FileResult {
        filename,
        file_id,
        status: "failed",
        kind: None,
        size,
        memory_ids: Vec::new(),
        preview: None,
        detail: Some(reason),
        code: Some(code),
    }
}

/// A file of a batch as its queued item (a refused file is failed from the start).
fn batch_item(file: Incoming) -> IngestItemRecord {
    match file {
        Incoming::Staged(staged) => IngestItemRecord {
            file_id: staged.file_id,
            filename: staged.filename,
            declared_type: staged.declared_type,
            blob_path: Some(staged.path),
            blob_store: staged.store,
            size: staged.size,
            state: IngestItemState::Queued,
            reason: None,
            memory_ids: Vec::new(),
            attempts: 0,
            started_at: None,
        },
        Incoming::Refused {
            filename,
            size,
            reason,
            ..
        } => refused_item(filename, size, reason),
    }
}

fn refused_item(filename: String, size: u64, reason: String) -> IngestItemRecord {
    IngestItemRecord {
        file_id: uuid::Uuid::now_v7().simple().to_string(),
        filename,
        declared_type: None,
        blob_path: None,
        blob_store: None,
        size,
        state: IngestItemState::Failed,
        reason: Some(reason),
        memory_ids: Vec::new(),
        attempts: 0,
        started_at: None,
    }
}

/// A client's file name, without any directory part, control characters or excess
/// length; `file` when nothing is left.
fn clean_filename(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let cleaned: String = base.chars().filter(|c| !c.is_control()).take(255).collect();
    let cleaned = cleaned.trim();
    if cleaned.is_empty() || cleaned == "." || cleaned == ".." {
        "file".to_owned()
    } else {
        cleaned.to_owned()
    }
}

/// A file name safe as one blob path segment on every backend.
fn blob_name(filename: &str) -> String {
    let name: String = filename
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    let name = name.trim_matches('.');
    if name.is_empty() {
        "file".to_owned()
    } else {
        name.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_lose_directories_and_blob_names_are_one_safe_segment() {
        assert_eq!(clean_filename("../../etc/passwd"), "passwd");
        assert_eq!(clean_filename("C:\\docs\\report.pdf"), "report.pdf");
        assert_eq!(clean_filename(".."), "file");
        assert_eq!(blob_name("a b#1?.txt"), "a_b_1_.txt");
        assert_eq!(blob_name("..."), "file");
        assert_eq!(blob_name("résumé.pdf"), "r_sum_.pdf");
    }
}
