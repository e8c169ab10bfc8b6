//! memvault-sync: the connector runtime. Connections, their runs (scheduled ones as jobs
//! on the job system, "sync now" joining a run in progress), OAuth flows and renewal,
//! and the sink that turns a provider's records into memories.
//!
//! It sits above `memvault-core` and beside `memvault-connectors` (the providers, the
//! sync engine and OAuth, which know nothing of memvault's service): the runtime writes
//! memories through core's public services (`Memories` under an access proof from the
//! `Authorizer`), and core knows nothing of connectors. The binary starts it after the
//! service ([`start`]) and stops it before ([`Connections::stop`]).
//!
//! # Layout
//!
//! - [`settings`]: [`ConnectorSettings`] from `[connectors]`, the provider catalog, and
//!   when a connection is due (its interval, at once when a checkpoint is left).
//! - [`connections`]: [`Connections`], the use cases, a run (credentials opened, an OAuth
//!   token renewed, the engine run with the sink, the run and status recorded), and
//!   `ConnectionSink`.
//! - [`jobs`]: [`ConnectorSyncs`], connector sync as a job kind: retries after
//!   [`SYNC_RETRY`], the pause after [`settings::AUTO_PAUSE_AFTER`] consecutive failures
//!   (manual runs included) until a manual sync succeeds.

pub mod connections;
pub mod jobs;
pub mod settings;

use std::sync::Arc;

pub use connections::{ConnectionView, Connections, NewConnection, ProviderRuns, SyncOutcome};
pub use jobs::{ConnectorSyncs, QueuedSyncs};
pub use settings::{ConnectorSettings, ProviderCatalog, ProviderSettings, SYNC_RETRY};

use memvault_core::{Error, Memvault, Result};
use memvault_jobs::{JobMetricsSnapshot, JobQueue, Recurring};

/// What the runtime owns, shared by every [`Connections`] handle.
pub struct Runtime {
    settings: ConnectorSettings,
    /// The paced client every connector calls its provider through.
    http: memvault_connectors::Http,
    /// One lock per connection: its runs never overlap.
    locks: connections::RunLocks,
    /// Runs scheduled syncs (`concurrent_runs` workers).
    queue: JobQueue<ConnectorSyncs>,
    /// Connections queued or running on `queue`.
    queued: QueuedSyncs,
}

/// Starts the connector runtime over `service`: its sync queue (which resumes the runs a
/// crash cut short) and the scheduler's tick on the service's scheduler.
pub async fn start(service: &Memvault, settings: ConnectorSettings) -> Result<Connections> {
    let started = |error: memvault_jobs::JobError| Error::StartFailed {
        what: "the connector sync queue".to_owned(),
        reason: error.to_string(),
    };
    let workers = settings.concurrent_runs.max(1);
    let tick = settings.tick;
    let http = settings
        .providers
        .iter()
        .filter_map(|(kind, provider)| Some((*kind, provider.budget?)))
        .fold(
            memvault_connectors::Http::standard(),
            |http, (kind, budget)| http.with_budget(kind, budget),
        );
    let runtime = Arc::new(Runtime {
        settings,
        http,
        locks: connections::RunLocks::default(),
        queue: JobQueue::open().await.map_err(started)?,
        queued: QueuedSyncs::default(),
    });
    let connections = Connections {
        root: service.clone(),
        runtime: runtime.clone(),
    };
    let retry = runtime.settings.retry;
    let kind = ConnectorSyncs::new(connections.clone(), runtime.queued.clone(), retry);
    runtime
        .queue
        .run(Arc::new(kind), workers)
        .await
        .map_err(started)?;
    let queue = runtime.queue.clone();
    service.on_adopt(Box::new(move || {
        let _ = queue.rescan();
    }));
    let ticking = connections.clone();
    service.scheduler().every(
        Recurring {
            name: "connector_sync",
            period: tick,
            jitter: tick / 10,
            run_at_start: true,
        },
        move || {
            let connections = ticking.clone();
            async move { connections.tick().await }
        },
    );
    Ok(connections)
}

impl Connections {
    /// Stops the sync workers (a run cut short resumes from its checkpoint at the next
    /// start); the tick stops with the service's scheduler.
    pub async fn stop(&self) {
        self.runtime.queue.stop().await;
    }

    /// The sync job kind's figures, for the operator metrics.
    pub fn job_metrics(&self) -> JobMetricsSnapshot {
        self.runtime.queue.metrics()
    }

    /// Whether the sync queue's supervisor is alive (the operator's watch of it).
    pub fn is_running(&self) -> bool {
        self.runtime.queue.is_running()
    }
}
