//! The collection actor: serializes every write to one collection's memories, persists it
//! through the store before replying, keeps the collection's search indexes in step, and
//! publishes a snapshot for readers.
//!
//! A store error fails the actor on purpose: its in-memory state may no longer match the
//! store, and the tenant actor restarts it with the state reloaded from the store. An index
//! error fails it too, after the (already durable) write is acknowledged: the restart
//! catches the indexes up from the store.
//!
//! Webhook events: every change to the working snapshot goes through
//! `CollectionState::put_current` / `take_current`, which queue one event per memory
//! (an id new to the collection is `memory.created`, an existing one `memory.updated`, a
//! removal `memory.deleted`); `publish` hands them to the [`EventBroker`], after the
//! store write succeeded and together with the snapshot readers see. A move is a delete
//! in the source (`Evict`) and a create in the target (`Adopt`). Deleting a whole
//! collection (`Destroy`) emits nothing: it is not a change of any one memory, and a
//! receiver is not flooded with one event per memory.

mod health;
mod keys;
mod maintenance;
mod messages;
mod packed;
mod remember;
mod state;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use memvault_index::VectorIndex;
use memvault_storage::{
    CollectionName, CollectionRecord, CreatedBy, EmbeddingModel, MemoryRecord, RememberedFact,
    Store, StoredMemory, TenantId,
};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

pub use health::{recount, stale_cutoff, CollectionHealth};
pub use keys::KeyTable;
pub use messages::{CollectionMessage, Switch};
pub use remember::{apply_changes, decide, stored_targets, Change, Decision, IncomingFact, Target};
pub use state::{CollectionHandle, CollectionSnapshot, SnapshotBuilder};

use crate::call::blocking;
use crate::error::{Error, Result};
use crate::memory::{ImageChange, MemoryChange};
use memvault_events::{EventBroker, MemoryEventKind};
use memvault_index::{CollectionIndexes, IndexError, IndexInput, IndexSettings};

/// How often pending text-index writes are committed when no search forces it.
const MAINTAIN_EVERY: Duration = Duration::from_secs(1);

pub struct CollectionActor;

pub struct CollectionArgs {
    pub handle: Arc<CollectionHandle>,
    pub store: Arc<dyn Store>,
    pub indexing: Arc<IndexSettings>,
    /// Where changed memories are reported (webhooks); `None` reports nothing.
    pub events: Option<EventBroker>,
}

pub struct CollectionState {
    /// Shared with readers and with the tenant actor; the actor publishes into it.
    handle: Arc<CollectionHandle>,
    /// Where every write goes before it is acknowledged.
    store: Arc<dyn Store>,
    /// The actor's working copy; published after each write.
    current: CollectionSnapshot,
    indexes: Arc<CollectionIndexes>,
    indexing: Arc<IndexSettings>,
    /// The highest index key handed out; the next memory written gets the one after.
    highest_key: u64,
    /// Set when an index update failed; the actor fails after replying.
    index_failure: Option<IndexError>,
    /// Set once the collection is deleted: nothing is flushed on stop.
    destroyed: bool,
    ticker: Option<tokio::task::JoinHandle<()>>,
    /// Where changed memories are reported at publish (webhooks).
    events: Option<EventBroker>,
    /// Changes since the last publish, reported by it; empty without `events`.
    pending_events: Vec<(MemoryEventKind, Arc<MemoryRecord>)>,
}

impl CollectionState {
    fn tenant(&self) -> &TenantId {
        &self.handle.tenant
    }

    fn name(&self) -> &CollectionName {
        &self.handle.name
    }

    fn publish(&mut self) {
        self.current.version += 1;
        self.handle.snapshot.store(Arc::new(self.current.clone()));
        if let Some(events) = &self.events {
            for (kind, memory) in self.pending_events.drain(..) {
                events.publish(&self.handle.tenant, &self.handle.name, kind, memory);
            }
        }
    }

    /// Puts a memory that is durably written into the working snapshot and queues its
    /// event: `memory.created` for an id new to the collection, else `memory.updated`.
    fn put_current(&mut self, record: Arc<MemoryRecord>) {
        let kind = if self.current.memories.contains_key(record.id.as_str()) {
            MemoryEventKind::Updated
        } else {
            MemoryEventKind::Created
        };
        self.current.insert(record.clone());
        self.queue_event(kind, record);
    }

    /// Removes a memory that is durably deleted (or moved away) from the working
    /// snapshot and queues `memory.deleted`.
    fn take_current(&mut self, id: &str) -> Option<Arc<MemoryRecord>> {
        let removed = self.current.remove(id)?;
        self.queue_event(MemoryEventKind::Deleted, removed.clone());
        Some(removed)
    }

    fn queue_event(&mut self, kind: MemoryEventKind, memory: Arc<MemoryRecord>) {
        if self.events.is_some() {
            self.pending_events.push((kind, memory));
        }
    }

    fn not_found(&self, id: &str) -> Error {
        Error::MemoryNotFound {
            collection: self.name().clone(),
            id: id.to_owned(),
        }
    }

    fn next_key(&mut self) -> u64 {
        self.highest_key += 1;
        self.highest_key
    }

    /// Runs index work off the async threads; a failure is remembered, not returned: the
    /// write it belongs to is already durable.
    async fn index(
        &mut self,
        work: impl FnOnce(&CollectionIndexes) -> Result<(), IndexError> + Send + 'static,
    ) {
        let indexes = self.indexes.clone();
        let outcome = tokio::task::spawn_blocking(move || work(&indexes)).await;
        let failure = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(error)) => error,
            Err(join_error) => IndexError::Io(format!("index task did not complete: {join_error}")),
        };
        tracing::error!(
            tenant = %self.tenant(),
            collection = %self.name(),
            error = %failure,
            "index update failed; the collection actor restarts to rebuild"
        );
        self.index_failure.get_or_insert(failure);
    }
}

impl CollectionState {
    /// Forgets the set-asides made by memories that are gone (deleted): a time-bound
    /// fact that is deleted no longer hides the value under it, at any time. A second
    /// store write after the delete; if it is lost, the value comes back when the deleted
    /// override would have ended.
    async fn release_set_asides(&mut self, removed: &[Arc<MemoryRecord>]) -> Result<()> {
        let gone: HashSet<&str> = removed.iter().map(|memory| memory.id.as_str()).collect();
        let ids: Vec<String> = removed
            .iter()
            .filter_map(|memory| memory.slot.as_deref())
            .flat_map(|slot| self.current.slot_history(slot))
            .filter(|memory| {
                memory
                    .suspensions
                    .iter()
                    .any(|suspension| gone.contains(suspension.by.as_str()))
            })
            .map(|memory| memory.id.clone())
            .collect::<HashSet<String>>()
            .into_iter()
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let (store, tenant, name) = (
            self.store.clone(),
            self.tenant().clone(),
            self.name().clone(),
        );
        let loaded = blocking(move || {
            ids.iter()
                .map(|id| Ok((id.clone(), store.memory(&tenant, &name, id)?)))
                .collect::<memvault_storage::error::Result<Vec<_>>>()
        })
        .await?;
        let mut changed = Vec::with_capacity(loaded.len());
        for (id, memory) in loaded {
            let mut memory = memory.ok_or(Error::MemoryNotInStore(id))?;
            memory
                .record
                .suspensions
                .retain(|suspension| !gone.contains(suspension.by.as_str()));
            changed.push(memory);
        }
        let records: Vec<Arc<MemoryRecord>> = changed
            .iter()
            .map(|memory| Arc::new(memory.record.clone()))
            .collect();
        let (store, tenant, name) = (
            self.store.clone(),
            self.tenant().clone(),
            self.name().clone(),
        );
        blocking(move || store.put_memories(&tenant, &name, &changed)).await?;
        for record in records {
            self.put_current(record);
        }
        Ok(())
    }

    /// Refuses vectors that another model made than the one the collection is on (it
    /// switched after the caller embedded); the caller embeds again.
    fn check_model(&self, model: &EmbeddingModel) -> Result<()> {
        let current = self.handle.embedding.load();
        if **current == *model {
            return Ok(());
        }
        Err(Error::EmbeddingSwitched {
            collection: self.name().clone(),
            model: current.to_string(),
        })
    }

    /// Adds freshly written memories to both indexes.
    async fn index_new(&mut self, memories: Arc<Vec<StoredMemory>>) {
        self.index(move |indexes| {
            indexes.vector.ensure_capacity(memories.len())?;
            for memory in memories.iter() {
                indexes.add(
                    memory.record.index_key,
                    &memory.record.text,
                    &memory.embedding,
                )?;
            }
            Ok(())
        })
        .await;
    }
}

/// Replies, then turns a storage or index failure into an actor failure (restart and
/// reload).
fn settle<T>(
    reply: RpcReplyPort<Result<T>>,
    result: Result<T>,
    state: &mut CollectionState,
) -> Result<(), ActorProcessingErr> {
    let storage_failure = match &result {
        Err(
            error @ (Error::Storage(_) | Error::MemoryNotInStore(_) | Error::TaskFailed { .. }),
        ) => Some(error.to_string()),
        _ => None,
    };
    // A caller that timed out has dropped its port; nothing is lost by ignoring that.
    let _ = reply.send(result);
    if let Some(reason) = storage_failure {
        return Err(format!("store write failed: {reason}").into());
    }
    if let Some(error) = state.index_failure.take() {
        return Err(format!("index update failed: {error}").into());
    }
    Ok(())
}

/// A collection's records as its actor starts with them: the snapshot, the records in
/// the order they were read, and the highest index key.
struct Loaded {
    snapshot: CollectionSnapshot,
    stored: Vec<Arc<MemoryRecord>>,
    highest_key: u64,
}

/// Builds the snapshot from the records as they are read. Every memory gets a unique
/// index key: loaded records keep theirs; a missing (0) or duplicated key gets a fresh one
/// above all others once every record is read.
fn build_snapshot(records: std::sync::mpsc::Receiver<MemoryRecord>, version: u64) -> Loaded {
    let mut snapshot = SnapshotBuilder::new(version);
    let mut stored = Vec::new();
    // Index keys, hashed with FxHash: SipHash was a hundredth of start-up at a million.
    let mut seen = rustc_hash::FxHashSet::default();
    let mut unkeyed = Vec::new();
    let mut highest_key = 0;
    for record in records {
        let key = record.index_key;
        if key == 0 || !seen.insert(key) {
            unkeyed.push(record);
            continue;
        }
        highest_key = highest_key.max(key);
        let record = Arc::new(record);
        snapshot.add(record.clone());
        stored.push(record);
    }
    for mut record in unkeyed {
        highest_key += 1;
        record.index_key = highest_key;
        let record = Arc::new(record);
        snapshot.add(record.clone());
        stored.push(record);
    }
    Loaded {
        snapshot: snapshot.finish(),
        stored,
        highest_key,
    }
}

impl Actor for CollectionActor {
    type Msg = CollectionMessage;
    type State = CollectionState;
    type Arguments = CollectionArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: CollectionArgs,
    ) -> Result<CollectionState, ActorProcessingErr> {
        let started = std::time::Instant::now();
        let (store, tenant, name) = (
            args.store.clone(),
            args.handle.tenant.clone(),
            args.handle.name.clone(),
        );
        let model = (**args.handle.embedding.load()).clone();
        let indexing = args.indexing.clone();
        let version = args.handle.snapshot.load().version;
        // Records only: the embeddings are read just for the vectors the saved index
        // lacks (all of them only when it is rebuilt), never all held at once. Three
        // things overlap (at a million memories each takes seconds): the records are
        // read here, the snapshot's maps are built from them on a second thread, and the
        // saved index files are read on a third; then the indexes are brought up to date
        // with the records.
        let (loaded, indexes) = tokio::task::spawn_blocking(move || {
            let (sender, receiver) = std::sync::mpsc::sync_channel::<MemoryRecord>(4096);
            std::thread::scope(|scope| {
                let builder = scope.spawn(move || build_snapshot(receiver, version));
                let preloading = scope.spawn(|| indexing.preload(&tenant, &name, &model));
                let mut send = move |record: MemoryRecord| {
                    // The builder only stops early by panicking, which is resumed below.
                    let _ = sender.send(record);
                };
                let scanned = store.visit_memory_records(&tenant, &name, &mut send);
                let scanned_at = started.elapsed();
                drop(send);
                let loaded = match builder.join() {
                    Ok(loaded) => loaded,
                    Err(panic) => std::panic::resume_unwind(panic),
                };
                let built_at = started.elapsed();
                let saved = match preloading.join() {
                    Ok(saved) => saved,
                    Err(panic) => std::panic::resume_unwind(panic),
                };
                tracing::debug!(
                    tenant = %tenant,
                    collection = %name,
                    scanned_ms = scanned_at.as_millis() as u64,
                    built_ms = built_at.as_millis() as u64,
                    preloaded_ms = started.elapsed().as_millis() as u64,
                    "collection records read"
                );
                scanned?;
                let stored = &loaded.stored;
                let inputs: Vec<IndexInput<'_>> = stored
                    .iter()
                    .map(|memory| IndexInput {
                        key: memory.index_key,
                        text: &memory.text,
                        embedding: None,
                    })
                    .collect();
                let fetch = |positions: &[usize]| -> Result<Vec<Vec<f32>>, String> {
                    let ids: Vec<&str> = positions
                        .iter()
                        .map(|position| stored[*position].id.as_str())
                        .collect();
                    let embeddings = store
                        .embeddings(&tenant, &name, &ids)
                        .map_err(|error| error.to_string())?;
                    ids.iter()
                        .zip(embeddings)
                        .map(|(id, embedding)| {
                            embedding.ok_or_else(|| format!("memory {id} has no stored embedding"))
                        })
                        .collect()
                };
                let indexes =
                    indexing.open_preloaded(saved, &tenant, &name, &model, &inputs, &fetch);
                drop(inputs);
                Ok::<_, memvault_storage::StorageError>((loaded, indexes))
            })
        })
        .await??;
        let current = loaded.snapshot;
        let indexes = Arc::new(indexes?);
        let highest_key = loaded.highest_key.max(indexes.highest_key());
        tracing::debug!(
            tenant = %args.handle.tenant,
            collection = %args.handle.name,
            memories = current.memories.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "collection loaded"
        );
        args.handle.indexes.store(Some(indexes.clone()));
        let mut state = CollectionState {
            handle: args.handle,
            store: args.store,
            current,
            indexes,
            indexing: args.indexing,
            highest_key,
            index_failure: None,
            destroyed: false,
            ticker: None,
            events: args.events,
            pending_events: Vec::new(),
        };
        state.publish();
        Ok(state)
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut CollectionState,
    ) -> Result<(), ActorProcessingErr> {
        state.ticker = Some(tokio::spawn(async move {
            let mut interval = tokio::time::interval(MAINTAIN_EVERY);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                interval.tick().await;
                if myself.cast(CollectionMessage::Maintain).is_err() {
                    return;
                }
            }
        }));
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut CollectionState,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(ticker) = state.ticker.take() {
            ticker.abort();
        }
        if state.destroyed {
            return Ok(());
        }
        let indexes = state.indexes.clone();
        match tokio::task::spawn_blocking(move || indexes.close()).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(
                collection = %state.name(),
                %error,
                "indexes not saved on stop; they catch up from the store at the next start"
            ),
            Err(error) => tracing::warn!(%error, "index flush task did not complete"),
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: CollectionMessage,
        state: &mut CollectionState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            CollectionMessage::Insert {
                memories,
                model,
                reply,
            } => {
                let result = match state.check_model(&model) {
                    Ok(()) => insert(state, memories).await,
                    Err(error) => Err(error),
                };
                settle(reply, result, state)
            }
            CollectionMessage::Remember {
                facts,
                model,
                importance,
                created_by,
                now,
                reply,
            } => {
                let result = match state.check_model(&model) {
                    Ok(()) => remember(state, facts, importance, created_by, now).await,
                    Err(error) => Err(error),
                };
                settle(reply, result, state)
            }
            CollectionMessage::Update {
                id,
                change,
                model,
                at,
                reply,
            } => {
                let checked = match change.text {
                    Some(_) => state.check_model(&model),
                    None => Ok(()),
                };
                let result = match checked {
                    Ok(()) => update(state, &id, change, at).await,
                    Err(error) => Err(error),
                };
                settle(reply, result, state)
            }
            CollectionMessage::Dedup {
                threshold,
                window,
                dry_run,
                reply,
            } => {
                let result = maintenance::dedup(state, threshold, window, dry_run).await;
                settle(reply, result, state)
            }
            CollectionMessage::ArchiveStale {
                cutoff,
                dry_run,
                max,
                reply,
            } => {
                let result = maintenance::archive_stale(state, cutoff, dry_run, max).await;
                settle(reply, result, state)
            }
            CollectionMessage::Delete { id, reply } => {
                let result = delete(state, id).await;
                settle(reply, result, state)
            }
            CollectionMessage::Adopt {
                memory,
                model,
                from,
                reply,
            } => {
                let result = match state.check_model(&model) {
                    Ok(()) => adopt(state, *memory, from).await,
                    Err(error) => Err(error),
                };
                settle(reply, result, state)
            }
            CollectionMessage::Evict { id, reply } => {
                if let Some(removed) = state.take_current(&id) {
                    state.publish();
                    let key = removed.index_key;
                    state.index(move |indexes| indexes.remove(key)).await;
                }
                settle(reply, Ok(()), state)
            }
            CollectionMessage::Destroy { reply } => {
                let (store, tenant, name) = (
                    state.store.clone(),
                    state.tenant().clone(),
                    state.name().clone(),
                );
                let result = blocking(move || store.delete_collection(&tenant, &name)).await;
                let destroyed = result.is_ok();
                if destroyed {
                    state.destroyed = true;
                    state.handle.indexes.store(None);
                    let (indexing, tenant, name) = (
                        state.indexing.clone(),
                        state.tenant().clone(),
                        state.name().clone(),
                    );
                    tokio::task::spawn_blocking(move || indexing.destroy(&tenant, &name))
                        .await
                        .ok();
                }
                settle(reply, result, state)?;
                if destroyed {
                    myself.stop(Some("collection deleted".to_owned()));
                }
                Ok(())
            }
            CollectionMessage::SwitchEmbeddings {
                record,
                vectors,
                reply,
            } => {
                let result = switch_embeddings(state, record, vectors).await;
                settle(reply, result, state)
            }
            CollectionMessage::Maintain => {
                if !state.destroyed && state.indexes.needs_upkeep() {
                    state.index(|indexes| indexes.maintain()).await;
                }
                match state.index_failure.take() {
                    Some(error) => Err(format!("index upkeep failed: {error}").into()),
                    None => Ok(()),
                }
            }
        }
    }
}

async fn insert(
    state: &mut CollectionState,
    memories: Vec<StoredMemory>,
) -> Result<Vec<Arc<MemoryRecord>>> {
    let (store, tenant, name) = (
        state.store.clone(),
        state.tenant().clone(),
        state.name().clone(),
    );
    let mut memories = memories;
    for memory in &mut memories {
        memory.record.index_key = state.next_key();
    }
    let records: Vec<Arc<MemoryRecord>> = memories
        .iter()
        .map(|memory| Arc::new(memory.record.clone()))
        .collect();
    let memories = Arc::new(memories);
    let persisted = memories.clone();
    blocking(move || store.put_memories(&tenant, &name, &persisted)).await?;
    state.index_new(memories).await;
    for record in &records {
        state.put_current(record.clone());
    }
    state.publish();
    Ok(records)
}

async fn update(
    state: &mut CollectionState,
    id: &str,
    change: MemoryChange,
    at: DateTime<Utc>,
) -> Result<Arc<MemoryRecord>> {
    if !state.current.memories.contains_key(id) {
        return Err(state.not_found(id));
    }
    let (store, tenant, name, key) = (
        state.store.clone(),
        state.tenant().clone(),
        state.name().clone(),
        id.to_owned(),
    );
    let Some(mut stored) = blocking(move || store.memory(&tenant, &name, &key)).await? else {
        return Err(Error::MemoryNotInStore(id.to_owned()));
    };
    let touches_content = change.touches_content();
    let old_key = stored.record.index_key;
    let reindex = change.text.is_some();
    if let Some((text, embedding)) = change.text {
        stored.record.text = text;
        stored.embedding = embedding;
        stored.record.index_key = state.next_key();
    }
    let record = &mut stored.record;
    if let Some(importance) = change.importance {
        record.importance = importance;
    }
    if let Some(category) = change.category {
        record.category = category;
    }
    if let Some(metadata) = change.metadata {
        record.metadata = metadata;
    }
    match change.images {
        Some(ImageChange::Add(image)) => record.images.push(image),
        Some(ImageChange::Remove(index)) if index < record.images.len() => {
            record.images.remove(index);
        }
        Some(ImageChange::Remove(index)) => {
            return Err(Error::ImageNotFound {
                id: record.id.clone(),
                index,
            })
        }
        None => {}
    }
    if let Some(pinned) = change.pinned {
        record.pinned = pinned;
    }
    if let Some(archived) = change.archived {
        record.archived = archived;
    }
    if touches_content {
        record.updated_at = at;
    }
    let updated = Arc::new(stored.record.clone());
    let (store, tenant, name) = (
        state.store.clone(),
        state.tenant().clone(),
        state.name().clone(),
    );
    let stored = Arc::new(stored);
    let persisted = stored.clone();
    blocking(move || store.put_memories(&tenant, &name, std::slice::from_ref(&*persisted))).await?;
    if reindex {
        state
            .index(move |indexes| {
                indexes.add(
                    stored.record.index_key,
                    &stored.record.text,
                    &stored.embedding,
                )?;
                indexes.remove(old_key)
            })
            .await;
    }
    state.put_current(updated.clone());
    state.publish();
    Ok(updated)
}

async fn delete(state: &mut CollectionState, id: String) -> Result<()> {
    if !state.current.memories.contains_key(id.as_str()) {
        return Err(state.not_found(&id));
    }
    let (store, tenant, name, key) = (
        state.store.clone(),
        state.tenant().clone(),
        state.name().clone(),
        id.clone(),
    );
    blocking(move || store.delete_memories(&tenant, &name, &[key])).await?;
    if let Some(removed) = state.take_current(&id) {
        let key = removed.index_key;
        state.index(move |indexes| indexes.remove(key)).await;
        state.release_set_asides(&[removed]).await?;
    }
    state.publish();
    Ok(())
}

async fn adopt(
    state: &mut CollectionState,
    memory: StoredMemory,
    from: CollectionName,
) -> Result<Arc<MemoryRecord>> {
    let mut memory = memory;
    memory.record.index_key = state.next_key();
    let record = Arc::new(memory.record.clone());
    let (store, tenant, name) = (
        state.store.clone(),
        state.tenant().clone(),
        state.name().clone(),
    );
    let memory = Arc::new(memory);
    let persisted = memory.clone();
    blocking(move || store.move_memory(&tenant, &from, &name, &persisted)).await?;
    state
        .index(move |indexes| {
            indexes.add(
                memory.record.index_key,
                &memory.record.text,
                &memory.embedding,
            )
        })
        .await;
    state.put_current(record.clone());
    state.publish();
    Ok(record)
}

/// See [`CollectionMessage::SwitchEmbeddings`].
async fn switch_embeddings(
    state: &mut CollectionState,
    record: CollectionRecord,
    vectors: Box<VectorIndex>,
) -> Result<Switch> {
    let model = record.embedding_model();
    let (store, tenant, name) = (
        state.store.clone(),
        state.tenant().clone(),
        state.name().clone(),
    );
    let staged = blocking(move || store.staged_embeddings(&tenant, &name)).await?;
    let staged = match staged {
        Some((staged_model, staged)) if staged_model == model => staged,
        _ => Vec::new(),
    };
    let mut by_key: HashMap<u64, Vec<f32>> = staged
        .into_iter()
        .map(|staged| (staged.key, staged.embedding))
        .collect();
    let mut switched = Vec::with_capacity(state.current.memories.len());
    let mut missing = 0;
    for memory in state.current.memories.values() {
        match by_key.remove(&memory.index_key) {
            Some(embedding) if embedding.len() == model.dimensions => switched.push(StoredMemory {
                record: (**memory).clone(),
                embedding,
            }),
            _ => missing += 1,
        }
    }
    if missing > 0 {
        return Ok(Switch::Behind { missing, vectors });
    }
    let (store, tenant, stored_record) =
        (state.store.clone(), state.tenant().clone(), record.clone());
    let count = switched.len();
    blocking(move || store.swap_embeddings(&tenant, &stored_record, &switched)).await?;
    let current = state.indexes.clone();
    let replaced = tokio::task::spawn_blocking({
        let model = model.clone();
        move || current.with_vectors(model, *vectors)
    })
    .await;
    let indexes = match replaced {
        Ok(Ok(indexes)) => Arc::new(indexes),
        Ok(Err(error)) => {
            // The store has switched: the restart rebuilds the vectors from it.
            state.index_failure.get_or_insert(error);
            state.handle.embedding.store(Arc::new(model));
            return Ok(Switch::Done);
        }
        Err(error) => {
            state
                .index_failure
                .get_or_insert(memvault_index::IndexError::Io(error.to_string()));
            state.handle.embedding.store(Arc::new(model));
            return Ok(Switch::Done);
        }
    };
    state.indexes = indexes.clone();
    state.handle.indexes.store(Some(indexes));
    state.handle.embedding.store(Arc::new(model.clone()));
    state.publish();
    tracing::info!(
        tenant = %state.tenant(),
        collection = %state.name(),
        model = %model,
        memories = count,
        "collection switched to its re-embedded vectors"
    );
    Ok(Switch::Done)
}

/// Carries out [`decide`]'s decisions: new facts and the memories they supersede or set
/// aside are written in one atomic store batch, then indexed and published.
async fn remember(
    state: &mut CollectionState,
    facts: Vec<IncomingFact>,
    importance: f64,
    created_by: CreatedBy,
    now: DateTime<Utc>,
) -> Result<Vec<RememberedFact>> {
    let decisions = decide(&state.current, &facts, now);
    let mut records: Vec<Option<MemoryRecord>> = facts
        .iter()
        .zip(&decisions)
        .map(|(fact, decision)| {
            decision.stores().then(|| MemoryRecord {
                slot: fact.slot.clone(),
                value: Some(fact.value.clone()),
                expires_at: fact.valid_until,
                ..MemoryRecord::new(
                    fact.text.clone(),
                    importance,
                    fact.category.clone(),
                    "remember".to_owned(),
                    created_by.clone(),
                    now,
                )
            })
        })
        .collect();
    let target_ids = stored_targets(&decisions);
    let (store, tenant, name, ids) = (
        state.store.clone(),
        state.tenant().clone(),
        state.name().clone(),
        target_ids.clone(),
    );
    let loaded = blocking(move || {
        ids.iter()
            .map(|id| Ok((id.clone(), store.memory(&tenant, &name, id)?)))
            .collect::<memvault_storage::error::Result<Vec<_>>>()
    })
    .await?;
    let mut embeddings: HashMap<String, Vec<f32>> = HashMap::new();
    let mut targets: HashMap<String, MemoryRecord> = HashMap::new();
    for (id, memory) in loaded {
        let memory = memory.ok_or_else(|| Error::MemoryNotInStore(id.clone()))?;
        embeddings.insert(id.clone(), memory.embedding);
        targets.insert(id, memory.record);
    }
    apply_changes(&decisions, &facts, &mut records, &mut targets, now);
    let fresh: Vec<Option<StoredMemory>> = records
        .into_iter()
        .zip(&facts)
        .map(|(record, fact)| {
            record.map(|record| StoredMemory {
                record,
                embedding: fact.embedding.clone(),
            })
        })
        .collect();
    let changed: Vec<StoredMemory> = target_ids
        .iter()
        .filter_map(|id| {
            let record = targets.remove(id)?;
            let embedding = embeddings.remove(id).unwrap_or_default();
            Some(StoredMemory { record, embedding })
        })
        .collect();
    let mut created: Vec<StoredMemory> = fresh.iter().flatten().cloned().collect();
    for memory in &mut created {
        memory.record.index_key = state.next_key();
    }
    let ids_by_index: Vec<Option<String>> = fresh
        .iter()
        .map(|memory| memory.as_ref().map(|memory| memory.record.id.clone()))
        .collect();
    let mut writes = created.clone();
    writes.extend(changed.iter().cloned());
    if !writes.is_empty() {
        let (store, tenant, name) = (
            state.store.clone(),
            state.tenant().clone(),
            state.name().clone(),
        );
        blocking(move || store.put_memories(&tenant, &name, &writes)).await?;
    }
    if !created.is_empty() {
        state.index_new(Arc::new(created.clone())).await;
    }
    for memory in changed.into_iter().chain(created) {
        state.put_current(Arc::new(memory.record));
    }
    if decisions.iter().any(Decision::stores) {
        state.publish();
    }
    let outcome = facts
        .iter()
        .zip(&decisions)
        .enumerate()
        .map(|(index, (fact, decision))| {
            let id = match decision {
                Decision::Duplicate {
                    of: Target::Stored(id),
                } => id.clone(),
                Decision::Duplicate {
                    of: Target::Batch(earlier),
                } => ids_by_index[*earlier].clone().unwrap_or_default(),
                _ => ids_by_index[index].clone().unwrap_or_default(),
            };
            let text = match decision {
                Decision::Duplicate {
                    of: Target::Stored(id),
                } => state
                    .current
                    .memories
                    .get(id.as_str())
                    .map(|memory| memory.text.clone())
                    .unwrap_or_else(|| fact.text.clone()),
                _ => fact.text.clone(),
            };
            RememberedFact {
                id,
                text,
                kind: fact.category.clone(),
                relation: decision.relation().to_owned(),
            }
        })
        .collect();
    Ok(outcome)
}
