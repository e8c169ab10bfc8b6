//! `list_collections`: the collections this key may read.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Context, Hints, Tool, ToolFailure};
use crate::api::collections::CollectionResponse;

pub struct ListCollections;

/// No arguments.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListCollectionsOutput {
    /// By name.
    collections: Vec<CollectionResponse>,
}

impl Tool for ListCollections {
    const NAME: &'static str = "list_collections";
    const TITLE: &'static str = "List collections";
    const DESCRIPTION: &'static str =
        "Lists the collections this key may read, with their memory counts.";
    const HINTS: Hints = Hints::ReadOnly;
    type Arguments = NoArguments;
    type Output = ListCollectionsOutput;

    async fn call(
        context: &Context<'_>,
        _arguments: NoArguments,
    ) -> Result<ListCollectionsOutput, ToolFailure> {
        let mut views = context.state.collections.list(context.agent)?;
        views.sort_by(|left, right| left.record.name.as_str().cmp(right.record.name.as_str()));
        Ok(ListCollectionsOutput {
            collections: views.into_iter().map(CollectionResponse::from).collect(),
        })
    }
}
