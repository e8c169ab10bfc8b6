//! The server library's parts, without a running server: configuration, the error table,
//! body and form parsing, the MCP schemas, the audit declarations, status and pageviews.
//!
//! They are one integration test rather than unit tests in `src/`: a unit test builds the
//! whole crate a second time (optimised, as `cargo test --release` builds), which took
//! three minutes of CPU; this binary only links the library.

mod admin;
mod audit;
mod client;
mod config;
mod dashboard;
mod email;
mod error;
mod extract;
mod files;
mod internal;
mod mcp_schema;
mod mcp_tools;
mod memories;
mod pageviews;
mod status;
