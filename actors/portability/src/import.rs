//! Large imports as a job kind.
//!
//! `POST /v1/memory/admin/import` with more than [`IMPORT_SYNC_MAX`] memories stores the
//! import (its progress record and its validated items, in one write) and answers 202;
//! [`ImportJobs`] then creates its collections and stores its items in batches, writing
//! the cursor after each, and `GET /v1/memory/admin/import/{id}` shows how far it is.
//!
//! Every item's memory id is derived from the import and the item's index
//! ([`item_id`]): a batch cut by a crash is replaced when the import resumes from its
//! cursor, so each item is stored once. A refusal (the key revoked, a tier limit, a
//! collection the key may no longer write) fails the import for good with its reason;
//! anything else is retried.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memvault_jobs::{blocking, Backoff, Failure, JobKind, Outcome, Pending, RetryPolicy};
use memvault_storage::{ImportJobRecord, ImportPayload, ImportState, Store, TenantId};
use sha2::{Digest, Sha256};

/// Most memories an import stores in the request; a larger one is a job.
pub const IMPORT_SYNC_MAX: usize = 1_000;

/// What identifies an import job: its tenant and id.
pub type ImportKey = (TenantId, String);

/// The memory id of the import's item at `index`: the same on every attempt.
pub fn item_id(import: &str, index: usize) -> String {
    let digest = Sha256::digest(format!("memvault-import/{import}/{index}").as_bytes());
    let mut bytes = [0_u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Uuid::from_bytes(bytes).to_string()
}

/// What stores an import's items: the service, handed to the kind as this trait.
#[async_trait]
pub trait ImportRunner: Send + Sync + 'static {
    /// Creates the import's missing collections and stores its items `from..to` with
    /// their [`item_id`]s, replacing any an earlier attempt stored.
    async fn store(
        &self,
        job: &ImportJobRecord,
        payload: &ImportPayload,
        from: usize,
        to: usize,
    ) -> Result<(), Failure>;
}

/// The import job kind.
pub struct ImportJobs {
    store: Arc<dyn Store>,
    runner: Arc<dyn ImportRunner>,
    /// Items stored per write.
    batch: usize,
}

impl ImportJobs {
    pub fn new(store: Arc<dyn Store>, runner: Arc<dyn ImportRunner>, batch: usize) -> Self {
        Self {
            store,
            runner,
            batch: batch.max(1),
        }
    }

    async fn save(&self, job: &ImportJobRecord) -> Result<(), Failure> {
        let (store, job) = (self.store.clone(), job.clone());
        blocking(move || store.put_import(&job))
            .await
            .map_err(|error| error.context("the import's progress could not be stored"))
    }

    async fn fail(&self, mut job: ImportJobRecord, failure: Failure) -> Outcome {
        job.state = ImportState::Failed;
        job.detail = Some(failure.to_string());
        job.updated_at = Utc::now();
        match self.save(&job).await {
            Ok(()) => Outcome::Failed(failure),
            Err(reason) => Outcome::Retry(reason),
        }
    }
}

/// Whether an error is a refusal that trying again cannot change.
fn is_refusal(failure: &Failure) -> bool {
    failure.code.status() < 500
}

#[async_trait]
impl JobKind for ImportJobs {
    type Key = ImportKey;
    const NAME: &'static str = "import";

    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 10,
            backoff: Backoff::new(Duration::from_secs(1), Duration::from_secs(120)),
        }
    }

    fn group(&self, key: &ImportKey) -> String {
        key.0.to_string()
    }

    async fn unfinished(&self) -> Result<Vec<Pending<ImportKey>>, Failure> {
        let store = self.store.clone();
        let jobs = blocking(move || store.unfinished_imports()).await?;
        Ok(jobs
            .into_iter()
            .map(|job| Pending {
                attempts: job.attempts,
                due: Utc::now(),
                key: (job.tenant_id, job.id),
            })
            .collect())
    }

    async fn run(&self, key: &ImportKey, attempt: u32) -> Outcome {
        let (store, (tenant, id)) = (self.store.clone(), key.clone());
        let loaded = blocking(move || -> memvault_storage::error::Result<_> {
            Ok((
                store.import_job(&tenant, &id)?,
                store.import_payload(&tenant, &id)?,
            ))
        })
        .await;
        let (mut job, payload) = match loaded {
            Ok((Some(job), _)) if job.state.is_finished() => return Outcome::Done,
            Ok((Some(job), Some(payload))) => (job, payload),
            Ok((Some(job), None)) => {
                return self
                    .fail(
                        job,
                        Failure::internal("the import's items are gone from the store").permanent(),
                    )
                    .await
            }
            // Gone (its account was erased).
            Ok((None, _)) => return Outcome::Done,
            Err(error) => return Outcome::Retry(error.context("the import could not be read")),
        };
        job.state = ImportState::Running;
        job.attempts = attempt;
        job.updated_at = Utc::now();
        if let Err(reason) = self.save(&job).await {
            return Outcome::Retry(reason);
        }
        while job.cursor < payload.items.len() {
            let to = (job.cursor + self.batch).min(payload.items.len());
            match self.runner.store(&job, &payload, job.cursor, to).await {
                Ok(()) => {}
                Err(error) if is_refusal(&error) => {
                    return self.fail(job, error.permanent()).await;
                }
                Err(error) => return Outcome::Retry(error),
            }
            job.cursor = to;
            job.updated_at = Utc::now();
            if let Err(reason) = self.save(&job).await {
                return Outcome::Retry(reason);
            }
        }
        job.state = ImportState::Done;
        job.updated_at = Utc::now();
        match self.save(&job).await {
            Ok(()) => {
                tracing::info!(tenant = %job.tenant_id, import = %job.id, items = job.total, "import done");
                Outcome::Done
            }
            Err(reason) => Outcome::Retry(reason),
        }
    }

    async fn retry_at(
        &self,
        key: &ImportKey,
        attempts: u32,
        _due: DateTime<Utc>,
        reason: &Failure,
    ) {
        tracing::warn!(tenant = %key.0, import = %key.1, attempts, %reason, "import interrupted; retrying");
    }

    async fn give_up(&self, key: &ImportKey, attempts: u32, reason: &Failure) {
        let (store, (tenant, id)) = (self.store.clone(), key.clone());
        let detail = reason.to_string();
        let saved = blocking(move || {
            let Some(mut job) = store.import_job(&tenant, &id)? else {
                return Ok(());
            };
            if job.state.is_finished() {
                return Ok(());
            }
            job.state = ImportState::Failed;
            job.detail = Some(detail);
            job.updated_at = Utc::now();
            store.put_import(&job)
        })
        .await;
        tracing::error!(tenant = %key.0, import = %key.1, attempts, %reason, saved = saved.is_ok(), "import given up");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_ids_are_stable_per_import_and_index_and_distinct() {
        assert_eq!(item_id("imp_1", 7), item_id("imp_1", 7));
        assert_ne!(item_id("imp_1", 7), item_id("imp_1", 8));
        assert_ne!(item_id("imp_1", 7), item_id("imp_2", 7));
        assert_eq!(item_id("imp_1", 0).len(), 36);
    }
}
