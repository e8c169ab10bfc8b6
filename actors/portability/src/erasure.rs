//! Account erasure as a job kind.
//!
//! `POST /v1/memory/admin/delete-account` marks the tenant record (`erasing_since`) and
//! detaches the tenant at once: its handle leaves the service, its actors stop and its
//! keys leave the key directory, so no key of it authenticates from that moment. Then it
//! submits the tenant's id here. [`AccountErasures`] removes the rest, in steps that are
//! each safe to repeat:
//!
//! 1. detach the tenant again (a no-op unless the service restarted in between);
//! 2. remove its index directory;
//! 3. delete its files, in the platform's blob store and in its own bucket;
//! 4. purge its records from the store in bounded writes (`erasure_batch` records each,
//!    `erasure_pause` between them, so erasing a large account does not hog the disk);
//! 5. drop its queued mail, reveal links, mail-in address and the ids of the mail it
//!    received;
//! 6. delete the tenant record, last.
//!
//! The record is the job: while it says `erasing_since`, the tenant is not loaded at
//! start-up and its erasure is resumed, so a kill -9 anywhere leaves an erasure that
//! finishes after the restart, never half an account.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memvault_jobs::{blocking, Backoff, Failure, JobKind, Outcome, Pending, RetryPolicy};
use memvault_storage::{Store, TenantId, TenantSettings};

/// How erasures pace themselves (config section `[account]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErasureSettings {
    /// Store records removed per write.
    pub batch: usize,
    /// Wait between two writes.
    pub pause: Duration,
}

impl Default for ErasureSettings {
    fn default() -> Self {
        Self {
            batch: 1000,
            pause: Duration::ZERO,
        }
    }
}

/// The parts of an erasure that need the running service: what the job kind is handed
/// instead of the service itself.
#[async_trait]
pub trait ErasureSteps: Send + Sync + 'static {
    /// Takes the tenant out of the running service: its handle, its actors (stopped and
    /// awaited) and its keys. Nothing when it is not loaded.
    async fn detach(&self, tenant: &TenantId);
    /// Deletes the tenant's files from every store that holds them; `settings` names
    /// its own bucket, if any.
    async fn erase_files(
        &self,
        tenant: &TenantId,
        settings: &TenantSettings,
    ) -> Result<usize, Failure>;
}

/// The erasure job kind; a job's key is the tenant's id.
pub struct AccountErasures {
    store: Arc<dyn Store>,
    steps: Arc<dyn ErasureSteps>,
    /// The root of the collections' index directories (`{root}/{tenant}/...`); `None`
    /// keeps indexes in memory.
    index_root: Option<PathBuf>,
    settings: ErasureSettings,
}

impl AccountErasures {
    pub fn new(
        store: Arc<dyn Store>,
        steps: Arc<dyn ErasureSteps>,
        index_root: Option<PathBuf>,
        settings: ErasureSettings,
    ) -> Self {
        Self {
            store,
            steps,
            index_root,
            settings,
        }
    }

    async fn erase(&self, tenant: &TenantId) -> Result<(), Failure> {
        let failed = |what: &str| {
            let what = what.to_owned();
            move |failure: Failure| failure.context(&what)
        };
        let (store, id) = (self.store.clone(), tenant.clone());
        let record = blocking(move || -> memvault_storage::error::Result<_> {
            Ok(store.tenants()?.into_iter().find(|record| record.id == id))
        })
        .await
        .map_err(failed("the tenant record could not be read"))?;
        let Some(record) = record else {
            return Ok(()); // erased already
        };
        if record.erasing_since.is_none() {
            tracing::warn!(tenant = %tenant, "erasure of a tenant not marked for it; skipped");
            return Ok(());
        }
        self.steps.detach(tenant).await;

        if let Some(root) = &self.index_root {
            let directory = root.join(tenant.as_str());
            match tokio::fs::remove_dir_all(&directory).await {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    return Err(Failure::internal(format!(
                        "cannot remove {}: {error}",
                        directory.display()
                    )))
                }
            }
        }

        let (store, id) = (self.store.clone(), tenant.clone());
        let settings = blocking(move || store.tenant_settings(&id))
            .await
            .map_err(failed("the tenant settings could not be read"))?;
        let files = self
            .steps
            .erase_files(tenant, &settings)
            .await
            .map_err(failed("its files could not be deleted"))?;

        let mut records = 0;
        loop {
            let (store, id, batch) = (self.store.clone(), tenant.clone(), self.settings.batch);
            let removed = blocking(move || store.purge_tenant(&id, batch.max(1)))
                .await
                .map_err(failed("its records could not be removed"))?;
            if removed == 0 {
                break;
            }
            records += removed;
            if !self.settings.pause.is_zero() {
                tokio::time::sleep(self.settings.pause).await;
            }
        }

        let (store, id) = (self.store.clone(), tenant.clone());
        blocking(move || {
            store.delete_mails_of(&id)?;
            store.delete_reveals_of(&id)?;
            store.delete_sessions_of(&id)?;
            store.delete_email_address_of(&id)?;
            store.forget_events_of(&format!("email:{id}"))?;
            store.delete_tenant(&id)
        })
        .await
        .map_err(failed("its account records could not be removed"))?;
        tracing::info!(tenant = %tenant, files, records, "account erased");
        Ok(())
    }
}

#[async_trait]
impl JobKind for AccountErasures {
    type Key = TenantId;
    const NAME: &'static str = "erasure";

    fn policy(&self) -> RetryPolicy {
        // An erasure is never given up on for good: at worst it waits for the next
        // restart, which resumes it.
        RetryPolicy {
            max_attempts: 100,
            backoff: Backoff::new(Duration::from_secs(1), Duration::from_secs(300)),
        }
    }

    async fn unfinished(&self) -> Result<Vec<Pending<TenantId>>, Failure> {
        let store = self.store.clone();
        let records = blocking(move || store.tenants()).await?;
        Ok(records
            .into_iter()
            .filter(|record| record.erasing_since.is_some())
            .map(|record| Pending::new(record.id))
            .collect())
    }

    async fn run(&self, tenant: &TenantId, _attempt: u32) -> Outcome {
        match self.erase(tenant).await {
            Ok(()) => Outcome::Done,
            Err(reason) => Outcome::Retry(reason),
        }
    }

    async fn retry_at(
        &self,
        tenant: &TenantId,
        attempts: u32,
        _due: DateTime<Utc>,
        reason: &Failure,
    ) {
        tracing::warn!(tenant = %tenant, attempts, %reason, "account erasure failed; retrying");
    }

    async fn give_up(&self, tenant: &TenantId, attempts: u32, reason: &Failure) {
        tracing::error!(
            tenant = %tenant, attempts, %reason,
            "account erasure stopped; it resumes at the next start"
        );
    }
}
