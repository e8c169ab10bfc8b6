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

type Decide = Arc<dyn Fn(&'static str) -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync>;

/// Whether this node takes a cluster-wide task's turn (several nodes share the work):
/// asked before each run with the task's name.
#[derive(Clone)]
pub struct WorkGate(Decide);

impl WorkGate {
    pub fn new<F, Fut>(decide: F) -> Self
    where
        F: Fn(&'static str) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        Self(Arc::new(move |name| Box::pin(decide(name))))
    }

    /// Whether this node runs the task's turn now.
    pub async fn grants(&self, task: &'static str) -> bool {
        (self.0)(task).await
    }
}

impl std::fmt::Debug for WorkGate {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("WorkGate")
    }
}

/// Runs recurring tasks until it is stopped (or dropped with the runtime).
#[derive(Default)]
pub struct Scheduler {
    tasks: Mutex<Vec<(Arc<Counters>, tokio::task::JoinHandle<()>)>>,
    /// Decides the turns of cluster-wide tasks; `None` (one node): every turn is ours.
    gate: Option<WorkGate>,
}

impl Scheduler {
    pub fn new() -> Self {
        Self::default()
    }

    /// A scheduler whose cluster-wide tasks run only on the turns `gate` grants.
    pub fn with_gate(gate: Option<WorkGate>) -> Self {
        Self {
            tasks: Mutex::default(),
            gate,
        }
    }

    /// Runs `task` on `schedule` from now on.
    pub fn every<F, Fut>(&self, schedule: Recurring, task: F)
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), Failure>> + Send + 'static,
    {
        self.spawn(schedule, task, None);
    }

    /// Runs `task` on `schedule`, once per turn across every node sharing the work (work
    /// on shared data, such as pruning): a node runs a turn only when the gate grants it.
    pub fn every_cluster_wide<F, Fut>(&self, schedule: Recurring, task: F)
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), Failure>> + Send + 'static,
    {
        self.spawn(schedule, task, self.gate.clone());
    }

    fn spawn<F, Fut>(&self, schedule: Recurring, task: F, gate: Option<WorkGate>)
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
        let handle = tokio::spawn(run_recurring(schedule, task, gate, counters.clone()));
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

async fn run_recurring(
    schedule: Recurring,
    task: Task,
    gate: Option<WorkGate>,
    counters: Arc<Counters>,
) {
    if !schedule.run_at_start {
        tokio::time::sleep(next_wait(&schedule)).await;
    }
    loop {
        if let Some(gate) = &gate {
            if !gate.grants(schedule.name).await {
                tokio::time::sleep(next_wait(&schedule)).await;
                continue;
            }
        }
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
    async fn a_cluster_wide_task_runs_only_the_turns_its_gate_grants() {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = asked.clone();
        let turn = Arc::new(AtomicU64::new(0));
        let gate = WorkGate::new(move |name| {
            seen.lock().unwrap().push(name);
            let granted = turn.fetch_add(1, Ordering::Relaxed).is_multiple_of(3);
            async move { granted }
        });
        let scheduler = Scheduler::with_gate(Some(gate));
        let (shared, local) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let schedule = |name| Recurring {
            name,
            period: Duration::from_millis(2),
            jitter: Duration::ZERO,
            run_at_start: true,
        };
        let counted = shared.clone();
        scheduler.every_cluster_wide(schedule("pruning"), move || {
            counted.fetch_add(1, Ordering::Relaxed);
            async { Ok(()) }
        });
        let counted = local.clone();
        scheduler.every(schedule("self_check"), move || {
            counted.fetch_add(1, Ordering::Relaxed);
            async { Ok(()) }
        });
        for _ in 0..500 {
            if asked.lock().unwrap().len() >= 12 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        scheduler.stop();
        let asked = asked.lock().unwrap().clone();
        assert!(asked.iter().all(|name| *name == "pruning"), "{asked:?}");
        let (granted, runs) = (
            asked.len().div_ceil(3) as u64,
            shared.load(Ordering::Relaxed),
        );
        assert!(
            runs == granted || runs + 1 == granted,
            "{runs} runs, {granted} granted"
        );
        assert_eq!(scheduler.snapshot().len(), 0, "stopped");
        assert!(
            local.load(Ordering::Relaxed) > 0,
            "a task of this node's own is not gated"
        );
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
