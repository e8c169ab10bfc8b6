//! A tenant's own database (`GET/PUT/DELETE /v1/memory/database/config`): a Postgres
//! database its data (collections, memories, staged embeddings, extraction jobs, ingest
//! batches, imports) lives in, while its account (tenant, keys, settings, usage, audit,
//! outbox, connectors) stays in the platform store.
//!
//! PUT checks the URL's host against the SSRF guard, runs a live self-test (connect
//! within a timeout, version, migrations, a probe row written and read back), saves the
//! connection string sealed, and queues a switch: a job ([`DatabaseSwitches`]) that copies
//! the tenant's data to the new database while its data calls wait
//! ([`RoutedStore::switch`]), then serves them from there and removes the platform's
//! copy. DELETE queues the switch back. The state (`copying`, `active`, `reverting`,
//! `failed`) is in the tenant's settings, so a crash resumes the switch; the copy starts
//! over (it clears what an interrupted one left). The connection string is never shown.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use dashmap::DashMap;
use memvault_jobs::{JobKind, JobQueue, Outcome, Pending, RetryPolicy};
use memvault_storage::crypto::SecretBox;
use memvault_storage::{
    copy_tenant_data, CopyProgress, DatabaseConfigRecord, DatabaseState, RoutedStore, Store,
    TenantId, TenantSettings,
};
use memvault_types::{Backoff, ErrorCode, Failure};

use super::{Settings, Tree};
use crate::call::blocking;
use crate::error::{Error, Result};
use crate::tenant::TenantMessage;
use memvault_webhooks::guard::check_database_target;

/// How long the self-test of a new database may take.
pub const SELF_TEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Opens a tenant's database: the seam between core and the Postgres store (server
/// implements it with `memvault_postgres::PgStore::open_checked`).
pub trait DatabaseOpener: Send + Sync + 'static {
    /// Connects to `url` within `timeout`, checks the server, applies the migrations and
    /// writes and reads back a probe row; blocking. The error says which step failed.
    fn open(&self, url: &str, timeout: Duration) -> std::result::Result<OpenedDatabase, String>;
}

/// Tenants' own databases, as the server offers them (`ServiceConfig::databases`).
#[derive(Clone)]
pub struct DatabaseSupport {
    pub opener: Arc<dyn DatabaseOpener>,
    /// Let a tenant's database be on a loopback, private, link-local or metadata address
    /// (off by default: SSRF protection).
    pub allow_private_targets: bool,
}

impl std::fmt::Debug for DatabaseSupport {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("DatabaseSupport")
            .field("allow_private_targets", &self.allow_private_targets)
            .finish_non_exhaustive()
    }
}

/// A tenant database that passed its self-test.
pub struct OpenedDatabase {
    pub store: Arc<dyn Store>,
    pub server_version: String,
}

/// A tenant's database as shown to it: never the connection string's password.
#[derive(Debug, Clone, PartialEq)]
pub struct DatabaseConfigView {
    /// `user@host:port/database`.
    pub target: String,
    pub server_version: String,
    pub state: DatabaseState,
    /// While a switch runs: how far its copy has come.
    pub progress: Option<CopyProgress>,
    pub detail: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What databases need at run time, shared by [`Settings`] and the switch jobs.
#[derive(Clone)]
pub(crate) struct TenantDatabases {
    pub(crate) routed: Arc<RoutedStore>,
    pub(crate) opener: Arc<dyn DatabaseOpener>,
    /// The copy in progress per tenant (`GET` shows it).
    pub(crate) progress: Arc<DashMap<TenantId, CopyProgress>>,
    /// Let a tenant's database be on a private address (off by default: SSRF).
    pub(crate) allow_private: bool,
}

pub(crate) type DatabaseQueue = JobQueue<DatabaseSwitches>;

/// Opens the own database of every tenant whose data is there, before the actors load
/// anything: a database that does not open is marked unreachable (its tenant's data
/// calls fail; nothing goes to the platform store by mistake) and logged.
pub(crate) async fn open_routes(
    routed: &Arc<RoutedStore>,
    opener: &Arc<dyn DatabaseOpener>,
    secrets: Option<&SecretBox>,
) -> Result<()> {
    let platform = routed.platform().clone();
    let tenants = blocking(move || {
        platform
            .tenants()?
            .into_iter()
            .map(|tenant| Ok((tenant.id.clone(), platform.tenant_settings(&tenant.id)?)))
            .collect::<memvault_storage::error::Result<Vec<(TenantId, TenantSettings)>>>()
    })
    .await?;
    for (tenant, settings) in tenants {
        let Some(database) = settings.database else {
            continue;
        };
        if !database.state.data_in_own() {
            continue;
        }
        let opened = match secrets {
            None => Err("no encryption key to open its connection string with".to_owned()),
            Some(secrets) => match secrets.open_string(&database.url_sealed) {
                Err(error) => Err(format!("its connection string does not unseal: {error}")),
                Ok(url) => {
                    let opener = opener.clone();
                    tokio::task::spawn_blocking(move || opener.open(&url, SELF_TEST_TIMEOUT))
                        .await
                        .unwrap_or_else(|error| Err(error.to_string()))
                        .map(|opened| opened.store)
                }
            },
        };
        match opened {
            Ok(store) => routed.route_to(&tenant, store),
            Err(reason) => {
                tracing::error!(%tenant, target = %database.target, %reason,
                    "the tenant's own database does not open; its data is unavailable until a restart opens it");
                routed.mark_unreachable(
                    &tenant,
                    format!(
                        "the account's own database ({}) is unreachable: {reason}",
                        database.target
                    ),
                );
            }
        }
    }
    Ok(())
}

impl Settings {
    fn databases(&self) -> Result<&TenantDatabases> {
        self.databases.as_ref().ok_or_else(unavailable)
    }

    /// The tenant's own database, if it configured one.
    pub fn database(&self, tenant: &TenantId) -> Result<Option<DatabaseConfigView>> {
        let settings = self.tree.tenant_handle(tenant)?.snapshot().settings.clone();
        let progress = self
            .databases
            .as_ref()
            .and_then(|databases| databases.progress.get(tenant).map(|entry| *entry));
        Ok(settings
            .database
            .as_ref()
            .map(|record| view(record, progress)))
    }

    /// Checks the URL, runs the self-test, saves the sealed connection string and queues
    /// the copy. Refused while a switch runs or the data is already in a database of its
    /// own (DELETE first: one switch at a time, and never two databases at once).
    pub async fn set_database(&self, tenant: &TenantId, url: String) -> Result<DatabaseConfigView> {
        let databases = self.databases()?.clone();
        let secrets = self.llms.intelligence().secrets()?;
        if let Some(current) = self.database(tenant)? {
            if current.state.switching() {
                return Err(Error::DatabaseSwitchInProgress(match current.state {
                    DatabaseState::Reverting => "copied back from",
                    _ => "copied to",
                }));
            }
            if current.state == DatabaseState::Active {
                return Err(Error::DatabaseInUse);
            }
        }
        let target = check_database_target(&url, databases.allow_private)
            .await
            .map_err(Error::DatabaseTargetRejected)?;
        let opener = databases.opener.clone();
        let probe_url = url.clone();
        let opened =
            tokio::task::spawn_blocking(move || opener.open(&probe_url, SELF_TEST_TIMEOUT))
                .await
                .map_err(|error| Error::DatabaseSelfTestFailed(error.to_string()))?
                .map_err(Error::DatabaseSelfTestFailed)?;
        drop(opened.store);
        let now = self.tree.now();
        let record = DatabaseConfigRecord {
            url_sealed: secrets.seal_str(&url),
            target,
            server_version: opened.server_version,
            state: DatabaseState::Copying,
            detail: None,
            created_at: now,
            updated_at: now,
        };
        let shown = view(&record, Some(CopyProgress::default()));
        databases
            .progress
            .insert(tenant.clone(), CopyProgress::default());
        self.update_settings(tenant, move |settings| TenantSettings {
            database: Some(record),
            ..settings.clone()
        })
        .await?;
        self.submit_switch(tenant)?;
        Ok(shown)
    }

    /// Moves the tenant's data back to the platform store and drops the connection
    /// string: a job when the data is in its own database (the answer shows `reverting`),
    /// at once when it never got there (`failed`). `None` when nothing was configured.
    pub async fn clear_database(&self, tenant: &TenantId) -> Result<Option<DatabaseConfigView>> {
        let Some(current) = self.database(tenant)? else {
            return Ok(None);
        };
        match current.state {
            DatabaseState::Copying | DatabaseState::Reverting => {
                Err(Error::DatabaseSwitchInProgress(match current.state {
                    DatabaseState::Reverting => "copied back from",
                    _ => "copied to",
                }))
            }
            DatabaseState::Failed => {
                self.update_settings(tenant, |settings| TenantSettings {
                    database: None,
                    ..settings.clone()
                })
                .await?;
                Ok(Some(current))
            }
            DatabaseState::Active => {
                let databases = self.databases()?.clone();
                let now = self.tree.now();
                self.update_settings(tenant, move |settings| TenantSettings {
                    database: settings
                        .database
                        .clone()
                        .map(|database| DatabaseConfigRecord {
                            state: DatabaseState::Reverting,
                            detail: None,
                            updated_at: now,
                            ..database
                        }),
                    ..settings.clone()
                })
                .await?;
                databases
                    .progress
                    .insert(tenant.clone(), CopyProgress::default());
                self.submit_switch(tenant)?;
                Ok(self.database(tenant)?)
            }
        }
    }

    fn submit_switch(&self, tenant: &TenantId) -> Result<()> {
        let queue = self.database_queue.as_ref().ok_or_else(unavailable)?;
        queue
            .submit(tenant.clone())
            .map_err(|error| Error::StartFailed {
                what: "the database switch queue".to_owned(),
                reason: error.to_string(),
            })
    }
}

fn unavailable() -> Error {
    Error::StartFailed {
        what: "a database of one's own".to_owned(),
        reason: "this server was started without it".to_owned(),
    }
}

fn backend(reason: String) -> Error {
    Error::Storage(memvault_storage::StorageError::Backend(reason))
}

fn view(record: &DatabaseConfigRecord, progress: Option<CopyProgress>) -> DatabaseConfigView {
    DatabaseConfigView {
        target: record.target.clone(),
        server_version: record.server_version.clone(),
        state: record.state,
        progress: progress.filter(|_| record.state.switching()),
        detail: record.detail.clone(),
        created_at: record.created_at,
        updated_at: record.updated_at,
    }
}

/// The switch of one tenant's data to or from its own database, as a job: which way is
/// in the tenant's settings (`copying`: to it; `reverting`: back).
pub struct DatabaseSwitches {
    databases: TenantDatabases,
    tree: Tree,
    secrets: Option<Arc<SecretBox>>,
}

impl DatabaseSwitches {
    pub(crate) fn new(
        databases: TenantDatabases,
        tree: Tree,
        secrets: Option<Arc<SecretBox>>,
    ) -> Self {
        Self {
            databases,
            tree,
            secrets,
        }
    }

    fn record(&self, tenant: &TenantId) -> Option<DatabaseConfigRecord> {
        let handle = self.tree.tenant_handle(tenant).ok()?;
        handle.snapshot().settings.database.clone()
    }

    async fn update(
        &self,
        tenant: &TenantId,
        change: impl FnOnce(Option<DatabaseConfigRecord>) -> Option<DatabaseConfigRecord>
            + Send
            + 'static,
    ) -> Result<()> {
        self.tree
            .call_tenant(tenant, |reply| TenantMessage::UpdateSettings {
                change: Box::new(move |settings| {
                    Ok(TenantSettings {
                        database: change(settings.database.clone()),
                        ..settings.clone()
                    })
                }),
                reply,
            })
            .await
            .map(drop)
    }

    async fn copy(&self, tenant: &TenantId, to: Option<Arc<dyn Store>>) -> Result<()> {
        let (routed, progress, tenant) = (
            self.databases.routed.clone(),
            self.databases.progress.clone(),
            tenant.clone(),
        );
        blocking(move || {
            routed.switch(&tenant, to, |from, to| {
                copy_tenant_data(from, to, &tenant, &mut |done| {
                    progress.insert(tenant.clone(), done);
                })
                .map(drop)
            })
        })
        .await
    }

    async fn switch_to_own(&self, tenant: &TenantId, record: &DatabaseConfigRecord) -> Result<()> {
        let secrets = self.secrets.clone().ok_or(Error::EncryptionKeyMissing)?;
        let url = secrets
            .open_string(&record.url_sealed)
            .map_err(|error| backend(format!("the connection string does not unseal: {error}")))?;
        let opener = self.databases.opener.clone();
        let opened = tokio::task::spawn_blocking(move || opener.open(&url, SELF_TEST_TIMEOUT))
            .await
            .map_err(|error| backend(error.to_string()))?
            .map_err(|reason| backend(format!("the database does not open: {reason}")))?;
        self.copy(tenant, Some(opened.store)).await?;
        let now = self.tree.now();
        self.update(tenant, move |database| {
            database.map(|database| DatabaseConfigRecord {
                state: DatabaseState::Active,
                detail: None,
                updated_at: now,
                ..database
            })
        })
        .await?;
        // The platform's copy is never read again; remove it.
        let platform = self.databases.routed.platform().clone();
        let owner = tenant.clone();
        blocking(move || {
            while platform.purge_tenant_data(&owner, 1_000)? > 0 {}
            Ok(())
        })
        .await
    }

    async fn switch_back(&self, tenant: &TenantId) -> Result<()> {
        self.copy(tenant, None).await?;
        // The tenant's database keeps its copy: memvault does not delete data in a
        // database it no longer uses (the tenant drops it when it wants to).
        self.update(tenant, |_| None).await
    }
}

#[async_trait]
impl JobKind for DatabaseSwitches {
    type Key = TenantId;
    const NAME: &'static str = "database_switch";

    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            backoff: Backoff::new(Duration::from_secs(2), Duration::from_secs(60)),
        }
    }

    async fn unfinished(&self) -> std::result::Result<Vec<Pending<TenantId>>, Failure> {
        let platform = self.databases.routed.platform().clone();
        let switching = blocking(move || {
            let mut switching = Vec::new();
            for tenant in platform.tenants()? {
                let settings = platform.tenant_settings(&tenant.id)?;
                if settings
                    .database
                    .is_some_and(|database| database.state.switching())
                {
                    switching.push(tenant.id);
                }
            }
            Ok(switching)
        })
        .await
        .map_err(Failure::from)?;
        Ok(switching.into_iter().map(Pending::new).collect())
    }

    async fn run(&self, tenant: &TenantId, _attempt: u32) -> Outcome {
        let Some(record) = self.record(tenant) else {
            self.databases.progress.remove(tenant);
            return Outcome::Done;
        };
        let outcome = match record.state {
            DatabaseState::Copying => self.switch_to_own(tenant, &record).await,
            DatabaseState::Reverting => self.switch_back(tenant).await,
            DatabaseState::Active | DatabaseState::Failed => Ok(()),
        };
        match outcome {
            Ok(()) => {
                self.databases.progress.remove(tenant);
                Outcome::Done
            }
            Err(error) => {
                let reason = error.to_string();
                let now = self.tree.now();
                let _ = self
                    .update(tenant, move |database| {
                        database.map(|database| DatabaseConfigRecord {
                            detail: Some(reason),
                            updated_at: now,
                            ..database
                        })
                    })
                    .await;
                Outcome::Retry(Failure::new(
                    ErrorCode::StorageUnavailable,
                    error.to_string(),
                ))
            }
        }
    }

    async fn retry_at(
        &self,
        tenant: &TenantId,
        attempts: u32,
        _due: DateTime<Utc>,
        reason: &Failure,
    ) {
        tracing::warn!(%tenant, attempts, reason = %reason.detail, "database switch failed; retrying");
    }

    async fn give_up(&self, tenant: &TenantId, attempts: u32, reason: &Failure) {
        tracing::error!(%tenant, attempts, reason = %reason.detail, "database switch gave up");
        self.databases.progress.remove(tenant);
        let (detail, now) = (reason.detail.clone(), self.tree.now());
        // Copying gave up: the data stayed in the platform store. Reverting gave up: it
        // stayed in the tenant's database, which serves on; DELETE tries again.
        let _ = self
            .update(tenant, move |database| {
                database.map(|database| DatabaseConfigRecord {
                    state: match database.state {
                        DatabaseState::Copying | DatabaseState::Failed => DatabaseState::Failed,
                        DatabaseState::Active | DatabaseState::Reverting => DatabaseState::Active,
                    },
                    detail: Some(detail),
                    updated_at: now,
                    ..database
                })
            })
            .await;
    }
}
