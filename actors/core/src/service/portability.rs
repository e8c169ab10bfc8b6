//! Leaving with your data and bringing it back: the account export (the tenant, its
//! collections and every memory, text only; served as a stream by the edge) and the
//! import (collections created, texts re-embedded in batches, ids reassigned).

use std::collections::BTreeMap;
use std::sync::Arc;

use memvault_storage::{CollectionName, MemoryRecord, TenantRecord};
use serde_json::{Map, Value};

use super::{CollectionView, Memvault};
use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::memory::NewMemory;
use crate::service::Write;

/// Memories embedded and stored per call during an import.
pub const IMPORT_BATCH: usize = 256;

/// What an export holds: published snapshots, so the stream reads a consistent account
/// without holding a copy of it.
pub struct AccountExport {
    pub tenant: Arc<TenantRecord>,
    /// Each collection the caller may read, and its memories (archived included) in
    /// listing order.
    pub collections: Vec<(CollectionView, Vec<Arc<MemoryRecord>>)>,
}

/// A collection an import creates (when missing) before its memories.
#[derive(Debug, Clone)]
pub struct ImportCollection {
    pub name: CollectionName,
    pub description: Option<String>,
    pub metadata: Map<String, Value>,
}

/// One memory to import into a collection.
#[derive(Debug, Clone)]
pub struct ImportedMemory {
    pub collection: CollectionName,
    pub memory: NewMemory,
    pub pinned: bool,
    pub archived: bool,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportOutcome {
    pub imported: usize,
    /// The collections created or written to, by name.
    pub collections: Vec<String>,
}

/// Export and import of a whole account.
#[derive(Clone)]
pub struct Portability {
    pub(super) root: Memvault,
}

impl Portability {
    /// The caller's account as it is now: every collection it may read.
    pub fn export(&self, agent: &Agent) -> Result<AccountExport> {
        let snapshot = self.root.tenant_handle(&agent.tenant_id)?.snapshot();
        let authorizer = self.root.authorizer();
        let collections = snapshot
            .collections
            .values()
            .filter(|entry| authorizer.may_read(agent, &entry.record))
            .map(|entry| {
                let memories = entry.handle.snapshot().page(0, usize::MAX, true);
                (CollectionView::from(entry), memories)
            })
            .collect();
        Ok(AccountExport {
            tenant: snapshot.record.clone(),
            collections,
        })
    }

    /// Creates the collections (existing ones are kept as they are), then stores the
    /// memories collection by collection in batches, each batch embedded at once. Every
    /// collection is authorized for writing before anything is written: a key without
    /// write access to one of them imports nothing.
    pub async fn import(
        &self,
        agent: &Agent,
        collections: Vec<ImportCollection>,
        memories: Vec<ImportedMemory>,
    ) -> Result<ImportOutcome> {
        let mut by_collection: BTreeMap<CollectionName, Vec<ImportedMemory>> = BTreeMap::new();
        for memory in memories {
            by_collection
                .entry(memory.collection.clone())
                .or_default()
                .push(memory);
        }
        let authorizer = self.root.authorizer();
        let mut accesses = BTreeMap::new();
        for name in collections
            .iter()
            .map(|collection| &collection.name)
            .chain(by_collection.keys())
        {
            if !accesses.contains_key(name) {
                let access = authorizer.authorize::<Write>(agent, name.clone())?;
                accesses.insert(name.clone(), access);
            }
        }
        let existing = self.root.tenant_handle(&agent.tenant_id)?.snapshot();
        for collection in collections {
            if existing.collections.contains_key(&collection.name) {
                continue;
            }
            let access = &accesses[&collection.name];
            match self
                .root
                .collections()
                .create(access, collection.description, collection.metadata)
                .await
            {
                Ok(_) | Err(Error::CollectionExists(_)) => {}
                Err(error) => return Err(error),
            }
        }
        let mut imported = 0;
        for (name, items) in by_collection {
            let access = &accesses[&name];
            for batch in items.chunks(IMPORT_BATCH) {
                let created = self
                    .root
                    .memories()
                    .create(
                        access,
                        batch.iter().map(|item| item.memory.clone()).collect(),
                    )
                    .await?;
                for (record, item) in created.iter().zip(batch) {
                    if item.pinned {
                        self.root
                            .memories()
                            .set_pinned(access, &record.id, true)
                            .await?;
                    }
                    if item.archived {
                        self.root
                            .memories()
                            .set_archived(access, &record.id, true)
                            .await?;
                    }
                }
                imported += created.len();
            }
        }
        Ok(ImportOutcome {
            imported,
            collections: accesses.keys().map(ToString::to_string).collect(),
        })
    }
}
