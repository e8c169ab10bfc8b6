//! Search, related and forget. Searches read the published snapshots and indexes on a
//! blocking thread; they never wait in an actor's mailbox.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use memvault_index::search::cache::fingerprint;
use memvault_index::search::cache::SearchCaches;
use memvault_index::search::engine::{search_collection, vector_candidates};
use memvault_index::search::{
    SearchFilter, SearchHit, SearchMode, SearchOutcome, SearchQuery, Skipped,
};
use memvault_index::{CollectionIndexes, IndexError};
use memvault_llm::Llm;
use memvault_metrics::{Counter, Metrics, Stage};
use memvault_storage::{CollectionName, EmbeddingModel, MemoryRecord, Store, TenantId};

use super::access::{CollectionAccess, Read, Write};
use super::embedding::Embedding;
use super::intelligence::{LlmChoice, Purpose};
use super::tree::Tree;
use super::{Authorizer, Llms, Memories};
use crate::agent::Agent;
use crate::collection::{CollectionHandle, CollectionSnapshot};
use crate::error::{Error, Result};

/// Rerank sees this many times the requested results, at most [`RERANK_CANDIDATES_MAX`].
const RERANK_CANDIDATE_FACTOR: usize = 3;
const RERANK_CANDIDATES_MAX: usize = 50;

/// One collection as a search sees it: a consistent snapshot and its indexes.
struct Target {
    name: CollectionName,
    handle: Arc<CollectionHandle>,
    snapshot: Arc<CollectionSnapshot>,
    indexes: Arc<CollectionIndexes>,
}

/// Search across one collection or all the agent may read; related memories; forget.
#[derive(Clone)]
pub struct Search {
    pub(super) tree: Tree,
    pub(super) store: Arc<dyn Store>,
    pub(super) authorizer: Authorizer,
    pub(super) embedding: Embedding,
    pub(super) llms: Llms,
    pub(super) memories: Memories,
    pub(super) caches: Arc<SearchCaches>,
    pub(super) metrics: Arc<Metrics>,
}

impl Search {
    /// Searches one collection (`scope` = its name) or every collection of the tenant.
    /// `rewrite` and `rerank` each add one LLM call; without an LLM (or over the spend
    /// cap) they are skipped and the outcome says why.
    pub async fn search(
        &self,
        agent: &Agent,
        scope: Option<&CollectionAccess<Read>>,
        query: SearchQuery,
    ) -> Result<SearchOutcome> {
        self.search_as_of(agent, scope, query, None).await
    }

    /// [`Self::search`] over what was true at `as_of` (`None`: now): memories written by
    /// then and not yet superseded, expired or set aside then, superseded ones included.
    pub async fn search_as_of(
        &self,
        agent: &Agent,
        scope: Option<&CollectionAccess<Read>>,
        query: SearchQuery,
        as_of: Option<DateTime<Utc>>,
    ) -> Result<SearchOutcome> {
        let scope = scope.map(CollectionAccess::collection);
        let started = Instant::now();
        let tenant = &agent.tenant_id;
        let targets = self.search_targets(agent, scope)?;
        // The moment the answer is about; a cached answer holds until a memory's truth
        // changes by itself after it (an expiry, the end of a set-aside).
        let at = as_of.unwrap_or_else(|| self.tree.now());
        let choice = if query.rewrite || query.rerank {
            Some(self.llms.llm_for(tenant, Purpose::Rewrite).await?)
        } else {
            None
        };
        let llm = choice.as_ref().and_then(LlmChoice::llm).cloned();
        let mut skipped = match (&choice, &llm) {
            (Some(choice), None) => skipped_steps(&query, &choice.absence().unwrap_or_default()),
            _ => Vec::new(),
        };
        let key = cache_key(tenant, scope, &targets, &query, at, as_of.is_some());
        let metrics = &self.metrics;
        let cache_started = Instant::now();
        let cached = self.caches.results(key);
        metrics.record_stage(Stage::CacheGet, cache_started.elapsed());
        if let Some(hits) = cached {
            metrics.increment(Counter::SearchCacheHit);
            return Ok(SearchOutcome {
                hits,
                query_embedding_ms: 0.0,
                search_ms: elapsed_ms(started),
                cached: true,
                skipped,
            });
        }
        metrics.increment(Counter::SearchCacheMiss);
        let mut query = query;
        let limit = query.limit;
        let wants_rerank = query.rerank && llm.is_some();
        if let Some(llm) = &llm {
            if query.rewrite {
                match self.rewrite_query(tenant, &**llm, &query.text).await {
                    Ok(text) => query.text = text,
                    Err(reason) => skipped.push(Skipped {
                        step: "rewrite",
                        reason,
                    }),
                }
            }
            if query.rerank {
                // Rerank chooses among more candidates than it returns.
                query.limit = (limit * RERANK_CANDIDATE_FACTOR)
                    .min(RERANK_CANDIDATES_MAX)
                    .max(limit);
            }
        }
        // Each collection is searched with a query embedded by the model of its vectors
        // (they differ while one is being re-embedded): one embedding per model.
        let embedding_started = Instant::now();
        let mut vectors: HashMap<EmbeddingModel, Arc<Vec<f32>>> = HashMap::new();
        if query.mode != SearchMode::Text {
            for target in &targets {
                let model = target.indexes.model();
                if vectors.contains_key(model) {
                    continue;
                }
                match self.query_embedding(model, &query.text).await {
                    Ok(vector) => {
                        vectors.insert(model.clone(), vector);
                    }
                    // Hybrid still answers from the words of a collection whose model
                    // cannot run here; vector mode cannot.
                    Err(error @ Error::EmbeddingModelUnavailable { .. })
                        if query.mode == SearchMode::Hybrid =>
                    {
                        skipped.push(Skipped {
                            step: "vector",
                            reason: format!("{error}; text matches only for '{}'", target.name),
                        });
                    }
                    Err(error) => return Err(error),
                }
            }
        }
        let query_embedding_ms = if vectors.is_empty() {
            0.0
        } else {
            elapsed_ms(embedding_started)
        };
        let search_started = Instant::now();
        let candidates = query.limit;
        let rerank_text = query.text.clone();
        let mut hits =
            tokio::task::spawn_blocking(move || -> Result<Vec<SearchHit>, IndexError> {
                let mut hits = Vec::new();
                let words_only = SearchQuery {
                    mode: SearchMode::Text,
                    ..query.clone()
                };
                for target in &targets {
                    let vector = vectors.get(target.indexes.model());
                    let asked = match (query.mode, vector) {
                        (SearchMode::Hybrid, None) => &words_only,
                        _ => &query,
                    };
                    let found = search_collection(
                        &target.snapshot,
                        &target.indexes,
                        asked,
                        vector.map(|vector| vector.as_slice()),
                        at,
                    )?;
                    hits.extend(found.into_iter().map(|(memory, score)| SearchHit {
                        memory,
                        score,
                        collection: target.name.clone(),
                    }));
                }
                if targets.len() > 1 {
                    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
                    hits.truncate(candidates);
                }
                Ok(hits)
            })
            .await
            .map_err(|error| Error::TaskFailed {
                task: "search",
                reason: error.to_string(),
            })?
            .map_err(index_unavailable)?;
        metrics.record_stage(Stage::Search, search_started.elapsed());
        if let (Some(llm), true) = (&llm, wants_rerank && hits.len() > 1) {
            if let Err(reason) = self
                .rerank_hits(tenant, &**llm, &rerank_text, &mut hits)
                .await
            {
                skipped.push(Skipped {
                    step: "rerank",
                    reason,
                });
            }
        }
        hits.truncate(limit);
        let hits = Arc::new(hits);
        // An answer a failed LLM step degraded is not kept: the next try may do better.
        if skipped.is_empty() || llm.is_none() {
            self.caches.store_results(key, hits.clone());
        }
        Ok(SearchOutcome {
            hits,
            query_embedding_ms,
            search_ms: elapsed_ms(search_started),
            cached: false,
            skipped,
        })
    }

    /// The query as the LLM rewrote it for retrieval, or why not.
    async fn rewrite_query(
        &self,
        tenant: &TenantId,
        llm: &dyn Llm,
        text: &str,
    ) -> std::result::Result<String, String> {
        let response = llm
            .chat(memvault_llm::rewrite_request(text))
            .await
            .map_err(|error| format!("the LLM call failed: {error}"))?;
        self.llms
            .record_usage(tenant, Purpose::Rewrite, llm.model(), false, response.usage)
            .await;
        memvault_llm::parse_rewrite(&response.content)
            .ok_or_else(|| "the LLM's rewrite was not usable".to_owned())
    }

    /// Reorders the hits as the LLM ranks them, or says why not.
    async fn rerank_hits(
        &self,
        tenant: &TenantId,
        llm: &dyn Llm,
        text: &str,
        hits: &mut Vec<SearchHit>,
    ) -> std::result::Result<(), String> {
        let candidates: Vec<(String, String)> = hits
            .iter()
            .map(|hit| (hit.memory.id.clone(), hit.memory.text.clone()))
            .collect();
        let ids: Vec<String> = candidates.iter().map(|(id, _)| id.clone()).collect();
        let response = llm
            .chat(memvault_llm::rerank_request(text, &candidates))
            .await
            .map_err(|error| format!("the LLM call failed: {error}"))?;
        self.llms
            .record_usage(tenant, Purpose::Rerank, llm.model(), false, response.usage)
            .await;
        let order = memvault_llm::parse_rerank(&response.content, &ids)
            .ok_or_else(|| "the LLM's ranking was not usable".to_owned())?;
        let mut by_id: std::collections::HashMap<String, SearchHit> = hits
            .drain(..)
            .map(|hit| (hit.memory.id.clone(), hit))
            .collect();
        hits.extend(order.iter().filter_map(|id| by_id.remove(id)));
        Ok(())
    }

    /// The memories nearest to memory `id` by its own embedding: not itself, not archived,
    /// not superseded or expired.
    pub async fn related(
        &self,
        access: &CollectionAccess<Read>,
        id: &str,
        limit: usize,
        min_score: f32,
    ) -> Result<SearchOutcome> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let started = Instant::now();
        let target = self.search_target(tenant, collection)?;
        let anchor =
            target
                .snapshot
                .memories
                .get(id)
                .cloned()
                .ok_or_else(|| Error::MemoryNotFound {
                    collection: collection.clone(),
                    id: id.to_owned(),
                })?;
        let vector = match target.indexes.vector.vector(anchor.index_key) {
            Some(vector) => vector,
            None => self.stored_embedding(tenant, collection, id).await?,
        };
        let anchor_id = anchor.id.clone();
        let now = self.tree.now();
        let hits = tokio::task::spawn_blocking(move || -> Result<Vec<SearchHit>, IndexError> {
            let filter = SearchFilter::default();
            let accept =
                |memory: &MemoryRecord| memory.id != anchor_id && filter.accepts(memory, now);
            let found = vector_candidates(
                target.snapshot.as_ref(),
                &target.indexes,
                &vector,
                limit,
                false,
                &accept,
            )?;
            Ok(found
                .into_iter()
                .filter(|(_, similarity)| *similarity >= min_score)
                .filter_map(|(key, similarity)| {
                    target.snapshot.by_key(key).map(|memory| SearchHit {
                        memory: memory.clone(),
                        score: similarity,
                        collection: target.name.clone(),
                    })
                })
                .collect())
        })
        .await
        .map_err(|error| Error::TaskFailed {
            task: "search",
            reason: error.to_string(),
        })?
        .map_err(index_unavailable)?;
        Ok(SearchOutcome {
            hits: Arc::new(hits),
            query_embedding_ms: 0.0,
            search_ms: elapsed_ms(started),
            cached: false,
            skipped: Vec::new(),
        })
    }

    /// Semantic delete: removes up to `limit` memories whose similarity to `query` is at
    /// least `min_score` (archived, superseded and expired ones included: forgetting means
    /// gone). Returns what was deleted, best match first.
    pub async fn forget(
        &self,
        access: &CollectionAccess<Write>,
        query: &str,
        min_score: f32,
        limit: usize,
    ) -> Result<Vec<SearchHit>> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let target = self.search_target(tenant, collection)?;
        let vector = self.query_embedding(target.indexes.model(), query).await?;
        let snapshot = target.snapshot.clone();
        let indexes = target.indexes.clone();
        let matches = tokio::task::spawn_blocking(move || {
            vector_candidates(
                snapshot.as_ref(),
                &indexes,
                &vector,
                limit,
                true,
                &|_: &MemoryRecord| true,
            )
        })
        .await
        .map_err(|error| Error::TaskFailed {
            task: "search",
            reason: error.to_string(),
        })?
        .map_err(index_unavailable)?;
        let mut deleted = Vec::new();
        for (key, similarity) in matches {
            if similarity < min_score {
                continue;
            }
            let Some(memory) = target.snapshot.by_key(key).cloned() else {
                continue;
            };
            match self.memories.delete(access, &memory.id).await {
                Ok(()) => deleted.push(SearchHit {
                    memory,
                    score: similarity,
                    collection: collection.clone(),
                }),
                // Deleted by someone else meanwhile: nothing left to forget.
                Err(error) if error.is_not_found() => {}
                Err(error) => return Err(error),
            }
        }
        Ok(deleted)
    }

    /// The query's embedding by `model`, cached by model and text.
    async fn query_embedding(&self, model: &EmbeddingModel, text: &str) -> Result<Arc<Vec<f32>>> {
        let cache_key = format!("{}\u{0}{}\u{0}{text}", model.name, model.dimensions);
        if let Some(vector) = self.caches.embedding(&cache_key) {
            self.metrics.increment(Counter::QueryEmbeddingCacheHit);
            return Ok(vector);
        }
        self.metrics.increment(Counter::QueryEmbeddingCacheMiss);
        let vector = Arc::new(self.embedding.embed_text(model, text.to_owned()).await?);
        self.caches.store_embedding(cache_key, vector.clone());
        Ok(vector)
    }

    async fn stored_embedding(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        id: &str,
    ) -> Result<Vec<f32>> {
        let (store, tenant, name, key) = (
            self.store.clone(),
            tenant.clone(),
            collection.clone(),
            id.to_owned(),
        );
        let stored = tokio::task::spawn_blocking(move || store.memory(&tenant, &name, &key))
            .await
            .map_err(|error| Error::TaskFailed {
                task: "storage task",
                reason: error.to_string(),
            })??;
        stored
            .map(|memory| memory.embedding)
            .ok_or_else(|| Error::MemoryNotFound {
                collection: collection.clone(),
                id: id.to_owned(),
            })
    }

    /// The one collection asked for, or every collection of the tenant the agent may
    /// read (restricted ones without a grant are left out).
    fn search_targets(&self, agent: &Agent, scope: Option<&CollectionName>) -> Result<Vec<Target>> {
        let tenant = &agent.tenant_id;
        match scope {
            Some(name) => Ok(vec![self.search_target(tenant, name)?]),
            None => {
                let snapshot = self.tree.tenant_handle(tenant)?.snapshot();
                snapshot
                    .collections
                    .values()
                    .filter(|entry| self.authorizer.may_read(agent, &entry.record))
                    .map(|entry| self.search_target(tenant, &entry.record.name))
                    .collect()
            }
        }
    }

    fn search_target(&self, tenant: &TenantId, name: &CollectionName) -> Result<Target> {
        let handle = self.tree.collection_entry(tenant, name)?.handle;
        let indexes = handle
            .indexes
            .load_full()
            .ok_or_else(|| Error::Restarting {
                what: format!("collection '{name}'"),
            })?;
        Ok(Target {
            name: name.clone(),
            snapshot: handle.snapshot(),
            handle,
            indexes,
        })
    }
}

fn skipped_steps(query: &SearchQuery, reason: &str) -> Vec<Skipped> {
    [("rewrite", query.rewrite), ("rerank", query.rerank)]
        .into_iter()
        .filter(|(_, asked)| *asked)
        .map(|(step, _)| Skipped {
            step,
            reason: reason.to_owned(),
        })
        .collect()
}

/// Every input of the answer: the request, the moment it is about (for a search of now:
/// the next moment a memory's truth changes by itself), and the identity and version of
/// each collection searched.
fn cache_key(
    tenant: &TenantId,
    scope: Option<&CollectionName>,
    targets: &[Target],
    query: &SearchQuery,
    at: DateTime<Utc>,
    as_of: bool,
) -> u64 {
    let versions: Vec<(u64, u64, Option<DateTime<Utc>>)> = targets
        .iter()
        .map(|target| {
            let boundary = (!as_of)
                .then(|| target.snapshot.next_boundary(at))
                .flatten();
            (target.handle.id, target.snapshot.version, boundary)
        })
        .collect();
    let as_of = as_of.then_some(at);
    let filter = &query.filter;
    let metadata = filter
        .metadata
        .as_ref()
        .map(|metadata| serde_json::Value::Object(metadata.clone()).to_string());
    fingerprint((
        tenant.as_str(),
        scope.map(CollectionName::as_str),
        versions,
        &query.text,
        query.limit,
        query.min_score.to_bits(),
        query.mode,
        query.fusion,
        as_of,
        (query.rewrite, query.rerank),
        (
            &filter.category,
            &filter.container_tag,
            metadata,
            filter.include_archived,
        ),
    ))
}

fn index_unavailable(error: IndexError) -> Error {
    Error::IndexFailed(error.to_string())
}

fn elapsed_ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}
