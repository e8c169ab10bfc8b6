//! One behavioural test suite for every [`Store`] implementation.
//!
//! Compiled unconditionally (no cargo feature), so another crate's tests can run it
//! without changing the workspace's feature set.
//!
//! [`store_suite!`](crate::store_suite!) turns it into one `#[test]` per check for a
//! backend, so a failing backend names the failing check; Postgres (memvault-postgres)
//! runs the same checks as sled does:
//!
//! ```ignore
//! memvault_storage::store_suite!(sled, || {
//!     let directory = tempfile::tempdir().unwrap();
//!     let store = SledStore::open(directory.path()).unwrap();
//!     (store, directory) // the second value is kept alive for the test's length
//! });
//! ```
//!
//! Each check gets a fresh, empty store and panics on the first broken expectation.

use chrono::{TimeZone, Utc};
use serde_json::json;

use crate::records::{
    ApiKeyRecord, CollectionName, CollectionRecord, CreatedBy, EmbeddingModel, ExtractJobRecord,
    ExtractionLlmRecord, GrantRecord, IngestBatchRecord, IngestItemRecord, IngestItemState,
    JobState, MemoryRecord, RememberedFact, StagedEmbedding, StoredMemory, TenantId, TenantRecord,
    TenantSettings, UsageRow,
};
use crate::records::{
    AuditEntry, BillingRecord, EmailAddressRecord, MailRecord, OutboxDelivery, RevealPurpose,
    RevealRecord, SessionRecord, StorageConfigRecord, WebhookRecord,
};
use crate::records::{
    ImportCollectionRecord, ImportItemRecord, ImportJobRecord, ImportPayload, ImportSkipRecord,
    ImportState,
};
use crate::store::Store;

/// Generates `mod $backend` with one `#[test]` per check of the suite. `$factory` is a
/// closure returning `(store, keep_alive)`: a fresh, empty store, and whatever must
/// outlive it (a temporary directory; `()` when nothing).
#[macro_export]
macro_rules! store_suite {
    ($backend:ident, $factory:expr) => {
        mod $backend {
            #[allow(unused_imports)]
            use super::*;

            $crate::store_suite!(@checks $factory;
                tenants_round_trip,
                api_keys_are_per_tenant,
                collections_round_trip_and_update,
                memories_round_trip_with_embeddings,
                records_and_embeddings_read_apart,
                memory_pages_walk_one_collection_in_id_order,
                put_replaces_a_memory,
                delete_memories_removes_only_those,
                delete_collection_removes_its_memories_only,
                move_memory_is_all_or_nothing,
                tenants_never_see_each_other,
                settings_default_then_round_trip,
                usage_adds_up_per_row,
                jobs_leave_the_queue_when_finished,
                ingest_batches_leave_the_queue_when_every_item_is_finished,
                outbox_keeps_deliveries_until_deleted,
                mail_queue_keeps_mails_until_deleted,
                reveal_links_are_taken_once,
                sessions_are_kept_per_tenant_until_they_end,
                events_are_recorded_once,
                email_addresses_swap_in_one_write,
                audit_is_per_tenant_newest_first_and_pruned_by_age,
                staged_embeddings_resume_by_key_and_swap_in_one_write,
                staged_embeddings_of_another_model_are_dropped,
                delete_collection_drops_its_staged_embeddings,
                purge_removes_every_record_of_one_tenant_in_bounded_steps,
                data_of_a_tenant_lists_and_purges_apart_from_its_account,
                imports_keep_their_items_until_finished,
                connections_keep_runs_and_records_until_deleted,
                oauth_states_are_taken_once,
            );
        }
    };
    (@checks $factory:expr; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                let (store, _keep_alive) = ($factory)();
                $crate::store_suite::$check(&store);
            }
        )*
    };
}

pub fn sample_tenant(name: &str) -> TenantRecord {
    TenantRecord {
        id: TenantId::generate(),
        name: name.to_owned(),
        email: format!("{name}@example.com"),
        tier: "free".to_owned(),
        admin: false,
        created_at: Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap(),
        erasing_since: None,
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
        grants: vec![GrantRecord {
            agent_key_id: "key_suite".to_owned(),
            can_read: true,
            can_write: false,
            updated_at: now,
        }],
        embedding: None,
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
            container_tag: Some("user-1".into()),
            images: Default::default(),
            created_at: now,
            updated_at: now,
            pinned: false,
            archived: false,
            created_by: CreatedBy {
                id: "key_suite".to_owned(),
                label: "suite".to_owned(),
            }
            .into(),
            superseded_by: None,
            superseded_at: None,
            slot: None,
            value: None,
            expires_at: None,
            suspensions: Default::default(),
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
        owner: true,
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

/// `memory_records` (and `visit_memory_records`) reads one collection's records (not
/// another's whose name starts the same) without their embeddings; `embeddings` reads those of the ids asked, in
/// their order, `None` for an id not stored there.
pub fn records_and_embeddings_read_apart(store: &dyn Store) {
    let tenant = sample_tenant("apart");
    for collection in ["notes", "notes2"] {
        store
            .put_collection(&tenant.id, &sample_collection(collection))
            .unwrap();
    }
    let mut first = sample_memory("m1", "first");
    first.embedding = vec![0.25, -1.5, 3.0e-8, f32::MAX];
    let second = sample_memory("m2", "zweite Erinnerung, 記憶");
    store
        .put_memories(&tenant.id, &name("notes"), &[first.clone(), second.clone()])
        .unwrap();
    store
        .put_memories(&tenant.id, &name("notes2"), &[sample_memory("m3", "other")])
        .unwrap();
    let mut records = store.memory_records(&tenant.id, &name("notes")).unwrap();
    records.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(records, vec![first.record.clone(), second.record.clone()]);
    let mut visited = Vec::new();
    store
        .visit_memory_records(&tenant.id, &name("notes"), &mut |record| {
            visited.push(record)
        })
        .unwrap();
    visited.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(visited, records, "visiting reads the same records");
    assert_eq!(
        store
            .embeddings(&tenant.id, &name("notes"), &["m2", "absent", "m3", "m1"])
            .unwrap(),
        vec![Some(second.embedding), None, None, Some(first.embedding)],
        "in the order asked, bit for bit, only this collection's"
    );
    assert!(store
        .memory_records(&tenant.id, &name("empty"))
        .unwrap()
        .is_empty());
}

/// `memories_page` walks one collection (not another whose name starts the same, not
/// another tenant's) in id order, `after` exclusive, whatever `after` names.
pub fn memory_pages_walk_one_collection_in_id_order(store: &dyn Store) {
    let (tenant, other) = (sample_tenant("pages"), sample_tenant("pages-other"));
    for owner in [&tenant, &other] {
        store.put_tenant(owner).unwrap();
        for collection in ["notes", "notes2"] {
            store
                .put_collection(&owner.id, &sample_collection(collection))
                .unwrap();
            let memories: Vec<StoredMemory> = (0..7)
                .map(|n| sample_memory(&format!("{collection}-{}", 6 - n), "paged"))
                .collect();
            store
                .put_memories(&owner.id, &name(collection), &memories)
                .unwrap();
        }
    }
    let mut walked = Vec::new();
    let mut after: Option<String> = None;
    let mut pages = Vec::new();
    loop {
        let page = store
            .memories_page(&tenant.id, &name("notes"), after.as_deref(), 3)
            .unwrap();
        if page.is_empty() {
            break;
        }
        pages.push(page.len());
        after = Some(page.last().unwrap().record.id.clone());
        walked.extend(page);
    }
    assert_eq!(pages, [3, 3, 1]);
    let ids: Vec<&str> = walked.iter().map(|m| m.record.id.as_str()).collect();
    let expected: Vec<String> = (0..7).map(|n| format!("notes-{n}")).collect();
    assert_eq!(ids, expected);
    let mut whole = store.memories(&tenant.id, &name("notes")).unwrap();
    whole.sort_by(|a, b| a.record.id.cmp(&b.record.id));
    assert_eq!(
        walked, whole,
        "pages hold what a whole read holds, vectors too"
    );
    // `after` need not be an id of the collection.
    let page = store
        .memories_page(&tenant.id, &name("notes"), Some("notes-3a"), 10)
        .unwrap();
    assert_eq!(page.len(), 3);
    assert!(store
        .memories_page(&tenant.id, &name("notes"), Some("notes-6"), 10)
        .unwrap()
        .is_empty());
    assert!(store
        .memories_page(&tenant.id, &name("empty"), None, 10)
        .unwrap()
        .is_empty());
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

fn staged(key: u64, id: &str, first: f32) -> StagedEmbedding {
    StagedEmbedding {
        key,
        id: id.to_owned(),
        embedding: vec![first, 0.5, -0.25],
    }
}

pub fn staged_embeddings_resume_by_key_and_swap_in_one_write(store: &dyn Store) {
    let tenant = sample_tenant("reembed");
    let collection = sample_collection("notes");
    assert_eq!(collection.embedding_model(), EmbeddingModel::legacy());
    store.put_collection(&tenant.id, &collection).unwrap();
    let (a, b) = (sample_memory("a", "first"), sample_memory("b", "second"));
    store
        .put_memories(&tenant.id, &collection.name, &[a.clone(), b.clone()])
        .unwrap();
    assert_eq!(
        store
            .staged_embeddings(&tenant.id, &collection.name)
            .unwrap(),
        None
    );
    let model = EmbeddingModel::new("next", 3);
    // Two writes, keys out of order: read back by key (how a resumed run finds where
    // it stopped).
    store
        .stage_embeddings(
            &tenant.id,
            &collection.name,
            &model,
            &[staged(12, "b", 0.2)],
        )
        .unwrap();
    store
        .stage_embeddings(&tenant.id, &collection.name, &model, &[staged(9, "a", 0.1)])
        .unwrap();
    let (found, vectors) = store
        .staged_embeddings(&tenant.id, &collection.name)
        .unwrap()
        .unwrap();
    assert_eq!(found, model);
    assert_eq!(vectors, vec![staged(9, "a", 0.1), staged(12, "b", 0.2)]);

    let switched = CollectionRecord {
        embedding: Some(model.clone()),
        ..collection.clone()
    };
    let reembedded: Vec<StoredMemory> = [(a, 0.1), (b, 0.2)]
        .into_iter()
        .map(|(memory, first)| StoredMemory {
            embedding: vec![first, 0.5, -0.25],
            ..memory
        })
        .collect();
    store
        .swap_embeddings(&tenant.id, &switched, &reembedded)
        .unwrap();
    let mut stored = store.memories(&tenant.id, &collection.name).unwrap();
    stored.sort_by(|left, right| left.record.id.cmp(&right.record.id));
    assert_eq!(stored, reembedded);
    assert_eq!(store.collections(&tenant.id).unwrap(), vec![switched]);
    assert_eq!(
        store
            .staged_embeddings(&tenant.id, &collection.name)
            .unwrap(),
        None,
        "a swap drops what was staged"
    );
}

pub fn staged_embeddings_of_another_model_are_dropped(store: &dyn Store) {
    let tenant = sample_tenant("restaged");
    let notes = name("notes");
    let first = EmbeddingModel::new("first", 3);
    let second = EmbeddingModel::new("second", 3);
    store
        .stage_embeddings(&tenant.id, &notes, &first, &[staged(1, "a", 0.1)])
        .unwrap();
    store
        .stage_embeddings(&tenant.id, &notes, &second, &[staged(2, "b", 0.2)])
        .unwrap();
    assert_eq!(
        store.staged_embeddings(&tenant.id, &notes).unwrap(),
        Some((second, vec![staged(2, "b", 0.2)]))
    );
    // Another tenant's collection of the same name sees nothing.
    let other = sample_tenant("restaged-other");
    assert_eq!(store.staged_embeddings(&other.id, &notes).unwrap(), None);
}

pub fn delete_collection_drops_its_staged_embeddings(store: &dyn Store) {
    let tenant = sample_tenant("unstaged");
    for collection in ["doomed", "doomed-not"] {
        store
            .put_collection(&tenant.id, &sample_collection(collection))
            .unwrap();
        store
            .stage_embeddings(
                &tenant.id,
                &name(collection),
                &EmbeddingModel::new("next", 3),
                &[staged(1, "a", 0.1)],
            )
            .unwrap();
    }
    store
        .delete_collection(&tenant.id, &name("doomed"))
        .unwrap();
    assert_eq!(
        store
            .staged_embeddings(&tenant.id, &name("doomed"))
            .unwrap(),
        None
    );
    assert!(store
        .staged_embeddings(&tenant.id, &name("doomed-not"))
        .unwrap()
        .is_some());
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
        webhook: Some(WebhookRecord {
            url: "https://hooks.example.com/memvault".to_owned(),
            secret_sealed: "v1:sealed-secret".to_owned(),
            created_at: Utc::now(),
        }),
        storage: Some(StorageConfigRecord {
            store_id: "s3-bucket-id".to_owned(),
            endpoint_url: Some("https://s3.example.com".to_owned()),
            bucket: "files".to_owned(),
            region: "eu-west-1".to_owned(),
            access_key: "AKIAEXAMPLE".to_owned(),
            secret_key_sealed: "v1:sealed-s3".to_owned(),
            force_path_style: true,
            updated_at: Utc::now(),
        }),
        database: Some(crate::records::DatabaseConfigRecord {
            url_sealed: "v1:sealed-url".to_owned(),
            target: "memvault@db.example.com:5432/memvault".to_owned(),
            server_version: "15.10".to_owned(),
            state: crate::records::DatabaseState::Reverting,
            detail: Some("the copy was interrupted".to_owned()),
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }),
        billing: Some(BillingRecord {
            customer_id: Some("cus_1".to_owned()),
            subscription_id: Some("sub_1".to_owned()),
            status: "active".to_owned(),
            last_event_id: "evt_1".to_owned(),
            updated_at: Utc::now(),
        }),
        email_senders: Some(vec!["me@example.org".to_owned(), "@example.com".to_owned()]),
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
    // A day's period is its own: it neither adds to its month nor reads the month's rows.
    store
        .add_usage(&tenant.id, &row("2026-11-28", "extract", 4))
        .unwrap();
    let day = store.usage(&tenant.id, "2026-11-28").unwrap();
    assert_eq!((day.len(), day[0].prompt_tokens), (1, 4));
    assert_eq!(store.usage(&tenant.id, "2026-11").unwrap().len(), 2);
    let extract = store.usage(&tenant.id, "2026-11").unwrap();
    assert!(extract.iter().all(|row| row.prompt_tokens != 19));
    assert!(store.usage(&tenant.id, "2026-11-2").unwrap().is_empty());
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

pub fn ingest_batches_leave_the_queue_when_every_item_is_finished(store: &dyn Store) {
    let tenant = sample_tenant("ingest");
    store.put_tenant(&tenant).unwrap();
    let at = |second: u32| Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, second).unwrap();
    let item = |file: &str| IngestItemRecord {
        file_id: file.to_owned(),
        filename: format!("{file}.txt"),
        declared_type: Some("text/plain".to_owned()),
        blob_path: Some(format!("files/{file}/{file}.txt")),
        blob_store: None,
        size: 12,
        state: IngestItemState::Queued,
        reason: None,
        memory_ids: Vec::new(),
        attempts: 0,
        started_at: None,
    };
    let batch = |id: &str, second: u32| IngestBatchRecord {
        id: id.to_owned(),
        tenant_id: tenant.id.clone(),
        collection: name("inbox"),
        created_by: CreatedBy {
            id: "key".to_owned(),
            label: "label".to_owned(),
        },
        origin: "drop".to_owned(),
        metadata: serde_json::Map::new(),
        source: "file".to_owned(),
        items: vec![item("f1"), item("f2")],
        created_at: at(second),
        updated_at: at(second),
    };
    let (second, first) = (batch("batch-b", 2), batch("batch-a", 1));
    store.put_batch(&second).unwrap();
    store.put_batch(&first).unwrap();
    let ids = |batches: Vec<IngestBatchRecord>| {
        batches
            .into_iter()
            .map(|batch| batch.id)
            .filter(|id| id.starts_with("batch-"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(store.unfinished_batches().unwrap()),
        vec!["batch-a", "batch-b"]
    );
    let mut half = first.clone();
    half.items[0].state = IngestItemState::Done;
    half.items[0].memory_ids = vec!["m1".to_owned()];
    store.put_batch(&half).unwrap();
    assert_eq!(
        store.batch(&tenant.id, "batch-a").unwrap(),
        Some(half.clone())
    );
    assert_eq!(
        ids(store.unfinished_batches().unwrap()),
        vec!["batch-a", "batch-b"]
    );
    let mut done = half;
    done.items[1].state = IngestItemState::Failed;
    done.items[1].reason = Some("encrypted".to_owned());
    store.put_batch(&done).unwrap();
    assert_eq!(ids(store.unfinished_batches().unwrap()), vec!["batch-b"]);
    assert!(store
        .batch(&sample_tenant("x").id, "batch-a")
        .unwrap()
        .is_none());
    assert_eq!(store.prune_batches(at(0)).unwrap(), 0);
    assert_eq!(
        store.prune_batches(at(59)).unwrap(),
        1,
        "only the finished batch goes"
    );
    assert!(store.batch(&tenant.id, "batch-a").unwrap().is_none());
    assert!(store.batch(&tenant.id, "batch-b").unwrap().is_some());
}

pub fn outbox_keeps_deliveries_until_deleted(store: &dyn Store) {
    let (first, second) = (sample_tenant("outbox-a"), sample_tenant("outbox-b"));
    let at = |second: u32| Utc.with_ymd_and_hms(2026, 4, 1, 0, 0, second).unwrap();
    let delivery = |tenant: &TenantRecord, id: &str, second: u32| OutboxDelivery {
        id: id.to_owned(),
        tenant_id: tenant.id.clone(),
        event: "memory.created".to_owned(),
        body: format!(r#"{{"id":"{id}","event":"memory.created"}}"#),
        attempts: 0,
        next_attempt_at: at(second),
        created_at: at(second),
    };
    let ours = |deliveries: Vec<OutboxDelivery>| {
        deliveries
            .into_iter()
            .filter(|delivery| delivery.id.starts_with("dlv-"))
            .map(|delivery| delivery.id)
            .collect::<Vec<_>>()
    };
    store.put_delivery(&delivery(&first, "dlv-3", 3)).unwrap();
    store.put_delivery(&delivery(&second, "dlv-1", 1)).unwrap();
    store.put_delivery(&delivery(&first, "dlv-2", 2)).unwrap();
    assert_eq!(
        ours(store.pending_deliveries().unwrap()),
        vec!["dlv-1", "dlv-2", "dlv-3"],
        "pending deliveries come oldest first, across tenants"
    );
    let mut retried = delivery(&first, "dlv-2", 2);
    retried.attempts = 2;
    retried.next_attempt_at = at(40);
    store.put_delivery(&retried).unwrap();
    assert_eq!(
        store.delivery(&first.id, "dlv-2").unwrap(),
        Some(retried.clone()),
        "put of an existing delivery must replace it"
    );
    assert_eq!(
        store.delivery(&second.id, "dlv-2").unwrap(),
        None,
        "a delivery is found only under its own tenant"
    );
    store.delete_delivery(&first.id, "dlv-3").unwrap();
    store.delete_delivery(&first.id, "never-there").unwrap();
    assert_eq!(
        ours(store.pending_deliveries().unwrap()),
        vec!["dlv-1", "dlv-2"]
    );
    assert_eq!(store.delete_deliveries_of(&first.id).unwrap(), 1);
    assert_eq!(store.delete_deliveries_of(&first.id).unwrap(), 0);
    assert_eq!(ours(store.pending_deliveries().unwrap()), vec!["dlv-1"]);
    assert_eq!(
        store.delivery(&second.id, "dlv-1").unwrap(),
        Some(delivery(&second, "dlv-1", 1))
    );
}

pub fn mail_queue_keeps_mails_until_deleted(store: &dyn Store) {
    let (first, second) = (sample_tenant("mail-a"), sample_tenant("mail-b"));
    let at = |second: u32| Utc.with_ymd_and_hms(2026, 4, 1, 0, 0, second).unwrap();
    let mail = |tenant: Option<&TenantRecord>, id: &str, second: u32| MailRecord {
        id: id.to_owned(),
        tenant_id: tenant.map(|tenant| tenant.id.clone()),
        to: "ada@example.com".to_owned(),
        subject: format!("mail {id}"),
        text: "text".to_owned(),
        html: Some("<p>html</p>".to_owned()),
        attempts: 0,
        next_attempt_at: at(second),
        created_at: at(second),
    };
    let ids = |mails: Vec<MailRecord>| mails.into_iter().map(|mail| mail.id).collect::<Vec<_>>();
    store.put_mail(&mail(Some(&first), "mail-3", 3)).unwrap();
    store.put_mail(&mail(None, "mail-1", 1)).unwrap();
    store.put_mail(&mail(Some(&second), "mail-2", 2)).unwrap();
    assert_eq!(
        ids(store.pending_mails().unwrap()),
        vec!["mail-1", "mail-2", "mail-3"],
        "queued mails come oldest first"
    );
    let mut retried = mail(Some(&second), "mail-2", 2);
    retried.attempts = 3;
    retried.next_attempt_at = at(50);
    store.put_mail(&retried).unwrap();
    assert_eq!(store.mail("mail-2").unwrap(), Some(retried));
    store.delete_mail("mail-1").unwrap();
    store.delete_mail("never-there").unwrap();
    assert_eq!(store.mail("mail-1").unwrap(), None);
    assert_eq!(store.delete_mails_of(&first.id).unwrap(), 1);
    assert_eq!(store.delete_mails_of(&first.id).unwrap(), 0);
    assert_eq!(ids(store.pending_mails().unwrap()), vec!["mail-2"]);
}

pub fn reveal_links_are_taken_once(store: &dyn Store) {
    let (first, second) = (sample_tenant("reveal-a"), sample_tenant("reveal-b"));
    let at = |hour: u32| Utc.with_ymd_and_hms(2026, 4, 1, hour, 0, 0).unwrap();
    let reveal = |tenant: &TenantRecord, hash: &str, expires: u32| RevealRecord {
        token_hash: hash.to_owned(),
        tenant_id: tenant.id.clone(),
        purpose: RevealPurpose::Recover,
        created_at: at(0),
        expires_at: at(expires),
    };
    store.put_reveal(&reveal(&first, "h1", 1)).unwrap();
    store.put_reveal(&reveal(&first, "h2", 5)).unwrap();
    store.put_reveal(&reveal(&second, "h3", 5)).unwrap();
    assert_eq!(store.reveal("h1").unwrap(), Some(reveal(&first, "h1", 1)));
    assert_eq!(
        store.reveal("h1").unwrap(),
        Some(reveal(&first, "h1", 1)),
        "looking at a link leaves it"
    );
    assert_eq!(
        store.take_reveal("h1").unwrap(),
        Some(reveal(&first, "h1", 1))
    );
    assert_eq!(
        store.take_reveal("h1").unwrap(),
        None,
        "a link is taken once"
    );
    assert_eq!(store.reveal("h1").unwrap(), None);
    assert_eq!(store.prune_reveals(at(3)).unwrap(), 0);
    assert_eq!(store.prune_reveals(at(6)).unwrap(), 2, "both expired at 5");
    store.put_reveal(&reveal(&first, "h4", 9)).unwrap();
    store.put_reveal(&reveal(&second, "h5", 9)).unwrap();
    assert_eq!(store.delete_reveals_of(&first.id).unwrap(), 1);
    assert_eq!(store.reveal("h4").unwrap(), None);
    assert_eq!(
        store.reveal("h5").unwrap().map(|r| r.tenant_id),
        Some(second.id.clone())
    );
}

pub fn sessions_are_kept_per_tenant_until_they_end(store: &dyn Store) {
    let (first, second) = (sample_tenant("session-a"), sample_tenant("session-b"));
    let at = |hour: u32| Utc.with_ymd_and_hms(2026, 4, 1, hour, 0, 0).unwrap();
    let session = |tenant: &TenantRecord, hash: &str, expires: u32| SessionRecord {
        id_hash: hash.to_owned(),
        tenant_id: tenant.id.clone(),
        key_id: format!("key-of-{hash}"),
        csrf: format!("csrf-of-{hash}"),
        created_at: at(0),
        seen_at: at(0),
        expires_at: at(expires),
    };
    let hashes = |sessions: Vec<SessionRecord>| {
        let mut hashes: Vec<String> = sessions.into_iter().map(|s| s.id_hash).collect();
        hashes.sort();
        hashes
    };
    assert_eq!(store.session("s1").unwrap(), None);
    store.put_session(&session(&first, "s1", 2)).unwrap();
    store.put_session(&session(&first, "s2", 5)).unwrap();
    store.put_session(&session(&second, "s3", 5)).unwrap();
    assert_eq!(store.session("s1").unwrap(), Some(session(&first, "s1", 2)));
    assert_eq!(
        hashes(store.sessions_of(&first.id).unwrap()),
        vec!["s1", "s2"]
    );
    assert_eq!(hashes(store.sessions_of(&second.id).unwrap()), vec!["s3"]);

    let mut touched = session(&first, "s1", 9);
    touched.seen_at = at(3);
    store.put_session(&touched).unwrap();
    assert_eq!(
        store.session("s1").unwrap(),
        Some(touched),
        "a put replaces the session"
    );
    assert!(store.delete_session("s2").unwrap());
    assert!(!store.delete_session("s2").unwrap(), "gone already");
    assert_eq!(store.session("s2").unwrap(), None);

    assert_eq!(
        store.prune_sessions(at(5)).unwrap(),
        0,
        "none ended before 5"
    );
    assert_eq!(store.prune_sessions(at(6)).unwrap(), 1, "s3 ended at 5");
    assert_eq!(store.session("s3").unwrap(), None);
    store.put_session(&session(&second, "s4", 9)).unwrap();
    assert_eq!(store.delete_sessions_of(&first.id).unwrap(), 1);
    assert_eq!(store.session("s1").unwrap(), None);
    assert_eq!(hashes(store.sessions_of(&second.id).unwrap()), vec!["s4"]);
}

pub fn events_are_recorded_once(store: &dyn Store) {
    let at = |day: u32| Utc.with_ymd_and_hms(2026, 4, day, 0, 0, 0).unwrap();
    assert!(store.record_event_once("stripe", "evt_1", at(1)).unwrap());
    assert!(
        !store.record_event_once("stripe", "evt_1", at(2)).unwrap(),
        "a second time"
    );
    assert!(
        store.record_event_once("mail", "evt_1", at(1)).unwrap(),
        "sources are apart"
    );
    assert!(store.record_event_once("stripe", "evt_2", at(5)).unwrap());
    assert_eq!(
        store.prune_events(at(3)).unwrap(),
        2,
        "both recorded on day 1"
    );
    assert!(
        store.record_event_once("stripe", "evt_1", at(6)).unwrap(),
        "forgotten"
    );
    assert!(
        !store.record_event_once("stripe", "evt_2", at(6)).unwrap(),
        "kept"
    );
    store.forget_event("stripe", "evt_2").unwrap();
    store.forget_event("stripe", "never-there").unwrap();
    assert!(
        store.record_event_once("stripe", "evt_2", at(7)).unwrap(),
        "forgotten one"
    );
    store.record_event_once("email:t1", "<a@x>", at(8)).unwrap();
    store.record_event_once("email:t1", "<b@x>", at(8)).unwrap();
    store
        .record_event_once("email:t10", "<a@x>", at(8))
        .unwrap();
    assert_eq!(store.forget_events_of("email:t1").unwrap(), 2);
    assert!(store.record_event_once("email:t1", "<a@x>", at(9)).unwrap());
    assert!(!store
        .record_event_once("email:t10", "<a@x>", at(9))
        .unwrap());
}

fn email_address(tenant: &TenantRecord, hash: &str, collection: &str) -> EmailAddressRecord {
    EmailAddressRecord {
        tenant_id: tenant.id.clone(),
        local_hash: hash.to_owned(),
        local_sealed: format!("v1:sealed-{hash}"),
        collection: name(collection),
        created_at: Utc::now(),
    }
}

pub fn email_addresses_swap_in_one_write(store: &dyn Store) {
    let owner = sample_tenant("email-owner");
    let other = sample_tenant("email-other");
    store.put_tenant(&owner).unwrap();
    store.put_tenant(&other).unwrap();
    assert_eq!(store.email_address_of(&owner.id).unwrap(), None);
    let first = email_address(&owner, "hash-1", "email");
    assert!(
        !store.replace_email_address(&first, Some("hash-0")).unwrap(),
        "expects an address the tenant does not have"
    );
    assert_eq!(store.email_address_by_hash("hash-1").unwrap(), None);
    assert!(store.replace_email_address(&first, None).unwrap());
    assert_eq!(
        store.email_address_of(&owner.id).unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store.email_address_by_hash("hash-1").unwrap(),
        Some(first.clone())
    );
    assert!(
        !store
            .replace_email_address(&email_address(&owner, "hash-x", "email"), None)
            .unwrap(),
        "a second first use loses"
    );
    assert_eq!(store.email_address_by_hash("hash-x").unwrap(), None);
    // Another collection, same address.
    let moved = email_address(&owner, "hash-1", "inbox");
    assert!(store.replace_email_address(&moved, Some("hash-1")).unwrap());
    assert_eq!(store.email_address_by_hash("hash-1").unwrap(), Some(moved));
    // Rotation: the old hash stops resolving in the same write.
    let rotated = email_address(&owner, "hash-2", "inbox");
    assert!(store
        .replace_email_address(&rotated, Some("hash-1"))
        .unwrap());
    assert_eq!(store.email_address_by_hash("hash-1").unwrap(), None);
    assert_eq!(
        store.email_address_by_hash("hash-2").unwrap(),
        Some(rotated.clone())
    );
    assert_eq!(store.email_address_of(&owner.id).unwrap(), Some(rotated));
    // Tenants are apart.
    let theirs = email_address(&other, "hash-3", "email");
    assert!(store.replace_email_address(&theirs, None).unwrap());
    assert!(store.delete_email_address_of(&owner.id).unwrap());
    assert!(!store.delete_email_address_of(&owner.id).unwrap());
    assert_eq!(store.email_address_of(&owner.id).unwrap(), None);
    assert_eq!(store.email_address_by_hash("hash-2").unwrap(), None);
    assert_eq!(store.email_address_by_hash("hash-3").unwrap(), Some(theirs));
}

fn audit_entry(tenant: &TenantRecord, minutes_ago: i64, action: &str) -> AuditEntry {
    let at = Utc::now() - chrono::Duration::minutes(minutes_ago);
    AuditEntry {
        id: uuid::Uuid::new_v7(uuid::Timestamp::from_unix(
            uuid::NoContext,
            at.timestamp() as u64,
            at.timestamp_subsec_nanos(),
        ))
        .to_string(),
        tenant_id: tenant.id.clone(),
        at,
        agent_id: "key_1".to_owned(),
        agent_label: "default".to_owned(),
        action: action.to_owned(),
        method: "POST".to_owned(),
        resource: "/v1/memory/collections/notes/memories".to_owned(),
        status: 201,
        outcome: "success".to_owned(),
        client_address: Some("203.0.113.7".to_owned()),
    }
}

pub fn audit_is_per_tenant_newest_first_and_pruned_by_age(store: &dyn Store) {
    let owner = sample_tenant("audit-owner");
    let other = sample_tenant("audit-other");
    store.put_tenant(&owner).unwrap();
    store.put_tenant(&other).unwrap();
    let old = audit_entry(&owner, 60 * 24 * 100, "memory.create");
    let middle = audit_entry(&owner, 60, "grant.put");
    let newest = audit_entry(&owner, 1, "key.revoke");
    let foreign = audit_entry(&other, 1, "memory.delete");
    store
        .append_audit(&[middle.clone(), foreign.clone(), old.clone()])
        .unwrap();
    store.append_audit(std::slice::from_ref(&newest)).unwrap();
    let long_ago = Utc::now() - chrono::Duration::days(365);
    assert_eq!(
        store.audit(&owner.id, long_ago, 10).unwrap(),
        vec![newest.clone(), middle.clone(), old.clone()]
    );
    assert_eq!(
        store.audit(&owner.id, long_ago, 2).unwrap(),
        vec![newest.clone(), middle.clone()]
    );
    let yesterday = Utc::now() - chrono::Duration::days(1);
    assert_eq!(
        store.audit(&owner.id, yesterday, 10).unwrap(),
        vec![newest.clone(), middle.clone()]
    );
    assert_eq!(
        store.audit(&other.id, long_ago, 10).unwrap(),
        vec![foreign.clone()]
    );
    let cutoff = Utc::now() - chrono::Duration::days(90);
    assert_eq!(store.prune_audit(cutoff).unwrap(), 1);
    assert_eq!(
        store.audit(&owner.id, long_ago, 10).unwrap(),
        vec![newest, middle]
    );
    assert_eq!(store.audit(&other.id, long_ago, 10).unwrap(), vec![foreign]);
}

/// Everything a tenant can have in the store, for the erasure check.
fn fill_tenant(store: &dyn Store, tenant: &TenantRecord) {
    store.put_tenant(tenant).unwrap();
    store
        .put_api_key(&ApiKeyRecord {
            id: format!("key_{}", tenant.name),
            tenant_id: tenant.id.clone(),
            label: "default".to_owned(),
            key_hash: format!("{:0>64}", tenant.name.len()),
            display_prefix: "mv_abcd".to_owned(),
            read_only: false,
            owner: true,
            created_at: Utc::now(),
            revoked_at: None,
            expires_at: None,
        })
        .unwrap();
    for collection in ["notes", "mail"] {
        let record = sample_collection(collection);
        store.put_collection(&tenant.id, &record).unwrap();
        let memories: Vec<StoredMemory> = (0..5)
            .map(|n| sample_memory(&format!("{collection}-{n}"), "kept or not"))
            .collect();
        store
            .put_memories(&tenant.id, &record.name, &memories)
            .unwrap();
    }
    store
        .stage_embeddings(
            &tenant.id,
            &name("notes"),
            &EmbeddingModel::legacy(),
            &[staged(0, "notes-0", 0.5)],
        )
        .unwrap();
    let settings = TenantSettings {
        spend_cap_usd: Some(5.0),
        ..TenantSettings::default()
    };
    store.put_tenant_settings(&tenant.id, &settings).unwrap();
    store
        .add_usage(
            &tenant.id,
            &UsageRow {
                month: "2026-11".to_owned(),
                purpose: "extract".to_owned(),
                model: "gpt/x".to_owned(),
                own_llm: false,
                calls: 1,
                prompt_tokens: 1,
                completion_tokens: 1,
                cost_usd: 0.1,
            },
        )
        .unwrap();
    store
        .append_audit(&[audit_entry(tenant, 1, "memory.create")])
        .unwrap();
    store
        .put_delivery(&OutboxDelivery {
            id: format!("dlv-{}", tenant.name),
            tenant_id: tenant.id.clone(),
            event: "memory.created".to_owned(),
            body: "{}".to_owned(),
            attempts: 0,
            next_attempt_at: Utc::now(),
            created_at: Utc::now(),
        })
        .unwrap();
}

pub fn purge_removes_every_record_of_one_tenant_in_bounded_steps(store: &dyn Store) {
    let (doomed, kept) = (sample_tenant("doomed"), sample_tenant("kept"));
    fill_tenant(store, &doomed);
    fill_tenant(store, &kept);
    let kept_bytes = store.tenant_bytes(&kept.id).unwrap();

    let mut steps = 0;
    loop {
        let removed = store.purge_tenant(&doomed.id, 4).unwrap();
        assert!(
            removed <= 4,
            "a purge step removed {removed} records, over its bound"
        );
        if removed == 0 {
            break;
        }
        steps += 1;
        assert!(steps < 100, "the purge never ends");
    }
    assert!(
        steps >= 4,
        "the tenant's records went in {steps} steps of at most 4"
    );

    assert_eq!(store.tenant_bytes(&doomed.id).unwrap(), 0);
    assert!(store.api_keys(&doomed.id).unwrap().is_empty());
    assert!(store.collections(&doomed.id).unwrap().is_empty());
    assert!(store
        .memories(&doomed.id, &name("notes"))
        .unwrap()
        .is_empty());
    assert_eq!(
        store.staged_embeddings(&doomed.id, &name("notes")).unwrap(),
        None
    );
    assert_eq!(
        store.tenant_settings(&doomed.id).unwrap(),
        TenantSettings::default()
    );
    assert!(store.usage(&doomed.id, "2026-11").unwrap().is_empty());
    let long_ago = Utc::now() - chrono::Duration::days(3650);
    assert!(store.audit(&doomed.id, long_ago, 10).unwrap().is_empty());
    assert!(store.delivery(&doomed.id, "dlv-doomed").unwrap().is_none());
    assert!(
        store.tenants().unwrap().contains(&doomed),
        "the purge removed the tenant record, which an erasure removes last"
    );

    assert_eq!(store.tenant_bytes(&kept.id).unwrap(), kept_bytes);
    assert_eq!(store.memories(&kept.id, &name("mail")).unwrap().len(), 5);
    assert!(store.delivery(&kept.id, "dlv-kept").unwrap().is_some());

    store.delete_tenant(&doomed.id).unwrap();
    store.delete_tenant(&doomed.id).unwrap();
    let listed = store.tenants().unwrap();
    assert!(!listed.iter().any(|tenant| tenant.id == doomed.id));
    assert!(listed.contains(&kept));
}

/// A queued extraction job of the tenant (for tests of other stores built on this one).
pub fn sample_job(tenant: &TenantId, id: &str) -> ExtractJobRecord {
    data_job(tenant, id, JobState::Queued)
}

fn data_job(tenant: &TenantId, id: &str, state: JobState) -> ExtractJobRecord {
    let at = Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap();
    ExtractJobRecord {
        id: id.to_owned(),
        tenant_id: tenant.clone(),
        collection: name("notes"),
        content: "I live in Lyon.".to_owned(),
        importance: None,
        created_by: CreatedBy {
            id: "key".to_owned(),
            label: "label".to_owned(),
        },
        state,
        facts: Vec::new(),
        detail: None,
        attempts: 0,
        created_at: at,
        updated_at: at,
    }
}

fn data_batch(tenant: &TenantId, id: &str, state: IngestItemState) -> IngestBatchRecord {
    let at = Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap();
    IngestBatchRecord {
        id: id.to_owned(),
        tenant_id: tenant.clone(),
        collection: name("notes"),
        created_by: CreatedBy {
            id: "key".to_owned(),
            label: "label".to_owned(),
        },
        origin: "drop".to_owned(),
        metadata: serde_json::Map::new(),
        source: "file".to_owned(),
        items: vec![IngestItemRecord {
            file_id: format!("{id}-file"),
            filename: "a.txt".to_owned(),
            declared_type: Some("text/plain".to_owned()),
            blob_path: Some(format!("files/{id}/a.txt")),
            blob_store: None,
            size: 3,
            state,
            reason: None,
            memory_ids: Vec::new(),
            attempts: 0,
            started_at: None,
        }],
        created_at: at,
        updated_at: at,
    }
}

fn data_import(tenant: &TenantId, id: &str, state: ImportState) -> ImportJobRecord {
    let at = Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap();
    ImportJobRecord {
        id: id.to_owned(),
        tenant_id: tenant.clone(),
        key_id: "key_1".to_owned(),
        state,
        total: 1,
        cursor: 0,
        skipped: 0,
        errors: Vec::new(),
        collections: vec!["notes".to_owned()],
        detail: None,
        attempts: 0,
        created_at: at,
        updated_at: at,
    }
}

/// `jobs_of`, `batches_of` and `imports_of` list one tenant's records, finished or not;
/// `purge_tenant_data` removes its data records in bounded steps (the queues with them)
/// and keeps its account: the tenant, keys, settings, usage, audit and outbox.
pub fn data_of_a_tenant_lists_and_purges_apart_from_its_account(store: &dyn Store) {
    let (moving, other) = (sample_tenant("moving"), sample_tenant("staying"));
    for tenant in [&moving, &other] {
        fill_tenant(store, tenant);
        store
            .put_job(&data_job(&tenant.id, "job-open", JobState::Queued))
            .unwrap();
        store
            .put_job(&data_job(&tenant.id, "job-done", JobState::Done))
            .unwrap();
        store
            .put_batch(&data_batch(
                &tenant.id,
                "batch-open",
                IngestItemState::Queued,
            ))
            .unwrap();
        store
            .put_batch(&data_batch(&tenant.id, "batch-done", IngestItemState::Done))
            .unwrap();
        store
            .create_import(
                &data_import(&tenant.id, "imp-open", ImportState::Queued),
                &ImportPayload {
                    collections: Vec::new(),
                    items: Vec::new(),
                },
            )
            .unwrap();
    }
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    let jobs = store.jobs_of(&moving.id).unwrap();
    assert!(jobs.iter().all(|job| job.tenant_id == moving.id));
    assert_eq!(
        sorted(jobs.into_iter().map(|job| job.id).collect()),
        ["job-done", "job-open"]
    );
    let batches = store.batches_of(&moving.id).unwrap();
    assert!(batches.iter().all(|batch| batch.tenant_id == moving.id));
    assert_eq!(
        sorted(batches.into_iter().map(|batch| batch.id).collect()),
        ["batch-done", "batch-open"]
    );
    let imports = store.imports_of(&moving.id).unwrap();
    assert_eq!(
        imports.into_iter().map(|job| job.id).collect::<Vec<_>>(),
        ["imp-open"]
    );
    let settings = store.tenant_settings(&moving.id).unwrap();
    let keys = store.api_keys(&moving.id).unwrap();

    let mut steps = 0;
    loop {
        let removed = store.purge_tenant_data(&moving.id, 5).unwrap();
        assert!(
            removed <= 5,
            "a purge step removed {removed}, over its bound"
        );
        if removed == 0 {
            break;
        }
        steps += 1;
        assert!(steps < 100, "the purge never ends");
    }
    assert!(steps >= 3, "the data went in {steps} steps of at most 5");
    assert!(store.collections(&moving.id).unwrap().is_empty());
    assert!(store
        .memories(&moving.id, &name("notes"))
        .unwrap()
        .is_empty());
    assert_eq!(
        store.staged_embeddings(&moving.id, &name("notes")).unwrap(),
        None
    );
    assert!(store.jobs_of(&moving.id).unwrap().is_empty());
    assert!(store.batches_of(&moving.id).unwrap().is_empty());
    assert!(store.imports_of(&moving.id).unwrap().is_empty());
    assert!(store
        .import_payload(&moving.id, "imp-open")
        .unwrap()
        .is_none());
    {
        let tenant = &moving.id;
        assert!(!store
            .unfinished_jobs()
            .unwrap()
            .iter()
            .any(|job| &job.tenant_id == tenant));
        assert!(!store
            .unfinished_batches()
            .unwrap()
            .iter()
            .any(|batch| &batch.tenant_id == tenant));
        assert!(!store
            .unfinished_imports()
            .unwrap()
            .iter()
            .any(|job| &job.tenant_id == tenant));
    }
    assert!(store.tenants().unwrap().contains(&moving));
    assert_eq!(store.api_keys(&moving.id).unwrap(), keys);
    assert_eq!(store.tenant_settings(&moving.id).unwrap(), settings);
    assert_eq!(store.usage(&moving.id, "2026-11").unwrap().len(), 1);
    let long_ago = Utc::now() - chrono::Duration::days(3650);
    assert_eq!(store.audit(&moving.id, long_ago, 10).unwrap().len(), 1);
    assert!(store.delivery(&moving.id, "dlv-moving").unwrap().is_some());

    assert_eq!(store.collections(&other.id).unwrap().len(), 2);
    assert_eq!(store.jobs_of(&other.id).unwrap().len(), 2);
    assert_eq!(store.batches_of(&other.id).unwrap().len(), 2);
    assert_eq!(store.imports_of(&other.id).unwrap().len(), 1);
    assert!(store
        .unfinished_jobs()
        .unwrap()
        .iter()
        .any(|job| job.tenant_id == other.id));
}

pub fn imports_keep_their_items_until_finished(store: &dyn Store) {
    let (tenant, other) = (sample_tenant("import"), sample_tenant("import-other"));
    store.put_tenant(&tenant).unwrap();
    store.put_tenant(&other).unwrap();
    let at = |second: u32| Utc.with_ymd_and_hms(2026, 5, 1, 0, 0, second).unwrap();
    let job = |id: &str, second: u32| ImportJobRecord {
        id: id.to_owned(),
        tenant_id: tenant.id.clone(),
        key_id: "key_1".to_owned(),
        state: ImportState::Queued,
        total: 2,
        cursor: 0,
        skipped: 1,
        errors: vec![ImportSkipRecord {
            index: 1,
            detail: "text is empty".to_owned(),
        }],
        collections: vec!["notes".to_owned()],
        detail: None,
        attempts: 0,
        created_at: at(second),
        updated_at: at(second),
    };
    let item = |text: &str| ImportItemRecord {
        collection: name("notes"),
        text: text.to_owned(),
        importance: 0.5,
        category: "other".to_owned(),
        source: "import".to_owned(),
        metadata: serde_json::Map::new(),
        container_tag: None,
        pinned: true,
        archived: false,
    };
    let payload = ImportPayload {
        collections: vec![ImportCollectionRecord {
            name: name("notes"),
            description: Some("kept".to_owned()),
            metadata: serde_json::Map::new(),
        }],
        items: vec![item("one"), item("two")],
    };
    let (second, first) = (job("imp-b", 2), job("imp-a", 1));
    store.create_import(&second, &payload).unwrap();
    store.create_import(&first, &payload).unwrap();
    let ids = |jobs: Vec<ImportJobRecord>| jobs.into_iter().map(|job| job.id).collect::<Vec<_>>();
    assert_eq!(ids(store.unfinished_imports().unwrap()), ["imp-a", "imp-b"]);
    assert_eq!(
        store.import_payload(&tenant.id, "imp-a").unwrap(),
        Some(payload.clone())
    );
    assert_eq!(store.import_job(&other.id, "imp-a").unwrap(), None);
    assert_eq!(store.import_payload(&other.id, "imp-a").unwrap(), None);

    let mut running = first.clone();
    running.state = ImportState::Running;
    running.cursor = 1;
    store.put_import(&running).unwrap();
    assert_eq!(
        store.import_job(&tenant.id, "imp-a").unwrap(),
        Some(running.clone())
    );
    assert!(store.import_payload(&tenant.id, "imp-a").unwrap().is_some());

    let mut done = running;
    done.state = ImportState::Done;
    done.cursor = 2;
    store.put_import(&done).unwrap();
    assert_eq!(store.import_job(&tenant.id, "imp-a").unwrap(), Some(done));
    assert_eq!(store.import_payload(&tenant.id, "imp-a").unwrap(), None);
    assert_eq!(ids(store.unfinished_imports().unwrap()), ["imp-b"]);
}

fn sample_connection(tenant: &TenantId, id: &str, minute: u32) -> crate::records::ConnectionRecord {
    let at = Utc.with_ymd_and_hms(2026, 3, 1, 12, minute, 0).unwrap();
    crate::records::ConnectionRecord {
        id: id.to_owned(),
        tenant_id: tenant.clone(),
        provider: "linear".into(),
        name: Some(format!("connection {id}")),
        collection: CollectionName::parse("issues").unwrap(),
        container_tag: Some("work".into()),
        config: json!({"sync_interval_minutes": 30}),
        credentials: "sealed:v1:abc".into(),
        key_id: "key-1".into(),
        status: crate::records::ConnectionStatus::Active,
        last_error: None,
        consecutive_failures: 0,
        cursor: json!({}),
        checkpoint: None,
        created_at: at,
        updated_at: at,
        last_sync_at: None,
        next_sync_at: None,
        last_reconciled_at: None,
    }
}

fn sample_run(
    connection: &crate::records::ConnectionRecord,
    id: &str,
    minute: u32,
) -> crate::records::SyncRunRecord {
    let at = Utc.with_ymd_and_hms(2026, 3, 2, 9, minute, 0).unwrap();
    crate::records::SyncRunRecord {
        id: id.to_owned(),
        tenant_id: connection.tenant_id.clone(),
        connection_id: connection.id.clone(),
        provider: connection.provider.clone(),
        status: "ok".into(),
        synced_count: u64::from(minute),
        unchanged_count: 0,
        deleted_count: 0,
        error: None,
        trigger: "manual".into(),
        created_at: at,
        finished_at: at,
    }
}

/// Connections are per tenant, oldest first; runs list newest first, trim to the newest;
/// the record map answers in the asked order; a delete takes runs and records along and
/// leaves the other connection alone.
pub fn connections_keep_runs_and_records_until_deleted(store: &dyn Store) {
    let (one, two) = (sample_tenant("one"), sample_tenant("two"));
    store.put_tenant(&one).unwrap();
    store.put_tenant(&two).unwrap();
    let mut first = sample_connection(&one.id, "c1", 1);
    let second = sample_connection(&one.id, "c2", 2);
    let other = sample_connection(&two.id, "c3", 0);
    for connection in [&second, &first, &other] {
        store.put_connection(connection).unwrap();
    }
    let ids = |list: Vec<crate::records::ConnectionRecord>| {
        list.into_iter().map(|c| c.id).collect::<Vec<_>>()
    };
    assert_eq!(ids(store.connections(&one.id).unwrap()), ["c1", "c2"]);
    assert_eq!(ids(store.connections(&two.id).unwrap()), ["c3"]);
    assert_eq!(store.all_connections().unwrap().len(), 3);
    assert!(
        store.connection(&two.id, "c1").unwrap().is_none(),
        "another tenant's id is not found"
    );
    first.status = crate::records::ConnectionStatus::Paused;
    first.consecutive_failures = 5;
    store.put_connection(&first).unwrap();
    assert_eq!(store.connection(&one.id, "c1").unwrap().unwrap(), first);

    for (n, id) in [
        "0190a000-0000-7000-8000-000000000001",
        "0190a000-0000-7000-8000-000000000002",
        "0190a000-0000-7000-8000-000000000003",
    ]
    .iter()
    .enumerate()
    {
        store.put_run(&sample_run(&first, id, n as u32)).unwrap();
    }
    store
        .put_run(&sample_run(
            &second,
            "0190a000-0000-7000-8000-000000000009",
            9,
        ))
        .unwrap();
    let runs = store.runs(&one.id, "c1", 20).unwrap();
    assert_eq!(
        runs.iter().map(|r| r.synced_count).collect::<Vec<_>>(),
        [2, 1, 0],
        "newest first"
    );
    assert_eq!(store.runs(&one.id, "c1", 1).unwrap()[0].synced_count, 2);
    let since = Utc.with_ymd_and_hms(2026, 3, 2, 9, 1, 0).unwrap();
    assert_eq!(
        store.runs_since(since).unwrap().len(),
        3,
        "runs at or after the time, every connection"
    );
    assert_eq!(store.trim_runs(&one.id, "c1", 2).unwrap(), 1);
    assert_eq!(store.runs(&one.id, "c1", 20).unwrap().len(), 2);

    let record = |id: &str| crate::records::SyncedRecord {
        record_id: id.into(),
        memory_id: format!("m-{id}"),
        hash: "h".into(),
    };
    store
        .put_synced_records(&one.id, "c1", &[record("a/1"), record("b")])
        .unwrap();
    store
        .put_synced_records(&one.id, "c2", &[record("a/1")])
        .unwrap();
    let asked = ["b".to_owned(), "zzz".to_owned(), "a/1".to_owned()];
    let found = store.synced_records(&one.id, "c1", &asked).unwrap();
    assert_eq!(found, [Some(record("b")), None, Some(record("a/1"))]);
    let mut listed = store.synced_record_ids(&one.id, "c1").unwrap();
    listed.sort();
    assert_eq!(listed, ["a/1", "b"]);
    store
        .delete_synced_records(&one.id, "c1", &["b".to_owned()])
        .unwrap();
    assert_eq!(store.synced_record_ids(&one.id, "c1").unwrap(), ["a/1"]);

    assert!(store.delete_connection(&one.id, "c1").unwrap());
    assert!(
        !store.delete_connection(&one.id, "c1").unwrap(),
        "a second delete finds nothing"
    );
    assert!(store.connection(&one.id, "c1").unwrap().is_none());
    assert!(
        store.runs(&one.id, "c1", 20).unwrap().is_empty(),
        "its runs went with it"
    );
    assert!(
        store.synced_record_ids(&one.id, "c1").unwrap().is_empty(),
        "its records went with it"
    );
    assert_eq!(
        store.synced_record_ids(&one.id, "c2").unwrap(),
        ["a/1"],
        "the other connection keeps its own"
    );
    assert_eq!(store.runs(&one.id, "c2", 20).unwrap().len(), 1);
    assert_eq!(ids(store.connections(&two.id).unwrap()), ["c3"]);
}

/// An OAuth state is taken once; expired ones are pruned.
pub fn oauth_states_are_taken_once(store: &dyn Store) {
    let tenant = sample_tenant("oauth");
    let at = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
    let state = |hash: &str, expires_minute: u32| crate::records::OAuthStateRecord {
        state_hash: hash.into(),
        tenant_id: tenant.id.clone(),
        key_id: "key-1".into(),
        provider: "notion".into(),
        collection: CollectionName::parse("notes").unwrap(),
        name: None,
        container_tag: None,
        config: json!({}),
        redirect_uri: "http://127.0.0.1/cb".into(),
        created_at: at,
        expires_at: Utc
            .with_ymd_and_hms(2026, 3, 1, 12, expires_minute, 0)
            .unwrap(),
    };
    store.put_oauth_state(&state("live", 30)).unwrap();
    store.put_oauth_state(&state("old", 5)).unwrap();
    assert_eq!(
        store.take_oauth_state("live").unwrap(),
        Some(state("live", 30))
    );
    assert_eq!(
        store.take_oauth_state("live").unwrap(),
        None,
        "a state is taken once"
    );
    assert_eq!(store.take_oauth_state("unknown").unwrap(), None);
    store.put_oauth_state(&state("live", 30)).unwrap();
    assert_eq!(
        store
            .prune_oauth_states(Utc.with_ymd_and_hms(2026, 3, 1, 12, 10, 0).unwrap())
            .unwrap(),
        1
    );
    assert!(
        store.take_oauth_state("old").unwrap().is_none(),
        "the expired state was pruned"
    );
    assert!(store.take_oauth_state("live").unwrap().is_some());
}
