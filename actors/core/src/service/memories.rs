//! Memories: create (one or bulk), get, list, patch, pin, archive, delete, move.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_storage::Store;
use memvault_storage::{
    CollectionName, CreatedBy, EmbeddingModel, MemoryRecord, StoredMemory, TenantId,
};

use super::access::{CollectionAccess, Read, Write};
use super::embedding::Embedding;
use super::quotas::Quotas;
use super::tree::Tree;
use super::Placement;
use crate::collection::CollectionMessage;
use crate::error::{Error, Result};
use crate::memory::{ImageChange, MemoryChange, MemoryPatch, NewMemory};

/// Memories embedded and made into records, not stored yet.
struct Embedded {
    memories: Vec<StoredMemory>,
    model: EmbeddingModel,
}

/// Which page of a listing to return.
#[derive(Debug, Clone, Copy)]
pub struct ListPage {
    pub offset: usize,
    pub limit: usize,
    pub include_archived: bool,
}

/// Memories in a collection: create, read, change, move, delete, and the change feed.
#[derive(Clone)]
pub struct Memories {
    pub(super) tree: Tree,
    pub(super) store: Arc<dyn Store>,
    pub(super) quotas: Quotas,
    pub(super) embedding: Embedding,
    pub(super) placement: Placement,
}

impl Memories {
    /// Embeds the texts in one batch (by the collection's model), then persists all
    /// memories in one actor call (one atomic store write). The collection is created
    /// when missing. Embedded again when the collection switched models meanwhile.
    pub async fn create(
        &self,
        access: &CollectionAccess<Write>,
        memories: Vec<NewMemory>,
    ) -> Result<Vec<Arc<MemoryRecord>>> {
        self.create_as(access, memories, None).await
    }

    /// [`Self::create`] with the memories' ids chosen by the caller (one per memory), so
    /// that a resumed job can find and replace what an interrupted attempt stored.
    pub async fn create_as(
        &self,
        access: &CollectionAccess<Write>,
        memories: Vec<NewMemory>,
        ids: Option<Vec<String>>,
    ) -> Result<Vec<Arc<MemoryRecord>>> {
        let embedded = self.embed(access, memories, ids, 0).await?;
        self.store(access, embedded).await
    }

    /// Creates memories batch by batch, in order, the way bulk work (imports, connector
    /// syncs, the chunks of a file) stores them: while one batch is written to the store
    /// and its indexes, the next is embedded, so the model never waits on the disk. Each
    /// batch is one atomic store write, as [`Self::create_as`] makes it; on an error the
    /// batches before it are stored and none after it. The records of every batch, in
    /// order.
    pub async fn create_batches(
        &self,
        access: &CollectionAccess<Write>,
        batches: Vec<(Vec<NewMemory>, Option<Vec<String>>)>,
    ) -> Result<Vec<Vec<Arc<MemoryRecord>>>> {
        let mut created = Vec::with_capacity(batches.len());
        let mut pending: Option<Embedded> = None;
        for (memories, ids) in batches {
            let next = match pending.take() {
                None => self.embed(access, memories, ids, 0).await?,
                Some(ready) => {
                    // Admitted against the tier with the batch still being stored.
                    let ahead = ready.memories.len() as u64;
                    let (stored, next) = tokio::join!(
                        self.store(access, ready),
                        self.embed(access, memories, ids, ahead)
                    );
                    created.push(stored?);
                    next?
                }
            };
            pending = Some(next);
        }
        if let Some(ready) = pending {
            created.push(self.store(access, ready).await?);
        }
        Ok(created)
    }

    /// [`Self::create_batches`] over `memories` cut into batches of `size` (with `ids`, one
    /// per memory, cut alike): every record, in order.
    pub async fn create_in_batches(
        &self,
        access: &CollectionAccess<Write>,
        memories: Vec<NewMemory>,
        ids: Option<Vec<String>>,
        size: usize,
    ) -> Result<Vec<Arc<MemoryRecord>>> {
        let size = size.max(1);
        let mut ids = ids.map(Vec::into_iter);
        let mut memories = memories.into_iter().peekable();
        let mut batches = Vec::new();
        while memories.peek().is_some() {
            let batch: Vec<NewMemory> = memories.by_ref().take(size).collect();
            let batch_ids = ids
                .as_mut()
                .map(|ids| ids.by_ref().take(batch.len()).collect());
            batches.push((batch, batch_ids));
        }
        let created = self.create_batches(access, batches).await?;
        Ok(created.into_iter().flatten().collect())
    }

    /// The first stage of a create: admitted against the tier (with `ahead` memories
    /// admitted but not stored yet), embedded in one batch by the collection's model, and
    /// made into records.
    async fn embed(
        &self,
        access: &CollectionAccess<Write>,
        memories: Vec<NewMemory>,
        ids: Option<Vec<String>>,
        ahead: u64,
    ) -> Result<Embedded> {
        let (agent, collection) = (access.agent(), access.collection());
        self.quotas
            .admit(
                &agent.tenant_id,
                memvault_types::tiers::Growth::Memories(ahead + memories.len() as u64),
            )
            .await?;
        let model = self
            .embedding
            .collection_model(&agent.tenant_id, collection);
        let texts = memories.iter().map(|memory| memory.text.clone()).collect();
        let embeddings = self.embedding.embed_texts(&model, texts).await?;
        let now = self.tree.now();
        let created_by = CreatedBy {
            id: agent.key_id.clone(),
            label: agent.label.clone(),
        };
        let mut ids = ids.map(Vec::into_iter);
        let memories = memories
            .into_iter()
            .zip(embeddings)
            .map(|(memory, embedding)| {
                let record = MemoryRecord::new(
                    memory.text,
                    memory.importance,
                    memory.category,
                    memory.source,
                    created_by.clone(),
                    now,
                );
                let id = ids
                    .as_mut()
                    .and_then(Iterator::next)
                    .unwrap_or_else(|| record.id.clone());
                StoredMemory {
                    record: MemoryRecord {
                        id,
                        metadata: memory.metadata,
                        container_tag: memory.container_tag.map(String::into_boxed_str),
                        images: memory.images.into(),
                        ..record
                    },
                    embedding,
                }
            })
            .collect();
        Ok(Embedded { memories, model })
    }

    /// The second stage: the embedded memories persisted in one actor call (one atomic
    /// store write), the collection created when missing. When the collection switched
    /// models since they were embedded, they are embedded again (up to twice).
    async fn store(
        &self,
        access: &CollectionAccess<Write>,
        embedded: Embedded,
    ) -> Result<Vec<Arc<MemoryRecord>>> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let mut embedded = embedded;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let handle = self.quotas.ensure_collection(tenant, collection).await?;
            let Embedded { memories, model } = embedded;
            let records: Vec<MemoryRecord> = memories
                .iter()
                .map(|memory| memory.record.clone())
                .collect();
            match self
                .tree
                .call_collection(&handle, |reply| CollectionMessage::Insert {
                    memories,
                    model,
                    reply,
                })
                .await
            {
                Err(Error::EmbeddingSwitched { .. }) if attempt < 3 => {
                    let model = self.embedding.collection_model(tenant, collection);
                    let texts = records.iter().map(|record| record.text.clone()).collect();
                    let embeddings = self.embedding.embed_texts(&model, texts).await?;
                    let memories = records
                        .into_iter()
                        .zip(embeddings)
                        .map(|(record, embedding)| StoredMemory { record, embedding })
                        .collect();
                    embedded = Embedded { memories, model };
                }
                result => return result,
            }
        }
    }

    pub fn get(&self, access: &CollectionAccess<Read>, id: &str) -> Result<Arc<MemoryRecord>> {
        self.memory(access.tenant(), access.collection(), id)
    }

    fn memory(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        id: &str,
    ) -> Result<Arc<MemoryRecord>> {
        let entry = self.tree.collection_entry(tenant, collection)?;
        entry
            .handle
            .snapshot()
            .memories
            .get(id)
            .cloned()
            .ok_or_else(|| memory_not_found(id, collection))
    }

    /// One page, pinned first, then newest first.
    pub fn list(
        &self,
        access: &CollectionAccess<Read>,
        page: ListPage,
    ) -> Result<Vec<Arc<MemoryRecord>>> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let entry = self.tree.collection_entry(tenant, collection)?;
        Ok(entry
            .handle
            .snapshot()
            .page(page.offset, page.limit, page.include_archived))
    }

    /// Visits the collection's memories in listing order (pinned first, then newest
    /// first), archived ones included, over one snapshot and without copying it, until
    /// `visit` answers false: for browsers that filter and page a large collection.
    pub fn walk(
        &self,
        access: &CollectionAccess<Read>,
        mut visit: impl FnMut(&Arc<MemoryRecord>) -> bool,
    ) -> Result<()> {
        let snapshot = self.tree.collection_snapshot(access)?;
        for (_, _, std::cmp::Reverse(id)) in snapshot.order.iter() {
            if let Some(memory) = snapshot.memories.get(id) {
                if !visit(memory) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Visits (pinned, created_at) of the collection's memories in listing order, archived
    /// ones included, until `visit` answers false: counting by creation time without
    /// reading the records.
    pub fn walk_created(
        &self,
        access: &CollectionAccess<Read>,
        mut visit: impl FnMut(bool, DateTime<Utc>) -> bool,
    ) -> Result<()> {
        let snapshot = self.tree.collection_snapshot(access)?;
        for (pinned, created_at, _) in snapshot.order.iter() {
            if !visit(pinned.0, created_at.0) {
                break;
            }
        }
        Ok(())
    }

    /// Visits the collection's superseded memories, most recently superseded first, until
    /// `visit` answers false.
    pub fn walk_superseded(
        &self,
        access: &CollectionAccess<Read>,
        mut visit: impl FnMut(&Arc<MemoryRecord>) -> bool,
    ) -> Result<()> {
        let snapshot = self.tree.collection_snapshot(access)?;
        for (_, id) in snapshot.superseded.iter().rev() {
            if let Some(memory) = snapshot.memories.get(id) {
                if !visit(memory) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Changes only the given fields; a text change is re-embedded first.
    pub async fn patch(
        &self,
        access: &CollectionAccess<Write>,
        id: &str,
        patch: MemoryPatch,
    ) -> Result<Arc<MemoryRecord>> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let mut attempt = 0;
        loop {
            attempt += 1;
            let current = self.memory(tenant, collection, id)?;
            let model = self.embedding.collection_model(tenant, collection);
            let text = match &patch.text {
                Some(text) if *text != current.text => {
                    let embedding = self.embedding.embed_text(&model, text.clone()).await?;
                    Some((text.clone(), embedding))
                }
                _ => None,
            };
            let change = MemoryChange {
                text,
                importance: patch.importance,
                category: patch.category.clone(),
                metadata: patch.metadata.clone(),
                ..MemoryChange::default()
            };
            match self
                .update_with(tenant, collection, id, change, model)
                .await
            {
                Err(Error::EmbeddingSwitched { .. }) if attempt < 3 => continue,
                result => return result,
            }
        }
    }

    pub async fn set_pinned(
        &self,
        access: &CollectionAccess<Write>,
        id: &str,
        pinned: bool,
    ) -> Result<Arc<MemoryRecord>> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let change = MemoryChange {
            pinned: Some(pinned),
            ..MemoryChange::default()
        };
        self.update_memory(tenant, collection, id, change).await
    }

    pub async fn set_archived(
        &self,
        access: &CollectionAccess<Write>,
        id: &str,
        archived: bool,
    ) -> Result<Arc<MemoryRecord>> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let change = MemoryChange {
            archived: Some(archived),
            ..MemoryChange::default()
        };
        self.update_memory(tenant, collection, id, change).await
    }

    /// A change without a new text (the model is not checked).
    async fn update_memory(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        id: &str,
        change: MemoryChange,
    ) -> Result<Arc<MemoryRecord>> {
        let model = self.embedding.collection_model(tenant, collection);
        self.update_with(tenant, collection, id, change, model)
            .await
    }

    async fn update_with(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        id: &str,
        change: MemoryChange,
        model: EmbeddingModel,
    ) -> Result<Arc<MemoryRecord>> {
        let entry = self.tree.collection_entry(tenant, collection)?;
        let id = id.to_owned();
        let at = self.tree.now();
        self.tree
            .call_collection(&entry.handle, |reply| CollectionMessage::Update {
                id,
                change,
                model,
                at,
                reply,
            })
            .await
    }

    /// Deletes the memory, then its files that no other memory references.
    pub async fn delete(&self, access: &CollectionAccess<Write>, id: &str) -> Result<()> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let entry = self.tree.collection_entry(tenant, collection)?;
        let images = entry
            .handle
            .snapshot()
            .memories
            .get(id)
            .map(|memory| memory.images.clone())
            .unwrap_or_default();
        let id = id.to_owned();
        self.tree
            .call_collection(&entry.handle, |reply| CollectionMessage::Delete {
                id,
                reply,
            })
            .await?;
        self.placement.release(tenant, &images).await;
        Ok(())
    }

    /// The collection's memories read from a file with this SHA-256 (through the
    /// snapshot's index, no scan).
    pub fn with_file_digest<L: super::access::Level>(
        &self,
        access: &CollectionAccess<L>,
        sha256: &str,
    ) -> Result<Vec<Arc<MemoryRecord>>> {
        let entry = self
            .tree
            .collection_entry(access.tenant(), access.collection())?;
        Ok(entry.handle.snapshot().with_file_digest(sha256))
    }

    /// The collection's memories read from the file with this id.
    pub fn from_file<L: super::access::Level>(
        &self,
        access: &CollectionAccess<L>,
        file_id: &str,
    ) -> Result<Vec<Arc<MemoryRecord>>> {
        let entry = self
            .tree
            .collection_entry(access.tenant(), access.collection())?;
        Ok(entry.handle.snapshot().from_file(file_id))
    }

    /// Deletes memories and keeps the files they attach (a retried ingest item stores
    /// them again).
    pub async fn forget_keeping_files(
        &self,
        access: &CollectionAccess<Write>,
        ids: Vec<String>,
    ) -> Result<()> {
        let entry = self
            .tree
            .collection_entry(access.tenant(), access.collection())?;
        for id in ids {
            self.tree
                .call_collection(&entry.handle, |reply| CollectionMessage::Delete {
                    id,
                    reply,
                })
                .await?;
        }
        Ok(())
    }

    /// Attaches one more file (its stored form, an `images` entry) to a memory.
    pub async fn add_image(
        &self,
        access: &CollectionAccess<Write>,
        id: &str,
        image: serde_json::Value,
    ) -> Result<Arc<MemoryRecord>> {
        let change = MemoryChange {
            images: Some(ImageChange::Add(image)),
            ..MemoryChange::default()
        };
        self.update_memory(access.tenant(), access.collection(), id, change)
            .await
    }

    /// Removes the file at `index` from a memory, and its blob when nothing else
    /// references it.
    pub async fn remove_image(
        &self,
        access: &CollectionAccess<Write>,
        id: &str,
        index: usize,
    ) -> Result<()> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let removed = self
            .memory(tenant, collection, id)?
            .images
            .get(index)
            .cloned()
            .ok_or_else(|| Error::ImageNotFound {
                id: id.to_owned(),
                index,
            })?;
        let change = MemoryChange {
            images: Some(ImageChange::Remove(index)),
            ..MemoryChange::default()
        };
        self.update_memory(tenant, collection, id, change).await?;
        self.placement.release(tenant, &[removed]).await;
        Ok(())
    }

    /// Moves a memory to another collection of the tenant (created when missing), keeping
    /// its id. The store moves it in one atomic write; then the source forgets it.
    pub async fn move_to(
        &self,
        from: &CollectionAccess<Write>,
        id: &str,
        to: &CollectionAccess<Write>,
    ) -> Result<Arc<MemoryRecord>> {
        let (tenant, from, to) = (from.tenant(), from.collection(), to.collection());
        let current = self.memory(tenant, from, id)?;
        if from == to {
            return Ok(current);
        }
        let source = self.tree.collection_entry(tenant, from)?;
        let target = self.quotas.ensure_collection(tenant, to).await?;
        let (store, owner, source_name, key) = (
            self.store.clone(),
            tenant.clone(),
            from.clone(),
            id.to_owned(),
        );
        let mut stored =
            tokio::task::spawn_blocking(move || store.memory(&owner, &source_name, &key))
                .await
                .map_err(|error| Error::TaskFailed {
                    task: "storage task",
                    reason: error.to_string(),
                })??
                .ok_or_else(|| memory_not_found(id, from))?;
        // Collections on different models: the memory is embedded by the target's.
        let source_model = (**source.handle.embedding.load()).clone();
        let model = (**target.embedding.load()).clone();
        if model != source_model {
            stored.embedding = self
                .embedding
                .embed_text(&model, stored.record.text.clone())
                .await?;
        }
        let from_name = from.clone();
        let moved = self
            .tree
            .call_collection(&target, |reply| CollectionMessage::Adopt {
                memory: Box::new(stored),
                model,
                from: from_name,
                reply,
            })
            .await?;
        let evicted = id.to_owned();
        self.tree
            .call_collection(&source.handle, |reply| CollectionMessage::Evict {
                id: evicted,
                reply,
            })
            .await?;
        Ok(moved)
    }
}

fn memory_not_found(id: &str, collection: &CollectionName) -> Error {
    Error::MemoryNotFound {
        collection: collection.clone(),
        id: id.to_owned(),
    }
}
