//! Tenants: bootstrap, creation, the record and settings as published, changes through
//! the tenant's actor, and taking a tenant out of the running service.

use std::sync::Arc;

use chrono::{Duration as ChronoDuration, Utc};
use dashmap::DashMap;
use memvault_storage::{Store, TenantId, TenantRecord, TenantSettings};

use super::quotas::Quotas;
use super::tree::Tree;
use super::Placement;
use crate::agent::{generate_key_secret, new_key_record, KeyRole, KEY_PREFIX};
use crate::audit::AuditLog;
use crate::call::blocking;
use crate::error::{Error, Result};
use crate::root::RootMessage;
use crate::tenant::{RecordChange, SettingsChange, TenantMessage};

/// A validated tenant to create.
#[derive(Debug, Clone)]
pub struct NewTenant {
    pub name: String,
    pub email: String,
    pub tier: String,
    pub admin: bool,
}

/// Usage counts of one tenant (`GET /v1/memory/admin/stats`).
#[derive(Debug, Clone, PartialEq)]
pub struct TenantStats {
    pub collections: usize,
    pub memories: usize,
    /// Bytes the tenant's records and files take (`storage size`).
    pub storage_bytes: u64,
    /// Bytes of its stored files alone (part of `storage_bytes`).
    pub files_bytes: u64,
    pub added_7d: usize,
    pub added_30d: usize,
}

/// What start-up bootstrapping did.
#[derive(Debug, Clone, PartialEq)]
pub enum BootstrapOutcome {
    /// Tenants existed already: nothing was created, nothing is printed.
    AlreadyBootstrapped,
    /// The admin tenant was created with the key the operator supplied.
    CreatedWithSuppliedKey,
    /// The admin tenant was created with this generated key, to be printed once.
    CreatedWithGeneratedKey(String),
}

/// Tenants: bootstrap, signup, the tenant record and its stats.
#[derive(Clone)]
pub struct Tenants {
    pub(super) tree: Tree,
    pub(super) store: Arc<dyn Store>,
    pub(super) quotas: Quotas,
    pub(super) placement: Placement,
    pub(super) audit: Arc<AuditLog>,
    /// The last count of each tenant's stored bytes, with what it was counted at.
    pub(super) stored_bytes: Arc<DashMap<TenantId, StoredBytes>>,
}

/// A tenant's bytes in the store as last counted (a scan of every record it has): kept
/// while its collections are unchanged and for at most [`STORED_BYTES_FRESH`], so stats
/// read again and again (a dashboard, a monitor) scan once.
#[derive(Clone)]
pub(super) struct StoredBytes {
    /// (collection handle id, snapshot version) of every collection at the count.
    versions: Vec<(u64, u64)>,
    at: std::time::Instant,
    bytes: u64,
}

/// How long a count of stored bytes is used while the tenant's collections are
/// unchanged: writes outside collections (keys, settings, audit) show within this.
pub const STORED_BYTES_FRESH: std::time::Duration = std::time::Duration::from_secs(60);

impl Tenants {
    /// On an empty store, creates the admin-flagged tenant. A supplied key must start
    /// with `mv_`; without one a key is generated and returned for printing.
    pub async fn bootstrap(&self, supplied_key: Option<String>) -> Result<BootstrapOutcome> {
        // The store, not the loaded tenants: with several nodes, none is loaded at start.
        let store = self.store.clone();
        let stored = blocking(move || store.tenants()).await?;
        if stored.iter().any(|tenant| tenant.erasing_since.is_none()) {
            return Ok(BootstrapOutcome::AlreadyBootstrapped);
        }
        if let Some(key) = &supplied_key {
            if !key.starts_with(KEY_PREFIX) || key.len() < KEY_PREFIX.len() + 16 {
                return Err(Error::Invalid(format!(
                    "MEMVAULT_BOOTSTRAP_KEY must start with {KEY_PREFIX} and have at least 16 characters after it"
                )));
            }
        }
        let new = NewTenant {
            name: "admin".to_owned(),
            email: "admin@localhost".to_owned(),
            tier: "admin".to_owned(),
            admin: true,
        };
        let generated = supplied_key.is_none();
        let secret = supplied_key.unwrap_or_else(generate_key_secret);
        self.create_tenant_with_key(new, "bootstrap", secret.clone())
            .await?;
        Ok(if generated {
            BootstrapOutcome::CreatedWithGeneratedKey(secret)
        } else {
            BootstrapOutcome::CreatedWithSuppliedKey
        })
    }

    /// Creates a tenant and its first key; returns the record and the key, shown once.
    pub async fn create(&self, new: NewTenant) -> Result<(TenantRecord, String)> {
        if self.tenant_by_email(&new.email).await?.is_some() {
            return Err(Error::TenantExists {
                email: new.email.clone(),
            });
        }
        let secret = generate_key_secret();
        let record = self
            .create_tenant_with_key(new, "default", secret.clone())
            .await?;
        Ok((record, secret))
    }

    async fn create_tenant_with_key(
        &self,
        new: NewTenant,
        label: &str,
        secret: String,
    ) -> Result<TenantRecord> {
        let record = TenantRecord {
            id: TenantId::generate(),
            name: new.name,
            email: new.email,
            tier: new.tier,
            admin: new.admin,
            created_at: Utc::now(),
            erasing_since: None,
        };
        let key = new_key_record(&record.id, label, KeyRole::Owner, &secret, None);
        let stored = record.clone();
        self.tree
            .call_root(|reply| RootMessage::CreateTenant {
                record: Box::new(stored),
                key: Box::new(key),
                reply,
            })
            .await?;
        Ok(record)
    }

    pub fn get(&self, tenant: &TenantId) -> Result<Arc<TenantRecord>> {
        Ok(self.tree.tenant_handle(tenant)?.snapshot().record.clone())
    }

    /// The tenant's settings as last published.
    pub fn settings(&self, tenant: &TenantId) -> Result<Arc<TenantSettings>> {
        Ok(self.tree.tenant_handle(tenant)?.snapshot().settings.clone())
    }

    /// The stored tenant (not being erased) whose email is `email`, compared without case:
    /// with several nodes, the tenants another node serves are not loaded here.
    async fn tenant_by_email(&self, email: &str) -> Result<Option<TenantRecord>> {
        if let Some(loaded) = self.tree.tenant_by_email(email) {
            return Ok(Some(loaded));
        }
        let store = self.store.clone();
        let stored = blocking(move || store.tenants()).await?;
        Ok(stored.into_iter().find(|tenant| {
            tenant.erasing_since.is_none() && tenant.email.eq_ignore_ascii_case(email)
        }))
    }

    /// The loaded tenant whose email is `email` (compared without case).
    pub fn by_email(&self, email: &str) -> Option<TenantRecord> {
        self.tree.tenant_by_email(email)
    }

    /// The first loaded tenant whose record and settings satisfy `matches`.
    pub fn find(
        &self,
        matches: impl Fn(&TenantRecord, &TenantSettings) -> bool,
    ) -> Option<TenantRecord> {
        self.tree.tenants().iter().find_map(|tenant| {
            let snapshot = tenant.snapshot();
            matches(&snapshot.record, &snapshot.settings).then(|| (*snapshot.record).clone())
        })
    }

    /// Changes the tenant's record through its actor (its tier, its erasure mark).
    pub async fn update_record(
        &self,
        tenant: &TenantId,
        change: RecordChange,
    ) -> Result<Arc<TenantRecord>> {
        self.tree
            .call_tenant(tenant, |reply| TenantMessage::UpdateRecord {
                change,
                reply,
            })
            .await
    }

    /// Changes the tenant's settings through its actor.
    pub async fn update_settings(
        &self,
        tenant: &TenantId,
        change: SettingsChange,
    ) -> Result<Arc<TenantSettings>> {
        self.tree
            .call_tenant(tenant, |reply| TenantMessage::UpdateSettings {
                change,
                reply,
            })
            .await
    }

    /// Takes a tenant out of the running service: its handle, its actors (stopped and
    /// awaited), its keys, its opened bucket and its counted bytes. Nothing when it is
    /// not loaded.
    pub async fn detach(&self, tenant: &TenantId) {
        self.tree.remove_tenant(tenant).await;
        self.placement.forget(tenant);
        // Entries queued before the detach are written now, so an erasure removes them.
        self.audit.flush().await;
    }

    /// The limits of the tenant's tier (`None`: unlimited).
    pub fn limits(&self, tenant: &TenantId) -> Result<memvault_types::tiers::TierLimits> {
        self.quotas.tier_limits(tenant)
    }

    pub async fn stats(&self, tenant: &TenantId) -> Result<TenantStats> {
        let snapshot = self.tree.tenant_handle(tenant)?.snapshot();
        let now = Utc::now();
        let (week_ago, month_ago) = (
            now - ChronoDuration::days(7),
            now - ChronoDuration::days(30),
        );
        let mut stats = TenantStats {
            collections: snapshot.collections.len(),
            memories: 0,
            storage_bytes: 0,
            files_bytes: 0,
            added_7d: 0,
            added_30d: 0,
        };
        let mut versions = Vec::with_capacity(snapshot.collections.len());
        for entry in snapshot.collections.values() {
            let collection = entry.handle.snapshot();
            versions.push((entry.handle.id, collection.version));
            stats.memories += collection.memories.len();
            // The listing order (pinned first, then newest first) ends the count at the
            // first unpinned memory older than a month, without reading any record.
            for (pinned, created_at, _) in collection.order.iter() {
                if !pinned.0 && created_at.0 < month_ago {
                    break;
                }
                stats.added_7d += usize::from(created_at.0 >= week_ago);
                stats.added_30d += usize::from(created_at.0 >= month_ago);
            }
        }
        versions.sort_unstable();
        stats.files_bytes = self.placement.stored_bytes(tenant).await?;
        let counted = self.stored_bytes.get(tenant).map(|entry| entry.clone());
        stats.storage_bytes = match counted {
            Some(counted)
                if counted.versions == versions && counted.at.elapsed() < STORED_BYTES_FRESH =>
            {
                counted.bytes
            }
            _ => {
                let (store, key) = (self.store.clone(), tenant.clone());
                let at = std::time::Instant::now();
                let bytes = tokio::task::spawn_blocking(move || store.tenant_bytes(&key))
                    .await
                    .map_err(|error| Error::TaskFailed {
                        task: "storage task",
                        reason: error.to_string(),
                    })??;
                self.stored_bytes.insert(
                    tenant.clone(),
                    StoredBytes {
                        versions,
                        at,
                        bytes,
                    },
                );
                bytes
            }
        };
        stats.storage_bytes += stats.files_bytes;
        Ok(stats)
    }
}
