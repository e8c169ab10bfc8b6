//! What changed in a collection since a moment: the memories created or updated since
//! then and the supersessions since then, newest first. Read from the published snapshot
//! (no mailbox); the scan over the memories runs off the async threads.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_storage::MemoryRecord;

use super::access::{CollectionAccess, Read};
use super::Memories;
use crate::error::{Error, Result};
use crate::service::Contradiction;

/// The answer of [`Memories::changes_since`].
#[derive(Debug, Clone, Default)]
pub struct CollectionChanges {
    /// Memories created or updated at or after `since`, most recently updated first.
    pub changed: Vec<Arc<MemoryRecord>>,
    /// True when more memories changed than `changed` holds.
    pub changed_truncated: bool,
    /// Supersessions at or after `since`, newest first.
    pub supersessions: Vec<Contradiction>,
}

impl Memories {
    /// At most `limit` changed memories and `limit` supersessions since `since`.
    pub async fn changes_since(
        &self,
        access: &CollectionAccess<Read>,
        since: DateTime<Utc>,
        limit: usize,
    ) -> Result<CollectionChanges> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let snapshot = self
            .tree
            .collection_entry(tenant, collection)?
            .handle
            .snapshot();
        tokio::task::spawn_blocking(move || {
            let mut changed: Vec<Arc<MemoryRecord>> = snapshot
                .memories
                .values()
                .filter(|memory| memory.updated_at >= since || memory.created_at >= since)
                .cloned()
                .collect();
            changed.sort_by(|left, right| {
                right
                    .updated_at
                    .cmp(&left.updated_at)
                    .then_with(|| right.id.cmp(&left.id))
            });
            let changed_truncated = changed.len() > limit;
            changed.truncate(limit);
            // `superseded` is ordered by (superseded_at, id): walk it from the newest end
            // and stop at the first one older than `since`.
            let supersessions = snapshot
                .superseded
                .iter()
                .rev()
                .take_while(|(at, _)| *at >= since)
                .filter_map(|(_, id)| Contradiction::of(&snapshot, id))
                .take(limit)
                .collect();
            CollectionChanges {
                changed,
                changed_truncated,
                supersessions,
            }
        })
        .await
        .map_err(|error| Error::TaskFailed {
            task: "the change scan",
            reason: error.to_string(),
        })
    }
}
