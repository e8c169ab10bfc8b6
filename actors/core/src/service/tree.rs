//! The running actor tree as the services reach it: the tenants' published handles (read
//! without a mailbox), calls to a tenant or collection actor with the call timeout, the
//! key directory and the clock. Each service that talks to actors holds a [`Tree`]; none
//! of them holds the others through it.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use memvault_storage::{CollectionName, StorageError, TenantId, TenantRecord};
use memvault_types::clock::Clock;
use ractor::ActorRef;

use super::access::{CollectionAccess, Level};
use crate::agent::KeyDirectory;
use crate::call::call_actor;
use crate::collection::{CollectionHandle, CollectionMessage, CollectionSnapshot};
use crate::error::{Error, Result};
use crate::root::RootMessage;
use crate::tenant::{CollectionEntry, TenantHandle, TenantMessage};

/// A cheap handle to the actor tree: see the module docs.
#[derive(Clone)]
pub struct Tree {
    parts: Arc<Parts>,
}

struct Parts {
    root: ActorRef<RootMessage>,
    /// Every tenant's handle, kept by the root actor.
    tenants: Arc<DashMap<TenantId, Arc<TenantHandle>>>,
    keys: Arc<KeyDirectory>,
    call_timeout: Duration,
    clock: Arc<dyn Clock>,
    /// Several nodes: a tenant not loaded here may be served by another node (it moved
    /// while a request for it was under way), which is not "not found".
    clustered: bool,
}

impl Tree {
    pub(crate) fn new(
        root: ActorRef<RootMessage>,
        tenants: Arc<DashMap<TenantId, Arc<TenantHandle>>>,
        keys: Arc<KeyDirectory>,
        call_timeout: Duration,
        clock: Arc<dyn Clock>,
        clustered: bool,
    ) -> Self {
        Self {
            parts: Arc::new(Parts {
                root,
                tenants,
                keys,
                call_timeout,
                clock,
                clustered,
            }),
        }
    }

    /// The service's "now" (the configured clock).
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.parts.clock.now()
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.parts.clock
    }

    /// Every tenant's handle.
    pub(crate) fn tenants(&self) -> &Arc<DashMap<TenantId, Arc<TenantHandle>>> {
        &self.parts.tenants
    }

    pub(crate) fn keys(&self) -> &KeyDirectory {
        &self.parts.keys
    }

    pub(crate) fn root(&self) -> &ActorRef<RootMessage> {
        &self.parts.root
    }

    /// Whether the tenant is loaded (not unknown, not being erased).
    pub fn has_tenant(&self, tenant: &TenantId) -> bool {
        self.parts.tenants.contains_key(tenant)
    }

    /// Whether the actor tree is up (for health checks).
    pub fn is_running(&self) -> bool {
        matches!(
            self.parts.root.get_status(),
            ractor::ActorStatus::Running | ractor::ActorStatus::Upgrading
        )
    }

    pub(crate) fn tenant_handle(&self, tenant: &TenantId) -> Result<Arc<TenantHandle>> {
        self.parts
            .tenants
            .get(tenant)
            .map(|entry| entry.clone())
            .ok_or_else(|| {
                if self.parts.clustered {
                    // Its key authenticated a moment ago: the node let it go since.
                    Error::Storage(StorageError::Fenced(format!(
                        "tenant {tenant} is no longer served by this node"
                    )))
                } else {
                    Error::TenantNotFound(tenant.clone())
                }
            })
    }

    pub(crate) fn collection_entry(
        &self,
        tenant: &TenantId,
        name: &CollectionName,
    ) -> Result<CollectionEntry> {
        self.tenant_handle(tenant)?
            .snapshot()
            .collections
            .get(name)
            .cloned()
            .ok_or_else(|| Error::CollectionNotFound(name.clone()))
    }

    /// The latest published snapshot of the collection an access is to.
    pub(crate) fn collection_snapshot<L: Level>(
        &self,
        access: &CollectionAccess<L>,
    ) -> Result<Arc<CollectionSnapshot>> {
        Ok(self
            .collection_entry(access.tenant(), access.collection())?
            .handle
            .snapshot())
    }

    /// The tenant whose email is `email` (compared without case).
    pub(crate) fn tenant_by_email(&self, email: &str) -> Option<TenantRecord> {
        self.parts.tenants.iter().find_map(|tenant| {
            let record = &tenant.snapshot().record;
            record
                .email
                .eq_ignore_ascii_case(email)
                .then(|| (**record).clone())
        })
    }

    pub(crate) async fn call_tenant<T: Send + 'static>(
        &self,
        tenant: &TenantId,
        build: impl FnOnce(ractor::RpcReplyPort<Result<T>>) -> TenantMessage,
    ) -> Result<T> {
        let handle = self.tenant_handle(tenant)?;
        let actor = handle.actor.load_full().ok_or_else(|| Error::Restarting {
            what: "the tenant".to_owned(),
        })?;
        call_actor(&actor, build, self.parts.call_timeout, "the tenant").await
    }

    pub(crate) async fn call_collection<T: Send + 'static>(
        &self,
        handle: &CollectionHandle,
        build: impl FnOnce(ractor::RpcReplyPort<Result<T>>) -> CollectionMessage,
    ) -> Result<T> {
        let actor = handle.actor.load_full().ok_or_else(|| Error::Restarting {
            what: format!("collection '{}'", handle.name),
        })?;
        call_actor(&actor, build, self.parts.call_timeout, "the collection").await
    }

    /// A call to the root supervisor (tenants are created there).
    pub(crate) async fn call_root<T: Send + 'static>(
        &self,
        build: impl FnOnce(ractor::RpcReplyPort<Result<T>>) -> RootMessage,
    ) -> Result<T> {
        call_actor(
            &self.parts.root,
            build,
            self.parts.call_timeout,
            "the root supervisor",
        )
        .await
    }

    /// Takes a tenant out of the actor tree: handle, actors, keys (see
    /// [`RootMessage::RemoveTenant`]).
    pub(crate) async fn remove_tenant(&self, tenant: &TenantId) {
        let id = tenant.clone();
        if let Err(error) = self
            .parts
            .root
            .call(|reply| RootMessage::RemoveTenant { id, reply }, None)
            .await
        {
            tracing::warn!(tenant = %tenant, %error, "the root actor could not detach the tenant");
        }
    }
}
