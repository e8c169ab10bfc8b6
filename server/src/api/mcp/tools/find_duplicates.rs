//! `find_duplicates`: a dedup dry run (the REST API's clusters; nothing is deleted).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{collection_name, Context, Hints, Tool, ToolFailure};
use crate::api::maintenance::{dedup_threshold, DuplicateClusterResponse};

pub struct FindDuplicates;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FindDuplicatesArguments {
    /// The collection's name: letters, digits, '_', '-' and '.'.
    #[schema(min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]+$")]
    collection: String,
    /// Cosine similarity at which two memories are duplicates.
    #[schema(minimum = 0.0, maximum = 1.0, default = 0.95)]
    threshold: Option<f64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FindDuplicatesOutput {
    collection: String,
    /// Always true: the tool never deletes.
    dry_run: bool,
    threshold: f64,
    /// Memories compared: the most recent current, unarchived ones, at most 500.
    scanned: usize,
    clusters: Vec<DuplicateClusterResponse>,
}

impl Tool for FindDuplicates {
    const NAME: &'static str = "find_duplicates";
    const TITLE: &'static str = "Find duplicates";
    const DESCRIPTION: &'static str = "Finds clusters of near-identical memories (a dedup \
        dry run: nothing is deleted); each cluster names the memory that would be kept.";
    const HINTS: Hints = Hints::ReadOnly;
    type Arguments = FindDuplicatesArguments;
    type Output = FindDuplicatesOutput;

    async fn call(
        context: &Context<'_>,
        arguments: FindDuplicatesArguments,
    ) -> Result<FindDuplicatesOutput, ToolFailure> {
        let name = collection_name(&arguments.collection)?;
        let threshold = dedup_threshold(arguments.threshold)?;
        let sweep = context
            .state
            .authorizer
            .authorize_sweep(context.agent, name, true)?;
        let report = context
            .state
            .maintenance
            .dedup(&sweep, threshold as f32)
            .await?;
        Ok(FindDuplicatesOutput {
            collection: sweep.collection().to_string(),
            dry_run: true,
            threshold,
            scanned: report.scanned,
            clusters: report
                .clusters
                .iter()
                .map(DuplicateClusterResponse::from)
                .collect(),
        })
    }
}
