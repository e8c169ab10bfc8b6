//! memvault-types: what every layer shares and nothing else owns.
//!
//! # Layout
//!
//! - [`limits`]: SPEC.md's limits, in one place.
//! - [`clock`]: the service's source of "now", movable in tests.
//! - [`backoff`]: the one back-off policy, [`Backoff`].
//! - [`error_code`]: every API error code with its HTTP status, [`ErrorCode`].
//! - [`failure`]: [`Failure`], a typed failure (code, retryable, detail) at crate seams.
//! - [`rate_limit`]: the fixed-window limiter behind per-key limits and signup limits.
//! - [`supervision`]: the one restart policy, [`RestartPolicy`], and a child's failures,
//!   [`Supervised`].
//! - [`tiers`]: what each account tier may hold ([`tiers::Tiers`]) and the check every
//!   growing write passes.
//!
//! No I/O and no async: every other crate of the workspace may depend on this one.

pub mod backoff;
pub mod clock;
pub mod error_code;
pub mod failure;
pub mod limits;
pub mod rate_limit;
pub mod supervision;
pub mod tiers;

pub use backoff::Backoff;
pub use error_code::ErrorCode;
pub use failure::Failure;
pub use supervision::{RestartPolicy, Supervised};
