//! `related_memory`: the memories closest in meaning to one memory.

use memvault_core::service::Read;
use memvault_types::limits::{RELATED_LIMIT_DEFAULT, RELATED_MIN_SCORE_DEFAULT, SEARCH_LIMIT_MAX};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::shapes::ToolHit;
use super::{Context, Hints, Tool, ToolFailure};
use crate::api::extract::optional_integer;
use crate::api::search::validate_limit;

pub struct RelatedMemory;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RelatedMemoryArguments {
    /// The collection's name: letters, digits, '_', '-' and '.'.
    #[schema(min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]+$")]
    collection: String,
    /// The memory's id.
    #[schema(min_length = 1, max_length = 200)]
    memory_id: String,
    #[schema(minimum = 1, maximum = 50, default = 5)]
    #[serde(default, deserialize_with = "optional_integer")]
    limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RelatedMemoryOutput {
    memory_id: String,
    results: Vec<ToolHit>,
}

impl Tool for RelatedMemory {
    const NAME: &'static str = "related_memory";
    const TITLE: &'static str = "Related memories";
    const DESCRIPTION: &'static str =
        "Finds the memories closest in meaning to one memory (not itself).";
    const HINTS: Hints = Hints::ReadOnly;
    type Arguments = RelatedMemoryArguments;
    type Output = RelatedMemoryOutput;

    async fn call(
        context: &Context<'_>,
        arguments: RelatedMemoryArguments,
    ) -> Result<RelatedMemoryOutput, ToolFailure> {
        let access = context.authorized::<Read>(&arguments.collection)?;
        let limit = validate_limit(arguments.limit, RELATED_LIMIT_DEFAULT, SEARCH_LIMIT_MAX)?;
        let outcome = context
            .state
            .search
            .related(
                &access,
                &arguments.memory_id,
                limit,
                RELATED_MIN_SCORE_DEFAULT as f32,
            )
            .await?;
        Ok(RelatedMemoryOutput {
            memory_id: arguments.memory_id,
            results: outcome.hits.iter().map(ToolHit::from).collect(),
        })
    }
}

// Schema attributes take literals, not constants: these are the limits they spell.
const _: () = assert!(SEARCH_LIMIT_MAX == 50 && RELATED_LIMIT_DEFAULT == 5);
