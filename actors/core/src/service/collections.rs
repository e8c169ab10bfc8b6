//! Collections: list, get, create, update, delete.

use std::sync::Arc;

use memvault_storage::CollectionRecord;
use serde_json::{Map, Value};

use super::access::{CollectionAccess, Read, Write};
use super::quotas::Quotas;
use super::tree::Tree;
use super::{Authorizer, Placement};
use crate::agent::Agent;
use crate::error::Result;
use crate::tenant::{CollectionEntry, TenantMessage};

/// A collection with its memory count, as listings show it.
#[derive(Debug, Clone)]
pub struct CollectionView {
    pub record: Arc<CollectionRecord>,
    pub memory_count: usize,
}

impl From<&CollectionEntry> for CollectionView {
    fn from(entry: &CollectionEntry) -> Self {
        Self {
            record: entry.record.clone(),
            memory_count: entry.handle.snapshot().memories.len(),
        }
    }
}

/// The tenant's collections: list, read, create, change, delete, and their grants.
#[derive(Clone)]
pub struct Collections {
    pub(super) tree: Tree,
    pub(super) quotas: Quotas,
    pub(super) placement: Placement,
    pub(super) authorizer: Authorizer,
}

impl Collections {
    /// Every collection of the tenant the agent may read, by name.
    pub fn list(&self, agent: &Agent) -> Result<Vec<CollectionView>> {
        let snapshot = self.tree.tenant_handle(&agent.tenant_id)?.snapshot();
        Ok(snapshot
            .collections
            .values()
            .filter(|entry| self.authorizer.may_read(agent, &entry.record))
            .map(CollectionView::from)
            .collect())
    }

    pub fn get(&self, access: &CollectionAccess<Read>) -> Result<CollectionView> {
        let entry = self
            .tree
            .collection_entry(access.tenant(), access.collection())?;
        Ok(CollectionView::from(&entry))
    }

    pub async fn create(
        &self,
        access: &CollectionAccess<Write>,
        description: Option<String>,
        metadata: Map<String, Value>,
    ) -> Result<CollectionView> {
        let (tenant, name) = (access.tenant(), access.collection().clone());
        if self.tree.collection_entry(tenant, &name).is_err() {
            self.quotas
                .admit(tenant, memvault_types::tiers::Growth::Collection)
                .await?;
        }
        let entry = self
            .tree
            .call_tenant(tenant, |reply| TenantMessage::CreateCollection {
                name,
                description,
                metadata,
                reply,
            })
            .await?;
        Ok(CollectionView::from(&entry))
    }

    /// Changes the given fields; `None` leaves a field as it is.
    pub async fn update(
        &self,
        access: &CollectionAccess<Write>,
        description: Option<String>,
        metadata: Option<Map<String, Value>>,
    ) -> Result<CollectionView> {
        let (tenant, name) = (access.tenant(), access.collection().clone());
        let entry = self
            .tree
            .call_tenant(tenant, |reply| TenantMessage::UpdateCollection {
                name,
                description,
                metadata,
                reply,
            })
            .await?;
        Ok(CollectionView::from(&entry))
    }

    /// Deletes the collection with all its memories.
    /// Deletes the collection with its memories, then their files that no memory of
    /// another collection references.
    pub async fn delete(&self, access: &CollectionAccess<Write>) -> Result<()> {
        let (tenant, name) = (access.tenant(), access.collection().clone());
        let images: Vec<serde_json::Value> = self
            .tree
            .collection_entry(tenant, &name)
            .map(|entry| {
                entry
                    .handle
                    .snapshot()
                    .memories
                    .values()
                    .flat_map(|memory| memory.images.iter().cloned())
                    .collect()
            })
            .unwrap_or_default();
        self.tree
            .call_tenant(tenant, |reply| TenantMessage::DeleteCollection {
                name,
                reply,
            })
            .await?;
        self.placement.release(tenant, &images).await;
        Ok(())
    }
}
