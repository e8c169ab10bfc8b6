//! The persisted shapes. Serialized as JSON inside the store so that a record written by
//! one version stays readable by the next (new fields carry `#[serde(default)]`).

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tenant's id. Every stored key starts with it (tenant isolation by construction).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TenantId(String);

impl TenantId {
    /// A fresh random id, `ten_` + 24 hex characters.
    pub fn generate() -> Self {
        let raw = uuid::Uuid::new_v4().simple().to_string();
        Self(format!("ten_{}", &raw[..24]))
    }

    /// Wraps an id read back from the store or from a key record.
    pub fn from_stored(raw: impl Into<String>) -> Self {
        Self(raw.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// A validated collection name: 1 to 128 characters of `A-Z a-z 0-9 _ - .`, not
/// starting with a dot. The restricted alphabet keeps names safe in URLs, in store keys
/// (which use `/` as separator) and in file names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CollectionName(String);

impl CollectionName {
    pub const MAX_LEN: usize = 128;

    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw.is_empty() || raw.len() > Self::MAX_LEN {
            return Err(format!(
                "collection name must be 1 to {} characters",
                Self::MAX_LEN
            ));
        }
        if raw.starts_with('.') {
            return Err("collection name must not start with a dot".to_owned());
        }
        let allowed = |character: char| {
            character.is_ascii_alphanumeric() || matches!(character, '_' | '-' | '.')
        };
        if !raw.chars().all(allowed) {
            return Err(
                "collection name may only contain letters, digits, '_', '-' and '.'".to_owned(),
            );
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for CollectionName {
    type Error = String;

    fn try_from(raw: String) -> Result<Self, Self::Error> {
        Self::parse(&raw)
    }
}

impl From<CollectionName> for String {
    fn from(name: CollectionName) -> Self {
        name.0
    }
}

impl fmt::Display for CollectionName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantRecord {
    pub id: TenantId,
    pub name: String,
    pub email: String,
    pub tier: String,
    /// Admin-flagged tenants may create tenants and read operator endpoints.
    pub admin: bool,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKeyRecord {
    /// Public identifier of the key: the agent identity id stamped on writes.
    pub id: String,
    pub tenant_id: TenantId,
    pub label: String,
    /// Hex SHA-256 of the secret; the secret itself is never stored.
    pub key_hash: String,
    /// First characters of the secret, shown in listings so a user can tell keys apart.
    pub display_prefix: String,
    pub read_only: bool,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub revoked_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectionRecord {
    pub name: CollectionName,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The agent (API key) that wrote a memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedBy {
    pub id: String,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    pub id: String,
    pub text: String,
    pub importance: f64,
    pub category: String,
    pub source: String,
    pub metadata: Map<String, Value>,
    #[serde(default)]
    pub container_tag: Option<String>,
    /// Attached files; empty until file upload lands.
    #[serde(default)]
    pub images: Vec<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub archived: bool,
    pub created_by: CreatedBy,
    /// Id of the newer memory that superseded this one (graph memory); None while current.
    #[serde(default)]
    pub superseded_by: Option<String>,
    /// When a time-bound fact stops being true.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    /// The memory's key in its collection's search indexes, assigned by the collection
    /// actor; a new one on every re-embed, so keys only grow. 0 = not yet assigned.
    #[serde(default)]
    pub index_key: u64,
}

/// A memory with its embedding: the unit the store persists atomically, so that a memory
/// never exists on disk without the vector it is searched by.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMemory {
    pub record: MemoryRecord,
    pub embedding: Vec<f32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collection_names_follow_the_alphabet() {
        assert!(CollectionName::parse("trip-notes_2024.v1").is_ok());
        for bad in ["", ".hidden", "a/b", "with space", "é", &"x".repeat(129)] {
            assert!(CollectionName::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn tenant_ids_are_unique_and_prefixed() {
        let first = TenantId::generate();
        assert!(first.as_str().starts_with("ten_"));
        assert_ne!(first, TenantId::generate());
    }
}
