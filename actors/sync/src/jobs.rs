//! Connector syncs as a job kind: the scheduler's tick submits each due connection, and
//! the job system runs it on its supervised workers (at most `concurrent_runs` at once).
//!
//! A job is one run of one connection ([`Connections::run`]): the run is recorded on the
//! connection (its run list, its status, its consecutive failures and the pause after
//! [`super::AUTO_PAUSE_AFTER`], SPEC's state machine) whatever happens, a panic included,
//! so the job itself never retries: the next try is the connection's own `next_sync_at`,
//! [`SYNC_RETRY`] after a failure. A connection is never queued twice, and its runs never
//! overlap a manual "sync now" (which joins a run in progress).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use dashmap::DashSet;
use memvault_jobs::{Failure, JobKind, Outcome, Pending, RetryPolicy};
use memvault_storage::{ConnectionStatus, TenantId};
use memvault_types::ErrorCode;

use crate::settings::SYNC_RETRY;
use crate::Connections;

/// A job: the connection's tenant and id.
pub type SyncKey = (TenantId, String);

/// Connections queued or running, shared by the tick (which submits a connection only
/// when it can claim it) and the job kind (which releases it when its run ends).
#[derive(Debug, Default, Clone)]
pub struct QueuedSyncs(Arc<DashSet<String>>);

impl QueuedSyncs {
    /// Marks the connection queued; false when it already was.
    pub fn claim(&self, connection: &str) -> bool {
        self.0.insert(connection.to_owned())
    }

    pub fn release(&self, connection: &str) {
        self.0.remove(connection);
    }
}

/// The connector sync job kind.
pub struct ConnectorSyncs {
    connections: Connections,
    queued: QueuedSyncs,
}

impl ConnectorSyncs {
    pub fn new(connections: Connections, queued: QueuedSyncs) -> Self {
        Self {
            connections,
            queued,
        }
    }
}

#[async_trait]
impl JobKind for ConnectorSyncs {
    type Key = SyncKey;
    const NAME: &'static str = "connector_sync";

    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 1,
            backoff: SYNC_RETRY,
        }
    }

    fn group(&self, key: &SyncKey) -> String {
        key.1.clone()
    }

    /// Runs a crash cut short: active connections with a checkpoint resume at once.
    async fn unfinished(&self) -> Result<Vec<Pending<SyncKey>>, Failure> {
        let connections = self.connections.all().await?;
        Ok(connections
            .into_iter()
            .filter(|record| {
                record.status == ConnectionStatus::Active && record.checkpoint.is_some()
            })
            .filter(|record| self.queued.claim(&record.id))
            .map(|record| Pending::new((record.tenant_id, record.id)))
            .collect())
    }

    async fn run(&self, key: &SyncKey, _attempt: u32) -> Outcome {
        let outcome = self.connections.run_scheduled(&key.0, &key.1).await;
        self.queued.release(&key.1);
        match outcome {
            Ok(Some(status)) if status != ConnectionStatus::Active => {
                // Recorded on the connection, which is retried on its own schedule.
                Outcome::Failed(Failure::new(
                    ErrorCode::ConnectorUpstreamFailed,
                    format!("the sync ended {}", status.as_str()),
                ))
            }
            Ok(_) => Outcome::Done,
            Err(error) => Outcome::Failed(error.into()),
        }
    }

    /// Never called: a run is never retried as a job (see the module).
    async fn retry_at(
        &self,
        key: &SyncKey,
        _attempts: u32,
        _due: DateTime<Utc>,
        _reason: &Failure,
    ) {
        self.queued.release(&key.1);
    }

    /// The worker died outside the run's own guard: the connection is free to be
    /// scheduled again.
    async fn give_up(&self, key: &SyncKey, _attempts: u32, _reason: &Failure) {
        self.queued.release(&key.1);
    }
}
