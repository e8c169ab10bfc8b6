//! What each job kind has done, for `GET /v1/memory/admin/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

use memvault_types::RestartPolicy;
use serde::Serialize;

/// Counters of one kind; gauges (`queued`, `running`, `paused_groups`) are set by the
/// supervisor, the rest only grow.
#[derive(Debug, Default)]
pub struct JobMetrics {
    queued: AtomicU64,
    running: AtomicU64,
    paused_groups: AtomicU64,
    done: AtomicU64,
    retried: AtomicU64,
    failed: AtomicU64,
    restarts: AtomicU64,
    pauses: AtomicU64,
    /// The workers' failures, for the restart back-off and the degraded state.
    pub(crate) workers: memvault_types::Supervised,
}

/// A copy of a kind's counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobMetricsSnapshot {
    /// Jobs waiting for a worker (due or not yet due).
    pub queued: u64,
    /// Jobs a worker is running now.
    pub running: u64,
    /// Groups (tenants, connectors) paused now after consecutive failures.
    pub paused_groups: u64,
    /// Jobs finished successfully.
    pub done: u64,
    /// Failed attempts that were scheduled again.
    pub retried: u64,
    /// Jobs that failed for good (given up or failed by the kind).
    pub failed: u64,
    /// Workers restarted after a panic or a kill.
    pub restarts: u64,
    /// Times a group was paused.
    pub pauses: u64,
    /// Workers keep dying (see `memvault_types::supervision`): the kind is degraded.
    pub degraded: bool,
}

impl JobMetrics {
    pub fn snapshot(&self) -> JobMetricsSnapshot {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        JobMetricsSnapshot {
            queued: read(&self.queued),
            running: read(&self.running),
            paused_groups: read(&self.paused_groups),
            done: read(&self.done),
            retried: read(&self.retried),
            failed: read(&self.failed),
            restarts: read(&self.restarts),
            pauses: read(&self.pauses),
            degraded: self
                .workers
                .is_degraded(&RestartPolicy::ACTORS, std::time::Instant::now()),
        }
    }

    pub(crate) fn set_gauges(&self, queued: usize, running: usize, paused_groups: usize) {
        self.queued.store(queued as u64, Ordering::Relaxed);
        self.running.store(running as u64, Ordering::Relaxed);
        self.paused_groups
            .store(paused_groups as u64, Ordering::Relaxed);
    }

    pub(crate) fn count(&self, event: Event) {
        let counter = match event {
            Event::Done => &self.done,
            Event::Retried => &self.retried,
            Event::Failed => &self.failed,
            Event::Restart => &self.restarts,
            Event::Pause => &self.pauses,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Event {
    Done,
    Retried,
    Failed,
    Restart,
    Pause,
}
