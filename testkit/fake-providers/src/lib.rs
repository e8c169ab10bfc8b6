//! memvault-fake-providers, for tests: stateful fake provider servers, one axum server per
//! provider on 127.0.0.1, speaking the provider's documented wire format for the calls a
//! sync makes, with the same controls for every provider: records (add, edit, delete), the
//! one accepted credential (revoke, restore), injected faults (the provider's own server
//! error, auth failure and rate-limit shapes), a call log, and a page size of 2 so that
//! every sync pages.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use chrono::{DateTime, Duration as TimeDelta, Utc};
use serde_json::{Map, Value};

use memvault_connectors::ProviderKind;

/// Items per listing page by default, whatever the client asks for.
pub const PAGE_SIZE: usize = 2;

/// The page size every fake of this process answers with (benchmarks raise it).
static PAGE_LIMIT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(PAGE_SIZE);

/// Sets the most items a listing page of any fake in this process holds.
pub fn set_page_size(size: usize) {
    PAGE_LIMIT.store(size.max(1), std::sync::atomic::Ordering::Relaxed);
}

/// The most items a listing page of any fake in this process holds now.
pub fn page_size() -> usize {
    PAGE_LIMIT.load(std::sync::atomic::Ordering::Relaxed)
}

const WORDS: [&str; 16] = [
    "amber", "basalt", "cobalt", "dune", "ember", "fjord", "glacier", "harbor", "indigo",
    "juniper", "kelp", "lagoon", "meadow", "nimbus", "orchid", "prairie",
];

/// One record of a fake source.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeRecord {
    pub id: String,
    pub title: String,
    pub text: String,
    /// The distinctive word of the text (never in the title).
    pub word: String,
    pub author: String,
    pub created: DateTime<Utc>,
    pub modified: DateTime<Utc>,
    pub version: u32,
    pub deleted: bool,
    /// Provider-specific placement (a folder, a space, a database).
    pub scope: Option<String>,
}

/// What a call was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// A listing (changes, search, history).
    List,
    /// One record's body.
    Content,
    /// Anything else (profile, metadata).
    Meta,
}

/// An injected failure, answered in the provider's own shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    Server,
    Auth,
    RateLimit,
}

#[derive(Debug, Clone)]
struct Fault {
    kind: FaultKind,
    on: Option<CallKind>,
    skip: u32,
    remaining: Option<u32>,
}

/// One call the fake got.
#[derive(Debug, Clone)]
pub struct Call {
    pub at: Instant,
    pub kind: CallKind,
    pub path: String,
    pub fault: Option<FaultKind>,
    /// The credential presented (a bearer token, a Basic pair, ...).
    pub credential: Option<String>,
}

/// How a call is to be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Ok,
    /// No credential or a refused one: the provider's auth failure.
    Unauthorized,
    Fault(FaultKind),
}

/// The state every fake shares.
#[derive(Debug)]
pub struct State {
    pub kind: ProviderKind,
    pub records: Vec<FakeRecord>,
    /// The credential the connection holds.
    pub token: String,
    revoked: bool,
    faults: Vec<Fault>,
    pub log: Vec<Call>,
    clock: DateTime<Utc>,
    counter: u64,
    /// Extra accepted tokens (issued by an OAuth fake), with an optional expiry.
    pub issued: Vec<(String, Option<DateTime<Utc>>)>,
}

impl State {
    /// A strictly increasing clock (at least 1 ms between two readings).
    pub fn now(&mut self) -> DateTime<Utc> {
        let now = Utc::now().max(self.clock + TimeDelta::milliseconds(1));
        self.clock = now;
        now
    }

    /// A fresh number, for ids and words.
    pub fn next_number(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    fn fresh_word(&mut self) -> String {
        let n = self.next_number();
        let salt: u32 = rand::random::<u32>() % 100_000;
        format!("{}{n}x{salt}", WORDS[(n as usize) % WORDS.len()])
    }

    /// Decides how to answer a call of `kind` presenting `credential`, and logs it.
    pub fn admit(&mut self, kind: CallKind, path: &str, credential: Option<&str>) -> Admit {
        let fault = self.take_fault(kind);
        self.log.push(Call {
            at: Instant::now(),
            kind,
            path: path.to_owned(),
            fault,
            credential: credential.map(str::to_owned),
        });
        if let Some(fault) = fault {
            return Admit::Fault(fault);
        }
        match credential {
            Some(credential) if self.accepts(credential) => Admit::Ok,
            _ => Admit::Unauthorized,
        }
    }

    pub fn accepts(&self, credential: &str) -> bool {
        if self.revoked {
            return false;
        }
        let now = Utc::now();
        credential == self.token
            || self
                .issued
                .iter()
                .any(|(token, expires)| token == credential && expires.is_none_or(|at| now < at))
    }

    fn take_fault(&mut self, kind: CallKind) -> Option<FaultKind> {
        let index = self
            .faults
            .iter()
            .position(|fault| fault.on.is_none_or(|on| on == kind))?;
        let fault = &mut self.faults[index];
        if fault.skip > 0 {
            fault.skip -= 1;
            return None;
        }
        let found = fault.kind;
        if let Some(remaining) = fault.remaining.as_mut() {
            *remaining -= 1;
            if *remaining == 0 {
                self.faults.remove(index);
            }
        }
        Some(found)
    }

    /// The live records, newest modified first.
    pub fn live_newest_first(&self) -> Vec<FakeRecord> {
        let mut live: Vec<FakeRecord> = self
            .records
            .iter()
            .filter(|r| !r.deleted)
            .cloned()
            .collect();
        live.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| b.id.cmp(&a.id)));
        live
    }
}

/// A handle on a fake's state: the controls the scenarios use.
#[derive(Debug, Clone)]
pub struct Fake(pub Arc<Mutex<State>>);

/// How a provider's fake makes ids.
pub type IdMaker = fn(&mut State) -> String;

impl Fake {
    pub fn new(kind: ProviderKind, token: String) -> Fake {
        Fake(Arc::new(Mutex::new(State {
            kind,
            records: Vec::new(),
            token,
            revoked: false,
            faults: Vec::new(),
            log: Vec::new(),
            clock: Utc::now(),
            counter: 0,
            issued: Vec::new(),
        })))
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a record (in `scope`, if given) with a fresh word; returns it.
    pub fn add_in(&self, make_id: IdMaker, scope: Option<&str>) -> FakeRecord {
        let mut state = self.lock();
        let index = state.records.len();
        let word = state.fresh_word();
        let now = state.now();
        let record = FakeRecord {
            id: make_id(&mut state),
            title: format!("{} {}", TITLES[index % TITLES.len()], index + 1),
            text: format!("{word} {}", SENTENCES[index % SENTENCES.len()]),
            word,
            author: AUTHORS[index % AUTHORS.len()].to_owned(),
            created: now,
            modified: now,
            version: 1,
            deleted: false,
            scope: scope.map(str::to_owned),
        };
        state.records.push(record.clone());
        record
    }

    /// New text with a new word; the modified time and version move on.
    pub fn edit(&self, id: &str) -> FakeRecord {
        let mut state = self.lock();
        let word = state.fresh_word();
        let now = state.now();
        let record = state
            .records
            .iter_mut()
            .find(|record| record.id == id)
            .expect("the fake has the record");
        record.text = format!("{word} was written over the old text of this record");
        record.word = word;
        record.modified = now;
        record.version += 1;
        record.clone()
    }

    pub fn delete(&self, id: &str) {
        let mut state = self.lock();
        let now = state.now();
        if let Some(record) = state.records.iter_mut().find(|record| record.id == id) {
            record.deleted = true;
            record.modified = now;
            record.version += 1;
        }
    }

    pub fn live(&self) -> Vec<FakeRecord> {
        self.lock()
            .records
            .iter()
            .filter(|r| !r.deleted)
            .cloned()
            .collect()
    }

    pub fn token(&self) -> String {
        self.lock().token.clone()
    }

    /// The credential stops working, as a revoked token does.
    pub fn revoke(&self) {
        self.lock().revoked = true;
    }

    pub fn restore(&self) {
        self.lock().revoked = false;
    }

    /// The next `count` calls of `on` (None: any) fail with `kind`.
    pub fn fail_next(&self, count: u32, kind: FaultKind, on: Option<CallKind>) {
        self.lock().faults.push(Fault {
            kind,
            on,
            skip: 0,
            remaining: Some(count),
        });
    }

    /// Every listing call after the first `pages` fails with `kind` until [`Fake::heal`].
    pub fn fail_listing_after(&self, pages: u32, kind: FaultKind) {
        self.lock().faults.push(Fault {
            kind,
            on: Some(CallKind::List),
            skip: pages,
            remaining: None,
        });
    }

    /// One rate-limit answer, to the call of `on` after `after` good ones.
    pub fn rate_limit_next(&self, after: u32, on: Option<CallKind>) {
        self.lock().faults.push(Fault {
            kind: FaultKind::RateLimit,
            on,
            skip: after,
            remaining: Some(1),
        });
    }

    pub fn heal(&self) {
        self.lock().faults.clear();
    }

    pub fn calls(&self) -> Vec<Call> {
        self.lock().log.clone()
    }

    /// Accepts an OAuth-issued token (until `expires`).
    pub fn issue(&self, token: &str, expires: Option<DateTime<Utc>>) {
        self.lock().issued.push((token.to_owned(), expires));
    }
}

/// A running fake: its base URL (the provider's API root), the credentials and config a
/// connection to it needs, and the controls.
pub struct FakeServer {
    pub kind: ProviderKind,
    pub base_url: String,
    pub credentials: Map<String, Value>,
    pub config: Value,
    pub fake: Fake,
    /// Adds a record the provider's way (its id format, its default placement).
    pub make_id: IdMaker,
    task: tokio::task::JoinHandle<()>,
}

impl FakeServer {
    /// Serves `router` on 127.0.0.1:0.
    pub async fn serve(
        kind: ProviderKind,
        router: axum::Router,
        fake: Fake,
        make_id: IdMaker,
        credentials: Map<String, Value>,
        config: impl FnOnce(&str) -> Value,
    ) -> FakeServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a local port for the fake");
        let address = listener.local_addr().expect("the fake's address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        let base_url = format!("http://{address}");
        FakeServer {
            kind,
            config: config(&base_url),
            base_url,
            credentials,
            fake,
            make_id,
            task,
        }
    }

    pub fn add(&self) -> FakeRecord {
        self.fake.add_in(self.make_id, None)
    }

    pub fn add_in(&self, scope: &str) -> FakeRecord {
        self.fake.add_in(self.make_id, Some(scope))
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The bearer token of an `Authorization` header.
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<String> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(|token| token.trim().to_owned())
}

/// The window of `items` at `start`: at most the page size (or `asked`, if fewer) and
/// whether more follow.
pub fn window<T: Clone>(items: &[T], start: usize, asked: Option<usize>) -> (Vec<T>, bool) {
    let limit = page_size();
    let size = asked.unwrap_or(limit).clamp(1, limit);
    let start = start.min(items.len());
    let end = (start + size).min(items.len());
    (items[start..end].to_vec(), end < items.len())
}

/// A uuid string (for providers whose ids are uuids).
pub fn uuid_id(_: &mut State) -> String {
    uuid::Uuid::new_v4().to_string()
}

pub mod confluence;
pub mod gdrive;
pub mod gmail;
mod google;
pub mod hubspot;
pub mod linear;
pub mod notion;
pub mod oauth;
pub mod slack;

const TITLES: [&str; 6] = [
    "Harbour schedule",
    "Kitchen renovation",
    "Quarterly planning",
    "Garden irrigation",
    "Library move",
    "Onboarding notes",
];
const AUTHORS: [&str; 3] = ["Ada Lovelace", "Grace Hopper", "Alan Turing"];
const SENTENCES: [&str; 5] = [
    "is the word to remember from the planning meeting on Tuesday.",
    "came up twice when the team reviewed the budget for next quarter.",
    "was chosen as the code name for the migration of the archive.",
    "describes the colour the designers picked for the new landing page.",
    "is written on the whiteboard next to the list of open questions.",
];
