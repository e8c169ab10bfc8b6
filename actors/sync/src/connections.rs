//! [`Connections`], the managed connectors' use cases: create, list, get, delete, sync
//! now, runs, OAuth start and callback, the scheduler's tick and the operator's figures. A run takes the connection's lock,
//! opens its sealed credentials (renewing an expiring OAuth token first), runs the engine
//! of `memvault-connectors` with [`ConnectionSink`] writing the memories, and records the
//! run and the connection's new status.

use std::collections::BTreeMap;
use std::sync::Arc;

use dashmap::DashMap;

use chrono::{DateTime, Utc};
use memvault_connectors::engine::{self, Checkpoint, Cursor, RunLimits, Sink};
use memvault_connectors::oauth;
use memvault_connectors::provider::{Context, Credentials, ProviderError, Record};
use memvault_connectors::{ProviderKind, SyncError};
use memvault_storage::{
    ConnectionRecord, ConnectionStatus, OAuthStateRecord, SyncRunRecord, SyncedRecord, TenantId,
};
use memvault_types::limits::MEMORY_TEXT_MAX_CHARS;
use memvault_types::{ErrorCode, Failure};
use rand::distributions::{Alphanumeric, DistString};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use memvault_core::memory::{MemoryPatch, NewMemory};
use memvault_core::service::{CollectionAccess, Read, Write};
use memvault_core::{blocking, Agent, Error, Memvault, Result};

use crate::jobs::group_of;
use crate::settings::{self, RUNS_KEPT};
use crate::Runtime;

/// The longest interval a connection may ask for: a week.
const MAX_INTERVAL_MINUTES: u64 = 7 * 24 * 60;
/// The longest `last_error` kept.
const ERROR_MAX_CHARS: usize = 500;

/// New records stored per write when a page has many: one write is embedded while the
/// one before is stored.
const RECORDS_PER_WRITE: usize = 32;

/// Managed connectors of a tenant.
#[derive(Clone)]
pub struct Connections {
    /// The memory service the sink writes through, and the access rule.
    pub(crate) root: Memvault,
    /// What the runtime owns: settings, the provider client, run locks, the sync jobs.
    pub(crate) runtime: Arc<Runtime>,
}

/// A connection to create (validated field by field by the edge; the provider's own
/// rules are checked here).
#[derive(Debug, Clone)]
pub struct NewConnection {
    pub provider: String,
    pub name: Option<String>,
    pub container_tag: Option<String>,
    pub config: Map<String, Value>,
    pub credentials: Map<String, Value>,
}

/// A connection as clients see it: never its credentials.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionView {
    pub id: String,
    pub provider: String,
    pub name: Option<String>,
    pub collection: String,
    pub container_tag: Option<String>,
    pub config: Value,
    pub status: ConnectionStatus,
    pub last_error: Option<String>,
    pub consecutive_failures: u32,
    /// The newest modification time a complete sync saw (or the provider's change token).
    pub cursor: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub last_sync_at: Option<DateTime<Utc>>,
    pub next_sync_at: Option<DateTime<Utc>>,
}

impl From<&ConnectionRecord> for ConnectionView {
    fn from(record: &ConnectionRecord) -> Self {
        ConnectionView {
            id: record.id.clone(),
            provider: record.provider.clone(),
            name: record.name.clone(),
            collection: record.collection.to_string(),
            container_tag: record.container_tag.clone(),
            config: record.config.clone(),
            status: record.status,
            last_error: record.last_error.clone(),
            consecutive_failures: record.consecutive_failures,
            cursor: cursor_of(record).display(),
            created_at: record.created_at,
            updated_at: record.updated_at,
            last_sync_at: record.last_sync_at,
            next_sync_at: if record.status == ConnectionStatus::Paused {
                None
            } else {
                record.next_sync_at
            },
        }
    }
}

/// What a sync did.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncOutcome {
    pub synced: u64,
    pub unchanged: u64,
    pub deleted: u64,
    pub cursor: Option<String>,
    pub status: ConnectionStatus,
    pub error: Option<String>,
    pub run: SyncRunRecord,
}

/// One slot per connection: its runs (scheduled or manual) never overlap, and a run that
/// finishes leaves its outcome for whoever waited on it.
#[derive(Default)]
pub struct RunLocks(DashMap<String, Arc<RunSlot>>);

/// A connection's run lock and the last outcome of a run under it.
pub struct RunSlot {
    /// Held for the whole of a run (and while the connection is deleted).
    pub lock: tokio::sync::Mutex<()>,
    /// Bumped after each run has stored its outcome in `last`; a "sync now" that finds a
    /// run in progress waits for the bump and answers with that run's outcome.
    finished: tokio::sync::watch::Sender<u64>,
    /// What the latest finished run gave (`None` when it ended in an error).
    last: std::sync::Mutex<Option<SyncOutcome>>,
}

impl Default for RunSlot {
    fn default() -> Self {
        Self {
            lock: tokio::sync::Mutex::new(()),
            finished: tokio::sync::watch::Sender::new(0),
            last: std::sync::Mutex::new(None),
        }
    }
}

impl RunSlot {
    /// A receiver to take before trying the lock, so a run finishing in between is seen.
    pub fn watch(&self) -> tokio::sync::watch::Receiver<u64> {
        self.finished.subscribe()
    }

    /// Records a finished run's outcome, then wakes the callers waiting on it.
    pub fn publish(&self, outcome: Option<SyncOutcome>) {
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = outcome;
        self.finished.send_modify(|runs| *runs += 1);
    }

    /// The outcome of the run `watch` saw finish.
    pub fn last(&self) -> Option<SyncOutcome> {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl RunLocks {
    pub fn of(&self, connection: &str) -> Arc<RunSlot> {
        self.0.entry(connection.to_owned()).or_default().clone()
    }

    pub fn forget(&self, connection: &str) {
        self.0.remove(connection);
    }
}

/// Runs and failed runs of one provider in a window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderRuns {
    pub runs: u64,
    pub errors: u64,
    pub last_run: Option<DateTime<Utc>>,
}

/// A sink's failure where a request waits on it (deleting a connection's memories).
fn sink_error(failure: Failure) -> Error {
    Error::Invalid(failure.detail)
}

fn cursor_of(record: &ConnectionRecord) -> Cursor {
    serde_json::from_value(record.cursor.clone()).unwrap_or_default()
}

fn kind_of(record: &ConnectionRecord) -> Result<ProviderKind> {
    ProviderKind::parse(&record.provider)
        .ok_or_else(|| Error::Invalid(format!("unknown provider '{}'", record.provider)))
}

/// The memory id of a provider record: the same on every run, so an interrupted write is
/// found and replaced, never doubled.
fn memory_id_of(connection: &str, record: &str) -> String {
    let digest = Sha256::digest(format!("{connection}\u{0}{record}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    // A version-8 (custom) UUID.
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    uuid::Uuid::from_bytes(bytes).to_string()
}

/// The provider's error as a connection shows it: never a credential.
fn scrub(text: &str, credentials: &Credentials) -> String {
    let mut clean = text.to_owned();
    for secret in credentials.secrets() {
        clean = clean.replace(&secret, "[redacted]");
    }
    clean.chars().take(ERROR_MAX_CHARS).collect()
}

/// The `validation` message of a provider value in the SPEC's terms.
fn check_provider(name: &str) -> Result<ProviderKind> {
    if name == "postgres" {
        return Err(Error::ProviderNotSupported(
            "postgres is not synced server-side: run the self-hosted recipe (README, \"Syncing a Postgres table\"), which reads rows newer than a cursor and calls the bulk endpoint".to_owned(),
        ));
    }
    ProviderKind::parse(name).ok_or_else(|| {
        Error::Invalid(format!(
            "provider must be one of notion, slack, gdrive, gmail, linear, confluence, hubspot (postgres is a self-hosted recipe); got '{name}'"
        ))
    })
}

fn check_config(config: &Map<String, Value>) -> Result<()> {
    if let Some(interval) = config.get("sync_interval_minutes") {
        match interval.as_u64() {
            Some(minutes) if (1..=MAX_INTERVAL_MINUTES).contains(&minutes) => {}
            _ => {
                return Err(Error::Invalid(format!(
                "config.sync_interval_minutes must be an integer from 1 to {MAX_INTERVAL_MINUTES}"
            )))
            }
        }
    }
    Ok(())
}

impl Connections {
    fn store(&self) -> Arc<dyn memvault_storage::Store> {
        self.root.store().clone()
    }

    fn settings(&self) -> &settings::ConnectorSettings {
        &self.runtime.settings
    }

    /// `server.public_url`: where the OAuth callback and its landing page are.
    pub fn public_url(&self) -> &str {
        &self.settings().public_url
    }

    /// Creates a connection writing to the collection `access` opens.
    pub async fn create(
        &self,
        access: &CollectionAccess<Write>,
        new: NewConnection,
    ) -> Result<ConnectionView> {
        let kind = check_provider(&new.provider)?;
        check_config(&new.config)?;
        let config = Value::Object(new.config);
        let credentials = Credentials(new.credentials);
        let implementation = self.settings().catalog.provider(kind);
        implementation
            .validate(&config, &credentials)
            .map_err(Error::Invalid)?;
        if kind == ProviderKind::Confluence {
            self.check_site(&config).await?;
        }
        let record = self.record(
            access,
            kind,
            new.name,
            new.container_tag,
            config,
            &credentials,
        )?;
        let store = self.store();
        let stored = record.clone();
        blocking(move || store.put_connection(&stored)).await?;
        Ok(ConnectionView::from(&record))
    }

    fn record(
        &self,
        access: &CollectionAccess<Write>,
        kind: ProviderKind,
        name: Option<String>,
        container_tag: Option<String>,
        config: Value,
        credentials: &Credentials,
    ) -> Result<ConnectionRecord> {
        let sealed = self.root.secrets()?.seal(
            &serde_json::to_vec(&credentials.0)
                .map_err(|error| Error::Invalid(error.to_string()))?,
        );
        let now = self.root.now();
        let mut record = ConnectionRecord {
            id: uuid::Uuid::now_v7().to_string(),
            tenant_id: access.tenant().clone(),
            provider: kind.as_str().to_owned(),
            name,
            collection: access.collection().clone(),
            container_tag,
            config,
            credentials: sealed,
            key_id: access.agent().key_id.clone(),
            status: ConnectionStatus::Active,
            last_error: None,
            consecutive_failures: 0,
            cursor: json!({}),
            checkpoint: None,
            created_at: now,
            updated_at: now,
            last_sync_at: None,
            next_sync_at: None,
            last_reconciled_at: None,
        };
        record.next_sync_at = Some(settings::next_due(&record, now));
        Ok(record)
    }

    /// Confluence's site must be an http(s) URL that is not a private address (unless the
    /// operator allows private targets).
    async fn check_site(&self, config: &Value) -> Result<()> {
        let raw = config["base_url"].as_str().unwrap_or_default();
        let url = memvault_webhooks::guard::parse_target(raw).map_err(|reason| {
            Error::ConnectionTargetRejected(format!("config.base_url: {reason}"))
        })?;
        memvault_webhooks::guard::check_target(&url, self.settings().allow_private_targets)
            .await
            .map_err(|reason| Error::ConnectionTargetRejected(format!("config.base_url: {reason}")))
    }

    /// The tenant's connections, oldest first.
    pub async fn list(&self, agent: &Agent) -> Result<Vec<ConnectionView>> {
        let store = self.store();
        let tenant = agent.tenant_id.clone();
        let records = blocking(move || store.connections(&tenant)).await?;
        Ok(records.iter().map(ConnectionView::from).collect())
    }

    async fn load(&self, tenant: &TenantId, id: &str) -> Result<ConnectionRecord> {
        let store = self.store();
        let (tenant, wanted) = (tenant.clone(), id.to_owned());
        blocking(move || store.connection(&tenant, &wanted))
            .await?
            .ok_or_else(|| Error::ConnectionNotFound(id.to_owned()))
    }

    pub async fn get(&self, agent: &Agent, id: &str) -> Result<ConnectionView> {
        Ok(ConnectionView::from(
            &self.load(&agent.tenant_id, id).await?,
        ))
    }

    /// Removes the connection, its runs and its record map; with `delete_memories` also
    /// the memories it synced. A run in progress finishes first.
    pub async fn delete(&self, agent: &Agent, id: &str, delete_memories: bool) -> Result<()> {
        let record = self.load(&agent.tenant_id, id).await?;
        let slot = self.runtime.locks.of(id);
        let _held = slot.lock.lock().await;
        if delete_memories {
            let access = self
                .root
                .authorizer()
                .authorize::<Write>(agent, record.collection.clone())?;
            let sink = ConnectionSink::new(self.root.clone(), &record, access)?;
            let ids = sink.stored_ids().await.map_err(sink_error)?;
            sink.delete(&ids).await.map_err(sink_error)?;
        }
        let store = self.store();
        let (tenant, wanted) = (agent.tenant_id.clone(), id.to_owned());
        let removed = blocking(move || store.delete_connection(&tenant, &wanted)).await?;
        self.runtime.locks.forget(id);
        // A retry held by the connection's pause runs now, finds it gone, and is done.
        let _ = self.runtime.queue.resume(&group_of(&agent.tenant_id, id));
        if removed {
            Ok(())
        } else {
            Err(Error::ConnectionNotFound(id.to_owned()))
        }
    }

    /// The connection's runs, newest first.
    pub async fn runs(&self, agent: &Agent, id: &str, limit: usize) -> Result<Vec<SyncRunRecord>> {
        self.load(&agent.tenant_id, id).await?;
        let store = self.store();
        let (tenant, wanted) = (agent.tenant_id.clone(), id.to_owned());
        blocking(move || store.runs(&tenant, &wanted, limit)).await
    }

    /// Syncs now. When a run of the connection is in progress (a scheduled one, or one
    /// resumed after a restart), this joins it and answers with its outcome instead of
    /// walking the provider a second time. A sync the provider refuses is an outcome with
    /// status `error` or `paused`, not an `Err`.
    pub async fn sync(&self, agent: &Agent, id: &str) -> Result<SyncOutcome> {
        let record = self.load(&agent.tenant_id, id).await?;
        let slot = self.runtime.locks.of(&record.id);
        // Watched before the lock is tried, so a run that ends in between is not missed.
        let mut finished = slot.watch();
        if slot.lock.try_lock().is_err() && finished.changed().await.is_ok() {
            if let Some(outcome) = slot.last() {
                return Ok(outcome);
            }
        }
        let mut outcome = self.run(record, "manual").await?;
        // A manual run counts like a scheduled one toward the connection's pause, and
        // its success ends a pause.
        let result = match outcome.status {
            ConnectionStatus::Active => Ok(()),
            status => Err(Failure::new(
                ErrorCode::ConnectorUpstreamFailed,
                format!("the sync ended {}", status.as_str()),
            )),
        };
        let failed = result.is_err();
        let group = group_of(&agent.tenant_id, id);
        let paused = self.runtime.queue.report(&group, result).await;
        if paused.as_ref().is_ok_and(|paused| *paused) {
            outcome.status = ConnectionStatus::Paused;
        } else if failed && self.runtime.queued.claim(id) {
            // Not paused yet: the sync job tries again after its back-off.
            let key = (agent.tenant_id.clone(), id.to_owned());
            let failures = self.load(&agent.tenant_id, id).await?.consecutive_failures;
            if self.runtime.queue.submit_failed(key, failures).is_err() {
                self.runtime.queued.release(id);
            }
        }
        Ok(outcome)
    }

    /// A failed connection's next try, as the sync job's back-off set it.
    pub(crate) async fn retry_at(&self, tenant: &TenantId, id: &str, due: DateTime<Utc>) {
        self.change(tenant, id, move |record| {
            if record.status == ConnectionStatus::Error {
                record.next_sync_at = Some(due);
            }
        })
        .await;
    }

    /// The connection's group has paused after its consecutive failures: its status
    /// says so, unless a run succeeded meanwhile.
    pub(crate) async fn mark_paused(&self, group: &str) {
        let Some((tenant, id)) = group.split_once('/') else {
            return;
        };
        let tenant = TenantId::from_stored(tenant);
        self.change(&tenant, id, |record| {
            if record.consecutive_failures > 0 {
                record.status = ConnectionStatus::Paused;
            }
        })
        .await;
    }

    /// Changes the stored connection in place (nothing when it is gone).
    async fn change(
        &self,
        tenant: &TenantId,
        id: &str,
        change: impl FnOnce(&mut ConnectionRecord) + Send + 'static,
    ) {
        let store = self.store();
        let (tenant, id) = (tenant.clone(), id.to_owned());
        let changed = blocking(move || {
            let Some(mut record) = store.connection(&tenant, &id)? else {
                return Ok(());
            };
            change(&mut record);
            store.put_connection(&record)
        })
        .await;
        if let Err(error) = changed {
            tracing::warn!(%error, "a connection's sync state was not stored");
        }
    }

    /// One run of the connection under its lock; its outcome is left for the callers that
    /// joined it.
    pub(crate) async fn run(&self, record: ConnectionRecord, trigger: &str) -> Result<SyncOutcome> {
        let slot = self.runtime.locks.of(&record.id);
        let held = slot.lock.lock().await;
        let outcome = self.run_locked(record, trigger).await;
        slot.publish(outcome.as_ref().ok().cloned());
        drop(held);
        outcome
    }

    async fn run_locked(&self, record: ConnectionRecord, trigger: &str) -> Result<SyncOutcome> {
        // Reloaded under the lock: a run that just finished moved the cursor.
        let mut record = self.load(&record.tenant_id, &record.id).await?;
        let started = self.root.now();
        let (result, credentials) = self.attempt_caught(&mut record).await;
        let finished = self.root.now();
        let mut run = SyncRunRecord {
            id: uuid::Uuid::now_v7().to_string(),
            tenant_id: record.tenant_id.clone(),
            connection_id: record.id.clone(),
            provider: record.provider.clone(),
            status: "ok".to_owned(),
            synced_count: 0,
            unchanged_count: 0,
            deleted_count: 0,
            error: None,
            trigger: trigger.to_owned(),
            created_at: started,
            finished_at: finished,
        };
        match result {
            Ok(attempt) => {
                run.synced_count = attempt.report.synced;
                run.unchanged_count = attempt.report.unchanged;
                run.deleted_count = attempt.report.deleted + attempt.reconciled;
                run.status = if attempt.report.complete {
                    "ok"
                } else {
                    "partial"
                }
                .to_owned();
                if attempt.report.complete {
                    record.cursor =
                        serde_json::to_value(&attempt.report.cursor).unwrap_or_default();
                    record.checkpoint = None;
                }
                if attempt.reconciled_at.is_some() {
                    record.last_reconciled_at = attempt.reconciled_at;
                }
                record.status = ConnectionStatus::Active;
                record.last_error = None;
                record.consecutive_failures = 0;
                record.last_sync_at = Some(finished);
                record.next_sync_at = Some(settings::next_due(&record, finished));
            }
            Err(failure) => {
                let message = scrub(&failure, &credentials);
                run.status = "error".to_owned();
                run.error = Some(message.clone());
                record.consecutive_failures += 1;
                // Paused stays paused; when to pause, and when to retry, is the sync
                // job's (see `jobs`): until then the next try is the regular one.
                if record.status != ConnectionStatus::Paused {
                    record.status = ConnectionStatus::Error;
                }
                record.last_error = Some(message);
                record.last_sync_at = Some(finished);
                record.next_sync_at = Some(settings::next_due(&record, finished));
            }
        }
        record.updated_at = finished;
        self.finish(&record, &run).await?;
        Ok(SyncOutcome {
            synced: run.synced_count,
            unchanged: run.unchanged_count,
            deleted: run.deleted_count,
            cursor: cursor_of(&record).display(),
            status: record.status,
            error: run.error.clone(),
            run,
        })
    }

    /// Stores the run and the connection's new state, unless the connection was deleted
    /// meanwhile (then neither is written back).
    async fn finish(&self, record: &ConnectionRecord, run: &SyncRunRecord) -> Result<()> {
        let store = self.store();
        let (record, run) = (record.clone(), run.clone());
        blocking(move || {
            let Some(current) = store.connection(&record.tenant_id, &record.id)? else {
                return Ok(());
            };
            let mut record = record;
            // The checkpoint the sink saved during the run is the newest one; after a second
            // failure in a row it is dropped, so a checkpoint the provider no longer takes
            // (an expired page token) cannot hold the connection: the window starts over.
            if run.status != "ok" {
                record.checkpoint = current.checkpoint;
            }
            if run.status == "error" && record.consecutive_failures >= 2 {
                record.checkpoint = None;
            }
            store.put_connection(&record)?;
            store.put_run(&run)?;
            store.trim_runs(&record.tenant_id, &record.id, RUNS_KEPT)?;
            Ok(())
        })
        .await
    }

    /// [`Self::attempt`], with a panic anywhere in it (a provider's bug) turned into a
    /// failed run whose reason says so: it is recorded and counts toward the pause like
    /// any other failure, and the connection is never left locked or silently stuck.
    async fn attempt_caught(
        &self,
        record: &mut ConnectionRecord,
    ) -> (std::result::Result<Attempt, String>, Credentials) {
        use futures_util::FutureExt;
        let before = record.clone();
        let caught = std::panic::AssertUnwindSafe(self.attempt(record))
            .catch_unwind()
            .await;
        match caught {
            Ok(finished) => finished,
            Err(panic) => {
                let reason = panic
                    .downcast_ref::<&str>()
                    .map(|text| (*text).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".to_owned());
                tracing::error!(connection = %before.id, provider = %before.provider, %reason, "a connector sync panicked");
                // What the run changed before it panicked is not trusted.
                *record = before;
                let credentials = self.open(record).unwrap_or_default();
                (
                    Err(format!(
                        "the sync failed unexpectedly (a panic in the {} provider): {reason}",
                        record.provider
                    )),
                    credentials,
                )
            }
        }
    }

    /// The run's work: open the credentials (renewing an OAuth token first), then the
    /// engine, then a reconciliation when one is due. Errors are texts for `last_error`.
    async fn attempt(
        &self,
        record: &mut ConnectionRecord,
    ) -> (std::result::Result<Attempt, String>, Credentials) {
        let mut credentials = match self.open(record) {
            Ok(credentials) => credentials,
            Err(error) => return (Err(error.to_string()), Credentials::default()),
        };
        let result = self.attempt_with(record, &mut credentials).await;
        (result, credentials)
    }

    async fn attempt_with(
        &self,
        record: &mut ConnectionRecord,
        credentials: &mut Credentials,
    ) -> std::result::Result<Attempt, String> {
        let kind = kind_of(record).map_err(|error| error.to_string())?;
        let implementation = self.settings().catalog.provider(kind);
        if !self.root.has_tenant(&record.tenant_id) {
            return Err("the account is being erased".to_owned());
        }
        let agent = self
            .agent_of(&record.tenant_id, &record.key_id)
            .map_err(|error| error.to_string())?;
        let access = self
            .root
            .authorizer()
            .authorize::<Write>(&agent, record.collection.clone())
            .map_err(|error| format!("the connection may not write to its collection: {error}"))?;
        self.renew(kind, record, credentials)
            .await
            .map_err(|error| describe(&error))?;
        let connectors = self.settings();
        let base_url = if kind == ProviderKind::Confluence {
            record.config["base_url"]
                .as_str()
                .unwrap_or_default()
                .trim_end_matches('/')
                .to_owned()
        } else {
            connectors.base_url(kind)
        };
        let http = &self.runtime.http;
        let cx = Context {
            http,
            base_url: &base_url,
            credentials,
            config: &record.config,
        };
        let sink = ConnectionSink::new(self.root.clone(), record, access)
            .map_err(|error| error.to_string())?;
        let resume: Option<Checkpoint> = record
            .checkpoint
            .clone()
            .and_then(|value| serde_json::from_value(value).ok());
        let limits = RunLimits {
            max_pages: (connectors.max_pages_per_run > 0).then_some(connectors.max_pages_per_run),
        };
        let report = engine::sync(
            implementation,
            &cx,
            &cursor_of(record),
            resume,
            &sink,
            limits,
        )
        .await
        .map_err(|error| describe_sync(&error))?;
        let mut attempt = Attempt {
            report,
            reconciled: 0,
            reconciled_at: None,
        };
        let now = self.root.now();
        let due = record.last_reconciled_at.is_none_or(|at| {
            now - at >= chrono::Duration::from_std(connectors.reconcile_every).unwrap_or_default()
        });
        // The first complete sync needs none: it stored what exists.
        if attempt.report.complete && due {
            if record.last_reconciled_at.is_some() {
                attempt.reconciled = engine::reconcile(implementation, &cx, &sink)
                    .await
                    .map_err(|error| {
                        format!("reconciling deletions failed: {}", describe_sync(&error))
                    })?;
            }
            attempt.reconciled_at = Some(now);
        }
        Ok(attempt)
    }

    fn open(&self, record: &ConnectionRecord) -> Result<Credentials> {
        let secrets = self.root.secrets()?;
        let plain = secrets.open(&record.credentials).map_err(|_| {
            Error::Invalid(
                "the connection's credentials cannot be opened with this server's key".to_owned(),
            )
        })?;
        let map: Map<String, Value> = serde_json::from_slice(&plain).map_err(|_| {
            Error::Invalid("the connection's credentials are unreadable".to_owned())
        })?;
        Ok(Credentials(map))
    }

    /// Renews an OAuth access token that expires soon (gdrive, gmail, and any token that
    /// came with a refresh token and an expiry), sealing the new one before the sync.
    async fn renew(
        &self,
        kind: ProviderKind,
        record: &mut ConnectionRecord,
        credentials: &mut Credentials,
    ) -> std::result::Result<(), ProviderError> {
        let Some(refresh_token) = credentials.get("refresh_token").map(str::to_owned) else {
            return Ok(());
        };
        let expires_at = credentials
            .get("expires_at")
            .and_then(|text| DateTime::parse_from_rfc3339(text).ok())
            .map(|at| at.with_timezone(&Utc));
        if !kind.refreshes() && expires_at.is_none() {
            return Ok(());
        }
        if !oauth::needs_refresh(expires_at, self.root.now()) {
            return Ok(());
        }
        let app = self.settings().app(kind).ok_or_else(|| {
            ProviderError::Reconnect(format!(
                "the server has no OAuth app for {kind} to renew the token with"
            ))
        })?;
        let grant = oauth::refresh(&self.runtime.http, kind, app, &refresh_token).await?;
        let mut renewed = credentials.0.clone();
        renewed.extend(grant.credentials());
        *credentials = Credentials(renewed);
        let secrets = self
            .root
            .secrets()
            .map_err(|error| ProviderError::Invalid(error.to_string()))?;
        record.credentials = secrets.seal(&serde_json::to_vec(&credentials.0).unwrap_or_default());
        let store = self.store();
        let stored = record.clone();
        blocking(move || {
            // Only the credentials change here; the rest is written when the run ends.
            if let Some(mut current) = store.connection(&stored.tenant_id, &stored.id)? {
                current.credentials = stored.credentials;
                store.put_connection(&current)?;
            }
            Ok(())
        })
        .await
        .map_err(|error: Error| ProviderError::Transient(error.to_string()))
    }

    /// The agent a connection writes as: the key that created it, while it is active.
    fn agent_of(&self, tenant: &TenantId, key_id: &str) -> Result<Agent> {
        self.root
            .authorizer()
            .agent_of_key(tenant, key_id)
            .map_err(|error| match error {
                Error::KeyInactive(_) => Error::Invalid(format!(
                    "the API key that created this connection ({key_id}) is revoked or expired; create the connection again with an active key"
                )),
                other => other,
            })
    }

    /// Starts an OAuth flow: a single-use state bound to the tenant and key, and the
    /// provider's authorize URL with the callback on `server.public_url`.
    pub async fn oauth_start(
        &self,
        access: &CollectionAccess<Write>,
        provider_name: &str,
        name: Option<String>,
        container_tag: Option<String>,
        config: Map<String, Value>,
    ) -> Result<String> {
        let kind = check_provider(provider_name)?;
        if !kind.has_oauth() {
            return Err(Error::ProviderNotSupported(format!(
                "{kind} has no OAuth flow: create the connection with its token in `credentials` (POST /v1/memory/connections)"
            )));
        }
        check_config(&config)?;
        let app = self.settings().app(kind).ok_or_else(|| {
            Error::OAuthNotConfigured(format!(
                "the server has no OAuth app for {kind}: its operator sets connectors.{kind}.client_id and client_secret"
            ))
        })?;
        let state = Alphanumeric.sample_string(&mut rand::thread_rng(), 43);
        let redirect_uri = format!(
            "{}/v1/memory/connections/oauth/{kind}/callback",
            self.settings().public_url.trim_end_matches('/')
        );
        let url = oauth::authorize_url(kind, app, &redirect_uri, &state)
            .map_err(Error::OAuthNotConfigured)?;
        let now = self.root.now();
        let record = OAuthStateRecord {
            state_hash: hex::encode(Sha256::digest(state.as_bytes())),
            tenant_id: access.tenant().clone(),
            key_id: access.agent().key_id.clone(),
            provider: kind.as_str().to_owned(),
            collection: access.collection().clone(),
            name,
            container_tag,
            config: Value::Object(config),
            redirect_uri,
            created_at: now,
            expires_at: now
                + chrono::Duration::from_std(self.settings().oauth_state_ttl).unwrap_or_default(),
        };
        let store = self.store();
        blocking(move || {
            store.prune_oauth_states(now)?;
            store.put_oauth_state(&record)
        })
        .await?;
        Ok(url)
    }

    /// The provider sent the browser back: takes the state (once), exchanges the code and
    /// stores the token sealed as a new connection.
    pub async fn oauth_callback(
        &self,
        provider_name: &str,
        code: Option<&str>,
        state: Option<&str>,
        denied: Option<&str>,
    ) -> Result<ConnectionView> {
        let kind = check_provider(provider_name)?;
        let state = state
            .filter(|state| !state.is_empty())
            .ok_or(Error::OAuthStateInvalid)?;
        let hash = hex::encode(Sha256::digest(state.as_bytes()));
        let store = self.store();
        let taken = blocking(move || store.take_oauth_state(&hash)).await?;
        let flow = taken
            .filter(|flow| flow.provider == kind.as_str() && flow.expires_at > self.root.now())
            .ok_or(Error::OAuthStateInvalid)?;
        if let Some(reason) = denied {
            let reason: String = reason.chars().take(100).collect();
            return Err(Error::Invalid(format!(
                "the provider did not grant access ({reason}); start again"
            )));
        }
        let code = code
            .filter(|code| !code.is_empty())
            .ok_or_else(|| Error::Invalid("the callback has no code".to_owned()))?;
        let app = self.settings().app(kind).ok_or_else(|| {
            Error::OAuthNotConfigured(format!("the server has no OAuth app for {kind}"))
        })?;
        let grant = oauth::exchange(&self.runtime.http, kind, app, code, &flow.redirect_uri)
            .await
            .map_err(|error| {
                Error::ConnectorUpstream(format!(
                    "the {kind} token exchange failed: {}",
                    describe(&error)
                ))
            })?;
        let agent = self.agent_of(&flow.tenant_id, &flow.key_id)?;
        let access = self
            .root
            .authorizer()
            .authorize::<Write>(&agent, flow.collection.clone())?;
        let mut config = flow.config.as_object().cloned().unwrap_or_default();
        for (key, value) in &grant.details {
            if matches!(key.as_str(), "workspace_id" | "workspace_name" | "team") {
                config.entry(key.clone()).or_insert(value.clone());
            }
        }
        let record = self.record(
            &access,
            kind,
            flow.name,
            flow.container_tag,
            Value::Object(config),
            &Credentials(grant.credentials()),
        )?;
        let store = self.store();
        let stored = record.clone();
        blocking(move || store.put_connection(&stored)).await?;
        Ok(ConnectionView::from(&record))
    }

    /// The scheduler's tick: submits every due connection that is not queued or
    /// running to the sync jobs (which run `concurrent_runs` at once).
    pub(crate) async fn tick(&self) -> std::result::Result<(), Failure> {
        let connections = self.all().await?;
        let now = self.root.now();
        for connection in connections {
            if !settings::is_due(&connection, now)
                || !self.root.has_tenant(&connection.tenant_id)
                || !self.runtime.queued.claim(&connection.id)
            {
                continue;
            }
            let id = connection.id.clone();
            if let Err(error) = self
                .runtime
                .queue
                .submit((connection.tenant_id, id.clone()))
            {
                self.runtime.queued.release(&id);
                return Err(Failure::new(ErrorCode::ActorUnavailable, error.to_string()));
            }
        }
        Ok(())
    }

    /// Every connection of every tenant.
    pub(crate) async fn all(&self) -> Result<Vec<ConnectionRecord>> {
        let store = self.store();
        blocking(move || store.all_connections()).await
    }

    /// A scheduled run of the connection, when it still exists and is still due (a
    /// "sync now" may have run it meanwhile); the status it ended in, `None` when it did
    /// not run.
    pub(crate) async fn run_scheduled(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> Result<Option<ConnectionStatus>> {
        if !self.root.has_tenant(tenant) {
            return Ok(None);
        }
        let record = match self.load(tenant, id).await {
            Ok(record) => record,
            Err(Error::ConnectionNotFound(_)) => return Ok(None),
            Err(error) => return Err(error),
        };
        let running = self.runtime.locks.of(id).lock.try_lock().is_err();
        // A "sync now" in progress stands for this run.
        if running || !settings::is_due(&record, self.root.now()) {
            return Ok(None);
        }
        Ok(Some(self.run(record, "schedule").await?.status))
    }

    /// Runs and failed runs per provider since `since` (operator view).
    pub async fn provider_runs(
        &self,
        since: DateTime<Utc>,
    ) -> Result<BTreeMap<String, ProviderRuns>> {
        let store = self.store();
        let runs = blocking(move || store.runs_since(since)).await?;
        let mut figures: BTreeMap<String, ProviderRuns> = BTreeMap::new();
        for run in runs {
            let entry = figures.entry(run.provider.clone()).or_default();
            entry.runs += 1;
            if run.status == "error" {
                entry.errors += 1;
            }
            entry.last_run = entry.last_run.max(Some(run.created_at));
        }
        Ok(figures)
    }

    /// Connections per status across the server (operator view).
    pub async fn status_counts(&self) -> Result<BTreeMap<&'static str, u64>> {
        let store = self.store();
        let connections = blocking(move || store.all_connections()).await?;
        let mut counts = BTreeMap::new();
        for connection in connections {
            *counts.entry(connection.status.as_str()).or_insert(0) += 1;
        }
        Ok(counts)
    }
}

struct Attempt {
    report: engine::Report,
    reconciled: u64,
    reconciled_at: Option<DateTime<Utc>>,
}

fn describe(error: &ProviderError) -> String {
    match error {
        ProviderError::Unauthorized(reason) => format!(
            "the provider refused the credentials ({reason}); update the connection's token, or reconnect"
        ),
        ProviderError::Reconnect(reason) => format!(
            "the OAuth grant was revoked or expired ({reason}); reconnect through GET /v1/memory/connections/oauth/{{provider}}/start"
        ),
        other => other.to_string(),
    }
}

fn describe_sync(error: &SyncError) -> String {
    match error {
        SyncError::Provider(error) => describe(error),
        SyncError::Sink(reason) => format!("storing the records failed: {reason}"),
    }
}

/// memvault's side of a run: the provider's records become memories of the connection's
/// collection (upserted by record id, hash-skipped by the engine), with their record map.
pub(crate) struct ConnectionSink {
    root: Memvault,
    tenant: TenantId,
    connection: String,
    provider: String,
    container_tag: Option<String>,
    access: CollectionAccess<Write>,
    read: CollectionAccess<Read>,
}

impl ConnectionSink {
    fn new(
        root: Memvault,
        record: &ConnectionRecord,
        access: CollectionAccess<Write>,
    ) -> Result<ConnectionSink> {
        let read = root
            .authorizer()
            .authorize::<Read>(access.agent(), record.collection.clone())?;
        Ok(ConnectionSink {
            root,
            tenant: record.tenant_id.clone(),
            connection: record.id.clone(),
            provider: record.provider.clone(),
            container_tag: record.container_tag.clone(),
            access,
            read,
        })
    }

    fn memory_of(&self, record: &Record, hash: &str) -> NewMemory {
        let mut text = match (record.title.trim(), record.text.trim()) {
            ("", body) => body.to_owned(),
            (title, "") => title.to_owned(),
            (title, body) if body.starts_with(title) => body.to_owned(),
            (title, body) => format!("{title}\n\n{body}"),
        };
        let mut metadata = Map::new();
        metadata.insert(
            "connection_id".into(),
            Value::String(self.connection.clone()),
        );
        metadata.insert("record_id".into(), Value::String(record.id.clone()));
        metadata.insert("title".into(), Value::String(record.title.clone()));
        if let Some(url) = &record.url {
            metadata.insert("url".into(), Value::String(url.clone()));
        }
        if let Some(author) = &record.author {
            metadata.insert("author".into(), Value::String(author.clone()));
        }
        metadata.insert(
            "modified_at".into(),
            Value::String(
                record
                    .modified
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            ),
        );
        metadata.insert("content_hash".into(), Value::String(hash.to_owned()));
        let length = text.chars().count();
        if length > MEMORY_TEXT_MAX_CHARS {
            text = text.chars().take(MEMORY_TEXT_MAX_CHARS).collect();
            metadata.insert("truncated_from_chars".into(), json!(length));
        }
        NewMemory {
            text,
            importance: 0.5,
            category: "general".to_owned(),
            source: self.provider.clone(),
            metadata,
            container_tag: self.container_tag.clone(),
            images: Vec::new(),
        }
    }
}

#[async_trait::async_trait]
impl Sink for ConnectionSink {
    async fn hashes(&self, ids: &[String]) -> std::result::Result<Vec<Option<String>>, Failure> {
        let store = self.root.store().clone();
        let (tenant, connection, ids) =
            (self.tenant.clone(), self.connection.clone(), ids.to_vec());
        let found = blocking(move || store.synced_records(&tenant, &connection, &ids))
            .await
            .map_err(Failure::from)?;
        // A record whose memory was deleted by hand is stored again.
        Ok(found
            .into_iter()
            .map(|entry| {
                entry
                    .filter(|entry| {
                        self.root
                            .memories()
                            .get(&self.read, &entry.memory_id)
                            .is_ok()
                    })
                    .map(|entry| entry.hash)
            })
            .collect())
    }

    async fn upsert(&self, records: Vec<(Record, String)>) -> std::result::Result<(), Failure> {
        let memories = self.root.memories();
        let mut fresh_ids = Vec::new();
        let mut fresh = Vec::new();
        let mut mapped = Vec::with_capacity(records.len());
        for (record, hash) in &records {
            let id = memory_id_of(&self.connection, &record.id);
            let memory = self.memory_of(record, hash);
            if memories.get(&self.read, &id).is_ok() {
                let patch = MemoryPatch {
                    text: Some(memory.text),
                    metadata: Some(memory.metadata),
                    ..MemoryPatch::default()
                };
                memories
                    .patch(&self.access, &id, patch)
                    .await
                    .map_err(Failure::from)?;
            } else {
                fresh_ids.push(id.clone());
                fresh.push(memory);
            }
            mapped.push(SyncedRecord {
                record_id: record.id.clone(),
                memory_id: id,
                hash: hash.clone(),
            });
        }
        if !fresh.is_empty() {
            // Embedded in writes of RECORDS_PER_WRITE, one while the one before is stored.
            memories
                .create_in_batches(&self.access, fresh, Some(fresh_ids), RECORDS_PER_WRITE)
                .await
                .map_err(Failure::from)?;
        }
        let store = self.root.store().clone();
        let (tenant, connection) = (self.tenant.clone(), self.connection.clone());
        blocking(move || store.put_synced_records(&tenant, &connection, &mapped))
            .await
            .map_err(Failure::from)
    }

    async fn delete(&self, ids: &[String]) -> std::result::Result<u64, Failure> {
        let store = self.root.store().clone();
        let (tenant, connection, wanted) =
            (self.tenant.clone(), self.connection.clone(), ids.to_vec());
        let found = blocking(move || store.synced_records(&tenant, &connection, &wanted))
            .await
            .map_err(Failure::from)?;
        let memories = self.root.memories();
        let mut deleted = 0;
        for entry in found.into_iter().flatten() {
            match memories.delete(&self.access, &entry.memory_id).await {
                Ok(()) => deleted += 1,
                Err(Error::MemoryNotFound { .. } | Error::CollectionNotFound(_)) => {}
                Err(error) => return Err(error.into()),
            }
        }
        let store = self.root.store().clone();
        let (tenant, connection, wanted) =
            (self.tenant.clone(), self.connection.clone(), ids.to_vec());
        blocking(move || store.delete_synced_records(&tenant, &connection, &wanted))
            .await
            .map_err(Failure::from)?;
        Ok(deleted)
    }

    async fn stored_ids(&self) -> std::result::Result<Vec<String>, Failure> {
        let store = self.root.store().clone();
        let (tenant, connection) = (self.tenant.clone(), self.connection.clone());
        blocking(move || store.synced_record_ids(&tenant, &connection))
            .await
            .map_err(Failure::from)
    }

    async fn checkpoint(
        &self,
        checkpoint: Option<&Checkpoint>,
    ) -> std::result::Result<(), Failure> {
        let store = self.root.store().clone();
        let (tenant, connection) = (self.tenant.clone(), self.connection.clone());
        let value =
            checkpoint.map(|checkpoint| serde_json::to_value(checkpoint).unwrap_or_default());
        blocking(move || {
            let Some(mut current) = store.connection(&tenant, &connection)? else {
                return Ok(false);
            };
            current.checkpoint = value;
            store.put_connection(&current)?;
            Ok(true)
        })
        .await
        .map_err(|error: Error| Failure::from(error))
        .and_then(|present| {
            if present {
                Ok(())
            } else {
                Err(Failure::new(
                    ErrorCode::ConnectionNotFound,
                    "the connection was deleted during the run",
                )
                .permanent())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_ids_are_stable_per_connection_and_record() {
        let a = memory_id_of("c1", "r1");
        assert_eq!(a, memory_id_of("c1", "r1"));
        assert_ne!(a, memory_id_of("c2", "r1"));
        assert_ne!(a, memory_id_of("c1", "r2"));
        assert!(uuid::Uuid::parse_str(&a).is_ok());
    }

    #[test]
    fn errors_never_hold_a_credential() {
        let mut map = Map::new();
        map.insert("token".into(), json!("xoxb-secret-token"));
        let text = scrub("refused xoxb-secret-token at the door", &Credentials(map));
        assert!(!text.contains("xoxb-secret-token"));
        assert!(text.contains("[redacted]"));
    }

    #[test]
    fn postgres_is_a_recipe_and_unknown_providers_are_named() {
        assert!(matches!(
            check_provider("postgres"),
            Err(Error::ProviderNotSupported(_))
        ));
        assert!(matches!(check_provider("dropbox"), Err(Error::Invalid(_))));
        assert_eq!(check_provider("gmail").unwrap(), ProviderKind::Gmail);
    }
}
