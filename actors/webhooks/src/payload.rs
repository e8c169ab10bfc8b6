//! The JSON body a webhook receiver gets for a memory event.

use chrono::{DateTime, Utc};
use memvault_storage::CreatedBy;
use serde::Serialize;
use serde_json::{Map, Value};

use memvault_events::MemoryEvent;

/// The body every delivery POSTs (the memory without its embedding, index key, slot
/// value or attached files):
///
/// ```json
/// {"id": "dlv_...", "event": "memory.created", "created_at": "...", "collection": "notes",
///  "memory": {"id": "...", "text": "...", "importance": 0.5, "category": "other",
///             "source": "api", "metadata": {}, "container_tag": null,
///             "created_at": "...", "updated_at": "...", "pinned": false,
///             "archived": false, "created_by": {"id": "...", "label": "..."},
///             "superseded_by": null, "expires_at": null}}
/// ```
#[derive(Debug, Serialize)]
pub struct EventPayload<'a> {
    /// The delivery id; the same on every attempt.
    pub id: &'a str,
    pub event: &'static str,
    /// When the memory changed.
    pub created_at: DateTime<Utc>,
    pub collection: &'a str,
    pub memory: PayloadMemory<'a>,
}

#[derive(Debug, Serialize)]
pub struct PayloadMemory<'a> {
    pub id: &'a str,
    pub text: &'a str,
    pub importance: f64,
    pub category: &'a str,
    pub source: &'a str,
    pub metadata: &'a Map<String, Value>,
    pub container_tag: Option<&'a str>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub pinned: bool,
    pub archived: bool,
    pub created_by: &'a CreatedBy,
    pub superseded_by: Option<&'a str>,
    pub expires_at: Option<DateTime<Utc>>,
}

impl<'a> EventPayload<'a> {
    pub fn new(delivery_id: &'a str, event: &'a MemoryEvent) -> Self {
        let memory = &event.memory;
        Self {
            id: delivery_id,
            event: event.kind.as_str(),
            created_at: event.at,
            collection: event.collection.as_str(),
            memory: PayloadMemory {
                id: &memory.id,
                text: &memory.text,
                importance: memory.importance,
                category: &memory.category,
                source: &memory.source,
                metadata: &memory.metadata,
                container_tag: memory.container_tag.as_deref(),
                created_at: memory.created_at,
                updated_at: memory.updated_at,
                pinned: memory.pinned,
                archived: memory.archived,
                created_by: &memory.created_by,
                superseded_by: memory.superseded_by.as_deref(),
                expires_at: memory.expires_at,
            },
        }
    }

    /// The exact text that is stored, signed and sent.
    pub fn to_json(&self) -> String {
        // Plain strings, numbers and a JSON map: serializing cannot fail.
        serde_json::to_string(self).expect("webhook payload serializes")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use memvault_storage::{CollectionName, MemoryRecord, TenantId};

    use super::*;
    use memvault_events::MemoryEventKind;

    #[test]
    fn the_payload_names_the_event_collection_and_memory() {
        let now = Utc::now();
        let mut memory = MemoryRecord::new(
            "Paris is the capital of France.".to_owned(),
            0.7,
            "fact".to_owned(),
            "api".to_owned(),
            CreatedBy {
                id: "key_1".to_owned(),
                label: "agent".to_owned(),
            },
            now,
        );
        memory.container_tag = Some("user-1".into());
        let event = MemoryEvent {
            tenant: TenantId::generate(),
            collection: CollectionName::parse("notes").unwrap(),
            kind: MemoryEventKind::Updated,
            memory: Arc::new(memory.clone()),
            at: now,
        };
        let body: Value =
            serde_json::from_str(&EventPayload::new("dlv_1", &event).to_json()).unwrap();
        assert_eq!(body["id"], "dlv_1");
        assert_eq!(body["event"], "memory.updated");
        assert_eq!(body["collection"], "notes");
        assert_eq!(body["memory"]["id"], memory.id.as_str());
        assert_eq!(body["memory"]["text"], "Paris is the capital of France.");
        assert_eq!(body["memory"]["container_tag"], "user-1");
        assert_eq!(body["memory"]["created_by"]["label"], "agent");
        assert!(body["memory"].get("index_key").is_none());
        assert!(body["memory"].get("embedding").is_none());
    }
}
