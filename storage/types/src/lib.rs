//! memvault-types: what every layer shares and nothing else owns.
//!
//! # Layout
//!
//! - [`limits`]: SPEC.md's limits, in one place.
//! - [`clock`]: the service's source of "now", movable in tests.
//! - [`backoff`]: the one back-off policy, [`Backoff`].
//!
//! No I/O and no async: every other crate of the workspace may depend on this one.

pub mod backoff;
pub mod clock;
pub mod limits;

pub use backoff::Backoff;
