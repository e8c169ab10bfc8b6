//! Re-embedding as a job kind: a collection whose vectors another model made than the
//! configured one is rebuilt with the configured model in the background, then switched
//! over in one write.
//!
//! One job per collection, found at start-up (`unfinished`: every collection whose
//! recorded model differs from the configured one), so nothing but the staged vectors
//! needs persisting. An attempt:
//!
//! 1. embeds, in batches of [`BATCH`], every memory that has no staged vector for its
//!    current index key, and stages each batch in the store ([`ReembedStore`]) before the
//!    next: a kill -9 loses at most one batch, and the next start resumes from what is
//!    staged;
//! 2. builds the new vector index from the staged vectors, off the actors;
//! 3. asks the tenant actor to switch: the collection actor checks that every memory has
//!    a staged vector (one written meanwhile has not: then the job stages it and asks
//!    again), stores every memory with its new vector and the record naming the new model
//!    in one atomic write, and swaps the index; readers see the old index or the new one,
//!    never a mix, since a search picks the model of the index it loaded.
//!
//! Search keeps answering from the old vectors until the switch (queries are embedded by
//! the model of the index they search), and writes meanwhile are embedded by the old model
//! and picked up by step 1. Progress is kept in [`ReembedProgress`] (collection health,
//! `memvault reembed`) and logged every [`LOG_EVERY`] memories.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use dashmap::DashMap;
use memvault_index::VectorIndex;
use memvault_jobs::{Backoff, Failure, JobKind, Outcome, Pending, RetryPolicy};
use memvault_storage::{CollectionName, EmbeddingModel, StagedEmbedding, Store, TenantId};

use crate::call::{blocking, call_actor};
use crate::collection::{CollectionHandle, Switch};
use crate::embedders::Embedders;
use crate::error::{Error, Result};
use crate::tenant::{TenantHandle, TenantMessage};

/// Texts embedded (and staged) per step.
pub const BATCH: usize = 64;
/// A progress line every this many memories.
const LOG_EVERY: usize = 1_000;
/// Switch requests one attempt makes while writes keep arriving.
const SWITCH_ROUNDS: usize = 5;
/// Longest the tenant actor may take to switch (one store write of every memory).
const SWITCH_TIMEOUT: Duration = Duration::from_secs(900);

/// A job: the collection to re-embed.
pub type ReembedKey = (TenantId, CollectionName);

/// How far a collection's re-embedding is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// The model the collection is being re-embedded with.
    pub target: EmbeddingModel,
    /// Memories with a vector by `target`, of `total`.
    pub done: usize,
    pub total: usize,
    pub started_at: DateTime<Utc>,
    /// Why the last attempt failed, while it waits to be retried.
    pub last_error: Option<String>,
}

/// Every re-embedding in progress, by collection, and the ones finished since the
/// process started; shared with health and the operator's overview (`memvault reembed`).
#[derive(Clone, Default)]
pub struct ReembedProgress {
    entries: Arc<DashMap<ReembedKey, Progress>>,
    finished: Arc<Mutex<Finished>>,
}

/// Re-embeddings that switched since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Finished {
    pub collections: usize,
    /// Memories the finished collections held when they switched.
    pub memories: usize,
}

impl ReembedProgress {
    pub fn get(&self, tenant: &TenantId, collection: &CollectionName) -> Option<Progress> {
        self.entries
            .get(&(tenant.clone(), collection.clone()))
            .map(|entry| entry.clone())
    }

    /// Every re-embedding in progress.
    pub fn all(&self) -> Vec<(ReembedKey, Progress)> {
        self.entries
            .iter()
            .map(|entry| (entry.key().clone(), entry.value().clone()))
            .collect()
    }

    /// The re-embeddings that switched since the process started.
    pub fn finished(&self) -> Finished {
        *self.finished.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves `key` from the running to the finished ones.
    fn finish(&self, key: &ReembedKey) {
        if let Some((_, progress)) = self.entries.remove(key) {
            let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
            finished.collections += 1;
            finished.memories += progress.total;
        }
    }

    fn update(&self, key: &ReembedKey, change: impl FnOnce(&mut Progress)) {
        if let Some(mut entry) = self.entries.get_mut(key) {
            change(&mut entry);
        }
    }
}

/// The re-embedding job kind.
pub struct ReembedJobs {
    store: Arc<dyn Store>,
    tenants: Arc<DashMap<TenantId, Arc<TenantHandle>>>,
    embedders: Embedders,
    progress: ReembedProgress,
    clock: Arc<dyn memvault_types::clock::Clock>,
}

impl ReembedJobs {
    pub fn new(
        store: Arc<dyn Store>,
        tenants: Arc<DashMap<TenantId, Arc<TenantHandle>>>,
        embedders: Embedders,
        progress: ReembedProgress,
        clock: Arc<dyn memvault_types::clock::Clock>,
    ) -> Self {
        Self {
            store,
            tenants,
            embedders,
            progress,
            clock,
        }
    }

    /// Every collection whose vectors another model made than the configured one.
    pub fn outdated(
        tenants: &DashMap<TenantId, Arc<TenantHandle>>,
        target: &EmbeddingModel,
    ) -> Vec<ReembedKey> {
        let mut keys: Vec<ReembedKey> = tenants
            .iter()
            .flat_map(|tenant| {
                let snapshot = tenant.snapshot();
                snapshot
                    .collections
                    .values()
                    .filter(|entry| **entry.handle.embedding.load() != *target)
                    .map(|entry| (entry.handle.tenant.clone(), entry.handle.name.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        keys.sort();
        keys
    }

    fn handle(&self, key: &ReembedKey) -> Option<Arc<CollectionHandle>> {
        let tenant = self.tenants.get(&key.0)?;
        let snapshot = tenant.snapshot();
        snapshot
            .collections
            .get(&key.1)
            .map(|entry| entry.handle.clone())
    }

    /// Runs one attempt; `Ok` once the collection is on the configured model (or gone).
    async fn reembed(&self, key: &ReembedKey) -> Result<()> {
        let target = self.embedders.current_model().clone();
        let label = format!("{}/{}", key.0, key.1);
        let mut built: Option<(VectorIndex, HashSet<u64>)> = None;
        for _ in 0..SWITCH_ROUNDS {
            let Some(handle) = self.handle(key) else {
                return Ok(());
            };
            if **handle.embedding.load() == target {
                return Ok(());
            }
            let staged = self.stage_missing(key, &handle, &target, &label).await?;
            let (vectors, indexed) = match built.take() {
                Some(built) => built,
                None => (
                    VectorIndex::new(target.dimensions)
                        .map_err(|error| Error::IndexFailed(error.to_string()))?,
                    HashSet::new(),
                ),
            };
            let (vectors, indexed) = tokio::task::spawn_blocking(move || {
                let mut indexed = indexed;
                let fresh: Vec<&StagedEmbedding> = staged
                    .iter()
                    .filter(|staged| !indexed.contains(&staged.key))
                    .collect();
                vectors.ensure_capacity(fresh.len())?;
                for staged in fresh {
                    vectors.add(staged.key, &staged.embedding)?;
                    indexed.insert(staged.key);
                }
                Ok::<_, memvault_index::IndexError>((vectors, indexed))
            })
            .await
            .map_err(|error| Error::TaskFailed {
                task: "building the re-embedded index",
                reason: error.to_string(),
            })?
            .map_err(|error| Error::IndexFailed(error.to_string()))?;
            match self.switch(key, &target, vectors).await? {
                Switch::Done => {
                    tracing::info!(collection = %label, model = %target, "re-embedding done");
                    return Ok(());
                }
                Switch::Behind { missing, vectors } => {
                    tracing::info!(
                        collection = %label,
                        missing,
                        "memories written during the re-embedding; embedding them too"
                    );
                    built = Some((*vectors, indexed));
                }
            }
        }
        Err(Error::TaskFailed {
            task: "re-embedding",
            reason: format!(
                "writes kept arriving; the switch is tried again after {SWITCH_ROUNDS} rounds"
            ),
        })
    }

    /// Embeds and stages every memory without a staged vector for its current key;
    /// returns everything staged.
    async fn stage_missing(
        &self,
        key: &ReembedKey,
        handle: &CollectionHandle,
        target: &EmbeddingModel,
        label: &str,
    ) -> Result<Vec<StagedEmbedding>> {
        let (store, (tenant, name)) = (self.store.clone(), key.clone());
        let mut staged = match blocking(move || store.staged_embeddings(&tenant, &name)).await? {
            Some((model, staged)) if model == *target => staged,
            _ => Vec::new(),
        };
        let have: HashSet<u64> = staged.iter().map(|staged| staged.key).collect();
        let snapshot = handle.snapshot();
        let mut todo: Vec<(u64, String, String)> = snapshot
            .memories
            .values()
            .filter(|memory| !have.contains(&memory.index_key))
            .map(|memory| (memory.index_key, memory.id.clone(), memory.text.clone()))
            .collect();
        todo.sort_by_key(|(key, _, _)| *key);
        let total = snapshot.memories.len();
        let mut done = total - todo.len();
        self.progress.update(key, |progress| {
            progress.total = total;
            progress.done = done;
        });
        if !todo.is_empty() {
            tracing::info!(
                collection = %label,
                model = %target,
                done,
                total,
                "re-embedding"
            );
        }
        let started = Instant::now();
        let mut logged = done / LOG_EVERY;
        for batch in todo.chunks(BATCH) {
            let texts = batch.iter().map(|(_, _, text)| text.clone()).collect();
            let vectors = self.embedders.embed(target, texts).await?;
            let fresh: Vec<StagedEmbedding> = batch
                .iter()
                .zip(vectors)
                .map(|((key, id, _), embedding)| StagedEmbedding {
                    key: *key,
                    id: id.clone(),
                    embedding,
                })
                .collect();
            let (store, (tenant, name), model, written) = (
                self.store.clone(),
                key.clone(),
                target.clone(),
                fresh.clone(),
            );
            blocking(move || store.stage_embeddings(&tenant, &name, &model, &written)).await?;
            staged.extend(fresh);
            done += batch.len();
            self.progress.update(key, |progress| {
                progress.done = done;
                progress.last_error = None;
            });
            if done / LOG_EVERY > logged {
                logged = done / LOG_EVERY;
                tracing::info!(
                    collection = %label,
                    done,
                    total,
                    per_second = (done as f64 / started.elapsed().as_secs_f64().max(1e-9)) as u64,
                    "re-embedding"
                );
            }
        }
        Ok(staged)
    }

    async fn switch(
        &self,
        key: &ReembedKey,
        target: &EmbeddingModel,
        vectors: VectorIndex,
    ) -> Result<Switch> {
        let tenant = self
            .tenants
            .get(&key.0)
            .map(|tenant| tenant.clone())
            .ok_or_else(|| Error::TenantNotFound(key.0.clone()))?;
        let actor = tenant.actor.load_full().ok_or_else(|| Error::Restarting {
            what: "the tenant".to_owned(),
        })?;
        let (name, model) = (key.1.clone(), target.clone());
        call_actor(
            &actor,
            |reply| TenantMessage::SwitchEmbeddings {
                name,
                model,
                vectors: Box::new(vectors),
                reply,
            },
            SWITCH_TIMEOUT,
            "the tenant",
        )
        .await
    }
}

#[async_trait]
impl JobKind for ReembedJobs {
    type Key = ReembedKey;
    const NAME: &'static str = "reembed";

    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            // A remote embedding endpoint may be down for a while: keep trying, slowly.
            max_attempts: 50,
            backoff: Backoff::new(Duration::from_secs(1), Duration::from_secs(300)),
        }
    }

    async fn unfinished(&self) -> std::result::Result<Vec<Pending<ReembedKey>>, Failure> {
        let target = self.embedders.current_model().clone();
        let keys = Self::outdated(&self.tenants, &target);
        let now = self.clock.now();
        for key in &keys {
            if let Some(handle) = self.handle(key) {
                tracing::info!(
                    collection = %format!("{}/{}", key.0, key.1),
                    from = %handle.embedding.load(),
                    to = %target,
                    memories = handle.snapshot().memories.len(),
                    "the configured embedding model differs from the collection's; re-embedding"
                );
                self.progress.entries.insert(
                    key.clone(),
                    Progress {
                        target: target.clone(),
                        done: 0,
                        total: handle.snapshot().memories.len(),
                        started_at: now,
                        last_error: None,
                    },
                );
            }
        }
        Ok(keys.into_iter().map(Pending::new).collect())
    }

    async fn run(&self, key: &ReembedKey, _attempt: u32) -> Outcome {
        match self.reembed(key).await {
            Ok(()) => {
                self.progress.finish(key);
                Outcome::Done
            }
            Err(error) => {
                let reason = error.to_string();
                self.progress
                    .update(key, |progress| progress.last_error = Some(reason));
                Outcome::Retry(error.into())
            }
        }
    }

    async fn retry_at(
        &self,
        key: &ReembedKey,
        attempts: u32,
        due: DateTime<Utc>,
        reason: &Failure,
    ) {
        tracing::warn!(
            collection = %format!("{}/{}", key.0, key.1),
            attempts,
            %due,
            %reason,
            "re-embedding failed; retrying (search answers from the old vectors meanwhile)"
        );
    }

    async fn give_up(&self, key: &ReembedKey, attempts: u32, reason: &Failure) {
        tracing::error!(
            collection = %format!("{}/{}", key.0, key.1),
            attempts,
            %reason,
            "re-embedding given up; the collection stays on its old model until the next start"
        );
        self.progress.update(key, |progress| {
            progress.last_error = Some(format!("given up after {attempts} attempts: {reason}"));
        });
    }
}
