//! Connector runs under supervision, without HTTP: a provider that panics gives a failed
//! run with its reason and counts toward the pause like any failure; scheduled runs that
//! fail are retried by the sync job's back-off and paused after five, a pause that
//! outlives a restart and ends with a manual success; a "sync now" while a run is in
//! progress joins that run instead of walking the provider again.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use memvault_connectors::provider::{
    Context, Credentials, IdPage, Page, Provider, ProviderError, Window,
};
use memvault_connectors::ProviderKind;
use memvault_core::service::Write;
use memvault_core::{Agent, Memvault, ServiceConfig};
use memvault_storage::{CollectionName, ConnectionStatus, SecretBox, SledStore};
use memvault_sync::{Connections, ConnectorSettings, NewConnection, ProviderCatalog};
use serde_json::{json, Map, Value};

/// Walks into the provider's changes: how many times, over the whole test binary.
static PANICKING_WALKS: AtomicUsize = AtomicUsize::new(0);
static SLOW_WALKS: AtomicUsize = AtomicUsize::new(0);

/// A Linear stand-in with a bug: every walk panics.
struct PanickingProvider;

#[async_trait]
impl Provider for PanickingProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Linear
    }

    fn overlap(&self) -> Duration {
        Duration::ZERO
    }

    fn validate(&self, _config: &Value, _credentials: &Credentials) -> Result<(), String> {
        Ok(())
    }

    async fn changes(
        &self,
        _cx: &Context<'_>,
        _window: &Window,
        _page: Option<&str>,
    ) -> Result<Page, ProviderError> {
        PANICKING_WALKS.fetch_add(1, Ordering::SeqCst);
        panic!("scripted provider bug: index out of range");
    }

    async fn ids(&self, _cx: &Context<'_>, _page: Option<&str>) -> Result<IdPage, ProviderError> {
        panic!("scripted provider bug in ids");
    }
}

/// Whether [`FlakyProvider`]'s source answers.
static FLAKY_HEALTHY: AtomicBool = AtomicBool::new(false);

/// A Notion stand-in whose source is down until the test says otherwise.
struct FlakyProvider;

#[async_trait]
impl Provider for FlakyProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Notion
    }

    fn overlap(&self) -> Duration {
        Duration::ZERO
    }

    fn validate(&self, _config: &Value, _credentials: &Credentials) -> Result<(), String> {
        Ok(())
    }

    async fn changes(
        &self,
        _cx: &Context<'_>,
        _window: &Window,
        _page: Option<&str>,
    ) -> Result<Page, ProviderError> {
        if FLAKY_HEALTHY.load(Ordering::SeqCst) {
            Ok(Page::default())
        } else {
            Err(ProviderError::Invalid("the source is down".to_owned()))
        }
    }

    async fn ids(&self, _cx: &Context<'_>, _page: Option<&str>) -> Result<IdPage, ProviderError> {
        Ok(IdPage::default())
    }
}

/// A HubSpot stand-in whose walk takes a while and finds nothing.
struct SlowProvider;

#[async_trait]
impl Provider for SlowProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Hubspot
    }

    fn overlap(&self) -> Duration {
        Duration::ZERO
    }

    fn validate(&self, _config: &Value, _credentials: &Credentials) -> Result<(), String> {
        Ok(())
    }

    async fn changes(
        &self,
        _cx: &Context<'_>,
        _window: &Window,
        _page: Option<&str>,
    ) -> Result<Page, ProviderError> {
        SLOW_WALKS.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(600)).await;
        Ok(Page::default())
    }

    async fn ids(&self, _cx: &Context<'_>, _page: Option<&str>) -> Result<IdPage, ProviderError> {
        Ok(IdPage::default())
    }
}

fn scripted(kind: ProviderKind) -> &'static dyn Provider {
    match kind {
        ProviderKind::Linear => &PanickingProvider,
        ProviderKind::Hubspot => &SlowProvider,
        ProviderKind::Notion => &FlakyProvider,
        other => memvault_connectors::providers::provider(other),
    }
}

/// The service's sealing key, the same across restarts (connections' credentials).
const KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

async fn start(directory: &std::path::Path) -> (Memvault, Connections, Agent) {
    // The scheduler and the retries stay out of the way: these tests drive every run.
    let (tick, retry) = (Duration::from_secs(3600), Duration::from_secs(3600));
    start_with(directory, tick, retry).await
}

/// Started with the scheduler's `tick` and the sync job's back-off from `retry` to four
/// times it.
async fn start_with(
    directory: &std::path::Path,
    tick: Duration,
    retry: Duration,
) -> (Memvault, Connections, Agent) {
    let mut config = ServiceConfig::default();
    config.intelligence.secrets = Some(Arc::new(SecretBox::from_key_material(KEY).unwrap()));
    let settings = ConnectorSettings {
        catalog: ProviderCatalog(scripted),
        tick,
        retry: memvault_types::Backoff::new(retry, retry * 4),
        ..ConnectorSettings::default()
    };
    let store = Arc::new(SledStore::open(directory).unwrap());
    let service = Memvault::start(store, crate::support::length_embedders(), config)
        .await
        .unwrap();
    let tenant = crate::support::tenant();
    let agent = match service.tenants().create(tenant).await {
        Ok((_, key)) => {
            std::fs::write(directory.join("test-key"), &key).unwrap();
            service.authorizer().authenticate(&key).unwrap()
        }
        // Started again on the same store: the tenant is there.
        Err(_) => {
            let key = std::fs::read_to_string(directory.join("test-key")).unwrap();
            service.authorizer().authenticate(&key).unwrap()
        }
    };
    let connections = memvault_sync::start(&service, settings).await.unwrap();
    (service, connections, agent)
}

async fn stop(service: Memvault, connections: Connections) {
    connections.stop().await;
    service.shutdown().await;
}

async fn connect(
    service: &Memvault,
    connections: &Connections,
    agent: &Agent,
    provider: &str,
) -> String {
    let access = service
        .authorizer()
        .authorize::<Write>(agent, CollectionName::parse("synced").unwrap())
        .unwrap();
    let mut credentials = Map::new();
    credentials.insert("token".to_owned(), json!("secret-token-123"));
    credentials.insert("api_key".to_owned(), json!("secret-token-123"));
    let new = NewConnection {
        provider: provider.to_owned(),
        name: None,
        container_tag: None,
        config: Map::new(),
        credentials,
    };
    connections.create(&access, new).await.unwrap().id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_provider_gives_failed_runs_and_is_paused_after_five() {
    let directory = tempfile::tempdir().unwrap();
    let (service, connections, agent) = start(directory.path()).await;
    let id = connect(&service, &connections, &agent, "linear").await;
    for attempt in 1..=5u32 {
        let outcome = connections.sync(&agent, &id).await.unwrap();
        assert_eq!(outcome.run.status, "error", "attempt {attempt}");
        let error = outcome.error.clone().unwrap_or_default();
        assert!(
            error.contains("panic") && error.contains("scripted provider bug"),
            "attempt {attempt}: {error}"
        );
        assert!(!error.contains("secret-token-123"), "{error}");
        let expected = if attempt < 5 {
            ConnectionStatus::Error
        } else {
            ConnectionStatus::Paused
        };
        assert_eq!(outcome.status, expected, "attempt {attempt}");
    }
    let view = connections.get(&agent, &id).await.unwrap();
    assert_eq!(view.status, ConnectionStatus::Paused);
    assert_eq!(view.consecutive_failures, 5);
    assert!(view.next_sync_at.is_none(), "{:?}", view.next_sync_at);
    let runs = connections.runs(&agent, &id, 10).await.unwrap();
    assert_eq!(runs.len(), 5);
    assert!(runs.iter().all(|run| run.status == "error"));
    assert!(PANICKING_WALKS.load(Ordering::SeqCst) >= 5);
    // The lock is free again: the connection can be deleted at once.
    connections.delete(&agent, &id, false).await.unwrap();
    stop(service, connections).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_now_during_a_run_joins_it_instead_of_walking_again() {
    let directory = tempfile::tempdir().unwrap();
    let (service, connections, agent) = start(directory.path()).await;
    let id = connect(&service, &connections, &agent, "hubspot").await;
    let walks_before = SLOW_WALKS.load(Ordering::SeqCst);
    let first = {
        let (connections, agent, id) = (connections.clone(), agent.clone(), id.clone());
        tokio::spawn(async move { connections.sync(&agent, &id).await })
    };
    // The first run is walking (it takes 600 ms) when the second "sync now" comes.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let second = connections.sync(&agent, &id).await.unwrap();
    let first = first.await.unwrap().unwrap();
    assert_eq!(
        second.run.id, first.run.id,
        "the second call joined the first run"
    );
    assert_eq!(second.status, ConnectionStatus::Active);
    assert_eq!(SLOW_WALKS.load(Ordering::SeqCst) - walks_before, 1);
    let runs = connections.runs(&agent, &id, 10).await.unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    // With no run in progress, "sync now" runs.
    let third = connections.sync(&agent, &id).await.unwrap();
    assert_ne!(third.run.id, first.run.id);
    assert_eq!(SLOW_WALKS.load(Ordering::SeqCst) - walks_before, 2);
    stop(service, connections).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_failures_back_off_pause_after_five_stay_paused_across_a_restart_and_resume_on_success(
) {
    let directory = tempfile::tempdir().unwrap();
    let (tick, retry) = (Duration::from_millis(50), Duration::from_millis(20));
    let (service, connections, agent) = start_with(directory.path(), tick, retry).await;
    let id = connect(&service, &connections, &agent, "notion").await;
    // A new connection's first scheduled run is an interval away: a manual sync fails
    // first, then the sync job retries after its back-off.
    let first = connections.sync(&agent, &id).await.unwrap();
    assert_eq!(first.status, ConnectionStatus::Error);
    let mut view = connections.get(&agent, &id).await.unwrap();
    for _ in 0..400 {
        if view.status == ConnectionStatus::Paused {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        view = connections.get(&agent, &id).await.unwrap();
    }
    assert_eq!(view.status, ConnectionStatus::Paused, "{view:?}");
    assert_eq!(view.consecutive_failures, 5);
    let runs = connections.runs(&agent, &id, 20).await.unwrap();
    assert_eq!(runs.len(), 5, "{runs:?}");
    assert!(runs.iter().all(|run| run.status == "error"));
    let scheduled = runs.iter().filter(|run| run.trigger == "schedule").count();
    assert_eq!(scheduled, 4, "{runs:?}");
    // Paused: the scheduler stops retrying (ten ticks, far more than the back-off).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(connections.runs(&agent, &id, 20).await.unwrap().len(), 5);
    stop(service, connections).await;

    // Started again on the same store, the source still down: still paused, not run.
    let (service, connections, agent) = start_with(directory.path(), tick, retry).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let view = connections.get(&agent, &id).await.unwrap();
    assert_eq!(view.status, ConnectionStatus::Paused);
    assert_eq!(connections.runs(&agent, &id, 20).await.unwrap().len(), 5);
    // A manual sync that fails leaves it paused; one that succeeds makes it active.
    let failed = connections.sync(&agent, &id).await.unwrap();
    assert_eq!(failed.status, ConnectionStatus::Paused);
    FLAKY_HEALTHY.store(true, Ordering::SeqCst);
    let succeeded = connections.sync(&agent, &id).await.unwrap();
    assert_eq!(succeeded.status, ConnectionStatus::Active, "{succeeded:?}");
    let view = connections.get(&agent, &id).await.unwrap();
    assert_eq!(view.status, ConnectionStatus::Active);
    assert_eq!(view.consecutive_failures, 0);
    stop(service, connections).await;
}
