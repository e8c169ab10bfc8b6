//! memvault: a self-hosted, multi-tenant long-term memory service for AI agents.
//!
//! # Layout
//!
//! - [`cli`]: the command line and process start-up (logging, runtime, signals).
//! - [`config`]: configuration loading and validation (defaults < file < env < flags).
//! - [`server`]: starts the store, the embedding model and the actors; serves HTTP.
//! - [`api`]: the HTTP API, one module per resource, plus extractors and OpenAPI.
//! - [`bench`]: `memvault bench`, measurements of a real server process over HTTP.
//! - [`eval`]: `memvault eval [PATH]`, retrieval quality of every search mode on the
//!   public evaluation sets (BEIR MS MARCO, BEIR business reports, LoCoMo).
//! - [`reembed`]: `memvault reembed`, follows a server's re-embedding with a progress bar.
//! - [`error`]: the HTTP error type and its `{"detail": ..., "code": ...}` body.
//! - [`status`]: periodic self-checks behind the public status page.
//! - [`pageviews`]: cookieless pageview counts from the public beacon.
//!
//! Behaviour lives in `memvault-core` and the crates beside it; persistence in `memvault-storage`. This crate is
//! the edge: it parses, authenticates, validates and maps.

pub mod api;
pub mod bench;
pub mod cli;
pub mod config;
pub mod error;
pub mod eval;
pub mod files;
pub mod pageviews;
pub mod reembed;
pub mod server;
pub mod status;
