//! Tier limits: how many collections and memories, and how many bytes of files, an
//! account of each tier may hold (config `[tiers.<tier>]`; the requests per minute are
//! the rate limiter's, `[rate_limit.tiers]`).
//!
//! A write that would go over a limit is refused before anything is embedded or stored
//! (`memvault_core::Error::TierLimitReached`, 403 `tier_limit_reached`); deleting makes room
//! again. The check reads the published snapshots (counts are O(collections)), so two
//! concurrent writes may together pass a limit by one request's worth. A tier that is not
//! configured has no limits, nor has a limit left out of its table.

use std::collections::BTreeMap;

/// One tier's limits; `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TierLimits {
    pub collections: Option<u64>,
    pub memories: Option<u64>,
    /// Bytes of stored files (drops, uploads, attachments) in the platform's storage.
    pub storage_bytes: Option<u64>,
}

/// Every configured tier's limits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tiers {
    by_tier: BTreeMap<String, TierLimits>,
}

impl Tiers {
    pub fn new(by_tier: BTreeMap<String, TierLimits>) -> Self {
        Self { by_tier }
    }

    /// The limits of `tier`; none for a tier that is not configured.
    pub fn limits(&self, tier: &str) -> TierLimits {
        self.by_tier.get(tier).copied().unwrap_or_default()
    }
}

/// What a write adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Growth {
    Collection,
    Memories(u64),
    StorageBytes(u64),
}

/// What an account holds now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    pub collections: u64,
    pub memories: u64,
    pub storage_bytes: u64,
}

/// Why a write does not fit: the limit's name, the limit and what is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverLimit {
    pub what: &'static str,
    pub limit: u64,
    pub held: u64,
}

impl TierLimits {
    /// Whether `growth` fits next to `held`.
    pub fn admit(&self, held: &Held, growth: Growth) -> Result<(), OverLimit> {
        let (what, limit, held, adding) = match growth {
            Growth::Collection => ("collections", self.collections, held.collections, 1),
            Growth::Memories(count) => ("memories", self.memories, held.memories, count),
            Growth::StorageBytes(bytes) => (
                "storage bytes",
                self.storage_bytes,
                held.storage_bytes,
                bytes,
            ),
        };
        match limit {
            Some(limit) if held.saturating_add(adding) > limit => {
                Err(OverLimit { what, limit, held })
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> TierLimits {
        TierLimits {
            collections: Some(2),
            memories: Some(10),
            storage_bytes: Some(100),
        }
    }

    #[test]
    fn a_write_fits_up_to_the_limit_and_not_past_it() {
        let held = Held {
            collections: 1,
            memories: 8,
            storage_bytes: 60,
        };
        assert_eq!(limits().admit(&held, Growth::Collection), Ok(()));
        assert_eq!(limits().admit(&held, Growth::Memories(2)), Ok(()));
        assert_eq!(
            limits().admit(&held, Growth::Memories(3)),
            Err(OverLimit {
                what: "memories",
                limit: 10,
                held: 8
            })
        );
        assert_eq!(limits().admit(&held, Growth::StorageBytes(40)), Ok(()));
        assert!(limits().admit(&held, Growth::StorageBytes(41)).is_err());
        let full = Held {
            collections: 2,
            ..held
        };
        assert!(limits().admit(&full, Growth::Collection).is_err());
    }

    #[test]
    fn unconfigured_tiers_and_limits_are_unlimited() {
        let tiers = Tiers::new(BTreeMap::from([(
            "free".to_owned(),
            TierLimits {
                memories: Some(1),
                ..TierLimits::default()
            },
        )]));
        let held = Held {
            collections: u64::MAX - 1,
            memories: 1,
            storage_bytes: u64::MAX,
        };
        assert!(tiers
            .limits("free")
            .admit(&held, Growth::Memories(1))
            .is_err());
        assert_eq!(
            tiers.limits("free").admit(&held, Growth::Collection),
            Ok(())
        );
        assert_eq!(
            tiers.limits("free").admit(&held, Growth::StorageBytes(9)),
            Ok(())
        );
        assert_eq!(
            tiers.limits("pro").admit(&held, Growth::Memories(1_000)),
            Ok(())
        );
    }
}
