//! A tenant's own database (`GET/PUT/DELETE /v1/memory/database/config`) against a real
//! Postgres the tests start (memvault-test-postgres, TCP on loopback with a password):
//! the switch copies the tenant's data there and back without losing a memory, writes
//! made meanwhile land where the data is, a restart reopens the tenant's database, and
//! the refusals (bad URL, wrong password, private address, read-only key, a switch under
//! way) answer 4xx without saving anything.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use memvault_storage::{MemoryStore, MetaStore};
use serde_json::{json, Value};

use crate::support::{
    create_memory, expect_error, expect_status, list_ids, memories_path, shared, start_in_process,
    temp_data_dir, tenant_on, word_embeddings, Client, ServerProcess, TestServer,
};

const CONFIG: &str = "/v1/memory/database/config";

/// A server that lets a tenant's database be on loopback (where the test Postgres is).
fn server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        start_in_process(|config| {
            word_embeddings(config);
            config.store.allow_private_targets = true;
        })
    })
}

/// A fresh database's password URL, kept alive for the test process.
fn fresh_url() -> String {
    let database = memvault_test_postgres::fresh_database();
    let url = memvault_test_postgres::server().password_url(database.name());
    std::mem::forget(database);
    url
}

/// Polls GET until the state is `state`; the last answer.
fn wait_for_state(client: &Client, state: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let body = expect_status(client.get(CONFIG), 200);
        if body["state"] == state {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "the switch did not reach {state}: {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn tenant_id(client: &Client) -> memvault_storage::TenantId {
    let me = expect_status(client.get("/v1/memory/admin/me"), 200);
    memvault_storage::TenantId::from_stored(me["id"].as_str().unwrap())
}

fn fill(client: &Client, collection: &str, count: usize) -> Vec<String> {
    (0..count)
        .map(|index| {
            create_memory(
                client,
                collection,
                json!({"text": format!("{collection} note {index} about lighthouses")}),
            )["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// `expect_error`'s checks, then `code: detail`.
#[track_caller]
fn refused(response: reqwest::blocking::Response, status: u16) -> String {
    let body = expect_status(response, status);
    let code = body["code"].as_str().unwrap_or_default().to_owned();
    let detail = expect_error_body(&body, status);
    format!("{code}: {detail}")
}

#[track_caller]
fn expect_error_body(body: &Value, status: u16) -> String {
    let code = body["code"].as_str().expect("a code");
    let listed = memvault_types::ErrorCode::ALL
        .iter()
        .find(|listed| listed.as_str() == code)
        .unwrap_or_else(|| panic!("error code {code} is not in the code table: {body}"));
    assert_eq!(listed.status(), status, "{code} has another status: {body}");
    body["detail"].as_str().expect("a detail").to_owned()
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

#[test]
fn a_switch_and_a_switch_back_lose_nothing() {
    let client = tenant_on(server());
    let before = expect_status(client.get(CONFIG), 200);
    assert_eq!(before["configured"], false, "{before}");
    assert_eq!(before["state"], "platform");

    let mut notes = fill(&client, "notes", 40);
    let mail = fill(&client, "mail", 5);
    let url = fresh_url();
    let accepted = expect_status(client.put(CONFIG, &json!({"url": url})), 202);
    assert_eq!(accepted["state"], "copying", "{accepted}");
    assert_eq!(accepted["configured"], true);
    let shown = accepted.to_string();
    assert!(!shown.contains(memvault_test_postgres::PASSWORD), "{shown}");
    assert!(accepted["target"].as_str().unwrap().contains("127.0.0.1"));
    assert!(accepted["server_version"].as_str().is_some());

    let active = wait_for_state(&client, "active");
    assert!(active["progress"].is_null(), "{active}");
    assert!(!active
        .to_string()
        .contains(memvault_test_postgres::PASSWORD));

    // Everything is served, and the tenant's database holds it (the platform keeps the
    // account: keys still work).
    assert_eq!(
        sorted(list_ids(&client, "notes", "?limit=100")),
        sorted(notes.clone())
    );
    assert_eq!(
        sorted(list_ids(&client, "mail", "?limit=100")),
        sorted(mail.clone())
    );
    let found = expect_status(
        client.post(
            "/v1/memory/collections/notes/search",
            &json!({"query": "lighthouses", "mode": "text", "limit": 5}),
        ),
        200,
    );
    assert!(!found["results"].as_array().unwrap().is_empty(), "{found}");
    let tenant = tenant_id(&client);
    let own = memvault_postgres::PgStore::connect(&url).unwrap();
    let notes_name = memvault_storage::CollectionName::parse("notes").unwrap();
    assert_eq!(own.memories(&tenant, &notes_name).unwrap().len(), 40);
    assert!(
        own.tenants().unwrap().is_empty(),
        "the account stays on the platform"
    );

    // Written while the data is in its own database: lands there.
    notes.extend(fill(&client, "notes", 3));
    let removed = notes.remove(0);
    expect_status(
        client.delete(&format!("{}/{removed}", memories_path("notes"))),
        204,
    );
    assert_eq!(own.memories(&tenant, &notes_name).unwrap().len(), 42);

    // A second database while one is in use: refused, nothing changes.
    let error = refused(client.put(CONFIG, &json!({"url": fresh_url()})), 409);
    assert!(error.contains("database_in_use"), "{error}");

    let reverting = client.delete(CONFIG);
    assert_eq!(reverting.status().as_u16(), 202);
    let after = wait_for_state(&client, "platform");
    assert_eq!(after["configured"], false, "{after}");
    assert_eq!(
        sorted(list_ids(&client, "notes", "?limit=100")),
        sorted(notes.clone())
    );
    assert_eq!(
        sorted(list_ids(&client, "mail", "?limit=100")),
        sorted(mail)
    );
    // And new writes go to the platform again, not to the database it left.
    fill(&client, "notes", 1);
    assert_eq!(own.memories(&tenant, &notes_name).unwrap().len(), 42);
    assert_eq!(list_ids(&client, "notes", "?limit=100").len(), 43);

    // Nothing configured now: DELETE has nothing to do.
    assert_eq!(client.delete(CONFIG).status().as_u16(), 204);
}

#[test]
fn refusals_save_nothing() {
    let client = tenant_on(server());
    for (body, status, code) in [
        (
            json!({"url": "http://db.example.com/memvault"}),
            422,
            "validation_failed",
        ),
        (json!({"url": "not a url"}), 422, "validation_failed"),
        (
            json!({"url": "postgresql://u:p@db.example.com:5432"}),
            422,
            "validation_failed",
        ),
        (json!({"url": ""}), 422, "validation_failed"),
        (json!({"url": 5}), 422, "invalid_body"),
        (json!({}), 422, "invalid_body"),
        (
            json!({"url": "postgresql://u:p@db.example.com/x", "extra": 1}),
            422,
            "invalid_body",
        ),
    ] {
        let error = refused(client.put(CONFIG, &body), status);
        assert!(error.starts_with(code), "{body}: {error}");
    }
    let long = format!("postgresql://u:p@db.example.com/{}", "x".repeat(3_000));
    expect_error(client.put(CONFIG, &json!({"url": long})), 422);

    // Wrong password: the self-test says so; nothing is saved.
    let url = fresh_url();
    let wrong = url.replace(memvault_test_postgres::PASSWORD, "not-the-password");
    let error = refused(client.put(CONFIG, &json!({"url": wrong})), 422);
    assert!(error.contains("database_self_test_failed"), "{error}");
    assert!(error.contains("password"), "{error}");
    assert!(
        !error.contains("not-the-password"),
        "the password is not echoed: {error}"
    );
    // Nothing listens there.
    let error = refused(
        client.put(CONFIG, &json!({"url": "postgresql://u:p@127.0.0.1:1/db"})),
        422,
    );
    assert!(error.contains("database_self_test_failed"), "{error}");
    assert_eq!(expect_status(client.get(CONFIG), 200)["configured"], false);

    // A read-only key may look, not change.
    let reader = expect_status(
        client.post(
            "/v1/memory/keys",
            &json!({"label": "reader", "read_only": true}),
        ),
        201,
    );
    let reader = Client::new(&server().base_url, reader["key"].as_str());
    expect_status(reader.get(CONFIG), 200);
    expect_error(reader.put(CONFIG, &json!({"url": url})), 403);
    expect_error(reader.delete(CONFIG), 403);
    // Without a key at all.
    expect_error(Client::new(&server().base_url, None).get(CONFIG), 401);
}

#[test]
fn private_addresses_are_refused_by_default() {
    let client = tenant_on(shared());
    let url = fresh_url();
    for target in [
        url.clone(),
        "postgresql://u:p@10.0.0.7:5432/db".to_owned(),
        "postgresql://u:p@169.254.169.254/db".to_owned(),
        "postgresql://u:p@localhost/db".to_owned(),
        // libpq would take the query's host over the URL's.
        "postgresql://u:p@db.example.com/db?host=/var/run/postgresql".to_owned(),
        "postgresql://u:p@db.example.com/db?hostaddr=127.0.0.1".to_owned(),
    ] {
        let error = refused(client.put(CONFIG, &json!({"url": target})), 422);
        assert!(
            error.contains("database_target_rejected"),
            "{target}: {error}"
        );
    }
    assert_eq!(expect_status(client.get(CONFIG), 200)["configured"], false);
}

#[test]
fn a_restart_reopens_the_tenants_database() {
    const KEY: &str = "mv_database_restart_bootstrap_key_0123456789";
    let (_guard, data_dir) = temp_data_dir();
    let environment = [
        ("MEMVAULT_BOOTSTRAP_KEY", KEY),
        ("MEMVAULT__STORE__ALLOW_PRIVATE_TARGETS", "true"),
    ];
    let mut first = ServerProcess::start(&data_dir, &environment).expect("server starts");
    let client = first.client(KEY);
    let ids = fill(&client, "kept", 4);
    expect_status(client.put(CONFIG, &json!({"url": fresh_url()})), 202);
    wait_for_state(&client, "active");
    first.kill_hard();

    let second = ServerProcess::start(&data_dir, &environment).expect("server restarts");
    let client = second.client(KEY);
    assert_eq!(expect_status(client.get(CONFIG), 200)["state"], "active");
    assert_eq!(sorted(list_ids(&client, "kept", "?limit=10")), sorted(ids));
    fill(&client, "kept", 1);
    assert_eq!(list_ids(&client, "kept", "?limit=10").len(), 5);
}
