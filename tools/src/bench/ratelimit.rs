//! `memvault bench --rate-limit`: what per-key rate limiting costs a request.
//!
//! 1. The limiter alone (`FixedWindowLimiter::check`): one key, and 10,000 keys in turn
//!    (a busy server), on one thread and on two threads at once.
//! 2. The whole request through the real router, in process (no sockets): a cheap
//!    authenticated GET with the limiter on and off. The difference is what the limiter
//!    adds to a request, headers included.
//!
//! Figures are printed, never asserted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use memvault_embed::EmbeddingService;
use memvault_server::status::StatusMonitor;
use memvault_types::rate_limit::{FixedWindowLimiter, RateLimiter};
use tower::ServiceExt;

use super::ingest::in_process_service;
use super::maintenance::SeededVectors;
use super::stats::Latencies;
use super::BenchError;
use memvault_server::api::ratelimit::RateLimits;
use memvault_server::api::{self, AppState};
use memvault_server::config::RateLimitConfig;

const CHECKS: u64 = 2_000_000;
const MANY_KEYS: usize = 10_000;
const REQUESTS: usize = 20_000;

fn ns_per_check(limiter: &FixedWindowLimiter, keys: &[String], checks: u64) -> f64 {
    let now = 1_700_000_040;
    let started = Instant::now();
    for index in 0..checks {
        let key = &keys[index as usize % keys.len()];
        let decision = limiter
            .check(key, u32::MAX, now)
            .expect("room for every key");
        std::hint::black_box(decision);
    }
    started.elapsed().as_nanos() as f64 / checks as f64
}

fn limiter_alone() {
    let one = vec!["key_one".to_owned()];
    let many: Vec<String> = (0..MANY_KEYS)
        .map(|index| format!("key_{index:016}"))
        .collect();
    let limiter = FixedWindowLimiter::new(2 * MANY_KEYS);
    let single = ns_per_check(&limiter, &one, CHECKS);
    let spread = ns_per_check(&limiter, &many, CHECKS);
    let shared = Arc::new(FixedWindowLimiter::new(2 * MANY_KEYS));
    let threads: Vec<_> = (0..2)
        .map(|thread| {
            let (limiter, keys) = (shared.clone(), many.clone());
            std::thread::spawn(move || {
                let mine: Vec<String> = keys.into_iter().skip(thread).step_by(2).collect();
                ns_per_check(&limiter, &mine, CHECKS)
            })
        })
        .collect();
    let parallel: Vec<f64> = threads
        .into_iter()
        .map(|thread| thread.join().expect("bench thread"))
        .collect();
    let contended: Vec<_> = (0..2)
        .map(|_| {
            let (limiter, keys) = (shared.clone(), one.clone());
            std::thread::spawn(move || ns_per_check(&limiter, &keys, CHECKS))
        })
        .collect();
    let contended: Vec<f64> = contended
        .into_iter()
        .map(|thread| thread.join().expect("bench thread"))
        .collect();
    println!("| Limiter alone (`check`) | ns per call |");
    println!("|---|---|");
    println!("| 1 key, 1 thread | {single:.0} |");
    println!("| {MANY_KEYS} keys in turn, 1 thread | {spread:.0} |");
    println!(
        "| {MANY_KEYS} keys, 2 threads on different keys | {:.0} / {:.0} |",
        parallel[0], parallel[1]
    );
    println!(
        "| 1 key, 2 threads on the same key | {:.0} / {:.0} |",
        contended[0], contended[1]
    );
}

async fn time_requests(state: AppState, key: &str) -> Result<Latencies, BenchError> {
    let router = api::router(state);
    let mut latencies = Latencies::default();
    for _ in 0..REQUESTS {
        let request = Request::get("/v1/memory/admin/me")
            .header("authorization", format!("Bearer {key}"))
            .body(Body::empty())
            .map_err(|error| BenchError::Setup(error.to_string()))?;
        let started = Instant::now();
        let response = router
            .clone()
            .oneshot(request)
            .await
            .map_err(|error| BenchError::Setup(error.to_string()))?;
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .map_err(|error| BenchError::Setup(error.to_string()))?;
        latencies.record(started.elapsed());
        std::hint::black_box(body);
    }
    Ok(latencies)
}

pub async fn run() -> Result<(), BenchError> {
    let setup = |error: String| BenchError::Setup(format!("rate-limit bench: {error}"));
    limiter_alone();
    let data = tempfile::Builder::new()
        .prefix("memvault-bench-ratelimit-")
        .tempdir()
        .map_err(|error| setup(format!("temp dir: {error}")))?;
    let embedder = EmbeddingService::start(Arc::new(SeededVectors), 1_000);
    let (service, _, _) = in_process_service(data.path(), embedder)
        .await
        .map_err(setup)?;
    let (_, key) = service
        .tenants()
        .create(memvault_core::service::NewTenant {
            name: "bench".to_owned(),
            email: "bench@example.com".to_owned(),
            tier: "bench".to_owned(),
            admin: false,
        })
        .await
        .map_err(|error| setup(error.to_string()))?;
    let status = StatusMonitor::start(
        service.scheduler(),
        service.store().clone(),
        service.embedder().clone(),
        Duration::from_secs(3600),
        Box::new(memvault_core::Supervision::default),
        None,
    );
    let connections = memvault_sync::start(&service, memvault_sync::ConnectorSettings::default())
        .await
        .map_err(|error| setup(error.to_string()))?;
    let intake = memvault_intake::start(&service, memvault_intake::IntakeSettings::default())
        .await
        .map_err(|error| setup(error.to_string()))?;
    let accounts = memvault_accounts::start(
        &service,
        intake.files(),
        memvault_accounts::AccountSettings::default(),
        memvault_accounts::BillingSettings::default(),
        memvault_accounts::EmailSettings::default(),
    )
    .await
    .map_err(|error| setup(error.to_string()))?;
    let state = |enabled: bool| {
        let config = RateLimitConfig {
            enabled,
            per_minute: u32::MAX,
            ..RateLimitConfig::default()
        };
        AppState::new(
            &service,
            connections.clone(),
            intake.clone(),
            accounts.clone(),
            status.clone(),
            1 << 20,
            RateLimits::from_config(&config),
        )
    };
    // Warm up both paths, then alternate so drift hits both alike.
    time_requests(state(true), &key).await?;
    time_requests(state(false), &key).await?;
    let on = time_requests(state(true), &key).await?;
    let off = time_requests(state(false), &key).await?;
    println!();
    println!("| GET /v1/memory/admin/me through the router, in process | p50 | p95 |");
    println!("|---|---|---|");
    for (label, latencies) in [("limiter on", &on), ("limiter off", &off)] {
        println!(
            "| {label} | {:.2} µs | {:.2} µs |",
            latencies.quantile(0.5).as_secs_f64() * 1e6,
            latencies.quantile(0.95).as_secs_f64() * 1e6
        );
    }
    let added = on.quantile(0.5).as_secs_f64() - off.quantile(0.5).as_secs_f64();
    println!(
        "\nThe limiter adds {:.2} µs per request at the median ({REQUESTS} requests each).",
        added * 1e6
    );
    Ok(())
}
