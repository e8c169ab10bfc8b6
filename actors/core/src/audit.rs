//! The audit log: who (agent), what (action, resource), when and with what outcome, for
//! every write and every key, grant and config change.
//!
//! Recording never waits for the store: [`AuditLog::record`] puts the entry on a bounded
//! queue and a writer task appends what has queued up in one durable batch. If the queue
//! is full (the store is far behind) the entry is dropped and counted, so a slow disk
//! never holds up requests. Entries older than the retention are pruned hourly.
//!
//! The writer is a [`Resident`] loop: a panic in it is restarted by the service's restart
//! policy and takes up the queue where it stopped (the batch it was writing is lost and
//! logged).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use memvault_jobs::Resident;
use memvault_storage::{AuditEntry, Store};
use memvault_types::RestartPolicy;
use tokio::sync::{mpsc, oneshot, Mutex};

/// Entries waiting for the writer before new ones are dropped.
const QUEUE_CAPACITY: usize = 10_000;
/// Most entries appended in one store write.
const BATCH_MAX: usize = 500;

enum Command {
    Record(Box<AuditEntry>),
    /// Answered once everything queued before it is stored.
    Flush(oneshot::Sender<()>),
}

pub struct AuditLog {
    queue: mpsc::Sender<Command>,
    dropped: Arc<AtomicU64>,
    /// The writer; stopped at shutdown so nothing holds the store.
    writer: Resident,
}

impl AuditLog {
    /// Starts the writer (pruning is a recurring task of the service's scheduler).
    pub fn start(store: Arc<dyn Store>, policy: RestartPolicy) -> Self {
        let (queue, commands) = mpsc::channel(QUEUE_CAPACITY);
        let commands = Arc::new(Mutex::new(commands));
        let writer = Resident::start("audit_writer", policy, move || {
            let (store, commands) = (store.clone(), commands.clone());
            async move { write_batches(store, &mut *commands.lock().await).await }
        });
        Self {
            queue,
            dropped: Arc::new(AtomicU64::new(0)),
            writer,
        }
    }

    /// The writer, for the operator's view of supervision.
    pub fn writer(&self) -> &Resident {
        &self.writer
    }

    /// Queues one entry; never waits.
    pub fn record(&self, entry: AuditEntry) {
        if self
            .queue
            .try_send(Command::Record(Box::new(entry)))
            .is_err()
        {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(dropped, "audit queue full: entries dropped");
            }
        }
    }

    /// Entries dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Waits until every entry recorded before this call is stored (reads that must see
    /// them, shutdown).
    pub async fn flush(&self) {
        let (done, stored) = oneshot::channel();
        if self.queue.send(Command::Flush(done)).await.is_ok() {
            let _ = stored.await;
        }
    }
}

impl AuditLog {
    /// Stores what is queued, then stops the writer (shutdown); entries recorded
    /// afterwards are dropped.
    pub async fn stop(&self) {
        if self.writer.is_running() {
            let _ = tokio::time::timeout(Duration::from_secs(30), self.flush()).await;
        }
        self.writer.stop().await;
    }
}

async fn write_batches(store: Arc<dyn Store>, commands: &mut mpsc::Receiver<Command>) {
    while let Some(first) = commands.recv().await {
        let mut entries = Vec::new();
        let mut waiting = Vec::new();
        let mut next = Some(first);
        while let Some(command) = next.take() {
            match command {
                Command::Record(entry) => entries.push(*entry),
                Command::Flush(done) => waiting.push(done),
            }
            if entries.len() < BATCH_MAX {
                next = commands.try_recv().ok();
            }
        }
        if !entries.is_empty() {
            let store = store.clone();
            let count = entries.len();
            let written = tokio::task::spawn_blocking(move || store.append_audit(&entries)).await;
            match written {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::error!(%error, count, "audit entries not stored"),
                Err(error) => tracing::error!(%error, count, "audit writer failed"),
            }
        }
        for done in waiting {
            let _ = done.send(());
        }
    }
}
