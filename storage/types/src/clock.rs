//! The service's one source of "now". Production uses the system clock; tests move a
//! [`ManualClock`] to age memories for real (staleness, expiry) without sleeping.

use std::fmt::Debug;
use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

pub trait Clock: Debug + Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that follows the system clock shifted by an offset the owner can grow.
/// Time still passes (timestamps stay distinct and ordered); `advance` jumps ahead.
#[derive(Debug, Default)]
pub struct ManualClock {
    offset: Mutex<Duration>,
}

impl ManualClock {
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward (a negative duration moves it back).
    pub fn advance(&self, by: Duration) {
        let mut offset = self
            .offset
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *offset += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        let offset = *self
            .offset
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Utc::now() + offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_jumps_ahead_and_keeps_running() {
        let clock = ManualClock::new();
        let before = clock.now();
        clock.advance(Duration::days(100));
        let after = clock.now();
        assert!(after - before >= Duration::days(100));
        assert!(after - before < Duration::days(100) + Duration::minutes(1));
        assert!(clock.now() >= after);
    }
}
