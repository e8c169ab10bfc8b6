//! The tenant actor: owns one tenant's collections and keys, and supervises its
//! collection actors (restarting a failed one with back-off, its state reloaded from the
//! store).

mod grants;
mod keys;
mod messages;
mod state;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use memvault_storage::{CollectionName, CollectionRecord, EmbeddingModel, Store, TenantSettings};
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};

pub use messages::{RecordChange, SettingsChange, TenantMessage};
pub use state::{CollectionEntry, TenantHandle, TenantSnapshot};

use crate::agent::KeyDirectory;
use crate::call::{blocking, call_actor};
use crate::collection::{
    CollectionActor, CollectionArgs, CollectionHandle, CollectionMessage, Switch,
};
use crate::error::{Error, Result};
use memvault_events::EventBroker;
use memvault_index::{IndexSettings, VectorIndex};
use memvault_types::RestartPolicy;

/// How long deleting a collection may wait for its actor.
const DESTROY_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest a collection may take to store its re-embedded memories in one write.
const SWITCH_TIMEOUT: Duration = Duration::from_secs(600);
/// How long stopping waits for each child actor to finish its current message.
const CHILD_STOP_TIMEOUT: Duration = Duration::from_secs(10);

pub struct TenantActor;

pub struct TenantArgs {
    pub handle: Arc<TenantHandle>,
    pub store: Arc<dyn Store>,
    pub indexing: Arc<IndexSettings>,
    pub keys: Arc<KeyDirectory>,
    pub events: EventBroker,
    /// How failed collection actors are restarted.
    pub restarts: RestartPolicy,
}

pub struct TenantState {
    /// Shared with readers and with the root actor; the actor publishes into it.
    handle: Arc<TenantHandle>,
    store: Arc<dyn Store>,
    indexing: Arc<IndexSettings>,
    /// Where this tenant's active keys are published for authentication.
    keys: Arc<KeyDirectory>,
    /// Which collection each linked child actor serves, to act on supervision events.
    children: HashMap<ActorId, CollectionName>,
    /// How failed collection actors are restarted (their failures are on their handles).
    restarts: RestartPolicy,
    /// Handed to each collection actor, which reports changed memories to it (webhooks).
    events: EventBroker,
}

impl TenantState {
    fn snapshot(&self) -> Arc<TenantSnapshot> {
        self.handle.snapshot()
    }

    fn publish(&self, snapshot: TenantSnapshot) {
        self.handle.snapshot.store(Arc::new(snapshot));
    }

    fn entry(&self, name: &CollectionName) -> Option<CollectionEntry> {
        self.snapshot().collections.get(name).cloned()
    }

    fn not_found(name: &CollectionName) -> Error {
        Error::CollectionNotFound(name.clone())
    }
}

async fn spawn_collection(
    myself: &ActorRef<TenantMessage>,
    state: &mut TenantState,
    handle: &Arc<CollectionHandle>,
) -> Result<()> {
    let args = CollectionArgs {
        handle: handle.clone(),
        store: state.store.clone(),
        indexing: state.indexing.clone(),
        events: Some(state.events.clone()),
    };
    let (actor, _) = Actor::spawn_linked(None, CollectionActor, args, myself.get_cell())
        .await
        .map_err(|error| Error::StartFailed {
            what: format!("collection '{}'", handle.name),
            reason: error.to_string(),
        })?;
    state.children.insert(actor.get_id(), handle.name.clone());
    handle.actor.store(Some(Arc::new(actor)));
    Ok(())
}

async fn create_collection(
    myself: &ActorRef<TenantMessage>,
    state: &mut TenantState,
    record: CollectionRecord,
) -> Result<CollectionEntry> {
    let (store, tenant, stored) = (
        state.store.clone(),
        state.snapshot().record.id.clone(),
        record.clone(),
    );
    blocking(move || store.put_collection(&tenant, &stored)).await?;
    let handle = CollectionHandle::new(
        state.snapshot().record.id.clone(),
        record.name.clone(),
        record.embedding_model(),
    );
    spawn_collection(myself, state, &handle).await?;
    let entry = CollectionEntry {
        record: Arc::new(record),
        handle,
    };
    let mut snapshot = (*state.snapshot()).clone();
    snapshot
        .collections
        .insert(entry.record.name.clone(), entry.clone());
    state.publish(snapshot);
    Ok(entry)
}

async fn update_settings(
    state: &mut TenantState,
    change: messages::SettingsChange,
) -> Result<Arc<TenantSettings>> {
    let snapshot = state.snapshot();
    let settings = change(&snapshot.settings)?;
    let (store, tenant, stored) = (
        state.store.clone(),
        snapshot.record.id.clone(),
        settings.clone(),
    );
    blocking(move || store.put_tenant_settings(&tenant, &stored)).await?;
    let settings = Arc::new(settings);
    let mut snapshot = (*snapshot).clone();
    snapshot.settings = settings.clone();
    state.publish(snapshot);
    Ok(settings)
}

async fn update_record(
    state: &mut TenantState,
    change: messages::RecordChange,
) -> Result<Arc<memvault_storage::TenantRecord>> {
    let snapshot = state.snapshot();
    let current = &snapshot.record;
    let record = memvault_storage::TenantRecord {
        id: current.id.clone(),
        created_at: current.created_at,
        ..change(current)?
    };
    let (store, stored) = (state.store.clone(), record.clone());
    blocking(move || store.put_tenant(&stored)).await?;
    let record = Arc::new(record);
    let mut snapshot = (*snapshot).clone();
    snapshot.record = record.clone();
    state.publish(snapshot);
    Ok(record)
}

fn new_collection_record(
    name: CollectionName,
    description: Option<String>,
    metadata: serde_json::Map<String, serde_json::Value>,
    embedding: &EmbeddingModel,
) -> CollectionRecord {
    let now = Utc::now();
    CollectionRecord {
        name,
        description,
        metadata,
        created_at: now,
        updated_at: now,
        grants: Vec::new(),
        embedding: Some(embedding.clone()),
    }
}

/// The collection actor switches (one store write of its memories and the record); the
/// record is published only after that. The tenant actor waits meanwhile, so no other
/// change of the record (a grant, a description) can interleave and be lost.
async fn switch_embeddings(
    state: &mut TenantState,
    name: &CollectionName,
    model: EmbeddingModel,
    vectors: Box<VectorIndex>,
) -> Result<Switch> {
    let entry = state
        .entry(name)
        .ok_or_else(|| TenantState::not_found(name))?;
    let actor = entry
        .handle
        .actor
        .load_full()
        .ok_or_else(|| Error::Restarting {
            what: format!("collection '{name}'"),
        })?;
    let mut record = (*entry.record).clone();
    record.embedding = Some(model);
    let sent = record.clone();
    let outcome = call_actor(
        &actor,
        |reply| CollectionMessage::SwitchEmbeddings {
            record: sent,
            vectors,
            reply,
        },
        SWITCH_TIMEOUT,
        "the collection",
    )
    .await?;
    if matches!(outcome, Switch::Done) {
        let mut snapshot = (*state.snapshot()).clone();
        snapshot.collections.insert(
            name.clone(),
            CollectionEntry {
                record: Arc::new(record),
                handle: entry.handle.clone(),
            },
        );
        state.publish(snapshot);
    }
    Ok(outcome)
}

async fn delete_collection(state: &mut TenantState, name: &CollectionName) -> Result<()> {
    let entry = state
        .entry(name)
        .ok_or_else(|| TenantState::not_found(name))?;
    match entry.handle.actor.load_full() {
        Some(actor) => {
            call_actor(
                &actor,
                |reply| CollectionMessage::Destroy { reply },
                DESTROY_TIMEOUT,
                "the collection",
            )
            .await?
        }
        None => {
            // The actor is being restarted: delete through the store directly; the
            // scheduled restart finds the collection gone and does nothing.
            let (store, tenant, doomed) = (
                state.store.clone(),
                entry.handle.tenant.clone(),
                name.clone(),
            );
            blocking(move || store.delete_collection(&tenant, &doomed)).await?
        }
    }
    entry.handle.actor.store(None);
    let mut snapshot = (*state.snapshot()).clone();
    snapshot.collections.remove(name);
    state.publish(snapshot);
    Ok(())
}

/// Counts the collection actor's failure and restarts it after the policy's back-off
/// (a tenant actor gone by then, at shutdown, restarts nothing).
fn schedule_restart(
    myself: &ActorRef<TenantMessage>,
    state: &TenantState,
    handle: &CollectionHandle,
) {
    let delay = handle.supervised.failed(&state.restarts, Instant::now());
    if handle
        .supervised
        .is_degraded(&state.restarts, Instant::now())
    {
        tracing::error!(
            tenant = %handle.tenant,
            collection = %handle.name,
            failures = handle.supervised.failures(&state.restarts, Instant::now()),
            "collection actor degraded: it keeps failing; restarting it every {} ms",
            delay.as_millis()
        );
    }
    let name = handle.name.clone();
    myself.send_after(delay, move || TenantMessage::RestartCollection { name });
}

impl Actor for TenantActor {
    type Msg = TenantMessage;
    type State = TenantState;
    type Arguments = TenantArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: TenantArgs,
    ) -> Result<TenantState, ActorProcessingErr> {
        let tenant = args.handle.snapshot().record.id.clone();
        let (store, keys_of) = (args.store.clone(), tenant.clone());
        let mut stored_keys = blocking(move || store.api_keys(&keys_of)).await?;
        if let Some(promoted) = keys::promote_missing_owner(&mut stored_keys) {
            let store = args.store.clone();
            blocking(move || store.put_api_key(&promoted)).await?;
        }
        // The keys of an account being erased never authenticate again.
        if args.handle.snapshot().record.erasing_since.is_none() {
            for key in &stored_keys {
                args.keys.publish(key);
            }
        }
        let (store, collections_of) = (args.store.clone(), tenant.clone());
        let records = blocking(move || store.collections(&collections_of)).await?;
        let (store, settings_of) = (args.store.clone(), tenant.clone());
        let settings = blocking(move || store.tenant_settings(&settings_of)).await?;
        let mut state = TenantState {
            handle: args.handle,
            store: args.store,
            indexing: args.indexing,
            keys: args.keys,
            children: HashMap::new(),
            restarts: args.restarts,
            events: args.events,
        };
        let mut snapshot = (*state.snapshot()).clone();
        snapshot.collections = imbl::OrdMap::new();
        snapshot.settings = Arc::new(settings);
        snapshot.keys = stored_keys
            .into_iter()
            .map(|key| (key.id.clone(), Arc::new(key)))
            .collect();
        for record in records {
            // A restarted tenant actor keeps the handles readers already hold.
            let handle = match state.snapshot().collections.get(&record.name) {
                Some(existing) => existing.handle.clone(),
                None => CollectionHandle::new(
                    tenant.clone(),
                    record.name.clone(),
                    record.embedding_model(),
                ),
            };
            spawn_collection(&myself, &mut state, &handle).await?;
            snapshot.collections.insert(
                record.name.clone(),
                CollectionEntry {
                    record: Arc::new(record),
                    handle,
                },
            );
        }
        state.publish(snapshot);
        Ok(state)
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        // Wait for the children so that nothing holds the store once the tree is down.
        for entry in state.snapshot().collections.values() {
            if let Some(actor) = entry.handle.actor.swap(None) {
                let _ = actor
                    .stop_and_wait(Some("tenant stopped".to_owned()), Some(CHILD_STOP_TIMEOUT))
                    .await;
            }
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: TenantMessage,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            TenantMessage::EnsureCollection { name, reply } => {
                let result = match state.entry(&name) {
                    Some(entry) => Ok(entry),
                    None => {
                        let record = new_collection_record(
                            name,
                            None,
                            Default::default(),
                            &state.indexing.model,
                        );
                        create_collection(&myself, state, record).await
                    }
                };
                let _ = reply.send(result);
            }
            TenantMessage::CreateCollection {
                name,
                description,
                metadata,
                reply,
            } => {
                let result = if state.entry(&name).is_some() {
                    Err(Error::CollectionExists(name))
                } else {
                    let record =
                        new_collection_record(name, description, metadata, &state.indexing.model);
                    create_collection(&myself, state, record).await
                };
                let _ = reply.send(result);
            }
            TenantMessage::UpdateCollection {
                name,
                description,
                metadata,
                reply,
            } => {
                let result = update_collection(state, &name, description, metadata).await;
                let _ = reply.send(result);
            }
            TenantMessage::DeleteCollection { name, reply } => {
                let result = delete_collection(state, &name).await;
                let _ = reply.send(result);
            }
            TenantMessage::PutGrant { name, grant, reply } => {
                let _ = reply.send(grants::put(state, &name, grant).await);
            }
            TenantMessage::DeleteGrant {
                name,
                agent_key_id,
                reply,
            } => {
                let _ = reply.send(grants::delete(state, &name, &agent_key_id).await);
            }
            TenantMessage::AddKey { key, reply } => {
                let _ = reply.send(keys::add(state, key).await);
            }
            TenantMessage::RevokeKey { key_id, reply } => {
                let _ = reply.send(keys::revoke(state, &key_id).await);
            }
            TenantMessage::RotateKey { key_id, new, reply } => {
                let _ = reply.send(keys::rotate(state, &key_id, *new).await);
            }
            TenantMessage::UpdateSettings { change, reply } => {
                let result = update_settings(state, change).await;
                let _ = reply.send(result);
            }
            TenantMessage::UpdateRecord { change, reply } => {
                let result = update_record(state, change).await;
                let _ = reply.send(result);
            }
            TenantMessage::SwitchEmbeddings {
                name,
                model,
                vectors,
                reply,
            } => {
                let result = switch_embeddings(state, &name, model, vectors).await;
                let _ = reply.send(result);
            }
            TenantMessage::RestartCollection { name } => {
                let Some(entry) = state.entry(&name) else {
                    return Ok(());
                };
                if entry.handle.actor.load().is_some() {
                    return Ok(());
                }
                match spawn_collection(&myself, state, &entry.handle).await {
                    Ok(()) => tracing::info!(
                        tenant = %entry.handle.tenant,
                        collection = %name,
                        restarts = entry.handle.supervised.restarts(),
                        "collection actor restarted"
                    ),
                    Err(error) => {
                        tracing::warn!(collection = %name, %error, "collection actor restart failed");
                        schedule_restart(&myself, state, &entry.handle);
                    }
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(cell, error) => {
                let Some(name) = state.children.remove(&cell.get_id()) else {
                    return Ok(());
                };
                if let Some(entry) = state.entry(&name) {
                    entry.handle.actor.store(None);
                    tracing::error!(
                        tenant = %entry.handle.tenant,
                        collection = %name,
                        %error,
                        "collection actor failed; restarting with its state reloaded"
                    );
                    schedule_restart(&myself, state, &entry.handle);
                }
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                state.children.remove(&cell.get_id());
            }
            SupervisionEvent::ActorStarted(_) | SupervisionEvent::ProcessGroupChanged(_) => {}
        }
        Ok(())
    }
}

async fn update_collection(
    state: &mut TenantState,
    name: &CollectionName,
    description: Option<String>,
    metadata: Option<serde_json::Map<String, serde_json::Value>>,
) -> Result<CollectionEntry> {
    let entry = state
        .entry(name)
        .ok_or_else(|| TenantState::not_found(name))?;
    let mut record = (*entry.record).clone();
    if let Some(description) = description {
        record.description = Some(description);
    }
    if let Some(metadata) = metadata {
        record.metadata = metadata;
    }
    record.updated_at = Utc::now();
    replace_record(state, entry, record).await
}

/// Stores a changed record of an existing collection and publishes it with the same handle.
async fn replace_record(
    state: &mut TenantState,
    entry: CollectionEntry,
    record: CollectionRecord,
) -> Result<CollectionEntry> {
    let (store, tenant, stored) = (
        state.store.clone(),
        entry.handle.tenant.clone(),
        record.clone(),
    );
    blocking(move || store.put_collection(&tenant, &stored)).await?;
    let updated = CollectionEntry {
        record: Arc::new(record),
        handle: entry.handle,
    };
    let mut snapshot = (*state.snapshot()).clone();
    snapshot
        .collections
        .insert(updated.record.name.clone(), updated.clone());
    state.publish(snapshot);
    Ok(updated)
}
