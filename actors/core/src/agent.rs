//! API keys as agent identities: generating, hashing and looking them up.
//!
//! A key is `mv_` followed by 40 random base62 characters. Only its SHA-256 is stored;
//! authentication hashes the presented secret and looks the hash up in the
//! [`KeyDirectory`], a concurrent map that tenant actors keep current, so no request
//! waits in a mailbox to be authenticated.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use dashmap::DashMap;
use memvault_storage::{ApiKeyRecord, TenantId};
use rand::distributions::Alphanumeric;
use rand::Rng;
use sha2::{Digest, Sha256};

pub const KEY_PREFIX: &str = "mv_";
const KEY_RANDOM_CHARS: usize = 40;
/// Longest secret worth hashing; anything longer cannot be one of ours.
const KEY_MAX_LEN: usize = 256;

/// The authenticated caller: one API key of one tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    pub tenant_id: TenantId,
    /// The key's public id, stamped as `created_by.id` on writes.
    pub key_id: String,
    pub label: String,
    pub read_only: bool,
    /// The tenant's owner key (its first key, or one rotated from it): it manages keys,
    /// grants, webhooks and settings, and grants do not restrict it.
    pub owner: bool,
    /// Whether the key's tenant is admin-flagged (operator endpoints, tenant creation).
    pub admin: bool,
}

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRole {
    /// The account's own key: everything, including managing keys and grants.
    Owner,
    /// An agent key that reads and writes (within its grants).
    ReadWrite,
    /// An agent key that only reads and searches (within its grants).
    ReadOnly,
}

impl KeyRole {
    pub fn of(key: &ApiKeyRecord) -> Self {
        match (key.owner, key.read_only) {
            (true, _) => Self::Owner,
            (false, false) => Self::ReadWrite,
            (false, true) => Self::ReadOnly,
        }
    }
}

/// What the directory keeps per key hash: who the key is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyIdentity {
    pub tenant_id: TenantId,
    pub key_id: String,
    pub label: String,
    pub read_only: bool,
    pub owner: bool,
    expires_at: Option<DateTime<Utc>>,
}

/// Key hash to identity, for every active key of every tenant.
#[derive(Default)]
pub struct KeyDirectory {
    by_hash: DashMap<String, KeyIdentity>,
}

impl KeyDirectory {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Publishes an active key; revoked keys are removed instead.
    pub fn publish(&self, key: &ApiKeyRecord) {
        if key.revoked_at.is_some() {
            self.by_hash.remove(&key.key_hash);
            return;
        }
        self.by_hash.insert(
            key.key_hash.clone(),
            KeyIdentity {
                tenant_id: key.tenant_id.clone(),
                key_id: key.id.clone(),
                label: key.label.clone(),
                read_only: key.read_only,
                owner: key.owner,
                expires_at: key.expires_at,
            },
        );
    }

    /// Removes every key of `tenant` (its account is being erased).
    pub fn forget_tenant(&self, tenant: &TenantId) {
        self.by_hash
            .retain(|_, identity| &identity.tenant_id != tenant);
    }

    /// The identity behind a presented secret (active and unexpired keys only).
    pub fn lookup(&self, secret: &str) -> Option<KeyIdentity> {
        if !secret.starts_with(KEY_PREFIX) || secret.len() > KEY_MAX_LEN {
            return None;
        }
        let entry = self.by_hash.get(&hash_key(secret))?;
        if entry.expires_at.is_some_and(|expiry| expiry <= Utc::now()) {
            return None;
        }
        Some(entry.clone())
    }
}

/// A fresh secret: `mv_` + 40 base62 characters (about 238 bits).
pub fn generate_key_secret() -> String {
    let random: String = rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(KEY_RANDOM_CHARS)
        .map(char::from)
        .collect();
    format!("{KEY_PREFIX}{random}")
}

pub fn hash_key(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A key record for a secret; the secret itself is not kept.
pub fn new_key_record(
    tenant_id: &TenantId,
    label: &str,
    role: KeyRole,
    secret: &str,
    expires_at: Option<DateTime<Utc>>,
) -> ApiKeyRecord {
    let id_suffix = uuid::Uuid::new_v4().simple().to_string();
    ApiKeyRecord {
        id: format!("key_{}", &id_suffix[..20]),
        tenant_id: tenant_id.clone(),
        label: label.to_owned(),
        key_hash: hash_key(secret),
        display_prefix: secret.chars().take(KEY_PREFIX.len() + 4).collect(),
        read_only: role == KeyRole::ReadOnly,
        owner: role == KeyRole::Owner,
        created_at: Utc::now(),
        revoked_at: None,
        expires_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_the_prefix_and_differ() {
        let first = generate_key_secret();
        assert!(first.starts_with("mv_"));
        assert_eq!(first.len(), 43);
        assert_ne!(first, generate_key_secret());
    }

    #[test]
    fn directory_finds_active_keys_only() {
        let directory = KeyDirectory::default();
        let tenant = TenantId::generate();
        let secret = generate_key_secret();
        let mut record = new_key_record(&tenant, "default", KeyRole::Owner, &secret, None);
        assert!(!record.key_hash.contains(&secret[3..]));
        directory.publish(&record);
        let found = directory.lookup(&secret).unwrap();
        assert_eq!(
            (found.tenant_id, found.key_id.as_str(), found.label.as_str()),
            (tenant, record.id.as_str(), "default")
        );
        assert!(found.owner && !found.read_only);
        assert!(directory.lookup(&format!("sk_{}", &secret[3..])).is_none());
        assert!(directory.lookup("mv_unknown").is_none());
        record.revoked_at = Some(Utc::now());
        directory.publish(&record);
        assert!(directory.lookup(&secret).is_none());
    }

    #[test]
    fn an_expired_key_no_longer_authenticates() {
        let directory = KeyDirectory::default();
        let tenant = TenantId::generate();
        let (live, expired) = (generate_key_secret(), generate_key_secret());
        let later = Utc::now() + chrono::Duration::hours(1);
        let earlier = Utc::now() - chrono::Duration::seconds(1);
        directory.publish(&new_key_record(
            &tenant,
            "live",
            KeyRole::ReadWrite,
            &live,
            Some(later),
        ));
        directory.publish(&new_key_record(
            &tenant,
            "old",
            KeyRole::ReadWrite,
            &expired,
            Some(earlier),
        ));
        assert!(directory.lookup(&live).is_some());
        assert!(directory.lookup(&expired).is_none());
    }
}
