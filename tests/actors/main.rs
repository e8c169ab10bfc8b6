//! The actors under supervision, without HTTP: core's collection actors and the connector
//! runtime's runs, driven through their crates' APIs.
//!
//! These live in the root package rather than in memvault-core and memvault-sync because
//! the root package is compiled without optimisation (see `[profile.release.package.memvault]`
//! in Cargo.toml): a test binary of an optimised crate takes minutes to build, here seconds,
//! while the code under test is the libraries', optimised.

mod bulk_writes;
mod collection_supervision;
mod connector_supervision;
mod support;
