//! Connector syncs as a job kind: the scheduler's tick submits each due connection, and
//! the job system runs it on its supervised workers (at most `concurrent_runs` at once).
//!
//! A job is one run of one connection ([`Connections::run`]), grouped by connection. The
//! run is recorded on the connection (its run list, its status, its consecutive
//! failures) whatever happens, a panic included. The job system owns what follows a
//! failure, SPEC's connection state machine: the job is tried again after its back-off
//! ([`SYNC_RETRY`]: 1, 2, 4, ... minutes), and after [`AUTO_PAUSE_AFTER`] consecutive
//! failures of a connection ([`PausePolicy`] without an end) its group pauses until a
//! manual sync succeeds ([`Connections::sync`] reports manual runs to the queue, so they
//! count too); the kind stores the pause as the connection's status. Counts and pauses
//! outlive a restart ([`JobKind::failing_groups`]). A connection is never queued twice,
//! and its runs never overlap a manual "sync now" (which joins a run in progress).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use dashmap::DashSet;
use memvault_jobs::{Failure, JobKind, Outcome, PausePolicy, Pending, RetryPolicy};
use memvault_storage::{ConnectionStatus, TenantId};
use memvault_types::{Backoff, ErrorCode};

use crate::settings::AUTO_PAUSE_AFTER;
#[cfg(doc)]
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
    /// The back-off after a failure.
    retry: Backoff,
}

impl ConnectorSyncs {
    pub fn new(connections: Connections, queued: QueuedSyncs, retry: Backoff) -> Self {
        Self {
            connections,
            queued,
            retry,
        }
    }
}

/// The group of a connection's jobs: its tenant and id.
pub(crate) fn group_of(tenant: &TenantId, id: &str) -> String {
    format!("{tenant}/{id}")
}

#[async_trait]
impl JobKind for ConnectorSyncs {
    type Key = SyncKey;
    const NAME: &'static str = "connector_sync";

    /// Tried again until the connection pauses, never given up.
    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: u32::MAX,
            backoff: self.retry,
        }
    }

    fn pause_policy(&self) -> Option<PausePolicy> {
        Some(PausePolicy {
            after_failures: AUTO_PAUSE_AFTER,
            pause_for: None,
        })
    }

    fn group(&self, key: &SyncKey) -> String {
        group_of(&key.0, &key.1)
    }

    /// Runs a crash cut short (active connections with a checkpoint, at once) and
    /// failed connections waiting for their retry (at its time, with their failures).
    async fn unfinished(&self) -> Result<Vec<Pending<SyncKey>>, Failure> {
        let connections = self.connections.all().await?;
        Ok(connections
            .into_iter()
            .filter_map(|record| {
                let pending = match record.status {
                    ConnectionStatus::Active if record.checkpoint.is_some() => {
                        Pending::new((record.tenant_id.clone(), record.id.clone()))
                    }
                    ConnectionStatus::Error => Pending {
                        key: (record.tenant_id.clone(), record.id.clone()),
                        attempts: record.consecutive_failures,
                        due: record.next_sync_at.unwrap_or_else(Utc::now),
                    },
                    _ => return None,
                };
                self.queued.claim(&record.id).then_some(pending)
            })
            .collect())
    }

    async fn failing_groups(&self) -> Result<Vec<(String, u32)>, Failure> {
        let connections = self.connections.all().await?;
        Ok(connections
            .into_iter()
            .filter(|record| record.status != ConnectionStatus::Active)
            .map(|record| {
                let failures = match record.status {
                    // Paused however it got there: it stays paused.
                    ConnectionStatus::Paused => record.consecutive_failures.max(AUTO_PAUSE_AFTER),
                    _ => record.consecutive_failures,
                };
                (group_of(&record.tenant_id, &record.id), failures)
            })
            .collect())
    }

    async fn run(&self, key: &SyncKey, _attempt: u32) -> Outcome {
        match self.connections.run_scheduled(&key.0, &key.1).await {
            Ok(Some(status)) if status != ConnectionStatus::Active => {
                // Recorded on the connection; the job system retries it or pauses it.
                Outcome::Retry(Failure::new(
                    ErrorCode::ConnectorUpstreamFailed,
                    format!("the sync ended {}", status.as_str()),
                ))
            }
            Ok(_) => {
                self.queued.release(&key.1);
                Outcome::Done
            }
            Err(error) => Outcome::Retry(error.into()),
        }
    }

    /// The next try's time is the connection's `next_sync_at`.
    async fn retry_at(&self, key: &SyncKey, _attempts: u32, due: DateTime<Utc>, _reason: &Failure) {
        self.connections.retry_at(&key.0, &key.1, due).await;
    }

    /// Never called: the job is tried until its connection pauses.
    async fn give_up(&self, key: &SyncKey, _attempts: u32, _reason: &Failure) {
        self.queued.release(&key.1);
    }

    /// The connection's status becomes `paused`: the scheduler stops retrying it.
    async fn paused(&self, group: &str, _reason: &Failure) {
        self.connections.mark_paused(group).await;
    }
}
