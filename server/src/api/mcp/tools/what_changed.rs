//! `what_changed`: memories created or updated since a time, and the facts superseded
//! since then.

use chrono::{DateTime, Utc};
use memvault_core::service::Read;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::shapes::ToolMemory;
use super::{Context, Hints, Tool, ToolFailure};
use crate::api::extract::optional_integer;
use crate::api::search::validate_limit;

/// Most changed memories (and supersessions) one call returns.
const CHANGES_LIMIT_MAX: usize = 200;
const CHANGES_LIMIT_DEFAULT: usize = 50;

pub struct WhatChanged;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WhatChangedArguments {
    /// The collection's name: letters, digits, '_', '-' and '.'.
    #[schema(min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]+$")]
    collection: String,
    /// RFC 3339, e.g. 2026-01-31T12:00:00Z.
    #[schema(format = DateTime)]
    since: String,
    #[schema(minimum = 1, maximum = 200, default = 50)]
    #[serde(default, deserialize_with = "optional_integer")]
    limit: Option<i64>,
}

/// A fact superseded since the time asked about: the value now current and the one it
/// replaced.
#[derive(Debug, Serialize, ToSchema)]
pub struct Supersession {
    current: ToolMemory,
    superseded: ToolMemory,
    superseded_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WhatChangedOutput {
    collection: String,
    since: DateTime<Utc>,
    /// Newest first.
    changed: Vec<ToolMemory>,
    changed_truncated: bool,
    supersessions: Vec<Supersession>,
}

impl Tool for WhatChanged {
    const NAME: &'static str = "what_changed";
    const TITLE: &'static str = "What changed";
    const DESCRIPTION: &'static str = "Memories created or updated in a collection since a \
        time, and the facts superseded since then (current and superseded), newest first.";
    const HINTS: Hints = Hints::ReadOnly;
    type Arguments = WhatChangedArguments;
    type Output = WhatChangedOutput;

    async fn call(
        context: &Context<'_>,
        arguments: WhatChangedArguments,
    ) -> Result<WhatChangedOutput, ToolFailure> {
        let access = context.authorized::<Read>(&arguments.collection)?;
        let name = access.collection();
        let since = DateTime::parse_from_rfc3339(&arguments.since)
            .map(|since| since.with_timezone(&Utc))
            .map_err(|error| {
                ToolFailure::InvalidParams(format!(
                    "arguments.since must be an RFC 3339 time like 2026-01-31T12:00:00Z: {error}"
                ))
            })?;
        let limit = validate_limit(arguments.limit, CHANGES_LIMIT_DEFAULT, CHANGES_LIMIT_MAX)?;
        let changes = context
            .state
            .memories
            .changes_since(&access, since, limit)
            .await?;
        Ok(WhatChangedOutput {
            collection: name.to_string(),
            since,
            changed: changes
                .changed
                .iter()
                .map(|memory| ToolMemory::new(memory, name))
                .collect(),
            changed_truncated: changes.changed_truncated,
            supersessions: changes
                .supersessions
                .iter()
                .map(|pair| Supersession {
                    current: ToolMemory::new(&pair.current, name),
                    superseded: ToolMemory::new(&pair.superseded, name),
                    superseded_at: pair.superseded.superseded_at,
                })
                .collect(),
        })
    }
}
