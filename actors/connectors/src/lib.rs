//! memvault-connectors: managed connectors, without actors or a store.
//!
//! - [`provider`]: the [`Provider`] trait every provider implements (one page of changes
//!   since a window, one page of ids), its record and error types, [`ProviderKind`].
//! - [`engine`]: one sync run for every provider (window with overlap, hash skip, upsert
//!   by record id, checkpoint per page, cursor moved only by a complete run) and
//!   reconciliation, writing through the [`engine::Sink`] memvault implements.
//! - [`http`]: the shared client: per-provider pacing, bounded answers, one retry loop
//!   for rate limits and server failures.
//! - [`oauth`]: authorize URLs, the code exchange and the refresh, in each provider's shape.
//! - [`providers`]: one file per provider.
//!
//! Fake servers of every provider, for tests, are in `memvault-fake-providers`.

pub mod engine;
pub mod http;
pub mod oauth;
pub mod provider;
pub mod providers;

pub use engine::{Checkpoint, Cursor, Report, RunLimits, Sink, SyncError};
pub use http::{Budget, Http};
pub use provider::{
    Change, Context, Credentials, Page, Provider, ProviderError, ProviderKind, Record, Window,
};
