//! The tenant actor's grants: upsert and delete one agent's access to a collection. The
//! grants live in the collection's record, so they are stored with it and published in the
//! tenant snapshot that request-time checks read.

use chrono::Utc;
use memvault_storage::{CollectionName, GrantRecord};

use super::state::CollectionEntry;
use super::TenantState;
use crate::error::{Error, Result};

/// Creates or replaces the grant of `grant.agent_key_id`; the first grant restricts the
/// collection. The key must be an active key of this tenant.
pub(super) async fn put(
    state: &mut TenantState,
    name: &CollectionName,
    grant: GrantRecord,
) -> Result<CollectionEntry> {
    let snapshot = state.snapshot();
    let key = snapshot
        .keys
        .get(&grant.agent_key_id)
        .ok_or_else(|| Error::GrantKeyNotFound(grant.agent_key_id.clone()))?;
    if !key.is_active(Utc::now()) {
        return Err(Error::KeyInactive(grant.agent_key_id.clone()));
    }
    change(state, name, |grants| {
        grants.retain(|existing| existing.agent_key_id != grant.agent_key_id);
        grants.push(grant);
        Ok(())
    })
    .await
}

/// Removes one agent's grant; removing the last one reopens the collection.
pub(super) async fn delete(
    state: &mut TenantState,
    name: &CollectionName,
    agent_key_id: &str,
) -> Result<CollectionEntry> {
    change(state, name, |grants| {
        let before = grants.len();
        grants.retain(|existing| existing.agent_key_id != agent_key_id);
        if grants.len() == before {
            return Err(Error::GrantNotFound {
                collection: name.clone(),
                agent_key_id: agent_key_id.to_owned(),
            });
        }
        Ok(())
    })
    .await
}

/// A rotated key keeps its access: every grant of `old` becomes a grant of `new`.
pub(super) async fn move_to_key(state: &mut TenantState, old: &str, new: &str) -> Result<()> {
    let granted: Vec<CollectionName> = state
        .snapshot()
        .collections
        .values()
        .filter(|entry| {
            entry
                .record
                .grants
                .iter()
                .any(|grant| grant.agent_key_id == old)
        })
        .map(|entry| entry.record.name.clone())
        .collect();
    for name in granted {
        change(state, &name, |grants| {
            for grant in grants.iter_mut().filter(|grant| grant.agent_key_id == old) {
                grant.agent_key_id = new.to_owned();
            }
            Ok(())
        })
        .await?;
    }
    Ok(())
}

async fn change(
    state: &mut TenantState,
    name: &CollectionName,
    edit: impl FnOnce(&mut Vec<GrantRecord>) -> Result<()>,
) -> Result<CollectionEntry> {
    let entry = state
        .entry(name)
        .ok_or_else(|| TenantState::not_found(name))?;
    let mut record = (*entry.record).clone();
    edit(&mut record.grants)?;
    record
        .grants
        .sort_by(|a, b| a.agent_key_id.cmp(&b.agent_key_id));
    super::replace_record(state, entry, record).await
}
