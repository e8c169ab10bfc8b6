//! One back-off policy for every retry and restart in the service: job retries, worker
//! and actor restarts, LLM calls and webhook deliveries all wait by a [`Backoff`].

use std::time::Duration;

/// Exponential back-off: the wait after the `n`-th consecutive failure (1-based) is
/// `initial × 2^(n-1)`, never more than `max`. A fixed delay has `initial == max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failure.
    pub initial: Duration,
    /// The longest wait, whatever the failure count.
    pub max: Duration,
}

impl Backoff {
    pub const fn new(initial: Duration, max: Duration) -> Self {
        Self { initial, max }
    }

    /// The same wait after every failure.
    pub const fn fixed(delay: Duration) -> Self {
        Self::new(delay, delay)
    }

    /// The wait after the `failures`-th consecutive failure; `0` and `1` both give
    /// `initial`.
    pub fn delay(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        self.initial
            .saturating_mul(1_u32 << doublings)
            .min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_the_first_failure_and_is_capped() {
        let backoff = Backoff::new(Duration::from_secs(2), Duration::from_secs(3600));
        assert_eq!(backoff.delay(0), Duration::from_secs(2));
        assert_eq!(backoff.delay(1), Duration::from_secs(2));
        assert_eq!(backoff.delay(2), Duration::from_secs(4));
        assert_eq!(backoff.delay(5), Duration::from_secs(32));
        assert_eq!(backoff.delay(12), Duration::from_secs(3600));
        assert_eq!(backoff.delay(u32::MAX), Duration::from_secs(3600));
    }

    #[test]
    fn a_fixed_backoff_never_grows() {
        let backoff = Backoff::fixed(Duration::from_millis(200));
        assert_eq!(backoff.delay(1), Duration::from_millis(200));
        assert_eq!(backoff.delay(40), Duration::from_millis(200));
    }
}
