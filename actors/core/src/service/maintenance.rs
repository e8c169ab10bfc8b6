//! Keeping collections tidy and telling their owners how they are doing: dedup,
//! archive-stale, health (per collection and service-wide) and the collection summary.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_curation::dedup::DedupReport;
use memvault_curation::extractive::{extractive_summary, SummaryItem};
use memvault_curation::{CachedSummary, CollectionSummary};
use memvault_index::search::filter::is_current;
use memvault_storage::{CollectionName, EmbeddingModel, MemoryRecord, Store, TenantId};
use memvault_types::limits::DEDUP_WINDOW;

use super::access::{CollectionAccess, Read, Sweep};
use super::tree::Tree;
use super::{Llms, Placement};
use crate::collection::{stale_cutoff, CollectionHealth, CollectionMessage, CollectionSnapshot};
use crate::error::Result;
use crate::reembed::Progress;
use crate::reembed::ReembedProgress;
use crate::service::Purpose;

/// A collection's health and the state of its vectors.
#[derive(Debug, Clone)]
pub struct CollectionReport {
    pub health: CollectionHealth,
    pub embedding: EmbeddingStatus,
}

/// Which model made a collection's vectors, and its re-embedding if one runs.
#[derive(Debug, Clone)]
pub struct EmbeddingStatus {
    pub model: EmbeddingModel,
    pub reembedding: Option<Progress>,
}

/// Health summed over every collection of every tenant.
#[derive(Debug, Clone)]
pub struct ServiceHealth {
    pub tenants: usize,
    pub collections: usize,
    pub health: CollectionHealth,
}

/// Memories archived per actor call by archive-stale.
const ARCHIVE_BATCH: usize = 1_000;

/// Recency halves every this many days when picking the memories a summary is based on.
const SUMMARY_RECENCY_HALF_LIFE_DAYS: f64 = 30.0;

/// Keeping collections current: dedup, archive-stale, health, summaries.
#[derive(Clone)]
pub struct Maintenance {
    pub(super) tree: Tree,
    pub(super) store: Arc<dyn Store>,
    pub(super) llms: Llms,
    pub(super) placement: Placement,
    pub(super) reembed_progress: ReembedProgress,
}

impl Maintenance {
    /// The service's "now" (what a summary is dated).
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.tree.now()
    }

    pub async fn dedup(&self, sweep: &Sweep, threshold: f32) -> Result<DedupReport> {
        let dry_run = sweep.is_dry_run();
        let entry = self
            .tree
            .collection_entry(sweep.tenant(), sweep.collection())?;
        let report = self
            .tree
            .call_collection(&entry.handle, |reply| CollectionMessage::Dedup {
                threshold,
                window: DEDUP_WINDOW,
                dry_run,
                reply,
            })
            .await?;
        // The non-keepers' files go with them, unless another memory references them.
        let deleted: std::collections::HashSet<&String> = report.deleted.iter().collect();
        let images: Vec<serde_json::Value> = report
            .clusters
            .iter()
            .flat_map(|cluster| cluster.duplicates.iter())
            .filter(|(memory, _)| deleted.contains(&memory.id))
            .flat_map(|(memory, _)| memory.images.iter().cloned())
            .collect();
        self.placement.release(sweep.tenant(), &images).await;
        Ok(report)
    }

    /// The ids archived (or, on a dry run, that would be), oldest first. Archiving goes
    /// in batches of [`ARCHIVE_BATCH`], one actor call each, so other writes interleave and
    /// no call nears the timeout however many memories are stale.
    pub async fn archive_stale(&self, sweep: &Sweep, older_than_days: u32) -> Result<Vec<String>> {
        let dry_run = sweep.is_dry_run();
        let entry = self
            .tree
            .collection_entry(sweep.tenant(), sweep.collection())?;
        let cutoff = stale_cutoff(self.tree.now(), older_than_days);
        let max = if dry_run { usize::MAX } else { ARCHIVE_BATCH };
        let mut archived = Vec::new();
        loop {
            let batch = self
                .tree
                .call_collection(&entry.handle, |reply| CollectionMessage::ArchiveStale {
                    cutoff,
                    dry_run,
                    max,
                    reply,
                })
                .await?;
            let done = batch.len() < max;
            archived.extend(batch);
            if done {
                return Ok(archived);
            }
        }
    }

    /// `None` when the collection does not exist.
    pub fn collection_health(
        &self,
        access: &CollectionAccess<Read>,
        stale_days: u32,
    ) -> Result<Option<CollectionReport>> {
        let (tenant, collection) = (access.tenant(), access.collection());
        match self.tree.collection_entry(tenant, collection) {
            Ok(entry) => Ok(Some(CollectionReport {
                health: entry.handle.snapshot().health(self.tree.now(), stale_days),
                embedding: EmbeddingStatus {
                    model: (**entry.handle.embedding.load()).clone(),
                    reembedding: self.reembed_progress.get(tenant, collection),
                },
            })),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Every collection's health, summed; read from the published snapshots.
    pub fn service_health(&self, stale_days: u32) -> ServiceHealth {
        let now = self.tree.now();
        let mut total = ServiceHealth {
            tenants: 0,
            collections: 0,
            health: CollectionHealth::default(),
        };
        for tenant in self.tree.tenants().iter() {
            total.tenants += 1;
            for entry in tenant.snapshot().collections.values() {
                total.collections += 1;
                total
                    .health
                    .absorb(&entry.handle.snapshot().health(now, stale_days));
            }
        }
        total
    }

    /// The collection's summary over its top `limit` memories by importance and recency:
    /// one LLM call when an LLM serves the tenant, else extractive. Cached until the
    /// collection changes, or a memory expires or comes back from a set-aside. `None` when
    /// the collection does not exist; never an error otherwise.
    pub async fn summary(
        &self,
        access: &CollectionAccess<Read>,
        limit: usize,
    ) -> Result<Option<Arc<CollectionSummary>>> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let handle = match self.tree.collection_entry(tenant, collection) {
            Ok(entry) => entry.handle,
            Err(error) if error.is_not_found() => return Ok(None),
            Err(error) => return Err(error),
        };
        let snapshot = handle.snapshot();
        let now = self.tree.now();
        if let Some(cached) = handle.summary.load_full() {
            let in_time = cached.until.is_none_or(|until| now < until);
            if cached.version == snapshot.version && cached.limit == limit && in_time {
                return Ok(Some(cached.summary.clone()));
            }
        }
        let top = top_memories(&snapshot, now, limit);
        let (summary, cacheable) = self.write_summary(tenant, collection, &top, now).await;
        let summary = Arc::new(summary);
        if cacheable {
            handle.summary.store(Some(Arc::new(CachedSummary {
                version: snapshot.version,
                limit,
                until: snapshot.next_boundary(now),
                summary: summary.clone(),
            })));
        }
        Ok(Some(summary))
    }

    /// The summary and whether it may be cached (not when an LLM call failed: the next
    /// request tries again).
    async fn write_summary(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        top: &[Arc<MemoryRecord>],
        now: DateTime<Utc>,
    ) -> (CollectionSummary, bool) {
        let mut skipped = None;
        let mut cacheable = true;
        if !top.is_empty() {
            match self.llms.llm_for(tenant, Purpose::Summary).await {
                Ok(choice) => match choice.llm() {
                    Some(llm) => {
                        let texts: Vec<String> =
                            top.iter().map(|memory| memory.text.clone()).collect();
                        match llm.chat(memvault_llm::summary_request(&texts)).await {
                            Ok(response) => {
                                self.llms
                                    .record_usage(
                                        tenant,
                                        Purpose::Summary,
                                        llm.model(),
                                        false,
                                        response.usage,
                                    )
                                    .await;
                                if let Some((summary, themes)) =
                                    memvault_llm::parse_summary(&response.content)
                                {
                                    let summary = CollectionSummary {
                                        summary,
                                        themes,
                                        based_on: top.len(),
                                        generated_at: now,
                                        generated_by: "llm",
                                        skipped: None,
                                    };
                                    return (summary, true);
                                }
                                skipped = Some("the LLM's summary was not usable".to_owned());
                            }
                            Err(error) => {
                                skipped = Some(format!("the LLM call failed: {error}"));
                            }
                        }
                        cacheable = false;
                    }
                    None if self.llms.has_platform_llm() => skipped = choice.absence(),
                    None => {}
                },
                Err(error) => {
                    skipped = Some(format!("the LLM could not be chosen: {error}"));
                    cacheable = false;
                }
            }
        }
        let embeddings = self.embeddings_of(tenant, collection, top).await;
        let items: Vec<SummaryItem<'_>> = top
            .iter()
            .zip(&embeddings)
            .map(|(memory, embedding)| SummaryItem {
                text: &memory.text,
                embedding,
                importance: memory.importance,
            })
            .collect();
        let extractive = extractive_summary(&items);
        let summary = CollectionSummary {
            summary: extractive.summary,
            themes: extractive.themes,
            based_on: top.len(),
            generated_at: now,
            generated_by: "extractive",
            skipped,
        };
        (summary, cacheable)
    }

    /// Each memory's stored embedding; an empty one where it cannot be read (the
    /// extractive summary then treats that memory as unlike the others).
    async fn embeddings_of(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        memories: &[Arc<MemoryRecord>],
    ) -> Vec<Vec<f32>> {
        let (store, tenant, collection) = (self.store.clone(), tenant.clone(), collection.clone());
        let ids: Vec<String> = memories.iter().map(|memory| memory.id.clone()).collect();
        let count = ids.len();
        let loaded = tokio::task::spawn_blocking(move || {
            ids.iter()
                .map(|id| match store.memory(&tenant, &collection, id) {
                    Ok(Some(stored)) => stored.embedding,
                    Ok(None) | Err(_) => Vec::new(),
                })
                .collect::<Vec<_>>()
        })
        .await;
        loaded.unwrap_or_else(|_| vec![Vec::new(); count])
    }
}

/// The `limit` current, unarchived memories with the highest blend of importance (0.7)
/// and recency (0.3, halving every 30 days since the last update), best first.
fn top_memories(
    snapshot: &CollectionSnapshot,
    now: DateTime<Utc>,
    limit: usize,
) -> Vec<Arc<MemoryRecord>> {
    let score = |memory: &MemoryRecord| {
        let age_days = (now - memory.updated_at).num_seconds().max(0) as f64 / 86_400.0;
        let recency = 0.5f64.powf(age_days / SUMMARY_RECENCY_HALF_LIFE_DAYS);
        0.7 * memory.importance + 0.3 * recency
    };
    let mut scored: Vec<(f64, Arc<MemoryRecord>)> = snapshot
        .memories
        .values()
        .filter(|memory| !memory.archived && is_current(memory, now))
        .map(|memory| (score(memory), memory.clone()))
        .collect();
    let better = |a: &(f64, Arc<MemoryRecord>), b: &(f64, Arc<MemoryRecord>)| {
        b.0.total_cmp(&a.0)
            .then(b.1.updated_at.cmp(&a.1.updated_at))
            .then(b.1.id.cmp(&a.1.id))
    };
    if scored.len() > limit && limit > 0 {
        scored.select_nth_unstable_by(limit - 1, better);
    }
    scored.truncate(limit);
    scored.sort_by(better);
    scored.into_iter().map(|(_, memory)| memory).collect()
}
