//! `collection_health`: a collection's memories counted by state (the REST API's health
//! answer).

use memvault_core::service::Read;
use serde::Deserialize;
use utoipa::ToSchema;

use super::{Context, Hints, Tool, ToolFailure};
use crate::api::extract::optional_integer;
use crate::api::maintenance::{stale_days, HealthResponse};

pub struct CollectionHealth;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CollectionHealthArguments {
    /// The collection's name: letters, digits, '_', '-' and '.'.
    #[schema(min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]+$")]
    collection: String,
    /// Days without an update after which a memory is stale.
    #[schema(minimum = 0, maximum = 36500, default = 90)]
    #[serde(default, deserialize_with = "optional_integer")]
    stale_days: Option<i64>,
}

impl Tool for CollectionHealth {
    const NAME: &'static str = "collection_health";
    const TITLE: &'static str = "Collection health";
    const DESCRIPTION: &'static str = "Counts a collection's memories by state: current, \
        archived, pinned, stale (not updated for stale_days), expired, superseded, by \
        category.";
    const HINTS: Hints = Hints::ReadOnly;
    type Arguments = CollectionHealthArguments;
    type Output = HealthResponse;

    async fn call(
        context: &Context<'_>,
        arguments: CollectionHealthArguments,
    ) -> Result<HealthResponse, ToolFailure> {
        let access = context.authorized::<Read>(&arguments.collection)?;
        let days = stale_days(arguments.stale_days, "stale_days")?;
        let found = context.state.maintenance.collection_health(&access, days)?;
        Ok(HealthResponse::new(arguments.collection, found, days))
    }
}
