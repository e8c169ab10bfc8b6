//! Webhook delivery as a job kind, and the event subscriber that fills its outbox.
//!
//! [`record_events`] subscribes to the [`EventBroker`]: for each event of a tenant with a
//! webhook it builds the body, writes the delivery to the outbox (the store is the source
//! of truth) and only then queues its key. [`WebhookDeliveries`] is the job kind: one
//! attempt is one signed POST, off every actor's path; delivered (or the webhook gone)
//! removes it from the outbox; a failure stores its attempt count and next attempt time
//! and is retried by the job system with the `[webhooks]` back-off, until `max_attempts`,
//! when it is removed and a warning is logged.
//!
//! Each attempt reads the tenant's webhook as it is then: a changed URL or secret applies
//! to queued deliveries too; a deleted webhook drops them.
//!
//! On start every delivery left in the outbox is due at once, oldest first, whatever its
//! stored next attempt time (a restart does not wait out a back-off; the attempt count
//! carries on). Retry times are wall-clock (`Utc::now`), not the service clock: they pace
//! real network attempts.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memvault_jobs::{blocking, Backoff, Failure, JobKind, JobQueue, Outcome, Pending, RetryPolicy};
use memvault_storage::{OutboxDelivery, SecretBox, Store, TenantId, WebhookRecord};
use memvault_types::ErrorCode;
use tokio::sync::mpsc;

use super::delivery::DeliveryClient;
use super::log::{AttemptOutcome, AttemptRecord, DeliveryLog};
use super::payload::EventPayload;
use super::{WebhookSettings, MAX_BACKOFF};
use memvault_events::MemoryEvent;

/// POSTs in progress at once, over all tenants: the kind's worker count.
pub const CONCURRENT_ATTEMPTS: usize = 16;

/// A delivery in the outbox: its tenant and id.
pub type DeliveryKey = (TenantId, String);

/// Where a tenant's current webhook is read: the tenant actors' published snapshots in
/// the service, a map in tests. Read at every attempt, so a changed URL or secret
/// applies to queued deliveries and a deleted webhook drops them.
pub trait WebhookDirectory: Send + Sync + 'static {
    /// Whether this node sends `tenant`'s deliveries (several nodes: the tenant's node
    /// does; one node sends everyone's). A delivery of a tenant served elsewhere is left
    /// in the outbox for that node, neither sent nor dropped here.
    fn serves(&self, _tenant: &TenantId) -> bool {
        true
    }

    fn webhook(&self, tenant: &TenantId) -> Option<WebhookRecord>;
}

/// The webhook delivery job kind: what one attempt needs, nothing more.
pub struct WebhookDeliveries {
    /// The outbox: what is still to be delivered, and the only copy of a delivery's body
    /// between its attempts.
    store: Arc<dyn Store>,
    /// Read at each attempt for the tenant's current URL and sealed secret.
    tenants: Arc<dyn WebhookDirectory>,
    /// Opens the signing secrets at delivery time; `None` fails every attempt.
    secrets: Option<Arc<SecretBox>>,
    /// Timeout, attempts and back-off.
    settings: WebhookSettings,
    /// The guarded HTTP client shared by every attempt.
    client: DeliveryClient,
    /// Each attempt's outcome, for the tenant to see.
    log: DeliveryLog,
}

impl WebhookDeliveries {
    pub fn new(
        store: Arc<dyn Store>,
        tenants: Arc<dyn WebhookDirectory>,
        secrets: Option<Arc<SecretBox>>,
        settings: WebhookSettings,
        log: DeliveryLog,
    ) -> Result<Self, String> {
        let client = DeliveryClient::new(&settings)?;
        Ok(Self {
            store,
            tenants,
            secrets,
            settings,
            client,
            log,
        })
    }

    /// Notes how an attempt ended in the tenant's recent attempts.
    fn note(
        &self,
        delivery: &OutboxDelivery,
        attempt: u32,
        started: std::time::Instant,
        outcome: AttemptOutcome,
    ) {
        self.log.record(
            &delivery.tenant_id,
            AttemptRecord {
                delivery: delivery.id.clone(),
                event: delivery.event.clone(),
                attempt,
                at: Utc::now(),
                millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                outcome,
            },
        );
    }

    async fn load(&self, key: &DeliveryKey) -> Result<Option<OutboxDelivery>, Failure> {
        let (store, (tenant, id)) = (self.store.clone(), key.clone());
        blocking(move || store.delivery(&tenant, &id)).await
    }

    /// Removes a delivery from the outbox, patiently: one left there after it was sent
    /// would be sent again.
    async fn remove(&self, key: &DeliveryKey) {
        let (store, (tenant, id)) = (self.store.clone(), key.clone());
        if let Err(error) = patiently(move || store.delete_delivery(&tenant, &id)).await {
            tracing::error!(delivery = %key.1, %error, "webhook outbox delete failed");
        }
    }

    /// One signed POST with the tenant's webhook as it is now.
    async fn attempt(&self, delivery: &OutboxDelivery) -> Attempt {
        let Some(webhook) = current_webhook(&self.tenants, &delivery.tenant_id) else {
            return Attempt::NoWebhook;
        };
        let secret = match self
            .secrets
            .as_ref()
            .map(|secrets| secrets.open_string(&webhook.secret_sealed))
        {
            Some(Ok(secret)) => secret,
            Some(Err(error)) => {
                return Attempt::Failed(format!("the signing secret cannot be opened: {error}"))
            }
            None => {
                return Attempt::Failed(
                    "this server has no encryption key to open the signing secret".to_owned(),
                )
            }
        };
        match self.client.deliver(&webhook.url, &secret, delivery).await {
            Ok(()) => Attempt::Delivered,
            Err(reason) => Attempt::Failed(reason),
        }
    }
}

/// How one POST ended.
enum Attempt {
    /// The receiver answered 2xx.
    Delivered,
    /// Any other answer, a transport error, a refusal of the SSRF guard, or a secret that
    /// could not be opened.
    Failed(String),
    /// The tenant has no webhook any more: the delivery is dropped.
    NoWebhook,
}

fn current_webhook(
    tenants: &Arc<dyn WebhookDirectory>,
    tenant: &TenantId,
) -> Option<WebhookRecord> {
    tenants.webhook(tenant)
}

#[async_trait]
impl JobKind for WebhookDeliveries {
    type Key = DeliveryKey;
    const NAME: &'static str = "webhook_delivery";

    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: self.settings.max_attempts,
            backoff: self.settings.backoff(),
        }
    }

    /// A tenant's failing receiver counts against that tenant only.
    fn group(&self, key: &DeliveryKey) -> String {
        key.0.to_string()
    }

    async fn unfinished(&self) -> Result<Vec<Pending<DeliveryKey>>, Failure> {
        let store = self.store.clone();
        let pending = blocking(move || store.pending_deliveries()).await?;
        let now = Utc::now();
        // Due at once, in the order they were queued.
        Ok(pending
            .into_iter()
            .map(|delivery| Pending {
                due: delivery.created_at.min(now),
                attempts: delivery.attempts,
                key: (delivery.tenant_id, delivery.id),
            })
            .collect())
    }

    async fn run(&self, key: &DeliveryKey, attempt: u32) -> Outcome {
        if !self.tenants.serves(&key.0) {
            // The tenant moved to another node, which resumes its outbox.
            tracing::debug!(tenant = %key.0, delivery = %key.1, "tenant served elsewhere; delivery left to its node");
            return Outcome::Done;
        }
        let delivery = match self.load(key).await {
            Ok(Some(delivery)) => delivery,
            // Gone from the outbox: dropped with its webhook.
            Ok(None) => return Outcome::Done,
            Err(error) => return Outcome::Retry(error.context("the outbox could not be read")),
        };
        let started = std::time::Instant::now();
        let outcome = self.attempt(&delivery).await;
        match &outcome {
            Attempt::Delivered => self.note(&delivery, attempt, started, AttemptOutcome::Delivered),
            Attempt::Failed(reason) if self.tenants.serves(&key.0) => {
                let outcome = AttemptOutcome::Failed {
                    reason: reason.clone(),
                    retrying: attempt < self.settings.max_attempts,
                };
                self.note(&delivery, attempt, started, outcome);
            }
            Attempt::Failed(_) | Attempt::NoWebhook => {}
        }
        match outcome {
            Attempt::Delivered => {
                tracing::debug!(tenant = %key.0, delivery = %key.1, event = %delivery.event, "webhook delivered");
                self.remove(key).await;
                Outcome::Done
            }
            // Let go of during the attempt: its node resumes the delivery.
            Attempt::NoWebhook | Attempt::Failed(_) if !self.tenants.serves(&key.0) => {
                Outcome::Done
            }
            Attempt::NoWebhook => {
                tracing::debug!(tenant = %key.0, delivery = %key.1, "webhook removed; delivery dropped");
                self.remove(key).await;
                Outcome::Done
            }
            Attempt::Failed(_) if current_webhook(&self.tenants, &key.0).is_none() => {
                self.remove(key).await;
                Outcome::Done
            }
            // The receiver's failure: an upstream the job depends on.
            Attempt::Failed(reason) => {
                Outcome::Retry(Failure::new(ErrorCode::UpstreamFailed, reason))
            }
        }
    }

    async fn retry_at(
        &self,
        key: &DeliveryKey,
        attempts: u32,
        due: DateTime<Utc>,
        _reason: &Failure,
    ) {
        let store = self.store.clone();
        let (tenant, id) = key.clone();
        let stored = blocking(move || {
            let Some(mut delivery) = store.delivery(&tenant, &id)? else {
                return Ok(());
            };
            delivery.attempts = attempts;
            delivery.next_attempt_at = due;
            store.put_delivery(&delivery)
        })
        .await;
        if let Err(error) = stored {
            tracing::error!(delivery = %key.1, %error, "webhook outbox update failed");
        }
    }

    async fn give_up(&self, key: &DeliveryKey, attempts: u32, reason: &Failure) {
        tracing::warn!(tenant = %key.0, delivery = %key.1, attempts, %reason, "webhook delivery given up");
        self.remove(key).await;
    }
}

impl WebhookSettings {
    /// The wait after each failed attempt: `initial_backoff` doubled per further failure,
    /// at most [`MAX_BACKOFF`].
    pub fn backoff(&self) -> Backoff {
        Backoff::new(self.initial_backoff, MAX_BACKOFF)
    }
}

/// The broker subscriber that turns memory events into outbox deliveries and queues
/// them; it ends when the broker closes, after the events published until then.
pub async fn record_events(
    events: &mut mpsc::UnboundedReceiver<Arc<MemoryEvent>>,
    store: Arc<dyn Store>,
    tenants: Arc<dyn WebhookDirectory>,
    queue: JobQueue<WebhookDeliveries>,
) {
    while let Some(event) = events.recv().await {
        if !has_webhook(&tenants, &store, &event.tenant).await {
            continue;
        }
        let id = format!("dlv_{}", uuid::Uuid::now_v7().simple());
        let now = Utc::now();
        let delivery = OutboxDelivery {
            body: EventPayload::new(&id, &event).to_json(),
            id,
            tenant_id: event.tenant.clone(),
            event: event.kind.as_str().to_owned(),
            attempts: 0,
            next_attempt_at: now,
            created_at: now,
        };
        let key = (delivery.tenant_id.clone(), delivery.id.clone());
        let store = store.clone();
        if let Err(error) = patiently(move || store.put_delivery(&delivery)).await {
            tracing::error!(
                tenant = %event.tenant,
                event = event.kind.as_str(),
                %error,
                "webhook event dropped: the outbox write kept failing"
            );
            continue;
        }
        if queue.submit(key).is_err() {
            // Stopping: the delivery stays in the outbox and is sent after the restart.
            tracing::debug!(tenant = %event.tenant, "webhook queue stopped; delivery left in the outbox");
        }
    }
}

/// Whether an event of `tenant` is recorded: it has a webhook. A tenant this node has let
/// go of since the write (several nodes: its lease was lost while the event waited here)
/// is asked of the store, so the event of a durable write is not dropped because another
/// node serves the tenant now; that node sends it (its queue rescans the outbox).
async fn has_webhook(
    tenants: &Arc<dyn WebhookDirectory>,
    store: &Arc<dyn Store>,
    tenant: &TenantId,
) -> bool {
    if current_webhook(tenants, tenant).is_some() {
        return true;
    }
    if tenants.serves(tenant) {
        return false;
    }
    let (store, owner) = (store.clone(), tenant.clone());
    match patiently(move || store.tenant_settings(&owner)).await {
        Ok(settings) => settings.webhook.is_some(),
        Err(error) => {
            tracing::error!(%tenant, %error, "webhook event dropped: the tenant's settings could not be read");
            false
        }
    }
}

/// How long an outbox write waits for the database (restarting, a connection cut) before
/// it is given up; the work behind it waits meanwhile.
const PATIENCE: Duration = Duration::from_secs(120);

/// Runs an outbox write (or the read an event's recording needs), again after a failure
/// (waits doubling from 50 ms, at most 5 s apart) until [`PATIENCE`] has passed: an event
/// whose memory write is durable would be lost, and a delivery sent but not removed would
/// be sent twice.
async fn patiently<T: Send + 'static>(
    call: impl Fn() -> Result<T, memvault_storage::StorageError> + Send + Sync + 'static,
) -> Result<T, String> {
    let call = Arc::new(call);
    let started = std::time::Instant::now();
    let mut wait = Duration::from_millis(50);
    loop {
        let attempt = call.clone();
        match blocking(move || attempt()).await {
            Ok(value) => return Ok(value),
            Err(error) if started.elapsed() >= PATIENCE => return Err(error.to_string()),
            Err(error) => {
                tracing::warn!(%error, "outbox store call failed; retrying");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(5));
            }
        }
    }
}
