//! The persisted shapes. Serialized as JSON inside the store so that a record written by
//! one version stays readable by the next (new fields carry `#[serde(default)]`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thin_vec::ThinVec;

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
    /// Set when the account's erasure was asked for: its keys are dead, and the erasure
    /// job (resumed at start-up while this is set) removes the rest, this record last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erasing_since: Option<DateTime<Utc>>,
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
    /// The tenant's owner key: manages keys, grants, webhooks and settings, and is not
    /// restricted by grants. A tenant's first key is its owner key; rotating it keeps that.
    #[serde(default)]
    pub owner: bool,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub revoked_at: Option<DateTime<Utc>>,
    /// After this the key no longer authenticates; `None` never expires.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
}

impl ApiKeyRecord {
    /// Not revoked and not expired at `now`.
    pub fn is_active(&self, now: DateTime<Utc>) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|expiry| expiry > now)
    }
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
    /// Per-agent access. Empty: the collection is open to every key of the tenant; with
    /// one or more grants it is restricted to the granted agents (and the owner key).
    #[serde(default)]
    pub grants: Vec<GrantRecord>,
    /// The model that built the collection's vectors; `None` in records written before
    /// collections recorded it, all of which all-MiniLM-L6-v2 built.
    #[serde(default)]
    pub embedding: Option<EmbeddingModel>,
}

impl CollectionRecord {
    /// The model that built the collection's vectors.
    pub fn embedding_model(&self) -> EmbeddingModel {
        self.embedding
            .clone()
            .unwrap_or_else(EmbeddingModel::legacy)
    }
}

/// Which model made a set of vectors: its name and the dimension of its vectors. Two
/// vectors are comparable only when both agree.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EmbeddingModel {
    pub name: String,
    pub dimensions: usize,
}

impl EmbeddingModel {
    pub fn new(name: impl Into<String>, dimensions: usize) -> Self {
        Self {
            name: name.into(),
            dimensions,
        }
    }

    /// The model of every collection from before collections recorded theirs.
    pub fn legacy() -> Self {
        Self::new("all-MiniLM-L6-v2", 384)
    }
}

impl std::fmt::Display for EmbeddingModel {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{} ({} dimensions)", self.name, self.dimensions)
    }
}

/// A memory's vector from the model a collection is being re-embedded with, kept apart
/// from the live one until the collection switches. `key` is the memory's index key when
/// it was embedded: a memory written since has a higher key and is embedded again.
#[derive(Debug, Clone, PartialEq)]
pub struct StagedEmbedding {
    pub key: u64,
    pub id: String,
    pub embedding: Vec<f32>,
}

/// One agent's access to a restricted collection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantRecord {
    /// The id of the API key (agent identity) the grant is for.
    pub agent_key_id: String,
    pub can_read: bool,
    pub can_write: bool,
    pub updated_at: DateTime<Utc>,
}

/// One entry of a tenant's audit log: who did what to which resource, when, and how it
/// ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Time-ordered (UUID v7), so a tenant's entries sort by id in the order they happened.
    pub id: String,
    pub tenant_id: TenantId,
    pub at: DateTime<Utc>,
    /// The key (agent identity) that made the request.
    pub agent_id: String,
    pub agent_label: String,
    /// What was asked, e.g. `memory.create`, `grant.put`, `key.revoke`.
    pub action: String,
    /// The HTTP method and path the request named.
    pub method: String,
    pub resource: String,
    /// The answer's status code.
    pub status: u16,
    /// `success` (2xx), `denied` (401, 403, 429) or `failed` (any other status).
    pub outcome: String,
    /// The client's address (behind trusted proxies, the one they forwarded); `None` in
    /// entries written before it was recorded, and where the server has no connection
    /// info.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_address: Option<String>,
}

/// The agent (API key) that wrote a memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedBy {
    pub id: String,
    pub label: String,
}

impl CreatedBy {
    /// The same author as one this thread made or read lately, when there is one: a
    /// collection's memories are written by a few agents, and two strings per memory were
    /// about 64 bytes of each record held in memory (60 MiB at a million).
    pub fn shared(created_by: CreatedBy) -> Arc<CreatedBy> {
        /// Authors kept per thread; the oldest goes first.
        const RECENT: usize = 8;
        thread_local! {
            static RECENT_AUTHORS: RefCell<VecDeque<Arc<CreatedBy>>> =
                const { RefCell::new(VecDeque::new()) };
        }
        RECENT_AUTHORS.with_borrow_mut(|recent| {
            if let Some(found) = recent.iter().find(|known| ***known == created_by) {
                return found.clone();
            }
            let shared = Arc::new(created_by);
            if recent.len() == RECENT {
                recent.pop_front();
            }
            recent.push_back(shared.clone());
            shared
        })
    }

    fn deserialize_shared<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Arc<CreatedBy>, D::Error> {
        CreatedBy::deserialize(deserializer).map(CreatedBy::shared)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    pub id: String,
    pub text: String,
    pub importance: f64,
    pub category: String,
    pub source: String,
    pub metadata: Map<String, Value>,
    /// A `Box<str>`, not a `String`, and `images` and `suspensions` are `ThinVec`s (one
    /// pointer; an empty one allocates nothing): every record of a collection is held in
    /// memory, and at these sizes a shared record fits mimalloc's 320-byte size class
    /// instead of 384 (see the test at the end). The server's RSS at a million did not
    /// show the saving this should bring; not yet explained.
    #[serde(default)]
    pub container_tag: Option<Box<str>>,
    /// Attached files; empty until file upload lands.
    #[serde(default)]
    pub images: ThinVec<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub archived: bool,
    /// Shared with the other memories the same agent wrote (see [`CreatedBy::shared`]).
    #[serde(deserialize_with = "CreatedBy::deserialize_shared")]
    pub created_by: Arc<CreatedBy>,
    /// Id of the newer memory that superseded this one (graph memory); None while current.
    #[serde(default)]
    pub superseded_by: Option<String>,
    /// When it was superseded; set together with `superseded_by`.
    #[serde(default)]
    pub superseded_at: Option<DateTime<Utc>>,
    /// The normalized `subject/attribute` an extracted fact is a value of (graph memory);
    /// a newer current fact on the same slot with another value supersedes this one.
    #[serde(default)]
    pub slot: Option<String>,
    /// The slot's value as extracted, for telling an update from a repeat.
    #[serde(default)]
    pub value: Option<String>,
    /// When a time-bound fact stops being true.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    /// When a time-bound fact on the same slot set this one aside ("I live in Berlin"
    /// while "for the next two weeks I'm staying in Paris" holds): not current then,
    /// current again after. Oldest first; at most one is in force at a time.
    #[serde(default, skip_serializing_if = "ThinVec::is_empty")]
    pub suspensions: ThinVec<Suspension>,
    /// The memory's key in its collection's search indexes, assigned by the collection
    /// actor; a new one on every re-embed, so keys only grow. 0 = not yet assigned.
    #[serde(default)]
    pub index_key: u64,
}

impl MemoryRecord {
    /// A fresh memory written at `now`: a new time-ordered id, current, unpinned,
    /// unarchived, with no slot, expiry, files or index key yet. Callers set the rest.
    pub fn new(
        text: String,
        importance: f64,
        category: String,
        source: String,
        created_by: CreatedBy,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id: uuid::Uuid::now_v7().to_string(),
            text,
            importance,
            category,
            source,
            metadata: Map::new(),
            container_tag: None,
            images: ThinVec::new(),
            created_at: now,
            updated_at: now,
            pinned: false,
            archived: false,
            created_by: CreatedBy::shared(created_by),
            superseded_by: None,
            superseded_at: None,
            slot: None,
            value: None,
            expires_at: None,
            suspensions: ThinVec::new(),
            index_key: 0,
        }
    }

    /// Whether a time-bound fact on the memory's slot sets it aside at `at`.
    pub fn suspended_at(&self, at: DateTime<Utc>) -> bool {
        self.suspensions
            .iter()
            .any(|suspension| suspension.from <= at && at < suspension.until)
    }

    /// The set-aside in force at `at`, if any.
    pub fn suspension_at(&self, at: DateTime<Utc>) -> Option<&Suspension> {
        self.suspensions
            .iter()
            .find(|suspension| suspension.from <= at && at < suspension.until)
    }

    /// When the memory stopped (or stops) being true for good: superseded or expired,
    /// whichever comes first; `None` while neither is known.
    pub fn valid_until(&self) -> Option<DateTime<Utc>> {
        let superseded = self
            .superseded_by
            .as_ref()
            .map(|_| self.superseded_at.unwrap_or(self.updated_at));
        match (superseded, self.expires_at) {
            (Some(superseded), Some(expires)) => Some(superseded.min(expires)),
            (superseded, expires) => superseded.or(expires),
        }
    }
}

/// A time during which a memory was set aside by a time-bound memory on its slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspension {
    /// The time-bound memory that overrode this one.
    pub by: String,
    pub from: DateTime<Utc>,
    /// When the override ended: its expiry, or the moment it was itself replaced.
    pub until: DateTime<Utc>,
}

/// A tenant's own extraction LLM (bring-your-own); the key is sealed with the service's
/// secret box and never leaves the service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtractionLlmRecord {
    pub provider: String,
    pub base_url: String,
    pub model: String,
    /// The API key, AES-GCM sealed (see `crypto::SecretBox`).
    pub api_key_sealed: String,
    pub updated_at: DateTime<Utc>,
}

/// Per-tenant settings that are neither keys nor collections.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantSettings {
    #[serde(default)]
    pub extraction_llm: Option<ExtractionLlmRecord>,
    /// Monthly cap on platform LLM spend, in US dollars; `None` = no cap.
    #[serde(default)]
    pub spend_cap_usd: Option<f64>,
    /// Where memory events are POSTed; `None` = no webhook.
    #[serde(default)]
    pub webhook: Option<WebhookRecord>,
    /// The tenant's own S3-compatible bucket for its files; `None` = the platform's storage.
    #[serde(default)]
    pub storage: Option<StorageConfigRecord>,
    /// The tenant's own Postgres database for its data; `None` = the platform store.
    #[serde(default)]
    pub database: Option<DatabaseConfigRecord>,
    /// The tenant's Stripe customer and subscription; `None` = never paid.
    #[serde(default)]
    pub billing: Option<BillingRecord>,
    /// Who may send to the tenant's mail-in address (addresses, or `@domain` for a whole
    /// domain), lower-cased; `None` = never set: the account email alone.
    #[serde(default)]
    pub email_senders: Option<Vec<String>>,
}

/// What Stripe told memvault about a tenant's subscription (from its signed webhooks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BillingRecord {
    /// Stripe's customer id (`cus_...`): the billing portal opens for it.
    pub customer_id: Option<String>,
    /// Stripe's subscription id (`sub_...`).
    pub subscription_id: Option<String>,
    /// The subscription's status as Stripe last reported it (`active`, `past_due`,
    /// `canceled`, ...).
    pub status: String,
    /// The id of the event that last changed this record.
    pub last_event_id: String,
    pub updated_at: DateTime<Utc>,
}

/// A tenant's own Postgres database (bring-your-own database): where its data (see
/// `MetaStore::purge_tenant_data`) lives once the switch to it is done. The connection
/// string is kept only sealed (see `crypto::SecretBox`).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct DatabaseConfigRecord {
    pub url_sealed: String,
    /// The connection string without its password (`user@host:port/database`), to show.
    pub target: String,
    /// What the self-test found, e.g. `15.10 (Debian 15.10-0+deb12u1)`.
    pub server_version: String,
    pub state: DatabaseState,
    /// Why the last switch failed, while it is retried or after it gave up.
    #[serde(default)]
    pub detail: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl std::fmt::Debug for DatabaseConfigRecord {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("DatabaseConfigRecord")
            .field("target", &self.target)
            .field("state", &self.state)
            .field("detail", &self.detail)
            .finish_non_exhaustive()
    }
}

/// Where a tenant's data is, with a database of its own configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatabaseState {
    /// In the platform store, being copied to the tenant's database.
    Copying,
    /// In the tenant's database.
    Active,
    /// In the tenant's database, being copied back to the platform store (DELETE).
    Reverting,
    /// In the platform store: the copy gave up (`detail` says why).
    Failed,
}

impl DatabaseState {
    /// Whether the tenant's data is in its own database in this state.
    pub fn data_in_own(self) -> bool {
        matches!(self, Self::Active | Self::Reverting)
    }

    /// Whether a switch is under way (a job runs it).
    pub fn switching(self) -> bool {
        matches!(self, Self::Copying | Self::Reverting)
    }
}

/// A tenant's own object storage (bring-your-own bucket). Files stored while it is
/// configured live in it; the secret key is kept only sealed (see `crypto::SecretBox`).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageConfigRecord {
    /// Names the bucket (endpoint and bucket name, not the credentials): a file remembers
    /// the store it was put in by this id, so rotating the keys of the same bucket keeps
    /// every file reachable.
    pub store_id: String,
    /// `None`: AWS's own endpoint for `region`.
    pub endpoint_url: Option<String>,
    pub bucket: String,
    pub region: String,
    pub access_key: String,
    pub secret_key_sealed: String,
    pub force_path_style: bool,
    pub updated_at: DateTime<Utc>,
}

impl std::fmt::Debug for StorageConfigRecord {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("StorageConfigRecord")
            .field("store_id", &self.store_id)
            .field("endpoint_url", &self.endpoint_url)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("force_path_style", &self.force_path_style)
            .field("updated_at", &self.updated_at)
            .finish_non_exhaustive()
    }
}

/// A tenant's outbound webhook. The signing secret is generated by the service, shown
/// once, and kept only sealed (see `crypto::SecretBox`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookRecord {
    /// An http(s) URL, checked against private targets when it was configured and again
    /// at every delivery.
    pub url: String,
    /// The signing secret, AES-GCM sealed.
    pub secret_sealed: String,
    pub created_at: DateTime<Utc>,
}

/// One webhook event waiting to be delivered (the outbox). Written before the first
/// attempt and removed once delivered or given up, so a crash loses no event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboxDelivery {
    /// The delivery id, sent as `X-Service-Delivery` and in the body; the same on every
    /// attempt, so a receiver can drop repeats.
    pub id: String,
    pub tenant_id: TenantId,
    /// `memory.created`, `memory.updated` or `memory.deleted`.
    pub event: String,
    /// The exact JSON that is signed and POSTed, on every attempt.
    pub body: String,
    /// Attempts made so far (failed ones; a delivered one is removed).
    #[serde(default)]
    pub attempts: u32,
    /// Not attempted again before this.
    pub next_attempt_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

/// LLM tokens spent by a tenant in one period, for one purpose and model. Every call is
/// counted twice: in its month's row (the spend cap reads these) and in its day's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageRow {
    /// The period, UTC: `YYYY-MM` for a month, `YYYY-MM-DD` for a day. The stores treat
    /// it as an opaque key: `usage(tenant, period)` answers exactly that period's rows.
    pub month: String,
    /// What the tokens were spent on: `extract`, `rewrite`, `rerank`, `profile`, ...
    pub purpose: String,
    pub model: String,
    /// Whether the tenant's own LLM served the calls (not billed against the cap).
    #[serde(default)]
    pub own_llm: bool,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Estimated from the configured per-model prices.
    pub cost_usd: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Queued,
    Processing,
    Done,
    Failed,
}

impl JobState {
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Done | Self::Failed)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Processing => "processing",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }
}

/// One memory a remember produced (or found already stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RememberedFact {
    pub id: String,
    pub text: String,
    /// `fact`, `preference` or `episode` (or `other` for raw content stored unextracted).
    #[serde(rename = "type")]
    pub kind: String,
    /// `new`, `updated` (superseded an older fact) or `duplicate` (already stored).
    pub relation: String,
}

/// An asynchronous remember: persisted when queued, so it runs even after a crash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtractJobRecord {
    pub id: String,
    pub tenant_id: TenantId,
    pub collection: CollectionName,
    pub content: String,
    #[serde(default)]
    pub importance: Option<f64>,
    pub created_by: CreatedBy,
    pub state: JobState,
    #[serde(default)]
    pub facts: Vec<RememberedFact>,
    /// Why it failed, or why extraction was skipped.
    #[serde(default)]
    pub detail: Option<String>,
    /// How many times a worker started it.
    #[serde(default)]
    pub attempts: u32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
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

    /// Every memory of a collection is held in memory as an `Arc<MemoryRecord>`: with its
    /// two reference counts it fits mimalloc's 320-byte size class (the next are 384 and
    /// 448). A field added to the record, or a `serde_json` feature that makes its maps
    /// `IndexMap`s (72 bytes instead of 24), costs 64 bytes a memory.
    #[test]
    fn a_shared_record_fits_the_320_byte_class() {
        assert!(
            std::mem::size_of::<MemoryRecord>() + 16 <= 320,
            "{} bytes",
            std::mem::size_of::<MemoryRecord>()
        );
    }

    #[test]
    fn the_authors_of_records_read_are_shared() {
        let author = CreatedBy {
            id: "key_1".to_owned(),
            label: "agent".to_owned(),
        };
        let record = MemoryRecord::new(
            "text".to_owned(),
            0.5,
            "fact".to_owned(),
            "api".to_owned(),
            author.clone(),
            Utc::now(),
        );
        let json = serde_json::to_string(&record).unwrap();
        let read: Vec<MemoryRecord> = (0..3)
            .map(|_| serde_json::from_str(&json).unwrap())
            .collect();
        assert_eq!(read[0], record);
        assert!(read
            .iter()
            .all(|r| Arc::ptr_eq(&r.created_by, &record.created_by)));
        // Another author gets an Arc of its own, and the first stays shared.
        let other = CreatedBy {
            id: "key_2".to_owned(),
            label: "agent".to_owned(),
        };
        assert!(!Arc::ptr_eq(&CreatedBy::shared(other), &record.created_by));
        assert!(Arc::ptr_eq(&CreatedBy::shared(author), &record.created_by));
        // The JSON is what it was: an object of id and label.
        let value: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["created_by"]["label"], "agent");
        assert!(value.get("suspensions").is_none() && value["images"] == Value::Array(vec![]));
    }
}

/// Where one file of an ingest batch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IngestItemState {
    /// Stored, waiting for its turn.
    Queued,
    /// Being read by an extraction worker.
    Extracting,
    /// Extracted; its chunks are being embedded and stored.
    Embedding,
    /// Its memories are stored (or it was a duplicate of a file already stored).
    Done,
    /// It gave no memory; `reason` says why.
    Failed,
}

impl IngestItemState {
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Done | Self::Failed)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Extracting => "extracting",
            Self::Embedding => "embedding",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }
}

/// One file of an ingest batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestItemRecord {
    /// The file's id: its blob lives under `files/{file_id}/` in the tenant's space, and
    /// the memories made from it name it in their metadata.
    pub file_id: String,
    pub filename: String,
    /// The content type the client declared (informative only: files are sniffed).
    pub declared_type: Option<String>,
    /// The blob's path under the tenant; `None` when the file was refused before it was
    /// stored (over the size limit, empty).
    pub blob_path: Option<String>,
    /// The tenant's own bucket the blob is in (its `store_id`); `None` = the platform's
    /// storage.
    #[serde(default)]
    pub blob_store: Option<String>,
    pub size: u64,
    pub state: IngestItemState,
    /// Why it failed, or what was skipped (OCR, transcription), or the duplicate's note.
    #[serde(default)]
    pub reason: Option<String>,
    /// The memories made from it.
    #[serde(default)]
    pub memory_ids: Vec<String>,
    /// How many times processing started; a crash mid-way counts.
    #[serde(default)]
    pub attempts: u32,
    /// When the current attempt started (the watchdog's clock).
    #[serde(default)]
    pub started_at: Option<DateTime<Utc>>,
}

/// An asynchronous ingest: files dropped (or uploaded straight to storage) into one
/// collection, processed one by one by the ingest job kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestBatchRecord {
    pub id: String,
    pub tenant_id: TenantId,
    pub collection: CollectionName,
    pub created_by: CreatedBy,
    /// `drop`, `complete` or `email`: where the files came from.
    pub origin: String,
    /// Extra metadata every memory of the batch carries (e.g. a mail's sender).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The `source` its memories get (`file` unless the origin says otherwise).
    #[serde(default = "default_ingest_source")]
    pub source: String,
    pub items: Vec<IngestItemRecord>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

fn default_ingest_source() -> String {
    "file".to_owned()
}

impl IngestBatchRecord {
    /// Every item is done or failed.
    pub fn is_finished(&self) -> bool {
        self.items.iter().all(|item| item.state.is_finished())
    }
}

/// Where an asynchronous import is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportState {
    Queued,
    Running,
    Done,
    Failed,
}

impl ImportState {
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Done | Self::Failed)
    }
}

/// An item of an import its request could not use: by index, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportSkipRecord {
    pub index: usize,
    pub detail: String,
}

/// An asynchronous (large) import: its progress, written after each batch. Its items are
/// an [`ImportPayload`], written once next to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportJobRecord {
    pub id: String,
    pub tenant_id: TenantId,
    /// The key that asked for it: the import writes with that key's access.
    pub key_id: String,
    pub state: ImportState,
    /// Items to store (those the request could use).
    pub total: usize,
    /// Items stored so far, in payload order: a resumed import starts here.
    pub cursor: usize,
    /// Items the request could not use; counted in `skipped`, listed (the first ones).
    pub skipped: usize,
    pub errors: Vec<ImportSkipRecord>,
    /// The collections written to, by name.
    pub collections: Vec<String>,
    /// Why it failed.
    pub detail: Option<String>,
    pub attempts: u32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A collection an import creates when missing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportCollectionRecord {
    pub name: CollectionName,
    pub description: Option<String>,
    pub metadata: Map<String, Value>,
}

/// One memory of an import, validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportItemRecord {
    pub collection: CollectionName,
    pub text: String,
    pub importance: f64,
    pub category: String,
    pub source: String,
    pub metadata: Map<String, Value>,
    pub container_tag: Option<String>,
    pub pinned: bool,
    pub archived: bool,
}

/// What an asynchronous import stores: its collections and items, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportPayload {
    pub collections: Vec<ImportCollectionRecord>,
    pub items: Vec<ImportItemRecord>,
}

/// One outgoing mail waiting to be sent (the mail queue). Written before the first
/// attempt and removed once sent or given up, so a crash loses no mail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MailRecord {
    /// The mail's id: its Message-ID and its outbox file name, the same on every attempt.
    pub id: String,
    /// The tenant it is about, when there is one (erasure drops its queued mail).
    pub tenant_id: Option<TenantId>,
    pub to: String,
    pub subject: String,
    pub text: String,
    pub html: Option<String>,
    /// Failed attempts so far.
    #[serde(default)]
    pub attempts: u32,
    pub next_attempt_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

/// What a one-time reveal link is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevealPurpose {
    /// The first key of a tenant made by signup.
    Signup,
    /// A new owner key for a tenant whose owner asked to recover it.
    Recover,
}

/// A one-time reveal link, stored by the SHA-256 of its token (the token itself is only
/// in the mail). Taking it removes it: a link reveals once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevealRecord {
    /// Hex SHA-256 of the token.
    pub token_hash: String,
    pub tenant_id: TenantId,
    pub purpose: RevealPurpose,
    pub created_at: DateTime<Utc>,
    /// Not revealed at or after this.
    pub expires_at: DateTime<Utc>,
}

/// A dashboard sign-in session, stored by the SHA-256 of its id (the id itself is only in
/// the browser's cookie). It names the key that opened it, never the key's secret: each
/// request re-checks that key, so revoking it ends the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Hex SHA-256 of the session's id.
    pub id_hash: String,
    pub tenant_id: TenantId,
    /// The id of the API key that signed in.
    pub key_id: String,
    /// The token every change from this session carries in its form.
    pub csrf: String,
    pub created_at: DateTime<Utc>,
    /// When it was last used (kept to a few minutes).
    pub seen_at: DateTime<Utc>,
    /// It ends at this instant: the earlier of its idle and its age limit.
    pub expires_at: DateTime<Utc>,
}

/// A tenant's mail-in address. The lookup key is the SHA-256 of the local part (lower
/// case), so a store dump does not list live addresses; the local part itself is kept
/// only sealed (see `crypto::SecretBox`), to show it to its tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmailAddressRecord {
    pub tenant_id: TenantId,
    /// Hex SHA-256 of the lower-cased local part.
    pub local_hash: String,
    /// The local part, AES-GCM sealed.
    pub local_sealed: String,
    /// Where accepted mail is stored.
    pub collection: CollectionName,
    pub created_at: DateTime<Utc>,
}

/// A connection's state in the scheduler's eyes (SPEC: Connection status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConnectionStatus {
    Active,
    Error,
    Paused,
}

impl ConnectionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionStatus::Active => "active",
            ConnectionStatus::Error => "error",
            ConnectionStatus::Paused => "paused",
        }
    }
}

/// A managed connector: where it reads, where it writes, its sealed credentials and how
/// its syncs stand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionRecord {
    pub id: String,
    pub tenant_id: TenantId,
    /// `slack`, `notion`, `gdrive`, `gmail`, `linear`, `confluence`, `hubspot`.
    pub provider: String,
    pub name: Option<String>,
    pub collection: CollectionName,
    pub container_tag: Option<String>,
    /// The provider's config (channel, database, folder, query, sync_interval_minutes).
    pub config: Value,
    /// The credentials as JSON, sealed with the server's key.
    pub credentials: String,
    /// The key that created it: syncs write with that key's access.
    pub key_id: String,
    pub status: ConnectionStatus,
    pub last_error: Option<String>,
    pub consecutive_failures: u32,
    /// The engine's cursor (high-water mark and change token), moved by complete runs.
    pub cursor: Value,
    /// A run in progress, saved after every page; a resumed run continues from it.
    pub checkpoint: Option<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub last_sync_at: Option<DateTime<Utc>>,
    /// When the scheduler syncs it next (with jitter).
    pub next_sync_at: Option<DateTime<Utc>>,
    pub last_reconciled_at: Option<DateTime<Utc>>,
}

/// One sync run of a connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyncRunRecord {
    /// UUID v7: runs sort by start time.
    pub id: String,
    pub tenant_id: TenantId,
    pub connection_id: String,
    pub provider: String,
    /// `ok`, `partial` (capped; resumes from its checkpoint) or `error`.
    pub status: String,
    /// Records stored (new or changed).
    pub synced_count: u64,
    /// Records skipped as unchanged.
    pub unchanged_count: u64,
    /// Memories removed (deletions reported or reconciled).
    pub deleted_count: u64,
    pub error: Option<String>,
    /// `manual`, `schedule` or `oauth`.
    pub trigger: String,
    pub created_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
}

/// A provider record a connection stored: the memory it became and its content hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncedRecord {
    pub record_id: String,
    pub memory_id: String,
    pub hash: String,
}

/// An OAuth flow between its start and its callback: bound to the tenant and the key that
/// started it, found by the hash of its state, taken once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuthStateRecord {
    pub state_hash: String,
    pub tenant_id: TenantId,
    pub key_id: String,
    pub provider: String,
    pub collection: CollectionName,
    pub name: Option<String>,
    pub container_tag: Option<String>,
    pub config: Value,
    /// The redirect URI the start sent (the exchange must repeat it).
    pub redirect_uri: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}
