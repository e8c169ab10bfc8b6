//! memvault-server: the service's edge. It starts the store, the embedding model, the
//! service and the runtimes above it, and serves the HTTP API.
//!
//! # Layout
//!
//! - [`config`]: configuration loading and validation (defaults < file < env < flags).
//! - [`server`]: starts the store, the embedding model and the actors; serves HTTP.
//! - [`cluster`]: several nodes on one Postgres: leases, forwarding to an account's node.
//! - [`api`]: the HTTP API, one module per resource, plus extractors and OpenAPI.
//! - [`dashboard`]: the server-rendered dashboard under `/dashboard`, a client of [`api`]
//!   in process.
//! - [`error`]: the HTTP error type and its `{"detail": ..., "code": ...}` body.
//! - [`files`]: the blob store and its signer from `[blobs]`, the public URL.
//! - [`status`]: periodic self-checks behind the public status page.
//! - [`pageviews`]: cookieless pageview counts from the public beacon.
//!
//! Behaviour lives in `memvault-core` and the crates beside it; persistence in
//! `memvault-storage`. This crate is the edge: it parses, authenticates, validates and
//! maps. The command line is the `memvault` binary's (`src/cli.rs` at the repository's
//! root); `memvault bench`, `eval` and `reembed` are `memvault-tools`.

pub mod api;
pub mod cluster;
pub mod config;
pub mod dashboard;
pub mod error;
pub mod files;
pub mod pageviews;
pub mod server;
pub mod snapshots;
pub mod status;
