//! Operator aggregates over every tenant: storage and LLM usage, and signups. Aggregates
//! only: nothing here names a tenant.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Datelike, Duration as ChronoDuration, NaiveDate, Utc};
use memvault_jobs::{JobMetricsSnapshot, RecurringSnapshot};
use memvault_metrics::Metrics;
use memvault_storage::{EmbeddingModel, Store, TenantId};

use super::background::Background;
use super::intelligence::month_of;
use super::quotas::Quotas;
use super::tree::Tree;
use super::ActorRestarts;
use crate::call::blocking;
use crate::embedders::Embedders;
use crate::error::Result;
use crate::reembed::{Finished, Progress, ReembedProgress};

/// Storage and LLM usage of every tenant over a window of days.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorUsage {
    pub days: u32,
    pub tenants: usize,
    /// Bytes every tenant's records take in the store now (not per window).
    pub db_bytes: u64,
    /// Bytes every tenant's stored files (uploads, dropped files) take now.
    pub files_bytes: u64,
    /// The months (`YYYY-MM`) whose usage is counted: usage is kept per month, so the
    /// window is widened to whole months.
    pub months: Vec<String>,
    /// One per purpose with any call, by purpose name.
    pub by_purpose: Vec<PurposeUsage>,
    pub total_cost_usd: f64,
    /// What the accounts of each tier hold now, by tier name.
    pub by_tier: Vec<TierUsage>,
}

/// LLM calls for one purpose (`extract`, `rewrite`, ...), over every tenant and model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PurposeUsage {
    pub purpose: String,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Estimated from the configured prices; a tenant's own LLM is included.
    pub cost_usd: f64,
}

/// What the accounts of one tier hold now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TierUsage {
    pub tier: String,
    pub tenants: u64,
    pub collections: u64,
    pub memories: u64,
    /// Bytes of their files in the platform's storage.
    pub files_bytes: u64,
}

/// Tenants created per day (there is no public signup yet: every tenant but the
/// admin-flagged ones counts as a signup).
#[derive(Debug, Clone, PartialEq)]
pub struct Signups {
    pub total: u64,
    /// Every day of the window, oldest first, zero days included.
    pub by_day: Vec<(NaiveDate, u64)>,
}

/// Which models made the service's vectors, and how far re-embedding towards the
/// configured one is. Aggregates: no collection or tenant is named.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingsOverview {
    /// The configured model: every new collection and every re-embedding uses it.
    pub model: EmbeddingModel,
    /// Collections by the model that made their vectors, the most used first.
    pub by_model: Vec<(EmbeddingModel, usize)>,
    /// Collections still on another model than the configured one.
    pub outdated: usize,
    /// Memories with a vector by the configured model, over every collection being
    /// re-embedded now, of `memories_total`.
    pub memories_done: usize,
    pub memories_total: usize,
    /// Re-embeddings whose last attempt failed (they are retried), and the latest reason.
    pub failing: usize,
    pub last_error: Option<String>,
    /// Re-embeddings that switched since the process started.
    pub finished: Finished,
}

/// What is degraded now (see [`Operator::supervision`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Supervision {
    pub degraded_tenants: u64,
    pub degraded_collections: u64,
    pub degraded_job_kinds: Vec<&'static str>,
    /// Resident loops (the audit writer, the webhook recorder) that keep failing.
    pub degraded_tasks: Vec<&'static str>,
    pub supervisors_down: Vec<&'static str>,
}

impl Supervision {
    pub fn is_degraded(&self) -> bool {
        self.degraded_tenants > 0
            || self.degraded_collections > 0
            || !self.degraded_job_kinds.is_empty()
            || !self.degraded_tasks.is_empty()
            || !self.supervisors_down.is_empty()
    }
}

/// What the operator of the service sees: usage, signups, jobs, restarts.
#[derive(Clone)]
pub struct Operator {
    pub(super) tree: Tree,
    pub(super) store: Arc<dyn Store>,
    pub(super) embedders: Embedders,
    pub(super) metrics: Arc<Metrics>,
    pub(super) quotas: Quotas,
    pub(super) reembed_progress: ReembedProgress,
    pub(super) background: Background,
    pub(super) restarts: memvault_types::RestartPolicy,
}

impl Operator {
    /// Every job kind's counters, since the process started.
    pub fn job_metrics(&self) -> Vec<(&'static str, JobMetricsSnapshot)> {
        self.background.job_metrics()
    }

    /// Which models made the service's vectors and how far re-embedding is.
    pub fn embeddings(&self) -> EmbeddingsOverview {
        let model = self.embedders.current_model().clone();
        let mut by_model: BTreeMap<EmbeddingModel, usize> = BTreeMap::new();
        for tenant in self.tree.tenants().iter() {
            for entry in tenant.snapshot().collections.values() {
                *by_model
                    .entry((**entry.handle.embedding.load()).clone())
                    .or_default() += 1;
            }
        }
        let outdated = by_model
            .iter()
            .filter(|(built_by, _)| **built_by != model)
            .map(|(_, count)| count)
            .sum();
        let mut by_model: Vec<(EmbeddingModel, usize)> = by_model.into_iter().collect();
        by_model.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let running = self.reembed_progress.all();
        let failing: Vec<&Progress> = running
            .iter()
            .map(|(_, progress)| progress)
            .filter(|progress| progress.last_error.is_some())
            .collect();
        EmbeddingsOverview {
            by_model,
            outdated,
            memories_done: running.iter().map(|(_, progress)| progress.done).sum(),
            memories_total: running.iter().map(|(_, progress)| progress.total).sum(),
            failing: failing.len(),
            last_error: failing
                .iter()
                .max_by_key(|progress| progress.started_at)
                .and_then(|progress| progress.last_error.clone()),
            finished: self.reembed_progress.finished(),
            model,
        }
    }

    /// Runs and failures of every recurring task, since the process started.
    pub fn recurring_metrics(&self) -> Vec<RecurringSnapshot> {
        self.background.scheduler.snapshot()
    }

    /// What is degraded now: actors and job kinds that keep failing, and top-level
    /// supervisors (the root actor, each job queue's supervisor) that are down. Counts
    /// and kind names only: no tenant data.
    pub fn supervision(&self) -> Supervision {
        let restarts = self.actor_restarts();
        let jobs = self.job_metrics();
        let mut supervisors_down = Vec::new();
        if !self.tree.is_running() {
            supervisors_down.push("root");
        }
        supervisors_down.extend(self.background.queues_down());
        let residents = self.background.residents();
        supervisors_down.extend(
            residents
                .iter()
                .filter(|resident| !resident.is_running())
                .map(|resident| resident.name()),
        );
        Supervision {
            degraded_tenants: restarts.degraded_tenants,
            degraded_collections: restarts.degraded_collections,
            degraded_job_kinds: jobs
                .iter()
                .filter(|(_, metrics)| metrics.degraded)
                .map(|(kind, _)| *kind)
                .collect(),
            degraded_tasks: residents
                .iter()
                .filter(|resident| resident.is_degraded())
                .map(|resident| resident.name())
                .collect(),
            supervisors_down,
        }
    }

    /// Restarts of failed tenant and collection actors since the process started, and
    /// how many are degraded now.
    pub fn actor_restarts(&self) -> ActorRestarts {
        let policy = &self.restarts;
        let now = std::time::Instant::now();
        let mut restarts = ActorRestarts::default();
        for tenant in self.tree.tenants().iter() {
            restarts.tenants += tenant.supervised.restarts();
            restarts.degraded_tenants += u64::from(tenant.supervised.is_degraded(policy, now));
            for entry in tenant.snapshot().collections.values() {
                let supervised = &entry.handle.supervised;
                restarts.collections += supervised.restarts();
                restarts.degraded_collections += u64::from(supervised.is_degraded(policy, now));
            }
        }
        restarts
    }

    /// The process's request and stage metrics (the HTTP edge records requests here).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Storage now and LLM usage in the months the last `days` days touch, over every
    /// tenant.
    pub async fn usage(&self, days: u32) -> Result<OperatorUsage> {
        let tenants: Vec<TenantId> = self
            .tree
            .tenants()
            .iter()
            .map(|entry| entry.key().clone())
            .collect();
        let months = months_touched(self.tree.now(), days);
        let store = self.store.clone();
        let window = months.clone();
        let (db_bytes, rows) = blocking(move || {
            let mut db_bytes = 0;
            let mut rows = Vec::new();
            for tenant in &tenants {
                db_bytes += store.tenant_bytes(tenant)?;
                for month in &window {
                    rows.extend(store.usage(tenant, month)?);
                }
            }
            Ok((db_bytes, rows))
        })
        .await?;
        let mut by_purpose: BTreeMap<String, PurposeUsage> = BTreeMap::new();
        for row in rows {
            let entry = by_purpose
                .entry(row.purpose.clone())
                .or_insert_with(|| PurposeUsage {
                    purpose: row.purpose.clone(),
                    ..PurposeUsage::default()
                });
            entry.calls += row.calls;
            entry.prompt_tokens += row.prompt_tokens;
            entry.completion_tokens += row.completion_tokens;
            entry.cost_usd += row.cost_usd;
        }
        let by_purpose: Vec<PurposeUsage> = by_purpose.into_values().collect();
        let mut files_bytes = 0;
        let tenants: Vec<TenantId> = self
            .tree
            .tenants()
            .iter()
            .map(|entry| entry.key().clone())
            .collect();
        let mut by_tier: BTreeMap<String, TierUsage> = BTreeMap::new();
        for tenant in &tenants {
            let Ok(handle) = self.tree.tenant_handle(tenant) else {
                continue; // erased meanwhile
            };
            let tier = handle.snapshot().record.tier.clone();
            let held = self.quotas.held(tenant).await?;
            files_bytes += held.storage_bytes;
            let usage = by_tier.entry(tier.clone()).or_insert_with(|| TierUsage {
                tier,
                ..TierUsage::default()
            });
            usage.tenants += 1;
            usage.collections += held.collections;
            usage.memories += held.memories;
            usage.files_bytes += held.storage_bytes;
        }
        Ok(OperatorUsage {
            by_tier: by_tier.into_values().collect(),
            days,
            tenants: self.tree.tenants().len(),
            db_bytes,
            files_bytes,
            months,
            total_cost_usd: by_purpose.iter().map(|usage| usage.cost_usd).sum(),
            by_purpose,
        })
    }

    /// Tenants created in the last `days` days (today included), per day.
    pub fn signups(&self, days: u32) -> Signups {
        let created: Vec<DateTime<Utc>> = self
            .tree
            .tenants()
            .iter()
            .map(|entry| entry.snapshot().record.clone())
            .filter(|record| !record.admin)
            .map(|record| record.created_at)
            .collect();
        // Tenants are stamped with the system clock, so the window is on it too.
        signups_by_day(&created, Utc::now().date_naive(), days)
    }
}

/// Every month (`YYYY-MM`) from the one `days` days before `now` to `now`'s.
fn months_touched(now: DateTime<Utc>, days: u32) -> Vec<String> {
    let first = (now - ChronoDuration::days(i64::from(days))).date_naive();
    let last = now.date_naive();
    let mut months = Vec::new();
    let (mut year, mut month) = (first.year(), first.month());
    while (year, month) <= (last.year(), last.month()) {
        months.push(format!("{year:04}-{month:02}"));
        (year, month) = if month == 12 {
            (year + 1, 1)
        } else {
            (year, month + 1)
        };
    }
    debug_assert_eq!(months.last(), Some(&month_of(now)));
    months
}

/// The window's days, oldest first, each with the creations that fell on it.
fn signups_by_day(created: &[DateTime<Utc>], today: NaiveDate, days: u32) -> Signups {
    let first = today - ChronoDuration::days(i64::from(days.max(1)) - 1);
    let mut by_day: Vec<(NaiveDate, u64)> = first
        .iter_days()
        .take_while(|day| *day <= today)
        .map(|day| (day, 0))
        .collect();
    let mut total = 0;
    for at in created {
        let day = at.date_naive();
        if day < first || day > today {
            continue;
        }
        let index = (day - first).num_days() as usize;
        if let Some((_, count)) = by_day.get_mut(index) {
            *count += 1;
            total += 1;
        }
    }
    Signups { total, by_day }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn the_window_is_widened_to_whole_months() {
        let now = Utc.with_ymd_and_hms(2025, 3, 10, 12, 0, 0).unwrap();
        assert_eq!(months_touched(now, 1), vec!["2025-03"]);
        assert_eq!(months_touched(now, 30), vec!["2025-02", "2025-03"]);
        let months = months_touched(now, 400);
        assert_eq!(months.first().map(String::as_str), Some("2024-02"));
        assert_eq!(months.len(), 14);
        let new_year = Utc.with_ymd_and_hms(2025, 1, 2, 0, 0, 0).unwrap();
        assert_eq!(months_touched(new_year, 7), vec!["2024-12", "2025-01"]);
    }

    #[test]
    fn signups_fill_every_day_of_the_window() {
        let today = NaiveDate::from_ymd_opt(2025, 3, 10).unwrap();
        let at = |day: u32, hour: u32| Utc.with_ymd_and_hms(2025, 3, day, hour, 0, 0).unwrap();
        let created = [at(10, 1), at(10, 23), at(8, 0), at(4, 12), at(3, 23)];
        let signups = signups_by_day(&created, today, 7);
        assert_eq!(signups.total, 4);
        assert_eq!(signups.by_day.len(), 7);
        assert_eq!(
            signups.by_day[0],
            (NaiveDate::from_ymd_opt(2025, 3, 4).unwrap(), 1)
        );
        assert_eq!(signups.by_day[4].1, 1);
        assert_eq!(signups.by_day[6], (today, 2));
        assert_eq!(signups_by_day(&created, today, 1).total, 2);
    }
}
