//! Leaving with your data and bringing it back: the account export (the tenant, its
//! collections and every memory, text only; served as a stream by the edge) and the
//! import (collections created, texts re-embedded in batches, ids reassigned).

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use memvault_portability::{item_id, ImportRunner};
use memvault_storage::Store;
use memvault_storage::{
    CollectionName, ImportCollectionRecord, ImportItemRecord, ImportJobRecord, ImportPayload,
    ImportSkipRecord, ImportState, MemoryRecord, TenantRecord,
};
use memvault_types::tiers::Growth;
use serde_json::{Map, Value};

use super::quotas::Quotas;
use super::tree::Tree;
use super::{Authorizer, CollectionView, Collections, ImportQueue, Memories};
use crate::agent::Agent;
use crate::call::blocking;
use crate::error::{Error, Result};
use crate::memory::NewMemory;
use crate::service::{CollectionAccess, Write};

/// Memories embedded and stored per call during an import.
pub const IMPORT_BATCH: usize = 256;

/// Items an import job stores between two saves of its cursor: several batches, so that
/// the job embeds one batch while it stores the one before (see
/// [`Memories::create_batches`]).
pub const IMPORT_RANGE: usize = 4 * IMPORT_BATCH;

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
    pub(super) tree: Tree,
    pub(super) store: Arc<dyn Store>,
    pub(super) quotas: Quotas,
    pub(super) authorizer: Authorizer,
    pub(super) collections: Collections,
    pub(super) memories: Memories,
    pub(super) import: ImportQueue,
}

impl Portability {
    /// The caller's account as it is now: every collection it may read.
    pub fn export(&self, agent: &Agent) -> Result<AccountExport> {
        let snapshot = self.tree.tenant_handle(&agent.tenant_id)?.snapshot();
        let authorizer = &self.authorizer;
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
    /// write access to one of them imports nothing; nor does an import past the tier's
    /// memory limit.
    pub async fn import(
        &self,
        agent: &Agent,
        collections: Vec<ImportCollection>,
        memories: Vec<ImportedMemory>,
    ) -> Result<ImportOutcome> {
        let accesses = self.authorize(agent, &collections, &memories)?;
        self.quotas
            .admit(&agent.tenant_id, Growth::Memories(memories.len() as u64))
            .await?;
        self.create_collections(&accesses, collections).await?;
        let mut by_collection: BTreeMap<CollectionName, Vec<ImportedMemory>> = BTreeMap::new();
        for memory in memories {
            by_collection
                .entry(memory.collection.clone())
                .or_default()
                .push(memory);
        }
        let mut imported = 0;
        for (name, items) in by_collection {
            imported += self.store_items(&accesses[&name], &items, None).await?;
        }
        Ok(ImportOutcome {
            imported,
            collections: accesses.keys().map(ToString::to_string).collect(),
        })
    }

    /// Queues a large import as a job (see `memvault_portability::import`): authorized and
    /// checked against the tier now, stored with its items, run in the background.
    pub async fn import_later(
        &self,
        agent: &Agent,
        collections: Vec<ImportCollection>,
        memories: Vec<ImportedMemory>,
        skipped: Vec<ImportSkipRecord>,
        skipped_count: usize,
    ) -> Result<ImportJobRecord> {
        let accesses = self.authorize(agent, &collections, &memories)?;
        self.quotas
            .admit(&agent.tenant_id, Growth::Memories(memories.len() as u64))
            .await?;
        let now = Utc::now();
        let job = ImportJobRecord {
            id: format!("imp_{}", uuid::Uuid::now_v7().simple()),
            tenant_id: agent.tenant_id.clone(),
            key_id: agent.key_id.clone(),
            state: ImportState::Queued,
            total: memories.len(),
            cursor: 0,
            skipped: skipped_count,
            errors: skipped,
            collections: accesses.keys().map(ToString::to_string).collect(),
            detail: None,
            attempts: 0,
            created_at: now,
            updated_at: now,
        };
        let payload = ImportPayload {
            collections: collections
                .into_iter()
                .map(|collection| ImportCollectionRecord {
                    name: collection.name,
                    description: collection.description,
                    metadata: collection.metadata,
                })
                .collect(),
            items: memories.into_iter().map(item_record).collect(),
        };
        let (store, stored) = (self.store.clone(), job.clone());
        blocking(move || store.create_import(&stored, &payload)).await?;
        if self
            .import
            .submit((job.tenant_id.clone(), job.id.clone()))
            .is_err()
        {
            tracing::warn!(import = %job.id, "import queue stopped; the import resumes at the next start");
        }
        Ok(job)
    }

    /// An import of the caller's tenant, as far as it is.
    pub async fn import_job(&self, agent: &Agent, id: &str) -> Result<ImportJobRecord> {
        let (store, tenant, key) = (self.store.clone(), agent.tenant_id.clone(), id.to_owned());
        blocking(move || store.import_job(&tenant, &key))
            .await?
            .ok_or_else(|| Error::ImportNotFound(id.to_owned()))
    }

    /// Write access to every collection the import names, or the first refusal.
    fn authorize(
        &self,
        agent: &Agent,
        collections: &[ImportCollection],
        memories: &[ImportedMemory],
    ) -> Result<BTreeMap<CollectionName, CollectionAccess<Write>>> {
        let authorizer = &self.authorizer;
        let mut accesses = BTreeMap::new();
        for name in collections
            .iter()
            .map(|collection| &collection.name)
            .chain(memories.iter().map(|memory| &memory.collection))
        {
            if !accesses.contains_key(name) {
                let access = authorizer.authorize::<Write>(agent, name.clone())?;
                accesses.insert(name.clone(), access);
            }
        }
        Ok(accesses)
    }

    /// Creates the collections that are missing (existing ones are left as they are:
    /// creating one answers `CollectionExists`).
    async fn create_collections(
        &self,
        accesses: &BTreeMap<CollectionName, CollectionAccess<Write>>,
        collections: Vec<ImportCollection>,
    ) -> Result<()> {
        for collection in collections {
            let access = &accesses[&collection.name];
            match self
                .collections
                .create(access, collection.description, collection.metadata)
                .await
            {
                Ok(_) | Err(Error::CollectionExists(_)) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Stores items of one collection in batches of [`IMPORT_BATCH`], each embedded at
    /// once and the next embedded while one is stored, with `ids` when given (one per
    /// item), then sets the pinned and archived flags; how many were stored.
    async fn store_items(
        &self,
        access: &CollectionAccess<Write>,
        items: &[ImportedMemory],
        ids: Option<Vec<String>>,
    ) -> Result<usize> {
        let memories = items.iter().map(|item| item.memory.clone()).collect();
        let created = self
            .memories
            .create_in_batches(access, memories, ids, IMPORT_BATCH)
            .await?;
        let mut stored = 0;
        for (record, item) in created.iter().zip(items) {
            if item.pinned {
                self.memories.set_pinned(access, &record.id, true).await?;
            }
            if item.archived {
                self.memories.set_archived(access, &record.id, true).await?;
            }
            stored += 1;
        }
        Ok(stored)
    }
}

fn item_record(memory: ImportedMemory) -> ImportItemRecord {
    ImportItemRecord {
        collection: memory.collection,
        text: memory.memory.text,
        importance: memory.memory.importance,
        category: memory.memory.category,
        source: memory.memory.source,
        metadata: memory.memory.metadata,
        container_tag: memory.memory.container_tag,
        pinned: memory.pinned,
        archived: memory.archived,
    }
}

fn imported_of(item: &ImportItemRecord) -> ImportedMemory {
    ImportedMemory {
        collection: item.collection.clone(),
        memory: NewMemory {
            text: item.text.clone(),
            importance: item.importance,
            category: item.category.clone(),
            source: item.source.clone(),
            metadata: item.metadata.clone(),
            container_tag: item.container_tag.clone(),
            images: Vec::new(),
        },
        pinned: item.pinned,
        archived: item.archived,
    }
}

/// What import jobs run: one range of an import's items.
#[async_trait::async_trait]
impl ImportRunner for Portability {
    async fn store(
        &self,
        job: &ImportJobRecord,
        payload: &ImportPayload,
        from: usize,
        to: usize,
    ) -> std::result::Result<(), memvault_types::Failure> {
        self.store_range(job, payload, from, to)
            .await
            .map_err(Into::into)
    }
}

impl Portability {
    /// Creates the import's missing collections (with its first range) and stores its
    /// items `from..to`, replacing any an earlier attempt stored.
    async fn store_range(
        &self,
        job: &ImportJobRecord,
        payload: &ImportPayload,
        from: usize,
        to: usize,
    ) -> Result<()> {
        let portability = self;
        let agent = portability.agent_of(job)?;
        let collections: Vec<ImportCollection> = payload
            .collections
            .iter()
            .map(|collection| ImportCollection {
                name: collection.name.clone(),
                description: collection.description.clone(),
                metadata: collection.metadata.clone(),
            })
            .collect();
        let items: Vec<ImportedMemory> = payload.items[from..to].iter().map(imported_of).collect();
        let accesses = portability.authorize(&agent, &collections, &items)?;
        if from == 0 {
            portability
                .create_collections(&accesses, collections)
                .await?;
        }
        // Items of this range an interrupted attempt stored are replaced, not doubled.
        let memories = portability.memories.clone();
        let mut fresh = Vec::with_capacity(items.len());
        for (offset, item) in items.into_iter().enumerate() {
            let id = item_id(&job.id, from + offset);
            let access = &accesses[&item.collection];
            match memories.delete(access, &id).await {
                Ok(()) | Err(Error::MemoryNotFound { .. } | Error::CollectionNotFound(_)) => {}
                Err(error) => return Err(error),
            }
            fresh.push((id, item));
        }
        let mut start = 0;
        while start < fresh.len() {
            let collection = fresh[start].1.collection.clone();
            let end = fresh[start..]
                .iter()
                .position(|(_, item)| item.collection != collection)
                .map_or(fresh.len(), |length| start + length);
            let (ids, batch): (Vec<String>, Vec<ImportedMemory>) =
                fresh[start..end].iter().cloned().unzip();
            portability
                .store_items(&accesses[&collection], &batch, Some(ids))
                .await?;
            start = end;
        }
        Ok(())
    }
}

impl Portability {
    /// The agent an import writes as: the key that asked for it, while it is active.
    fn agent_of(&self, job: &ImportJobRecord) -> Result<Agent> {
        self.authorizer.agent_of_key(&job.tenant_id, &job.key_id)
    }
}
