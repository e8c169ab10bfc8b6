//! The runtime contract of the binary: bootstrap key printed once, supplied key used,
//! bad configuration refused, graceful shutdown on SIGTERM.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{expect_status, temp_data_dir, ServerProcess};

#[test]
fn generated_bootstrap_key_is_printed_once_and_works() {
    let (_guard, data_dir) = temp_data_dir();
    let first = ServerProcess::start(&data_dir, &[]).expect("first start");
    let key = first
        .stdout_lines
        .iter()
        .find(|line| line.starts_with("mv_"))
        .cloned()
        .expect("the generated key is printed on first start");
    let me = expect_status(first.client(&key).get("/v1/memory/admin/me"), 200);
    assert_eq!(me["admin"], true);
    drop(first);
    let second = ServerProcess::start(
        &data_dir,
        &[("MEMVAULT_BOOTSTRAP_KEY", "mv_ignored_on_later_starts_000")],
    )
    .expect("second start");
    assert!(
        !second.stdout_lines.iter().any(|line| line.contains("mv_")),
        "{:?}",
        second.stdout_lines
    );
    expect_status(second.client(&key).get("/v1/memory/admin/me"), 200);
    assert_eq!(
        second
            .client("mv_ignored_on_later_starts_000")
            .get("/v1/memory/admin/me")
            .status()
            .as_u16(),
        401
    );
}

#[test]
fn a_bootstrap_key_without_the_prefix_is_refused() {
    let (_guard, data_dir) = temp_data_dir();
    let outcome = ServerProcess::start(
        &data_dir,
        &[("MEMVAULT_BOOTSTRAP_KEY", "sk_wrong_prefix_0123456789abcdef")],
    );
    assert!(
        outcome.is_err(),
        "the server must not start with a malformed bootstrap key"
    );
}

#[test]
fn unknown_config_keys_are_refused() {
    let (_guard, data_dir) = temp_data_dir();
    let outcome = ServerProcess::start(&data_dir, &[("MEMVAULT__SERVER__NO_SUCH_KEY", "1")]);
    let error = outcome.err().expect("an unknown key stops the server");
    assert!(error.contains("exited"), "{error}");
}

#[test]
fn sigterm_shuts_down_gracefully_and_data_stays() {
    let (_guard, data_dir) = temp_data_dir();
    let key = "mv_sigterm_admin_key_0123456789ab";
    let mut server =
        ServerProcess::start(&data_dir, &[("MEMVAULT_BOOTSTRAP_KEY", key)]).expect("start");
    let created = expect_status(
        server.client(key).post(
            "/v1/memory/collections/notes/memories",
            &json!({"text": "kept"}),
        ),
        201,
    );
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let exit = loop {
        if let Some(exit) = server.child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "server did not stop within 20 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exit.success(), "graceful shutdown exits 0, got {exit}");
    let restarted = ServerProcess::start(&data_dir, &[]).expect("restart");
    let path = format!(
        "/v1/memory/collections/notes/memories/{}",
        created["id"].as_str().unwrap()
    );
    assert_eq!(
        expect_status(restarted.client(key).get(&path), 200)["text"],
        "kept"
    );
}

#[test]
fn json_log_format_flag_is_accepted() {
    let (_guard, data_dir) = temp_data_dir();
    let mut command = Command::new(env!("CARGO_BIN_EXE_memvault"));
    let output = command
        .args(["serve", "--log-format", "yaml", "--data-dir"])
        .arg(&data_dir)
        .output()
        .expect("run");
    assert!(!output.status.success(), "an unknown log format is refused");
    let server =
        ServerProcess::start(&data_dir, &[("MEMVAULT__LOG__FORMAT", "json")]).expect("json logs");
    expect_status(
        crate::support::Client::new(&server.base_url, None).get("/v1/memory/health"),
        200,
    );
}

#[test]
fn nodes_starting_at_once_on_one_empty_postgres_bootstrap_once() {
    use memvault_storage::MetaStore;
    let database = memvault_test_postgres::fresh_database();
    let url = database.url().to_owned();
    let holder = memvault_postgres::PgStore::connect(&url).unwrap();
    let held = holder.startup_lock().unwrap();
    let (_one, first_dir) = temp_data_dir();
    let (_two, second_dir) = temp_data_dir();
    let starts: Vec<_> = [first_dir, second_dir]
        .into_iter()
        .map(|data_dir| {
            let url = url.clone();
            std::thread::spawn(move || {
                ServerProcess::start(
                    &data_dir,
                    &[
                        ("MEMVAULT__STORE__BACKEND", "postgres"),
                        ("MEMVAULT__STORE__URL", url.as_str()),
                    ],
                )
                .expect("a node starts")
            })
        })
        .collect();
    // While someone holds the start-up lock, no node gets past loading the tenants.
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        starts.iter().all(|start| !start.is_finished()),
        "a node started while the start-up lock was held"
    );
    drop(held);
    let nodes: Vec<ServerProcess> = starts
        .into_iter()
        .map(|start| start.join().unwrap())
        .collect();
    let keys: Vec<String> = nodes
        .iter()
        .flat_map(|node| {
            node.stdout_lines
                .iter()
                .filter(|line| line.starts_with("mv_"))
                .cloned()
        })
        .collect();
    assert_eq!(keys.len(), 1, "exactly one node bootstraps: {keys:?}");
    let store = holder;
    let admins = store
        .tenants()
        .unwrap()
        .into_iter()
        .filter(|tenant| tenant.admin)
        .count();
    assert_eq!(admins, 1);
    // The node that waited loaded the admin tenant the other one created.
    for node in &nodes {
        let me = expect_status(node.client(&keys[0]).get("/v1/memory/admin/me"), 200);
        assert_eq!(me["admin"], true);
    }
}
