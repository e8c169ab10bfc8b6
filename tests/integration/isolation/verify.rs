//! The checks after each phase: every tenant's data as its owner reads it, compared with
//! the set-up.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::fixtures::Tenant;
use super::runner::Runner;
use crate::support::{expect_status, memories_path, Client};

/// A collection as its owner sees it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct CollectionState {
    /// The collection without `updated_at` and `memory_count` (phase two's own writes
    /// change those).
    pub(super) record: Value,
    pub(super) grants: Value,
    /// Every memory, archived ones included, by id.
    pub(super) memories: BTreeMap<String, Value>,
}

/// A tenant's data as its owner sees it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TenantState {
    pub(super) collections: BTreeMap<String, CollectionState>,
    pub(super) keys: BTreeMap<String, Value>,
    pub(super) webhook_status: u16,
    pub(super) extraction_configured: Value,
    pub(super) spend_cap: Value,
}

impl TenantState {
    pub(super) fn read(owner: &Client) -> TenantState {
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

/// The collection as it should be after rotations: a rotated key's grants belong to the
/// key that replaced it (listed by agent key id).
pub(super) fn with_rotated_grants(
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

/// Changes between two readings of one collection, or None.
pub(super) fn collection_change(
    before: &CollectionState,
    after: &CollectionState,
) -> Option<String> {
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
pub(super) fn foreign_traces(tenants: &[Tenant], index: usize, state: &TenantState) -> Vec<String> {
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
pub(super) fn verify_unchanged(
    tenants: &[Tenant],
    index: usize,
    after: &TenantState,
) -> Vec<String> {
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
pub(super) fn verify_own_changes_only(
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
