//! Cases and their running: which scopes an entry runs in, what the access model expects,
//! the request each case sends and the checks on its answer.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::thread;

use reqwest::Method;
use serde_json::{json, Value};

use super::fixtures::{create_key, grant, wait_for_job, KeyKind, Tenant, Which, TENANT_LABELS};
use super::table::{body_for, Access, Entry, Shape, Throwaway, TABLE};
use crate::support::{expect_status, memories_path, shared, unique, Client};

/// Most characters of an answer quoted in a failure.
pub(super) const EXCERPT_CHARS: usize = 300;

/// Whose resources a case names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scope {
    /// The caller's own open or restricted collection and its ids.
    Own(Which),
    /// The caller's own open collection with the victim's memory, key and job ids.
    OwnWithForeignIds(usize),
    /// The victim's open or restricted collection and its ids.
    Foreign(usize, Which),
}

pub(super) fn scopes(shape: Shape, caller: usize) -> Vec<Scope> {
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
pub(super) enum Expect {
    Status(u16),
    /// 403 with a `detail`.
    Forbidden,
    /// 404 with a `detail`.
    NotFound,
    /// 200 with `exists: false`.
    Absent,
}

impl Expect {
    pub(super) fn allowed(self) -> bool {
        matches!(self, Expect::Status(status) if (200..300).contains(&status))
    }
}

/// What the access model says `kind` gets from `entry` in `scope`.
pub(super) fn expectation(entry: &Entry, kind: KeyKind, scope: Scope) -> Expect {
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
pub(super) struct Case {
    /// Index in `TABLE`: phase two runs in table order.
    pub(super) order: usize,
    pub(super) kind: KeyKind,
    pub(super) scope: Scope,
    pub(super) expect: Expect,
}

impl Case {
    pub(super) fn entry(&self) -> &'static Entry {
        &TABLE[self.order]
    }

    /// Allowed writes on the own tenant run in phase two; everything else in phase one.
    pub(super) fn in_phase_two(&self) -> bool {
        matches!(self.scope, Scope::Own(_)) && self.entry().changes() && self.expect.allowed()
    }

    /// Phase one runs reads first, then refused writes, then the writes that create
    /// collections in the caller's own tenant under the victims' names (so reads of those
    /// names still find nothing of the caller's).
    pub(super) fn stage(&self) -> u8 {
        if !self.entry().changes() {
            0
        } else if !self.expect.allowed() {
            1
        } else {
            2
        }
    }
}

/// What a case's path and body name.
#[derive(Clone, Debug)]
pub(super) struct Target {
    pub(super) collection: String,
    pub(super) memory_id: String,
    pub(super) key_id: String,
    /// `{agent_key_id}` in the path.
    pub(super) agent_key_id: String,
    /// The agent key id a grant body names.
    pub(super) grant_key_id: String,
    pub(super) job_id: String,
    /// Search text.
    pub(super) query: String,
    /// The name `POST /v1/memory/collections` creates.
    pub(super) new_collection: String,
    /// Where a move goes.
    pub(super) move_to: String,
    /// An allowed forget's query: the throwaway memory's text.
    pub(super) forget_text: String,
}

pub(super) fn fill(template: &str, target: &Target) -> Result<String, String> {
    let path = template
        .replace("{collection}", &target.collection)
        .replace("{memory_id}", &target.memory_id)
        .replace("{key_id}", &target.key_id)
        .replace("{agent_key_id}", &target.agent_key_id)
        .replace("{job_id}", &target.job_id);
    if path.contains('{') {
        return Err(format!(
            "no value for a path parameter of {template}: add it to `fill` in \
             tests/integration/isolation/runner.rs"
        ));
    }
    Ok(path)
}

pub(super) fn send(
    client: &Client,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, String) {
    let method = Method::from_bytes(method.as_bytes()).expect("method");
    let mut request = client.request(method, path);
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().expect("request");
    let status = response.status().as_u16();
    (status, response.text().unwrap_or_default())
}

pub(super) fn excerpt(text: &str) -> String {
    let mut cut: String = text.chars().take(EXCERPT_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// Whether the answer has the expected status (and shape, for errors and `exists`).
pub(super) fn check_status(expect: Expect, status: u16, answer: &Value) -> Result<(), String> {
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

pub(super) fn ids_of(results: &Value) -> Vec<&str> {
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
pub(super) struct Runner<'a> {
    pub(super) tenants: &'a [Tenant],
    pub(super) caller: usize,
    /// The caller's clients by `KeyKind`; rotation replaces them.
    pub(super) clients: Vec<Client>,
    pub(super) llm_url: &'a str,
    /// The other tenants' sentinels.
    pub(super) foreign: Vec<(String, String)>,
    pub(super) failures: Vec<String>,
    pub(super) cases_by_kind: BTreeMap<KeyKind, usize>,
    pub(super) cross_cases: usize,
    /// Victim-named collections the caller's own keys created in the caller's tenant.
    pub(super) own_victim_names: HashSet<String>,
    /// Queued remembers of the caller's tenant.
    pub(super) jobs: Vec<String>,
    pub(super) quiet: bool,
    pub(super) created_keys: BTreeSet<String>,
    pub(super) rotated_keys: BTreeSet<String>,
    /// Old key id to the id of the key that replaced it (grants follow a rotation).
    pub(super) rotations: BTreeMap<String, String>,
    pub(super) spend_cap_set: bool,
}

impl<'a> Runner<'a> {
    pub(super) fn new(tenants: &'a [Tenant], caller: usize, llm_url: &'a str) -> Runner<'a> {
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

    pub(super) fn tenant(&self) -> &'a Tenant {
        &self.tenants[self.caller]
    }

    pub(super) fn owner(&self) -> &Client {
        &self.clients[KeyKind::Owner.index()]
    }

    pub(super) fn label(&self, case: &Case) -> String {
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

    pub(super) fn target(&self, scope: Scope) -> Target {
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
    pub(super) fn spend_throwaway(&mut self, case: &Case, target: &mut Target) {
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

    pub(super) fn wait_for_jobs(&self) {
        let owner = self.owner().clone();
        for job in &self.jobs {
            wait_for_job(&owner, job);
        }
    }

    pub(super) fn run(&mut self, case: &Case, phase_two: bool) {
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
    pub(super) fn inspect(&self, case: &Case, target: &Target, answer: &Value) -> Vec<String> {
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

    pub(super) fn note_success(
        &mut self,
        case: &Case,
        target: &Target,
        answer: &Value,
        victim_named: bool,
    ) {
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

    pub(super) fn rotated(&mut self, case: &Case, answer: &Value) {
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

pub(super) fn cases_for(caller: usize, endpoints: &[usize]) -> Vec<Case> {
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

pub(super) fn run_phase<'a>(
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
