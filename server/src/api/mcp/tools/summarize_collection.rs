//! `summarize_collection`: what a collection is about (the REST API's summary answer).

use memvault_core::service::Read;
use memvault_types::limits::{SUMMARY_LIMIT_DEFAULT, SUMMARY_LIMIT_MAX};
use serde::Deserialize;
use utoipa::ToSchema;

use super::{Context, Hints, Tool, ToolFailure};
use crate::api::extract::optional_integer;
use crate::api::maintenance::SummaryResponse;
use crate::api::search::validate_limit;

pub struct SummarizeCollection;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SummarizeCollectionArguments {
    /// The collection's name: letters, digits, '_', '-' and '.'.
    #[schema(min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]+$")]
    collection: String,
    /// How many of the most important and recent memories the summary reads.
    #[schema(minimum = 1, maximum = 200, default = 50)]
    #[serde(default, deserialize_with = "optional_integer")]
    limit: Option<i64>,
}

impl Tool for SummarizeCollection {
    const NAME: &'static str = "summarize_collection";
    const TITLE: &'static str = "Summarize a collection";
    const DESCRIPTION: &'static str =
        "What a collection is about, from its most important and recent memories.";
    const HINTS: Hints = Hints::ReadOnly;
    type Arguments = SummarizeCollectionArguments;
    type Output = SummaryResponse;

    async fn call(
        context: &Context<'_>,
        arguments: SummarizeCollectionArguments,
    ) -> Result<SummaryResponse, ToolFailure> {
        let access = context.authorized::<Read>(&arguments.collection)?;
        let limit = validate_limit(arguments.limit, SUMMARY_LIMIT_DEFAULT, SUMMARY_LIMIT_MAX)?;
        let maintenance = &context.state.maintenance;
        let found = maintenance.summary(&access, limit).await?;
        Ok(SummaryResponse::new(
            arguments.collection,
            found,
            maintenance.now(),
        ))
    }
}

// Schema attributes take literals, not constants: these are the limits they spell.
const _: () = assert!(SUMMARY_LIMIT_MAX == 200 && SUMMARY_LIMIT_DEFAULT == 50);
