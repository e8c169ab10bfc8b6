//! What a tenant holds against what its tier allows: collections and memories from the
//! published snapshots, file bytes in the platform's storage as last counted (listed
//! again after [`FILES_USAGE_TTL`]). Every write that grows a tenant asks [`Quotas`] first.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use memvault_blobs::{BlobPrefix, BlobStore};
use memvault_storage::{CollectionName, TenantId};
use memvault_types::tiers::{Growth, Held, TierLimits, Tiers};

use super::placement::storage_error;
use super::tree::Tree;
use crate::collection::CollectionHandle;
use crate::error::{Error, Result};
use crate::tenant::{TenantMessage, TenantSnapshot};

/// How long a tenant's counted file bytes are trusted before they are listed again.
const FILES_USAGE_TTL: Duration = Duration::from_secs(30);

/// The tier limits' checks: see the module docs.
#[derive(Clone)]
pub struct Quotas {
    tree: Tree,
    tiers: Arc<Tiers>,
    /// The platform's store, whose listing counts a tenant's file bytes.
    platform: Arc<dyn BlobStore>,
    /// Bytes of each tenant's files in the platform's storage, and when they were counted.
    files_usage: Arc<DashMap<TenantId, (Instant, u64)>>,
}

impl Quotas {
    pub(crate) fn new(tree: Tree, tiers: Tiers, platform: Arc<dyn BlobStore>) -> Self {
        Self {
            tree,
            tiers: Arc::new(tiers),
            platform,
            files_usage: Arc::new(DashMap::new()),
        }
    }

    /// What the tenant holds now.
    pub(crate) async fn held(&self, tenant: &TenantId) -> Result<Held> {
        let snapshot = self.tree.tenant_handle(tenant)?.snapshot();
        Ok(Held {
            collections: snapshot.collections.len() as u64,
            memories: memories_of(&snapshot),
            storage_bytes: self.files_bytes(tenant).await?,
        })
    }

    /// The tenant's tier's limits.
    pub(crate) fn tier_limits(&self, tenant: &TenantId) -> Result<TierLimits> {
        let snapshot = self.tree.tenant_handle(tenant)?.snapshot();
        Ok(self.tiers.limits(&snapshot.record.tier))
    }

    /// Refuses `growth` when it would take the tenant past its tier's limit.
    pub(crate) async fn admit(&self, tenant: &TenantId, growth: Growth) -> Result<()> {
        let snapshot = self.tree.tenant_handle(tenant)?.snapshot();
        let limits = self.tiers.limits(&snapshot.record.tier);
        let held = match growth {
            Growth::Collection if limits.collections.is_some() => Held {
                collections: snapshot.collections.len() as u64,
                ..Held::default()
            },
            Growth::Memories(_) if limits.memories.is_some() => Held {
                memories: memories_of(&snapshot),
                ..Held::default()
            },
            Growth::StorageBytes(_) if limits.storage_bytes.is_some() => Held {
                storage_bytes: self.files_bytes(tenant).await?,
                ..Held::default()
            },
            _ => return Ok(()),
        };
        limits
            .admit(&held, growth)
            .map_err(|over| Error::TierLimitReached {
                tier: snapshot.record.tier.clone(),
                what: over.what,
                limit: over.limit,
                held: over.held,
            })
    }

    /// The collection, auto-created (and counted against the tier) on first write. The
    /// fast path reads the snapshot.
    pub(crate) async fn ensure_collection(
        &self,
        tenant: &TenantId,
        name: &CollectionName,
    ) -> Result<Arc<CollectionHandle>> {
        if let Ok(entry) = self.tree.collection_entry(tenant, name) {
            return Ok(entry.handle);
        }
        self.admit(tenant, Growth::Collection).await?;
        let name = name.clone();
        let entry = self
            .tree
            .call_tenant(tenant, |reply| TenantMessage::EnsureCollection {
                name,
                reply,
            })
            .await?;
        Ok(entry.handle)
    }

    /// Bytes of the tenant's files in the platform's storage, as last counted.
    async fn files_bytes(&self, tenant: &TenantId) -> Result<u64> {
        if let Some(entry) = self.files_usage.get(tenant) {
            if entry.0.elapsed() < FILES_USAGE_TTL {
                return Ok(entry.1);
            }
        }
        let bytes = stored_bytes(&self.platform, tenant).await?;
        self.files_usage
            .insert(tenant.clone(), (Instant::now(), bytes));
        Ok(bytes)
    }

    /// Adds freshly stored file bytes to the tenant's count.
    pub(crate) fn note_files_stored(&self, tenant: &TenantId, bytes: u64) {
        if let Some(mut entry) = self.files_usage.get_mut(tenant) {
            entry.1 = entry.1.saturating_add(bytes);
        }
    }

    /// Forgets the tenant's count (the tenant is gone).
    pub(crate) fn forget(&self, tenant: &TenantId) {
        self.files_usage.remove(tenant);
    }
}

/// Memories in every collection of the tenant's snapshot.
fn memories_of(snapshot: &TenantSnapshot) -> u64 {
    snapshot
        .collections
        .values()
        .map(|entry| entry.handle.snapshot().memories.len() as u64)
        .sum()
}

/// Bytes stored for the tenant (files, uploads) in the platform's storage (a tenant's own
/// bucket is its own to count).
pub(crate) async fn stored_bytes(platform: &Arc<dyn BlobStore>, tenant: &TenantId) -> Result<u64> {
    let prefix = BlobPrefix::tenant(tenant).map_err(storage_error)?;
    let entries = platform.list(&prefix).await.map_err(storage_error)?;
    let snapshots = format!("{}/", memvault_index::SNAPSHOT_FOLDER);
    let files = entries
        .iter()
        .filter(|entry| !entry.key.path().starts_with(&snapshots));
    Ok(files.map(|entry| entry.size).sum())
}
