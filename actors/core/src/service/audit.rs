//! The audit log's use cases: record an entry (queued, never waits) and read a tenant's
//! log newest first.

use std::sync::Arc;

use memvault_storage::{AuditEntry, Store, TenantId};

use super::tree::Tree;
use crate::audit::AuditLog;
use crate::call::blocking;
use crate::error::Result;

/// The audit log: record an entry, read a tenant's log.
#[derive(Clone)]
pub struct AuditTrail {
    pub(super) audit: Arc<AuditLog>,
    pub(super) store: Arc<dyn Store>,
    pub(super) tree: Tree,
}

impl AuditTrail {
    /// The service's "now", to stamp an entry with.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.tree.now()
    }

    /// Queues one audit entry; see [`crate::audit::AuditLog`]. An entry of a tenant no
    /// longer in the service (its account is being erased) is dropped: nothing of an
    /// erased account is written after its erasure began.
    pub fn record(&self, entry: AuditEntry) {
        if self.tree.tenants().contains_key(&entry.tenant_id) {
            self.audit.record(entry);
        }
    }

    /// The tenant's entries of the last `days` days, newest first, at most `limit`. Waits
    /// for entries still queued, so a request's own entry is visible right after it.
    pub async fn entries(
        &self,
        tenant: &TenantId,
        days: u32,
        limit: usize,
    ) -> Result<Vec<AuditEntry>> {
        self.tree.tenant_handle(tenant)?;
        self.audit.flush().await;
        let since = self.tree.now() - chrono::Duration::days(i64::from(days));
        let (store, tenant) = (self.store.clone(), tenant.clone());
        blocking(move || store.audit(&tenant, since, limit)).await
    }

    /// Entries dropped because the audit queue was full (the store far behind).
    pub fn dropped(&self) -> u64 {
        self.audit.dropped()
    }
}
