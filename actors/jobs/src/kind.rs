//! What a kind of job tells the job system: where its jobs live, how one attempt runs,
//! how a failure is recorded.

use std::fmt::Debug;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memvault_types::{Backoff, Failure};

/// How a kind's failed jobs are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts a job may start, the first included; after the last failure it is given
    /// up.
    pub max_attempts: u32,
    /// The wait before the next attempt, by failures so far; it also paces the restarts of
    /// failed workers.
    pub backoff: Backoff,
}

/// When a group of jobs stops: after `after_failures` consecutive failures in the group,
/// its jobs wait; the other groups run on. With `pause_for`, the pause ends after that
/// long and one job of the group runs alone as the probe: if it fails the group is paused
/// again at once, if it succeeds the group runs as before. Without, the group stays
/// paused until [`crate::JobQueue::resume`] (which also ends a timed pause early, for
/// instance when the cause was a setting that changed) or a success reported with
/// [`crate::JobQueue::report`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PausePolicy {
    pub after_failures: u32,
    pub pause_for: Option<Duration>,
}

/// A job as the queue holds it: the kind's key (small: the job itself stays in the
/// kind's store) and what scheduling needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending<K> {
    pub key: K,
    /// Attempts already started (a crash mid-attempt counts).
    pub attempts: u32,
    /// Not started before this time.
    pub due: DateTime<Utc>,
}

impl<K> Pending<K> {
    /// A job not tried yet, due now.
    pub fn new(key: K) -> Self {
        Self {
            key,
            attempts: 0,
            due: Utc::now(),
        }
    }
}

/// How one attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The job is finished; the kind has recorded its result.
    Done,
    /// This attempt failed; the job is tried again after the back-off while attempts
    /// remain, else given up with this reason.
    Retry(Failure),
    /// The job failed for good and the kind has recorded why; it is not tried again.
    Failed(Failure),
    /// Something the job needs is down (an LLM endpoint), not the job: the attempt is not
    /// counted, the job runs again after the first back-off step, and the failure counts
    /// toward its group's pause. The job is never given up for this.
    Deferred(Failure),
}

/// One kind of background work.
///
/// The queue calls these methods from its workers, never two at once for one job. Each
/// method persists what it must before it returns: the job system keeps only keys in
/// memory, so the kind's store is the truth after a crash.
#[async_trait]
pub trait JobKind: Send + Sync + 'static {
    /// What identifies one job in the kind's store.
    type Key: Clone + Debug + PartialEq + Send + Sync + 'static;

    /// The kind's name in logs and metrics (snake_case).
    const NAME: &'static str;

    fn policy(&self) -> RetryPolicy;

    /// When groups of this kind pause; `None` (the default) never pauses.
    fn pause_policy(&self) -> Option<PausePolicy> {
        None
    }

    /// The group a job's failures count against (a tenant, a connector); the default is
    /// one group for the whole kind.
    fn group(&self, _key: &Self::Key) -> String {
        String::new()
    }

    /// Every job a previous run left unfinished, in the order to run them.
    async fn unfinished(&self) -> Result<Vec<Pending<Self::Key>>, Failure>;

    /// The consecutive failures of each group as the kind stored them, so a count (and a
    /// pause: a group at or over [`PausePolicy::after_failures`] starts paused) outlives a
    /// restart. The default: none.
    async fn failing_groups(&self) -> Result<Vec<(String, u32)>, Failure> {
        Ok(Vec::new())
    }

    /// The group has just paused after `reason`: a kind whose pause is visible (a
    /// connection's status) stores it. The default does nothing.
    async fn paused(&self, _group: &str, _reason: &Failure) {}

    /// One attempt; `attempt` is 1-based. A kind whose attempts must count across a crash
    /// stores the attempt before it starts any work.
    async fn run(&self, key: &Self::Key, attempt: u32) -> Outcome;

    /// The job has failed `attempts` times and runs again at `due`: store that.
    async fn retry_at(&self, key: &Self::Key, attempts: u32, due: DateTime<Utc>, reason: &Failure);

    /// The job failed for good after `attempts` attempts: record why, or drop it.
    async fn give_up(&self, key: &Self::Key, attempts: u32, reason: &Failure);
}
