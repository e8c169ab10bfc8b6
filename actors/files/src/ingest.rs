//! Asynchronous ingest batches as a job kind.
//!
//! A batch and its items are stored before the 202 is sent; then the batch's key is
//! queued. The job walks the batch's unfinished items in order. Each item is marked
//! `extracting` (with its start time and attempt count) before its worker starts,
//! `embedding` once its text is extracted, and `done` (with its memory ids) or `failed`
//! (with a reason) when it ends; the batch record is written at each step, so a poll sees
//! the truth and a crash loses at most the step in flight.
//!
//! - **Deadline.** Each item runs under a deadline (`FileSettings::item_deadline`): past
//!   it the item is failed ("did not finish within ..."), and the batch goes on. The
//!   worker's own wall clock stops a hanging extraction well before.
//! - **kill -9.** At start-up every unfinished batch is queued again. An item found in
//!   `extracting` or `embedding` was cut off: memories it may have stored are removed
//!   first (they carry its file id), then it runs again; after
//!   [`ITEM_MAX_ATTEMPTS`] starts it is failed.
//! - **One failing file never fails the batch**: a failure is the item's, never the job's.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memvault_jobs::{blocking, Backoff, Failure, JobKind, Outcome, Pending, RetryPolicy};
use memvault_storage::{IngestBatchRecord, IngestItemRecord, IngestItemState, Store, TenantId};

/// Starts of one item before it is failed (a file that kills the server every time).
pub const ITEM_MAX_ATTEMPTS: u32 = 3;

const BACKOFF: Backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(10));

/// A batch: its tenant and id.
pub type IngestBatchKey = (TenantId, String);

/// How one item ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemOutcome {
    /// Stored as these memories; `note` says what was skipped, or that the file was a
    /// duplicate of one stored already.
    Done {
        memory_ids: Vec<String>,
        note: Option<String>,
    },
    Failed {
        reason: String,
    },
}

/// What an item's processing needs from the service: extraction into memories, storing
/// them, and removing what a cut-off attempt may have stored. `Memory` is the service's
/// new-memory type: the job only carries it from `prepare` to `store`.
#[async_trait]
pub trait IngestItem: Send + Sync + 'static {
    type Memory: Send + Sync + 'static;

    /// Reads the item's file and turns it into memories (not stored yet); `Err` is why the
    /// item failed; `Ok(Err(outcome))` ends the item without storing (a
    /// duplicate).
    async fn prepare(
        &self,
        batch: &IngestBatchRecord,
        item: &IngestItemRecord,
    ) -> Result<Result<Prepared<Self::Memory>, ItemOutcome>, Failure>;
    /// Stores the prepared memories; their ids.
    async fn store(
        &self,
        batch: &IngestBatchRecord,
        prepared: Prepared<Self::Memory>,
    ) -> Result<Vec<String>, Failure>;
    /// Removes memories an interrupted attempt stored for this item.
    async fn forget_partial(
        &self,
        batch: &IngestBatchRecord,
        item: &IngestItemRecord,
    ) -> Result<(), Failure>;
}

/// An item's memories, ready to store.
#[derive(Debug, Clone)]
pub struct Prepared<M> {
    pub memories: Vec<M>,
    pub note: Option<String>,
    /// The start of the file's text.
    pub preview: Option<String>,
}

/// The ingest job kind; `I` is the service's part that prepares and stores an item.
pub struct IngestJobs<I> {
    store: Arc<dyn Store>,
    items: Arc<I>,
    deadline: Duration,
}

impl<I: IngestItem> IngestJobs<I> {
    pub fn new(store: Arc<dyn Store>, items: Arc<I>, deadline: Duration) -> Self {
        Self {
            store,
            items,
            deadline,
        }
    }

    async fn put(&self, batch: &IngestBatchRecord) -> Result<(), Failure> {
        let (store, batch) = (self.store.clone(), batch.clone());
        blocking(move || store.put_batch(&batch)).await
    }

    async fn load(&self, key: &IngestBatchKey) -> Result<Option<IngestBatchRecord>, Failure> {
        let (store, (tenant, id)) = (self.store.clone(), key.clone());
        blocking(move || store.batch(&tenant, &id)).await
    }

    /// Records an item's new state (and the batch's `updated_at`).
    async fn set(&self, batch: &mut IngestBatchRecord, index: usize, item: IngestItemRecord) {
        if let Some(slot) = batch.items.get_mut(index) {
            *slot = item;
        }
        batch.updated_at = Utc::now();
        if let Err(error) = self.put(batch).await {
            tracing::warn!(batch = %batch.id, %error, "ingest batch state not saved");
        }
    }

    /// One item, from wherever it was left.
    async fn run_item(&self, batch: &mut IngestBatchRecord, index: usize) {
        let Some(mut item) = batch.items.get(index).cloned() else {
            return;
        };
        if matches!(
            item.state,
            IngestItemState::Extracting | IngestItemState::Embedding
        ) {
            if let Err(reason) = self.items.forget_partial(batch, &item).await {
                tracing::warn!(batch = %batch.id, file = %item.file_id, %reason, "partial memories not removed");
            }
            if item.attempts >= ITEM_MAX_ATTEMPTS {
                item.state = IngestItemState::Failed;
                item.reason = Some(format!(
                    "processing was interrupted {} times (the server stopped while it ran)",
                    item.attempts
                ));
                self.set(batch, index, item).await;
                return;
            }
        }
        item.state = IngestItemState::Extracting;
        item.attempts += 1;
        item.started_at = Some(Utc::now());
        item.reason = None;
        self.set(batch, index, item.clone()).await;
        let outcome = match tokio::time::timeout(self.deadline, self.process(batch, index)).await {
            Ok(outcome) => outcome,
            Err(_) => {
                let _ = self.items.forget_partial(batch, &item).await;
                ItemOutcome::Failed {
                    reason: format!(
                        "processing did not finish within {} s and was stopped",
                        self.deadline.as_secs()
                    ),
                }
            }
        };
        let Some(mut item) = batch.items.get(index).cloned() else {
            return;
        };
        match outcome {
            ItemOutcome::Done { memory_ids, note } => {
                item.state = IngestItemState::Done;
                item.memory_ids = memory_ids;
                item.reason = note;
            }
            ItemOutcome::Failed { reason } => {
                item.state = IngestItemState::Failed;
                item.reason = Some(reason);
            }
        }
        self.set(batch, index, item).await;
    }

    async fn process(&self, batch: &mut IngestBatchRecord, index: usize) -> ItemOutcome {
        let Some(item) = batch.items.get(index).cloned() else {
            return ItemOutcome::Failed {
                reason: "the item is gone".to_owned(),
            };
        };
        let prepared = match self.items.prepare(batch, &item).await {
            Ok(Ok(prepared)) => prepared,
            Ok(Err(outcome)) => return outcome,
            Err(failure) => {
                return ItemOutcome::Failed {
                    reason: failure.detail,
                }
            }
        };
        let mut embedding = item.clone();
        embedding.state = IngestItemState::Embedding;
        self.set(batch, index, embedding).await;
        let note = prepared.note.clone();
        match self.items.store(batch, prepared).await {
            Ok(memory_ids) => ItemOutcome::Done { memory_ids, note },
            Err(failure) => ItemOutcome::Failed {
                reason: failure.detail,
            },
        }
    }
}

#[async_trait]
impl<I: IngestItem> JobKind for IngestJobs<I> {
    type Key = IngestBatchKey;
    const NAME: &'static str = "ingest";

    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: ITEM_MAX_ATTEMPTS + 2,
            backoff: BACKOFF,
        }
    }

    async fn unfinished(&self) -> Result<Vec<Pending<IngestBatchKey>>, Failure> {
        let store = self.store.clone();
        let batches = blocking(move || store.unfinished_batches()).await?;
        let now = Utc::now();
        Ok(batches
            .into_iter()
            .map(|batch| Pending {
                key: (batch.tenant_id, batch.id),
                attempts: 0,
                due: now,
            })
            .collect())
    }

    async fn run(&self, key: &IngestBatchKey, _attempt: u32) -> Outcome {
        let mut batch = match self.load(key).await {
            Ok(Some(batch)) => batch,
            Ok(None) => return Outcome::Done,
            Err(error) => return Outcome::Retry(error.context("the batch could not be read")),
        };
        for index in 0..batch.items.len() {
            if batch.items[index].state.is_finished() {
                continue;
            }
            self.run_item(&mut batch, index).await;
        }
        Outcome::Done
    }

    /// Items keep their own state; the batch is simply run again.
    async fn retry_at(
        &self,
        _key: &IngestBatchKey,
        _attempts: u32,
        _due: DateTime<Utc>,
        _reason: &Failure,
    ) {
    }

    /// Fails what is left of the batch, so it never stays pending.
    async fn give_up(&self, key: &IngestBatchKey, _attempts: u32, reason: &Failure) {
        let Ok(Some(mut batch)) = self.load(key).await else {
            return;
        };
        for item in &mut batch.items {
            if !item.state.is_finished() {
                item.state = IngestItemState::Failed;
                item.reason = Some(format!("the batch could not be processed: {reason}"));
            }
        }
        batch.updated_at = Utc::now();
        if let Err(error) = self.put(&batch).await {
            tracing::warn!(batch = %key.1, %error, "failed batch not saved");
        }
    }
}
