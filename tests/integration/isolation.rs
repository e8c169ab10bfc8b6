//! The isolation matrix: three tenants, each with four kinds of key (the owner key, a
//! read-only key, an agent granted the tenant's restricted collection and an agent without
//! a grant), against every authenticated endpoint `/openapi.json` lists. Each endpoint is
//! called on the caller's own open and restricted collections (the access model decides
//! the status), with another tenant's ids inside the caller's own collection (404), and on
//! the other tenants' collections and ids (what a missing collection gives; never a 5xx).
//! No answer may carry another tenant's memory texts, tokens, memory ids, key ids or job
//! ids.
//!
//! The order keeps the matrix from breaking itself. Phase one runs every read, every
//! refused write and every cross-tenant case, then checks with each owner key that every
//! tenant's data is exactly as set up (apart from collections its own keys created under
//! another tenant's collection names, which stay in its own tenant). Phase two runs the
//! writes the model allows, on throwaway memories, collections and keys where they destroy
//! something, rotates every key last, and checks again. Refused writes carry the most
//! destructive body the endpoint takes (`dry_run: false`, threshold 0, min_score -1, ...),
//! so a write that slips through shows in the data even when its status looks right.
//!
//! Public endpoints (no `security` in the OpenAPI document: health, status and the
//! pageview beacon) take no key and serve no tenant's data, so there is nothing to
//! isolate; they are listed in `PUBLIC`, and any other endpoint without security fails
//! the test, as does an authenticated endpoint without an entry in `TABLE`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::thread;
use std::time::{Duration, Instant};

use memvault_llm::testing::{FakeLlmServer, FakeReply};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{expect_status, memories_path, shared, unique, Client};

const TENANT_LABELS: [&str; 3] = ["A", "B", "C"];

/// Endpoints without security in `/openapi.json`: they take no key and return no tenant's
/// data (readiness, the status page and the cookieless pageview beacon).
/// Endpoints whose isolation (tenants, read-only keys, grants) is tested in their own
/// suites, because one request there reaches many collections: MCP tools
/// (tests/integration/mcp.rs) and the chat proxy, which needs an LLM upstream
/// (tests/integration/proxy.rs).
const OWN_SUITES: [(&str, &str); 2] = [("POST", "/v1/mcp"), ("POST", "/v1/proxy/chat/completions")];

const PUBLIC: [(&str, &str); 4] = [
    ("GET", "/v1/memory/health"),
    ("GET", "/v1/status"),
    ("POST", "/v1/pulse"),
    ("POST", "/v1/track"),
];

/// The webhook the owner's own case sets: a public address literal, so the SSRF guard
/// accepts it without DNS. It is removed by the next request and no memory event happens
/// in between (queued remembers are waited for first), so nothing is ever sent to it.
const PUBLIC_WEBHOOK_URL: &str = "https://93.184.215.14/memvault-isolation";
/// What refused webhook writes send: were one let through, the SSRF guard would refuse
/// the loopback target (422), so no webhook could be configured or delivered.
const LOOPBACK_WEBHOOK_URL: &str = "http://127.0.0.1:9/memvault-isolation";

/// How long a queued remember may take.
const JOB_WAIT: Duration = Duration::from_secs(60);
/// Most characters of an answer quoted in a failure.
const EXCERPT_CHARS: usize = 300;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum KeyKind {
    Owner,
    ReadOnly,
    /// An agent key granted read and write on the tenant's restricted collection.
    Granted,
    /// An agent key without a grant.
    Ungranted,
}

impl KeyKind {
    const ALL: [KeyKind; 4] = [
        KeyKind::Owner,
        KeyKind::ReadOnly,
        KeyKind::Granted,
        KeyKind::Ungranted,
    ];

    fn index(self) -> usize {
        self as usize
    }

    fn label(self) -> &'static str {
        match self {
            KeyKind::Owner => "owner",
            KeyKind::ReadOnly => "read-only",
            KeyKind::Granted => "granted agent",
            KeyKind::Ungranted => "ungranted agent",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Open,
    Restricted,
}

impl Which {
    fn label(self) -> &'static str {
        match self {
            Which::Open => "open",
            Which::Restricted => "restricted",
        }
    }
}

/// What an endpoint needs from the key, per the access model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Operator endpoints: the owner key of an admin-flagged tenant only.
    Operator,
    /// Reads the caller's tenant: every key.
    TenantRead,
    /// Changes the caller's tenant: every key but read-only ones.
    TenantWrite,
    /// Keys, settings and the webhook: the owner key only.
    OwnerOnly,
    /// The key replaces itself: every key (SPEC: "authenticated by the key being rotated").
    SelfRotate,
    /// A queued remember: a read of the job's collection (its answer carries the ids and
    /// texts of the memories it stored there), so it follows that collection's grants.
    JobRead,
    /// Reads a collection: 404 when missing, 403 without a read grant.
    CollectionRead,
    /// Health and summary: a read, but a missing collection is 200 with `exists: false`.
    CollectionProbe,
    /// Changes an existing collection: 404 when missing, 403 for read-only keys and
    /// without a write grant.
    CollectionWrite,
    /// Writes into a collection, created when missing.
    CollectionCreate,
    /// Grants: the owner key only, on an existing collection.
    CollectionOwner,
}

impl Access {
    fn reads(self) -> bool {
        matches!(
            self,
            Access::TenantRead | Access::JobRead | Access::CollectionRead | Access::CollectionProbe
        )
    }
}

/// Which resources a request can name, so which scopes it runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// No path parameter and nothing of another tenant's to name: once, on the own tenant.
    Tenant,
    /// No path parameter, but the body names a collection or search text.
    Naming,
    /// `{key_id}`.
    Key,
    /// `{job_id}`.
    Job,
    /// `{collection}`.
    Collection,
    /// `{collection}` and a memory id.
    Memory,
    /// `{collection}` and an agent key id, in the path or the body.
    Grant,
}

/// What phase two makes first, so an allowed destructive write spends a throwaway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Throwaway {
    Nothing,
    Memory,
    Collection,
    /// A collection where the ungranted agent has a grant to remove.
    GrantedCollection,
    Key,
}

struct Entry {
    method: &'static str,
    template: &'static str,
    access: Access,
    shape: Shape,
    /// The status of an allowed call.
    success: u16,
    throwaway: Throwaway,
}

const fn entry(
    method: &'static str,
    template: &'static str,
    access: Access,
    shape: Shape,
    success: u16,
) -> Entry {
    Entry {
        method,
        template,
        access,
        shape,
        success,
        throwaway: Throwaway::Nothing,
    }
}

impl Entry {
    const fn spending(mut self, throwaway: Throwaway) -> Entry {
        self.throwaway = throwaway;
        self
    }

    /// Whether an allowed call changes data (and so runs in phase two).
    fn changes(&self) -> bool {
        !self.access.reads() && self.method != "GET"
    }

    /// Settings and webhook calls run on a quiet tenant: no queued remember may run
    /// against a test LLM or raise an event for a configured webhook.
    fn needs_quiet_tenant(&self) -> bool {
        self.template.starts_with("/v1/memory/extraction")
            || self.template.starts_with("/v1/memory/webhook")
    }
}

/// Every authenticated endpoint. Phase two runs the allowed writes in this order: data
/// first, then keys and settings, and rotate-key last (it retires the calling key).
#[rustfmt::skip]
const TABLE: &[Entry] = &[
    // Operator endpoints.
    entry("POST", "/v1/memory/admin/tenants", Access::Operator, Shape::Tenant, 201),
    entry("GET", "/v1/memory/admin/metrics", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/usage", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/connectors", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/connectors/status", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/analytics", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/audit", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/memory-health", Access::Operator, Shape::Tenant, 200),
    // Reads of the caller's tenant.
    entry("GET", "/v1/memory/admin/me", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/stats", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/collections", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/keys", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/agents", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/extraction/config", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/spend-cap", Access::TenantRead, Shape::Tenant, 200),
    // No webhook is configured while the reads run.
    entry("GET", "/v1/memory/webhook/config", Access::TenantRead, Shape::Tenant, 404),
    entry("POST", "/v1/memory/search", Access::TenantRead, Shape::Naming, 200),
    entry("GET", "/v1/memory/extract/job/{job_id}", Access::JobRead, Shape::Job, 200),
    // Reads of a collection.
    entry("GET", "/v1/memory/collections/{collection}", Access::CollectionRead, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/memories", Access::CollectionRead, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/memories/{memory_id}", Access::CollectionRead, Shape::Memory, 200),
    entry("GET", "/v1/memory/collections/{collection}/memories/{memory_id}/related", Access::CollectionRead, Shape::Memory, 200),
    entry("POST", "/v1/memory/collections/{collection}/search", Access::CollectionRead, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/health", Access::CollectionProbe, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/summary", Access::CollectionProbe, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/contradictions", Access::CollectionRead, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/profile", Access::CollectionRead, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/grants", Access::CollectionRead, Shape::Collection, 200),
    // Writes of data.
    entry("POST", "/v1/memory/collections", Access::TenantWrite, Shape::Naming, 201),
    entry("POST", "/v1/memory/collections/{collection}/memories", Access::CollectionCreate, Shape::Collection, 201),
    entry("POST", "/v1/memory/collections/{collection}/memories/bulk", Access::CollectionCreate, Shape::Collection, 201),
    entry("POST", "/v1/memory/collections/{collection}/remember", Access::CollectionCreate, Shape::Collection, 202),
    entry("PUT", "/v1/memory/collections/{collection}", Access::CollectionWrite, Shape::Collection, 200),
    entry("PATCH", "/v1/memory/collections/{collection}/memories/{memory_id}", Access::CollectionWrite, Shape::Memory, 200).spending(Throwaway::Memory),
    entry("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/pin", Access::CollectionWrite, Shape::Memory, 200).spending(Throwaway::Memory),
    entry("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/archive", Access::CollectionWrite, Shape::Memory, 200).spending(Throwaway::Memory),
    entry("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/move", Access::CollectionWrite, Shape::Memory, 200).spending(Throwaway::Memory),
    entry("DELETE", "/v1/memory/collections/{collection}/memories/{memory_id}", Access::CollectionWrite, Shape::Memory, 204).spending(Throwaway::Memory),
    entry("POST", "/v1/memory/collections/{collection}/forget", Access::CollectionWrite, Shape::Collection, 200).spending(Throwaway::Memory),
    entry("POST", "/v1/memory/collections/{collection}/dedup", Access::CollectionWrite, Shape::Collection, 200),
    entry("POST", "/v1/memory/collections/{collection}/archive-stale", Access::CollectionWrite, Shape::Collection, 200),
    entry("DELETE", "/v1/memory/collections/{collection}", Access::CollectionWrite, Shape::Collection, 204).spending(Throwaway::Collection),
    entry("PUT", "/v1/memory/collections/{collection}/grants", Access::CollectionOwner, Shape::Grant, 200).spending(Throwaway::Collection),
    entry("DELETE", "/v1/memory/collections/{collection}/grants/{agent_key_id}", Access::CollectionOwner, Shape::Grant, 204).spending(Throwaway::GrantedCollection),
    // Keys, settings and the webhook.
    entry("POST", "/v1/memory/keys", Access::OwnerOnly, Shape::Tenant, 201),
    entry("DELETE", "/v1/memory/keys/{key_id}", Access::OwnerOnly, Shape::Key, 200).spending(Throwaway::Key),
    entry("PUT", "/v1/memory/spend-cap", Access::OwnerOnly, Shape::Tenant, 200),
    entry("PUT", "/v1/memory/extraction/config", Access::OwnerOnly, Shape::Tenant, 200),
    entry("DELETE", "/v1/memory/extraction/config", Access::OwnerOnly, Shape::Tenant, 204),
    entry("PUT", "/v1/memory/webhook/config", Access::OwnerOnly, Shape::Tenant, 200),
    entry("DELETE", "/v1/memory/webhook/config", Access::OwnerOnly, Shape::Tenant, 204),
    // Last: it retires the calling key.
    entry("POST", "/v1/memory/admin/rotate-key", Access::SelfRotate, Shape::Tenant, 200),
];

/// Whose resources a case names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    /// The caller's own open or restricted collection and its ids.
    Own(Which),
    /// The caller's own open collection with the victim's memory, key and job ids.
    OwnWithForeignIds(usize),
    /// The victim's open or restricted collection and its ids.
    Foreign(usize, Which),
}

fn scopes(shape: Shape, caller: usize) -> Vec<Scope> {
    let victims: Vec<usize> = (0..TENANT_LABELS.len())
        .filter(|victim| *victim != caller)
        .collect();
    let both = [Which::Open, Which::Restricted];
    let mut scopes = Vec::new();
    match shape {
        Shape::Tenant => scopes.push(Scope::Own(Which::Open)),
        Shape::Key => {
            scopes.push(Scope::Own(Which::Open));
            scopes.extend(
                victims
                    .iter()
                    .map(|victim| Scope::Foreign(*victim, Which::Open)),
            );
        }
        Shape::Naming | Shape::Job | Shape::Collection | Shape::Memory | Shape::Grant => {
            scopes.extend(both.map(Scope::Own));
            for victim in &victims {
                scopes.extend(both.map(|which| Scope::Foreign(*victim, which)));
            }
            if matches!(shape, Shape::Memory | Shape::Grant) {
                scopes.extend(
                    victims
                        .iter()
                        .map(|victim| Scope::OwnWithForeignIds(*victim)),
                );
            }
        }
    }
    scopes
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Status(u16),
    /// 403 with a `detail`.
    Forbidden,
    /// 404 with a `detail`.
    NotFound,
    /// 200 with `exists: false`.
    Absent,
}

impl Expect {
    fn allowed(self) -> bool {
        matches!(self, Expect::Status(status) if (200..300).contains(&status))
    }
}

/// What the access model says `kind` gets from `entry` in `scope`.
fn expectation(entry: &Entry, kind: KeyKind, scope: Scope) -> Expect {
    let success = Expect::Status(entry.success);
    let owner = kind == KeyKind::Owner;
    let read_only = kind == KeyKind::ReadOnly;
    let owner_only = |otherwise: Expect| if owner { otherwise } else { Expect::Forbidden };
    let writer = |otherwise: Expect| {
        if read_only {
            Expect::Forbidden
        } else {
            otherwise
        }
    };
    match scope {
        Scope::Own(which) => {
            let denied_by_grant = which == Which::Restricted && kind == KeyKind::Ungranted;
            match entry.access {
                Access::Operator => Expect::Forbidden,
                Access::TenantRead | Access::SelfRotate => success,
                Access::TenantWrite => writer(success),
                Access::OwnerOnly | Access::CollectionOwner => owner_only(success),
                Access::JobRead | Access::CollectionRead | Access::CollectionProbe => {
                    if denied_by_grant {
                        Expect::Forbidden
                    } else {
                        success
                    }
                }
                Access::CollectionWrite | Access::CollectionCreate => {
                    if denied_by_grant {
                        Expect::Forbidden
                    } else {
                        writer(success)
                    }
                }
            }
        }
        // A grant naming another tenant's key in the caller's own collection: that key is
        // no key of this tenant, invalid input.
        Scope::OwnWithForeignIds(_)
            if entry.access == Access::CollectionOwner && entry.method == "PUT" =>
        {
            owner_only(Expect::Status(422))
        }
        Scope::OwnWithForeignIds(_) | Scope::Foreign(..) => match entry.access {
            // A search or a new collection in the caller's own tenant, naming the
            // victim's text or collection name.
            Access::TenantRead => success,
            Access::TenantWrite | Access::CollectionCreate => writer(success),
            Access::JobRead | Access::CollectionRead => Expect::NotFound,
            Access::CollectionProbe => Expect::Absent,
            Access::CollectionWrite => writer(Expect::NotFound),
            Access::OwnerOnly | Access::CollectionOwner => owner_only(Expect::NotFound),
            Access::Operator | Access::SelfRotate => {
                unreachable!("{} runs on the own tenant only", entry.template)
            }
        },
    }
}

#[derive(Clone, Copy)]
struct Case {
    /// Index in `TABLE`: phase two runs in table order.
    order: usize,
    kind: KeyKind,
    scope: Scope,
    expect: Expect,
}

impl Case {
    fn entry(&self) -> &'static Entry {
        &TABLE[self.order]
    }

    /// Allowed writes on the own tenant run in phase two; everything else in phase one.
    fn in_phase_two(&self) -> bool {
        matches!(self.scope, Scope::Own(_)) && self.entry().changes() && self.expect.allowed()
    }

    /// Phase one runs reads first, then refused writes, then the writes that create
    /// collections in the caller's own tenant under the victims' names (so reads of those
    /// names still find nothing of the caller's).
    fn stage(&self) -> u8 {
        if !self.entry().changes() {
            0
        } else if !self.expect.allowed() {
            1
        } else {
            2
        }
    }
}

/// One collection of the set-up, the memory that marks it and a remember job on it.
struct Marked {
    name: String,
    memory_id: String,
    token: String,
    job_id: String,
}

struct Tenant {
    label: &'static str,
    /// One client per `KeyKind`, as set up (phase two rotates copies of them).
    clients: Vec<Client>,
    /// One key id per `KeyKind`.
    key_ids: Vec<String>,
    /// An agent key that refused revocations aim at.
    spare_key_id: String,
    open: Marked,
    restricted: Marked,
    /// The data as set up, read with the owner key.
    setup: TenantState,
    /// What must never appear in an answer to another tenant: (what it is, the string).
    sentinels: Vec<(String, String)>,
}

impl Tenant {
    fn owner(&self) -> &Client {
        &self.clients[KeyKind::Owner.index()]
    }

    fn key_id(&self, kind: KeyKind) -> &str {
        &self.key_ids[kind.index()]
    }

    fn marked(&self, which: Which) -> &Marked {
        match which {
            Which::Open => &self.open,
            Which::Restricted => &self.restricted,
        }
    }
}

/// A collection as its owner sees it.
#[derive(Debug, Clone, PartialEq)]
struct CollectionState {
    /// The collection without `updated_at` and `memory_count` (phase two's own writes
    /// change those).
    record: Value,
    grants: Value,
    /// Every memory, archived ones included, by id.
    memories: BTreeMap<String, Value>,
}

/// A tenant's data as its owner sees it.
#[derive(Debug, Clone, PartialEq)]
struct TenantState {
    collections: BTreeMap<String, CollectionState>,
    keys: BTreeMap<String, Value>,
    webhook_status: u16,
    extraction_configured: Value,
    spend_cap: Value,
}

impl TenantState {
    fn read(owner: &Client) -> TenantState {
        let listed = expect_status(owner.get("/v1/memory/collections"), 200);
        let mut collections = BTreeMap::new();
        for collection in listed.as_array().expect("collection list") {
            let name = collection["name"].as_str().expect("name").to_owned();
            let mut record = collection.clone();
            let fields = record.as_object_mut().expect("collection object");
            fields.remove("updated_at");
            fields.remove("memory_count");
            let listed_memories = expect_status(
                owner.get(&format!(
                    "{}?include_archived=true&limit=200",
                    memories_path(&name)
                )),
                200,
            );
            let memories = listed_memories
                .as_array()
                .expect("memory list")
                .iter()
                .map(|memory| {
                    (
                        memory["id"].as_str().expect("id").to_owned(),
                        memory.clone(),
                    )
                })
                .collect();
            let grants = expect_status(
                owner.get(&format!("/v1/memory/collections/{name}/grants")),
                200,
            );
            collections.insert(
                name,
                CollectionState {
                    record,
                    grants: grants["grants"].clone(),
                    memories,
                },
            );
        }
        let keys = expect_status(owner.get("/v1/memory/keys"), 200)["keys"]
            .as_array()
            .expect("keys")
            .iter()
            .map(|key| (key["id"].as_str().expect("key id").to_owned(), key.clone()))
            .collect();
        TenantState {
            collections,
            keys,
            webhook_status: owner.get("/v1/memory/webhook/config").status().as_u16(),
            extraction_configured: expect_status(owner.get("/v1/memory/extraction/config"), 200)
                ["configured"]
                .clone(),
            spend_cap: expect_status(owner.get("/v1/memory/spend-cap"), 200)["monthly_usd"].clone(),
        }
    }
}

fn create_key(owner: &Client, label: &str, read_only: bool) -> (Client, String) {
    let created = expect_status(
        owner.post(
            "/v1/memory/keys",
            &json!({"label": label, "read_only": read_only}),
        ),
        201,
    );
    let secret = created["key"].as_str().expect("secret");
    (
        Client::new(&shared().base_url, Some(secret)),
        created["id"].as_str().expect("key id").to_owned(),
    )
}

fn grant(owner: &Client, collection: &str, agent_key_id: &str) {
    expect_status(
        owner.put(
            &format!("/v1/memory/collections/{collection}/grants"),
            &json!({"agent_key_id": agent_key_id, "can_read": true, "can_write": true}),
        ),
        200,
    );
}

/// The description every collection of the set-up has (an allowed PUT writes it again).
fn description_of(collection: &str) -> String {
    format!("{collection}, isolation matrix")
}

fn new_token() -> String {
    unique("tok").replace('-', "")
}

fn wait_for_job(owner: &Client, job_id: &str) {
    let deadline = Instant::now() + JOB_WAIT;
    loop {
        let job = expect_status(owner.get(&format!("/v1/memory/extract/job/{job_id}")), 200);
        if job["complete"] == json!(true) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "job {job_id} did not finish: {job}"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

fn set_up_collection(owner: &Client, tenant: &str, which: Which) -> (Marked, Vec<String>) {
    let name = unique(&format!("iso-{}-{}", tenant.to_lowercase(), which.label()));
    expect_status(
        owner.post(
            "/v1/memory/collections",
            &json!({"name": name, "description": description_of(&name),
                    "metadata": {"tenant": tenant}}),
        ),
        201,
    );
    let token = new_token();
    let memory = expect_status(
        owner.post(
            &memories_path(&name),
            &json!({"text": format!("Tenant {tenant} keeps {token} in its {} collection.",
                                    which.label()),
                    "category": "fact"}),
        ),
        201,
    );
    // A fact with a slot, from a queued remember: its job id is the tenant's to guard.
    let job_token = new_token();
    let job = expect_status(
        owner.post(
            &format!("/v1/memory/collections/{name}/remember"),
            &json!({"content": format!("My favorite color is {job_token}.")}),
        ),
        202,
    );
    let marked = Marked {
        name,
        memory_id: memory["id"].as_str().expect("memory id").to_owned(),
        token,
        job_id: job["job_id"].as_str().expect("job id").to_owned(),
    };
    (marked, vec![job_token])
}

fn set_up_tenant(label: &'static str) -> Tenant {
    let name = unique(&format!("iso-{}", label.to_lowercase()));
    // The pro tier's rate limit leaves room for the matrix (every case is one request).
    let created = expect_status(
        Client::admin().post(
            "/v1/memory/admin/tenants",
            &json!({"name": name, "email": format!("{name}@example.com"), "tier": "pro"}),
        ),
        201,
    );
    let owner = Client::new(&shared().base_url, created["api_key"].as_str());
    let owner_id = expect_status(owner.get("/v1/memory/admin/me"), 200)["key"]["id"]
        .as_str()
        .expect("owner key id")
        .to_owned();
    let (read_only, read_only_id) = create_key(&owner, "iso-read-only", true);
    let (granted, granted_id) = create_key(&owner, "iso-granted", false);
    let (ungranted, ungranted_id) = create_key(&owner, "iso-ungranted", false);
    let (_, spare_key_id) = create_key(&owner, "iso-spare", false);
    let (open, open_tokens) = set_up_collection(&owner, label, Which::Open);
    let (restricted, restricted_tokens) = set_up_collection(&owner, label, Which::Restricted);
    // The read-only key's write grant shows that read-only wins over a grant.
    grant(&owner, &restricted.name, &granted_id);
    grant(&owner, &restricted.name, &read_only_id);
    wait_for_job(&owner, &open.job_id);
    wait_for_job(&owner, &restricted.job_id);
    let setup = TenantState::read(&owner);

    let mut sentinels = Vec::new();
    for (what, value) in [
        ("owner key id", &owner_id),
        ("read-only key id", &read_only_id),
        ("granted agent key id", &granted_id),
        ("ungranted agent key id", &ungranted_id),
        ("spare key id", &spare_key_id),
        ("open job id", &open.job_id),
        ("restricted job id", &restricted.job_id),
        ("open token", &open.token),
        ("restricted token", &restricted.token),
    ] {
        sentinels.push((format!("tenant {label}'s {what}"), value.clone()));
    }
    for job_token in open_tokens.iter().chain(&restricted_tokens) {
        sentinels.push((
            format!("tenant {label}'s remembered token"),
            job_token.clone(),
        ));
    }
    for collection in setup.collections.values() {
        for (id, memory) in &collection.memories {
            sentinels.push((format!("tenant {label}'s memory id"), id.clone()));
            let text = memory["text"].as_str().expect("text").to_owned();
            sentinels.push((format!("tenant {label}'s memory text"), text));
        }
    }
    Tenant {
        label,
        clients: vec![owner, read_only, granted, ungranted],
        key_ids: vec![owner_id, read_only_id, granted_id, ungranted_id],
        spare_key_id,
        open,
        restricted,
        setup,
        sentinels,
    }
}

/// The authenticated endpoints `/openapi.json` lists, mapped to `TABLE`; or every reason
/// they cannot be.
fn endpoints_from_openapi() -> (Vec<usize>, Vec<(String, String)>) {
    let document = expect_status(Client::anonymous().get("/openapi.json"), 200);
    let paths = document["paths"].as_object().expect("openapi paths");
    let mut found = Vec::new();
    let mut public = Vec::new();
    let mut problems = Vec::new();
    for (path, item) in paths {
        for method in ["get", "put", "post", "delete", "patch", "head", "options"] {
            let Some(operation) = item.get(method) else {
                continue;
            };
            let method = method.to_uppercase();
            let secured = operation["security"]
                .as_array()
                .is_some_and(|requirements| !requirements.is_empty());
            if !secured {
                if PUBLIC.contains(&(method.as_str(), path.as_str())) {
                    public.push((method, path.clone()));
                } else {
                    problems.push(format!(
                        "{method} {path} has no security in /openapi.json: add it to PUBLIC \
                         in tests/integration/isolation.rs if it really takes no key"
                    ));
                }
                continue;
            }
            if OWN_SUITES.contains(&(method.as_str(), path.as_str())) {
                continue;
            }
            match TABLE
                .iter()
                .position(|entry| entry.method == method && entry.template == path)
            {
                Some(index) => found.push(index),
                None => problems.push(format!(
                    "{method} {path} has no entry in TABLE (tests/integration/isolation.rs): \
                     give it its access class, shape and success status (and a body in \
                     `body_for` if it takes one)"
                )),
            }
        }
    }
    for (index, entry) in TABLE.iter().enumerate() {
        if !found.contains(&index) {
            problems.push(format!(
                "TABLE lists {} {}, which /openapi.json does not: remove the entry",
                entry.method, entry.template
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the isolation matrix does not cover the API:\n{}",
        problems.join("\n")
    );
    found.sort_unstable();
    (found, public)
}

/// What a case's path and body name.
#[derive(Clone, Debug)]
struct Target {
    collection: String,
    memory_id: String,
    key_id: String,
    /// `{agent_key_id}` in the path.
    agent_key_id: String,
    /// The agent key id a grant body names.
    grant_key_id: String,
    job_id: String,
    /// Search text.
    query: String,
    /// The name `POST /v1/memory/collections` creates.
    new_collection: String,
    /// Where a move goes.
    move_to: String,
    /// An allowed forget's query: the throwaway memory's text.
    forget_text: String,
}

fn fill(template: &str, target: &Target) -> Result<String, String> {
    let path = template
        .replace("{collection}", &target.collection)
        .replace("{memory_id}", &target.memory_id)
        .replace("{key_id}", &target.key_id)
        .replace("{agent_key_id}", &target.agent_key_id)
        .replace("{job_id}", &target.job_id);
    if path.contains('{') {
        return Err(format!(
            "no value for a path parameter of {template}: add it to `fill` in \
             tests/integration/isolation.rs"
        ));
    }
    Ok(path)
}

/// The body a case sends: for an allowed call a valid one that changes only what it
/// should; for a call that must be refused the most destructive one the endpoint takes.
fn body_for(
    entry: &Entry,
    target: &Target,
    allowed: bool,
    author: &str,
    llm_url: &str,
) -> Result<Option<Value>, String> {
    let text = format!("Written by {author} ({}).", unique("note"));
    let body = match (entry.method, entry.template) {
        ("GET", _) | ("DELETE", _) | ("POST", "/v1/memory/admin/rotate-key") => return Ok(None),
        ("POST", "/v1/memory/admin/tenants") => {
            let name = unique("iso-intruder");
            json!({"name": name, "email": format!("{name}@example.com"), "admin": true})
        }
        ("POST", "/v1/memory/search") | ("POST", "/v1/memory/collections/{collection}/search") => {
            json!({"query": target.query, "mode": "text", "limit": 50})
        }
        ("POST", "/v1/memory/collections") => {
            json!({"name": target.new_collection, "description": text})
        }
        ("POST", "/v1/memory/collections/{collection}/memories") => json!({"text": text}),
        ("POST", "/v1/memory/collections/{collection}/memories/bulk") => {
            json!([{"text": text}, {"text": format!("Also {text}")}])
        }
        ("POST", "/v1/memory/collections/{collection}/remember") => {
            json!({"content": format!("The {} report was filed.", unique("report"))})
        }
        ("PUT", "/v1/memory/collections/{collection}") if allowed => {
            json!({"description": description_of(&target.collection)})
        }
        ("PUT", "/v1/memory/collections/{collection}") => {
            json!({"description": text, "metadata": {"hijacked": true}})
        }
        ("PATCH", "/v1/memory/collections/{collection}/memories/{memory_id}") if allowed => {
            json!({"importance": 0.9})
        }
        ("PATCH", "/v1/memory/collections/{collection}/memories/{memory_id}") => {
            json!({"text": text, "importance": 0.01, "category": "hijacked"})
        }
        ("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/pin") => {
            json!({"pinned": true})
        }
        ("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/archive") => {
            json!({"archived": true})
        }
        ("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/move") => {
            json!({"to_collection": target.move_to})
        }
        ("POST", "/v1/memory/collections/{collection}/forget") if allowed => {
            json!({"query": target.forget_text, "min_score": 0.9, "limit": 1})
        }
        ("POST", "/v1/memory/collections/{collection}/forget") => {
            json!({"query": target.query, "min_score": -1.0, "limit": 100})
        }
        ("POST", "/v1/memory/collections/{collection}/dedup") if allowed => {
            json!({"dry_run": true})
        }
        ("POST", "/v1/memory/collections/{collection}/dedup") => {
            json!({"threshold": 0.0, "dry_run": false})
        }
        ("POST", "/v1/memory/collections/{collection}/archive-stale") if allowed => {
            json!({"dry_run": true})
        }
        ("POST", "/v1/memory/collections/{collection}/archive-stale") => {
            json!({"older_than_days": 0, "dry_run": false})
        }
        ("PUT", "/v1/memory/collections/{collection}/grants") => {
            json!({"agent_key_id": target.grant_key_id, "can_read": true, "can_write": true})
        }
        ("POST", "/v1/memory/keys") => json!({"label": "iso-made"}),
        ("PUT", "/v1/memory/spend-cap") if allowed => json!({"monthly_usd": 50}),
        ("PUT", "/v1/memory/spend-cap") => json!({"monthly_usd": 0}),
        ("PUT", "/v1/memory/extraction/config") => json!({
            "provider": "custom", "base_url": llm_url, "model": "iso-model", "api_key": "sk-iso"
        }),
        ("PUT", "/v1/memory/webhook/config") if allowed => json!({"url": PUBLIC_WEBHOOK_URL}),
        ("PUT", "/v1/memory/webhook/config") => json!({"url": LOOPBACK_WEBHOOK_URL}),
        (method, template) => {
            return Err(format!(
                "no request body for {method} {template}: add one to `body_for` in \
                 tests/integration/isolation.rs"
            ))
        }
    };
    Ok(Some(body))
}

fn send(client: &Client, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
    let method = Method::from_bytes(method.as_bytes()).expect("method");
    let mut request = client.request(method, path);
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().expect("request");
    let status = response.status().as_u16();
    (status, response.text().unwrap_or_default())
}

fn excerpt(text: &str) -> String {
    let mut cut: String = text.chars().take(EXCERPT_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// Whether the answer has the expected status (and shape, for errors and `exists`).
fn check_status(expect: Expect, status: u16, answer: &Value) -> Result<(), String> {
    let wanted = match expect {
        Expect::Status(wanted) => wanted,
        Expect::Forbidden => 403,
        Expect::NotFound => 404,
        Expect::Absent => 200,
    };
    if status != wanted {
        return Err(format!("expected {wanted} ({expect:?}), got {status}"));
    }
    if matches!(expect, Expect::Forbidden | Expect::NotFound) && !answer["detail"].is_string() {
        return Err(format!("{status} without a string detail"));
    }
    if expect == Expect::Absent && answer["exists"] != json!(false) {
        return Err("expected exists: false for another tenant's collection".to_owned());
    }
    Ok(())
}

fn ids_of(results: &Value) -> Vec<&str> {
    results
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item["id"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

/// Runs one caller tenant's cases, in order, and keeps what later checks need.
struct Runner<'a> {
    tenants: &'a [Tenant],
    caller: usize,
    /// The caller's clients by `KeyKind`; rotation replaces them.
    clients: Vec<Client>,
    llm_url: &'a str,
    /// The other tenants' sentinels.
    foreign: Vec<(String, String)>,
    failures: Vec<String>,
    cases_by_kind: BTreeMap<KeyKind, usize>,
    cross_cases: usize,
    /// Victim-named collections the caller's own keys created in the caller's tenant.
    own_victim_names: HashSet<String>,
    /// Queued remembers of the caller's tenant.
    jobs: Vec<String>,
    quiet: bool,
    created_keys: BTreeSet<String>,
    rotated_keys: BTreeSet<String>,
    /// Old key id to the id of the key that replaced it (grants follow a rotation).
    rotations: BTreeMap<String, String>,
    spend_cap_set: bool,
}

impl<'a> Runner<'a> {
    fn new(tenants: &'a [Tenant], caller: usize, llm_url: &'a str) -> Runner<'a> {
        let foreign = tenants
            .iter()
            .enumerate()
            .filter(|(index, _)| *index != caller)
            .flat_map(|(_, tenant)| tenant.sentinels.iter().cloned())
            .collect();
        Runner {
            tenants,
            caller,
            clients: tenants[caller].clients.clone(),
            llm_url,
            foreign,
            failures: Vec::new(),
            cases_by_kind: BTreeMap::new(),
            cross_cases: 0,
            own_victim_names: HashSet::new(),
            jobs: Vec::new(),
            quiet: false,
            created_keys: BTreeSet::new(),
            rotated_keys: BTreeSet::new(),
            rotations: BTreeMap::new(),
            spend_cap_set: false,
        }
    }

    fn tenant(&self) -> &'a Tenant {
        &self.tenants[self.caller]
    }

    fn owner(&self) -> &Client {
        &self.clients[KeyKind::Owner.index()]
    }

    fn label(&self, case: &Case) -> String {
        let entry = case.entry();
        let scope = match case.scope {
            Scope::Own(_) if entry.shape == Shape::Tenant || entry.shape == Shape::Key => {
                "own tenant".to_owned()
            }
            Scope::Own(which) => format!("own {} collection", which.label()),
            Scope::OwnWithForeignIds(victim) => format!(
                "own open collection, tenant {}'s ids",
                self.tenants[victim].label
            ),
            Scope::Foreign(victim, _) if entry.shape == Shape::Key => {
                format!("tenant {}'s key", self.tenants[victim].label)
            }
            Scope::Foreign(victim, which) => format!(
                "tenant {}'s {} collection",
                self.tenants[victim].label,
                which.label()
            ),
        };
        format!(
            "[tenant {} / {}] {} {} ({scope})",
            self.tenant().label,
            case.kind.label(),
            entry.method,
            entry.template
        )
    }

    fn target(&self, scope: Scope) -> Target {
        let own = self.tenant();
        match scope {
            Scope::Own(which) => Target {
                collection: own.marked(which).name.clone(),
                memory_id: own.marked(which).memory_id.clone(),
                key_id: own.spare_key_id.clone(),
                // A refused delete would open the restricted collection to everyone.
                agent_key_id: match which {
                    Which::Open => own.key_id(KeyKind::Ungranted).to_owned(),
                    Which::Restricted => own.key_id(KeyKind::Granted).to_owned(),
                },
                // A refused grant would let the ungranted agent in.
                grant_key_id: own.key_id(KeyKind::Ungranted).to_owned(),
                job_id: own.marked(which).job_id.clone(),
                query: own.marked(which).token.clone(),
                new_collection: unique("iso-new"),
                move_to: unique("iso-moved"),
                forget_text: String::new(),
            },
            Scope::OwnWithForeignIds(victim) => {
                let victim = &self.tenants[victim];
                Target {
                    collection: own.open.name.clone(),
                    memory_id: victim.open.memory_id.clone(),
                    key_id: victim.key_id(KeyKind::Granted).to_owned(),
                    agent_key_id: victim.key_id(KeyKind::Granted).to_owned(),
                    grant_key_id: victim.key_id(KeyKind::Granted).to_owned(),
                    job_id: victim.open.job_id.clone(),
                    query: victim.open.token.clone(),
                    new_collection: unique("iso-new"),
                    move_to: unique("iso-moved"),
                    forget_text: String::new(),
                }
            }
            Scope::Foreign(victim, which) => {
                let victim = &self.tenants[victim];
                Target {
                    collection: victim.marked(which).name.clone(),
                    memory_id: victim.marked(which).memory_id.clone(),
                    key_id: victim.key_id(KeyKind::Granted).to_owned(),
                    agent_key_id: victim.key_id(KeyKind::Granted).to_owned(),
                    grant_key_id: victim.key_id(KeyKind::Ungranted).to_owned(),
                    job_id: victim.marked(which).job_id.clone(),
                    query: victim.marked(which).token.clone(),
                    new_collection: victim.marked(which).name.clone(),
                    move_to: unique("iso-moved"),
                    forget_text: String::new(),
                }
            }
        }
    }

    /// Phase two: makes the throwaway an allowed destructive write spends.
    fn spend_throwaway(&mut self, case: &Case, target: &mut Target) {
        let Scope::Own(which) = case.scope else {
            return;
        };
        let owner = self.owner().clone();
        let tenant = self.tenant();
        // A move goes under another tenant's collection name: into the caller's tenant.
        target.move_to = self.tenants[(self.caller + 1) % self.tenants.len()]
            .open
            .name
            .clone();
        match case.entry().throwaway {
            Throwaway::Nothing => {}
            Throwaway::Memory => {
                let text = format!(
                    "Throwaway {} for the {}.",
                    unique("spent"),
                    case.kind.label()
                );
                let memory = expect_status(
                    owner.post(&memories_path(&target.collection), &json!({"text": text})),
                    201,
                );
                target.memory_id = memory["id"].as_str().expect("id").to_owned();
                target.forget_text = text;
            }
            Throwaway::Collection | Throwaway::GrantedCollection => {
                let name = unique("iso-spent");
                expect_status(
                    owner.post("/v1/memory/collections", &json!({"name": name})),
                    201,
                );
                if which == Which::Restricted {
                    grant(&owner, &name, tenant.key_id(KeyKind::Granted));
                    grant(&owner, &name, tenant.key_id(KeyKind::ReadOnly));
                }
                if case.entry().throwaway == Throwaway::GrantedCollection {
                    grant(&owner, &name, tenant.key_id(KeyKind::Ungranted));
                    target.agent_key_id = tenant.key_id(KeyKind::Ungranted).to_owned();
                }
                target.collection = name;
            }
            Throwaway::Key => {
                let (_, key_id) = create_key(&owner, "iso-spent", false);
                self.created_keys.insert(key_id.clone());
                target.key_id = key_id;
            }
        }
    }

    fn wait_for_jobs(&self) {
        let owner = self.owner().clone();
        for job in &self.jobs {
            wait_for_job(&owner, job);
        }
    }

    fn run(&mut self, case: &Case, phase_two: bool) {
        let entry = case.entry();
        let label = self.label(case);
        let mut target = self.target(case.scope);
        if phase_two {
            if entry.needs_quiet_tenant() && !self.quiet {
                self.wait_for_jobs();
                self.quiet = true;
            }
            self.spend_throwaway(case, &mut target);
        }
        let mut expect = case.expect;
        let creates_victim_named = matches!(case.scope, Scope::Foreign(..))
            && matches!(entry.access, Access::TenantWrite | Access::CollectionCreate);
        if creates_victim_named
            && entry.template == "/v1/memory/collections"
            && self.own_victim_names.contains(&target.new_collection)
        {
            // The caller's own keys made a collection of that name in its tenant already.
            expect = Expect::Status(409);
        }
        let author = format!("tenant {} ({})", self.tenant().label, case.kind.label());
        let prepared = body_for(entry, &target, expect.allowed(), &author, self.llm_url)
            .and_then(|body| fill(entry.template, &target).map(|path| (path, body)));
        let (path, body) = match prepared {
            Ok(prepared) => prepared,
            Err(problem) => {
                self.failures.push(format!("{label}: {problem}"));
                return;
            }
        };
        let client = self.clients[case.kind.index()].clone();
        let (status, text) = send(&client, entry.method, &path, body.as_ref());
        *self.cases_by_kind.entry(case.kind).or_default() += 1;
        if !matches!(case.scope, Scope::Own(_)) {
            self.cross_cases += 1;
        }
        let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let request = format!(
            "{} {path} {}",
            entry.method,
            body.as_ref().map(Value::to_string).unwrap_or_default()
        );
        let mut problems = Vec::new();
        if status >= 500 {
            problems.push(format!("server error {status}"));
        }
        match check_status(expect, status, &answer) {
            Ok(()) if expect.allowed() => problems.extend(self.inspect(case, &target, &answer)),
            Ok(()) => {}
            Err(problem) => problems.push(problem),
        }
        for (what, sentinel) in &self.foreign {
            if text.contains(sentinel.as_str()) && !request.contains(sentinel.as_str()) {
                problems.push(format!("the answer carries {what} '{sentinel}'"));
            }
        }
        if !problems.is_empty() {
            self.failures.push(format!(
                "{label}: {}\n    request: {}\n    answer:  {status} {}",
                problems.join("; "),
                excerpt(&request),
                excerpt(&text)
            ));
        }
        if (200..300).contains(&status) {
            self.note_success(case, &target, &answer, creates_victim_named);
        }
    }

    /// Checks beyond the status: what tenant-wide listings show the key, and what an
    /// allowed write did.
    fn inspect(&self, case: &Case, target: &Target, answer: &Value) -> Vec<String> {
        let entry = case.entry();
        let tenant = self.tenant();
        let Scope::Own(which) = case.scope else {
            return Vec::new();
        };
        let may_read_restricted = case.kind != KeyKind::Ungranted;
        let mut problems = Vec::new();
        match (entry.method, entry.template) {
            ("GET", "/v1/memory/collections") => {
                let names: Vec<&str> = answer
                    .as_array()
                    .map(|items| {
                        items
                            .iter()
                            .filter_map(|item| item["name"].as_str())
                            .collect()
                    })
                    .unwrap_or_default();
                if !names.contains(&tenant.open.name.as_str()) {
                    problems.push("the open collection is not listed".to_owned());
                }
                if names.contains(&tenant.restricted.name.as_str()) != may_read_restricted {
                    problems.push(format!(
                        "the restricted collection should {}be listed",
                        if may_read_restricted { "" } else { "not " }
                    ));
                }
            }
            ("POST", "/v1/memory/search") => {
                let found = ids_of(&answer["results"]).contains(&target.memory_id.as_str());
                let should_find = which == Which::Open || may_read_restricted;
                if found != should_find {
                    problems.push(format!(
                        "tenant-wide search should {}find the {} collection's memory",
                        if should_find { "" } else { "not " },
                        which.label()
                    ));
                }
                let leaked_collection = answer["results"].as_array().is_some_and(|results| {
                    results
                        .iter()
                        .any(|result| result["collection"] == json!(tenant.restricted.name))
                });
                if leaked_collection && !may_read_restricted {
                    problems.push("tenant-wide search returned the restricted collection".into());
                }
            }
            ("POST", "/v1/memory/collections/{collection}/search")
                if !ids_of(&answer["results"]).contains(&target.memory_id.as_str()) =>
            {
                problems.push("the collection search did not find its memory".to_owned());
            }
            ("GET", "/v1/memory/collections/{collection}/grants")
                if answer["restricted"] != json!(which == Which::Restricted) =>
            {
                problems.push("restricted flag does not match the set-up".to_owned());
            }
            ("POST", "/v1/memory/collections/{collection}/forget") => {
                let deleted = ids_of(&answer["deleted"]);
                if deleted != [target.memory_id.as_str()] {
                    problems.push(format!(
                        "forget should delete only the throwaway {}, deleted {deleted:?}",
                        target.memory_id
                    ));
                }
            }
            ("POST", "/v1/memory/admin/rotate-key")
                if answer["owner"] != json!(case.kind == KeyKind::Owner)
                    || answer["read_only"] != json!(case.kind == KeyKind::ReadOnly) =>
            {
                problems.push("the rotated key does not keep its role".to_owned());
            }
            _ => {}
        }
        problems
    }

    fn note_success(&mut self, case: &Case, target: &Target, answer: &Value, victim_named: bool) {
        let entry = case.entry();
        if let Some(job) = answer["job_id"].as_str() {
            self.jobs.push(job.to_owned());
        }
        if victim_named {
            self.own_victim_names
                .insert(if entry.template == "/v1/memory/collections" {
                    target.new_collection.clone()
                } else {
                    target.collection.clone()
                });
        }
        match (entry.method, entry.template) {
            ("POST", "/v1/memory/keys") => {
                if let Some(id) = answer["id"].as_str() {
                    self.created_keys.insert(id.to_owned());
                }
            }
            ("PUT", "/v1/memory/spend-cap") => self.spend_cap_set = true,
            ("POST", "/v1/memory/admin/rotate-key") => self.rotated(case, answer),
            _ => {}
        }
    }

    fn rotated(&mut self, case: &Case, answer: &Value) {
        let label = self.label(case);
        let (Some(secret), Some(new_id)) = (answer["key"].as_str(), answer["id"].as_str()) else {
            self.failures
                .push(format!("{label}: the answer has no key and id: {answer}"));
            return;
        };
        let old = self.clients[case.kind.index()].clone();
        let replacement = Client::new(&shared().base_url, Some(secret));
        let old_status = old.get("/v1/memory/admin/me").status().as_u16();
        if old_status != 401 {
            self.failures.push(format!(
                "{label}: the rotated-away key still gets {old_status} instead of 401"
            ));
        }
        let me = replacement.get("/v1/memory/admin/me");
        let new_key_works = me.status().as_u16() == 200;
        if !new_key_works {
            self.failures
                .push(format!("{label}: the new key gets {}", me.status()));
        }
        let old_id = self.tenant().key_id(case.kind).to_owned();
        self.rotations.insert(old_id.clone(), new_id.to_owned());
        self.rotated_keys.insert(old_id);
        self.created_keys.insert(new_id.to_owned());
        self.clients[case.kind.index()] = replacement;
    }
}

fn cases_for(caller: usize, endpoints: &[usize]) -> Vec<Case> {
    let mut cases = Vec::new();
    for &order in endpoints {
        let entry = &TABLE[order];
        for kind in KeyKind::ALL {
            for scope in scopes(entry.shape, caller) {
                cases.push(Case {
                    order,
                    kind,
                    scope,
                    expect: expectation(entry, kind, scope),
                });
            }
        }
    }
    cases
}

/// Changes between two readings of one collection, or None.
/// The collection as it should be after rotations: a rotated key's grants belong to the
/// key that replaced it (listed by agent key id).
fn with_rotated_grants(
    collection: &CollectionState,
    rotations: &BTreeMap<String, String>,
) -> CollectionState {
    let mut expected = collection.clone();
    if let Some(grants) = expected.grants.as_array_mut() {
        for grant in grants.iter_mut() {
            let old = grant["agent_key_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if let Some(new) = rotations.get(&old) {
                grant["agent_key_id"] = json!(new);
            }
        }
        grants.sort_by(|a, b| {
            a["agent_key_id"]
                .as_str()
                .unwrap_or_default()
                .cmp(b["agent_key_id"].as_str().unwrap_or_default())
        });
    }
    expected
}

fn collection_change(before: &CollectionState, after: &CollectionState) -> Option<String> {
    let mut changes = Vec::new();
    if before.record != after.record {
        changes.push(format!("record {} -> {}", before.record, after.record));
    }
    if before.grants != after.grants {
        changes.push(format!("grants {} -> {}", before.grants, after.grants));
    }
    for (id, memory) in &before.memories {
        match after.memories.get(id) {
            None => changes.push(format!("memory {id} is gone")),
            Some(now) if now != memory => changes.push(format!("memory {memory} -> {now}")),
            Some(_) => {}
        }
    }
    (!changes.is_empty()).then(|| changes.join("\n      "))
}

/// Every trace of another tenant in `state`: their sentinels, or a memory not written by
/// one of the tenant's own keys.
fn foreign_traces(tenants: &[Tenant], index: usize, state: &TenantState) -> Vec<String> {
    let tenant = &tenants[index];
    let mut problems = Vec::new();
    let text = format!("{state:?}");
    for (other_index, other) in tenants.iter().enumerate() {
        if other_index == index {
            continue;
        }
        for (what, sentinel) in &other.sentinels {
            if text.contains(sentinel.as_str()) {
                problems.push(format!(
                    "tenant {}'s data carries {what} '{sentinel}'",
                    tenant.label
                ));
            }
        }
    }
    for (name, collection) in &state.collections {
        for (id, memory) in &collection.memories {
            let author = memory["created_by"]["id"].as_str().unwrap_or_default();
            if !state.keys.contains_key(author) {
                problems.push(format!(
                    "tenant {}'s memory {id} in {name} was written by '{author}', not one of \
                     its keys",
                    tenant.label
                ));
            }
        }
    }
    problems
}

/// After phase one: every tenant exactly as set up, apart from collections its own keys
/// made under the other tenants' collection names.
fn verify_unchanged(tenants: &[Tenant], index: usize, after: &TenantState) -> Vec<String> {
    let tenant = &tenants[index];
    let before = &tenant.setup;
    let mut problems = Vec::new();
    for (name, collection) in &before.collections {
        match after.collections.get(name) {
            None => problems.push(format!(
                "tenant {}: collection {name} is gone",
                tenant.label
            )),
            Some(now) => {
                if let Some(change) = collection_change(collection, now) {
                    problems.push(format!(
                        "tenant {}: collection {name} changed:\n      {change}",
                        tenant.label
                    ));
                }
                let added: Vec<&String> = now
                    .memories
                    .keys()
                    .filter(|id| !collection.memories.contains_key(*id))
                    .collect();
                if !added.is_empty() {
                    problems.push(format!(
                        "tenant {}: collection {name} gained memories {added:?}",
                        tenant.label
                    ));
                }
            }
        }
    }
    let victim_names: BTreeSet<&String> = tenants
        .iter()
        .enumerate()
        .filter(|(other, _)| *other != index)
        .flat_map(|(_, other)| other.setup.collections.keys())
        .collect();
    for name in after.collections.keys() {
        if !before.collections.contains_key(name) && !victim_names.contains(name) {
            problems.push(format!(
                "tenant {}: unexpected collection {name} after phase one",
                tenant.label
            ));
        }
    }
    if after.keys != before.keys {
        problems.push(format!(
            "tenant {}: keys changed:\n      {:?}\n   -> {:?}",
            tenant.label, before.keys, after.keys
        ));
    }
    if (
        &after.webhook_status,
        &after.extraction_configured,
        &after.spend_cap,
    ) != (
        &before.webhook_status,
        &before.extraction_configured,
        &before.spend_cap,
    ) {
        problems.push(format!(
            "tenant {}: settings changed: webhook {} -> {}, extraction {} -> {}, cap {} -> {}",
            tenant.label,
            before.webhook_status,
            after.webhook_status,
            before.extraction_configured,
            after.extraction_configured,
            before.spend_cap,
            after.spend_cap
        ));
    }
    problems.extend(foreign_traces(tenants, index, after));
    problems
}

/// After phase two: the set-up data intact, and every difference one the tenant's own
/// keys made (new memories and collections, created and rotated keys, its spend cap).
fn verify_own_changes_only(
    tenants: &[Tenant],
    runner: &Runner,
    after: &TenantState,
) -> Vec<String> {
    let index = runner.caller;
    let tenant = &tenants[index];
    let before = &tenant.setup;
    let mut problems = Vec::new();
    for (name, collection) in &before.collections {
        match after.collections.get(name) {
            None => problems.push(format!(
                "tenant {}: collection {name} is gone",
                tenant.label
            )),
            Some(now) => {
                let expected = with_rotated_grants(collection, &runner.rotations);
                if let Some(change) = collection_change(&expected, now) {
                    problems.push(format!(
                        "tenant {}: collection {name} changed:\n      {change}",
                        tenant.label
                    ));
                }
            }
        }
    }
    for (id, key) in &before.keys {
        let Some(now) = after.keys.get(id) else {
            problems.push(format!("tenant {}: key {id} is gone", tenant.label));
            continue;
        };
        let unchanged = if runner.rotated_keys.contains(id) {
            now["active"] == json!(false)
                && now["revoked_at"].is_string()
                && ["label", "read_only", "owner", "created_at"]
                    .iter()
                    .all(|field| now[field] == key[field])
        } else {
            now == key
        };
        if !unchanged {
            problems.push(format!("tenant {}: key {key} -> {now}", tenant.label));
        }
    }
    for id in after.keys.keys() {
        if !before.keys.contains_key(id) && !runner.created_keys.contains(id) {
            problems.push(format!(
                "tenant {}: key {id} was not made by its own cases",
                tenant.label
            ));
        }
    }
    let expected_cap = if runner.spend_cap_set {
        json!(50.0)
    } else {
        before.spend_cap.clone()
    };
    if after.webhook_status != 404
        || after.extraction_configured != json!(false)
        || after.spend_cap != expected_cap
    {
        problems.push(format!(
            "tenant {}: settings: webhook {}, extraction configured {}, cap {} (expected 404, \
             false, {expected_cap})",
            tenant.label, after.webhook_status, after.extraction_configured, after.spend_cap
        ));
    }
    problems.extend(foreign_traces(tenants, index, after));
    problems
}

fn run_phase<'a>(
    runners: Vec<Runner<'a>>,
    cases: &[Vec<Case>],
    phase_two: bool,
) -> Vec<Runner<'a>> {
    thread::scope(|scope| {
        let handles: Vec<_> = runners
            .into_iter()
            .zip(cases)
            .map(|(mut runner, cases)| {
                scope.spawn(move || {
                    for case in cases {
                        runner.run(case, phase_two);
                    }
                    runner
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a matrix thread panicked"))
            .collect()
    })
}

#[test]
fn every_key_of_every_tenant_stays_inside_its_tenant_and_its_grants() {
    let started = Instant::now();
    let (endpoints, public) = endpoints_from_openapi();
    let llm = FakeLlmServer::start();
    // The owner's extraction config passes its self-test; a refused one never gets there.
    llm.set_fallback(|_| FakeReply::chat("{\"ok\": true}"));
    let llm_url = llm.base_url();
    let tenants: Vec<Tenant> = thread::scope(|scope| {
        let handles: Vec<_> = TENANT_LABELS
            .map(|label| scope.spawn(move || set_up_tenant(label)))
            .into_iter()
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("set-up panicked"))
            .collect()
    });
    let set_up_in = started.elapsed();

    let mut phase_one = Vec::new();
    let mut phase_two = Vec::new();
    for caller in 0..tenants.len() {
        let mut cases = cases_for(caller, &endpoints);
        cases.sort_by_key(|case| (case.stage(), case.order, case.kind));
        let (second, first): (Vec<Case>, Vec<Case>) =
            cases.into_iter().partition(Case::in_phase_two);
        phase_one.push(first);
        phase_two.push(second);
    }
    let mut failures = Vec::new();

    let runners: Vec<Runner> = (0..tenants.len())
        .map(|caller| Runner::new(&tenants, caller, &llm_url))
        .collect();
    let mut runners = run_phase(runners, &phase_one, false);
    for runner in &runners {
        failures.extend(runner.failures.iter().cloned());
    }
    for (index, tenant) in tenants.iter().enumerate() {
        let after = TenantState::read(tenant.owner());
        failures.extend(verify_unchanged(&tenants, index, &after));
    }
    for runner in &mut runners {
        runner.failures.clear();
    }

    let runners = run_phase(runners, &phase_two, true);
    for runner in &runners {
        failures.extend(runner.failures.iter().cloned());
        let after = TenantState::read(runner.owner());
        failures.extend(verify_own_changes_only(&tenants, runner, &after));
    }

    let mut by_kind: BTreeMap<KeyKind, usize> = BTreeMap::new();
    for runner in &runners {
        for (kind, count) in &runner.cases_by_kind {
            *by_kind.entry(*kind).or_default() += count;
        }
    }
    let total: usize = by_kind.values().sum();
    let cross: usize = runners.iter().map(|runner| runner.cross_cases).sum();
    let per_kind: Vec<String> = by_kind
        .iter()
        .map(|(kind, count)| format!("{} {count}", kind.label()))
        .collect();
    eprintln!(
        "isolation matrix: {total} cases ({} phase one, {} phase two; {} own tenant, {cross} \
         cross-tenant) over {} endpoints x {} tenants; per key kind: {}; set-up {:.1} s, \
         total {:.1} s; public endpoints skipped (no key, no tenant data): {}",
        phase_one.iter().map(Vec::len).sum::<usize>(),
        phase_two.iter().map(Vec::len).sum::<usize>(),
        total - cross,
        endpoints.len(),
        tenants.len(),
        per_kind.join(", "),
        set_up_in.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        public
            .iter()
            .map(|(method, path)| format!("{method} {path}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(
        failures.is_empty(),
        "{} isolation failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
