//! Periodic self-checks behind the public `GET /v1/status`: each check reads the store and
//! embeds a short text, and its outcome is kept for 24 hours. No tenant data is involved.
//! The checks are a recurring task (`status_self_check`) on the service's scheduler; they
//! need the store and the embedder, not the service. The report also says what the
//! supervisors find degraded (counts and kind names only, through a closure the server
//! gives: `Operator::supervision`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Duration as ChronoDuration, Utc};
use memvault_core::Supervision;
use memvault_embed::EmbeddingService;
use memvault_jobs::{Recurring, Scheduler};
use memvault_storage::Store;

const HISTORY: ChronoDuration = ChronoDuration::hours(24);
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);
const RECENT_CHECKS_SHOWN: usize = 20;

#[derive(Debug, Clone, PartialEq)]
pub struct HealthCheck {
    pub at: DateTime<Utc>,
    pub ok: bool,
    pub latency_ms: f64,
    /// Why the check failed; None when it passed.
    pub detail: Option<String>,
}

/// A run of consecutive failed checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Incident {
    pub started_at: DateTime<Utc>,
    /// None while the incident is ongoing.
    pub resolved_at: Option<DateTime<Utc>>,
    pub failed_checks: usize,
    pub detail: String,
}

/// Where the report learns what is degraded.
pub type DegradedSource = Box<dyn Fn() -> Supervision + Send + Sync>;

#[derive(Debug, Clone, PartialEq)]
pub struct StatusReport {
    /// `operational` when the last check passed and nothing is degraded, `degraded`
    /// otherwise.
    pub state: &'static str,
    pub started_at: DateTime<Utc>,
    /// Percentage of passed checks in the last 24 hours (100 before the first check).
    pub uptime_24h_percent: f64,
    pub checks_24h: usize,
    /// Newest first.
    pub recent_checks: Vec<HealthCheck>,
    /// Newest first.
    pub incidents: Vec<Incident>,
    /// What the supervisors find degraded now.
    pub degraded: Supervision,
}

pub struct StatusMonitor {
    started_at: DateTime<Utc>,
    /// Checks of the last 24 hours, oldest first.
    history: Mutex<VecDeque<HealthCheck>>,
    degraded: DegradedSource,
    /// Where the history is saved after each check, and read back at start.
    journal: Option<std::path::PathBuf>,
}

/// A check as saved in the journal.
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedCheck {
    at: DateTime<Utc>,
    ok: bool,
    latency_ms: f64,
    detail: Option<String>,
}

impl StatusMonitor {
    /// A monitor with no checks yet, started now; [`StatusMonitor::start`] runs the checks.
    pub fn new(degraded: DegradedSource) -> Self {
        Self {
            started_at: Utc::now(),
            history: Mutex::new(VecDeque::new()),
            degraded,
            journal: None,
        }
    }

    /// A monitor that starts from the checks saved at `journal` (those of the last 24
    /// hours; a missing or damaged file is an empty history) and saves each new check
    /// there.
    pub fn with_journal(degraded: DegradedSource, journal: std::path::PathBuf) -> Self {
        let saved: Vec<SavedCheck> = std::fs::read(&journal)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        let horizon = Utc::now() - HISTORY;
        let history = saved
            .into_iter()
            .filter(|check| check.at >= horizon)
            .map(|check| HealthCheck {
                at: check.at,
                ok: check.ok,
                latency_ms: check.latency_ms,
                detail: check.detail,
            })
            .collect();
        Self {
            started_at: Utc::now(),
            history: Mutex::new(history),
            degraded,
            journal: Some(journal),
        }
    }

    /// Saves the history to the journal, if there is one.
    fn save(&self) {
        let Some(journal) = &self.journal else {
            return;
        };
        let saved: Vec<SavedCheck> = {
            let history = self
                .history
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            history
                .iter()
                .map(|check| SavedCheck {
                    at: check.at,
                    ok: check.ok,
                    latency_ms: check.latency_ms,
                    detail: check.detail.clone(),
                })
                .collect()
        };
        let bytes = serde_json::to_vec(&saved).unwrap_or_default();
        if let Err(error) = crate::pageviews::write_atomically(journal, &bytes) {
            tracing::warn!(path = %journal.display(), %error, "status history not saved");
        }
    }

    /// Runs a first check now and then one every `interval` on `scheduler`, until it
    /// stops (with the service).
    pub fn start(
        scheduler: &Scheduler,
        store: Arc<dyn Store>,
        embedder: EmbeddingService,
        interval: Duration,
        degraded: DegradedSource,
        journal: Option<std::path::PathBuf>,
    ) -> Arc<Self> {
        let monitor = Arc::new(match journal {
            Some(journal) => Self::with_journal(degraded, journal),
            None => Self::new(degraded),
        });
        let weak = Arc::downgrade(&monitor);
        let schedule = Recurring {
            name: "status_self_check",
            period: interval,
            jitter: Duration::ZERO,
            run_at_start: true,
        };
        scheduler.every(schedule, move || {
            let (weak, store, embedder) = (weak.clone(), store.clone(), embedder.clone());
            async move {
                let Some(monitor) = weak.upgrade() else {
                    return Ok(());
                };
                let check = run_check(store, &embedder).await;
                let outcome = match &check.detail {
                    None => Ok(()),
                    Some(detail) => Err(memvault_types::Failure::internal(detail.clone())),
                };
                monitor.record(check);
                let saving = monitor.clone();
                let _ = tokio::task::spawn_blocking(move || saving.save()).await;
                outcome
            }
        });
        monitor
    }

    pub fn record(&self, check: HealthCheck) {
        let mut history = self
            .history
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let horizon = check.at - HISTORY;
        history.push_back(check);
        while history.front().is_some_and(|oldest| oldest.at < horizon) {
            history.pop_front();
        }
    }

    pub fn report(&self) -> StatusReport {
        let history = self
            .history
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let passed = history.iter().filter(|check| check.ok).count();
        let uptime = if history.is_empty() {
            100.0
        } else {
            passed as f64 * 100.0 / history.len() as f64
        };
        let degraded = (self.degraded)();
        let state = match history.back() {
            Some(last) if !last.ok => "degraded",
            _ if degraded.is_degraded() => "degraded",
            _ => "operational",
        };
        StatusReport {
            state,
            started_at: self.started_at,
            uptime_24h_percent: (uptime * 100.0).round() / 100.0,
            checks_24h: history.len(),
            recent_checks: history
                .iter()
                .rev()
                .take(RECENT_CHECKS_SHOWN)
                .cloned()
                .collect(),
            incidents: incidents(&history),
            degraded,
        }
    }
}

fn incidents(history: &VecDeque<HealthCheck>) -> Vec<Incident> {
    let mut found: Vec<Incident> = Vec::new();
    let mut open: Option<Incident> = None;
    for check in history {
        match (&mut open, check.ok) {
            (None, false) => {
                open = Some(Incident {
                    started_at: check.at,
                    resolved_at: None,
                    failed_checks: 1,
                    detail: check.detail.clone().unwrap_or_default(),
                })
            }
            (Some(incident), false) => incident.failed_checks += 1,
            (Some(_), true) => {
                if let Some(mut incident) = open.take() {
                    incident.resolved_at = Some(check.at);
                    found.push(incident);
                }
            }
            (None, true) => {}
        }
    }
    found.extend(open);
    found.reverse();
    found
}

async fn run_check(store: Arc<dyn Store>, embedder: &EmbeddingService) -> HealthCheck {
    let started = Instant::now();
    let store_check = tokio::task::spawn_blocking(move || store.tenants().map(|_| ()));
    let embed_check = embedder.embed_one("memvault status self-check".to_owned());
    let outcome = tokio::time::timeout(CHECK_TIMEOUT, async {
        match store_check.await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(format!("store: {error}")),
            Err(error) => return Err(format!("store: {error}")),
        }
        embed_check
            .await
            .map(|_| ())
            .map_err(|error| format!("embedder: {error}"))
    })
    .await
    .unwrap_or_else(|_| Err("check timed out".to_owned()));
    HealthCheck {
        at: Utc::now(),
        ok: outcome.is_ok(),
        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        detail: outcome.err(),
    }
}
