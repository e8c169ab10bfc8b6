//! `store_memory`: one memory into a collection (created when missing), through the REST
//! API's own constructor.

use memvault_core::service::Write;
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::shapes::ToolMemory;
use super::{Context, Hints, Tool, ToolFailure};
use crate::api::memories::CreateMemoryRequest;
use crate::error::ApiError;

pub struct StoreMemory;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreMemoryArguments {
    /// The collection's name: letters, digits, '_', '-' and '.'; created when missing.
    #[schema(min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]+$")]
    collection: String,
    #[schema(min_length = 1, max_length = 10000)]
    text: String,
    #[schema(minimum = 0.0, maximum = 1.0, default = 0.5)]
    importance: Option<f64>,
    #[schema(min_length = 1, max_length = 200, default = "other")]
    category: Option<String>,
    /// Free-form JSON, searchable by containment.
    #[schema(value_type = Option<Object>)]
    metadata: Option<Map<String, Value>>,
    #[schema(min_length = 1, max_length = 200)]
    container_tag: Option<String>,
}

impl Tool for StoreMemory {
    const NAME: &'static str = "store_memory";
    const TITLE: &'static str = "Store a memory";
    const DESCRIPTION: &'static str = "Stores one memory in a collection (created when \
        missing); it is stamped with this key as its author. Read-only keys cannot store.";
    const HINTS: Hints = Hints::Writes { idempotent: false };
    type Arguments = StoreMemoryArguments;
    type Output = ToolMemory;

    fn audited(_arguments: &StoreMemoryArguments) -> Option<u16> {
        Some(201)
    }

    async fn call(
        context: &Context<'_>,
        arguments: StoreMemoryArguments,
    ) -> Result<ToolMemory, ToolFailure> {
        let access = context.authorized::<Write>(&arguments.collection)?;
        let memory = CreateMemoryRequest {
            text: arguments.text,
            importance: arguments.importance,
            category: arguments.category,
            source: Some("mcp".to_owned()),
            metadata: arguments.metadata,
            container_tag: arguments.container_tag,
        }
        .validate()?;
        let created = context.state.memories.create(&access, vec![memory]).await?;
        let memory = created
            .first()
            .ok_or_else(|| ApiError::Internal("create returned no memory".to_owned()))
            .map_err(ToolFailure::Failed)?;
        Ok(ToolMemory::new(memory, access.collection()))
    }
}
