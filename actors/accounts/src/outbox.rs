//! Outgoing mail as a job kind.
//!
//! [`queue`] writes the mail to the store's mail queue first (the store is the source of
//! truth) and only then submits its id: a request that queued a mail never waits for an
//! SMTP server, and a crash loses nothing. [`MailDeliveries`] sends one mail per attempt;
//! a transient failure (connection refused, timeout, a 4xx SMTP answer, a full outbox
//! disk) stores the attempt count and is retried by the job system with the `[mail]`
//! back-off, until `max_attempts`; a permanent one (a malformed address, a 5xx refusal)
//! gives up at once. Sent or given up, the mail leaves the queue.
//!
//! Delivery is at least once: a crash between a successful send and the queue delete
//! sends the mail again after the restart, with the same Message-ID.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memvault_jobs::{blocking, Failure, JobKind, JobQueue, Outcome, Pending, RetryPolicy};
use memvault_mail::{Letter, Mailer};
use memvault_storage::{MailRecord, Store, TenantId};
use memvault_types::ErrorCode;

/// Mails sent at once.
pub const CONCURRENT_SENDS: usize = 4;

/// The mail job kind: the queue and the mailer.
pub struct MailDeliveries {
    store: Arc<dyn Store>,
    mailer: Arc<Mailer>,
    policy: RetryPolicy,
}

impl MailDeliveries {
    /// `policy`: attempts per mail and the wait between them.
    pub fn new(store: Arc<dyn Store>, mailer: Arc<Mailer>, policy: RetryPolicy) -> Self {
        Self {
            store,
            mailer,
            policy,
        }
    }

    async fn remove(&self, id: &str) {
        let (store, id) = (self.store.clone(), id.to_owned());
        if let Err(error) = blocking(move || store.delete_mail(&id)).await {
            tracing::error!(%error, "mail queue delete failed");
        }
    }
}

/// Persists `letter` in the mail queue, then queues its delivery. Returns the mail's id.
pub async fn queue(
    store: &Arc<dyn Store>,
    queue: &JobQueue<MailDeliveries>,
    tenant: Option<&TenantId>,
    letter: Letter,
) -> Result<String, Failure> {
    let now = Utc::now();
    let record = MailRecord {
        id: format!("mail_{}", uuid::Uuid::now_v7().simple()),
        tenant_id: tenant.cloned(),
        to: letter.to,
        subject: letter.subject,
        text: letter.text,
        html: letter.html,
        attempts: 0,
        next_attempt_at: now,
        created_at: now,
    };
    let id = record.id.clone();
    let store = store.clone();
    blocking(move || store.put_mail(&record)).await?;
    if queue.submit(id.clone()).is_err() {
        // Stopping: the mail stays queued and is sent after the restart.
        tracing::debug!(mail = %id, "mail queue stopped; mail left queued");
    }
    Ok(id)
}

fn letter_of(record: &MailRecord) -> Letter {
    Letter {
        to: record.to.clone(),
        subject: record.subject.clone(),
        text: record.text.clone(),
        html: record.html.clone(),
    }
}

#[async_trait]
impl JobKind for MailDeliveries {
    type Key = String;
    const NAME: &'static str = "mail";

    fn policy(&self) -> RetryPolicy {
        self.policy
    }

    async fn unfinished(&self) -> Result<Vec<Pending<String>>, Failure> {
        let store = self.store.clone();
        let mails = blocking(move || store.pending_mails()).await?;
        let now = Utc::now();
        Ok(mails
            .into_iter()
            .map(|mail| Pending {
                due: mail.created_at.min(now),
                attempts: mail.attempts,
                key: mail.id,
            })
            .collect())
    }

    async fn run(&self, id: &String, _attempt: u32) -> Outcome {
        let (store, key) = (self.store.clone(), id.clone());
        let record = match blocking(move || store.mail(&key)).await {
            Ok(Some(record)) => record,
            // Gone from the queue (its tenant was erased).
            Ok(None) => return Outcome::Done,
            Err(error) => return Outcome::Retry(error.context("the mail queue could not be read")),
        };
        match self.mailer.send(&letter_of(&record), &record.id).await {
            Ok(()) => {
                tracing::info!(mail = %record.id, to = %record.to, subject = %record.subject, "mail sent");
                self.remove(id).await;
                Outcome::Done
            }
            Err(error) if error.is_permanent() => {
                tracing::warn!(mail = %record.id, to = %record.to, %error, "mail refused for good");
                self.remove(id).await;
                Outcome::Failed(
                    Failure::new(ErrorCode::UpstreamFailed, error.to_string()).permanent(),
                )
            }
            Err(error) => {
                Outcome::Retry(Failure::new(ErrorCode::UpstreamFailed, error.to_string()))
            }
        }
    }

    async fn retry_at(&self, id: &String, attempts: u32, due: DateTime<Utc>, reason: &Failure) {
        tracing::warn!(mail = %id, attempts, %reason, "mail not sent; retrying");
        let (store, id) = (self.store.clone(), id.clone());
        let stored = blocking(move || {
            let Some(mut mail) = store.mail(&id)? else {
                return Ok(());
            };
            mail.attempts = attempts;
            mail.next_attempt_at = due;
            store.put_mail(&mail)
        })
        .await;
        if let Err(error) = stored {
            tracing::error!(%error, "mail queue update failed");
        }
    }

    async fn give_up(&self, id: &String, attempts: u32, reason: &Failure) {
        tracing::warn!(mail = %id, attempts, %reason, "mail given up");
        self.remove(id).await;
    }
}
