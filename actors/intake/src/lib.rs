//! memvault-intake: files that become memories. A file drop (now, or as a batch the
//! ingest job works through), presigned uploads and their completion, a folder, a memory
//! with files attached, one file added to or removed from a memory, and downloads through
//! memvault's own presigned URLs. Mail-in is `memvault-accounts`', which hands an
//! accepted message's parts to [`Files`] as a batch.
//!
//! It sits above `memvault-core`: memories are written through core's [`Memories`] under
//! an access proof, files are placed through core's [`Placement`] (which core keeps,
//! because deleting memories releases their files). The pipeline's parts below core
//! (reading in a worker, chunking, the ingest job kind) are `memvault-files`. The binary
//! starts intake after the service ([`start`]) and stops it before ([`Intake::stop`]).
//!
//! # Layout
//!
//! - [`files`]: [`Files`], the use cases of files, and a file's memories.
//! - [`ingest`]: the steps of one batch item, as the ingest job runs them.

pub mod files;
pub mod ingest;

use std::sync::Arc;

pub use files::{
    CompletedUpload, Download, FileResult, Files, Incoming, StagedFile, UploadSpec, UploadTicket,
};

use memvault_core::embedders::Embedders;
use memvault_core::{Error, Memories, Memvault, Placement, Result};
use memvault_files::{FileReader, FileSettings, IngestJobs};
use memvault_jobs::{JobMetricsSnapshot, JobQueue};
use memvault_storage::Store;
use memvault_types::clock::Clock;

/// What intake is configured with.
#[derive(Debug, Clone, Default)]
pub struct IntakeSettings {
    /// Files: limits, the worker, the engines.
    pub files: FileSettings,
}

/// What the files use cases need, built once by [`start`].
pub(crate) struct Parts {
    pub store: Arc<dyn Store>,
    pub memories: Memories,
    pub placement: Placement,
    pub embedders: Embedders,
    pub clock: Arc<dyn Clock>,
    /// Reads files in worker processes.
    pub reader: FileReader,
    pub settings: FileSettings,
    /// Asynchronous ingest batches.
    pub queue: JobQueue<IngestJobs<Files>>,
}

/// Intake, started: its use cases and its job queue.
#[derive(Clone)]
pub struct Intake {
    files: Files,
}

/// Starts intake over `service`: the ingest queue (which resumes the batches a crash cut
/// short) and the use cases.
pub async fn start(service: &Memvault, settings: IntakeSettings) -> Result<Intake> {
    let started = |error: memvault_jobs::JobError| Error::StartFailed {
        what: "the ingest queue".to_owned(),
        reason: error.to_string(),
    };
    let deadline = settings.files.item_deadline;
    let files = Files {
        parts: Arc::new(Parts {
            store: service.store().clone(),
            memories: service.memories(),
            placement: service.placement(),
            embedders: service.embedders().clone(),
            clock: service.clock(),
            reader: FileReader::new(settings.files.clone()),
            settings: settings.files,
            queue: JobQueue::open().await.map_err(started)?,
        }),
    };
    let kind = IngestJobs::new(service.store().clone(), Arc::new(files.clone()), deadline);
    files
        .parts
        .queue
        .run(Arc::new(kind), 1)
        .await
        .map_err(started)?;
    let queue = files.parts.queue.clone();
    service.on_adopt(Box::new(move || {
        let _ = queue.rescan();
    }));
    Ok(Intake { files })
}

impl Intake {
    /// Files: drop, uploads, attachments, downloads.
    pub fn files(&self) -> Files {
        self.files.clone()
    }

    /// The ingest job kind's counters, for the operator metrics.
    pub fn job_metrics(&self) -> JobMetricsSnapshot {
        self.files.parts.queue.metrics()
    }

    /// Whether the ingest queue's supervisor is up.
    pub fn is_running(&self) -> bool {
        self.files.parts.queue.is_running()
    }

    /// Stops the ingest queue; a batch in progress resumes at the next start.
    pub async fn stop(&self) {
        self.files.parts.queue.stop().await;
    }
}
