//! Graph memory: remember (now or as a job), contradictions and the profile.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_storage::Store;
use memvault_storage::{
    CollectionName, CreatedBy, EmbeddingModel, ExtractJobRecord, JobState, MemoryRecord,
    RememberedFact, TenantId,
};

use super::access::{CollectionAccess, Read, Write};
use super::embedding::Embedding;
use super::intelligence::{LlmChoice, Purpose};
use super::quotas::Quotas;
use super::tree::Tree;
use super::{Authorizer, ExtractionQueue, Llms};
use crate::agent::Agent;
use crate::call::blocking;
use crate::collection::{CollectionMessage, CollectionSnapshot, IncomingFact};
use crate::error::{Error, Result};

pub use crate::memory::{Extractor, RememberInput, RememberOutcome};
use memvault_extract::ExtractedFact;
use memvault_index::search::filter::is_current;
use memvault_metrics::{Counter, Metrics, Stage};
use memvault_types::limits::{DEFAULT_IMPORTANCE, PROFILE_MAX_FACTS};

/// One pair of the contradictions list: a fact and the older one it superseded, or the
/// time-bound fact that sets an older one aside for now.
#[derive(Debug, Clone)]
pub struct Contradiction {
    pub current: Arc<MemoryRecord>,
    pub superseded: Arc<MemoryRecord>,
    /// When the older fact was replaced or set aside.
    pub since: Option<DateTime<Utc>>,
    /// For a set-aside: when it ends and the older fact is current again.
    pub until: Option<DateTime<Utc>>,
}

impl Contradiction {
    /// The pair for the superseded memory `id`, when both it and its successor are still
    /// in the snapshot.
    pub(crate) fn of(snapshot: &CollectionSnapshot, id: &str) -> Option<Self> {
        let superseded = snapshot.memories.get(id)?.clone();
        let current = snapshot
            .memories
            .get(superseded.superseded_by.as_deref()?)?
            .clone();
        Some(Contradiction {
            since: superseded.superseded_at,
            until: None,
            current,
            superseded,
        })
    }

    /// The pair for a memory set aside at `now`, when its override is still there.
    fn set_aside(
        snapshot: &CollectionSnapshot,
        memory: &Arc<MemoryRecord>,
        now: DateTime<Utc>,
    ) -> Option<Self> {
        let suspension = memory.suspension_at(now)?;
        let current = snapshot.memories.get(suspension.by.as_str())?.clone();
        Some(Contradiction {
            since: Some(suspension.from),
            until: Some(suspension.until),
            current,
            superseded: memory.clone(),
        })
    }
}

/// Every value a memory's slot has had, oldest first.
#[derive(Debug, Clone)]
pub struct SlotHistory {
    /// `None` for a memory without a slot: its history is itself.
    pub slot: Option<String>,
    /// Each value, with whether it is current truth now.
    pub values: Vec<(Arc<MemoryRecord>, bool)>,
}

#[derive(Debug, Clone)]
pub struct Profile {
    pub profile: String,
    pub based_on: usize,
    /// `llm` or `extractive`.
    pub generated_by: &'static str,
    /// Why the LLM was not used, when one could have been.
    pub skipped: Option<String>,
}

fn created_by(agent: &Agent) -> CreatedBy {
    CreatedBy {
        id: agent.key_id.clone(),
        label: agent.label.clone(),
    }
}

/// Graph memory: remember (now or as a job), extraction jobs, contradictions, profiles.
#[derive(Clone)]
pub struct Graph {
    pub(super) tree: Tree,
    pub(super) store: Arc<dyn Store>,
    pub(super) quotas: Quotas,
    pub(super) embedding: Embedding,
    pub(super) llms: Llms,
    pub(super) authorizer: Authorizer,
    pub(super) extraction: ExtractionQueue,
    pub(super) metrics: Arc<Metrics>,
}

impl Graph {
    /// Extracts and stores facts now, in the request.
    pub async fn remember(
        &self,
        access: &CollectionAccess<Write>,
        input: RememberInput,
    ) -> Result<RememberOutcome> {
        let (agent, collection) = (access.agent(), access.collection());
        self.remember_as(&agent.tenant_id, created_by(agent), collection, input)
            .await
    }

    /// Persists a job and queues it; the job survives a crash and runs after a restart.
    pub async fn submit_remember(
        &self,
        access: &CollectionAccess<Write>,
        input: RememberInput,
    ) -> Result<ExtractJobRecord> {
        let (agent, collection) = (access.agent(), access.collection());
        // Fail now, not in the job, when the tenant's collection cannot exist.
        self.tree.tenant_handle(&agent.tenant_id)?;
        let now = self.tree.now();
        let job = ExtractJobRecord {
            id: format!("job_{}", uuid::Uuid::now_v7().simple()),
            tenant_id: agent.tenant_id.clone(),
            collection: collection.clone(),
            content: input.content,
            importance: input.importance,
            created_by: created_by(agent),
            state: JobState::Queued,
            facts: Vec::new(),
            detail: None,
            attempts: 0,
            created_at: now,
            updated_at: now,
        };
        self.put_job(job.clone()).await?;
        self.extraction()
            .submit((job.tenant_id.clone(), job.id.clone()))
            .map_err(|error| Error::ExtractionUnavailable(error.to_string()))?;
        Ok(job)
    }

    /// A job, for an agent that may read its collection (a job shows the facts it
    /// stored).
    pub async fn extract_job(&self, agent: &Agent, id: &str) -> Result<ExtractJobRecord> {
        let (store, tenant, key) = (self.store.clone(), agent.tenant_id.clone(), id.to_owned());
        let job = blocking(move || store.job(&tenant, &key))
            .await?
            .ok_or_else(|| Error::JobNotFound(id.to_owned()))?;
        self.authorizer
            .authorize::<Read>(agent, job.collection.clone())?;
        Ok(job)
    }

    pub(crate) async fn put_job(&self, job: ExtractJobRecord) -> Result<()> {
        let store = self.store.clone();
        blocking(move || store.put_job(&job)).await
    }

    pub(crate) async fn remember_as(
        &self,
        tenant: &TenantId,
        created_by: CreatedBy,
        collection: &CollectionName,
        input: RememberInput,
    ) -> Result<RememberOutcome> {
        let now = self.tree.now();
        let choice = self.llms.llm_for(tenant, Purpose::Extract).await?;
        let (facts, extractor, detail) = match &choice {
            LlmChoice::Own(llm) | LlmChoice::Platform(llm) => {
                let extract_started = std::time::Instant::now();
                let result = memvault_extract::llm::extract(&**llm, &input.content, now).await;
                let metrics = &self.metrics;
                metrics.record_stage(Stage::LlmExtract, extract_started.elapsed());
                let (facts, usage) = match result {
                    Ok(extracted) => extracted,
                    Err(error) => {
                        metrics.increment(Counter::LlmExtractFailed);
                        self.llms
                            .record_usage(
                                tenant,
                                Purpose::Extract,
                                llm.model(),
                                choice.is_own(),
                                error.usage(),
                            )
                            .await;
                        return Err(match &error {
                            memvault_extract::llm::ExtractError::Llm { error: cause, .. }
                                if cause.is_transient() =>
                            {
                                Error::LlmUnreachable(error.to_string())
                            }
                            _ => Error::UpstreamFailed(error.to_string()),
                        });
                    }
                };
                self.llms
                    .record_usage(
                        tenant,
                        Purpose::Extract,
                        llm.model(),
                        choice.is_own(),
                        usage,
                    )
                    .await;
                (
                    facts.into_iter().map(incoming).collect(),
                    Extractor::Llm,
                    None,
                )
            }
            LlmChoice::OverCap { .. } => {
                let raw = IncomingFact {
                    category: "other".to_owned(),
                    text: input.content.trim().to_owned(),
                    slot: None,
                    value: input.content.trim().to_owned(),
                    valid_until: None,
                    embedding: Vec::new(),
                };
                let detail = choice.absence().map(|why| {
                    format!("extraction skipped: {why}; the content was stored as it is")
                });
                (vec![raw], Extractor::Skipped, detail)
            }
            LlmChoice::Unconfigured => (
                memvault_extract::rules::extract(&input.content, now)
                    .into_iter()
                    .map(incoming)
                    .collect(),
                Extractor::Rules,
                None,
            ),
        };
        let importance = input.importance.unwrap_or(DEFAULT_IMPORTANCE);
        let stored = self
            .store_facts(tenant, created_by, collection, facts, importance, now)
            .await?;
        Ok(match stored {
            Some(facts) => RememberOutcome {
                facts,
                extractor,
                detail,
            },
            None => RememberOutcome {
                facts: Vec::new(),
                extractor,
                detail: Some("no statement to remember was found in the content".to_owned()),
            },
        })
    }

    /// Makes the value of the superseded memory `id` current again, as a new memory
    /// written now with its text, category, slot and value: on its slot it supersedes the
    /// value that replaced it (or whatever holds the slot now). The older memory stays as
    /// it was, so the slot's history and `as_of` answer every moment as it was then.
    /// Answers the memory that holds the value now, and whether it is new (false when the
    /// value already holds the slot: nothing is written).
    pub async fn reinstate(
        &self,
        access: &CollectionAccess<Write>,
        id: &str,
    ) -> Result<(Arc<MemoryRecord>, bool)> {
        let (agent, collection) = (access.agent(), access.collection());
        let older = self
            .tree
            .collection_snapshot(access)?
            .memory(collection, id)?;
        if older.superseded_by.is_none() || older.slot.is_none() {
            // Not replaced by another value: nothing to reinstate, it stays as it is.
            return Ok((older, false));
        }
        let fact = IncomingFact {
            category: older.category.clone(),
            text: older.text.clone(),
            slot: older.slot.clone(),
            value: older.value.clone().unwrap_or_else(|| older.text.clone()),
            valid_until: None,
            embedding: Vec::new(),
        };
        let now = self.tree.now();
        let stored = self
            .store_facts(
                &agent.tenant_id,
                created_by(agent),
                collection,
                vec![fact],
                older.importance,
                now,
            )
            .await?
            .unwrap_or_default();
        let fact = stored
            .first()
            .ok_or_else(|| Error::Invalid(format!("memory {id} has no words to reinstate")))?;
        let memory = self
            .tree
            .collection_snapshot(access)?
            .memory(collection, &fact.id)?;
        Ok((memory, fact.relation != "duplicate"))
    }

    /// Embeds `facts` and hands them to the collection, which decides on each against
    /// its slot (see `collection::remember`); `None` when no fact has words.
    async fn store_facts(
        &self,
        tenant: &TenantId,
        created_by: CreatedBy,
        collection: &CollectionName,
        facts: Vec<IncomingFact>,
        importance: f64,
        now: DateTime<Utc>,
    ) -> Result<Option<Vec<RememberedFact>>> {
        self.quotas
            .admit(
                tenant,
                memvault_types::tiers::Growth::Memories(facts.len() as u64),
            )
            .await?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let model = self.embedding.collection_model(tenant, collection);
            let embedded = self.embed_facts(&model, facts.clone()).await?;
            if embedded.is_empty() {
                return Ok(None);
            }
            let handle = self.quotas.ensure_collection(tenant, collection).await?;
            let created_by = created_by.clone();
            let stored = self
                .tree
                .call_collection(&handle, |reply| CollectionMessage::Remember {
                    facts: embedded,
                    model,
                    importance,
                    created_by,
                    now,
                    reply,
                })
                .await;
            match stored {
                Err(Error::EmbeddingSwitched { .. }) if attempt < 3 => continue,
                stored => return stored.map(Some),
            }
        }
    }

    async fn embed_facts(
        &self,
        model: &EmbeddingModel,
        mut facts: Vec<IncomingFact>,
    ) -> Result<Vec<IncomingFact>> {
        facts.retain(|fact| !fact.text.trim().is_empty());
        if facts.is_empty() {
            return Ok(facts);
        }
        let texts = facts.iter().map(|fact| fact.text.clone()).collect();
        let embeddings = self.embedding.embed_texts(model, texts).await?;
        for (fact, embedding) in facts.iter_mut().zip(embeddings) {
            fact.embedding = embedding;
        }
        Ok(facts)
    }

    /// Pairs of a fact and the one it superseded, and of a time-bound fact and the one it
    /// sets aside for now; newest first.
    pub fn contradictions(
        &self,
        access: &CollectionAccess<Read>,
        limit: usize,
    ) -> Result<Vec<Contradiction>> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let snapshot = self
            .tree
            .collection_entry(tenant, collection)?
            .handle
            .snapshot();
        let now = self.tree.now();
        let mut pairs: Vec<Contradiction> = snapshot
            .set_aside_at(now)
            .filter_map(|memory| Contradiction::set_aside(&snapshot, memory, now))
            .collect();
        pairs.extend(
            snapshot
                .superseded
                .iter()
                .rev()
                .filter_map(|(_, id)| Contradiction::of(&snapshot, id))
                .take(limit),
        );
        pairs.sort_by(|a, b| {
            b.since
                .cmp(&a.since)
                .then_with(|| b.superseded.id.cmp(&a.superseded.id))
        });
        pairs.truncate(limit);
        Ok(pairs)
    }

    /// Every value the slot of memory `id` has had, oldest first (superseded, expired and
    /// set-aside ones included), each with whether it is current now.
    pub fn history(&self, access: &CollectionAccess<Read>, id: &str) -> Result<SlotHistory> {
        let snapshot = self.tree.collection_snapshot(access)?;
        let memory = snapshot.memory(access.collection(), id)?;
        let now = self.tree.now();
        let values: Vec<Arc<MemoryRecord>> = match &memory.slot {
            Some(slot) => snapshot.slot_history(slot).cloned().collect(),
            None => vec![memory.clone()],
        };
        Ok(SlotHistory {
            slot: memory.slot.clone(),
            values: values
                .into_iter()
                .map(|memory| {
                    let current = is_current(&memory, now);
                    (memory, current)
                })
                .collect(),
        })
    }

    /// What the collection knows about its user: current, unexpired, unarchived facts and
    /// preferences, summarised by the LLM when there is one, else grouped by type.
    pub async fn profile(&self, access: &CollectionAccess<Read>) -> Result<Profile> {
        let (tenant, collection) = (access.tenant(), access.collection());
        let snapshot = self
            .tree
            .collection_entry(tenant, collection)?
            .handle
            .snapshot();
        let now = self.tree.now();
        let mut facts: Vec<Arc<MemoryRecord>> = snapshot
            .memories
            .values()
            .filter(|memory| {
                is_current(memory, now)
                    && !memory.archived
                    && matches!(memory.category.as_str(), "fact" | "preference")
            })
            .cloned()
            .collect();
        facts.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        facts.truncate(PROFILE_MAX_FACTS);
        let based_on = facts.len();
        let mut skipped = None;
        if !facts.is_empty() {
            let choice = self.llms.llm_for(tenant, Purpose::Profile).await?;
            match choice.llm() {
                Some(llm) => {
                    let pairs: Vec<(String, String)> = facts
                        .iter()
                        .map(|memory| (memory.category.clone(), memory.text.clone()))
                        .collect();
                    match llm.chat(memvault_llm::profile_request(&pairs)).await {
                        Ok(response) => {
                            self.llms
                                .record_usage(
                                    tenant,
                                    Purpose::Profile,
                                    llm.model(),
                                    false,
                                    response.usage,
                                )
                                .await;
                            if let Some(profile) = memvault_llm::parse_profile(&response.content) {
                                return Ok(Profile {
                                    profile,
                                    based_on,
                                    generated_by: "llm",
                                    skipped: None,
                                });
                            }
                            skipped = Some("the LLM's profile was not usable".to_owned());
                        }
                        Err(error) => skipped = Some(format!("the LLM call failed: {error}")),
                    }
                }
                None if self.llms.has_platform_llm() => skipped = choice.absence(),
                None => {}
            }
        }
        Ok(Profile {
            profile: extractive_profile(&facts),
            based_on,
            generated_by: "extractive",
            skipped,
        })
    }

    fn extraction(&self) -> &memvault_jobs::JobQueue<crate::extraction::ExtractionJobs> {
        &self.extraction
    }
}

fn incoming(fact: ExtractedFact) -> IncomingFact {
    IncomingFact {
        category: fact.kind.as_str().to_owned(),
        text: fact.text,
        slot: fact.slot,
        value: fact.value,
        valid_until: fact.valid_until,
        embedding: Vec::new(),
    }
}

/// Facts, then preferences, one line each, newest first within a group.
fn extractive_profile(facts: &[Arc<MemoryRecord>]) -> String {
    let mut sections = Vec::new();
    for (category, heading) in [("fact", "Facts"), ("preference", "Preferences")] {
        let lines: Vec<String> = facts
            .iter()
            .filter(|memory| memory.category == category)
            .map(|memory| format!("- {}", memory.text))
            .collect();
        if !lines.is_empty() {
            sections.push(format!("{heading}:\n{}", lines.join("\n")));
        }
    }
    sections.join("\n\n")
}

/// What extraction jobs run: remember into a collection.
#[async_trait::async_trait]
impl crate::extraction::Remember for Graph {
    async fn remember_as(
        &self,
        tenant: &TenantId,
        created_by: memvault_storage::CreatedBy,
        collection: &CollectionName,
        input: RememberInput,
    ) -> Result<RememberOutcome> {
        Graph::remember_as(self, tenant, created_by, collection, input).await
    }
}
