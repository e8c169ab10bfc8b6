//! Result shapes several tools share: a memory (the REST API's memory plus its
//! collection) and a list of scored memories.

use memvault_index::search::SearchHit;
use memvault_storage::{CollectionName, MemoryRecord};
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::memories::MemoryResponse;

/// A memory in a tool's result: the REST API's memory shape and its collection.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolMemory {
    #[serde(flatten)]
    pub memory: MemoryResponse,
    pub collection: String,
}

impl ToolMemory {
    pub fn new(memory: &MemoryRecord, collection: &CollectionName) -> Self {
        Self {
            memory: MemoryResponse::from(memory),
            collection: collection.to_string(),
        }
    }
}

/// A memory found by a search, with its relevance.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolHit {
    #[serde(flatten)]
    pub memory: ToolMemory,
    /// Relevance; higher is better.
    pub score: f32,
}

impl From<&SearchHit> for ToolHit {
    fn from(hit: &SearchHit) -> Self {
        Self {
            memory: ToolMemory::new(&hit.memory, &hit.collection),
            score: hit.score,
        }
    }
}
