//! The audit log's use cases: record an entry (queued, never waits) and read a tenant's
//! log newest first.

use memvault_storage::{AuditEntry, TenantId};

use super::Memvault;
use crate::call::blocking;
use crate::error::Result;

impl Memvault {
    /// Queues one audit entry; see [`crate::audit::AuditLog`].
    pub fn record_audit(&self, entry: AuditEntry) {
        self.inner.audit.record(entry);
    }

    /// The tenant's entries of the last `days` days, newest first, at most `limit`. Waits
    /// for entries still queued, so a request's own entry is visible right after it.
    pub async fn audit_log(
        &self,
        tenant: &TenantId,
        days: u32,
        limit: usize,
    ) -> Result<Vec<AuditEntry>> {
        self.tenant_handle(tenant)?;
        self.inner.audit.flush().await;
        let since = self.now() - chrono::Duration::days(i64::from(days));
        let (store, tenant) = (self.inner.store.clone(), tenant.clone());
        blocking(move || store.audit(&tenant, since, limit)).await
    }

    /// Entries dropped because the audit queue was full (the store far behind).
    pub fn audit_dropped(&self) -> u64 {
        self.inner.audit.dropped()
    }
}
