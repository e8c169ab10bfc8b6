//! The settings from `[connectors]` (with the catalog of provider implementations), and
//! the scheduler's choice of what is due.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use memvault_connectors::oauth::App;
use memvault_connectors::provider::Provider;
use memvault_connectors::{Budget, ProviderKind};
use memvault_storage::{ConnectionRecord, ConnectionStatus};
use rand::Rng;

use memvault_types::Backoff;

/// The sync job's back-off: the wait before a failed connection is synced again, by
/// consecutive failures: 1, 2, 4, ... minutes, at most an hour.
pub const SYNC_RETRY: Backoff = Backoff::new(Duration::from_secs(60), Duration::from_secs(3600));

/// Consecutive failed syncs after which a connection is paused (SPEC: Limits).
pub const AUTO_PAUSE_AFTER: u32 = 5;
/// The default interval between scheduled syncs.
pub const DEFAULT_INTERVAL_MINUTES: u64 = 60;
/// Runs kept per connection (older ones are trimmed).
pub const RUNS_KEPT: usize = 200;

/// One provider's section of `[connectors.<provider>]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderSettings {
    /// The API root; None: the provider's real one.
    pub base_url: Option<String>,
    /// The OAuth app, when one is configured (client id and secret both set).
    pub app: Option<App>,
    /// The pacing of calls; None: the provider's documented limits
    /// ([`memvault_connectors::Budget::default_for`]).
    pub budget: Option<Budget>,
}

/// `[connectors]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectorSettings {
    pub providers: BTreeMap<ProviderKind, ProviderSettings>,
    /// Lets Confluence's `config.base_url` be a loopback or private address (tests).
    pub allow_private_targets: bool,
    /// How often the scheduler looks for due connections.
    pub tick: Duration,
    /// How often a connection's records are reconciled with the source (deletions).
    pub reconcile_every: Duration,
    /// Pages one run walks before it stops and resumes at the next tick (0: no cap).
    pub max_pages_per_run: u64,
    /// Runs at once across the server.
    pub concurrent_runs: usize,
    /// The sync job's back-off after a failure ([`SYNC_RETRY`]; tests shorten it).
    pub retry: Backoff,
    /// How long an OAuth start's state stays valid.
    pub oauth_state_ttl: Duration,
    /// `server.public_url`: the OAuth callbacks and the dashboard are under it.
    pub public_url: String,
    /// Which implementation syncs each provider: the built-in ones, or a test's.
    pub catalog: ProviderCatalog,
}

/// Which [`Provider`] implementation syncs a provider kind. The server always uses
/// [`ProviderCatalog::BUILT_IN`]; tests of the service swap in providers that fail in
/// ways no real API can make them (a panic).
#[derive(Clone, Copy)]
pub struct ProviderCatalog(pub fn(ProviderKind) -> &'static dyn Provider);

impl ProviderCatalog {
    pub const BUILT_IN: ProviderCatalog = ProviderCatalog(memvault_connectors::providers::provider);

    pub fn provider(&self, kind: ProviderKind) -> &'static dyn Provider {
        (self.0)(kind)
    }
}

impl std::fmt::Debug for ProviderCatalog {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let built_in = *self == Self::BUILT_IN;
        formatter
            .debug_tuple("ProviderCatalog")
            .field(&if built_in { "built-in" } else { "custom" })
            .finish()
    }
}

impl PartialEq for ProviderCatalog {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::fn_addr_eq(self.0, other.0)
    }
}

impl Eq for ProviderCatalog {}

impl Default for ConnectorSettings {
    fn default() -> Self {
        ConnectorSettings {
            providers: BTreeMap::new(),
            allow_private_targets: false,
            tick: Duration::from_secs(30),
            reconcile_every: Duration::from_secs(24 * 3600),
            max_pages_per_run: 0,
            concurrent_runs: 4,
            retry: SYNC_RETRY,
            oauth_state_ttl: Duration::from_secs(600),
            public_url: "http://127.0.0.1:8420".to_owned(),
            catalog: ProviderCatalog::BUILT_IN,
        }
    }
}

impl ConnectorSettings {
    /// The API root of `kind`.
    pub fn base_url(&self, kind: ProviderKind) -> String {
        self.providers
            .get(&kind)
            .and_then(|settings| settings.base_url.clone())
            .unwrap_or_else(|| kind.default_base_url().to_owned())
            .trim_end_matches('/')
            .to_owned()
    }

    pub fn app(&self, kind: ProviderKind) -> Option<&App> {
        self.providers
            .get(&kind)
            .and_then(|settings| settings.app.as_ref())
    }
}

/// The sync interval a connection asked for (`config.sync_interval_minutes`, default 60).
pub fn interval_of(connection: &ConnectionRecord) -> Duration {
    let minutes = connection.config["sync_interval_minutes"]
        .as_u64()
        .filter(|minutes| *minutes >= 1)
        .unwrap_or(DEFAULT_INTERVAL_MINUTES);
    Duration::from_secs(minutes * 60)
}

/// The next scheduled sync: the interval from `now`, give or take 10 %.
pub fn next_due(connection: &ConnectionRecord, now: DateTime<Utc>) -> DateTime<Utc> {
    let roll: f64 = rand::thread_rng().gen_range(0.9..1.1);
    now + chrono::Duration::from_std(interval_of(connection).mul_f64(roll)).unwrap_or_default()
}

/// Whether the scheduler syncs the connection now: it is active or in error (not paused),
/// and due; or it is active and a run of it was cut short by a crash or the page cap (its
/// checkpoint resumes at once). A failed run's checkpoint waits for the retry time.
pub fn is_due(connection: &ConnectionRecord, now: DateTime<Utc>) -> bool {
    match connection.status {
        ConnectionStatus::Paused => false,
        ConnectionStatus::Active if connection.checkpoint.is_some() => true,
        _ => connection.next_sync_at.is_some_and(|due| due <= now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memvault_storage::{CollectionName, TenantId};
    use serde_json::json;

    fn connection(
        status: ConnectionStatus,
        checkpoint: bool,
        due_in_minutes: i64,
    ) -> ConnectionRecord {
        let now = Utc::now();
        ConnectionRecord {
            id: "c".into(),
            tenant_id: TenantId::generate(),
            provider: "linear".into(),
            name: None,
            collection: CollectionName::parse("issues").unwrap(),
            container_tag: None,
            config: json!({"sync_interval_minutes": 10}),
            credentials: String::new(),
            key_id: "k".into(),
            status,
            last_error: None,
            consecutive_failures: 0,
            cursor: json!({}),
            checkpoint: checkpoint.then(|| json!({})),
            created_at: now,
            updated_at: now,
            last_sync_at: None,
            next_sync_at: Some(now + chrono::Duration::minutes(due_in_minutes)),
            last_reconciled_at: None,
        }
    }

    #[test]
    fn paused_connections_are_never_due_and_cut_runs_resume_at_once() {
        let now = Utc::now();
        assert!(!is_due(
            &connection(ConnectionStatus::Paused, true, -5),
            now
        ));
        assert!(is_due(
            &connection(ConnectionStatus::Active, false, -1),
            now
        ));
        assert!(!is_due(
            &connection(ConnectionStatus::Active, false, 5),
            now
        ));
        assert!(
            is_due(&connection(ConnectionStatus::Active, true, 5), now),
            "a cut run resumes at once"
        );
        assert!(
            !is_due(&connection(ConnectionStatus::Error, true, 5), now),
            "a failed run waits for its retry"
        );
        assert!(is_due(&connection(ConnectionStatus::Error, true, -1), now));
    }

    #[test]
    fn schedules_follow_the_interval_with_jitter() {
        let now = Utc::now();
        let mut record = connection(ConnectionStatus::Active, false, 0);
        for _ in 0..50 {
            let wait = (next_due(&record, now) - now).num_seconds();
            assert!(
                (540..=660).contains(&wait),
                "10 minutes give or take 10 %: {wait}"
            );
        }
        record.config = json!({});
        assert_eq!(
            interval_of(&record),
            Duration::from_secs(3600),
            "60 minutes by default"
        );
    }
}
