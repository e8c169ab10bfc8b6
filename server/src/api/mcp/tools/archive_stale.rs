//! `archive_stale`: archive (reversibly) the memories not updated for a number of days; a
//! dry run (the default) only counts them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{collection_name, Context, Hints, Tool, ToolFailure};
use crate::api::extract::optional_integer;
use crate::api::maintenance::{stale_days, ARCHIVE_STALE_IDS_MAX};

pub struct ArchiveStale;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveStaleArguments {
    /// The collection's name: letters, digits, '_', '-' and '.'.
    #[schema(min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]+$")]
    collection: String,
    /// Days without an update.
    #[schema(minimum = 0, maximum = 36500, default = 90)]
    #[serde(default, deserialize_with = "optional_integer")]
    older_than_days: Option<i64>,
    #[schema(default = true)]
    dry_run: Option<bool>,
}

impl ArchiveStaleArguments {
    fn dry_run(&self) -> bool {
        self.dry_run.unwrap_or(true)
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ArchiveStaleOutput {
    collection: String,
    dry_run: bool,
    older_than_days: u32,
    /// How many memories are (or would be) archived.
    count: usize,
    /// At most 1,000 of them.
    memory_ids: Vec<String>,
    memory_ids_truncated: bool,
}

impl Tool for ArchiveStale {
    const NAME: &'static str = "archive_stale";
    const TITLE: &'static str = "Archive stale memories";
    const DESCRIPTION: &'static str = "Archives (reversibly) the memories not updated for \
        older_than_days; never pinned or superseded ones. A dry run (the default) only \
        counts them; a real run needs a key that may write.";
    const HINTS: Hints = Hints::Writes { idempotent: true };
    type Arguments = ArchiveStaleArguments;
    type Output = ArchiveStaleOutput;

    fn audited(arguments: &ArchiveStaleArguments) -> Option<u16> {
        (!arguments.dry_run()).then_some(200)
    }

    async fn call(
        context: &Context<'_>,
        arguments: ArchiveStaleArguments,
    ) -> Result<ArchiveStaleOutput, ToolFailure> {
        let dry_run = arguments.dry_run();
        let sweep = context.state.authorizer.authorize_sweep(
            context.agent,
            collection_name(&arguments.collection)?,
            dry_run,
        )?;
        let days = stale_days(arguments.older_than_days, "older_than_days")?;
        let mut ids = context
            .state
            .maintenance
            .archive_stale(&sweep, days)
            .await?;
        let count = ids.len();
        ids.truncate(ARCHIVE_STALE_IDS_MAX);
        Ok(ArchiveStaleOutput {
            collection: sweep.collection().to_string(),
            dry_run,
            older_than_days: days,
            count,
            memory_ids: ids,
            memory_ids_truncated: count > ARCHIVE_STALE_IDS_MAX,
        })
    }
}
