//! Who may read and write which collection: read-only keys and per-collection grants.
//!
//! A collection with no grants is open to every key of its tenant. With grants it is
//! restricted: an agent key needs a grant with `can_read` to read or search it and one
//! with `can_write` to change it; the tenant's owner key is never restricted (it manages
//! the grants). The checks read the tenant actor's published snapshot: no mailbox.

use std::marker::PhantomData;
use std::sync::Arc;

use memvault_storage::{CollectionName, CollectionRecord, GrantRecord, TenantId};

use super::tree::Tree;
use super::Collections;
use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::tenant::TenantMessage;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// Read access to a collection: get, list, search, related, health, summary,
/// contradictions, profile, grants, and the dry runs of dedup and archive-stale.
#[derive(Debug, Clone, Copy)]
pub enum Read {}

/// Write access: anything that changes the collection, its memories or its grants.
#[derive(Debug, Clone, Copy)]
pub enum Write {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Read {}
    impl Sealed for super::Write {}
}

/// The level a [`CollectionAccess`] proves: [`Read`] or [`Write`].
pub trait Level: sealed::Sealed + Send + Sync + 'static {
    const ACCESS: Access;
}

impl Level for Read {
    const ACCESS: Access = Access::Read;
}

impl Level for Write {
    const ACCESS: Access = Access::Write;
}

/// Proof that an agent may read (`CollectionAccess<Read>`) or change
/// (`CollectionAccess<Write>`) one collection of its tenant.
///
/// Only [`Authorizer::authorize`] makes one (the fields are private to this module), and
/// every service method that touches a collection takes one: a caller cannot skip the
/// check. REST, MCP and every later channel (email-in, connectors, the dashboard) pass
/// through the same rule.
#[derive(Debug, Clone)]
pub struct CollectionAccess<L: Level> {
    agent: Agent,
    collection: CollectionName,
    level: PhantomData<L>,
}

impl<L: Level> CollectionAccess<L> {
    /// The agent the access was granted to.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    pub fn tenant(&self) -> &TenantId {
        &self.agent.tenant_id
    }

    pub fn collection(&self) -> &CollectionName {
        &self.collection
    }
}

impl CollectionAccess<Write> {
    /// The write access a background job continues under: the intake that accepted the
    /// job (an ingest batch) took a [`CollectionAccess<Write>`] from
    /// [`Authorizer::authorize`] for this writer and collection; the job, resumed perhaps
    /// after a restart, writes as that writer.
    pub fn resumed(
        tenant: &TenantId,
        writer: &memvault_storage::CreatedBy,
        collection: CollectionName,
    ) -> Self {
        Self {
            agent: Agent {
                tenant_id: tenant.clone(),
                key_id: writer.id.clone(),
                label: writer.label.clone(),
                read_only: false,
                owner: false,
                admin: false,
            },
            collection,
            level: PhantomData,
        }
    }
}

impl CollectionAccess<Write> {
    /// The write access of mail accepted at a tenant's drop address. No key is presented:
    /// the relay's shared secret, the address (which only the tenant's owner sets and
    /// rotates) and the owner's sender allowlist are the authorisation, so the intake
    /// writes as the owner would, under its own identity in the batch and the audit log.
    pub fn mail_intake(tenant: &TenantId, collection: CollectionName) -> Self {
        Self {
            agent: Agent {
                tenant_id: tenant.clone(),
                key_id: MAIL_INTAKE_ID.to_owned(),
                label: "mail-in".to_owned(),
                read_only: false,
                owner: true,
                admin: false,
            },
            collection,
            level: PhantomData,
        }
    }
}

/// The agent id mail-in writes under (never a key id: those start with `key_`).
pub const MAIL_INTAKE_ID: &str = "email-in";

/// What a dedup or archive-stale call may do: a dry run only reads, applying writes. The
/// one rule for REST and MCP.
#[derive(Debug, Clone)]
pub enum Sweep {
    DryRun(CollectionAccess<Read>),
    Apply(CollectionAccess<Write>),
}

impl Sweep {
    pub fn is_dry_run(&self) -> bool {
        matches!(self, Self::DryRun(_))
    }

    pub fn tenant(&self) -> &TenantId {
        match self {
            Self::DryRun(access) => access.tenant(),
            Self::Apply(access) => access.tenant(),
        }
    }

    pub fn collection(&self) -> &CollectionName {
        match self {
            Self::DryRun(access) => access.collection(),
            Self::Apply(access) => access.collection(),
        }
    }
}

/// Whether `agent` may `access` a collection with this record.
pub fn allows(record: &CollectionRecord, agent: &Agent, access: Access) -> bool {
    if access == Access::Write && agent.read_only {
        return false;
    }
    if agent.owner || record.grants.is_empty() {
        return true;
    }
    record
        .grants
        .iter()
        .find(|grant| grant.agent_key_id == agent.key_id)
        .is_some_and(|grant| match access {
            Access::Read => grant.can_read,
            Access::Write => grant.can_write,
        })
}

/// A collection's grants as listed.
#[derive(Debug, Clone)]
pub struct CollectionGrants {
    pub collection: CollectionName,
    pub grants: Vec<GrantRecord>,
}

impl CollectionGrants {
    /// One or more grants: only granted agents (and the owner key) get in.
    pub fn restricted(&self) -> bool {
        !self.grants.is_empty()
    }
}

/// Who may do what: the proofs handlers must hold before they touch a collection, and
/// the agent behind an API key.
#[derive(Clone)]
pub struct Authorizer {
    pub(super) tree: Tree,
}

impl Authorizer {
    /// The agent a background job writes as: the key `key_id` of `tenant` that started
    /// it, while that key is active (`KeyInactive` once it is revoked or expired).
    pub fn agent_of_key(&self, tenant: &TenantId, key_id: &str) -> Result<Agent> {
        let snapshot = self.tree.tenant_handle(tenant)?.snapshot();
        let key = snapshot
            .keys
            .get(key_id)
            .filter(|key| key.is_active(chrono::Utc::now()))
            .ok_or_else(|| Error::KeyInactive(key_id.to_owned()))?;
        Ok(Agent {
            tenant_id: tenant.clone(),
            key_id: key.id.clone(),
            label: key.label.clone(),
            read_only: key.read_only,
            owner: key.owner,
            admin: snapshot.record.admin,
        })
    }

    /// The agent behind a presented API key, if it is an active key of a live tenant.
    pub fn authenticate(&self, secret: &str) -> Option<Agent> {
        let identity = self.tree.keys().lookup(secret)?;
        let admin = self
            .tree
            .tenants()
            .get(&identity.tenant_id)?
            .snapshot()
            .record
            .admin;
        Some(Agent {
            tenant_id: identity.tenant_id,
            key_id: identity.key_id,
            label: identity.label,
            read_only: identity.read_only,
            owner: identity.owner,
            admin,
        })
    }

    /// The proof that `agent` may access the collection at level `L`, or 403. A collection
    /// that does not exist is not refused here: the operation itself answers 404, or
    /// creates it.
    pub fn authorize<L: Level>(
        &self,
        agent: &Agent,
        collection: CollectionName,
    ) -> Result<CollectionAccess<L>> {
        self.check_access(agent, &collection, L::ACCESS)?;
        Ok(CollectionAccess {
            agent: agent.clone(),
            collection,
            level: PhantomData,
        })
    }

    /// The proof a dedup or archive-stale call needs: read for a dry run, write to apply.
    pub fn authorize_sweep(
        &self,
        agent: &Agent,
        collection: CollectionName,
        dry_run: bool,
    ) -> Result<Sweep> {
        Ok(if dry_run {
            Sweep::DryRun(self.authorize(agent, collection)?)
        } else {
            Sweep::Apply(self.authorize(agent, collection)?)
        })
    }

    /// Refuses (403) an agent that may not `access` the collection.
    pub(crate) fn check_access(
        &self,
        agent: &Agent,
        name: &CollectionName,
        access: Access,
    ) -> Result<()> {
        if access == Access::Write && agent.read_only {
            return Err(Error::ReadOnlyKey);
        }
        let snapshot = self.tree.tenant_handle(&agent.tenant_id)?.snapshot();
        match snapshot.collections.get(name) {
            Some(entry) if !allows(&entry.record, agent, access) => {
                let needed = match access {
                    Access::Read => "can_read",
                    Access::Write => "can_write",
                };
                Err(Error::NoGrant {
                    collection: name.clone(),
                    agent_key_id: agent.key_id.clone(),
                    needed,
                })
            }
            _ => Ok(()),
        }
    }

    /// Whether the agent may read the collection (tenant-wide search and listings skip the
    /// ones it may not).
    pub fn may_read(&self, agent: &Agent, record: &CollectionRecord) -> bool {
        allows(record, agent, Access::Read)
    }
}

impl Collections {
    /// The grants, for a proof of either level (changing a grant reads them first).
    pub fn grants<L: Level>(&self, access: &CollectionAccess<L>) -> Result<CollectionGrants> {
        let name = access.collection();
        let entry = self.tree.collection_entry(access.tenant(), name)?;
        Ok(CollectionGrants {
            collection: name.clone(),
            grants: entry.record.grants.clone(),
        })
    }

    /// Creates or replaces one agent's grant; the first grant restricts the collection.
    pub async fn put_grant(
        &self,
        access: &CollectionAccess<Write>,
        agent_key_id: String,
        can_read: bool,
        can_write: bool,
    ) -> Result<CollectionGrants> {
        let (agent, name) = (access.agent(), access.collection());
        let grant = GrantRecord {
            agent_key_id,
            can_read,
            can_write,
            updated_at: self.tree.now(),
        };
        let name = name.clone();
        let entry = self
            .tree
            .call_tenant(&agent.tenant_id, |reply| TenantMessage::PutGrant {
                name,
                grant,
                reply,
            })
            .await?;
        Ok(grants_of(&entry.record))
    }

    /// Removes one agent's grant; removing the last one reopens the collection.
    pub async fn delete_grant(
        &self,
        access: &CollectionAccess<Write>,
        agent_key_id: &str,
    ) -> Result<CollectionGrants> {
        let (agent, name) = (access.agent(), access.collection());
        let (name, agent_key_id) = (name.clone(), agent_key_id.to_owned());
        let entry = self
            .tree
            .call_tenant(&agent.tenant_id, |reply| TenantMessage::DeleteGrant {
                name,
                agent_key_id,
                reply,
            })
            .await?;
        Ok(grants_of(&entry.record))
    }
}

fn grants_of(record: &Arc<CollectionRecord>) -> CollectionGrants {
    CollectionGrants {
        collection: record.name.clone(),
        grants: record.grants.clone(),
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use memvault_storage::TenantId;

    use super::*;

    fn agent(key_id: &str, read_only: bool, owner: bool) -> Agent {
        Agent {
            tenant_id: TenantId::from_stored("ten_test"),
            key_id: key_id.to_owned(),
            label: key_id.to_owned(),
            read_only,
            owner,
            admin: false,
        }
    }

    fn record(grants: &[(&str, bool, bool)]) -> CollectionRecord {
        CollectionRecord {
            name: CollectionName::parse("c").unwrap(),
            description: None,
            metadata: Default::default(),
            created_at: Utc::now(),
            updated_at: Utc::now(),
            grants: grants
                .iter()
                .map(|(id, can_read, can_write)| GrantRecord {
                    agent_key_id: (*id).to_owned(),
                    can_read: *can_read,
                    can_write: *can_write,
                    updated_at: Utc::now(),
                })
                .collect(),
            embedding: None,
        }
    }

    #[test]
    fn an_open_collection_lets_every_key_in_and_read_only_keys_only_read() {
        let open = record(&[]);
        assert!(allows(&open, &agent("a", false, false), Access::Write));
        assert!(allows(&open, &agent("r", true, false), Access::Read));
        assert!(!allows(&open, &agent("r", true, false), Access::Write));
    }

    #[test]
    fn a_restricted_collection_follows_each_agents_grant() {
        let restricted = record(&[("a", true, true), ("c", true, false), ("w", false, true)]);
        let cases = [
            ("a", Access::Read, true),
            ("a", Access::Write, true),
            ("c", Access::Read, true),
            ("c", Access::Write, false),
            ("w", Access::Read, false),
            ("w", Access::Write, true),
            ("b", Access::Read, false),
            ("b", Access::Write, false),
        ];
        for (key, access, expected) in cases {
            assert_eq!(
                allows(&restricted, &agent(key, false, false), access),
                expected,
                "{key} {access:?}"
            );
        }
        assert!(allows(
            &restricted,
            &agent("owner", false, true),
            Access::Write
        ));
        assert!(!allows(
            &restricted,
            &agent("a", true, false),
            Access::Write
        ));
    }
}
