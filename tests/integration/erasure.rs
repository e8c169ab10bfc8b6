//! Account erasure (`POST /v1/memory/admin/delete-account`), black-box: refusals that
//! erase nothing (a wrong, empty, missing or other tenant's `confirm`; read-only and agent
//! keys; no key; the operator's admin account), every key dead before the answer, other
//! tenants untouched; and an erasure cut by kill -9 half-way that completes after the
//! restart and leaves nothing of the tenant in the store, the indexes or the blob
//! directory (walked on disk).

use std::path::Path;
use std::time::{Duration, Instant};

use memvault_storage::{AccountStore, MetaStore, SledStore, TenantId};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{
    expect_error, expect_status, memories_path, shared, temp_data_dir, tenant_on, unique, Client,
    ServerProcess,
};

const DELETE: &str = "/v1/memory/admin/delete-account";
const ADMIN_KEY: &str = "mv_erasure_admin_key_0123456789abcdef";

fn name_of(client: &Client) -> String {
    expect_status(client.get("/v1/memory/admin/me"), 200)["name"]
        .as_str()
        .expect("name")
        .to_owned()
}

fn id_of(client: &Client) -> String {
    expect_status(client.get("/v1/memory/admin/me"), 200)["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

fn new_key(client: &Client, base_url: &str, body: Value) -> Client {
    let created = expect_status(client.post("/v1/memory/keys", &body), 201);
    Client::new(base_url, created["key"].as_str())
}

fn remember(client: &Client, collection: &str, text: &str) -> String {
    let memory = expect_status(
        client.post(&memories_path(collection), &json!({"text": text})),
        201,
    );
    memory["id"].as_str().expect("id").to_owned()
}

fn still_there(client: &Client, collection: &str, id: &str) {
    expect_status(
        client.get(&format!("{}/{id}", memories_path(collection))),
        200,
    );
}

#[test]
fn refused_erasures_erase_nothing() {
    let server = shared();
    let owner = tenant_on(server);
    let other = tenant_on(server);
    let name = name_of(&owner);
    let id = remember(
        &owner,
        "keep",
        "This memory survives every refused erasure.",
    );
    let reader = new_key(
        &owner,
        &server.base_url,
        json!({"label": "reader", "read_only": true}),
    );
    let agent = new_key(&owner, &server.base_url, json!({"label": "agent"}));

    for (confirm, what) in [
        (json!(format!("{name}-not")), "a wrong name"),
        (json!(""), "an empty name"),
        (json!(name_of(&other)), "another tenant's name"),
        (json!(name.to_uppercase()), "the name in other case"),
    ] {
        let detail = expect_error(owner.post(DELETE, &json!({"confirm": confirm})), 422);
        assert!(detail.contains(&name), "{what}: {detail}");
    }
    expect_error(owner.post(DELETE, &json!({})), 422);
    expect_error(owner.post(DELETE, &json!({"confirm": 7})), 422);
    expect_error(
        owner.post(DELETE, &json!({"confirm": name, "extra": 1})),
        422,
    );
    let refused = reader.post(DELETE, &json!({"confirm": name}));
    assert_eq!(refused.status().as_u16(), 403);
    let refused = agent.post(DELETE, &json!({"confirm": name}));
    assert_eq!(refused.status().as_u16(), 403);
    expect_error(
        Client::anonymous().post(DELETE, &json!({"confirm": name})),
        401,
    );
    let admin = Client::new(&server.base_url, Some(&server.admin_key));
    let admin_name = name_of(&admin);
    let body: Value = admin
        .post(DELETE, &json!({"confirm": admin_name}))
        .json()
        .unwrap();
    assert_eq!(body["code"], "admin_account_protected", "{body}");
    expect_status(admin.get("/v1/memory/admin/me"), 200);

    still_there(&owner, "keep", &id);
    expect_status(reader.get("/v1/memory/admin/me"), 200);
    expect_status(other.get("/v1/memory/admin/me"), 200);
}

#[test]
fn an_erasure_kills_every_key_at_once_and_spares_other_tenants() {
    let server = shared();
    let owner = tenant_on(server);
    let bystander = tenant_on(server);
    let word = unique("zyxomma");
    remember(
        &owner,
        "gone",
        &format!("{word} is a memory of an erased tenant."),
    );
    let agent = new_key(&owner, &server.base_url, json!({"label": "agent"}));
    let kept = remember(
        &bystander,
        "gone",
        &format!("{word} stays with the bystander."),
    );
    let name = name_of(&owner);

    let started = expect_status(owner.post(DELETE, &json!({"confirm": name})), 202);
    assert_eq!(started["status"], "erasing", "{started}");
    assert_eq!(started["name"], json!(name), "{started}");
    // Dead before the answer came back: no settling.
    expect_error(owner.get("/v1/memory/admin/me"), 401);
    expect_error(agent.get("/v1/memory/collections"), 401);
    expect_error(owner.post(DELETE, &json!({"confirm": name})), 401);

    still_there(&bystander, "gone", &kept);
    let results = expect_status(
        bystander.post(
            "/v1/memory/search",
            &json!({"query": word, "mode": "text", "limit": 10}),
        ),
        200,
    );
    let texts: Vec<&str> = results["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|result| result["text"].as_str())
        .collect();
    assert_eq!(texts.len(), 1, "{results:#}");
    assert!(texts[0].contains("bystander"), "{results:#}");
}

/// Every path under `root` whose name holds `needle`.
fn paths_naming(root: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.to_string_lossy().contains(needle) {
                found.push(path.display().to_string());
            }
            if path.is_dir() {
                pending.push(path);
            }
        }
    }
    found
}

fn drop_files(client: &Client, collection: &str, files: &[(&str, String)]) {
    let boundary = unique("boundary");
    let mut body = Vec::new();
    for (name, text) in files {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; \
                 filename=\"{name}\"\r\nContent-Type: text/plain\r\n\r\n{text}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    let response = client
        .request(
            Method::POST,
            &format!("/v1/memory/collections/{collection}/drop"),
        )
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .timeout(Duration::from_secs(120))
        .send()
        .expect("drop");
    expect_status(response, 201);
}

/// The erasure job's `done` count in the operator metrics.
fn erasures_done(admin: &Client) -> u64 {
    let metrics = expect_status(admin.get("/v1/memory/admin/metrics"), 200);
    metrics["jobs"]["erasure"]["done"].as_u64().unwrap_or(0)
}

#[test]
fn an_erasure_cut_by_kill_9_completes_after_a_restart_and_leaves_nothing() {
    let (_guard, data_dir) = temp_data_dir();
    // Small, paced writes, so the kill lands while records are still being removed.
    let environment = [
        ("MEMVAULT__ACCOUNT__ERASURE_BATCH", "10"),
        ("MEMVAULT__ACCOUNT__ERASURE_PAUSE_MS", "150"),
    ];
    let mut first = environment.to_vec();
    first.push(("MEMVAULT_BOOTSTRAP_KEY", ADMIN_KEY));
    let mut server = ServerProcess::start(&data_dir, &first).expect("server starts");
    let admin = server.client(ADMIN_KEY);
    let create = |name: &str| {
        let created = expect_status(
            admin.post(
                "/v1/memory/admin/tenants",
                &json!({"name": name, "email": format!("{name}@example.com")}),
            ),
            201,
        );
        server.client(created["api_key"].as_str().expect("api_key"))
    };
    let doomed = create(&unique("doomed"));
    let bystander = create(&unique("bystander"));
    for collection in ["notes", "journal", "work"] {
        let items: Vec<Value> = (0..100)
            .map(|n| json!({"text": format!("Entry {n} of the {collection} collection about topic {}.", n % 7)}))
            .collect();
        expect_status(
            doomed.post(
                &format!("{}/bulk", memories_path(collection)),
                &json!(items),
            ),
            201,
        );
    }
    let files: Vec<(&str, String)> = vec![
        (
            "plan.txt",
            "The garden plan: tomatoes by the south wall.".to_owned(),
        ),
        (
            "recipe.txt",
            "Quince jelly needs two hours of simmering.".to_owned(),
        ),
    ];
    drop_files(&doomed, "docs", &files);
    drop_files(&bystander, "docs", &files);
    remember(&bystander, "notes", "The bystander's memory stays.");
    expect_status(doomed.get("/v1/memory/email/address"), 200);
    let doomed_id = id_of(&doomed);
    let bystander_id = id_of(&bystander);
    let name = name_of(&doomed);
    assert!(!paths_naming(&data_dir.join("blobs"), &doomed_id).is_empty());
    assert!(!paths_naming(&data_dir.join("indexes"), &doomed_id).is_empty());

    expect_status(doomed.post(DELETE, &json!({"confirm": name})), 202);
    expect_error(doomed.get("/v1/memory/admin/me"), 401);
    std::thread::sleep(Duration::from_millis(1500));
    server.kill_hard();

    let tenant = TenantId::from_stored(&doomed_id);
    {
        let store = SledStore::open(&data_dir.join("store")).expect("store opens");
        let record = store
            .tenants()
            .unwrap()
            .into_iter()
            .find(|record| record.id == tenant)
            .expect("the record outlives a cut erasure");
        assert!(record.erasing_since.is_some(), "{record:?}");
        let left = store.tenant_bytes(&tenant).unwrap();
        assert!(
            left > 0,
            "the erasure was done before the kill: the test proves nothing"
        );
        println!("killed with {left} bytes of the tenant's records left");
    }

    let mut server = ServerProcess::start(&data_dir, &environment).expect("server restarts");
    let admin = server.client(ADMIN_KEY);
    let deadline = Instant::now() + Duration::from_secs(120);
    while erasures_done(&admin) < 1 {
        assert!(
            Instant::now() < deadline,
            "the erasure did not complete after the restart"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let bystander = server.client(bystander.key());
    assert_eq!(id_of(&bystander), bystander_id);
    let listed = expect_status(bystander.get(&memories_path("docs")), 200);
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed:#}");
    expect_error(server.client(doomed.key()).get("/v1/memory/admin/me"), 401);
    server.stop_gracefully();

    let store = SledStore::open(&data_dir.join("store")).expect("store opens");
    assert!(
        !store
            .tenants()
            .unwrap()
            .iter()
            .any(|record| record.id == tenant),
        "the tenant record outlived its erasure"
    );
    assert_eq!(store.tenant_bytes(&tenant).unwrap(), 0);
    assert_eq!(
        store.email_address_of(&tenant).unwrap(),
        None,
        "the mail-in address outlived the erasure"
    );
    for part in ["blobs", "indexes"] {
        let left = paths_naming(&data_dir.join(part), &doomed_id);
        assert!(
            left.is_empty(),
            "{part} still name the erased tenant: {left:?}"
        );
        assert!(
            !paths_naming(&data_dir.join(part), &bystander_id).is_empty(),
            "the bystander's {part} went too"
        );
    }
}
