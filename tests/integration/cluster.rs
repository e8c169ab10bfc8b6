//! Several nodes: three real `memvault` processes on loopback share one real Postgres
//! (`[cluster]`). Requests for an account go to the node that holds its lease wherever
//! they arrive; a revoked key stops working on every node at once; after `kill -9` of
//! the node serving a busy collection, every acknowledged write is still there and
//! writes resume on another node within 15 seconds; a node that takes an account over
//! starts its indexes from the snapshot the last owner kept in the shared blob store.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::smtp_sink::SmtpSink;
use crate::support::{
    expect_status, free_port, memories_path, temp_data_dir, Client, ServerProcess,
};

const ADMIN_KEY: &str = "mv_cluster_bootstrap_key_0123456789abcdef";
const SECRET: &str = "cluster-secret-0123456789";
const NODE: &str = "x-memvault-node";

struct Node {
    process: ServerProcess,
    _data: tempfile::TempDir,
}

fn start_node(url: &str, name: &str) -> Node {
    start_logged_node(url, name, None, None, &[])
}

/// A node; with `blobs`, its files (and index snapshots) go to that shared directory;
/// with `log`, its log goes to that file at `info` for the index crate; `extra` adds
/// settings.
fn start_logged_node(
    url: &str,
    name: &str,
    blobs: Option<&Path>,
    log: Option<&Path>,
    extra: &[(&str, String)],
) -> Node {
    let (data, data_dir) = temp_data_dir();
    let port = free_port();
    let advertise = format!("http://127.0.0.1:{port}");
    let blobs = blobs.map(|root| root.display().to_string());
    let mut environment = vec![
        ("MEMVAULT_BOOTSTRAP_KEY", ADMIN_KEY),
        ("MEMVAULT__STORE__BACKEND", "postgres"),
        ("MEMVAULT__STORE__URL", url),
        ("MEMVAULT__CLUSTER__ADVERTISE_URL", advertise.as_str()),
        ("MEMVAULT__CLUSTER__SECRET", SECRET),
        ("MEMVAULT__CLUSTER__NODE_NAME", name),
        (
            "MEMVAULT__SECURITY__ENCRYPTION_KEY",
            "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
        ),
    ];
    if let Some(root) = &blobs {
        environment.push(("MEMVAULT__BLOBS__ROOT", root.as_str()));
    }
    environment.extend(extra.iter().map(|(name, value)| (*name, value.as_str())));
    let stderr = match log {
        Some(path) => {
            environment.push(("RUST_LOG", "warn,memvault_index=info"));
            Stdio::from(std::fs::File::create(path).expect("a log file"))
        }
        None => Stdio::inherit(),
    };
    let process = ServerProcess::start_with_log(
        &data_dir,
        &format!("127.0.0.1:{port}"),
        &environment,
        stderr,
    )
    .expect("a node starts");
    Node {
        process,
        _data: data,
    }
}

/// `/v1/status` as `node` answers it (no key: never forwarded).
fn status_of(node: &Node) -> Value {
    expect_status(
        Client::new(&node.process.base_url, None).get("/v1/status"),
        200,
    )
}

/// Which node answered.
fn answered_by(response: &reqwest::blocking::Response) -> String {
    response
        .headers()
        .get(NODE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

fn new_tenant(node: &Node, name: &str) -> String {
    let admin = node.process.client(ADMIN_KEY);
    let body = expect_status(
        admin.post(
            "/v1/memory/admin/tenants",
            &json!({"name": name, "email": format!("{name}@example.com")}),
        ),
        201,
    );
    body["api_key"].as_str().unwrap().to_owned()
}

/// The ids of a collection's memories, asked again while the account answers 503 (it is
/// moving to another node) until `deadline`.
fn ids_once_served(client: &Client, collection: &str, deadline: Instant) -> BTreeSet<String> {
    loop {
        let response = client.get(&format!("{}?limit=200", memories_path(collection)));
        if response.status().as_u16() == 503 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(250));
            continue;
        }
        return expect_status(response, 200)
            .as_array()
            .unwrap()
            .iter()
            .map(|memory| memory["id"].as_str().unwrap().to_owned())
            .collect();
    }
}

#[test]
fn three_nodes_serve_each_account_on_one_node_and_survive_a_kill() {
    let database = memvault_test_postgres::fresh_database();
    let url = database.url().to_owned();
    // The first node bootstraps the admin account; the others find it.
    let mut nodes = vec![start_node(&url, "one")];
    nodes.push(start_node(&url, "two"));
    nodes.push(start_node(&url, "three"));

    let status = status_of(&nodes[2]);
    let live: Vec<&Value> = status["cluster"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|node| node["live"] == true)
        .collect();
    assert_eq!(live.len(), 3, "{status}");

    // The recurring work on shared data runs once per turn: each task's turn is taken by
    // the one node that holds its lease.
    let mut database = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let work = loop {
        let rows = database
            .query(
                "SELECT l.name, count(*) FROM leases l JOIN nodes n ON n.id = l.node_id
                 WHERE l.name LIKE 'work:%' AND l.expires_at > now() GROUP BY l.name
                 ORDER BY l.name",
                &[],
            )
            .unwrap();
        let work: Vec<(String, i64)> = rows.iter().map(|row| (row.get(0), row.get(1))).collect();
        if work.len() == 3 || Instant::now() > deadline {
            break work;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        work,
        [
            ("work:account_pruning".to_owned(), 1),
            ("work:audit_pruning".to_owned(), 1),
            ("work:extract_job_pruning".to_owned(), 1)
        ]
    );

    // Three accounts, each created through a different node.
    let keys: Vec<String> = (0..3)
        .map(|index| new_tenant(&nodes[index], &format!("cluster-{index}")))
        .collect();

    // Writes and searches spread over all three nodes: every account is served by one
    // node, whichever node the request reached.
    let mut acknowledged: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut owners: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    for round in 0..6 {
        for (account, key) in keys.iter().enumerate() {
            let node = &nodes[(round + account) % 3];
            let client = node.process.client(key);
            let response = client.post(
                &memories_path("notes"),
                &json!({"text": format!("account {account} note {round} about harbours")}),
            );
            owners
                .entry(account)
                .or_default()
                .insert(answered_by(&response));
            let created = expect_status(response, 201);
            acknowledged
                .entry(account)
                .or_default()
                .push(created["id"].as_str().unwrap().to_owned());
            let response = client.post(
                "/v1/memory/collections/notes/search",
                &json!({"query": "harbours", "limit": 50}),
            );
            owners
                .entry(account)
                .or_default()
                .insert(answered_by(&response));
            let found = expect_status(response, 200);
            assert_eq!(
                found["results"].as_array().unwrap().len(),
                round + 1,
                "search on any node sees every write: {found}"
            );
        }
    }
    for (account, answered) in &owners {
        assert_eq!(
            answered.len(),
            1,
            "account {account} answered by {answered:?}"
        );
    }

    // A revoked key stops working on every node at once.
    let owner_client = nodes[0].process.client(&keys[0]);
    let created = expect_status(
        owner_client.post("/v1/memory/keys", &json!({"label": "short-lived"})),
        201,
    );
    let secret = created["key"].as_str().unwrap().to_owned();
    let key_id = created["id"].as_str().unwrap().to_owned();
    for node in &nodes {
        expect_status(node.process.client(&secret).get("/v1/memory/admin/me"), 200);
    }
    expect_status(
        nodes[1]
            .process
            .client(&keys[0])
            .delete(&format!("/v1/memory/keys/{key_id}")),
        200,
    );
    for node in &nodes {
        expect_status(node.process.client(&secret).get("/v1/memory/admin/me"), 401);
    }

    // kill -9 the node serving account 0's busy collection.
    let owner = owners[&0].iter().next().unwrap().clone();
    let victim = nodes
        .iter()
        .position(|node| status_of(node)["cluster"]["node"] == owner.as_str())
        .expect("the owner is one of the three");
    nodes[victim].process.kill_hard();
    let killed_at = Instant::now();
    let survivors: Vec<&Node> = nodes
        .iter()
        .enumerate()
        .filter(|(index, _)| *index != victim)
        .map(|(_, node)| node)
        .collect();

    // Writes to that collection, alternating over the survivors, resume within 15 s.
    let mut attempt = 0;
    let resumed_after = loop {
        let client = survivors[attempt % 2].process.client(&keys[0]);
        attempt += 1;
        let response = client.post(
            &memories_path("notes"),
            &json!({"text": format!("after the kill, attempt {attempt}")}),
        );
        if response.status().as_u16() == 201 {
            let new_owner = answered_by(&response);
            assert_ne!(new_owner, owner);
            let created: Value = response.json().unwrap();
            acknowledged
                .get_mut(&0)
                .unwrap()
                .push(created["id"].as_str().unwrap().to_owned());
            break killed_at.elapsed();
        }
        let status = response.status().as_u16();
        let body: Value = response.json().unwrap_or_default();
        assert_eq!(status, 503, "only 503 while the account moves: {body}");
        assert!(
            killed_at.elapsed() < Duration::from_secs(15),
            "writes did not resume within 15 s: last answer {status} {body}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    eprintln!(
        "writes resumed {} ms after kill -9",
        resumed_after.as_millis()
    );

    // Every acknowledged write is there, on whichever survivor is asked, and search
    // finds them all. Another account the dead node served may still be moving (its
    // lease is renewed on its own beat): 503 until it is served, within the same 15 s.
    let moved_by = killed_at + Duration::from_secs(15);
    for (account, key) in keys.iter().enumerate() {
        for node in &survivors {
            let client = node.process.client(key);
            let expected: BTreeSet<String> = acknowledged[&account].iter().cloned().collect();
            assert_eq!(
                ids_once_served(&client, "notes", moved_by),
                expected,
                "account {account}"
            );
            let found = expect_status(
                client.post(
                    "/v1/memory/collections/notes/search",
                    &json!({"query": "harbours", "limit": 50}),
                ),
                200,
            );
            assert_eq!(found["results"].as_array().unwrap().len(), 6);
        }
    }
    let status = status_of(survivors[0]);
    let live = status["cluster"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|node| node["live"] == true)
        .count();
    assert_eq!(live, 2, "{status}");
}

#[test]
fn the_next_owner_starts_from_the_index_snapshot_the_last_owner_kept() {
    let database = memvault_test_postgres::fresh_database();
    let url = database.url().to_owned();
    let shared = tempfile::tempdir().unwrap();
    let blobs = shared.path().join("blobs");
    let logs = [shared.path().join("one.log"), shared.path().join("two.log")];
    let mut nodes = [
        start_logged_node(&url, "one", Some(&blobs), Some(&logs[0]), &[]),
        start_logged_node(&url, "two", Some(&blobs), Some(&logs[1]), &[]),
    ];
    let key = new_tenant(&nodes[0], "snapshots");
    let words: Vec<String> = (0..24).map(|index| format!("lantern{index}")).collect();
    let mut ids = BTreeMap::new();
    let mut owner = String::new();
    for (index, word) in words.iter().enumerate() {
        let response = nodes[index % 2].process.client(&key).post(
            &memories_path("notes"),
            &json!({"text": format!("a note about the {word} by the quay")}),
        );
        owner = answered_by(&response);
        let created = expect_status(response, 201);
        ids.insert(word.clone(), created["id"].as_str().unwrap().to_owned());
    }

    // The owner stops: its collections keep their snapshots on the way out.
    let victim = nodes
        .iter()
        .position(|node| status_of(node)["cluster"]["node"] == owner.as_str())
        .expect("the owner is one of the two");
    nodes[victim].process.stop_gracefully();
    let snapshots: Vec<_> = walk(&blobs.join("objects"))
        .into_iter()
        .filter(|path| path.ends_with("indexes/notes/snapshot"))
        .collect();
    assert_eq!(
        snapshots.len(),
        1,
        "one snapshot in the shared blob store: {snapshots:?}"
    );

    // The other node takes the account over and unpacks it; every memory is found by
    // its own word, in text and hybrid search, and a new one is added.
    let survivor = &nodes[1 - victim];
    let client = survivor.process.client(&key);
    let found = until_found(&client, &words[5]);
    assert_eq!(found, vec![ids[&words[5]].clone()]);
    for word in &words {
        for mode in ["text", "hybrid"] {
            let body = expect_status(
                client.post(
                    "/v1/memory/collections/notes/search",
                    &json!({"query": word, "mode": mode, "limit": 1}),
                ),
                200,
            );
            assert_eq!(
                body["results"][0]["id"],
                ids[word].as_str(),
                "{mode} {word}"
            );
        }
    }
    let created = expect_status(
        client.post(
            &memories_path("notes"),
            &json!({"text": "a note about the beacon"}),
        ),
        201,
    );
    let body = expect_status(
        client.post(
            "/v1/memory/collections/notes/search",
            &json!({"query": "beacon", "mode": "text"}),
        ),
        200,
    );
    assert_eq!(body["results"][0]["id"], created["id"]);
    let log = std::fs::read_to_string(&logs[1 - victim]).unwrap();
    assert!(
        log.contains("index snapshot unpacked"),
        "the new owner started from the snapshot: {log}"
    );
}

/// Text search for `word` until the account is served again (503 while it moves).
fn until_found(client: &Client, word: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let response = client.post(
            "/v1/memory/collections/notes/search",
            &json!({"query": word, "mode": "text"}),
        );
        if response.status().as_u16() == 200 {
            let body: Value = response.json().unwrap();
            return body["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|hit| hit["id"].as_str().unwrap().to_owned())
                .collect();
        }
        assert!(Instant::now() < deadline, "the account is not served again");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn walk(root: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn requests_without_a_key_reach_the_node_of_the_account_they_name() {
    let database = memvault_test_postgres::fresh_database();
    let url = database.url().to_owned();
    let sink = SmtpSink::start();
    let mail = [
        ("MEMVAULT__MAIL__SMTP_URL", sink.url()),
        (
            "MEMVAULT__MAIL__FROM",
            "memvault <noreply@memvault.test>".to_owned(),
        ),
        ("MEMVAULT__MAIL__INITIAL_BACKOFF_MS", "100".to_owned()),
    ];
    let nodes = [
        start_logged_node(&url, "one", None, None, &mail),
        start_logged_node(&url, "two", None, None, &mail),
    ];
    let key = new_tenant(&nodes[0], "keyless");
    let email = "keyless@example.com";
    let response = nodes[0].process.client(&key).post(
        &memories_path("notes"),
        &json!({"text": "served somewhere"}),
    );
    let owner = answered_by(&response);
    expect_status(response, 201);
    let other = nodes
        .iter()
        .find(|node| status_of(node)["cluster"]["node"] != owner.as_str())
        .expect("a node that does not serve the account");

    // Key recovery asked of the node that does not serve the account: the account's
    // node finds it by its email and mails the link.
    let anonymous = Client::new(&other.process.base_url, None);
    let response = anonymous.post("/v1/memory/recover-key", &json!({"email": email}));
    assert_eq!(
        answered_by(&response),
        owner,
        "recovery runs on the account's node"
    );
    expect_status(response, 202);
    let text = sink.wait_for(email, 1).remove(0).text();
    let start = text.find("/v1/memory/reveal/").expect("a reveal link");
    let path = text[start..].split_whitespace().next().unwrap().to_owned();

    // The link, opened on the other node, reveals the new key there too.
    let revealed = reqwest::blocking::Client::new()
        .post(format!("{}{path}", other.process.base_url))
        .header("accept", "application/json")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("confirm=reveal")
        .send()
        .unwrap();
    assert_eq!(answered_by(&revealed), owner);
    let revealed = expect_status(revealed, 200);
    let new_key = revealed["api_key"].as_str().unwrap();
    for node in &nodes {
        expect_status(node.process.client(new_key).get("/v1/memory/admin/me"), 200);
        expect_status(node.process.client(&key).get("/v1/memory/admin/me"), 401);
    }

    // The dashboard: a sign-in on the node that does not serve the account opens its
    // session on the account's node, and every node shows its pages from it.
    let mut browser = crate::dashboard::Browser::new(&other.process.base_url);
    let response = browser.sign_in(new_key);
    assert_eq!(
        answered_by(&response),
        owner,
        "the sign-in goes to the account"
    );
    assert_eq!(response.status(), 303);
    for node in &nodes {
        let response = browser
            .at(&node.process.base_url)
            .get("/dashboard/collections");
        assert_eq!(answered_by(&response), owner, "{}", node.process.base_url);
        assert_eq!(response.status(), 200);
        assert!(response.text().unwrap().contains("notes"));
    }
    // A change through another node passes the same-origin check (the forwarded request
    // keeps the Host the browser addressed), and a sign-out there ends it everywhere.
    let response = browser.post("/dashboard/collections", &[("name", "from-the-dashboard")]);
    assert_eq!(
        response.status(),
        303,
        "{}",
        response.text().unwrap_or_default()
    );
    let names = expect_status(
        nodes[0]
            .process
            .client(new_key)
            .get("/v1/memory/collections"),
        200,
    );
    assert!(names.to_string().contains("from-the-dashboard"), "{names}");
    assert_eq!(browser.post("/dashboard/logout", &[]).status(), 303);
    for node in &nodes {
        let response = browser.at(&node.process.base_url).get("/dashboard/");
        assert_eq!(response.status(), 303, "signed out on every node");
    }

    // A keyless request that names no account is answered where it arrives, as by one
    // node: an unknown email gets the same 202 and no mail.
    let response = anonymous.post(
        "/v1/memory/recover-key",
        &json!({"email": "nobody@example.com"}),
    );
    assert_eq!(
        answered_by(&response),
        status_of(other)["cluster"]["node"].as_str().unwrap()
    );
    expect_status(response, 202);
}
