//! Signed outbound webhooks: every created, updated or deleted memory of a tenant with a
//! webhook is POSTed to its URL.
//!
//! # Layout
//!
//! - [`events`]: [`MemoryEventSink`], through which collection actors report changed
//!   memories (a non-blocking cast, after the store write), and the payload.
//! - [`actor`]: [`WebhookActor`], which persists each event to the outbox first, delivers
//!   it off the actor with bounded concurrency, retries failures with exponential
//!   back-off a bounded number of times, and on start delivers what a previous run left
//!   in the outbox.
//! - [`delivery`]: one signed POST (`X-Service-Signature`, `X-Service-Event`,
//!   `X-Service-Delivery`).
//! - [`sign`]: hex HMAC-SHA256 of the raw body.
//! - [`guard`]: the SSRF guard (private, loopback, link-local and metadata addresses).
//!
//! Delivery is at least once: a crash between a successful POST and the outbox delete
//! sends the event again after the restart, with the same delivery id (the body's `id`
//! and `X-Service-Delivery`), so receivers can drop repeats. Events carry no ordering
//! guarantee across retries.

pub mod actor;
pub mod delivery;
pub mod events;
pub mod guard;
pub mod sign;

use std::time::Duration;

pub use actor::{WebhookActor, WebhookArgs, WebhookMessage};
pub use events::{MemoryEvent, MemoryEventSink};

/// The events a webhook receives, in the order listed in the config response.
pub const EVENTS: [&str; 3] = [
    MemoryEventKind::Created.as_str(),
    MemoryEventKind::Updated.as_str(),
    MemoryEventKind::Deleted.as_str(),
];

/// What happened to a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryEventKind {
    /// An id that was not in the collection: create, bulk, remember, the target side of
    /// a move.
    Created,
    /// An existing id written again: patch, pin, archive, supersession, archive-stale.
    Updated,
    /// Removed: delete, dedup, the source side of a move.
    Deleted,
}

impl MemoryEventKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Created => "memory.created",
            Self::Updated => "memory.updated",
            Self::Deleted => "memory.deleted",
        }
    }
}

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

impl WebhookSettings {
    /// The wait after the `failures`-th failed attempt (1-based):
    /// `initial_backoff × 2^(failures-1)`, at most [`MAX_BACKOFF`].
    pub fn backoff(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        self.initial_backoff
            .saturating_mul(1_u32 << doublings)
            .min(MAX_BACKOFF)
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
        assert_eq!(settings.backoff(1), Duration::from_secs(2));
        assert_eq!(settings.backoff(2), Duration::from_secs(4));
        assert_eq!(settings.backoff(5), Duration::from_secs(32));
        assert_eq!(settings.backoff(12), MAX_BACKOFF);
        assert_eq!(settings.backoff(u32::MAX), MAX_BACKOFF);
    }

    #[test]
    fn event_names_follow_the_spec() {
        assert_eq!(
            EVENTS,
            ["memory.created", "memory.updated", "memory.deleted"]
        );
    }
}
