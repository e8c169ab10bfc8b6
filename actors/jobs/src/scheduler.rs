//! Recurring work: each task runs when it is due, then again a period later, give or
//! take a random jitter (so that many nodes or many connectors do not fire at once).
//! A failed run is logged and counted; the next one is due as usual.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use memvault_types::Failure;
use rand::Rng;
use serde::Serialize;

/// One recurring task's schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recurring {
    /// The task's name in logs and metrics.
    pub name: &'static str,
    /// The time between two runs.
    pub period: Duration,
    /// Each wait is `period` plus a random amount in `[0, jitter]`.
    pub jitter: Duration,
    /// The first run is due at once (`true`) or after the first wait.
    pub run_at_start: bool,
}

impl Recurring {
    /// The wait before the next run, `roll` in `[0, 1)` choosing the jitter.
    pub fn wait(&self, roll: f64) -> Duration {
        self.period + self.jitter.mul_f64(roll.clamp(0.0, 1.0))
    }
}

type Task =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<(), Failure>> + Send>> + Send + Sync>;

/// What one recurring task has done.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecurringSnapshot {
    /// `extract_job_pruning`, `audit_pruning`, `status_self_check`.
    pub name: &'static str,
    pub runs: u64,
    pub failures: u64,
}

#[derive(Debug)]
struct Counters {
    name: &'static str,
    runs: AtomicU64,
    failures: AtomicU64,
}

/// Runs recurring tasks until it is stopped (or dropped with the runtime).
#[derive(Default)]
pub struct Scheduler {
    tasks: Mutex<Vec<(Arc<Counters>, tokio::task::JoinHandle<()>)>>,
}

impl Scheduler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `task` on `schedule` from now on.
    pub fn every<F, Fut>(&self, schedule: Recurring, task: F)
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), Failure>> + Send + 'static,
    {
        let task: Task = Arc::new(move || Box::pin(task()));
        let counters = Arc::new(Counters {
            name: schedule.name,
            runs: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        });
        let handle = tokio::spawn(run_recurring(schedule, task, counters.clone()));
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((counters, handle));
    }

    /// Runs and failures of every task, in the order they were added.
    pub fn snapshot(&self) -> Vec<RecurringSnapshot> {
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(counters, _)| RecurringSnapshot {
                name: counters.name,
                runs: counters.runs.load(Ordering::Relaxed),
                failures: counters.failures.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Stops every task; a run in progress is cut short.
    pub fn stop(&self) {
        for (_, handle) in self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            handle.abort();
        }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn run_recurring(schedule: Recurring, task: Task, counters: Arc<Counters>) {
    if !schedule.run_at_start {
        tokio::time::sleep(next_wait(&schedule)).await;
    }
    loop {
        let result = task().await;
        counters.runs.fetch_add(1, Ordering::Relaxed);
        if let Err(error) = result {
            counters.failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(task = schedule.name, code = error.code.as_str(), %error, "recurring task failed");
        }
        tokio::time::sleep(next_wait(&schedule)).await;
    }
}

fn next_wait(schedule: &Recurring) -> Duration {
    schedule.wait(rand::thread_rng().gen())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_the_period_plus_at_most_the_jitter() {
        let schedule = Recurring {
            name: "t",
            period: Duration::from_secs(60),
            jitter: Duration::from_secs(10),
            run_at_start: false,
        };
        assert_eq!(schedule.wait(0.0), Duration::from_secs(60));
        assert_eq!(schedule.wait(0.5), Duration::from_secs(65));
        assert_eq!(schedule.wait(7.0), Duration::from_secs(70));
        assert_eq!(schedule.wait(-1.0), Duration::from_secs(60));
    }

    #[tokio::test]
    async fn tasks_run_again_after_a_failure_and_count_both() {
        let scheduler = Scheduler::new();
        let calls = Arc::new(AtomicU64::new(0));
        let seen = calls.clone();
        scheduler.every(
            Recurring {
                name: "flaky",
                period: Duration::from_millis(5),
                jitter: Duration::from_millis(5),
                run_at_start: true,
            },
            move || {
                let call = seen.fetch_add(1, Ordering::Relaxed);
                async move {
                    if call.is_multiple_of(2) {
                        Err(Failure::internal("even call"))
                    } else {
                        Ok(())
                    }
                }
            },
        );
        for _ in 0..200 {
            if calls.load(Ordering::Relaxed) >= 4 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let snapshot = scheduler.snapshot();
        assert_eq!(snapshot.len(), 1);
        assert!(snapshot[0].runs >= 4, "{snapshot:?}");
        assert!(snapshot[0].failures >= 2, "{snapshot:?}");
        scheduler.stop();
        let stopped_at = calls.load(Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(calls.load(Ordering::Relaxed) <= stopped_at + 1);
    }
}
