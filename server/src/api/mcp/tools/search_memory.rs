//! `search_memory`: hybrid (or vector, or keyword) search in one collection or in every
//! collection the key may read.

use memvault_core::service::Read;
use memvault_types::limits::{SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX, SHORT_FIELD_MAX_CHARS};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::shapes::ToolHit;
use super::{Context, Hints, Tool, ToolFailure};
use crate::api::extract::optional_integer;
use crate::api::search::{ModeParam, SearchRequest};

pub struct SearchMemory;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchMemoryArguments {
    /// What to look for, in natural language: at most 1,000 characters (the REST API
    /// takes a memory's length; a model's query is a sentence).
    #[schema(min_length = 1, max_length = 1000)]
    query: String,
    /// The collection to search; every collection this key may read when left out.
    #[schema(min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]+$")]
    collection: Option<String>,
    #[schema(minimum = 1, maximum = 50, default = 5)]
    #[serde(default, deserialize_with = "optional_integer")]
    limit: Option<i64>,
    /// Hybrid (semantic + keyword) by default.
    #[schema(inline)]
    mode: Option<ModeParam>,
    /// Only memories with this sub-namespace (e.g. a user id).
    #[schema(min_length = 1, max_length = 200)]
    container_tag: Option<String>,
    #[schema(min_length = 1, max_length = 200)]
    category: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchMemoryOutput {
    results: Vec<ToolHit>,
}

impl Tool for SearchMemory {
    const NAME: &'static str = "search_memory";
    const TITLE: &'static str = "Search memory";
    const DESCRIPTION: &'static str = "Finds memories relevant to a query: in one \
        collection, or in every collection this key may read. Hybrid (semantic + keyword) \
        by default; superseded, expired and archived memories are left out.";
    const HINTS: Hints = Hints::ReadOnly;
    type Arguments = SearchMemoryArguments;
    type Output = SearchMemoryOutput;

    async fn call(
        context: &Context<'_>,
        arguments: SearchMemoryArguments,
    ) -> Result<SearchMemoryOutput, ToolFailure> {
        let scope = match &arguments.collection {
            Some(collection) => Some(context.authorized::<Read>(collection)?),
            None => None,
        };
        let query = SearchRequest {
            query: arguments.query,
            limit: arguments.limit,
            mode: arguments.mode,
            category: arguments.category,
            container_tag: arguments.container_tag,
            ..SearchRequest::default()
        }
        .validate()?;
        let outcome = context
            .state
            .search
            .search_as_of(context.agent, scope.as_ref(), query.query, query.as_of)
            .await?;
        Ok(SearchMemoryOutput {
            results: outcome.hits.iter().map(ToolHit::from).collect(),
        })
    }
}

// Schema attributes take literals, not constants: these are the limits they spell.
const _: () = assert!(SEARCH_LIMIT_MAX == 50 && SEARCH_LIMIT_DEFAULT == 5);
const _: () = assert!(SHORT_FIELD_MAX_CHARS == 200);
