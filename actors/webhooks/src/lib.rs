//! memvault-webhooks, signed outbound webhooks: every created, updated or deleted memory of a tenant with a
//! webhook is POSTed to its URL.
//!
//! # Layout
//!
//! - [`deliveries`]: [`record_events`], the event-broker subscriber that persists each
//!   event of a tenant with a webhook to the outbox first, and [`WebhookDeliveries`], the
//!   job kind that delivers it (bounded concurrency, retries with the job system's
//!   back-off a bounded number of times; on start, what a previous run left in the
//!   outbox).
//! - [`log`]: each tenant's recent attempts and how they ended ([`DeliveryLog`]).
//! - [`payload`]: the JSON body of a delivery.
//! - [`delivery`]: one signed POST (`X-Service-Signature`, `X-Service-Event`,
//!   `X-Service-Delivery`).
//! - [`sign`]: hex HMAC-SHA256 of the raw body.
//! - [`guard`]: the SSRF guard (private, loopback, link-local and metadata addresses);
//!   core's tenant buckets and connector targets pass the same guard.
//!
//! Delivery is at least once: a crash between a successful POST and the outbox delete
//! sends the event again after the restart, with the same delivery id (the body's `id`
//! and `X-Service-Delivery`), so receivers can drop repeats. Events carry no ordering
//! guarantee across retries.

pub mod deliveries;
pub mod delivery;
pub mod guard;
pub mod log;
pub mod payload;
pub mod sign;

use std::time::Duration;

pub use deliveries::{record_events, WebhookDeliveries, WebhookDirectory, CONCURRENT_ATTEMPTS};
pub use log::{AttemptOutcome, AttemptRecord, DeliveryLog, RECENT_ATTEMPTS};

use memvault_events::MemoryEventKind;

/// The events a webhook receives, in the order listed in the config response.
pub const EVENTS: [&str; 3] = [
    MemoryEventKind::Created.as_str(),
    MemoryEventKind::Updated.as_str(),
    MemoryEventKind::Deleted.as_str(),
];

/// How webhooks are delivered (config section `[webhooks]`).
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// Skip the SSRF guard: allow loopback, private and link-local targets (tests,
    /// trusted networks).
    pub allow_private_targets: bool,
    /// Total time one attempt may take (connect, send, answer).
    pub timeout: Duration,
    /// Attempts per event, the first included; after the last failure it is dropped.
    pub max_attempts: u32,
    /// Wait after the first failure; doubled after each further one, at most
    /// [`MAX_BACKOFF`].
    pub initial_backoff: Duration,
}

/// The longest wait between two attempts of one event.
pub const MAX_BACKOFF: Duration = Duration::from_secs(3600);

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            allow_private_targets: false,
            timeout: Duration::from_secs(5),
            max_attempts: 8,
            initial_backoff: Duration::from_secs(2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_an_hour() {
        let settings = WebhookSettings {
            initial_backoff: Duration::from_secs(2),
            ..WebhookSettings::default()
        };
        assert_eq!(settings.backoff().delay(1), Duration::from_secs(2));
        assert_eq!(settings.backoff().delay(2), Duration::from_secs(4));
        assert_eq!(settings.backoff().delay(5), Duration::from_secs(32));
        assert_eq!(settings.backoff().delay(12), MAX_BACKOFF);
        assert_eq!(settings.backoff().delay(u32::MAX), MAX_BACKOFF);
    }

    #[test]
    fn event_names_follow_the_spec() {
        assert_eq!(
            EVENTS,
            ["memory.created", "memory.updated", "memory.deleted"]
        );
    }
}
