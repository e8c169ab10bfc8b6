//! The webhook actor: turns memory events into outbox deliveries and delivers them.
//!
//! For each event of a tenant with a webhook it builds the body, writes the delivery to
//! the outbox (the store is the source of truth), and only then starts an attempt in a
//! task of its own: the POST never runs on the actor, let alone on the writer's path. At
//! most [`CONCURRENT_ATTEMPTS`] POSTs run at once. An attempt reports back with a
//! message: delivered → removed from the outbox; failed → its attempt count and next
//! attempt time are stored and it waits in [`WebhookState::due`] for the retry tick,
//! until `max_attempts` is reached, when it is removed and a warning is logged.
//!
//! Each attempt reads the tenant's webhook as it is then: a changed URL or secret applies
//! to queued deliveries too; a deleted webhook drops them.
//!
//! On start every delivery left in the outbox is attempted at once, oldest first,
//! whatever its stored next attempt time (a restart does not wait out a back-off; the
//! attempt count carries on). Retry times are wall-clock (`Utc::now`), not the service
//! clock: they pace real network attempts.
//!
//! The actor never fails on purpose: a store error is logged and the event or retry it
//! concerned is skipped (a retry whose outbox update failed is attempted again after the
//! next restart).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use dashmap::DashMap;
use memvault_storage::{OutboxDelivery, SecretBox, Store, TenantId, WebhookRecord};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::Semaphore;

use super::delivery::DeliveryClient;
use super::events::{EventPayload, MemoryEvent};
use super::WebhookSettings;
use crate::call::blocking;
use crate::tenant::TenantHandle;

/// POSTs in progress at once, over all tenants.
pub const CONCURRENT_ATTEMPTS: usize = 16;
/// Attempts started (running or waiting for one of the [`CONCURRENT_ATTEMPTS`]) at
/// once; beyond it deliveries wait in the due queue as keys, so a long outbox is never
/// held in memory whole.
const MAX_IN_FLIGHT: usize = 256;
/// Bounds of the retry tick's period (half the initial back-off, within these).
const TICK_MIN: Duration = Duration::from_millis(20);
const TICK_MAX: Duration = Duration::from_secs(1);

pub struct WebhookActor;

pub struct WebhookArgs {
    pub store: Arc<dyn Store>,
    /// Every tenant's handle, where each tenant's current webhook is published.
    pub tenants: Arc<DashMap<TenantId, Arc<TenantHandle>>>,
    /// Opens the sealed signing secrets.
    pub secrets: Option<Arc<SecretBox>>,
    pub settings: WebhookSettings,
}

pub enum WebhookMessage {
    /// A memory changed (cast through the collection actors' `MemoryEventSink`).
    Event(Box<MemoryEvent>),
    /// Timer: start the retries that are due.
    RetryTick,
    /// An attempt finished (sent by the task that made it).
    Attempted {
        delivery: Box<OutboxDelivery>,
        outcome: AttemptOutcome,
    },
}

/// How one attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The receiver answered 2xx.
    Delivered,
    /// Any other answer, a transport error, a refusal of the SSRF guard, or a secret that
    /// could not be opened.
    Failed(String),
    /// The tenant has no webhook any more: the delivery is dropped.
    NoWebhook,
}

pub struct WebhookState {
    /// The outbox: what is still to be delivered, and the only copy of a delivery's body
    /// between its attempts.
    store: Arc<dyn Store>,
    /// Read at each attempt for the tenant's current URL and sealed secret.
    tenants: Arc<DashMap<TenantId, Arc<TenantHandle>>>,
    /// Opens the signing secrets at delivery time; `None` fails every attempt.
    secrets: Option<Arc<SecretBox>>,
    /// Timeout, attempts and back-off.
    settings: WebhookSettings,
    /// The guarded HTTP client shared by every attempt.
    client: DeliveryClient,
    /// Bounds the POSTs in progress at once.
    permits: Arc<Semaphore>,
    /// Attempts started and not yet reported back (bounded by [`MAX_IN_FLIGHT`]).
    in_flight: usize,
    /// Deliveries waiting for an attempt, by (due time, tenant, id): keys only; the
    /// delivery is read back from the outbox when it is due.
    due: BTreeSet<(DateTime<Utc>, TenantId, String)>,
    /// The retry tick's task, stopped with the actor.
    ticker: Option<tokio::task::JoinHandle<()>>,
}

fn current_webhook(
    tenants: &DashMap<TenantId, Arc<TenantHandle>>,
    tenant: &TenantId,
) -> Option<WebhookRecord> {
    tenants
        .get(tenant)
        .and_then(|handle| handle.snapshot().settings.webhook.clone())
}

/// One attempt with the tenant's webhook as it is now.
async fn attempt(
    client: &DeliveryClient,
    tenants: &DashMap<TenantId, Arc<TenantHandle>>,
    secrets: Option<&SecretBox>,
    delivery: &OutboxDelivery,
) -> AttemptOutcome {
    let Some(webhook) = current_webhook(tenants, &delivery.tenant_id) else {
        return AttemptOutcome::NoWebhook;
    };
    let secret = match secrets.map(|secrets| secrets.open_string(&webhook.secret_sealed)) {
        Some(Ok(secret)) => secret,
        Some(Err(error)) => {
            return AttemptOutcome::Failed(format!("the signing secret cannot be opened: {error}"))
        }
        None => {
            return AttemptOutcome::Failed(
                "this server has no encryption key to open the signing secret".to_owned(),
            )
        }
    };
    match client.deliver(&webhook.url, &secret, delivery).await {
        Ok(()) => AttemptOutcome::Delivered,
        Err(reason) => AttemptOutcome::Failed(reason),
    }
}

impl WebhookState {
    /// Starts an attempt in a task of its own; its outcome comes back as a message.
    fn start(&mut self, myself: &ActorRef<WebhookMessage>, delivery: OutboxDelivery) {
        self.in_flight += 1;
        let (client, tenants, secrets, permits, myself) = (
            self.client.clone(),
            self.tenants.clone(),
            self.secrets.clone(),
            self.permits.clone(),
            myself.clone(),
        );
        tokio::spawn(async move {
            let outcome = match permits.acquire_owned().await {
                Ok(_permit) => attempt(&client, &tenants, secrets.as_deref(), &delivery).await,
                Err(_) => AttemptOutcome::Failed("the delivery pool is closed".to_owned()),
            };
            // Gone only when the service stops: the delivery stays in the outbox.
            let _ = myself.cast(WebhookMessage::Attempted {
                delivery: Box::new(delivery),
                outcome,
            });
        });
    }

    /// Starts the due deliveries, oldest due first, as far as [`MAX_IN_FLIGHT`] allows.
    async fn start_due(&mut self, myself: &ActorRef<WebhookMessage>) {
        let now = Utc::now();
        let mut ready = Vec::new();
        while self.in_flight + ready.len() < MAX_IN_FLIGHT {
            match self.due.first() {
                Some((at, _, _)) if *at <= now => {
                    if let Some((_, tenant, id)) = self.due.pop_first() {
                        ready.push((tenant, id));
                    }
                }
                _ => break,
            }
        }
        if ready.is_empty() {
            return;
        }
        let (store, keys) = (self.store.clone(), ready.clone());
        let loaded = blocking(move || {
            keys.iter()
                .map(|(tenant, id)| store.delivery(tenant, id))
                .collect::<memvault_storage::error::Result<Vec<_>>>()
        })
        .await;
        match loaded {
            // A delivery gone from the outbox was dropped with its webhook.
            Ok(deliveries) => {
                for delivery in deliveries.into_iter().flatten() {
                    self.start(myself, delivery);
                }
            }
            Err(error) => {
                tracing::error!(%error, "webhook outbox read failed; retrying later");
                let later = now + chrono_duration(self.settings.initial_backoff);
                for (tenant, id) in ready {
                    self.due.insert((later, tenant, id));
                }
            }
        }
    }

    async fn on_event(&mut self, myself: &ActorRef<WebhookMessage>, event: MemoryEvent) {
        if current_webhook(&self.tenants, &event.tenant).is_none() {
            return;
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
        let store = self.store.clone();
        let stored = blocking(move || store.put_delivery(&delivery).map(|()| delivery)).await;
        let delivery = match stored {
            Ok(delivery) => delivery,
            Err(error) => {
                tracing::error!(
                    tenant = %event.tenant,
                    event = event.kind.as_str(),
                    %error,
                    "webhook event dropped: the outbox write failed"
                );
                return;
            }
        };
        if self.in_flight < MAX_IN_FLIGHT {
            self.start(myself, delivery);
        } else {
            self.due
                .insert((delivery.created_at, delivery.tenant_id, delivery.id));
        }
    }

    async fn on_attempted(&mut self, delivery: OutboxDelivery, outcome: AttemptOutcome) {
        self.in_flight = self.in_flight.saturating_sub(1);
        let reason = match outcome {
            AttemptOutcome::Delivered => {
                tracing::debug!(tenant = %delivery.tenant_id, delivery = %delivery.id, event = %delivery.event, "webhook delivered");
                self.remove(&delivery).await;
                return;
            }
            AttemptOutcome::NoWebhook => {
                tracing::debug!(tenant = %delivery.tenant_id, delivery = %delivery.id, "webhook removed; delivery dropped");
                self.remove(&delivery).await;
                return;
            }
            AttemptOutcome::Failed(reason) => reason,
        };
        let mut delivery = delivery;
        delivery.attempts = delivery.attempts.saturating_add(1);
        if delivery.attempts >= self.settings.max_attempts {
            tracing::warn!(
                tenant = %delivery.tenant_id,
                delivery = %delivery.id,
                event = %delivery.event,
                attempts = delivery.attempts,
                %reason,
                "webhook delivery given up"
            );
            self.remove(&delivery).await;
            return;
        }
        if current_webhook(&self.tenants, &delivery.tenant_id).is_none() {
            self.remove(&delivery).await;
            return;
        }
        let wait = self.settings.backoff(delivery.attempts);
        delivery.next_attempt_at = Utc::now() + chrono_duration(wait);
        tracing::info!(
            tenant = %delivery.tenant_id,
            delivery = %delivery.id,
            attempts = delivery.attempts,
            retry_in_ms = wait.as_millis() as u64,
            %reason,
            "webhook delivery failed; will retry"
        );
        let (store, stored) = (self.store.clone(), delivery.clone());
        if let Err(error) = blocking(move || store.put_delivery(&stored)).await {
            tracing::error!(delivery = %delivery.id, %error, "webhook outbox update failed");
        }
        self.due
            .insert((delivery.next_attempt_at, delivery.tenant_id, delivery.id));
    }

    async fn remove(&self, delivery: &OutboxDelivery) {
        let (store, tenant, id) = (
            self.store.clone(),
            delivery.tenant_id.clone(),
            delivery.id.clone(),
        );
        if let Err(error) = blocking(move || store.delete_delivery(&tenant, &id)).await {
            tracing::error!(delivery = %delivery.id, %error, "webhook outbox delete failed");
        }
    }
}

/// Waits are at most an hour (`MAX_BACKOFF`) or a validated config value; the fallback
/// only guards the conversion.
fn chrono_duration(wait: Duration) -> chrono::Duration {
    chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::hours(1))
}

impl Actor for WebhookActor {
    type Msg = WebhookMessage;
    type State = WebhookState;
    type Arguments = WebhookArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: WebhookArgs,
    ) -> Result<WebhookState, ActorProcessingErr> {
        let client = DeliveryClient::new(&args.settings)?;
        let store = args.store.clone();
        let pending = blocking(move || store.pending_deliveries()).await?;
        if !pending.is_empty() {
            tracing::info!(
                deliveries = pending.len(),
                "resuming pending webhook deliveries"
            );
        }
        let now = Utc::now();
        // Due at once, in the order they were queued.
        let due = pending
            .into_iter()
            .map(|delivery| {
                (
                    delivery.created_at.min(now),
                    delivery.tenant_id,
                    delivery.id,
                )
            })
            .collect();
        Ok(WebhookState {
            store: args.store,
            tenants: args.tenants,
            secrets: args.secrets,
            settings: args.settings,
            client,
            permits: Arc::new(Semaphore::new(CONCURRENT_ATTEMPTS)),
            in_flight: 0,
            due,
            ticker: None,
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut WebhookState,
    ) -> Result<(), ActorProcessingErr> {
        let period = (state.settings.initial_backoff / 2).clamp(TICK_MIN, TICK_MAX);
        let ticker = myself.clone();
        state.ticker = Some(tokio::spawn(async move {
            let mut interval = tokio::time::interval(period);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                interval.tick().await;
                if ticker.cast(WebhookMessage::RetryTick).is_err() {
                    return;
                }
            }
        }));
        state.start_due(&myself).await;
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut WebhookState,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(ticker) = state.ticker.take() {
            ticker.abort();
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: WebhookMessage,
        state: &mut WebhookState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            WebhookMessage::Event(event) => state.on_event(&myself, *event).await,
            WebhookMessage::RetryTick => state.start_due(&myself).await,
            WebhookMessage::Attempted { delivery, outcome } => {
                state.on_attempted(*delivery, outcome).await;
                state.start_due(&myself).await;
            }
        }
        Ok(())
    }
}
