//! Leases and fencing on a real Postgres: one holder at a time, epochs that only grow, and
//! no write committed by a node that lost its lease.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use memvault_postgres::{tenant_lease, Claim, PgStore};
use memvault_storage::store_suite::{sample_collection, sample_memory, sample_tenant};
use memvault_storage::{CollectionName, MemoryStore, MetaStore, StorageError};

const LONG: Duration = Duration::from_secs(30);

fn node(url: &str, id: &str) -> PgStore {
    let store = PgStore::connect(url).unwrap().fenced_as(id);
    store
        .register_node(&format!("http://{id}.invalid:8080"))
        .unwrap();
    store
}

fn held(claim: Claim) -> i64 {
    match claim {
        Claim::Held(lease) => lease.epoch,
        Claim::Taken(lease) => panic!("expected to hold it, {} does", lease.node),
    }
}

#[test]
fn a_lease_has_one_holder_until_it_expires() {
    let database = memvault_test_postgres::fresh_database();
    let a = node(database.url(), "a");
    let b = node(database.url(), "b");
    let short = Duration::from_millis(400);

    assert_eq!(held(a.claim("tenant:t1", short).unwrap()), 1);
    match b.claim("tenant:t1", short).unwrap() {
        Claim::Taken(lease) => {
            assert_eq!(lease.node, "a");
            assert!(lease.live);
            assert_eq!(
                lease.advertise_url.as_deref(),
                Some("http://a.invalid:8080")
            );
        }
        Claim::Held(_) => panic!("b took a live lease"),
    }
    // Renewing, by a claim or a heartbeat, keeps the epoch.
    assert_eq!(held(a.claim("tenant:t1", short).unwrap()), 1);
    assert_eq!(a.heartbeat(short, "{}").unwrap(), Vec::<String>::new());
    assert_eq!(a.lease("tenant:t1").unwrap().unwrap().epoch, 1);

    // a stops renewing (paused); once the lease expires, b takes it at the next epoch.
    std::thread::sleep(short + Duration::from_millis(200));
    assert!(!b.lease("tenant:t1").unwrap().unwrap().live);
    assert_eq!(held(b.claim("tenant:t1", LONG).unwrap()), 2);
    // a's next heartbeat learns it lost the lease, and renews nothing of b's.
    assert_eq!(
        a.heartbeat(LONG, "{}").unwrap(),
        vec!["tenant:t1".to_owned()]
    );
    let lease = a.lease("tenant:t1").unwrap().unwrap();
    assert_eq!((lease.node.as_str(), lease.epoch), ("b", 2));
    assert!(matches!(
        a.claim("tenant:t1", LONG).unwrap(),
        Claim::Taken(_)
    ));
}

#[test]
fn a_write_under_a_lost_lease_commits_nothing() {
    let database = memvault_test_postgres::fresh_database();
    let a = node(database.url(), "a");
    let b = node(database.url(), "b");
    let tenant = sample_tenant("fenced");
    let notes = CollectionName::parse("notes").unwrap();
    a.put_tenant(&tenant).unwrap();
    let name = tenant_lease(&tenant.id);

    // Without the lease, no write of the tenant's data.
    let refused = a.put_collection(&tenant.id, &sample_collection("notes"));
    assert!(
        matches!(refused, Err(StorageError::Fenced(_))),
        "{refused:?}"
    );

    let short = Duration::from_millis(300);
    held(a.claim(&name, short).unwrap());
    a.put_collection(&tenant.id, &sample_collection("notes"))
        .unwrap();
    a.put_memories(&tenant.id, &notes, &[sample_memory("m1", "written by a")])
        .unwrap();

    // a is paused past its lease; b takes over and writes.
    std::thread::sleep(short + Duration::from_millis(200));
    assert_eq!(held(b.claim(&name, LONG).unwrap()), 2);
    b.put_memories(&tenant.id, &notes, &[sample_memory("m2", "written by b")])
        .unwrap();

    // a wakes up still believing it owns the tenant: every kind of write is refused.
    let stale = a.put_memories(&tenant.id, &notes, &[sample_memory("m3", "stale")]);
    assert!(matches!(stale, Err(StorageError::Fenced(_))), "{stale:?}");
    assert!(matches!(
        a.delete_memories(&tenant.id, &notes, &["m2".to_owned()]),
        Err(StorageError::Fenced(_))
    ));
    assert!(matches!(
        a.delete_collection(&tenant.id, &notes),
        Err(StorageError::Fenced(_))
    ));
    let ids: Vec<String> = b
        .memories(&tenant.id, &notes)
        .unwrap()
        .into_iter()
        .map(|memory| memory.record.id)
        .collect();
    assert_eq!(ids, ["m1", "m2"]);

    // A store that is not a node's (one process alone) is never fenced.
    let alone = PgStore::connect(database.url()).unwrap();
    alone
        .put_memories(&tenant.id, &notes, &[sample_memory("m4", "alone")])
        .unwrap();
}

#[test]
fn a_release_frees_at_once_and_the_epoch_never_goes_back() {
    let database = memvault_test_postgres::fresh_database();
    let a = node(database.url(), "a");
    let b = node(database.url(), "b");
    assert_eq!(held(a.claim("cluster:scheduler", LONG).unwrap()), 1);
    a.release("cluster:scheduler").unwrap();
    assert_eq!(held(b.claim("cluster:scheduler", LONG).unwrap()), 2);
    b.leave().unwrap();
    assert_eq!(held(a.claim("cluster:scheduler", LONG).unwrap()), 3);
    let nodes: Vec<String> = a.nodes().unwrap().into_iter().map(|node| node.id).collect();
    assert_eq!(nodes, ["a"]);
    let live: Vec<(String, String)> = a
        .live_leases()
        .unwrap()
        .into_iter()
        .map(|lease| (lease.name, lease.node))
        .collect();
    assert_eq!(live, [("cluster:scheduler".to_owned(), "a".to_owned())]);
}

#[test]
fn of_racing_claims_one_wins() {
    let database = memvault_test_postgres::fresh_database();
    let racers = 6;
    let barrier = Arc::new(Barrier::new(racers));
    let handles: Vec<_> = (0..racers)
        .map(|index| {
            let store = node(database.url(), &format!("n{index}"));
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                matches!(store.claim("tenant:raced", LONG).unwrap(), Claim::Held(_))
            })
        })
        .collect();
    let winners = handles
        .into_iter()
        .map(|handle| handle.join().unwrap())
        .filter(|won| *won)
        .count();
    assert_eq!(winners, 1);
}

#[test]
fn silent_nodes_are_forgotten() {
    let database = memvault_test_postgres::fresh_database();
    let a = node(database.url(), "a");
    let _b = node(database.url(), "b");
    std::thread::sleep(Duration::from_millis(300));
    a.heartbeat(LONG, "{}").unwrap();
    assert_eq!(
        a.forget_silent_nodes(Duration::from_millis(200)).unwrap(),
        1
    );
    let nodes: Vec<String> = a.nodes().unwrap().into_iter().map(|node| node.id).collect();
    assert_eq!(nodes, ["a"]);
}

#[test]
fn any_node_finds_the_tenant_of_a_key_by_its_hash() {
    let database = memvault_test_postgres::fresh_database();
    let a = node(database.url(), "a");
    let tenant = sample_tenant("keyed");
    a.put_tenant(&tenant).unwrap();
    held(a.claim(&tenant_lease(&tenant.id), LONG).unwrap());
    let key = memvault_storage::ApiKeyRecord {
        id: "key_1".to_owned(),
        tenant_id: tenant.id.clone(),
        label: "default".to_owned(),
        key_hash: "ab".repeat(32),
        display_prefix: "mv_abcd".to_owned(),
        read_only: false,
        owner: true,
        created_at: chrono::Utc::now(),
        revoked_at: None,
        expires_at: None,
    };
    a.put_api_key(&key).unwrap();
    let b = node(database.url(), "b");
    assert_eq!(b.tenant_of_key(&key.key_hash).unwrap(), Some(tenant.id));
    assert_eq!(b.tenant_of_key("0000").unwrap(), None);
}

#[test]
fn any_node_finds_the_tenant_a_keyless_request_names() {
    use chrono::{Duration as Span, Utc};
    use memvault_postgres::TenantLookup;
    use memvault_storage::records::{
        BillingRecord, EmailAddressRecord, OAuthStateRecord, RevealPurpose, RevealRecord,
    };
    use memvault_storage::{AccountStore, ConnectorStore, TenantSettings};

    let database = memvault_test_postgres::fresh_database();
    let a = node(database.url(), "a");
    let tenant = sample_tenant("keyless");
    let other = sample_tenant("keyless-other");
    for record in [&tenant, &other] {
        a.put_tenant(record).unwrap();
        held(a.claim(&tenant_lease(&record.id), LONG).unwrap());
    }
    let settings = TenantSettings {
        billing: Some(BillingRecord {
            customer_id: Some("cus_42".to_owned()),
            subscription_id: None,
            status: "active".to_owned(),
            last_event_id: "evt_1".to_owned(),
            updated_at: Utc::now(),
        }),
        ..TenantSettings::default()
    };
    a.put_tenant_settings(&tenant.id, &settings).unwrap();
    a.put_reveal(&RevealRecord {
        token_hash: "reveal-hash".to_owned(),
        tenant_id: tenant.id.clone(),
        purpose: RevealPurpose::Recover,
        created_at: Utc::now(),
        expires_at: Utc::now() + Span::hours(1),
    })
    .unwrap();
    let address = EmailAddressRecord {
        tenant_id: tenant.id.clone(),
        local_hash: "local-hash".to_owned(),
        local_sealed: "v1:sealed".to_owned(),
        collection: CollectionName::parse("inbox").unwrap(),
        created_at: Utc::now(),
    };
    assert!(a.replace_email_address(&address, None).unwrap());
    a.put_oauth_state(&OAuthStateRecord {
        state_hash: "state-hash".into(),
        tenant_id: tenant.id.clone(),
        key_id: "key-1".into(),
        provider: "notion".into(),
        collection: CollectionName::parse("notes").unwrap(),
        name: None,
        container_tag: None,
        config: serde_json::json!({}),
        redirect_uri: "http://127.0.0.1/cb".into(),
        created_at: Utc::now(),
        expires_at: Utc::now() + Span::minutes(10),
    })
    .unwrap();

    let b = node(database.url(), "b");
    let found = |lookup: TenantLookup| b.tenant_named(&lookup).unwrap();
    let id = Some(tenant.id.clone());
    assert_eq!(found(TenantLookup::Tenant(tenant.id.to_string())), id);
    assert_eq!(found(TenantLookup::OAuthState("state-hash".into())), id);
    assert_eq!(found(TenantLookup::Reveal("reveal-hash".into())), id);
    assert_eq!(found(TenantLookup::MailAddress("local-hash".into())), id);
    assert_eq!(found(TenantLookup::Email("KEYLESS@example.com".into())), id);
    assert_eq!(found(TenantLookup::StripeCustomer("cus_42".into())), id);
    assert_eq!(
        found(TenantLookup::Email("keyless-other@example.com".into())),
        Some(other.id.clone())
    );
    for unknown in [
        TenantLookup::Tenant("ten_nobody".into()),
        TenantLookup::OAuthState("nope".into()),
        TenantLookup::Reveal("nope".into()),
        TenantLookup::MailAddress("nope".into()),
        TenantLookup::Email("nobody@example.com".into()),
        TenantLookup::StripeCustomer("cus_nobody".into()),
    ] {
        assert_eq!(found(unknown.clone()), None, "{unknown:?}");
    }
}
