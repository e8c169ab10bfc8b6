//! The root supervisor: spawns one tenant actor per tenant at start-up and on tenant
//! creation, and restarts a failed one with back-off. With several nodes it starts with
//! none: it loads a tenant when this node takes the tenant's lease (`AdoptTenant`) and
//! stops it when the node loses it (`RemoveTenant`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use memvault_storage::{ApiKeyRecord, Store, TenantId, TenantRecord};
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};

use crate::agent::KeyDirectory;
use crate::cluster::TenantOwnership;
use crate::error::{Error, Result};
use crate::tenant::{TenantActor, TenantArgs, TenantHandle};
use memvault_events::EventBroker;
use memvault_index::IndexSettings;
use memvault_types::RestartPolicy;

pub struct RootActor;

pub struct RootArgs {
    pub store: Arc<dyn Store>,
    pub indexing: Arc<IndexSettings>,
    pub keys: Arc<KeyDirectory>,
    pub tenants: Arc<DashMap<TenantId, Arc<TenantHandle>>>,
    /// Handed to every collection actor for webhook events.
    pub events: EventBroker,
    /// How failed tenant and collection actors are restarted.
    pub restarts: RestartPolicy,
    /// Several nodes: which tenants this node serves; `None` serves them all.
    pub ownership: Option<Arc<dyn TenantOwnership>>,
}

pub enum RootMessage {
    /// Persists a new tenant with its first key and starts its actor.
    CreateTenant {
        record: Box<TenantRecord>,
        key: Box<ApiKeyRecord>,
        reply: RpcReplyPort<Result<Arc<TenantHandle>>>,
    },
    /// Takes a tenant out of the service (its account is being erased): its handle leaves
    /// the map, its actor tree is stopped and awaited, then its keys leave the key
    /// directory. Replies when done; nothing to do for an unknown tenant.
    RemoveTenant {
        id: TenantId,
        reply: RpcReplyPort<()>,
    },
    /// Sent to itself after a back-off: restart a failed tenant actor.
    RestartTenant { id: TenantId },
    /// Several nodes: loads a stored tenant this node has just claimed and starts its
    /// actor. Replies whether it is served here now (false: unknown, or being erased).
    AdoptTenant {
        id: TenantId,
        reply: RpcReplyPort<Result<bool>>,
    },
}

pub struct RootState {
    store: Arc<dyn Store>,
    indexing: Arc<IndexSettings>,
    keys: Arc<KeyDirectory>,
    /// Every tenant's handle, shared with the service for lock-free reads.
    tenants: Arc<DashMap<TenantId, Arc<TenantHandle>>>,
    /// Which tenant each linked child actor serves.
    children: HashMap<ActorId, TenantId>,
    /// Passed down to the collection actors, which report changed memories to it.
    events: EventBroker,
    restarts: RestartPolicy,
    ownership: Option<Arc<dyn TenantOwnership>>,
}

async fn spawn_tenant(
    myself: &ActorRef<RootMessage>,
    state: &mut RootState,
    handle: &Arc<TenantHandle>,
) -> Result<()> {
    let args = TenantArgs {
        handle: handle.clone(),
        store: state.store.clone(),
        indexing: state.indexing.clone(),
        keys: state.keys.clone(),
        events: state.events.clone(),
        restarts: state.restarts,
    };
    let id = handle.snapshot().record.id.clone();
    let (actor, _) = Actor::spawn_linked(None, TenantActor, args, myself.get_cell())
        .await
        .map_err(|error| Error::StartFailed {
            what: format!("tenant {id}"),
            reason: error.to_string(),
        })?;
    state.children.insert(actor.get_id(), id);
    handle.actor.store(Some(Arc::new(actor)));
    Ok(())
}

async fn create_tenant(
    myself: &ActorRef<RootMessage>,
    state: &mut RootState,
    record: TenantRecord,
    key: ApiKeyRecord,
) -> Result<Arc<TenantHandle>> {
    let store = state.store.clone();
    let stored = record.clone();
    let ownership = state.ownership.clone();
    tokio::task::spawn_blocking(move || {
        // Several nodes: the new tenant is this node's before anything of it is written.
        if let Some(ownership) = ownership {
            if !ownership.claim(&stored.id)? {
                return Err(memvault_storage::StorageError::Fenced(format!(
                    "tenant {} is already another node's",
                    stored.id
                )));
            }
        }
        store.put_tenant(&stored)?;
        store.put_api_key(&key)
    })
    .await
    .map_err(|error| Error::TaskFailed {
        task: "storage task",
        reason: error.to_string(),
    })??;
    let handle = TenantHandle::new(record.clone());
    // Several nodes: a new tenant may belong on another node, which loads it at its first
    // request.
    if let Some(ownership) = state.ownership.clone() {
        let id = record.id.clone();
        let handed_off = tokio::task::spawn_blocking(move || ownership.hand_off(&id))
            .await
            .map_err(|error| Error::TaskFailed {
                task: "storage task",
                reason: error.to_string(),
            })??;
        if handed_off {
            return Ok(handle);
        }
    }
    spawn_tenant(myself, state, &handle).await?;
    state.tenants.insert(record.id, handle.clone());
    Ok(handle)
}

impl Actor for RootActor {
    type Msg = RootMessage;
    type State = RootState;
    type Arguments = RootArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: RootArgs,
    ) -> Result<RootState, ActorProcessingErr> {
        let store = args.store.clone();
        // Several nodes: none is loaded until this node claims it.
        let records = match args.ownership {
            Some(_) => Vec::new(),
            None => tokio::task::spawn_blocking(move || store.tenants()).await??,
        };
        let mut state = RootState {
            store: args.store,
            indexing: args.indexing,
            keys: args.keys,
            tenants: args.tenants,
            children: HashMap::new(),
            events: args.events,
            restarts: args.restarts,
            ownership: args.ownership,
        };
        for record in records {
            if record.erasing_since.is_some() {
                // Its erasure resumes on the erasure queue; nothing of it is served.
                continue;
            }
            let handle = TenantHandle::new(record.clone());
            spawn_tenant(&myself, &mut state, &handle).await?;
            state.tenants.insert(record.id, handle);
        }
        Ok(state)
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        let running: Vec<_> = state
            .tenants
            .iter()
            .filter_map(|tenant| tenant.actor.swap(None))
            .collect();
        for actor in running {
            let _ = actor
                .stop_and_wait(
                    Some("shutting down".to_owned()),
                    Some(Duration::from_secs(20)),
                )
                .await;
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: RootMessage,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            RootMessage::CreateTenant { record, key, reply } => {
                let result = create_tenant(&myself, state, *record, *key).await;
                let _ = reply.send(result);
            }
            RootMessage::RemoveTenant { id, reply } => {
                if let Some((_, handle)) = state.tenants.remove(&id) {
                    if let Some(actor) = handle.actor.swap(None) {
                        state.children.remove(&actor.get_id());
                        let _ = actor
                            .stop_and_wait(
                                Some("account erased".to_owned()),
                                Some(Duration::from_secs(30)),
                            )
                            .await;
                    }
                }
                state.keys.forget_tenant(&id);
                let _ = reply.send(());
            }
            RootMessage::AdoptTenant { id, reply } => {
                let adopted = adopt_tenant(&myself, state, id).await;
                let _ = reply.send(adopted);
            }
            RootMessage::RestartTenant { id } => {
                let Some(handle) = state.tenants.get(&id).map(|entry| entry.clone()) else {
                    return Ok(());
                };
                if let Err(error) = spawn_tenant(&myself, state, &handle).await {
                    tracing::warn!(tenant = %id, %error, "tenant actor restart failed");
                    schedule_restart(&myself, state, &handle);
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(cell, error) => {
                let Some(id) = state.children.remove(&cell.get_id()) else {
                    return Ok(());
                };
                let Some(handle) = state.tenants.get(&id).map(|entry| entry.clone()) else {
                    return Ok(());
                };
                handle.actor.store(None);
                tracing::error!(tenant = %id, %error, "tenant actor failed; restarting");
                schedule_restart(&myself, state, &handle);
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                state.children.remove(&cell.get_id());
            }
            SupervisionEvent::ActorStarted(_) | SupervisionEvent::ProcessGroupChanged(_) => {}
        }
        Ok(())
    }
}

/// Loads the stored tenant `id` and starts its actor, unless it is loaded already.
async fn adopt_tenant(
    myself: &ActorRef<RootMessage>,
    state: &mut RootState,
    id: TenantId,
) -> Result<bool> {
    if state.tenants.contains_key(&id) {
        return Ok(true);
    }
    let store = state.store.clone();
    let wanted = id.clone();
    let record = tokio::task::spawn_blocking(move || {
        Ok::<_, memvault_storage::StorageError>(
            store
                .tenants()?
                .into_iter()
                .find(|record| record.id == wanted),
        )
    })
    .await
    .map_err(|error| Error::TaskFailed {
        task: "storage task",
        reason: error.to_string(),
    })??;
    let Some(record) = record.filter(|record| record.erasing_since.is_none()) else {
        return Ok(false);
    };
    if let Err(error) = state.indexing.forget_tenant(&id) {
        tracing::warn!(tenant = %id, %error, "old indexes could not be removed");
    }
    let handle = TenantHandle::new(record);
    spawn_tenant(myself, state, &handle).await?;
    state.tenants.insert(id, handle);
    Ok(true)
}

/// Counts the tenant actor's failure and restarts it after the policy's back-off.
fn schedule_restart(myself: &ActorRef<RootMessage>, state: &RootState, handle: &TenantHandle) {
    let now = std::time::Instant::now();
    let delay = handle.supervised.failed(&state.restarts, now);
    let id = handle.snapshot().record.id.clone();
    if handle.supervised.is_degraded(&state.restarts, now) {
        tracing::error!(tenant = %id, "tenant actor degraded: it keeps failing; restarting it every {} ms", delay.as_millis());
    }
    myself.send_after(delay, move || RootMessage::RestartTenant { id });
}
