//! The tools' parts: the evaluation formats and metrics, the bench's statistics, corpus and
//! generated data, the re-embedding progress.
//!
//! One integration test rather than unit tests in `src/`: a unit test target builds the
//! whole crate a second time, optimised.

mod beir;
mod corpus;
mod locomo;
mod maintenance;
mod metrics;
mod reembed;
mod stats;
