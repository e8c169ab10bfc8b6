//! The set-up: three tenants, each with four kinds of key and an open and a restricted
//! collection, each collection marked by a memory and a remember job.

use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

use super::verify::TenantState;
use crate::support::{expect_status, memories_path, shared, unique, Client};

pub(super) const TENANT_LABELS: [&str; 3] = ["A", "B", "C"];

/// How long a queued remember may take.
pub(super) const JOB_WAIT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum KeyKind {
    Owner,
    ReadOnly,
    /// An agent key granted read and write on the tenant's restricted collection.
    Granted,
    /// An agent key without a grant.
    Ungranted,
}

impl KeyKind {
    pub(super) const ALL: [KeyKind; 4] = [
        KeyKind::Owner,
        KeyKind::ReadOnly,
        KeyKind::Granted,
        KeyKind::Ungranted,
    ];

    pub(super) fn index(self) -> usize {
        self as usize
    }

    pub(super) fn label(self) -> &'static str {
        match self {
            KeyKind::Owner => "owner",
            KeyKind::ReadOnly => "read-only",
            KeyKind::Granted => "granted agent",
            KeyKind::Ungranted => "ungranted agent",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Which {
    Open,
    Restricted,
}

impl Which {
    pub(super) fn label(self) -> &'static str {
        match self {
            Which::Open => "open",
            Which::Restricted => "restricted",
        }
    }
}

/// One collection of the set-up, the memory that marks it and a remember job on it.
pub(super) struct Marked {
    pub(super) name: String,
    pub(super) memory_id: String,
    pub(super) token: String,
    pub(super) job_id: String,
}

pub(super) struct Tenant {
    pub(super) label: &'static str,
    /// One client per `KeyKind`, as set up (phase two rotates copies of them).
    pub(super) clients: Vec<Client>,
    /// One key id per `KeyKind`.
    pub(super) key_ids: Vec<String>,
    /// An agent key that refused revocations aim at.
    pub(super) spare_key_id: String,
    pub(super) open: Marked,
    pub(super) restricted: Marked,
    /// The data as set up, read with the owner key.
    pub(super) setup: TenantState,
    /// What must never appear in an answer to another tenant: (what it is, the string).
    pub(super) sentinels: Vec<(String, String)>,
}

impl Tenant {
    pub(super) fn owner(&self) -> &Client {
        &self.clients[KeyKind::Owner.index()]
    }

    pub(super) fn key_id(&self, kind: KeyKind) -> &str {
        &self.key_ids[kind.index()]
    }

    pub(super) fn marked(&self, which: Which) -> &Marked {
        match which {
            Which::Open => &self.open,
            Which::Restricted => &self.restricted,
        }
    }
}

pub(super) fn create_key(owner: &Client, label: &str, read_only: bool) -> (Client, String) {
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

pub(super) fn grant(owner: &Client, collection: &str, agent_key_id: &str) {
    expect_status(
        owner.put(
            &format!("/v1/memory/collections/{collection}/grants"),
            &json!({"agent_key_id": agent_key_id, "can_read": true, "can_write": true}),
        ),
        200,
    );
}

/// The description every collection of the set-up has (an allowed PUT writes it again).
pub(super) fn description_of(collection: &str) -> String {
    format!("{collection}, isolation matrix")
}

pub(super) fn new_token() -> String {
    unique("tok").replace('-', "")
}

pub(super) fn wait_for_job(owner: &Client, job_id: &str) {
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

pub(super) fn set_up_collection(
    owner: &Client,
    tenant: &str,
    which: Which,
) -> (Marked, Vec<String>) {
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

pub(super) fn set_up_tenant(label: &'static str) -> Tenant {
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
