//! `get_memory`: one memory by id.

use memvault_core::service::Read;
use serde::Deserialize;
use utoipa::ToSchema;

use super::shapes::ToolMemory;
use super::{Context, Hints, Tool, ToolFailure};

pub struct GetMemory;

/// A memory of a collection.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryArguments {
    /// The collection's name: letters, digits, '_', '-' and '.'.
    #[schema(min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]+$")]
    pub collection: String,
    /// The memory's id.
    #[schema(min_length = 1, max_length = 200)]
    pub memory_id: String,
}

impl Tool for GetMemory {
    const NAME: &'static str = "get_memory";
    const TITLE: &'static str = "Get a memory";
    const DESCRIPTION: &'static str = "Reads one memory by id.";
    const HINTS: Hints = Hints::ReadOnly;
    type Arguments = MemoryArguments;
    type Output = ToolMemory;

    async fn call(
        context: &Context<'_>,
        arguments: MemoryArguments,
    ) -> Result<ToolMemory, ToolFailure> {
        let access = context.authorized::<Read>(&arguments.collection)?;
        let memory = context.state.memories.get(&access, &arguments.memory_id)?;
        Ok(ToolMemory::new(&memory, access.collection()))
    }
}
