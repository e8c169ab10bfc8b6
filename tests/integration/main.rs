//! Black-box HTTP tests over a real listening server, compiled as one binary.
//!
//! Most tests share one in-process server on `127.0.0.1:0` (a temp data dir) and make a
//! fresh tenant each; tests of the process itself (crash safety, start-up contract,
//! signals) spawn the real binary.

mod access;
mod account;
mod basics;
mod billing;
mod cluster;
mod cluster_faults;
mod collections;
mod connectors;
mod dashboard;
mod database;
mod durability;
mod email;
mod erasure;
mod errors;
mod files;
mod files_s3;
mod files_storage;
mod files_transcription;
mod files_vision;
mod graph;
mod history;
mod ingest_worker;
mod internal;
mod isolation;
mod keys;
mod llm;
mod maintenance;
mod mcp;
mod memories;
mod openapi;
mod operator;
mod portability;
mod probes;
mod proxy;
mod reembed;
mod search;
mod smtp_sink;
mod startup;
mod support;
mod tiers;
mod webhooks;
