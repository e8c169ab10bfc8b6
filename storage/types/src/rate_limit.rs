//! Per-key rate limiting: a fixed window per minute.
//!
//! Each API key has a counter for the current minute (windows start on whole minutes of
//! unix time, so `reset` is the same for every key). A request is allowed while the
//! counter is below the key's limit; refused requests do not count. Keys are independent:
//! one tenant exhausting its limit never touches another's counters.
//!
//! The limiter sits behind [`RateLimiter`] so that a shared store (several processes) can
//! replace the in-process table. Callers fail open: when [`RateLimiter::check`] answers
//! [`Unavailable`], the request goes through without rate-limit headers.

use dashmap::DashMap;

/// Length of a window in seconds.
pub const WINDOW_SECS: u64 = 60;

/// The verdict on one request, with what the `RateLimit-*` headers report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// Requests allowed per window.
    pub limit: u32,
    /// Requests left in this window after this one.
    pub remaining: u32,
    /// When the window ends, in unix seconds.
    pub reset: u64,
}

impl Decision {
    /// Seconds until the window ends (at least 1), for `Retry-After`.
    pub fn retry_after(&self, now_secs: u64) -> u64 {
        self.reset.saturating_sub(now_secs).max(1)
    }
}

/// The limiter's state could not be consulted; the caller lets the request through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rate limiter unavailable: {0}")]
pub struct Unavailable(pub String);

pub trait RateLimiter: Send + Sync + 'static {
    /// Counts one request of `key` against `limit` per window at `now_secs` (unix).
    fn check(&self, key: &str, limit: u32, now_secs: u64) -> Result<Decision, Unavailable>;
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: u64,
    count: u32,
}

/// The in-process limiter: one small entry per key seen in the current window.
pub struct FixedWindowLimiter {
    windows: DashMap<String, Window>,
    /// Most keys tracked at once. Entries of past windows are swept when it is reached;
    /// if every entry is current the limiter is full and answers [`Unavailable`].
    max_keys: usize,
}

impl FixedWindowLimiter {
    pub fn new(max_keys: usize) -> Self {
        Self {
            windows: DashMap::new(),
            max_keys: max_keys.max(1),
        }
    }

    pub fn tracked_keys(&self) -> usize {
        self.windows.len()
    }

    fn make_room(&self, current: u64) -> Result<(), Unavailable> {
        if self.windows.len() < self.max_keys {
            return Ok(());
        }
        self.windows.retain(|_, window| window.start >= current);
        if self.windows.len() >= self.max_keys {
            return Err(Unavailable(format!(
                "{} keys are active in this window, the most tracked at once",
                self.max_keys
            )));
        }
        Ok(())
    }
}

impl RateLimiter for FixedWindowLimiter {
    fn check(&self, key: &str, limit: u32, now_secs: u64) -> Result<Decision, Unavailable> {
        let start = now_secs - now_secs % WINDOW_SECS;
        let count = |window: &mut Window| {
            if window.start != start {
                *window = Window { start, count: 0 };
            }
            let allowed = window.count < limit;
            if allowed {
                window.count += 1;
            }
            Decision {
                allowed,
                limit,
                remaining: limit.saturating_sub(window.count),
                reset: start + WINDOW_SECS,
            }
        };
        // A known key is counted in place: no allocation on the common path.
        if let Some(mut window) = self.windows.get_mut(key) {
            return Ok(count(&mut window));
        }
        self.make_room(start)?;
        let mut window = self
            .windows
            .entry(key.to_owned())
            .or_insert(Window { start, count: 0 });
        Ok(count(&mut window))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const T0: u64 = 1_700_000_040; // a whole minute

    #[test]
    fn counts_down_then_refuses_until_the_next_window() {
        let limiter = FixedWindowLimiter::new(100);
        for expected in (0..3).rev() {
            let decision = limiter.check("k", 3, T0 + 5).unwrap();
            assert!(decision.allowed);
            assert_eq!(decision.remaining, expected);
            assert_eq!(decision.reset, T0 + 60);
        }
        let refused = limiter.check("k", 3, T0 + 59).unwrap();
        assert!(!refused.allowed);
        assert_eq!((refused.remaining, refused.retry_after(T0 + 59)), (0, 1));
        let next = limiter.check("k", 3, T0 + 60).unwrap();
        assert!(next.allowed);
        assert_eq!((next.remaining, next.reset), (2, T0 + 120));
    }

    #[test]
    fn keys_never_share_a_counter() {
        let limiter = FixedWindowLimiter::new(100);
        assert!(limiter.check("a", 1, T0).unwrap().allowed);
        assert!(!limiter.check("a", 1, T0).unwrap().allowed);
        assert!(limiter.check("b", 1, T0).unwrap().allowed);
    }

    #[test]
    fn past_windows_are_swept_and_a_full_table_is_unavailable() {
        let limiter = FixedWindowLimiter::new(2);
        limiter.check("a", 5, T0).unwrap();
        limiter.check("b", 5, T0).unwrap();
        assert!(limiter.check("c", 5, T0).is_err());
        assert!(
            limiter.check("a", 5, T0).unwrap().allowed,
            "known keys still count"
        );
        assert!(limiter.check("c", 5, T0 + 60).unwrap().allowed);
        assert_eq!(limiter.tracked_keys(), 1);
    }

    proptest! {
        /// Within one window exactly `limit` requests pass, whatever the interleaving of
        /// keys, and `remaining` counts down to zero.
        #[test]
        fn exactly_limit_requests_pass_per_key_and_window(
            limit in 0u32..20,
            requests in prop::collection::vec((0usize..3, 0u64..120), 0..200),
        ) {
            let limiter = FixedWindowLimiter::new(100);
            let mut requests = requests;
            requests.sort_by_key(|(_, offset)| *offset);
            let mut passed = std::collections::HashMap::new();
            for (key, offset) in requests {
                let now = T0 + offset;
                let decision = limiter.check(&key.to_string(), limit, now).unwrap();
                let count = passed.entry((key, offset / 60)).or_insert(0u32);
                prop_assert_eq!(decision.allowed, *count < limit);
                if decision.allowed {
                    *count += 1;
                }
                prop_assert_eq!(decision.remaining, limit - *count);
                prop_assert!(decision.reset > now && decision.reset <= now + 60);
            }
        }
    }
}
