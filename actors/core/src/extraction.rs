//! Extraction (asynchronous remember) as a job kind.
//!
//! A job is persisted (`queued`) before the request is answered, then its key is queued
//! on the job system. An attempt stores `processing` with its attempt count before it
//! calls the extractor, so a crash mid-attempt counts; it ends `done` with the facts or
//! `failed` with a reason. A worker that dies mid-job is replaced and the job runs again,
//! until it has been started [`EXTRACT_JOB_MAX_ATTEMPTS`] times; then it is failed with
//! the last reason. Finished jobs are pruned after the retention by a recurring task.
//!
//! The kind holds the job store and a [`Remember`]: the one capability a job needs, not
//! the service facade.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memvault_jobs::{Backoff, Failure, JobKind, Outcome, PausePolicy, Pending, RetryPolicy};
use memvault_storage::{CollectionName, CreatedBy, ExtractJobRecord, JobState, Store, TenantId};
use memvault_types::limits::EXTRACT_JOB_MAX_ATTEMPTS;

use crate::call::blocking;
use crate::error::{Error, Result};
use crate::memory::{RememberInput, RememberOutcome};

/// Retries of a job whose worker died, and restarts of that worker.
const BACKOFF: Backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(10));

/// A job: its tenant and id.
pub type ExtractJobKey = (TenantId, String);

/// Extracts facts from content and stores them in a collection: what a job runs.
#[async_trait]
pub trait Remember: Send + Sync + 'static {
    async fn remember_as(
        &self,
        tenant: &TenantId,
        created_by: CreatedBy,
        collection: &CollectionName,
        input: RememberInput,
    ) -> Result<RememberOutcome>;
}

/// Consecutive jobs of a tenant that found its LLM unreachable, after which the tenant's
/// extraction pauses.
pub const PAUSE_AFTER_UNREACHABLE: u32 = 5;

/// The extraction job kind. Its jobs are grouped by tenant: a tenant whose LLM cannot be
/// reached keeps its jobs queued (never failed for it), pauses after
/// [`PAUSE_AFTER_UNREACHABLE`] of them in a row, and resumes when a probe job gets
/// through or its LLM settings change.
pub struct ExtractionJobs {
    /// Where jobs and their states live.
    store: Arc<dyn Store>,
    /// Runs the extraction itself.
    remember: Arc<dyn Remember>,
    /// How long a tenant's extraction pauses.
    pause_for: Duration,
}

impl ExtractionJobs {
    pub fn new(store: Arc<dyn Store>, remember: Arc<dyn Remember>, pause_for: Duration) -> Self {
        Self {
            store,
            remember,
            pause_for,
        }
    }

    async fn put(&self, job: ExtractJobRecord) -> Result<()> {
        let store = self.store.clone();
        blocking(move || store.put_job(&job)).await
    }

    async fn load(&self, key: &ExtractJobKey) -> Result<Option<ExtractJobRecord>> {
        let (store, (tenant, id)) = (self.store.clone(), key.clone());
        blocking(move || store.job(&tenant, &id)).await
    }
}

#[async_trait]
impl JobKind for ExtractionJobs {
    type Key = ExtractJobKey;
    const NAME: &'static str = "extraction";

    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: EXTRACT_JOB_MAX_ATTEMPTS,
            backoff: BACKOFF,
        }
    }

    fn pause_policy(&self) -> Option<PausePolicy> {
        Some(PausePolicy {
            after_failures: PAUSE_AFTER_UNREACHABLE,
            pause_for: Some(self.pause_for),
        })
    }

    fn group(&self, key: &ExtractJobKey) -> String {
        key.0.as_str().to_owned()
    }

    async fn unfinished(&self) -> std::result::Result<Vec<Pending<ExtractJobKey>>, Failure> {
        let store = self.store.clone();
        let jobs = blocking(move || store.unfinished_jobs()).await?;
        let now = Utc::now();
        Ok(jobs
            .into_iter()
            .map(|job| Pending {
                key: (job.tenant_id, job.id),
                attempts: job.attempts,
                due: now,
            })
            .collect())
    }

    async fn run(&self, key: &ExtractJobKey, _attempt: u32) -> Outcome {
        let mut job = match self.load(key).await {
            Ok(Some(job)) if !job.state.is_finished() => job,
            // Pruned, or finished before a crash lost the queue's word of it.
            Ok(_) => return Outcome::Done,
            Err(error) => {
                return Outcome::Retry(Failure::from(error).context("the job could not be read"))
            }
        };
        job.state = JobState::Processing;
        job.attempts += 1;
        job.updated_at = Utc::now();
        if let Err(error) = self.put(job.clone()).await {
            tracing::warn!(job = %job.id, %error, "job state not saved");
        }
        let input = RememberInput {
            content: job.content.clone(),
            importance: job.importance,
        };
        let outcome = self
            .remember
            .remember_as(
                &job.tenant_id,
                job.created_by.clone(),
                &job.collection,
                input,
            )
            .await;
        let result = match outcome {
            Ok(outcome) => {
                job.state = JobState::Done;
                job.facts = outcome.facts;
                job.detail = outcome.detail;
                Outcome::Done
            }
            Err(error @ Error::LlmUnreachable(_)) => {
                // Not the job's fault: it waits, and this attempt is not counted.
                job.state = JobState::Queued;
                job.attempts = job.attempts.saturating_sub(1);
                job.detail = Some(format!("waiting for the extraction LLM: {error}"));
                Outcome::Deferred(error.into())
            }
            Err(error) => {
                job.state = JobState::Failed;
                job.detail = Some(error.to_string());
                Outcome::Failed(error.into())
            }
        };
        job.updated_at = Utc::now();
        if let Err(error) = self.put(job.clone()).await {
            tracing::warn!(job = %job.id, %error, "finished job not saved; it runs again after a restart");
        }
        tracing::debug!(job = %job.id, state = job.state.as_str(), "extraction job finished");
        result
    }

    /// The attempt count was stored when the attempt started; the job stays
    /// `processing` until it runs again.
    async fn retry_at(
        &self,
        _key: &ExtractJobKey,
        _attempts: u32,
        _due: DateTime<Utc>,
        _reason: &Failure,
    ) {
    }

    async fn give_up(&self, key: &ExtractJobKey, attempts: u32, reason: &Failure) {
        let job = match self.load(key).await {
            Ok(Some(job)) => job,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(job = %key.1, %error, "failed job not saved");
                return;
            }
        };
        let failed = ExtractJobRecord {
            state: JobState::Failed,
            attempts: attempts.max(job.attempts),
            detail: Some(format!(
                "extraction failed {attempts} times; last failure: {reason}"
            )),
            updated_at: Utc::now(),
            ..job
        };
        if let Err(error) = self.put(failed).await {
            tracing::warn!(job = %key.1, %error, "failed job not saved");
        }
    }
}
