//! The store suite against Postgres (a throwaway cluster the tests start, or
//! `MEMVAULT_TEST_PG_URL`), plus what only Postgres has: connecting to a database several
//! processes migrate at once, the bootstrap lock, and reopening.

use std::sync::{Arc, Barrier};

use memvault_postgres::PgStore;
use memvault_storage::store_suite::{sample_collection, sample_memory, sample_tenant};
use memvault_storage::{
    AccountStore, CollectionName, MemoryStore, MetaStore, OutboxStore, UsageRow,
};

memvault_storage::store_suite!(postgres, || {
    let database = memvault_test_postgres::fresh_database();
    let store = PgStore::connect(database.url()).unwrap();
    (store, database)
});

#[test]
fn racing_connects_to_an_empty_database_migrate_once() {
    let database = memvault_test_postgres::fresh_database();
    let racers = 4;
    let barrier = Arc::new(Barrier::new(racers));
    let handles: Vec<_> = (0..racers)
        .map(|_| {
            let url = database.url().to_owned();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                PgStore::connect(&url)
            })
        })
        .collect();
    let stores: Vec<PgStore> = handles
        .into_iter()
        .map(|handle| {
            handle
                .join()
                .unwrap()
                .expect("every racing connect succeeds")
        })
        .collect();
    for store in &stores {
        assert_eq!(store.applied_migrations().unwrap(), vec![1, 2, 3]);
    }
    // A later connect finds them applied and applies nothing.
    let again = PgStore::connect(database.url()).unwrap();
    assert_eq!(again.applied_migrations().unwrap(), vec![1, 2, 3]);
    let tenant = sample_tenant("raced");
    stores[0].put_tenant(&tenant).unwrap();
    assert_eq!(again.tenants().unwrap(), vec![tenant]);
}

#[test]
fn writes_survive_a_reconnect() {
    let database = memvault_test_postgres::fresh_database();
    let tenant = sample_tenant("reopen");
    let notes = CollectionName::parse("notes").unwrap();
    let memory = sample_memory("m1", "survives a restart");
    {
        let store = PgStore::connect(database.url()).unwrap();
        store.put_tenant(&tenant).unwrap();
        store
            .put_collection(&tenant.id, &sample_collection("notes"))
            .unwrap();
        store
            .put_memories(&tenant.id, &notes, std::slice::from_ref(&memory))
            .unwrap();
        store
            .put_delivery(&memvault_storage::OutboxDelivery {
                id: "dlv-reopen".to_owned(),
                tenant_id: tenant.id.clone(),
                event: "memory.deleted".to_owned(),
                body: "{}".to_owned(),
                attempts: 1,
                next_attempt_at: chrono::Utc::now(),
                created_at: chrono::Utc::now(),
            })
            .unwrap();
    }
    let store = PgStore::connect(database.url()).unwrap();
    assert_eq!(store.tenants().unwrap(), vec![tenant.clone()]);
    assert_eq!(store.memories(&tenant.id, &notes).unwrap(), vec![memory]);
    assert_eq!(store.pending_deliveries().unwrap().len(), 1);
}

#[test]
fn the_advisory_lock_lets_one_bootstrap_at_a_time() {
    let database = memvault_test_postgres::fresh_database();
    let nodes = 4;
    let barrier = Arc::new(Barrier::new(nodes));
    let handles: Vec<_> = (0..nodes)
        .map(|node| {
            let url = database.url().to_owned();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let store = PgStore::connect(&url).unwrap();
                barrier.wait();
                // Check-then-create, the bootstrap's shape: safe only under the lock.
                store
                    .with_advisory_lock(|| {
                        if store.tenants()?.is_empty() {
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            store.put_tenant(&sample_tenant(&format!("admin-{node}")))?;
                            return Ok(true);
                        }
                        Ok(false)
                    })
                    .unwrap()
            })
        })
        .collect();
    let created = handles
        .into_iter()
        .map(|handle| handle.join().unwrap())
        .filter(|created| *created)
        .count();
    assert_eq!(created, 1, "exactly one node bootstraps");
    let store = PgStore::connect(database.url()).unwrap();
    assert_eq!(store.tenants().unwrap().len(), 1);
    // An error inside releases the lock too.
    let failed: memvault_storage::error::Result<()> =
        store.with_advisory_lock(|| Err(memvault_storage::StorageError::Backend("no".into())));
    assert!(failed.is_err());
    assert!(store.with_advisory_lock(|| Ok(7)).unwrap() == 7);
}

#[test]
fn concurrent_takes_and_adds_are_exact() {
    let database = memvault_test_postgres::fresh_database();
    let store = Arc::new(PgStore::connect(database.url()).unwrap());
    let tenant = sample_tenant("concurrent");
    let threads = 8;
    let rounds = 25;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let store = Arc::clone(&store);
            let barrier = Arc::clone(&barrier);
            let tenant = tenant.id.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let mut firsts = 0;
                for round in 0..rounds {
                    store
                        .add_usage(
                            &tenant,
                            &UsageRow {
                                month: "2026-11".to_owned(),
                                purpose: "extract".to_owned(),
                                model: "m".to_owned(),
                                own_llm: false,
                                calls: 1,
                                prompt_tokens: 2,
                                completion_tokens: 3,
                                cost_usd: 0.25,
                            },
                        )
                        .unwrap();
                    if store
                        .record_event_once("stripe", &format!("evt_{round}"), chrono::Utc::now())
                        .unwrap()
                    {
                        firsts += 1;
                    }
                }
                firsts
            })
        })
        .collect();
    let firsts: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(firsts, rounds, "each event is first exactly once");
    let usage = store.usage(&tenant.id, "2026-11").unwrap();
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0].calls, (threads * rounds) as u64);
    assert_eq!(usage[0].prompt_tokens, (threads * rounds * 2) as u64);
    assert!((usage[0].cost_usd - 0.25 * (threads * rounds) as f64).abs() < 1e-9);
}

/// `url` with `sslmode=mode` added, in its own form (URL or `key=value`).
fn with_sslmode(url: &str, mode: &str) -> String {
    if url.starts_with("postgres") && url.contains("://") {
        let separator = if url.contains('?') { '&' } else { '?' };
        format!("{url}{separator}sslmode={mode}")
    } else {
        format!("{url} sslmode={mode}")
    }
}

#[test]
fn plain_connection_strings_in_both_forms() {
    let database = memvault_test_postgres::fresh_database();
    // sslmode=disable, and sslmode=prefer (no TLS server: plain).
    for mode in ["disable", "prefer"] {
        let store = PgStore::connect(&with_sslmode(database.url(), mode)).unwrap();
        assert!(store.tenants().unwrap().is_empty());
    }
    // TLS asked of a server on a unix socket without it: an error, not a plain connection.
    assert!(PgStore::connect(&with_sslmode(database.url(), "require")).is_err());
    assert!(PgStore::connect(&with_sslmode(database.url(), "bogus")).is_err());
}

/// TLS against a server with a certificate, run by hand (`--ignored`) with
/// `MEMVAULT_TEST_PG_TLS_URL`, e.g.
/// `postgresql://postgres@localhost:55999/postgres?sslmode=verify-full&sslrootcert=/tmp/ca.crt`
/// (Postgres speaks TLS on TCP only).
#[test]
#[ignore = "needs a TLS server: set MEMVAULT_TEST_PG_TLS_URL"]
fn tls_when_the_connection_string_asks() {
    let url = std::env::var("MEMVAULT_TEST_PG_TLS_URL").expect("MEMVAULT_TEST_PG_TLS_URL");
    let store = PgStore::connect(&url).unwrap();
    let tenant = sample_tenant("tls");
    store.put_tenant(&tenant).unwrap();
    assert!(store.tenants().unwrap().contains(&tenant));
    store.delete_tenant(&tenant.id).unwrap();
}

#[test]
fn concurrent_takes_and_swaps_have_one_winner() {
    use memvault_storage::{EmailAddressRecord, RevealPurpose, RevealRecord};
    let database = memvault_test_postgres::fresh_database();
    let store = Arc::new(PgStore::connect(database.url()).unwrap());
    let tenant = sample_tenant("winner");
    let now = chrono::Utc::now();
    let threads = 8;
    for round in 0..10 {
        store
            .put_reveal(&RevealRecord {
                token_hash: format!("h{round}"),
                tenant_id: tenant.id.clone(),
                purpose: RevealPurpose::Recover,
                created_at: now,
                expires_at: now,
            })
            .unwrap();
        let expected = (round > 0).then(|| format!("hash-{}", round - 1));
        let barrier = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let (store, barrier) = (Arc::clone(&store), Arc::clone(&barrier));
                let (tenant, expected) = (tenant.id.clone(), expected.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let took = store.take_reveal(&format!("h{round}")).unwrap().is_some();
                    let address = EmailAddressRecord {
                        tenant_id: tenant,
                        local_hash: format!("hash-{round}-{thread}"),
                        local_sealed: "sealed".to_owned(),
                        collection: CollectionName::parse("email").unwrap(),
                        created_at: chrono::Utc::now(),
                    };
                    let swapped = store
                        .replace_email_address(&address, expected.as_deref())
                        .unwrap();
                    (took, swapped.then_some(address))
                })
            })
            .collect();
        let outcomes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(outcomes.iter().filter(|(took, _)| *took).count(), 1);
        let winners: Vec<_> = outcomes.into_iter().filter_map(|(_, won)| won).collect();
        assert_eq!(winners.len(), 1, "one compare-and-swap wins");
        let winner = winners.into_iter().next().unwrap();
        assert_eq!(
            store.email_address_of(&tenant.id).unwrap(),
            Some(winner.clone())
        );
        // Rename to the hash the next round expects.
        let renamed = EmailAddressRecord {
            local_hash: format!("hash-{round}"),
            ..winner.clone()
        };
        assert!(store
            .replace_email_address(&renamed, Some(&winner.local_hash))
            .unwrap());
        assert_eq!(
            store.email_address_by_hash(&winner.local_hash).unwrap(),
            None
        );
    }
}

#[test]
fn a_tenant_database_is_checked_before_use() {
    let database = memvault_test_postgres::fresh_database();
    let timeout = std::time::Duration::from_secs(10);
    let server = memvault_test_postgres::server();
    let url = server.password_url(database.name());
    let (store, version) = PgStore::open_checked(&url, timeout).unwrap();
    assert!(
        version.starts_with(|c: char| c.is_ascii_digit()),
        "{version}"
    );
    assert_eq!(store.applied_migrations().unwrap(), vec![1, 2, 3]);
    assert!(
        store.tenant_settings(&sample_tenant("probe").id).is_ok(),
        "the probe left nothing behind that breaks a read"
    );

    let wrong = url.replace(memvault_test_postgres::PASSWORD, "not-the-password");
    let error = PgStore::open_checked(&wrong, timeout).err().unwrap();
    assert!(error.to_string().contains("password"), "{error}");

    let missing = server.password_url("no_such_database");
    let error = PgStore::open_checked(&missing, timeout).err().unwrap();
    assert!(error.to_string().contains("no_such_database"), "{error}");

    // Nothing listens on port 1: refused at once, not after the timeout.
    let refused = "postgresql://memvault_pw:x@127.0.0.1:1/db";
    let started = std::time::Instant::now();
    assert!(PgStore::open_checked(refused, timeout).is_err());
    assert!(started.elapsed() < timeout);
}

#[test]
fn a_silent_server_fails_the_check_at_its_timeout() {
    // Accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let _keep = std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let url = format!("postgresql://u:p@127.0.0.1:{port}/db");
    let started = std::time::Instant::now();
    let error = PgStore::open_checked(&url, std::time::Duration::from_secs(1))
        .err()
        .unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{error}"
    );
}
