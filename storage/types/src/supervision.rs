//! One restart policy for every supervisor of the service: the root restarting tenant
//! actors, tenant actors restarting collection actors, job supervisors restarting their
//! workers.
//!
//! A child that fails is restarted after the policy's [`Backoff`], longer with each
//! consecutive failure. Failures are remembered: a failure more than `memory` after the
//! previous one starts the count again. A child that has failed `degrade_after` times in
//! a row is **degraded**: it is still restarted (at the back-off's longest wait, so a
//! cause that went away is found), and the state is visible to `/v1/status` and the
//! operator metrics until the child has run `memory` without failing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::Backoff;

/// How a supervisor restarts its children.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// The wait before a restart, by consecutive failures.
    pub backoff: Backoff,
    /// A failure this long after the previous one is counted as the first again, and a
    /// degraded child that runs this long without failing has recovered.
    pub memory: Duration,
    /// Consecutive failures after which the child is degraded.
    pub degrade_after: u32,
}

impl RestartPolicy {
    /// The service's policy for actors: 100 ms doubling to 5 s, degraded after 10
    /// failures with less than a minute between them.
    pub const ACTORS: Self = Self {
        backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(5)),
        memory: Duration::from_secs(60),
        degrade_after: 10,
    };
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self::ACTORS
    }
}

/// A supervised child's failures: recorded by its supervisor, read by whoever reports
/// on the service's health. Cheap to share behind an `Arc`.
#[derive(Debug, Default)]
pub struct Supervised {
    history: Mutex<History>,
    restarts: AtomicU64,
}

#[derive(Debug, Default, Clone, Copy)]
struct History {
    /// Consecutive failures (each within `memory` of the previous one).
    failures: u32,
    last: Option<Instant>,
}

impl Supervised {
    /// Counts a failure at `now` and answers how long to wait before the restart.
    pub fn failed(&self, policy: &RestartPolicy, now: Instant) -> Duration {
        let mut history = self.history.lock().unwrap_or_else(PoisonError::into_inner);
        let remembered = history
            .last
            .is_some_and(|last| now.saturating_duration_since(last) <= policy.memory);
        history.failures = if remembered {
            history.failures.saturating_add(1)
        } else {
            1
        };
        history.last = Some(now);
        self.restarts.fetch_add(1, Ordering::Relaxed);
        policy.backoff.delay(history.failures)
    }

    /// Consecutive failures so far (0 once the child has run `memory` without failing).
    pub fn failures(&self, policy: &RestartPolicy, now: Instant) -> u32 {
        let history = *self.history.lock().unwrap_or_else(PoisonError::into_inner);
        match history.last {
            Some(last) if now.saturating_duration_since(last) <= policy.memory => history.failures,
            _ => 0,
        }
    }

    /// Whether the child is degraded at `now` (see the module's description).
    pub fn is_degraded(&self, policy: &RestartPolicy, now: Instant) -> bool {
        self.failures(policy, now) >= policy.degrade_after.max(1)
    }

    /// Restarts since the process started.
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RestartPolicy = RestartPolicy {
        backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(5)),
        memory: Duration::from_secs(60),
        degrade_after: 3,
    };

    #[test]
    fn waits_longer_with_each_failure_and_degrades_after_the_threshold() {
        let child = Supervised::default();
        let start = Instant::now();
        let waits: Vec<Duration> = (0..4)
            .map(|n| child.failed(&POLICY, start + Duration::from_secs(n)))
            .collect();
        assert_eq!(
            waits,
            [100, 200, 400, 800].map(Duration::from_millis).to_vec()
        );
        assert!(child.is_degraded(&POLICY, start + Duration::from_secs(4)));
        assert_eq!(child.restarts(), 4);
    }

    #[test]
    fn a_quiet_spell_forgets_the_failures_and_ends_the_degradation() {
        let child = Supervised::default();
        let start = Instant::now();
        for n in 0..3 {
            child.failed(&POLICY, start + Duration::from_secs(n));
        }
        assert!(child.is_degraded(&POLICY, start + Duration::from_secs(30)));
        let later = start + Duration::from_secs(2) + POLICY.memory + Duration::from_secs(1);
        assert!(!child.is_degraded(&POLICY, later));
        assert_eq!(child.failures(&POLICY, later), 0);
        // The next failure counts as the first again.
        assert_eq!(child.failed(&POLICY, later), Duration::from_millis(100));
        assert_eq!(child.restarts(), 4, "restarts are never forgotten");
    }
}
