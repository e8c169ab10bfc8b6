//! The tenant actor's keys: add, soft-revoke (never the last active key) and rotate. Each
//! change is stored, then published to the key directory (authentication) and to the
//! tenant's snapshot (listings).

use std::sync::Arc;

use chrono::Utc;
use memvault_storage::ApiKeyRecord;

use super::TenantState;
use crate::call::blocking;
use crate::error::{Error, Result};

async fn store_keys(state: &TenantState, keys: Vec<ApiKeyRecord>) -> Result<()> {
    let store = state.store.clone();
    blocking(move || keys.iter().try_for_each(|key| store.put_api_key(key))).await
}

fn publish(state: &TenantState, keys: &[ApiKeyRecord]) -> Vec<Arc<ApiKeyRecord>> {
    let mut snapshot = (*state.snapshot()).clone();
    let published = keys
        .iter()
        .map(|key| {
            state.keys.publish(key);
            let key = Arc::new(key.clone());
            snapshot.keys.insert(key.id.clone(), key.clone());
            key
        })
        .collect();
    state.publish(snapshot);
    published
}

pub(super) async fn add(state: &mut TenantState, key: ApiKeyRecord) -> Result<Arc<ApiKeyRecord>> {
    store_keys(state, vec![key.clone()]).await?;
    Ok(publish(state, &[key]).remove(0))
}

/// The key as it would be revoked now, or why it cannot be.
fn revoked(state: &TenantState, key_id: &str) -> Result<ApiKeyRecord> {
    let snapshot = state.snapshot();
    let now = Utc::now();
    let Some(key) = snapshot.keys.get(key_id) else {
        return Err(Error::KeyNotFound(key_id.to_owned()));
    };
    if key.revoked_at.is_some() {
        return Err(Error::KeyRevoked(key_id.to_owned()));
    }
    let active_other = |owner_only: bool| {
        snapshot
            .keys
            .values()
            .any(|other| other.id != key_id && other.is_active(now) && (other.owner || !owner_only))
    };
    if !active_other(false) {
        return Err(Error::LastActiveKey(key_id.to_owned()));
    }
    if key.owner && !active_other(true) {
        return Err(Error::OwnerKeyNotRevocable(key_id.to_owned()));
    }
    let mut key = (**key).clone();
    key.revoked_at = Some(now);
    Ok(key)
}

pub(super) async fn revoke(state: &mut TenantState, key_id: &str) -> Result<Arc<ApiKeyRecord>> {
    let key = revoked(state, key_id)?;
    store_keys(state, vec![key.clone()]).await?;
    Ok(publish(state, &[key]).remove(0))
}

/// Stores the new key first, so a failure in between leaves the old key working rather
/// than the tenant locked out.
pub(super) async fn rotate(
    state: &mut TenantState,
    key_id: &str,
    new: ApiKeyRecord,
) -> Result<Arc<ApiKeyRecord>> {
    let mut old = state
        .snapshot()
        .keys
        .get(key_id)
        .map(|key| (**key).clone())
        .ok_or_else(|| Error::KeyNotFound(key_id.to_owned()))?;
    old.revoked_at = Some(Utc::now());
    store_keys(state, vec![new.clone(), old.clone()]).await?;
    let published = publish(state, &[new.clone(), old]).remove(0);
    super::grants::move_to_key(state, key_id, &new.id).await?;
    Ok(published)
}

/// Keys stored before keys had roles have no owner: the oldest active key becomes the
/// owner, so every tenant keeps one key that can manage the others.
pub(super) fn promote_missing_owner(keys: &mut [ApiKeyRecord]) -> Option<ApiKeyRecord> {
    let now = Utc::now();
    if keys.iter().any(|key| key.owner && key.is_active(now)) {
        return None;
    }
    let oldest = keys
        .iter_mut()
        .filter(|key| key.is_active(now) && !key.read_only)
        .min_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)))?;
    oldest.owner = true;
    Some(oldest.clone())
}
