//! API keys as agent identities: create (the secret is returned once), list, soft-revoke,
//! rotate, and a new owner key for a reveal link. The tenant actor owns the keys; listings read its snapshot.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_storage::{ApiKeyRecord, TenantId};

use super::tree::Tree;
use crate::agent::{generate_key_secret, new_key_record, Agent, KeyRole};
use crate::error::{Error, Result};
use crate::tenant::TenantMessage;

/// What a new key is created with.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub label: String,
    pub read_only: bool,
    pub expires_at: Option<DateTime<Utc>>,
}

/// The tenant's API keys: create, list, revoke, rotate.
#[derive(Clone)]
pub struct Keys {
    pub(super) tree: Tree,
}

impl Keys {
    /// A new key of the caller's tenant and its secret (shown once; only its hash is kept).
    pub async fn create(&self, agent: &Agent, new: NewKey) -> Result<(Arc<ApiKeyRecord>, String)> {
        let secret = generate_key_secret();
        let role = if new.read_only {
            KeyRole::ReadOnly
        } else {
            KeyRole::ReadWrite
        };
        let key = new_key_record(&agent.tenant_id, &new.label, role, &secret, new.expires_at);
        let key = self
            .tree
            .call_tenant(&agent.tenant_id, |reply| TenantMessage::AddKey {
                key,
                reply,
            })
            .await?;
        Ok((key, secret))
    }

    /// Every key of the tenant, revoked ones included, oldest first.
    pub fn list(&self, tenant: &TenantId) -> Result<Vec<Arc<ApiKeyRecord>>> {
        let mut keys: Vec<Arc<ApiKeyRecord>> = self
            .tree
            .tenant_handle(tenant)?
            .snapshot()
            .keys
            .values()
            .cloned()
            .collect();
        keys.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(keys)
    }

    /// Soft-revokes one of the tenant's keys: it stops authenticating at once and stays
    /// listed. The last active key cannot be revoked.
    pub async fn revoke(&self, agent: &Agent, key_id: &str) -> Result<Arc<ApiKeyRecord>> {
        let key_id = key_id.to_owned();
        self.tree
            .call_tenant(&agent.tenant_id, |reply| TenantMessage::RevokeKey {
                key_id,
                reply,
            })
            .await
    }

    /// A new owner key for the tenant (a reveal link's): it replaces the oldest active
    /// owner key, which dies as the new one is stored, or is added when the tenant has no
    /// active owner key. Returns the new key and its secret (shown once).
    pub async fn issue_owner_key(
        &self,
        tenant: &TenantId,
        label: &str,
    ) -> Result<(Arc<ApiKeyRecord>, String)> {
        let now = Utc::now();
        let current = self
            .tree
            .tenant_handle(tenant)?
            .snapshot()
            .keys
            .values()
            .filter(|key| key.owner && key.is_active(now))
            .min_by_key(|key| key.created_at)
            .cloned();
        let secret = generate_key_secret();
        let new = new_key_record(tenant, label, KeyRole::Owner, &secret, None);
        let key = match current {
            Some(current) => {
                let key_id = current.id.clone();
                self.tree
                    .call_tenant(tenant, |reply| TenantMessage::RotateKey {
                        key_id,
                        new: Box::new(new),
                        reply,
                    })
                    .await?
            }
            None => {
                self.tree
                    .call_tenant(tenant, |reply| TenantMessage::AddKey { key: new, reply })
                    .await?
            }
        };
        Ok((key, secret))
    }

    /// Replaces the caller's key with a new one of the same label, role and expiry; the
    /// old key is dead when this returns. Returns the new key and its secret.
    pub async fn rotate(&self, agent: &Agent) -> Result<(Arc<ApiKeyRecord>, String)> {
        let current = self
            .tree
            .tenant_handle(&agent.tenant_id)?
            .snapshot()
            .keys
            .get(&agent.key_id)
            .cloned()
            .ok_or_else(|| Error::KeyNotFound(agent.key_id.clone()))?;
        let secret = generate_key_secret();
        let new = new_key_record(
            &agent.tenant_id,
            &agent.label,
            KeyRole::of(&current),
            &secret,
            current.expires_at,
        );
        let key_id = agent.key_id.clone();
        let key = self
            .tree
            .call_tenant(&agent.tenant_id, |reply| TenantMessage::RotateKey {
                key_id,
                new: Box::new(new),
                reply,
            })
            .await?;
        Ok((key, secret))
    }
}
