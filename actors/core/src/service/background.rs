//! The service's background work as one whole: core's job queues (the crates above core,
//! intake, sync and accounts, run and stop their own), the resident loops (the
//! audit writer, the webhook recorder) and the recurring scheduler. The operator reads
//! their figures and health here; shutdown stops them in order.

use std::sync::Arc;
use std::time::Duration;

use memvault_events::EventBroker;
use memvault_jobs::{JobMetricsSnapshot, Resident, Scheduler};

use super::database::DatabaseQueue;
use super::tree::Tree;
use super::{ExtractionQueue, ImportQueue, ReembedQueue, WebhookQueue};
use crate::audit::AuditLog;

/// Every queue and resident loop of the service: see the module docs.
#[derive(Clone)]
pub struct Background {
    pub(super) extraction: ExtractionQueue,
    pub(super) webhooks: WebhookQueue,
    pub(super) reembed: ReembedQueue,
    pub(super) import: ImportQueue,
    /// Switches of tenants' data to and from their own databases (when offered).
    pub(super) database: Option<DatabaseQueue>,
    pub(super) audit: Arc<AuditLog>,
    /// The subscriber that turns events into outbox deliveries; awaited at shutdown so
    /// the last writes' events reach the outbox.
    pub(super) webhook_recorder: Arc<Resident>,
    /// Where collection actors publish memory changes.
    pub(super) events: EventBroker,
    /// Recurring work: job and audit pruning, the status self-checks.
    pub(super) scheduler: Arc<Scheduler>,
    /// The rescans of the queues above core (intake, sync, accounts), which register
    /// them with [`super::Memvault::on_adopt`].
    pub(super) rescans: Arc<std::sync::Mutex<Vec<Rescan>>>,
}

/// Queues a job queue's unfinished jobs again ([`memvault_jobs::JobQueue::rescan`]).
pub type Rescan = Box<dyn Fn() + Send + Sync>;

impl Background {
    /// Every job kind's counters, since the process started.
    pub(crate) fn job_metrics(&self) -> Vec<(&'static str, JobMetricsSnapshot)> {
        let mut metrics = vec![
            ("extraction", self.extraction.metrics()),
            ("webhook_delivery", self.webhooks.metrics()),
            ("reembed", self.reembed.metrics()),
            ("import", self.import.metrics()),
        ];
        if let Some(database) = &self.database {
            metrics.push(("database_switch", database.metrics()));
        }
        metrics
    }

    /// The job kinds whose supervisor is down.
    pub(crate) fn queues_down(&self) -> Vec<&'static str> {
        let queues = [
            ("extraction", self.extraction.is_running()),
            ("webhook_delivery", self.webhooks.is_running()),
            ("reembed", self.reembed.is_running()),
            ("import", self.import.is_running()),
            (
                "database_switch",
                self.database
                    .as_ref()
                    .is_none_or(|queue| queue.is_running()),
            ),
        ];
        queues
            .into_iter()
            .filter(|(_, running)| !running)
            .map(|(kind, _)| kind)
            .collect()
    }

    /// Several nodes: every queue asks its kind for unfinished jobs again, so the work of
    /// a tenant this node has just taken over resumes here.
    pub(crate) fn rescan(&self) {
        let _ = self.extraction.rescan();
        let _ = self.webhooks.rescan();
        let _ = self.reembed.rescan();
        let _ = self.import.rescan();
        for rescan in self
            .rescans
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
        {
            rescan();
        }
    }

    /// The resident loops.
    pub(crate) fn residents(&self) -> [&Resident; 2] {
        [self.audit.writer(), &self.webhook_recorder]
    }

    /// Stops the work in order: no new jobs, the actor tree (each actor drains the message
    /// it is handling), and last the events of the final writes into the outbox (drained,
    /// not dropped); attempts still in flight are sent again at the next start.
    pub(crate) async fn shutdown(&self, tree: &Tree) {
        self.scheduler.stop();
        self.audit.stop().await;
        self.extraction.stop().await;
        self.import.stop().await;
        self.reembed.stop().await;
        if let Some(database) = &self.database {
            database.stop().await;
        }
        tree.root()
            .stop_and_wait(
                Some("shutting down".to_owned()),
                Some(Duration::from_secs(30)),
            )
            .await
            .ok();
        self.events.close();
        self.webhook_recorder.join(Duration::from_secs(10)).await;
        self.webhooks.stop().await;
    }
}
