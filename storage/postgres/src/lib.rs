//! memvault-postgres: [`PgStore`], memvault's store traits
//! ([`memvault_storage::Store`]) on a Postgres database, next to the embedded sled store.
//! It passes the same behavioural suite (`memvault_storage::store_suite!`) sled does.
//!
//! # Schema
//!
//! Real tables, one per record kind (`migrations/0001_init.sql`): `tenants`, `api_keys`,
//! `collections`, `memories`, `staged_models` + `staged_embeddings`, `tenant_settings`,
//! `usage`, `extract_jobs`, `ingest_batches`, `imports` + `import_payloads`, `outbox`,
//! `audit`, `mails`, `reveals`, `events`, `email_addresses`, `connections`, `sync_runs`,
//! `synced_records`, `oauth_states`; `sessions` (`0003_sessions.sql`). Per-tenant tables have primary keys that start with
//! `tenant_id`. Each row keeps its record whole as `record bytea`, the exact serde_json
//! bytes (jsonb would reorder keys, rewrite numbers and refuse `\u0000`; the store promises
//! that a record reads back equal), next to the columns queries filter or sort on
//! (`created_at`, `updated_at`, a `finished` flag with partial indexes for the queues,
//! `expires_at`, ...). Memories carry their embedding as `bytea` of f32 little-endian and
//! a `seq` from the sequence `memory_seq`, set on every insert and replace (a replica can
//! catch up with `seq > n`); collections carry `version` (0; reserved for fencing).
//! Usage rows are plain counter columns added to in place. Text keys use the `"C"`
//! collation, so listings sort by bytes like sled's keys.
//!
//! Timestamp columns are `timestamptz` (microseconds). Lists sorted by time are re-sorted
//! on the records' own timestamps and `since` filters re-checked on them, so they order
//! exactly as sled does; the retention cut-offs (`prune_*`) compare at microsecond
//! precision.
//!
//! # Driver, and how calls block
//!
//! tokio-postgres 0.7 with a deadpool-postgres 0.14 pool: the researched pick
//! (`shared/research/scale.md` §1.1) for its small MSRV (1.85) and dependency set, no ORM
//! nor compile-time SQL (the store's queries are few and key-value-like), and pipelining
//! and `COPY` for later catch-up work. The sync `postgres` crate was not taken: each of its
//! clients owns a runtime that panics when dropped on an async thread, and an
//! `Arc<dyn Store>` is dropped wherever its last owner is.
//!
//! The traits are blocking, so a [`PgStore`] owns a small multi-threaded tokio runtime
//! (two workers, which drive the connections) and every call `block_on`s its queries on
//! it from the caller's thread: a `spawn_blocking` thread or any plain thread. Calling a
//! store method on an async worker thread panics, as any blocking call there would. The
//! runtime is shut down in the background when the store drops, so dropping it anywhere
//! is safe. Every write is one statement or one transaction, committed before the call
//! returns (durable with the server's `synchronous_commit`, on by default).
//!
//! Atomicity comes from the database: multi-row changes (`delete_collection`,
//! `move_memory`, `swap_embeddings`, `stage_embeddings`, `create_import`/`put_import`,
//! `delete_connection`, `purge_tenant`) run in one transaction; takes are
//! `DELETE ... RETURNING`; `record_event_once` is `INSERT ... ON CONFLICT DO NOTHING`;
//! `add_usage` is one upsert adding to the counters; `replace_email_address` is one
//! conditional `UPDATE` (or an insert that loses on conflict).
//!
//! # Migrations
//!
//! Numbered SQL files under `migrations/`, embedded with `include_str!`. [`PgStore::connect`]
//! applies the missing ones in order inside one transaction that first takes
//! `pg_advisory_xact_lock` on [`MIGRATION_LOCK`], and records each in
//! `memvault_migrations`; several processes starting at once on an empty database apply
//! them once, the others wait for the lock and find them applied. A database migrated by
//! a newer memvault (an unknown version recorded) is refused.
//!
//! Start-up work that must run once across nodes (bootstrapping the admin tenant) runs
//! inside [`PgStore::with_advisory_lock`], a session-level `pg_advisory_lock` on
//! [`BOOTSTRAP_LOCK`].
//!
//! # TLS
//!
//! libpq's `sslmode` and `sslrootcert` are read from the connection string (URL query or
//! `key=value`). `require`, `verify-ca` and `verify-full` connect over TLS (rustls with
//! the `ring` provider, through tokio-postgres-rustls) and always verify the server's
//! certificate and name, against `sslrootcert` when given, else the Mozilla roots
//! (webpki-roots): stricter than libpq's `require`, which does not verify. `disable`,
//! `allow`, `prefer` and no `sslmode` connect in plain text.

mod cluster;

pub use cluster::{tenant_lease, Claim, Lease, NodeRecord, TenantLookup};

use std::future::Future;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use memvault_storage::error::Result;
use memvault_storage::records::{
    ApiKeyRecord, AuditEntry, CollectionName, CollectionRecord, ConnectionRecord,
    EmailAddressRecord, EmbeddingModel, ExtractJobRecord, ImportJobRecord, ImportPayload,
    IngestBatchRecord, MailRecord, MemoryRecord, OAuthStateRecord, OutboxDelivery, RevealRecord,
    SessionRecord, StagedEmbedding, StoredMemory, SyncRunRecord, SyncedRecord, TenantId,
    TenantRecord, TenantSettings, UsageRow,
};
use memvault_storage::store::{
    AccountStore, AuditStore, ConnectorStore, ImportStore, IngestStore, JobStore, MemoryStore,
    MetaStore, OutboxStore, ReembedStore, SessionStore,
};
use memvault_storage::StorageError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, NoTls, Row};

/// [`BOOTSTRAP_LOCK`], held until dropped: see [`PgStore::startup_lock`].
pub struct StartupLock {
    client: deadpool_postgres::ClientWrapper,
}

/// The advisory lock key (`"memvault"` in ASCII) [`PgStore::with_advisory_lock`] holds.
pub const BOOTSTRAP_LOCK: i64 = 0x6d65_6d76_6175_6c74;
/// The advisory lock key migrations run under; apart from [`BOOTSTRAP_LOCK`], so that
/// connecting inside [`PgStore::with_advisory_lock`] cannot wait on itself.
pub const MIGRATION_LOCK: i64 = BOOTSTRAP_LOCK + 1;

/// The migrations, in order: (version, name, SQL).
const MIGRATIONS: &[(i32, &str, &str)] = &[
    (1, "init", include_str!("../migrations/0001_init.sql")),
    (2, "nodes", include_str!("../migrations/0002_nodes.sql")),
    (
        3,
        "sessions",
        include_str!("../migrations/0003_sessions.sql"),
    ),
];

/// Connections the pool keeps at most.
const POOL_SIZE: usize = 16;
/// Connections to one tenant's own database (its data only: a smaller share of the work).
const TENANT_POOL_SIZE: usize = 4;
/// Memories read per query when a whole collection is read.
const MEMORY_PAGE: usize = 2_000;

/// The store on a Postgres database (see the crate docs).
pub struct PgStore {
    pool: Pool,
    /// `Some` until drop, which shuts it down in the background.
    runtime: Option<tokio::runtime::Runtime>,
    /// This node's leases when it is one of several ([`PgStore::fenced_as`]).
    fence: Option<std::sync::Arc<cluster::Fence>>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("PgStore").finish_non_exhaustive()
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A Postgres error as the storage crate's.
fn backend(error: impl std::fmt::Display) -> StorageError {
    StorageError::Backend(error.to_string())
}

fn pg(error: tokio_postgres::Error) -> StorageError {
    match error.as_db_error() {
        Some(db) => StorageError::Backend(format!(
            "{} {}: {}{}",
            db.severity(),
            db.code().code(),
            db.message(),
            db.detail()
                .map(|detail| format!(" ({detail})"))
                .unwrap_or_default()
        )),
        None => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            StorageError::Backend(text)
        }
    }
}

fn encode(value: &impl Serialize) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec(value)?)
}

fn decode<T: DeserializeOwned>(table: &str, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|error| StorageError::Corrupt {
        key: table.to_owned(),
        reason: error.to_string(),
    })
}

/// The `record` column (the first) of every row, decoded.
fn decode_rows<T: DeserializeOwned>(table: &str, rows: &[Row]) -> Result<Vec<T>> {
    rows.iter()
        .map(|row| decode(table, row.get::<_, &[u8]>(0)))
        .collect()
}

fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(vector.len() * 4);
    for component in vector {
        bytes.extend_from_slice(&component.to_le_bytes());
    }
    bytes
}

fn vector_of(table: &str, bytes: &[u8]) -> Result<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(StorageError::Corrupt {
            key: table.to_owned(),
            reason: "embedding length is not a multiple of 4".to_owned(),
        });
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
        .collect())
}

/// Walks a collection's rows in id order, [`MEMORY_PAGE`] per query, handing each row to
/// `visit` as its page arrives: the client buffers a query's whole result before it
/// decodes a row, so one query for a large collection would hold it twice.
fn walk_pages<T>(
    id_of: impl Fn(&T) -> String,
    mut page: impl FnMut(Option<&str>) -> Result<Vec<T>>,
    mut visit: impl FnMut(T),
) -> Result<()> {
    let mut after: Option<String> = None;
    loop {
        let rows = page(after.as_deref())?;
        let full = rows.len() == MEMORY_PAGE;
        after = rows.last().map(&id_of);
        rows.into_iter().for_each(&mut visit);
        if !full {
            return Ok(());
        }
    }
}

/// A `LIMIT` from a `usize`.
fn limit(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

fn count(rows: u64) -> usize {
    usize::try_from(rows).unwrap_or(usize::MAX)
}

fn index_key(key: u64) -> Result<i64> {
    i64::try_from(key).map_err(|_| StorageError::Corrupt {
        key: "staged_embeddings".to_owned(),
        reason: format!("index key {key} is over 2^63"),
    })
}

fn counter(value: u64) -> Result<i64> {
    i64::try_from(value).map_err(|_| StorageError::Corrupt {
        key: "usage".to_owned(),
        reason: format!("counter {value} is over 2^63"),
    })
}

/// How a connection string asks to secure its connections, taken out of it (libpq's
/// `sslmode` and `sslrootcert`, which tokio-postgres does not all know).
#[derive(Debug, Default, PartialEq)]
struct TlsWish {
    /// `require`, `verify-ca` or `verify-full`.
    tls: bool,
    root_cert: Option<String>,
}

/// `url` without its `sslmode` and `sslrootcert` settings, and what they asked for.
fn split_tls(url: &str) -> Result<(String, TlsWish)> {
    let mut wish = TlsWish::default();
    let mut take = |key: &str, value: &str| -> Result<bool> {
        match key {
            "sslmode" => {
                wish.tls = match value {
                    "disable" | "allow" | "prefer" => false,
                    "require" | "verify-ca" | "verify-full" => true,
                    other => return Err(backend(format!("unknown sslmode {other:?}"))),
                };
                Ok(true)
            }
            "sslrootcert" => {
                wish.root_cert = Some(value.to_owned());
                Ok(true)
            }
            _ => Ok(false),
        }
    };
    let rest = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        match url.split_once('?') {
            Some((main, query)) => {
                let mut kept = Vec::new();
                for pair in query.split('&') {
                    let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                    let value = percent_decode(value);
                    if !take(key, &value)? {
                        kept.push(pair);
                    }
                }
                if kept.is_empty() {
                    main.to_owned()
                } else {
                    format!("{main}?{}", kept.join("&"))
                }
            }
            None => url.to_owned(),
        }
    } else {
        let mut kept = Vec::new();
        for token in url.split_whitespace() {
            let (key, value) = token.split_once('=').unwrap_or((token, ""));
            if !take(key, value.trim_matches('\''))? {
                kept.push(token);
            }
        }
        kept.join(" ")
    };
    Ok((rest, wish))
}

/// `%XX` escapes decoded (a `sslrootcert` path in a URL).
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes
            .get(index + 1..index + 3)
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (bytes[index], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                index += 3;
            }
            (byte, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The rustls connector for `wish`: the certificates of `sslrootcert` when given, the
/// Mozilla roots (webpki-roots) otherwise; the server's certificate and name are always
/// verified.
fn rustls_connector(wish: &TlsWish) -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    match &wish.root_cert {
        Some(path) => {
            let certificates = rustls_pki_types::CertificateDer::pem_file_iter(path)
                .map_err(|error| backend(format!("sslrootcert {path}: {error}")))?;
            for certificate in certificates {
                let certificate =
                    certificate.map_err(|error| backend(format!("sslrootcert {path}: {error}")))?;
                roots
                    .add(certificate)
                    .map_err(|error| backend(format!("sslrootcert {path}: {error}")))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(backend)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

impl PgStore {
    /// Connects to the database `url` names (a libpq URL, e.g.
    /// `postgresql://postgres@/memvault?host=/run/postgresql&port=5432`, or a `key=value`
    /// string), applies the missing migrations under the migration lock and returns.
    pub fn connect(url: &str) -> Result<Self> {
        let store = Self::unmigrated(url, None, POOL_SIZE)?;
        store.block(store.migrate())?;
        Ok(store)
    }

    /// Opens a tenant's own database and proves it usable, all within `timeout`: connects
    /// (TLS as `sslmode` asks), checks the server is Postgres 13 or newer, applies the
    /// migrations, and writes, reads back and rolls back a probe row in a memvault table.
    /// Returns the store and the server's version. Every failure says which step failed
    /// and why (a wrong password, an unknown database, a refused connection, a timeout).
    pub fn open_checked(url: &str, timeout: Duration) -> Result<(Self, String)> {
        let store = Self::unmigrated(url, Some(timeout), TENANT_POOL_SIZE)?;
        let checked = store.block(async {
            match tokio::time::timeout(timeout, store.self_test()).await {
                Ok(outcome) => outcome,
                Err(_) => Err(backend(format!(
                    "the database did not answer within {} s",
                    timeout.as_secs()
                ))),
            }
        })?;
        Ok((store, checked))
    }

    async fn self_test(&self) -> Result<String> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT current_setting('server_version_num')::int, \
                        current_setting('server_version')",
                &[],
            )
            .await
            .map_err(pg)?;
        let (number, version): (i32, String) = (row.get(0), row.get(1));
        if number < 130_000 {
            return Err(backend(format!(
                "the server runs Postgres {version}; memvault needs 13 or newer"
            )));
        }
        drop(client);
        self.migrate().await?;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let probe = format!("~memvault-probe-{}", uuid::Uuid::new_v4());
        let written: String = tx
            .query_one(
                "INSERT INTO tenant_settings (tenant_id, record) VALUES ($1, $2) \
                 RETURNING tenant_id",
                &[&probe, &b"{}".as_slice()],
            )
            .await
            .map_err(pg)?
            .get(0);
        let read: Option<String> = tx
            .query_opt(
                "SELECT tenant_id FROM tenant_settings WHERE tenant_id = $1",
                &[&probe],
            )
            .await
            .map_err(pg)?
            .map(|row| row.get(0));
        tx.rollback().await.map_err(pg)?;
        if written != probe || read.as_deref() != Some(probe.as_str()) {
            return Err(backend(
                "a probe row written to the database did not read back",
            ));
        }
        Ok(version)
    }

    /// A store over `url` whose schema is not yet checked: `connect_timeout` (else the
    /// URL's, else 10 s) bounds each connection attempt.
    fn unmigrated(url: &str, connect_timeout: Option<Duration>, pool_size: usize) -> Result<Self> {
        let (url, wish) = split_tls(url)?;
        let mut config = tokio_postgres::Config::from_str(&url)
            .map_err(|error| backend(format!("invalid Postgres connection string: {error}")))?;
        if let Some(timeout) = connect_timeout {
            config.connect_timeout(timeout);
        } else if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("memvault");
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("memvault-postgres")
            .enable_all()
            .build()
            .map_err(|error| backend(format!("cannot start the Postgres runtime: {error}")))?;
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = if wish.tls {
            config.ssl_mode(tokio_postgres::config::SslMode::Require);
            Manager::from_config(config, rustls_connector(&wish)?, manager_config)
        } else {
            config.ssl_mode(tokio_postgres::config::SslMode::Disable);
            Manager::from_config(config, NoTls, manager_config)
        };
        let pool = Pool::builder(manager)
            .max_size(pool_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(backend)?;
        Ok(Self {
            pool,
            runtime: Some(runtime),
            fence: None,
        })
    }

    /// Runs `work` while holding the session-level advisory lock [`BOOTSTRAP_LOCK`] on a
    /// connection of its own, so that of several nodes starting at once, one runs it at a
    /// time (bootstrap once: the others find its result). The lock goes with that
    /// connection: released after `work`, and by the server should `work` panic or the
    /// process die.
    pub fn with_advisory_lock<T>(&self, work: impl FnOnce() -> Result<T>) -> Result<T> {
        // On a connection taken out of the pool: closing it releases the lock whatever
        // happens.
        let lock = self.startup_lock()?;
        let outcome = work();
        let unlocked = self.block(async {
            lock.client
                .execute("SELECT pg_advisory_unlock($1)", &[&BOOTSTRAP_LOCK])
                .await
                .map_err(pg)
        });
        drop(lock);
        let value = outcome?;
        unlocked?;
        Ok(value)
    }

    /// Takes the session-level advisory lock [`BOOTSTRAP_LOCK`] on a connection of its
    /// own and holds it until the returned guard is dropped (closing that connection
    /// releases it, also when the process dies). A server holds it from loading the
    /// tenants to the end of bootstrap, so of several nodes starting at once on an empty
    /// database exactly one creates the admin tenant and the others load it.
    pub fn startup_lock(&self) -> Result<StartupLock> {
        let client = self.block(async {
            let client = Object::take(self.client().await?);
            client
                .execute("SELECT pg_advisory_lock($1)", &[&BOOTSTRAP_LOCK])
                .await
                .map_err(pg)?;
            Ok(client)
        })?;
        Ok(StartupLock { client })
    }

    /// The versions of the migrations applied to the database, ascending.
    pub fn applied_migrations(&self) -> Result<Vec<i32>> {
        self.block(async {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT version FROM memvault_migrations ORDER BY version",
                    &[],
                )
                .await
                .map_err(pg)?;
            Ok(rows.iter().map(|row| row.get(0)).collect())
        })
    }

    /// Removes up to `max_records` rows of the tenant from `tables`, in their order, in
    /// one transaction.
    fn purge(&self, tables: &[&str], tenant: &TenantId, max_records: usize) -> Result<usize> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            let mut removed = 0;
            for table in tables {
                if removed >= max_records {
                    break;
                }
                let sql = format!(
                    "DELETE FROM {table} WHERE ctid = ANY(ARRAY(
                         SELECT ctid FROM {table} WHERE tenant_id = $1 LIMIT $2))"
                );
                let left = limit(max_records - removed);
                removed += count(
                    tx.execute(sql.as_str(), &[&tenant.as_str(), &left])
                        .await
                        .map_err(pg)?,
                );
            }
            tx.commit().await.map_err(pg)?;
            Ok(removed)
        })
    }

    /// Runs `future` to completion on the store's runtime, from the caller's thread.
    fn block<T>(&self, future: impl Future<Output = Result<T>>) -> Result<T> {
        match &self.runtime {
            Some(runtime) => runtime.block_on(future),
            None => Err(backend("the store is shutting down")),
        }
    }

    async fn client(&self) -> Result<Object> {
        self.pool.get().await.map_err(|error| match error {
            deadpool_postgres::PoolError::Backend(error) => pg(error),
            other => backend(format!("no Postgres connection: {other}")),
        })
    }

    async fn migrate(&self) -> Result<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(pg)?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS memvault_migrations (
                 version integer PRIMARY KEY,
                 name text NOT NULL,
                 applied_at timestamptz NOT NULL DEFAULT now()
             )",
        )
        .await
        .map_err(pg)?;
        let applied: Vec<i32> = tx
            .query("SELECT version FROM memvault_migrations", &[])
            .await
            .map_err(pg)?
            .iter()
            .map(|row| row.get(0))
            .collect();
        let known = MIGRATIONS.iter().map(|(version, _, _)| *version).max();
        if let Some(unknown) = applied.iter().find(|version| Some(**version) > known) {
            return Err(backend(format!(
                "the database has migration {unknown}, newer than this memvault knows \
                 ({known:?}); run a newer memvault"
            )));
        }
        for (version, name, sql) in MIGRATIONS {
            if applied.contains(version) {
                continue;
            }
            tracing::info!(version, name, "applying Postgres migration");
            tx.batch_execute(sql).await.map_err(pg)?;
            tx.execute(
                "INSERT INTO memvault_migrations (version, name) VALUES ($1, $2)",
                &[version as &(dyn ToSql + Sync), name],
            )
            .await
            .map_err(pg)?;
        }
        tx.commit().await.map_err(pg)
    }

    /// The records (first column) `sql` selects, decoded.
    fn records<T: DeserializeOwned>(
        &self,
        table: &str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<T>> {
        self.block(async {
            let client = self.client().await?;
            let rows = client.query(sql, params).await.map_err(pg)?;
            decode_rows(table, &rows)
        })
    }

    /// The record (first column) `sql` selects, if any.
    fn record<T: DeserializeOwned>(
        &self,
        table: &str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<T>> {
        self.block(async {
            let client = self.client().await?;
            let row = client.query_opt(sql, params).await.map_err(pg)?;
            row.map(|row| decode(table, row.get::<_, &[u8]>(0)))
                .transpose()
        })
    }

    /// Runs one statement that writes `tenant`'s data, fenced by the tenant's lease on a
    /// node's store (see [`cluster`]); how many rows it touched.
    fn write(&self, tenant: &TenantId, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<usize> {
        if self.fence.is_none() {
            return self.execute(sql, params);
        }
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            self.check_fence(&*tx, tenant).await?;
            let touched = tx.execute(sql, params).await.map_err(pg)?;
            tx.commit().await.map_err(pg)?;
            Ok(count(touched))
        })
    }

    /// Runs one statement; how many rows it touched.
    fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<usize> {
        self.block(async {
            let client = self.client().await?;
            Ok(count(client.execute(sql, params).await.map_err(pg)?))
        })
    }
}

/// Inserts or replaces memories through `client` (a fresh `seq` each).
async fn upsert_memories(
    client: &impl GenericClient,
    tenant: &TenantId,
    collection: &CollectionName,
    memories: &[StoredMemory],
) -> Result<()> {
    for memory in memories {
        client
            .execute(
                "INSERT INTO memories (tenant_id, collection, id, record, embedding)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (tenant_id, collection, id) DO UPDATE
                 SET record = excluded.record, embedding = excluded.embedding,
                     seq = nextval('memory_seq')",
                &[
                    &tenant.as_str(),
                    &collection.as_str(),
                    &memory.record.id,
                    &encode(&memory.record)?,
                    &vector_bytes(&memory.embedding),
                ],
            )
            .await
            .map_err(pg)?;
    }
    Ok(())
}

fn memory_of(row: &Row) -> Result<StoredMemory> {
    let record: MemoryRecord = decode("memories", row.get::<_, &[u8]>(0))?;
    let embedding = vector_of("memories", row.get::<_, &[u8]>(1))?;
    Ok(StoredMemory { record, embedding })
}

/// Drops a collection's staged re-embedding through `client`.
async fn unstage(
    client: &impl GenericClient,
    tenant: &TenantId,
    collection: &CollectionName,
) -> Result<()> {
    for sql in [
        "DELETE FROM staged_embeddings WHERE tenant_id = $1 AND collection = $2",
        "DELETE FROM staged_models WHERE tenant_id = $1 AND collection = $2",
    ] {
        client
            .execute(sql, &[&tenant.as_str(), &collection.as_str()])
            .await
            .map_err(pg)?;
    }
    Ok(())
}

async fn upsert_collection(
    client: &impl GenericClient,
    tenant: &TenantId,
    collection: &CollectionRecord,
) -> Result<()> {
    client
        .execute(
            "INSERT INTO collections (tenant_id, name, record) VALUES ($1, $2, $3)
             ON CONFLICT (tenant_id, name) DO UPDATE SET record = excluded.record",
            &[
                &tenant.as_str(),
                &collection.name.as_str(),
                &encode(collection)?,
            ],
        )
        .await
        .map_err(pg)?;
    Ok(())
}

/// The per-tenant tables `purge_tenant` empties (all but the account ones: mails, reveal
/// links, mail-in addresses, events and OAuth flows, which an erasure removes through
/// their own calls, as with sled), in the order it empties them.
/// The tables of a tenant's data records (what moves with it to a database of its own),
/// children before parents.
const DATA_TABLES: &[&str] = &[
    "staged_embeddings",
    "staged_models",
    "memories",
    "collections",
    "extract_jobs",
    "ingest_batches",
    "import_payloads",
    "imports",
];

const TENANT_TABLES: &[&str] = &[
    "staged_embeddings",
    "staged_models",
    "memories",
    "collections",
    "api_keys",
    "tenant_settings",
    "usage",
    "extract_jobs",
    "ingest_batches",
    "import_payloads",
    "imports",
    "synced_records",
    "sync_runs",
    "connections",
    "audit",
    "outbox",
];

/// Bytes of a tenant's rows: keys and values, as sled counts its data tree (so not the
/// outbox, nor the account tables).
const TENANT_BYTES: &str = "SELECT COALESCE(SUM(n), 0)::bigint FROM (
    SELECT octet_length(id) + octet_length(record) AS n FROM api_keys WHERE tenant_id = $1
    UNION ALL SELECT octet_length(name) + octet_length(record)
        FROM collections WHERE tenant_id = $1
    UNION ALL SELECT octet_length(collection) + octet_length(id) + octet_length(record)
        + octet_length(embedding) FROM memories WHERE tenant_id = $1
    UNION ALL SELECT octet_length(collection) + octet_length(record)
        FROM staged_models WHERE tenant_id = $1
    UNION ALL SELECT octet_length(collection) + 8 + octet_length(id) + octet_length(embedding)
        FROM staged_embeddings WHERE tenant_id = $1
    UNION ALL SELECT octet_length(record) FROM tenant_settings WHERE tenant_id = $1
    UNION ALL SELECT octet_length(month) + octet_length(purpose) + octet_length(model) + 33
        FROM usage WHERE tenant_id = $1
    UNION ALL SELECT octet_length(id) + octet_length(record) FROM extract_jobs WHERE tenant_id = $1
    UNION ALL SELECT octet_length(id) + octet_length(record)
        FROM ingest_batches WHERE tenant_id = $1
    UNION ALL SELECT octet_length(id) + octet_length(record) FROM imports WHERE tenant_id = $1
    UNION ALL SELECT octet_length(id) + octet_length(record)
        FROM import_payloads WHERE tenant_id = $1
    UNION ALL SELECT octet_length(id) + octet_length(record) FROM audit WHERE tenant_id = $1
    UNION ALL SELECT octet_length(id) + octet_length(record) FROM connections WHERE tenant_id = $1
    UNION ALL SELECT octet_length(connection_id) + octet_length(id) + octet_length(record)
        FROM sync_runs WHERE tenant_id = $1
    UNION ALL SELECT octet_length(connection_id) + octet_length(record_id) + octet_length(record)
        FROM synced_records WHERE tenant_id = $1
) AS sizes";

impl MetaStore for PgStore {
    fn put_tenant(&self, tenant: &TenantRecord) -> Result<()> {
        self.execute(
            "INSERT INTO tenants (id, record) VALUES ($1, $2)
             ON CONFLICT (id) DO UPDATE SET record = excluded.record",
            &[&tenant.id.as_str(), &encode(tenant)?],
        )?;
        Ok(())
    }

    fn tenants(&self) -> Result<Vec<TenantRecord>> {
        self.records("tenants", "SELECT record FROM tenants ORDER BY id", &[])
    }

    fn put_api_key(&self, key: &ApiKeyRecord) -> Result<()> {
        self.write(
            &key.tenant_id,
            "INSERT INTO api_keys (tenant_id, id, record, key_hash) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant_id, id) DO UPDATE
             SET record = excluded.record, key_hash = excluded.key_hash",
            &[
                &key.tenant_id.as_str(),
                &key.id,
                &encode(key)?,
                &key.key_hash,
            ],
        )?;
        Ok(())
    }

    fn api_keys(&self, tenant: &TenantId) -> Result<Vec<ApiKeyRecord>> {
        self.records(
            "api_keys",
            "SELECT record FROM api_keys WHERE tenant_id = $1 ORDER BY id",
            &[&tenant.as_str()],
        )
    }

    fn put_collection(&self, tenant: &TenantId, collection: &CollectionRecord) -> Result<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            self.check_fence(&*tx, tenant).await?;
            upsert_collection(&*tx, tenant, collection).await?;
            tx.commit().await.map_err(pg)
        })
    }

    fn collections(&self, tenant: &TenantId) -> Result<Vec<CollectionRecord>> {
        self.records(
            "collections",
            "SELECT record FROM collections WHERE tenant_id = $1 ORDER BY name",
            &[&tenant.as_str()],
        )
    }

    fn delete_collection(&self, tenant: &TenantId, name: &CollectionName) -> Result<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            self.check_fence(&*tx, tenant).await?;
            for sql in [
                "DELETE FROM memories WHERE tenant_id = $1 AND collection = $2",
                "DELETE FROM collections WHERE tenant_id = $1 AND name = $2",
            ] {
                tx.execute(sql, &[&tenant.as_str(), &name.as_str()])
                    .await
                    .map_err(pg)?;
            }
            unstage(&*tx, tenant, name).await?;
            tx.commit().await.map_err(pg)
        })
    }

    fn purge_tenant(&self, tenant: &TenantId, max_records: usize) -> Result<usize> {
        self.purge(TENANT_TABLES, tenant, max_records)
    }

    fn purge_tenant_data(&self, tenant: &TenantId, max_records: usize) -> Result<usize> {
        self.purge(DATA_TABLES, tenant, max_records)
    }

    fn delete_tenant(&self, tenant: &TenantId) -> Result<()> {
        self.execute("DELETE FROM tenants WHERE id = $1", &[&tenant.as_str()])?;
        Ok(())
    }

    fn tenant_bytes(&self, tenant: &TenantId) -> Result<u64> {
        self.block(async {
            let client = self.client().await?;
            let row = client
                .query_one(TENANT_BYTES, &[&tenant.as_str()])
                .await
                .map_err(pg)?;
            Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
        })
    }

    fn put_tenant_settings(&self, tenant: &TenantId, settings: &TenantSettings) -> Result<()> {
        self.write(
            tenant,
            "INSERT INTO tenant_settings (tenant_id, record) VALUES ($1, $2)
             ON CONFLICT (tenant_id) DO UPDATE SET record = excluded.record",
            &[&tenant.as_str(), &encode(settings)?],
        )?;
        Ok(())
    }

    fn tenant_settings(&self, tenant: &TenantId) -> Result<TenantSettings> {
        Ok(self
            .record(
                "tenant_settings",
                "SELECT record FROM tenant_settings WHERE tenant_id = $1",
                &[&tenant.as_str()],
            )?
            .unwrap_or_default())
    }

    fn add_usage(&self, tenant: &TenantId, delta: &UsageRow) -> Result<()> {
        self.execute(
            "INSERT INTO usage (tenant_id, month, purpose, own_llm, model, calls,
                                prompt_tokens, completion_tokens, cost_usd)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (tenant_id, month, purpose, own_llm, model) DO UPDATE SET
                 calls = usage.calls + excluded.calls,
                 prompt_tokens = usage.prompt_tokens + excluded.prompt_tokens,
                 completion_tokens = usage.completion_tokens + excluded.completion_tokens,
                 cost_usd = usage.cost_usd + excluded.cost_usd",
            &[
                &tenant.as_str(),
                &delta.month,
                &delta.purpose,
                &delta.own_llm,
                &delta.model,
                &counter(delta.calls)?,
                &counter(delta.prompt_tokens)?,
                &counter(delta.completion_tokens)?,
                &delta.cost_usd,
            ],
        )?;
        Ok(())
    }

    fn usage(&self, tenant: &TenantId, month: &str) -> Result<Vec<UsageRow>> {
        self.block(async {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT month, purpose, model, own_llm, calls, prompt_tokens,
                            completion_tokens, cost_usd
                     FROM usage WHERE tenant_id = $1 AND month = $2
                     ORDER BY purpose, own_llm DESC, model",
                    &[&tenant.as_str(), &month],
                )
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .map(|row| UsageRow {
                    month: row.get(0),
                    purpose: row.get(1),
                    model: row.get(2),
                    own_llm: row.get(3),
                    calls: u64::try_from(row.get::<_, i64>(4)).unwrap_or(0),
                    prompt_tokens: u64::try_from(row.get::<_, i64>(5)).unwrap_or(0),
                    completion_tokens: u64::try_from(row.get::<_, i64>(6)).unwrap_or(0),
                    cost_usd: row.get(7),
                })
                .collect())
        })
    }
}

/// Sorts records by `(created_at, id)`, the order of every "oldest first" list.
fn oldest_first<T>(records: &mut [T], key: impl Fn(&T) -> (DateTime<Utc>, &str)) {
    records.sort_by(|a, b| key(a).cmp(&key(b)));
}

impl JobStore for PgStore {
    fn put_job(&self, job: &ExtractJobRecord) -> Result<()> {
        self.write(
            &job.tenant_id,
            "INSERT INTO extract_jobs (tenant_id, id, finished, created_at, updated_at, record)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (tenant_id, id) DO UPDATE SET finished = excluded.finished,
                 created_at = excluded.created_at, updated_at = excluded.updated_at,
                 record = excluded.record",
            &[
                &job.tenant_id.as_str(),
                &job.id,
                &job.state.is_finished(),
                &job.created_at,
                &job.updated_at,
                &encode(job)?,
            ],
        )?;
        Ok(())
    }

    fn job(&self, tenant: &TenantId, id: &str) -> Result<Option<ExtractJobRecord>> {
        self.record(
            "extract_jobs",
            "SELECT record FROM extract_jobs WHERE tenant_id = $1 AND id = $2",
            &[&tenant.as_str(), &id],
        )
    }

    fn unfinished_jobs(&self) -> Result<Vec<ExtractJobRecord>> {
        let mut jobs: Vec<ExtractJobRecord> = self.records(
            "extract_jobs",
            "SELECT record FROM extract_jobs WHERE NOT finished ORDER BY created_at, id",
            &[],
        )?;
        oldest_first(&mut jobs, |job| (job.created_at, &job.id));
        Ok(jobs)
    }

    fn jobs_of(&self, tenant: &TenantId) -> Result<Vec<ExtractJobRecord>> {
        self.records(
            "extract_jobs",
            "SELECT record FROM extract_jobs WHERE tenant_id = $1",
            &[&tenant.as_str()],
        )
    }

    fn prune_jobs(&self, before: DateTime<Utc>) -> Result<usize> {
        self.execute(
            "DELETE FROM extract_jobs WHERE finished AND updated_at < $1",
            &[&before],
        )
    }
}

impl MemoryStore for PgStore {
    fn put_memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        memories: &[StoredMemory],
    ) -> Result<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            self.check_fence(&*tx, tenant).await?;
            upsert_memories(&*tx, tenant, collection, memories).await?;
            tx.commit().await.map_err(pg)
        })
    }

    fn memory(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        id: &str,
    ) -> Result<Option<StoredMemory>> {
        self.block(async {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "SELECT record, embedding FROM memories
                     WHERE tenant_id = $1 AND collection = $2 AND id = $3",
                    &[&tenant.as_str(), &collection.as_str(), &id],
                )
                .await
                .map_err(pg)?;
            row.as_ref().map(memory_of).transpose()
        })
    }

    fn memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Vec<StoredMemory>> {
        let mut memories = Vec::new();
        walk_pages(
            |memory: &StoredMemory| memory.record.id.clone(),
            |after| self.memories_page(tenant, collection, after, MEMORY_PAGE),
            |memory| memories.push(memory),
        )?;
        Ok(memories)
    }

    fn memory_records(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Vec<MemoryRecord>> {
        let mut records = Vec::new();
        self.visit_memory_records(tenant, collection, &mut |record| records.push(record))?;
        Ok(records)
    }

    fn visit_memory_records(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        visit: &mut dyn FnMut(MemoryRecord),
    ) -> Result<()> {
        // As `memories`, without the embedding column.
        walk_pages(
            |record: &MemoryRecord| record.id.clone(),
            |after| {
                self.block(async {
                    let client = self.client().await?;
                    let rows = client
                        .query(
                            "SELECT record FROM memories
                             WHERE tenant_id = $1 AND collection = $2
                               AND ($3::text IS NULL OR id > $3)
                             ORDER BY id LIMIT $4",
                            &[
                                &tenant.as_str(),
                                &collection.as_str(),
                                &after,
                                &limit(MEMORY_PAGE),
                            ],
                        )
                        .await
                        .map_err(pg)?;
                    rows.iter()
                        .map(|row| decode::<MemoryRecord>("memories", row.get::<_, &[u8]>(0)))
                        .collect::<Result<Vec<_>>>()
                })
            },
            visit,
        )
    }

    fn embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        ids: &[&str],
    ) -> Result<Vec<Option<Vec<f32>>>> {
        let mut found: std::collections::HashMap<String, Vec<f32>> =
            std::collections::HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(MEMORY_PAGE) {
            let rows = self.block(async {
                let client = self.client().await?;
                client
                    .query(
                        "SELECT id, embedding FROM memories
                         WHERE tenant_id = $1 AND collection = $2 AND id = ANY($3)",
                        &[&tenant.as_str(), &collection.as_str(), &chunk],
                    )
                    .await
                    .map_err(pg)
            })?;
            for row in &rows {
                found.insert(
                    row.get::<_, String>(0),
                    vector_of("memories", row.get::<_, &[u8]>(1))?,
                );
            }
        }
        Ok(ids.iter().map(|id| found.remove(*id)).collect())
    }

    fn memories_page(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        after: Option<&str>,
        page: usize,
    ) -> Result<Vec<StoredMemory>> {
        self.block(async {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT record, embedding FROM memories
                     WHERE tenant_id = $1 AND collection = $2 AND ($3::text IS NULL OR id > $3)
                     ORDER BY id LIMIT $4",
                    &[&tenant.as_str(), &collection.as_str(), &after, &limit(page)],
                )
                .await
                .map_err(pg)?;
            rows.iter().map(memory_of).collect()
        })
    }

    fn delete_memories(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        ids: &[String],
    ) -> Result<()> {
        self.write(
            tenant,
            "DELETE FROM memories WHERE tenant_id = $1 AND collection = $2 AND id = ANY($3)",
            &[&tenant.as_str(), &collection.as_str(), &ids],
        )?;
        Ok(())
    }

    fn move_memory(
        &self,
        tenant: &TenantId,
        from: &CollectionName,
        to: &CollectionName,
        memory: &StoredMemory,
    ) -> Result<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            self.check_fence(&*tx, tenant).await?;
            tx.execute(
                "DELETE FROM memories WHERE tenant_id = $1 AND collection = $2 AND id = $3",
                &[&tenant.as_str(), &from.as_str(), &memory.record.id],
            )
            .await
            .map_err(pg)?;
            upsert_memories(&*tx, tenant, to, std::slice::from_ref(memory)).await?;
            tx.commit().await.map_err(pg)
        })
    }
}

impl ReembedStore for PgStore {
    fn stage_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        model: &EmbeddingModel,
        staged: &[StagedEmbedding],
    ) -> Result<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            self.check_fence(&*tx, tenant).await?;
            let current = tx
                .query_opt(
                    "SELECT record FROM staged_models
                     WHERE tenant_id = $1 AND collection = $2 FOR UPDATE",
                    &[&tenant.as_str(), &collection.as_str()],
                )
                .await
                .map_err(pg)?
                .map(|row| decode::<EmbeddingModel>("staged_models", row.get::<_, &[u8]>(0)))
                .transpose()?;
            if current.as_ref() != Some(model) {
                unstage(&*tx, tenant, collection).await?;
                tx.execute(
                    "INSERT INTO staged_models (tenant_id, collection, record) VALUES ($1, $2, $3)
                     ON CONFLICT (tenant_id, collection) DO UPDATE SET record = excluded.record",
                    &[&tenant.as_str(), &collection.as_str(), &encode(model)?],
                )
                .await
                .map_err(pg)?;
            }
            for entry in staged {
                tx.execute(
                    "INSERT INTO staged_embeddings (tenant_id, collection, key, id, embedding)
                     VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (tenant_id, collection, key) DO UPDATE
                     SET id = excluded.id, embedding = excluded.embedding",
                    &[
                        &tenant.as_str(),
                        &collection.as_str(),
                        &index_key(entry.key)?,
                        &entry.id,
                        &vector_bytes(&entry.embedding),
                    ],
                )
                .await
                .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)
        })
    }

    fn staged_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Option<(EmbeddingModel, Vec<StagedEmbedding>)>> {
        self.block(async {
            let mut client = self.client().await?;
            // One snapshot for the model and its vectors.
            let tx = client
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await
                .map_err(pg)?;
            let Some(model) = tx
                .query_opt(
                    "SELECT record FROM staged_models WHERE tenant_id = $1 AND collection = $2",
                    &[&tenant.as_str(), &collection.as_str()],
                )
                .await
                .map_err(pg)?
            else {
                return Ok(None);
            };
            let model: EmbeddingModel = decode("staged_models", model.get::<_, &[u8]>(0))?;
            let rows = tx
                .query(
                    "SELECT key, id, embedding FROM staged_embeddings
                     WHERE tenant_id = $1 AND collection = $2 ORDER BY key",
                    &[&tenant.as_str(), &collection.as_str()],
                )
                .await
                .map_err(pg)?;
            tx.commit().await.map_err(pg)?;
            let vectors = rows
                .iter()
                .map(|row| {
                    Ok(StagedEmbedding {
                        key: u64::try_from(row.get::<_, i64>(0)).unwrap_or(0),
                        id: row.get(1),
                        embedding: vector_of("staged_embeddings", row.get::<_, &[u8]>(2))?,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Some((model, vectors)))
        })
    }

    fn swap_embeddings(
        &self,
        tenant: &TenantId,
        collection: &CollectionRecord,
        memories: &[StoredMemory],
    ) -> Result<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            self.check_fence(&*tx, tenant).await?;
            unstage(&*tx, tenant, &collection.name).await?;
            upsert_memories(&*tx, tenant, &collection.name, memories).await?;
            upsert_collection(&*tx, tenant, collection).await?;
            tx.commit().await.map_err(pg)
        })
    }
}

impl OutboxStore for PgStore {
    fn put_delivery(&self, delivery: &OutboxDelivery) -> Result<()> {
        self.execute(
            "INSERT INTO outbox (tenant_id, id, created_at, next_attempt_at, record)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (tenant_id, id) DO UPDATE SET created_at = excluded.created_at,
                 next_attempt_at = excluded.next_attempt_at, record = excluded.record",
            &[
                &delivery.tenant_id.as_str(),
                &delivery.id,
                &delivery.created_at,
                &delivery.next_attempt_at,
                &encode(delivery)?,
            ],
        )?;
        Ok(())
    }

    fn delivery(&self, tenant: &TenantId, id: &str) -> Result<Option<OutboxDelivery>> {
        self.record(
            "outbox",
            "SELECT record FROM outbox WHERE tenant_id = $1 AND id = $2",
            &[&tenant.as_str(), &id],
        )
    }

    fn pending_deliveries(&self) -> Result<Vec<OutboxDelivery>> {
        let mut deliveries: Vec<OutboxDelivery> = self.records(
            "outbox",
            "SELECT record FROM outbox ORDER BY created_at, id",
            &[],
        )?;
        oldest_first(&mut deliveries, |delivery| {
            (delivery.created_at, &delivery.id)
        });
        Ok(deliveries)
    }

    fn delete_delivery(&self, tenant: &TenantId, id: &str) -> Result<()> {
        self.execute(
            "DELETE FROM outbox WHERE tenant_id = $1 AND id = $2",
            &[&tenant.as_str(), &id],
        )?;
        Ok(())
    }

    fn delete_deliveries_of(&self, tenant: &TenantId) -> Result<usize> {
        self.execute(
            "DELETE FROM outbox WHERE tenant_id = $1",
            &[&tenant.as_str()],
        )
    }
}

impl AuditStore for PgStore {
    fn append_audit(&self, entries: &[AuditEntry]) -> Result<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            for entry in entries {
                tx.execute(
                    "INSERT INTO audit (tenant_id, id, at, record) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (tenant_id, id) DO UPDATE
                     SET at = excluded.at, record = excluded.record",
                    &[
                        &entry.tenant_id.as_str(),
                        &entry.id,
                        &entry.at,
                        &encode(entry)?,
                    ],
                )
                .await
                .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)
        })
    }

    fn audit(
        &self,
        tenant: &TenantId,
        since: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>> {
        // The column holds microseconds: re-checked on the entries' own times.
        let mut entries: Vec<AuditEntry> = self.records(
            "audit",
            "SELECT record FROM audit WHERE tenant_id = $1 AND at >= $2
             ORDER BY id DESC LIMIT $3",
            &[&tenant.as_str(), &since, &self::limit(limit)],
        )?;
        entries.retain(|entry| entry.at >= since);
        Ok(entries)
    }

    fn prune_audit(&self, before: DateTime<Utc>) -> Result<usize> {
        self.execute("DELETE FROM audit WHERE at < $1", &[&before])
    }
}

impl IngestStore for PgStore {
    fn put_batch(&self, batch: &IngestBatchRecord) -> Result<()> {
        self.write(
            &batch.tenant_id,
            "INSERT INTO ingest_batches (tenant_id, id, finished, created_at, updated_at, record)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (tenant_id, id) DO UPDATE SET finished = excluded.finished,
                 created_at = excluded.created_at, updated_at = excluded.updated_at,
                 record = excluded.record",
            &[
                &batch.tenant_id.as_str(),
                &batch.id,
                &batch.is_finished(),
                &batch.created_at,
                &batch.updated_at,
                &encode(batch)?,
            ],
        )?;
        Ok(())
    }

    fn batch(&self, tenant: &TenantId, id: &str) -> Result<Option<IngestBatchRecord>> {
        self.record(
            "ingest_batches",
            "SELECT record FROM ingest_batches WHERE tenant_id = $1 AND id = $2",
            &[&tenant.as_str(), &id],
        )
    }

    fn unfinished_batches(&self) -> Result<Vec<IngestBatchRecord>> {
        let mut batches: Vec<IngestBatchRecord> = self.records(
            "ingest_batches",
            "SELECT record FROM ingest_batches WHERE NOT finished ORDER BY created_at, id",
            &[],
        )?;
        oldest_first(&mut batches, |batch| (batch.created_at, &batch.id));
        Ok(batches)
    }

    fn batches_of(&self, tenant: &TenantId) -> Result<Vec<IngestBatchRecord>> {
        self.records(
            "ingest_batches",
            "SELECT record FROM ingest_batches WHERE tenant_id = $1",
            &[&tenant.as_str()],
        )
    }

    fn prune_batches(&self, before: DateTime<Utc>) -> Result<usize> {
        self.execute(
            "DELETE FROM ingest_batches WHERE finished AND updated_at < $1",
            &[&before],
        )
    }
}

const UPSERT_IMPORT: &str = "INSERT INTO imports (tenant_id, id, finished, created_at, record)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tenant_id, id) DO UPDATE SET finished = excluded.finished,
         created_at = excluded.created_at, record = excluded.record";

impl ImportStore for PgStore {
    fn create_import(&self, job: &ImportJobRecord, payload: &ImportPayload) -> Result<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            self.check_fence(&*tx, &job.tenant_id).await?;
            tx.execute(
                UPSERT_IMPORT,
                &[
                    &job.tenant_id.as_str(),
                    &job.id,
                    &job.state.is_finished(),
                    &job.created_at,
                    &encode(job)?,
                ],
            )
            .await
            .map_err(pg)?;
            tx.execute(
                "INSERT INTO import_payloads (tenant_id, id, record) VALUES ($1, $2, $3)
                 ON CONFLICT (tenant_id, id) DO UPDATE SET record = excluded.record",
                &[&job.tenant_id.as_str(), &job.id, &encode(payload)?],
            )
            .await
            .map_err(pg)?;
            tx.commit().await.map_err(pg)
        })
    }

    fn put_import(&self, job: &ImportJobRecord) -> Result<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            self.check_fence(&*tx, &job.tenant_id).await?;
            let finished = job.state.is_finished();
            tx.execute(
                UPSERT_IMPORT,
                &[
                    &job.tenant_id.as_str(),
                    &job.id,
                    &finished,
                    &job.created_at,
                    &encode(job)?,
                ],
            )
            .await
            .map_err(pg)?;
            if finished {
                tx.execute(
                    "DELETE FROM import_payloads WHERE tenant_id = $1 AND id = $2",
                    &[&job.tenant_id.as_str(), &job.id],
                )
                .await
                .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)
        })
    }

    fn import_job(&self, tenant: &TenantId, id: &str) -> Result<Option<ImportJobRecord>> {
        self.record(
            "imports",
            "SELECT record FROM imports WHERE tenant_id = $1 AND id = $2",
            &[&tenant.as_str(), &id],
        )
    }

    fn import_payload(&self, tenant: &TenantId, id: &str) -> Result<Option<ImportPayload>> {
        self.record(
            "import_payloads",
            "SELECT record FROM import_payloads WHERE tenant_id = $1 AND id = $2",
            &[&tenant.as_str(), &id],
        )
    }

    fn unfinished_imports(&self) -> Result<Vec<ImportJobRecord>> {
        let mut jobs: Vec<ImportJobRecord> = self.records(
            "imports",
            "SELECT record FROM imports WHERE NOT finished ORDER BY created_at, id",
            &[],
        )?;
        oldest_first(&mut jobs, |job| (job.created_at, &job.id));
        Ok(jobs)
    }

    fn imports_of(&self, tenant: &TenantId) -> Result<Vec<ImportJobRecord>> {
        self.records(
            "imports",
            "SELECT record FROM imports WHERE tenant_id = $1",
            &[&tenant.as_str()],
        )
    }
}

impl SessionStore for PgStore {
    fn put_session(&self, session: &SessionRecord) -> Result<()> {
        self.execute(
            "INSERT INTO sessions (id_hash, tenant_id, expires_at, record)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (id_hash) DO UPDATE SET tenant_id = excluded.tenant_id,
                 expires_at = excluded.expires_at, record = excluded.record",
            &[
                &session.id_hash,
                &session.tenant_id.as_str(),
                &session.expires_at,
                &encode(session)?,
            ],
        )?;
        Ok(())
    }

    fn session(&self, id_hash: &str) -> Result<Option<SessionRecord>> {
        self.record(
            "sessions",
            "SELECT record FROM sessions WHERE id_hash = $1",
            &[&id_hash],
        )
    }

    fn delete_session(&self, id_hash: &str) -> Result<bool> {
        let removed = self.execute("DELETE FROM sessions WHERE id_hash = $1", &[&id_hash])?;
        Ok(removed > 0)
    }

    fn sessions_of(&self, tenant: &TenantId) -> Result<Vec<SessionRecord>> {
        self.records(
            "sessions",
            "SELECT record FROM sessions WHERE tenant_id = $1",
            &[&tenant.as_str()],
        )
    }

    fn delete_sessions_of(&self, tenant: &TenantId) -> Result<usize> {
        self.execute(
            "DELETE FROM sessions WHERE tenant_id = $1",
            &[&tenant.as_str()],
        )
    }

    fn prune_sessions(&self, before: DateTime<Utc>) -> Result<usize> {
        self.execute("DELETE FROM sessions WHERE expires_at < $1", &[&before])
    }
}

impl AccountStore for PgStore {
    fn put_mail(&self, mail: &MailRecord) -> Result<()> {
        self.execute(
            "INSERT INTO mails (id, tenant_id, created_at, record) VALUES ($1, $2, $3, $4)
             ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id,
                 created_at = excluded.created_at, record = excluded.record",
            &[
                &mail.id,
                &mail.tenant_id.as_ref().map(TenantId::as_str),
                &mail.created_at,
                &encode(mail)?,
            ],
        )?;
        Ok(())
    }

    fn mail(&self, id: &str) -> Result<Option<MailRecord>> {
        self.record("mails", "SELECT record FROM mails WHERE id = $1", &[&id])
    }

    fn pending_mails(&self) -> Result<Vec<MailRecord>> {
        let mut mails: Vec<MailRecord> = self.records(
            "mails",
            "SELECT record FROM mails ORDER BY created_at, id",
            &[],
        )?;
        oldest_first(&mut mails, |mail| (mail.created_at, &mail.id));
        Ok(mails)
    }

    fn delete_mail(&self, id: &str) -> Result<()> {
        self.execute("DELETE FROM mails WHERE id = $1", &[&id])?;
        Ok(())
    }

    fn delete_mails_of(&self, tenant: &TenantId) -> Result<usize> {
        self.execute(
            "DELETE FROM mails WHERE tenant_id = $1",
            &[&tenant.as_str()],
        )
    }

    fn put_reveal(&self, reveal: &RevealRecord) -> Result<()> {
        self.execute(
            "INSERT INTO reveals (token_hash, tenant_id, expires_at, record)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (token_hash) DO UPDATE SET tenant_id = excluded.tenant_id,
                 expires_at = excluded.expires_at, record = excluded.record",
            &[
                &reveal.token_hash,
                &reveal.tenant_id.as_str(),
                &reveal.expires_at,
                &encode(reveal)?,
            ],
        )?;
        Ok(())
    }

    fn reveal(&self, token_hash: &str) -> Result<Option<RevealRecord>> {
        self.record(
            "reveals",
            "SELECT record FROM reveals WHERE token_hash = $1",
            &[&token_hash],
        )
    }

    fn take_reveal(&self, token_hash: &str) -> Result<Option<RevealRecord>> {
        // One statement: of two concurrent takes, one deletes the row and gets it.
        self.record(
            "reveals",
            "DELETE FROM reveals WHERE token_hash = $1 RETURNING record",
            &[&token_hash],
        )
    }

    fn delete_reveals_of(&self, tenant: &TenantId) -> Result<usize> {
        self.execute(
            "DELETE FROM reveals WHERE tenant_id = $1",
            &[&tenant.as_str()],
        )
    }

    fn prune_reveals(&self, before: DateTime<Utc>) -> Result<usize> {
        self.execute("DELETE FROM reveals WHERE expires_at < $1", &[&before])
    }

    fn record_event_once(&self, source: &str, id: &str, at: DateTime<Utc>) -> Result<bool> {
        let inserted = self.execute(
            "INSERT INTO events (source, id, at) VALUES ($1, $2, $3)
             ON CONFLICT (source, id) DO NOTHING",
            &[&source, &id, &at],
        )?;
        Ok(inserted == 1)
    }

    fn forget_event(&self, source: &str, id: &str) -> Result<()> {
        self.execute(
            "DELETE FROM events WHERE source = $1 AND id = $2",
            &[&source, &id],
        )?;
        Ok(())
    }

    fn forget_events_of(&self, source: &str) -> Result<usize> {
        self.execute("DELETE FROM events WHERE source = $1", &[&source])
    }

    fn prune_events(&self, before: DateTime<Utc>) -> Result<usize> {
        self.execute("DELETE FROM events WHERE at < $1", &[&before])
    }

    fn email_address_of(&self, tenant: &TenantId) -> Result<Option<EmailAddressRecord>> {
        self.record(
            "email_addresses",
            "SELECT record FROM email_addresses WHERE tenant_id = $1",
            &[&tenant.as_str()],
        )
    }

    fn email_address_by_hash(&self, local_hash: &str) -> Result<Option<EmailAddressRecord>> {
        self.record(
            "email_addresses",
            "SELECT record FROM email_addresses WHERE local_hash = $1",
            &[&local_hash],
        )
    }

    fn replace_email_address(
        &self,
        address: &EmailAddressRecord,
        expected: Option<&str>,
    ) -> Result<bool> {
        // One row per tenant, found by either key: replacing it moves the lookup in the
        // same write. Each case is one statement, so the compare and the swap are atomic.
        let record = encode(address)?;
        let changed = match expected {
            None => self.execute(
                "INSERT INTO email_addresses (tenant_id, local_hash, record)
                 VALUES ($1, $2, $3) ON CONFLICT (tenant_id) DO NOTHING",
                &[&address.tenant_id.as_str(), &address.local_hash, &record],
            )?,
            Some(expected) => self.execute(
                "UPDATE email_addresses SET local_hash = $2, record = $3
                 WHERE tenant_id = $1 AND local_hash = $4",
                &[
                    &address.tenant_id.as_str(),
                    &address.local_hash,
                    &record,
                    &expected,
                ],
            )?,
        };
        Ok(changed == 1)
    }

    fn delete_email_address_of(&self, tenant: &TenantId) -> Result<bool> {
        Ok(self.execute(
            "DELETE FROM email_addresses WHERE tenant_id = $1",
            &[&tenant.as_str()],
        )? > 0)
    }
}

impl ConnectorStore for PgStore {
    fn put_connection(&self, connection: &ConnectionRecord) -> Result<()> {
        self.execute(
            "INSERT INTO connections (tenant_id, id, created_at, record) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant_id, id) DO UPDATE
             SET created_at = excluded.created_at, record = excluded.record",
            &[
                &connection.tenant_id.as_str(),
                &connection.id,
                &connection.created_at,
                &encode(connection)?,
            ],
        )?;
        Ok(())
    }

    fn connection(&self, tenant: &TenantId, id: &str) -> Result<Option<ConnectionRecord>> {
        self.record(
            "connections",
            "SELECT record FROM connections WHERE tenant_id = $1 AND id = $2",
            &[&tenant.as_str(), &id],
        )
    }

    fn connections(&self, tenant: &TenantId) -> Result<Vec<ConnectionRecord>> {
        let mut found: Vec<ConnectionRecord> = self.records(
            "connections",
            "SELECT record FROM connections WHERE tenant_id = $1 ORDER BY created_at, id",
            &[&tenant.as_str()],
        )?;
        oldest_first(&mut found, |connection| {
            (connection.created_at, &connection.id)
        });
        Ok(found)
    }

    fn all_connections(&self) -> Result<Vec<ConnectionRecord>> {
        let mut found: Vec<ConnectionRecord> = self.records(
            "connections",
            "SELECT record FROM connections ORDER BY tenant_id, created_at, id",
            &[],
        )?;
        found.sort_by(|a, b| {
            (a.tenant_id.as_str(), a.created_at, &a.id).cmp(&(
                b.tenant_id.as_str(),
                b.created_at,
                &b.id,
            ))
        });
        Ok(found)
    }

    fn delete_connection(&self, tenant: &TenantId, id: &str) -> Result<bool> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            let removed = tx
                .execute(
                    "DELETE FROM connections WHERE tenant_id = $1 AND id = $2",
                    &[&tenant.as_str(), &id],
                )
                .await
                .map_err(pg)?;
            if removed == 0 {
                tx.rollback().await.map_err(pg)?;
                return Ok(false);
            }
            for sql in [
                "DELETE FROM sync_runs WHERE tenant_id = $1 AND connection_id = $2",
                "DELETE FROM synced_records WHERE tenant_id = $1 AND connection_id = $2",
            ] {
                tx.execute(sql, &[&tenant.as_str(), &id])
                    .await
                    .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)?;
            Ok(true)
        })
    }

    fn put_run(&self, run: &SyncRunRecord) -> Result<()> {
        self.execute(
            "INSERT INTO sync_runs (tenant_id, connection_id, id, created_at, record)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (tenant_id, connection_id, id) DO UPDATE
             SET created_at = excluded.created_at, record = excluded.record",
            &[
                &run.tenant_id.as_str(),
                &run.connection_id,
                &run.id,
                &run.created_at,
                &encode(run)?,
            ],
        )?;
        Ok(())
    }

    fn runs(
        &self,
        tenant: &TenantId,
        connection: &str,
        limit: usize,
    ) -> Result<Vec<SyncRunRecord>> {
        self.records(
            "sync_runs",
            "SELECT record FROM sync_runs WHERE tenant_id = $1 AND connection_id = $2
             ORDER BY id DESC LIMIT $3",
            &[&tenant.as_str(), &connection, &self::limit(limit)],
        )
    }

    fn runs_since(&self, since: DateTime<Utc>) -> Result<Vec<SyncRunRecord>> {
        let mut found: Vec<SyncRunRecord> = self.records(
            "sync_runs",
            "SELECT record FROM sync_runs WHERE created_at >= $1 ORDER BY created_at, id",
            &[&since],
        )?;
        found.retain(|run| run.created_at >= since);
        oldest_first(&mut found, |run| (run.created_at, &run.id));
        Ok(found)
    }

    fn trim_runs(&self, tenant: &TenantId, connection: &str, keep: usize) -> Result<usize> {
        self.execute(
            "DELETE FROM sync_runs WHERE tenant_id = $1 AND connection_id = $2
             AND id NOT IN (SELECT id FROM sync_runs
                            WHERE tenant_id = $1 AND connection_id = $2
                            ORDER BY id DESC LIMIT $3)",
            &[&tenant.as_str(), &connection, &limit(keep)],
        )
    }

    fn synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        ids: &[String],
    ) -> Result<Vec<Option<SyncedRecord>>> {
        let found: Vec<SyncedRecord> = self.records(
            "synced_records",
            "SELECT record FROM synced_records
             WHERE tenant_id = $1 AND connection_id = $2 AND record_id = ANY($3)",
            &[&tenant.as_str(), &connection, &ids],
        )?;
        let by_id: std::collections::HashMap<&str, &SyncedRecord> = found
            .iter()
            .map(|record| (record.record_id.as_str(), record))
            .collect();
        Ok(ids
            .iter()
            .map(|id| by_id.get(id.as_str()).map(|record| (*record).clone()))
            .collect())
    }

    fn put_synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        records: &[SyncedRecord],
    ) -> Result<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            for record in records {
                tx.execute(
                    "INSERT INTO synced_records (tenant_id, connection_id, record_id, record)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (tenant_id, connection_id, record_id) DO UPDATE
                     SET record = excluded.record",
                    &[
                        &tenant.as_str(),
                        &connection,
                        &record.record_id,
                        &encode(record)?,
                    ],
                )
                .await
                .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)
        })
    }

    fn delete_synced_records(
        &self,
        tenant: &TenantId,
        connection: &str,
        ids: &[String],
    ) -> Result<()> {
        self.execute(
            "DELETE FROM synced_records
             WHERE tenant_id = $1 AND connection_id = $2 AND record_id = ANY($3)",
            &[&tenant.as_str(), &connection, &ids],
        )?;
        Ok(())
    }

    fn synced_record_ids(&self, tenant: &TenantId, connection: &str) -> Result<Vec<String>> {
        self.block(async {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT record_id FROM synced_records
                     WHERE tenant_id = $1 AND connection_id = $2 ORDER BY record_id",
                    &[&tenant.as_str(), &connection],
                )
                .await
                .map_err(pg)?;
            Ok(rows.iter().map(|row| row.get(0)).collect())
        })
    }

    fn put_oauth_state(&self, state: &OAuthStateRecord) -> Result<()> {
        self.execute(
            "INSERT INTO oauth_states (state_hash, tenant_id, expires_at, record)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (state_hash) DO UPDATE SET tenant_id = excluded.tenant_id,
                 expires_at = excluded.expires_at, record = excluded.record",
            &[
                &state.state_hash,
                &state.tenant_id.as_str(),
                &state.expires_at,
                &encode(state)?,
            ],
        )?;
        Ok(())
    }

    fn take_oauth_state(&self, state_hash: &str) -> Result<Option<OAuthStateRecord>> {
        // One statement: of two concurrent takes, one deletes the row and gets it.
        self.record(
            "oauth_states",
            "DELETE FROM oauth_states WHERE state_hash = $1 RETURNING record",
            &[&state_hash],
        )
    }

    fn prune_oauth_states(&self, before: DateTime<Utc>) -> Result<usize> {
        self.execute("DELETE FROM oauth_states WHERE expires_at < $1", &[&before])
    }
}

#[cfg(test)]
mod tests {
    use super::{split_tls, walk_pages, TlsWish, MEMORY_PAGE};

    #[test]
    fn pages_are_walked_after_the_last_id_until_one_is_not_full() {
        let ids: Vec<String> = (0..MEMORY_PAGE * 2 + 7)
            .map(|n| format!("{n:06}"))
            .collect();
        let mut asked = Vec::new();
        let mut visited = Vec::new();
        walk_pages(
            |id: &String| id.clone(),
            |after| {
                asked.push(after.map(str::to_owned));
                let start = after.map_or(0, |after| {
                    ids.iter().position(|id| id == after).unwrap() + 1
                });
                Ok(ids[start..].iter().take(MEMORY_PAGE).cloned().collect())
            },
            |id| visited.push(id),
        )
        .unwrap();
        assert_eq!(visited, ids, "every row once, in order");
        assert_eq!(
            asked,
            vec![
                None,
                Some(ids[MEMORY_PAGE - 1].clone()),
                Some(ids[MEMORY_PAGE * 2 - 1].clone())
            ]
        );
    }

    #[test]
    fn tls_settings_are_taken_out_of_both_forms() {
        let (rest, wish) = split_tls(
            "postgresql://u@db.example/memvault?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&port=5433",
        )
        .unwrap();
        assert_eq!(rest, "postgresql://u@db.example/memvault?port=5433");
        assert_eq!(
            wish,
            TlsWish {
                tls: true,
                root_cert: Some("/etc/ca.pem".to_owned())
            }
        );
        let (rest, wish) = split_tls("postgresql://u@/m?host=/tmp/x&sslmode=disable").unwrap();
        assert_eq!(rest, "postgresql://u@/m?host=/tmp/x");
        assert!(!wish.tls);
        let (rest, wish) = split_tls("postgresql://u@h/m?sslmode=require").unwrap();
        assert_eq!(rest, "postgresql://u@h/m");
        assert!(wish.tls);
        let (rest, wish) = split_tls("host=h user=u sslmode=require dbname=m").unwrap();
        assert_eq!(rest, "host=h user=u dbname=m");
        assert_eq!(
            wish,
            TlsWish {
                tls: true,
                root_cert: None
            }
        );
        assert!(split_tls("host=h sslmode=sometimes").is_err());
    }
}
