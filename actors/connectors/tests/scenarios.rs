//! The same scenarios against every provider's fake: first sync, incremental sync, edit,
//! delete (reported or reconciled), rate limit, auth failure, a walk failing midway, a
//! capped run resumed from its checkpoint, and a partial listing that deletes nothing.
//! Each provider adds one `scenarios!` line at the bottom.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use memvault_connectors::engine::{self, Checkpoint, Cursor, RunLimits, Sink};
use memvault_connectors::http::{Http, Retries};
use memvault_connectors::provider::{Context, Credentials, ProviderError, Record};
use memvault_connectors::providers::provider;
use memvault_connectors::SyncError;
use memvault_fake_providers::{CallKind, FakeServer, FaultKind};

/// memvault's side, in memory: record id -> (record, hash), the checkpoint, write counts.
#[derive(Default)]
struct MemorySink {
    stored: Mutex<HashMap<String, (Record, String)>>,
    checkpoint: Mutex<Option<Checkpoint>>,
    upserts: Mutex<u64>,
}

#[async_trait]
impl Sink for MemorySink {
    async fn hashes(&self, ids: &[String]) -> Result<Vec<Option<String>>, memvault_types::Failure> {
        let stored = self.stored.lock().unwrap();
        Ok(ids
            .iter()
            .map(|id| stored.get(id).map(|(_, hash)| hash.clone()))
            .collect())
    }
    async fn upsert(&self, records: Vec<(Record, String)>) -> Result<(), memvault_types::Failure> {
        *self.upserts.lock().unwrap() += records.len() as u64;
        let mut stored = self.stored.lock().unwrap();
        for (record, hash) in records {
            stored.insert(record.id.clone(), (record, hash));
        }
        Ok(())
    }
    async fn delete(&self, ids: &[String]) -> Result<u64, memvault_types::Failure> {
        let mut stored = self.stored.lock().unwrap();
        Ok(ids.iter().filter(|id| stored.remove(*id).is_some()).count() as u64)
    }
    async fn stored_ids(&self) -> Result<Vec<String>, memvault_types::Failure> {
        Ok(self.stored.lock().unwrap().keys().cloned().collect())
    }
    async fn checkpoint(
        &self,
        checkpoint: Option<&Checkpoint>,
    ) -> Result<(), memvault_types::Failure> {
        *self.checkpoint.lock().unwrap() = checkpoint.cloned();
        Ok(())
    }
}

impl MemorySink {
    fn holding(&self, word: &str) -> Vec<Record> {
        self.stored
            .lock()
            .unwrap()
            .values()
            .filter(|(record, _)| record.text.contains(word) || record.title.contains(word))
            .map(|(record, _)| record.clone())
            .collect()
    }
    fn len(&self) -> usize {
        self.stored.lock().unwrap().len()
    }
}

/// The real client with short back-offs and a generous budget, so the scenarios do not
/// wait on the providers' production pacing (the pacer has its own unit test).
fn fast_http() -> Http {
    let mut http = Http::standard().with_retries(Retries {
        backoff: Duration::from_millis(50),
        ..Retries::default()
    });
    for kind in memvault_connectors::ProviderKind::ALL {
        http = http.with_budget(
            kind,
            memvault_connectors::http::Budget {
                rate: 500.0,
                burst: 100.0,
            },
        );
    }
    http
}

struct Harness {
    server: FakeServer,
    http: Http,
    credentials: Credentials,
    sink: MemorySink,
    cursor: Mutex<Cursor>,
}

impl Harness {
    async fn new(start: impl std::future::Future<Output = FakeServer>) -> Harness {
        let server = start.await;
        let credentials = Credentials(server.credentials.clone());
        Harness {
            server,
            http: fast_http(),
            credentials,
            sink: MemorySink::default(),
            cursor: Mutex::new(Cursor::default()),
        }
    }

    fn base_url(&self) -> String {
        self.server.config["base_url"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| self.server.base_url.clone())
    }

    /// One run; the cursor moves when it completes.
    async fn sync_with(&self, limits: RunLimits) -> Result<engine::Report, SyncError> {
        let provider = provider(self.server.kind);
        let base_url = self.base_url();
        let cx = Context {
            http: &self.http,
            base_url: &base_url,
            credentials: &self.credentials,
            config: &self.server.config,
        };
        let cursor = self.cursor.lock().unwrap().clone();
        let resume = self.sink.checkpoint.lock().unwrap().clone();
        let report = engine::sync(provider, &cx, &cursor, resume, &self.sink, limits).await?;
        if report.complete {
            *self.cursor.lock().unwrap() = report.cursor.clone();
        }
        Ok(report)
    }

    async fn sync(&self) -> Result<engine::Report, SyncError> {
        self.sync_with(RunLimits { max_pages: None }).await
    }

    async fn reconcile(&self) -> Result<u64, SyncError> {
        let provider = provider(self.server.kind);
        let base_url = self.base_url();
        let cx = Context {
            http: &self.http,
            base_url: &base_url,
            credentials: &self.credentials,
            config: &self.server.config,
        };
        engine::reconcile(provider, &cx, &self.sink).await
    }

    /// Every live record of the fake is stored exactly once, with its current word.
    fn assert_mirrored(&self, what: &str) {
        let live = self.server.fake.live();
        for record in &live {
            let holding = self.sink.holding(&record.word);
            assert_eq!(
                holding.len(),
                1,
                "{what}: record {} ({}) is stored {} times",
                record.id,
                record.word,
                holding.len()
            );
            assert_eq!(holding[0].id, record.id, "{what}: stored under another id");
        }
        assert_eq!(
            self.sink.len(),
            live.len(),
            "{what}: {} stored for {} live records",
            self.sink.len(),
            live.len()
        );
    }
}

async fn first_sync_stores_every_record(start: impl std::future::Future<Output = FakeServer>) {
    let h = Harness::new(start).await;
    let report = h.sync().await.expect("the first sync");
    assert!(report.complete);
    assert_eq!(report.synced, 5, "{report:?}");
    h.assert_mirrored("first sync");
    let newest = h
        .server
        .fake
        .live()
        .iter()
        .map(|r| r.modified)
        .max()
        .unwrap();
    let high = h.cursor.lock().unwrap().high_water;
    assert!(high.is_some(), "a complete first sync sets the cursor");
    assert!(
        high.unwrap() <= newest + chrono::Duration::seconds(1),
        "the cursor is the newest time seen, not now"
    );
    let calls = h
        .server
        .fake
        .calls()
        .iter()
        .filter(|c| c.kind == CallKind::List)
        .count();
    assert!(
        calls >= 3,
        "5 records at 2 a page take 3 listing calls, got {calls}"
    );
    for record in h.sink.stored.lock().unwrap().values() {
        assert!(!record.0.title.is_empty() || !record.0.text.is_empty());
    }
}

async fn incremental_sync_adds_only_the_new_record(
    start: impl std::future::Future<Output = FakeServer>,
) {
    let h = Harness::new(start).await;
    h.sync().await.expect("the first sync");
    let upserts = *h.sink.upserts.lock().unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let added = h.server.add();
    let report = h.sync().await.expect("the incremental sync");
    assert_eq!(
        report.synced, 1,
        "only the new record is stored again: {report:?}"
    );
    assert_eq!(
        *h.sink.upserts.lock().unwrap(),
        upserts + 1,
        "unchanged records are skipped by hash"
    );
    assert_eq!(h.sink.holding(&added.word).len(), 1);
    h.assert_mirrored("incremental sync");
    let report = h.sync().await.expect("a sync with nothing new");
    assert_eq!(report.synced, 0, "{report:?}");
    h.assert_mirrored("nothing new");
}

async fn an_edit_updates_the_record_in_place(start: impl std::future::Future<Output = FakeServer>) {
    let h = Harness::new(start).await;
    h.sync().await.expect("the first sync");
    let target = h.server.fake.live()[2].clone();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let edited = h.server.fake.edit(&target.id);
    let report = h.sync().await.expect("the sync after an edit");
    assert!(report.synced >= 1, "{report:?}");
    assert!(
        h.sink.holding(&target.word).is_empty(),
        "the old text is gone"
    );
    assert_eq!(
        h.sink.holding(&edited.word).len(),
        1,
        "the new text is stored once"
    );
    h.assert_mirrored("after an edit");
}

async fn a_deletion_reaches_the_store(start: impl std::future::Future<Output = FakeServer>) {
    let h = Harness::new(start).await;
    h.sync().await.expect("the first sync");
    let target = h.server.fake.live()[1].clone();
    h.server.fake.delete(&target.id);
    h.sync().await.expect("the sync after a deletion");
    h.reconcile().await.expect("reconciliation");
    assert!(
        h.sink.holding(&target.word).is_empty(),
        "the deleted record is still stored"
    );
    h.assert_mirrored("after a deletion");
}

async fn a_partial_listing_deletes_nothing(start: impl std::future::Future<Output = FakeServer>) {
    let h = Harness::new(start).await;
    h.sync().await.expect("the first sync");
    h.server.fake.fail_listing_after(1, FaultKind::Server);
    let result = h.reconcile().await;
    assert!(
        result.is_err(),
        "a listing that fails midway fails the reconciliation: {result:?}"
    );
    assert_eq!(
        h.sink.len(),
        5,
        "nothing is removed after a partial listing"
    );
}

async fn a_rate_limit_is_waited_out(
    start: impl std::future::Future<Output = FakeServer>,
    retry_after: bool,
) {
    let h = Harness::new(start).await;
    h.server.fake.rate_limit_next(1, Some(CallKind::List));
    h.sync().await.expect("a sync that meets one rate limit");
    let calls = h.server.fake.calls();
    let limited = calls
        .iter()
        .position(|c| c.fault == Some(FaultKind::RateLimit))
        .expect("the rate limit came");
    let next = calls[limited + 1..]
        .iter()
        .find(|c| c.kind == CallKind::List)
        .expect("listed again");
    if retry_after {
        let waited = next.at.duration_since(calls[limited].at);
        assert!(
            waited >= Duration::from_millis(900),
            "Retry-After: 1 but waited {waited:?}"
        );
    }
    h.assert_mirrored("after a rate limit");
}

async fn an_auth_failure_fails_the_run(start: impl std::future::Future<Output = FakeServer>) {
    let h = Harness::new(start).await;
    h.sync().await.expect("the first sync");
    let cursor = h.cursor.lock().unwrap().clone();
    h.server.fake.revoke();
    let error = h
        .sync()
        .await
        .expect_err("a revoked credential fails the sync");
    assert!(
        matches!(error, SyncError::Provider(ProviderError::Unauthorized(_))),
        "{error:?}"
    );
    assert_eq!(
        *h.cursor.lock().unwrap(),
        cursor,
        "a failed run keeps the cursor"
    );
    let text = error.to_string();
    for secret in h.credentials.secrets() {
        assert!(
            !text.contains(&secret),
            "the error holds the credential: {text}"
        );
    }
    h.server.fake.restore();
    h.sync()
        .await
        .expect("a sync once the credential works again");
}

async fn a_walk_failing_midway_keeps_the_cursor(
    start: impl std::future::Future<Output = FakeServer>,
) {
    let h = Harness::new(start).await;
    h.server.fake.fail_listing_after(1, FaultKind::Server);
    let error = h.sync().await.expect_err("the second page fails");
    assert!(
        matches!(error, SyncError::Provider(ProviderError::Transient(_))),
        "{error:?}"
    );
    assert_eq!(
        *h.cursor.lock().unwrap(),
        Cursor::default(),
        "the cursor did not move"
    );
    assert!(
        h.sink.checkpoint.lock().unwrap().is_some(),
        "the first page was stored and its checkpoint saved (the second page was fetched \
         while the first was stored)"
    );
    h.server.fake.heal();
    h.sync().await.expect("the next sync");
    h.assert_mirrored("after a failed walk and a good one");
}

async fn a_capped_run_resumes_from_its_checkpoint(
    start: impl std::future::Future<Output = FakeServer>,
) {
    let h = Harness::new(start).await;
    let report = h
        .sync_with(RunLimits { max_pages: Some(1) })
        .await
        .expect("a capped run");
    assert!(!report.complete, "5 records do not fit one page");
    assert!(
        h.sink.checkpoint.lock().unwrap().is_some(),
        "the capped run saved a checkpoint"
    );
    assert_eq!(
        *h.cursor.lock().unwrap(),
        Cursor::default(),
        "a capped run does not move the cursor"
    );
    let report = h.sync().await.expect("the resumed run");
    assert!(report.complete);
    assert!(
        h.sink.checkpoint.lock().unwrap().is_none(),
        "a complete run clears the checkpoint"
    );
    assert_eq!(
        *h.sink.upserts.lock().unwrap(),
        5,
        "each record stored once across the two runs"
    );
    h.assert_mirrored("after a resumed run");
}

/// One module of scenario tests per provider. `skip_edit` leaves out the edit scenario for a
/// provider whose records cannot be edited at the source (Gmail: a message is immutable,
/// only its labels change), so there is no edit to sync; every other provider runs every
/// scenario, the edit one included.
macro_rules! scenarios {
    ($name:ident, $start:expr, retry_after = $retry_after:expr) => {
        scenarios!(@module $name, $start, $retry_after, {
            #[tokio::test]
            async fn edit() {
                an_edit_updates_the_record_in_place($start(5)).await
            }
        });
    };
    ($name:ident, $start:expr, retry_after = $retry_after:expr, skip_edit) => {
        scenarios!(@module $name, $start, $retry_after, {});
    };
    (@module $name:ident, $start:expr, $retry_after:expr, { $($edit:item)* }) => {
        mod $name {
            use super::*;
            $($edit)*
            #[tokio::test]
            async fn first_sync() {
                first_sync_stores_every_record($start(5)).await
            }
            #[tokio::test]
            async fn incremental_sync() {
                incremental_sync_adds_only_the_new_record($start(5)).await
            }
            #[tokio::test]
            async fn deletion() {
                a_deletion_reaches_the_store($start(5)).await
            }
            #[tokio::test]
            async fn partial_listing() {
                a_partial_listing_deletes_nothing($start(5)).await
            }
            #[tokio::test]
            async fn rate_limit() {
                a_rate_limit_is_waited_out($start(5), $retry_after).await
            }
            #[tokio::test]
            async fn auth_failure() {
                an_auth_failure_fails_the_run($start(5)).await
            }
            #[tokio::test]
            async fn failing_walk() {
                a_walk_failing_midway_keeps_the_cursor($start(5)).await
            }
            #[tokio::test]
            async fn capped_run() {
                a_capped_run_resumes_from_its_checkpoint($start(5)).await
            }
        }
    };
}

scenarios!(
    linear,
    memvault_fake_providers::linear::start,
    retry_after = true
);

scenarios!(
    slack,
    memvault_fake_providers::slack::start,
    retry_after = true
);

// HubSpot's rate-limit answer carries no Retry-After: the client backs off on its own.
scenarios!(
    hubspot,
    memvault_fake_providers::hubspot::start,
    retry_after = false
);

scenarios!(
    notion,
    memvault_fake_providers::notion::start,
    retry_after = true
);
scenarios!(
    confluence,
    memvault_fake_providers::confluence::start,
    retry_after = true
);

// Provider-specific: the optional config that narrows a sync, and Notion's time-less search.

fn stored_ids(h: &Harness) -> std::collections::BTreeSet<String> {
    h.sink.stored.lock().unwrap().keys().cloned().collect()
}

#[tokio::test]
async fn notion_database_id_narrows_the_sync_to_its_pages() {
    use memvault_fake_providers::notion::{self, DATABASE_ID};
    let mut h = Harness::new(notion::start(2)).await;
    let inside: Vec<_> = (0..3).map(|_| h.server.add_in(DATABASE_ID)).collect();
    h.server.config = serde_json::json!({"database_id": DATABASE_ID});
    let report = h
        .sync_with(RunLimits { max_pages: Some(1) })
        .await
        .expect("a capped run over the database");
    assert!(!report.complete, "3 pages at 2 a page take two pages");
    let report = h.sync().await.expect("the resumed run");
    assert!(report.complete);
    let expected: std::collections::BTreeSet<String> =
        inside.iter().map(|record| record.id.clone()).collect();
    assert_eq!(
        stored_ids(&h),
        expected,
        "only the database's pages are stored"
    );
    for record in &inside {
        let stored = h.sink.holding(&record.word);
        assert_eq!(stored.len(), 1);
        assert_eq!(
            stored[0].title, record.title,
            "the title property is named Name"
        );
        assert_eq!(stored[0].author.as_deref(), Some(record.author.as_str()));
    }
    let calls = h.server.fake.calls();
    assert!(
        calls.iter().all(|call| call.path != "/v1/search"),
        "no search"
    );
    assert_eq!(
        calls
            .iter()
            .filter(|call| call.path.starts_with("/v1/databases/"))
            .count(),
        1,
        "the resumed run keeps the data source in its page token"
    );
    // Later changes: one inside, one outside; a deletion inside reaches reconciliation.
    let added = h.server.add_in(DATABASE_ID);
    let outside = h.server.add();
    h.server.fake.delete(&inside[0].id);
    let report = h.sync().await.expect("an incremental sync of the database");
    assert_eq!(report.synced, 1, "{report:?}");
    assert_eq!(h.sink.holding(&added.word).len(), 1);
    assert!(h.sink.holding(&outside.word).is_empty());
    assert_eq!(h.reconcile().await.expect("reconciliation"), 1);
    assert_eq!(stored_ids(&h).len(), 3);
}

#[tokio::test]
async fn a_capped_run_fetches_no_page_past_its_cap() {
    let h = Harness::new(memvault_fake_providers::notion::start(5)).await;
    let listings = |h: &Harness| {
        h.server
            .fake
            .calls()
            .iter()
            .filter(|c| c.kind == CallKind::List)
            .count()
    };
    let report = h
        .sync_with(RunLimits { max_pages: Some(1) })
        .await
        .expect("a capped run");
    assert!(!report.complete);
    assert_eq!(
        listings(&h),
        1,
        "the page past the cap is not fetched ahead"
    );
    let report = h
        .sync_with(RunLimits { max_pages: Some(2) })
        .await
        .expect("a second capped run");
    assert_eq!(
        listings(&h),
        3,
        "the last two pages (of two, two and one records), the third fetched while the \
         second was stored"
    );
    assert!(report.complete, "{report:?}");
    assert_eq!(
        report.synced, 5,
        "the resumed run counts from its checkpoint: {report:?}"
    );
}

#[tokio::test]
async fn notion_search_stops_at_the_first_page_older_than_the_window() {
    let h = Harness::new(memvault_fake_providers::notion::start(5)).await;
    {
        let mut state = h.server.fake.lock();
        let hour_ago = chrono::Utc::now() - chrono::Duration::hours(1);
        for record in state.records.iter_mut().take(3) {
            record.created = hour_ago;
            record.modified = hour_ago;
        }
    }
    h.sync().await.expect("the first sync");
    h.assert_mirrored("first sync");
    let before = h.server.fake.calls().len();
    let report = h.sync().await.expect("an incremental sync");
    assert_eq!((report.synced, report.unchanged), (0, 2), "{report:?}");
    let calls = h.server.fake.calls()[before..].to_vec();
    let listings = calls.iter().filter(|c| c.kind == CallKind::List).count();
    assert_eq!(
        listings, 2,
        "two recent pages, then the first old one ends the walk"
    );
    // Each recent page's text: the top-level blocks (two pages of blocks) and a nested one.
    assert_eq!(
        calls.iter().filter(|c| c.kind == CallKind::Content).count(),
        6
    );
}

#[tokio::test]
async fn confluence_space_key_narrows_the_sync_to_the_space() {
    use memvault_fake_providers::confluence::{self, OTHER_SPACE_KEY, SPACE_KEY};
    let mut h = Harness::new(confluence::start(3)).await;
    let outside: Vec<_> = (0..2).map(|_| h.server.add_in(OTHER_SPACE_KEY)).collect();
    let inside: std::collections::BTreeSet<String> = h
        .server
        .fake
        .live()
        .into_iter()
        .filter(|record| record.scope.is_none())
        .map(|record| record.id)
        .collect();
    let base_url = h.base_url();
    h.server.config = serde_json::json!({"base_url": base_url, "space_key": SPACE_KEY});
    let report = h.sync().await.expect("a sync of one space");
    assert_eq!(report.synced, 3, "{report:?}");
    assert_eq!(stored_ids(&h), inside);
    for record in &outside {
        assert!(h.sink.holding(&record.word).is_empty());
    }
    let stored = h
        .sink
        .stored
        .lock()
        .unwrap()
        .values()
        .next()
        .cloned()
        .unwrap()
        .0;
    assert!(
        stored.url.as_deref().is_some_and(
            |url| url.starts_with(&format!("{base_url}/wiki/spaces/{SPACE_KEY}/pages/"))
        ),
        "{stored:?}"
    );
    assert!(stored.author.is_some(), "{stored:?}");
    assert_eq!(
        h.reconcile().await.expect("reconciliation of one space"),
        0,
        "the other space's pages are not in scope, this space's are all live"
    );
    assert_eq!(stored_ids(&h), inside);
}

scenarios!(
    gdrive,
    memvault_fake_providers::gdrive::start,
    retry_after = false
);
scenarios!(
    gmail,
    memvault_fake_providers::gmail::start,
    retry_after = false,
    skip_edit
);

/// `config.folder_id` narrows a Drive sync (and its reconciliation) to the folder's files.
#[tokio::test]
async fn gdrive_folder_id_narrows_the_sync() {
    let mut server = memvault_fake_providers::gdrive::start(2).await;
    let inside: Vec<_> = (0..3).map(|_| server.add_in("1FolderInside")).collect();
    let outside = server.add_in("1FolderOutside");
    server.config = serde_json::json!({"folder_id": "1FolderInside"});
    let h = Harness::new(async { server }).await;
    let report = h.sync().await.expect("a sync narrowed to one folder");
    assert_eq!(report.synced, 3, "{report:?}");
    for record in &inside {
        assert_eq!(
            h.sink.holding(&record.word).len(),
            1,
            "{} is in scope",
            record.id
        );
    }
    assert!(
        h.sink.holding(&outside.word).is_empty(),
        "a file of another folder was stored"
    );
    assert_eq!(
        h.sink.len(),
        3,
        "the two files in My Drive are out of scope too"
    );
    assert_eq!(
        h.reconcile().await.expect("reconciliation"),
        0,
        "nothing in scope is gone"
    );
    assert_eq!(h.sink.len(), 3);
}

/// An incremental Drive walk lists trashed files and reports them deleted, before any
/// reconciliation.
#[tokio::test]
async fn gdrive_a_trashed_file_is_deleted_by_the_incremental_sync() {
    let h = Harness::new(memvault_fake_providers::gdrive::start(5)).await;
    h.sync().await.expect("the first sync");
    let target = h.server.fake.live()[3].clone();
    h.server.fake.delete(&target.id);
    let report = h.sync().await.expect("the sync after trashing a file");
    assert_eq!(report.deleted, 1, "{report:?}");
    assert!(h.sink.holding(&target.word).is_empty());
    h.assert_mirrored("after trashing a file");
}

/// `config.query` narrows a Gmail sync (and its reconciliation) to the matching messages.
#[tokio::test]
async fn gmail_query_narrows_the_sync() {
    let mut server = memvault_fake_providers::gmail::start(6).await;
    // The fake's authors take turns: records 0 and 3 are Ada Lovelace's.
    let ada: Vec<_> = server
        .fake
        .live()
        .into_iter()
        .filter(|record| record.author == "Ada Lovelace")
        .collect();
    assert_eq!(ada.len(), 2);
    server.config = serde_json::json!({"query": "from:ada"});
    let h = Harness::new(async { server }).await;
    let report = h.sync().await.expect("a sync narrowed by a query");
    assert_eq!(report.synced, 2, "{report:?}");
    for record in &ada {
        assert_eq!(h.sink.holding(&record.word).len(), 1);
    }
    assert_eq!(h.sink.len(), 2);
    assert_eq!(h.reconcile().await.expect("reconciliation"), 0);
}
