//! One module per group of pages; each exposes `routes()` with full paths under
//! `/dashboard`, and its handlers: a read renders a page, a change (POST) calls the API in
//! process and redirects back (303) or shows the API's error.

pub mod account;
pub mod audit;
pub mod collections;
pub mod connectors;
pub mod files;
pub mod keys;
pub mod login;
pub mod memories;
pub mod operator;
pub mod overview;
pub mod usage;
pub mod webhook;
