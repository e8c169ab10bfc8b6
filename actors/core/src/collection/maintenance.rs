//! The collection actor's maintenance writes: dedup and archive-stale. Both decide from the
//! actor's own state and carry the decision out in one store batch, so nothing else writes
//! to the collection in between.

use std::cmp::Ordering;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_storage::{MemoryRecord, StoredMemory};

use super::CollectionState;
use crate::call::blocking;
use crate::error::{Error, Result};
use memvault_curation::dedup::{find_duplicates, DedupCandidate, DedupReport, ReportCluster};

fn newest_first(a: &Arc<MemoryRecord>, b: &Arc<MemoryRecord>) -> Ordering {
    b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id))
}

/// The stored form (with its embedding) of each memory, in order.
async fn load(state: &CollectionState, ids: Vec<String>) -> Result<Vec<StoredMemory>> {
    let (store, tenant, name) = (
        state.store.clone(),
        state.tenant().clone(),
        state.name().clone(),
    );
    let loaded = blocking(move || {
        ids.iter()
            .map(|id| Ok((id.clone(), store.memory(&tenant, &name, id)?)))
            .collect::<memvault_storage::error::Result<Vec<_>>>()
    })
    .await?;
    loaded
        .into_iter()
        .map(|(id, memory)| memory.ok_or_else(|| Error::MemoryNotInStore(id.clone())))
        .collect()
}

pub(super) async fn dedup(
    state: &mut CollectionState,
    threshold: f32,
    window: usize,
    dry_run: bool,
) -> Result<DedupReport> {
    let mut recent: Vec<Arc<MemoryRecord>> = state
        .current
        .memories
        .values()
        .filter(|memory| memory.superseded_by.is_none() && !memory.archived)
        .cloned()
        .collect();
    if recent.len() > window {
        recent.select_nth_unstable_by(window, newest_first);
        recent.truncate(window);
    }
    recent.sort_by(newest_first);
    let ids = recent.iter().map(|memory| memory.id.clone()).collect();
    let stored = load(state, ids).await?;
    let clusters = tokio::task::spawn_blocking(move || {
        let candidates: Vec<DedupCandidate<'_>> = stored
            .iter()
            .map(|memory| DedupCandidate {
                id: &memory.record.id,
                embedding: &memory.embedding,
                pinned: memory.record.pinned,
                importance: memory.record.importance,
                created_at: memory.record.created_at,
            })
            .collect();
        find_duplicates(&candidates, threshold)
    })
    .await
    .map_err(|error| Error::TaskFailed {
        task: "dedup",
        reason: error.to_string(),
    })?;
    let clusters: Vec<ReportCluster> = clusters
        .into_iter()
        .map(|cluster| ReportCluster {
            keeper: recent[cluster.keeper].clone(),
            duplicates: cluster
                .duplicates
                .into_iter()
                .map(|(index, similarity)| (recent[index].clone(), similarity))
                .collect(),
        })
        .collect();
    let mut report = DedupReport {
        scanned: recent.len(),
        clusters,
        deleted: Vec::new(),
    };
    if dry_run || report.clusters.is_empty() {
        return Ok(report);
    }
    let doomed: Vec<String> = report
        .clusters
        .iter()
        .flat_map(|cluster| {
            cluster
                .duplicates
                .iter()
                .map(|(memory, _)| memory.id.clone())
        })
        .collect();
    let (store, tenant, name, ids) = (
        state.store.clone(),
        state.tenant().clone(),
        state.name().clone(),
        doomed.clone(),
    );
    blocking(move || store.delete_memories(&tenant, &name, &ids)).await?;
    let mut keys = Vec::with_capacity(doomed.len());
    let mut removed = Vec::with_capacity(doomed.len());
    for id in &doomed {
        if let Some(memory) = state.take_current(id) {
            keys.push(memory.index_key);
            removed.push(memory);
        }
    }
    state.release_set_asides(&removed).await?;
    state.publish();
    state
        .index(move |indexes| keys.iter().try_for_each(|key| indexes.remove(*key)))
        .await;
    report.deleted = doomed;
    Ok(report)
}

pub(super) async fn archive_stale(
    state: &mut CollectionState,
    cutoff: DateTime<Utc>,
    dry_run: bool,
    max: usize,
) -> Result<Vec<String>> {
    let ids: Vec<String> = state
        .current
        .stale_ids(cutoff)
        .take(max)
        .map(str::to_owned)
        .collect();
    if dry_run || ids.is_empty() {
        return Ok(ids);
    }
    let mut stored = load(state, ids.clone()).await?;
    for memory in &mut stored {
        memory.record.archived = true;
    }
    let records: Vec<Arc<MemoryRecord>> = stored
        .iter()
        .map(|memory| Arc::new(memory.record.clone()))
        .collect();
    let (store, tenant, name) = (
        state.store.clone(),
        state.tenant().clone(),
        state.name().clone(),
    );
    blocking(move || store.put_memories(&tenant, &name, &stored)).await?;
    for record in records {
        state.put_current(record);
    }
    state.publish();
    Ok(ids)
}
