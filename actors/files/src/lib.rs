//! memvault-files: files in, memories out — the parts of the file pipeline that are
//! not a service method.
//!
//! # Layout
//!
//! - `attachment.rs`: [`Attachment`], a file as a memory's `images` entry stores it, and
//!   [`SignedAttachment`], as reads show it (with a presigned URL).
//! - `chunk.rs`: [`Chunker`], extracted text into chunks sized in the embedder's tokens.
//! - [`ingest`]: [`IngestJobs`], asynchronous file batches as a job kind: every item's
//!   state persisted at each step, a deadline per item, resumed after a crash with the
//!   cut-off item's partial memories removed. It runs each item through an
//!   [`IngestItem`], the service's part that prepares and stores it.
//! - `reader.rs`: [`FileReader`], which sniffs and extracts a file in a worker process
//!   (`memvault ingest-worker`), a few at a time, with the engines the binary located.
//! - `settings.rs`: [`FileSettings`], the limits and parts the binary configures.
//! - `storage.rs`: [`TenantStores`], the platform's store or a tenant's own bucket, and
//!   the self-test a bucket passes before it is saved.
//! - `transcription.rs`: [`TranscriptionEndpoint`], speech to text by an OpenAI-compatible
//!   `/audio/transcriptions` endpoint when one is configured.
//! - `vision.rs`: [`VisionEndpoint`], image captions by a vision-capable OpenAI-compatible
//!   chat model when one is configured.
//!
//! The use cases (drop, presign, complete, upload, folder, images, downloads) are
//! `memvault-core`'s (`Files`).

mod attachment;
mod chunk;
pub mod ingest;
mod reader;
mod settings;
mod storage;
mod transcription;
mod vision;

pub use attachment::{Attachment, SignedAttachment};
pub use chunk::{cap_chars, Chunk, Chunker};
pub use ingest::{
    IngestBatchKey, IngestItem, IngestJobs, ItemOutcome, Prepared, ITEM_MAX_ATTEMPTS,
};
pub use reader::{FileReader, ReadFailure};
pub use settings::{EngineSource, FileSettings, WorkerProgram};
pub use storage::{open_bucket, s3_config, self_test, store_id, PlacedStore, TenantStores};
pub use transcription::TranscriptionEndpoint;
pub use vision::VisionEndpoint;
