//! What the binary configures for files: limits, the worker program, the engines.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use memvault_ingest::worker::WorkerLimits;
use memvault_ingest::{Engines, Limits};

/// Locates (fetching on first use) the engines a worker may drive. Called on a blocking
/// thread before each extraction; the binary caches what it found.
pub type EngineSource = Arc<dyn Fn() -> Engines + Send + Sync>;

/// The program a worker process runs (`memvault ingest-worker`).
#[derive(Debug, Clone)]
pub struct WorkerProgram {
    pub program: std::path::PathBuf,
    pub args: Vec<String>,
}

/// Limits and parts of the file pipeline.
#[derive(Clone)]
pub struct FileSettings {
    /// The per-file limit (SPEC: 10 MB; 10 MiB here, the more lenient reading).
    pub max_file_bytes: u64,
    /// Files in one folder upload (SPEC: 50).
    pub folder_max_files: usize,
    /// How long a presigned URL works.
    pub url_expiry: Duration,
    /// Extractions at once (each is a process).
    pub workers: usize,
    /// `None` extracts in this process (tests of the service alone); the binary always
    /// names itself.
    pub worker: Option<WorkerProgram>,
    /// What each worker process may use.
    pub worker_limits: WorkerLimits,
    /// Caps on what one file may expand to.
    pub limits: Limits,
    /// The engines (pdfium, tesseract, Moonshine).
    pub engines: EngineSource,
    /// An item not finished this long after it started is failed by the watchdog.
    pub item_deadline: Duration,
    /// Finished batches are kept (for polling) this long.
    pub batch_retention: Duration,
    /// Audio goes here instead of the offline model, when set.
    pub transcription: Option<super::TranscriptionEndpoint>,
    /// Images are captioned here (besides OCR), when set.
    pub vision: Option<super::VisionEndpoint>,
}

impl fmt::Debug for FileSettings {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("FileSettings")
            .field("max_file_bytes", &self.max_file_bytes)
            .field("folder_max_files", &self.folder_max_files)
            .field("url_expiry", &self.url_expiry)
            .field("workers", &self.workers)
            .field("worker", &self.worker)
            .field("worker_limits", &self.worker_limits)
            .field("item_deadline", &self.item_deadline)
            .finish_non_exhaustive()
    }
}

impl Default for FileSettings {
    fn default() -> Self {
        Self {
            max_file_bytes: memvault_types::limits::FILE_MAX_BYTES,
            folder_max_files: memvault_types::limits::FOLDER_MAX_FILES,
            url_expiry: Duration::from_secs(15 * 60),
            workers: 2,
            worker: None,
            worker_limits: WorkerLimits::default(),
            limits: Limits::default(),
            engines: Arc::new(Engines::default),
            item_deadline: Duration::from_secs(15 * 60),
            batch_retention: Duration::from_secs(7 * 24 * 3600),
            transcription: None,
            vision: None,
        }
    }
}
