//! One behavioural test suite for every [`Store`] implementation.
//!
//! Each implementation's tests call [`run_all`] with a fresh, empty store; Postgres will
//! run the same suite as sled does. The functions panic on the first broken expectation.

use chrono::{TimeZone, Utc};
use serde_json::json;

use crate::records::{
    ApiKeyRecord, CollectionName, CollectionRecord, CreatedBy, ExtractJobRecord,
    ExtractionLlmRecord, JobState, MemoryRecord, RememberedFact, StoredMemory, TenantId,
    TenantRecord, TenantSettings, UsageRow,
};
use crate::store::Store;

/// Runs every check against an empty store.
pub fn run_all(store: &dyn Store) {
    tenants_round_trip(store);
    api_keys_are_per_tenant(store);
    collections_round_trip_and_update(store);
    memories_round_trip_with_embeddings(store);
    put_replaces_a_memory(store);
    delete_memories_removes_only_those(store);
    delete_collection_removes_its_memories_only(store);
    move_memory_is_all_or_nothing(store);
    tenants_never_see_each_other(store);
    settings_default_then_round_trip(store);
    usage_adds_up_per_row(store);
    jobs_leave_the_queue_when_finished(store);
}

pub fn sample_tenant(name: &str) -> TenantRecord {
    TenantRecord {
        id: TenantId::generate(),
        name: name.to_owned(),
        email: format!("{name}@example.com"),
        tier: "free".to_owned(),
        admin: false,
        created_at: Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap(),
    }
}

pub fn sample_collection(name: &str) -> CollectionRecord {
    let now = Utc::now();
    CollectionRecord {
        name: CollectionName::parse(name).unwrap(),
        description: Some(format!("about {name}")),
        metadata: json!({"owner": "suite"}).as_object().unwrap().clone(),
        created_at: now,
        updated_at: now,
    }
}

pub fn sample_memory(id: &str, text: &str) -> StoredMemory {
    let now = Utc::now();
    StoredMemory {
        record: MemoryRecord {
            id: id.to_owned(),
            text: text.to_owned(),
            importance: 0.5,
            category: "other".to_owned(),
            source: "api".to_owned(),
            metadata: json!({"n": 1, "nested": {"ok": true}})
                .as_object()
                .unwrap()
                .clone(),
            container_tag: Some("user-1".to_owned()),
            images: Vec::new(),
            created_at: now,
            updated_at: now,
            pinned: false,
            archived: false,
            created_by: CreatedBy {
                id: "key_suite".to_owned(),
                label: "suite".to_owned(),
            },
            superseded_by: None,
            superseded_at: None,
            slot: None,
            value: None,
            expires_at: None,
            index_key: 0,
        },
        embedding: (0..384).map(|index| index as f32 / 384.0 - 0.5).collect(),
    }
}

fn name(raw: &str) -> CollectionName {
    CollectionName::parse(raw).unwrap()
}

fn ids_of(memories: &[StoredMemory]) -> Vec<String> {
    let mut ids: Vec<String> = memories
        .iter()
        .map(|memory| memory.record.id.clone())
        .collect();
    ids.sort();
    ids
}

pub fn tenants_round_trip(store: &dyn Store) {
    let tenant = sample_tenant("round-trip");
    store.put_tenant(&tenant).unwrap();
    let listed = store.tenants().unwrap();
    assert!(listed.contains(&tenant), "tenant not listed after put");
    let mut renamed = tenant.clone();
    renamed.name = "renamed".to_owned();
    store.put_tenant(&renamed).unwrap();
    let listed = store.tenants().unwrap();
    assert_eq!(
        listed.iter().filter(|each| each.id == tenant.id).count(),
        1,
        "put of an existing tenant must replace it"
    );
    assert!(listed.contains(&renamed));
}

pub fn api_keys_are_per_tenant(store: &dyn Store) {
    let owner = sample_tenant("keys-owner");
    let other = sample_tenant("keys-other");
    let key = ApiKeyRecord {
        id: "key_1".to_owned(),
        tenant_id: owner.id.clone(),
        label: "default".to_owned(),
        key_hash: "ab".repeat(32),
        display_prefix: "mv_abcd".to_owned(),
        read_only: false,
        created_at: Utc::now(),
        revoked_at: None,
        expires_at: None,
    };
    store.put_api_key(&key).unwrap();
    assert_eq!(store.api_keys(&owner.id).unwrap(), vec![key.clone()]);
    assert!(store.api_keys(&other.id).unwrap().is_empty());
    let mut revoked = key;
    revoked.revoked_at = Some(Utc::now());
    store.put_api_key(&revoked).unwrap();
    assert_eq!(store.api_keys(&owner.id).unwrap(), vec![revoked]);
}

pub fn collections_round_trip_and_update(store: &dyn Store) {
    let tenant = sample_tenant("collections");
    let mut collection = sample_collection("notes");
    store.put_collection(&tenant.id, &collection).unwrap();
    assert_eq!(
        store.collections(&tenant.id).unwrap(),
        vec![collection.clone()]
    );
    collection.description = None;
    store.put_collection(&tenant.id, &collection).unwrap();
    assert_eq!(store.collections(&tenant.id).unwrap(), vec![collection]);
}

pub fn memories_round_trip_with_embeddings(store: &dyn Store) {
    let tenant = sample_tenant("memories");
    let notes = name("notes");
    store
        .put_collection(&tenant.id, &sample_collection("notes"))
        .unwrap();
    let first = sample_memory("m1", "first");
    let second = sample_memory("m2", "zweite Erinnerung, 記憶");
    store
        .put_memories(&tenant.id, &notes, &[first.clone(), second.clone()])
        .unwrap();
    assert_eq!(
        store.memory(&tenant.id, &notes, "m2").unwrap(),
        Some(second)
    );
    assert_eq!(store.memory(&tenant.id, &notes, "absent").unwrap(), None);
    assert_eq!(
        ids_of(&store.memories(&tenant.id, &notes).unwrap()),
        vec!["m1", "m2"]
    );
    let loaded = store.memory(&tenant.id, &notes, "m1").unwrap().unwrap();
    assert_eq!(
        loaded.embedding, first.embedding,
        "embedding must round-trip bit for bit"
    );
}

pub fn put_replaces_a_memory(store: &dyn Store) {
    let tenant = sample_tenant("replace");
    let notes = name("notes");
    let original = sample_memory("m1", "original");
    store.put_memories(&tenant.id, &notes, &[original]).unwrap();
    let mut changed = sample_memory("m1", "changed");
    changed.record.pinned = true;
    changed.embedding = vec![1.0; 384];
    store
        .put_memories(&tenant.id, &notes, &[changed.clone()])
        .unwrap();
    assert_eq!(store.memories(&tenant.id, &notes).unwrap(), vec![changed]);
}

pub fn delete_memories_removes_only_those(store: &dyn Store) {
    let tenant = sample_tenant("delete-memories");
    let notes = name("notes");
    let memories: Vec<StoredMemory> = (0..5)
        .map(|index| sample_memory(&format!("m{index}"), "text"))
        .collect();
    store.put_memories(&tenant.id, &notes, &memories).unwrap();
    store
        .delete_memories(&tenant.id, &notes, &["m1".to_owned(), "m3".to_owned()])
        .unwrap();
    assert_eq!(
        ids_of(&store.memories(&tenant.id, &notes).unwrap()),
        vec!["m0", "m2", "m4"]
    );
    // Deleting an absent id is not an error.
    store
        .delete_memories(&tenant.id, &notes, &["never-there".to_owned()])
        .unwrap();
}

pub fn delete_collection_removes_its_memories_only(store: &dyn Store) {
    let tenant = sample_tenant("delete-collection");
    let doomed = name("doomed");
    // A collection whose name extends the doomed one's must survive: prefixes end in '/'.
    let neighbour = name("doomed-not");
    for collection in ["doomed", "doomed-not"] {
        store
            .put_collection(&tenant.id, &sample_collection(collection))
            .unwrap();
    }
    store
        .put_memories(&tenant.id, &doomed, &[sample_memory("a", "goes")])
        .unwrap();
    store
        .put_memories(&tenant.id, &neighbour, &[sample_memory("b", "stays")])
        .unwrap();
    store.delete_collection(&tenant.id, &doomed).unwrap();
    assert!(store.memories(&tenant.id, &doomed).unwrap().is_empty());
    assert_eq!(
        ids_of(&store.memories(&tenant.id, &neighbour).unwrap()),
        vec!["b"]
    );
    let names: Vec<CollectionName> = store
        .collections(&tenant.id)
        .unwrap()
        .into_iter()
        .map(|collection| collection.name)
        .collect();
    assert_eq!(names, vec![neighbour]);
}

pub fn move_memory_is_all_or_nothing(store: &dyn Store) {
    let tenant = sample_tenant("move");
    let (from, to) = (name("from"), name("to"));
    let mut memory = sample_memory("m1", "travels");
    store
        .put_memories(&tenant.id, &from, &[memory.clone()])
        .unwrap();
    memory.record.importance = 0.9;
    store.move_memory(&tenant.id, &from, &to, &memory).unwrap();
    assert!(store.memories(&tenant.id, &from).unwrap().is_empty());
    assert_eq!(store.memories(&tenant.id, &to).unwrap(), vec![memory]);
}

pub fn tenants_never_see_each_other(store: &dyn Store) {
    let first = sample_tenant("first");
    let second = sample_tenant("second");
    let shared_name = name("shared");
    store
        .put_collection(&first.id, &sample_collection("shared"))
        .unwrap();
    store
        .put_memories(&first.id, &shared_name, &[sample_memory("m1", "private")])
        .unwrap();
    assert!(store.collections(&second.id).unwrap().is_empty());
    assert!(store.memories(&second.id, &shared_name).unwrap().is_empty());
    assert_eq!(store.memory(&second.id, &shared_name, "m1").unwrap(), None);
    assert_eq!(store.tenant_bytes(&second.id).unwrap(), 0);
    assert!(store.tenant_bytes(&first.id).unwrap() > 0);
}

pub fn settings_default_then_round_trip(store: &dyn Store) {
    let tenant = sample_tenant("settings");
    store.put_tenant(&tenant).unwrap();
    assert_eq!(
        store.tenant_settings(&tenant.id).unwrap(),
        TenantSettings::default()
    );
    let settings = TenantSettings {
        extraction_llm: Some(ExtractionLlmRecord {
            provider: "custom".to_owned(),
            base_url: "http://127.0.0.1:9/v1".to_owned(),
            model: "m".to_owned(),
            api_key_sealed: "v1:sealed".to_owned(),
            updated_at: Utc::now(),
        }),
        spend_cap_usd: Some(2.5),
    };
    store.put_tenant_settings(&tenant.id, &settings).unwrap();
    assert_eq!(store.tenant_settings(&tenant.id).unwrap(), settings);
    let other = sample_tenant("settings-other");
    store.put_tenant(&other).unwrap();
    assert_eq!(
        store.tenant_settings(&other.id).unwrap(),
        TenantSettings::default()
    );
}

pub fn usage_adds_up_per_row(store: &dyn Store) {
    let tenant = sample_tenant("usage");
    store.put_tenant(&tenant).unwrap();
    let row = |month: &str, purpose: &str, tokens: u64| UsageRow {
        month: month.to_owned(),
        purpose: purpose.to_owned(),
        model: "gpt/x".to_owned(),
        own_llm: false,
        calls: 1,
        prompt_tokens: tokens,
        completion_tokens: 1,
        cost_usd: 0.25,
    };
    store
        .add_usage(&tenant.id, &row("2026-11", "extract", 10))
        .unwrap();
    store
        .add_usage(&tenant.id, &row("2026-11", "extract", 5))
        .unwrap();
    store
        .add_usage(&tenant.id, &row("2026-11", "rerank", 7))
        .unwrap();
    store
        .add_usage(&tenant.id, &row("2026-10", "extract", 100))
        .unwrap();
    let mut november = store.usage(&tenant.id, "2026-11").unwrap();
    november.sort_by(|a, b| a.purpose.cmp(&b.purpose));
    assert_eq!(november.len(), 2);
    assert_eq!((november[0].calls, november[0].prompt_tokens), (2, 15));
    assert!((november[0].cost_usd - 0.5).abs() < 1e-9);
    assert_eq!(november[1].purpose, "rerank");
    assert_eq!(store.usage(&tenant.id, "2026-10").unwrap().len(), 1);
    assert!(store.usage(&tenant.id, "2026-09").unwrap().is_empty());
}

pub fn jobs_leave_the_queue_when_finished(store: &dyn Store) {
    let tenant = sample_tenant("jobs");
    store.put_tenant(&tenant).unwrap();
    let at = |second: u32| Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, second).unwrap();
    let job = |id: &str, second: u32| ExtractJobRecord {
        id: id.to_owned(),
        tenant_id: tenant.id.clone(),
        collection: name("inbox"),
        content: "My favorite color is blue.".to_owned(),
        importance: None,
        created_by: CreatedBy {
            id: "key".to_owned(),
            label: "label".to_owned(),
        },
        state: JobState::Queued,
        facts: Vec::new(),
        detail: None,
        attempts: 0,
        created_at: at(second),
        updated_at: at(second),
    };
    let (second, first) = (job("job-b", 2), job("job-a", 1));
    store.put_job(&second).unwrap();
    store.put_job(&first).unwrap();
    let ids = |jobs: Vec<ExtractJobRecord>| jobs.into_iter().map(|job| job.id).collect::<Vec<_>>();
    let queued: Vec<String> = ids(store.unfinished_jobs().unwrap())
        .into_iter()
        .filter(|id| id.starts_with("job-"))
        .collect();
    assert_eq!(queued, vec!["job-a", "job-b"]);
    let mut done = first.clone();
    done.state = JobState::Done;
    done.facts.push(RememberedFact {
        id: "m1".to_owned(),
        text: "My favorite color is blue.".to_owned(),
        kind: "preference".to_owned(),
        relation: "new".to_owned(),
    });
    store.put_job(&done).unwrap();
    assert_eq!(store.job(&tenant.id, "job-a").unwrap(), Some(done));
    assert!(!ids(store.unfinished_jobs().unwrap()).contains(&"job-a".to_owned()));
    assert!(store
        .job(&sample_tenant("x").id, "job-a")
        .unwrap()
        .is_none());
    assert_eq!(store.prune_jobs(at(0)).unwrap(), 0);
    assert_eq!(
        store.prune_jobs(at(59)).unwrap(),
        1,
        "only the finished job goes"
    );
    assert!(store.job(&tenant.id, "job-a").unwrap().is_none());
    assert!(store.job(&tenant.id, "job-b").unwrap().is_some());
}
