//! Resident tasks: the few long-lived loops that are not jobs (the audit log's writer, the
//! recorder that turns memory events into webhook deliveries), under the one restart
//! policy. Each consumes a channel until it closes; its state lives outside the task (the
//! receiving end, shared with the supervisor), so a restarted loop goes on where the
//! failed one stopped.
//!
//! A loop that returns has finished (its channel closed at shutdown) and is not
//! restarted. A loop that panics is restarted after the policy's back-off, its failures
//! remembered in [`Supervised`]: degraded after `degrade_after` in a row, which the
//! operator metrics and `/v1/status` show.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use memvault_types::{RestartPolicy, Supervised};

/// A long-lived loop and its supervisor; see the module's description.
pub struct Resident {
    name: &'static str,
    policy: RestartPolicy,
    health: Arc<Supervised>,
    finished: Arc<AtomicBool>,
    supervisor: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The run in progress (a task of its own, so that a panic ends the run and not the
    /// supervisor), so that stopping can cut it short too.
    run: Arc<Mutex<Option<tokio::task::AbortHandle>>>,
}

impl Resident {
    /// Runs `start()` now, and again after each panic, until a run returns.
    pub fn start<F, Fut>(name: &'static str, policy: RestartPolicy, start: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let health = Arc::new(Supervised::default());
        let finished = Arc::new(AtomicBool::new(false));
        let run = Arc::new(Mutex::new(None));
        let supervisor = tokio::spawn(supervise(
            name,
            policy,
            start,
            Watch {
                health: health.clone(),
                finished: finished.clone(),
                run: run.clone(),
            },
        ));
        Self {
            name,
            policy,
            health,
            finished,
            supervisor: Mutex::new(Some(supervisor)),
            run,
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether the loop runs (or waits out a back-off before its restart): false once it
    /// has finished or been stopped.
    pub fn is_running(&self) -> bool {
        !self.finished.load(Ordering::Acquire)
            && self
                .supervisor
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .is_some_and(|supervisor| !supervisor.is_finished())
    }

    /// Whether it has failed `degrade_after` times in a row.
    pub fn is_degraded(&self) -> bool {
        self.health.is_degraded(&self.policy, Instant::now())
    }

    /// Restarts since it started.
    pub fn restarts(&self) -> u64 {
        self.health.restarts()
    }

    /// Waits up to `timeout` for the loop to finish (its channel closed), then stops it;
    /// when this returns, neither the supervisor nor a run holds anything of the loop's.
    pub async fn join(&self, timeout: Duration) {
        let supervisor = self
            .supervisor
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut supervisor) = supervisor {
            if tokio::time::timeout(timeout, &mut supervisor)
                .await
                .is_err()
            {
                if !timeout.is_zero() {
                    tracing::warn!(task = self.name, "did not finish in time; stopped");
                }
                supervisor.abort();
                let _ = supervisor.await;
            }
        }
        let run = self
            .run
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(run) = run {
            run.abort();
            // An aborted task lets go of its state the next time the runtime polls it.
            let deadline = Instant::now() + Duration::from_secs(10);
            while !run.is_finished() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        self.finished.store(true, Ordering::Release);
    }

    /// Stops the loop now (a run in progress is cut short).
    pub async fn stop(&self) {
        self.join(Duration::ZERO).await;
    }
}

/// What the supervisor shares with the [`Resident`] handle.
struct Watch {
    health: Arc<Supervised>,
    finished: Arc<AtomicBool>,
    run: Arc<Mutex<Option<tokio::task::AbortHandle>>>,
}

async fn supervise<F, Fut>(name: &'static str, policy: RestartPolicy, start: F, watch: Watch)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Watch {
        health,
        finished,
        run,
    } = watch;
    loop {
        // A task of its own, so a panic ends the run and not the supervisor.
        let current = tokio::spawn(start());
        *run.lock().unwrap_or_else(PoisonError::into_inner) = Some(current.abort_handle());
        match current.await {
            Ok(()) => break,
            Err(error) if error.is_cancelled() => break,
            Err(error) => {
                let wait = health.failed(&policy, Instant::now());
                tracing::error!(
                    task = name,
                    %error,
                    restart_in_ms = wait.as_millis() as u64,
                    degraded = health.is_degraded(&policy, Instant::now()),
                    "resident task failed; restarting"
                );
                tokio::time::sleep(wait).await;
            }
        }
    }
    finished.store(true, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use memvault_types::Backoff;
    use tokio::sync::mpsc;

    use super::*;

    const QUICK: RestartPolicy = RestartPolicy {
        backoff: Backoff::new(Duration::from_millis(1), Duration::from_millis(5)),
        memory: Duration::from_secs(60),
        degrade_after: 3,
    };

    /// A consumer that panics on the items it is told to, over a receiver it shares
    /// with its supervisor.
    fn consumer(
        receiver: mpsc::UnboundedReceiver<u32>,
        poison: fn(u32) -> bool,
    ) -> (Resident, Arc<Mutex<Vec<u32>>>) {
        let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let resident = Resident::start("test_consumer", QUICK, {
            let seen = seen.clone();
            move || {
                let (receiver, seen) = (receiver.clone(), seen.clone());
                async move {
                    let mut receiver = receiver.lock().await;
                    while let Some(item) = receiver.recv().await {
                        assert!(!poison(item), "poisoned item {item}");
                        seen.lock().unwrap().push(item);
                    }
                }
            }
        });
        (resident, seen)
    }

    #[tokio::test]
    async fn a_panicking_loop_is_restarted_and_goes_on_from_where_it_stopped() {
        let (sender, receiver) = mpsc::unbounded_channel();
        let (resident, seen) = consumer(receiver, |item| item == 2 || item == 4);
        for item in 1..=6 {
            sender.send(item).unwrap();
        }
        drop(sender);
        resident.join(Duration::from_secs(10)).await;
        assert_eq!(*seen.lock().unwrap(), vec![1, 3, 5, 6]);
        assert_eq!(resident.restarts(), 2);
        assert!(!resident.is_degraded());
        assert!(!resident.is_running(), "finished when its channel closed");
    }

    #[tokio::test]
    async fn failing_again_and_again_degrades_and_running_clean_is_not_restarted() {
        let (sender, receiver) = mpsc::unbounded_channel();
        let (resident, seen) = consumer(receiver, |item| item < 100);
        for item in 0..3 {
            sender.send(item).unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while resident.restarts() < 3 {
            assert!(Instant::now() < deadline, "not restarted three times");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(resident.is_degraded());
        assert!(resident.is_running(), "still restarted while degraded");
        sender.send(100).unwrap();
        drop(sender);
        resident.join(Duration::from_secs(10)).await;
        assert_eq!(*seen.lock().unwrap(), vec![100]);
        assert_eq!(resident.restarts(), 3);
    }

    #[tokio::test]
    async fn stop_ends_a_loop_that_would_wait_forever_and_releases_what_it_held() {
        let (sender, receiver) = mpsc::unbounded_channel::<u32>();
        let held = Arc::new(());
        let resident = Resident::start("test_holder", QUICK, {
            let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
            let held = held.clone();
            move || {
                let (receiver, held) = (receiver.clone(), held.clone());
                async move {
                    let _held = held;
                    while receiver.lock().await.recv().await.is_some() {}
                }
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(resident.is_running());
        assert!(Arc::strong_count(&held) > 1);
        resident.stop().await;
        assert!(!resident.is_running());
        drop(resident);
        assert_eq!(
            Arc::strong_count(&held),
            1,
            "the run and the supervisor let go"
        );
        drop(sender);
    }
}
