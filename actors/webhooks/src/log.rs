//! The recent delivery attempts of each tenant, for its dashboard and
//! `GET /v1/memory/webhook/deliveries`: the last [`RECENT_ATTEMPTS`] per tenant, newest
//! first, kept in memory by the node that sends them (the outbox keeps only what is still
//! to be sent; a delivered event leaves it). A restart starts an empty log; what was
//! still pending is in the outbox and is sent again.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use memvault_storage::TenantId;

/// Attempts kept per tenant.
pub const RECENT_ATTEMPTS: usize = 50;

/// One POST of a delivery, as it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRecord {
    /// The delivery's id (`X-Service-Delivery`, the body's `id`): the same on every
    /// attempt of one event.
    pub delivery: String,
    /// `memory.created`, `memory.updated` or `memory.deleted`.
    pub event: String,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// When the attempt ended.
    pub at: DateTime<Utc>,
    /// How long it took, in milliseconds.
    pub millis: u64,
    pub outcome: AttemptOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The receiver answered 2xx.
    Delivered,
    /// Any other answer or a transport error; `retrying` when another attempt follows.
    Failed { reason: String, retrying: bool },
}

impl AttemptOutcome {
    /// `delivered`, `retrying` or `failed` (the last attempt failed: given up).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Failed { retrying: true, .. } => "retrying",
            Self::Failed { .. } => "failed",
        }
    }

    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Delivered => None,
            Self::Failed { reason, .. } => Some(reason),
        }
    }
}

/// Every tenant's recent attempts; cheap to clone (one shared map).
#[derive(Clone, Default)]
pub struct DeliveryLog {
    tenants: Arc<Mutex<HashMap<TenantId, VecDeque<AttemptRecord>>>>,
}

impl DeliveryLog {
    /// Adds an attempt, dropping the tenant's oldest beyond [`RECENT_ATTEMPTS`].
    pub fn record(&self, tenant: &TenantId, attempt: AttemptRecord) {
        let mut tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
        let recent = tenants.entry(tenant.clone()).or_default();
        recent.push_front(attempt);
        recent.truncate(RECENT_ATTEMPTS);
    }

    /// The tenant's recent attempts, newest first.
    pub fn recent(&self, tenant: &TenantId) -> Vec<AttemptRecord> {
        let tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
        tenants
            .get(tenant)
            .map(|recent| recent.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Forgets a tenant's attempts (its webhook was removed, or the tenant erased).
    pub fn forget(&self, tenant: &TenantId) {
        let mut tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
        tenants.remove(tenant);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(delivery: &str, outcome: AttemptOutcome) -> AttemptRecord {
        AttemptRecord {
            delivery: delivery.to_owned(),
            event: "memory.created".to_owned(),
            attempt: 1,
            at: Utc::now(),
            millis: 3,
            outcome,
        }
    }

    #[test]
    fn keeps_the_newest_attempts_of_each_tenant_apart() {
        let log = DeliveryLog::default();
        let (one, two) = (TenantId::generate(), TenantId::generate());
        for index in 0..RECENT_ATTEMPTS + 5 {
            log.record(
                &one,
                attempt(&format!("d{index}"), AttemptOutcome::Delivered),
            );
        }
        let failed = AttemptOutcome::Failed {
            reason: "HTTP 500".to_owned(),
            retrying: true,
        };
        log.record(&two, attempt("x", failed.clone()));
        let recent = log.recent(&one);
        assert_eq!(recent.len(), RECENT_ATTEMPTS);
        assert_eq!(recent[0].delivery, format!("d{}", RECENT_ATTEMPTS + 4));
        assert_eq!(recent.last().unwrap().delivery, "d5");
        assert_eq!(log.recent(&two)[0].outcome, failed);
        assert_eq!(failed.as_str(), "retrying");
        log.forget(&one);
        assert!(log.recent(&one).is_empty());
        assert_eq!(log.recent(&two).len(), 1);
    }
}
