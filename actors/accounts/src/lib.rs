//! memvault-accounts: the account domain, apart from the actors that store it.
//!
//! # Layout
//!
//! - [`tiers`]: [`Tiers`], what each tier may hold, and the check every growing write
//!   passes.
//! - [`reveal`]: reveal tokens (random, stored only as their SHA-256) and the letters
//!   that carry them.
//! - [`billing`]: the `Stripe-Signature` check and the Stripe client (form-encoded
//!   sessions, the event fields billing reads).
//! - [`email`]: mail-in as a pure domain: drop addresses, the sender allowlist, the
//!   relay's authentication verdicts, and a raw message split into batch items.
//! - [`outbox`]: outgoing mail as a job kind ([`outbox::MailDeliveries`]) and
//!   [`outbox::queue`], which persists a letter before queueing it.
//!
//! The flows (signup, recovery, reveal, billing events, inbound mail) are services of
//! `memvault-core` that use these parts. Nothing here knows HTTP; the outbox runs on the
//! job system.

pub mod billing;
pub mod email;
pub mod outbox;
pub mod reveal;
pub mod tiers;

pub use tiers::{Growth, Held, TierLimits, Tiers};
