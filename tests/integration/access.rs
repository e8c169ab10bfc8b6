//! Access: owner and agent keys, collection grants, per-key rate limits and the audit log.

use serde_json::{json, Value};

use crate::support::{
    create_memory, expect_error, expect_status, list_ids, memories_path, new_tenant, shared,
    start_in_process, tenant_on, unique, Client, TestServer,
};

fn create_key(owner: &Client, base_url: &str, label: &str, read_only: bool) -> (Client, String) {
    let created = expect_status(
        owner.post(
            "/v1/memory/keys",
            &json!({"label": label, "read_only": read_only}),
        ),
        201,
    );
    let secret = created["key"].as_str().expect("key");
    (
        Client::new(base_url, Some(secret)),
        created["id"].as_str().expect("id").to_owned(),
    )
}

fn grants_path(collection: &str) -> String {
    format!("/v1/memory/collections/{collection}/grants")
}

fn search_ids(client: &Client, collection: Option<&str>, query: &str) -> Vec<String> {
    let path = match collection {
        Some(name) => format!("/v1/memory/collections/{name}/search"),
        None => "/v1/memory/search".to_owned(),
    };
    let body = expect_status(
        client.post(&path, &json!({"query": query, "mode": "text", "limit": 10})),
        200,
    );
    body["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|hit| hit["id"].as_str().expect("id").to_owned())
        .collect()
}

#[test]
fn grants_restrict_a_collection_per_agent_and_reopen_it_when_the_last_goes() {
    let owner = new_tenant();
    let base = &shared().base_url;
    let (granted, granted_id) = create_key(&owner, base, "granted", false);
    let (reader, reader_id) = create_key(&owner, base, "reader", false);
    let (outsider, _) = create_key(&owner, base, "outsider", false);
    let vault = unique("vault");
    let open = unique("open");
    let secret = create_memory(
        &owner,
        &vault,
        json!({"text": "The zephyrine vault code is 4471."}),
    );
    let visible = create_memory(
        &owner,
        &open,
        json!({"text": "The zephyrine spare key is under the mat."}),
    );

    let listed = expect_status(owner.get(&grants_path(&vault)), 200);
    assert_eq!(listed["restricted"], json!(false));
    assert_eq!(listed["grants"], json!([]));

    let body = json!({"agent_key_id": granted_id, "can_read": true, "can_write": true});
    let restricted = expect_status(owner.put(&grants_path(&vault), &body), 200);
    assert_eq!(restricted["restricted"], json!(true));
    assert_eq!(restricted["grants"][0]["label"], json!("granted"));
    let body = json!({"agent_key_id": reader_id, "can_read": true, "can_write": false});
    expect_status(owner.put(&grants_path(&vault), &body), 200);

    // The granted agent reads and writes; the read-only grant reads only; the outsider
    // gets 403 everywhere on the collection and never sees it tenant-wide.
    assert_eq!(
        list_ids(&granted, &vault, ""),
        vec![secret["id"].as_str().unwrap()]
    );
    create_memory(
        &granted,
        &vault,
        json!({"text": "Granted agents may write."}),
    );
    assert_eq!(search_ids(&reader, Some(&vault), "zephyrine").len(), 1);
    let detail = expect_error(
        reader.post(&memories_path(&vault), &json!({"text": "Not allowed."})),
        403,
    );
    assert!(detail.contains("can_write"), "{detail}");
    let memory = format!(
        "{}/{}",
        memories_path(&vault),
        secret["id"].as_str().unwrap()
    );
    for response in [
        outsider.get(&memories_path(&vault)),
        outsider.get(&memory),
        outsider.get(&format!("/v1/memory/collections/{vault}/health")),
        outsider.get(&format!("/v1/memory/collections/{vault}/summary")),
        outsider.get(&grants_path(&vault)),
        outsider.post(
            &format!("/v1/memory/collections/{vault}/search"),
            &json!({"query": "vault"}),
        ),
        outsider.patch(&memory, &json!({"text": "Overwritten."})),
        outsider.delete(&memory),
        outsider.delete(&format!("/v1/memory/collections/{vault}")),
    ] {
        let text = expect_error(response, 403);
        assert!(!text.contains("4471"), "{text}");
    }
    let seen = search_ids(&outsider, None, "zephyrine");
    assert!(
        seen.contains(&visible["id"].as_str().unwrap().to_owned()),
        "{seen:?}"
    );
    assert!(
        !seen.contains(&secret["id"].as_str().unwrap().to_owned()),
        "{seen:?}"
    );
    let names = expect_status(outsider.get("/v1/memory/collections"), 200).to_string();
    assert!(!names.contains(&vault) && names.contains(&open), "{names}");
    // The owner key is never restricted.
    assert_eq!(search_ids(&owner, None, "zephyrine").len(), 2);
    assert_eq!(list_ids(&owner, &vault, "").len(), 2);

    // Only the owner manages grants; an agent cannot grant itself access.
    let outsider_id = expect_status(outsider.get("/v1/memory/admin/me"), 200)["key"]["id"].clone();
    let escalation = json!({"agent_key_id": outsider_id, "can_read": true, "can_write": true});
    expect_error(granted.put(&grants_path(&vault), &escalation), 403);
    expect_error(
        granted.delete(&format!("{}/{granted_id}", grants_path(&vault))),
        403,
    );

    expect_status(
        owner.delete(&format!("{}/{granted_id}", grants_path(&vault))),
        204,
    );
    expect_error(
        owner.delete(&format!("{}/{granted_id}", grants_path(&vault))),
        404,
    );
    expect_error(granted.get(&memories_path(&vault)), 403);
    expect_status(
        owner.delete(&format!("{}/{reader_id}", grants_path(&vault))),
        204,
    );
    let reopened = expect_status(owner.get(&grants_path(&vault)), 200);
    assert_eq!(reopened["restricted"], json!(false));
    assert_eq!(list_ids(&outsider, &vault, "").len(), 2);
}

#[test]
fn grant_requests_are_validated() {
    let owner = new_tenant();
    let other = new_tenant();
    let collection = unique("checked");
    create_memory(&owner, &collection, json!({"text": "Grant validation."}));
    let (_, key_id) = create_key(&owner, &shared().base_url, "agent", false);
    let path = grants_path(&collection);
    for body in [
        json!({"agent_key_id": key_id, "can_read": "yes", "can_write": true}),
        json!({"agent_key_id": key_id, "can_read": true}),
        json!({"agent_key_id": "", "can_read": true, "can_write": true}),
        json!({"agent_key_id": key_id, "can_read": true, "can_write": true, "admin": true}),
    ] {
        expect_error(owner.put(&path, &body), 422);
    }
    // A body naming no key of the tenant is invalid (the collection itself exists).
    let unknown = json!({"agent_key_id": "key_nope", "can_read": true, "can_write": true});
    expect_error(owner.put(&path, &unknown), 422);
    // Another tenant's key cannot be granted, and another tenant's collection is not found.
    let foreign_key = expect_status(other.get("/v1/memory/admin/me"), 200)["key"]["id"].clone();
    let foreign = json!({"agent_key_id": foreign_key, "can_read": true, "can_write": true});
    expect_error(owner.put(&path, &foreign), 422);
    expect_error(other.get(&path), 404);
    let missing = grants_path(&unique("missing"));
    let grant = json!({"agent_key_id": key_id, "can_read": true, "can_write": true});
    expect_error(owner.put(&missing, &grant), 404);
    assert_eq!(
        expect_status(owner.get(&path), 200)["restricted"],
        json!(false)
    );
}

#[test]
fn agent_keys_cannot_manage_keys_webhooks_or_settings_and_the_owner_key_stays() {
    let owner = new_tenant();
    let base = &shared().base_url;
    let (agent, agent_id) = create_key(&owner, base, "agent", false);
    let owner_id = expect_status(owner.get("/v1/memory/admin/me"), 200)["key"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let keys = expect_status(owner.get("/v1/memory/keys"), 200);
    let owners: Vec<&Value> = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|key| key["owner"] == json!(true))
        .collect();
    assert_eq!(owners.len(), 1, "{keys}");
    assert_eq!(owners[0]["id"], json!(owner_id));

    expect_error(
        agent.post("/v1/memory/keys", &json!({"label": "sneaky"})),
        403,
    );
    expect_error(agent.delete(&format!("/v1/memory/keys/{owner_id}")), 403);
    expect_error(
        agent.put("/v1/memory/spend-cap", &json!({"monthly_usd": 1})),
        403,
    );
    expect_error(
        agent.put(
            "/v1/memory/webhook/config",
            &json!({"url": "https://example.com/h"}),
        ),
        403,
    );
    // The owner key cannot be revoked while agent keys remain: it is the only one that
    // can manage them. Rotating keeps it the owner.
    let detail = expect_error(owner.delete(&format!("/v1/memory/keys/{owner_id}")), 409);
    assert!(detail.contains("owner"), "{detail}");
    let rotated = expect_status(owner.post("/v1/memory/admin/rotate-key", &json!({})), 200);
    assert_eq!(rotated["owner"], json!(true), "{rotated}");
    let owner = Client::new(base, rotated["key"].as_str());
    expect_status(owner.delete(&format!("/v1/memory/keys/{agent_id}")), 200);
    expect_error(agent.get("/v1/memory/collections"), 401);
}

fn limited_server() -> TestServer {
    start_in_process(|config| {
        config.rate_limit.per_minute = 1000;
        config.rate_limit.tiers.insert("free".to_owned(), 5);
    })
}

fn header(response: &reqwest::blocking::Response, name: &str) -> u64 {
    response
        .headers()
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn each_key_has_its_own_per_minute_window_and_429_says_when_to_retry() {
    let server = limited_server();
    let first = tenant_on(&server);
    let second = tenant_on(&server);
    let (same_tenant_agent, _) = create_key(&first, &server.base_url, "agent", false);
    // A request may straddle a minute boundary: retry the whole run once if it did.
    for attempt in 0..2 {
        let mut resets = std::collections::BTreeSet::new();
        let mut remaining = Vec::new();
        let mut refused = None;
        // create_key above used one of `first`'s requests in its window at attempt 0.
        for _ in 0..6 {
            let response = first.get("/v1/memory/collections");
            resets.insert(header(&response, "ratelimit-reset"));
            assert_eq!(header(&response, "ratelimit-limit"), 5);
            if response.status().as_u16() == 429 {
                let retry_after = header(&response, "retry-after");
                assert!((1..=60).contains(&retry_after), "{retry_after}");
                refused = Some(expect_error(response, 429));
                break;
            }
            remaining.push(header(&response, "ratelimit-remaining"));
        }
        if resets.len() > 1 {
            assert_eq!(attempt, 0, "two window changes in one run");
            std::thread::sleep(std::time::Duration::from_secs(61));
            continue;
        }
        let detail = refused.expect("the sixth request in a minute is refused");
        assert!(detail.contains("rate limit"), "{detail}");
        assert!(
            remaining.windows(2).all(|pair| pair[1] + 1 == pair[0]),
            "{remaining:?}"
        );
        assert_eq!(remaining.last(), Some(&0));
        // Another key, of the same tenant or another, is not throttled.
        let other = second.get("/v1/memory/collections");
        assert_eq!(other.status().as_u16(), 200);
        assert!(header(&other, "ratelimit-remaining") >= 3);
        assert_eq!(
            same_tenant_agent
                .get("/v1/memory/collections")
                .status()
                .as_u16(),
            200
        );
        // A refused write writes nothing.
        let collection = unique("limited");
        let response = first.post(&memories_path(&collection), &json!({"text": "Refused."}));
        if response.status().as_u16() == 429 {
            assert_eq!(
                second
                    .get(&format!("/v1/memory/collections/{collection}"))
                    .status()
                    .as_u16(),
                404
            );
        }
        return;
    }
}

#[test]
fn unauthenticated_requests_carry_no_rate_limit_headers() {
    let response = Client::anonymous().get("/v1/memory/collections");
    assert_eq!(response.status().as_u16(), 401);
    assert!(response.headers().get("ratelimit-limit").is_none());
    let response = new_tenant().get("/v1/memory/collections");
    assert!(response.headers().get("ratelimit-limit").is_some());
}

#[test]
fn the_audit_log_records_who_did_what_and_how_it_ended() {
    let server = start_in_process(|_| {});
    let admin = Client::new(&server.base_url, Some(&server.admin_key));
    let (agent, agent_id) = create_key(&admin, &server.base_url, "auditor-bot", false);
    let (reader, reader_id) = create_key(&admin, &server.base_url, "reader-bot", true);
    let collection = unique("audited");
    let memory = create_memory(&agent, &collection, json!({"text": "Audited write."}));
    let path = format!(
        "{}/{}",
        memories_path(&collection),
        memory["id"].as_str().unwrap()
    );
    expect_status(agent.patch(&path, &json!({"importance": 0.9})), 200);
    expect_error(reader.delete(&path), 403);
    expect_status(
        admin.put(
            &grants_path(&collection),
            &json!({"agent_key_id": agent_id, "can_read": true, "can_write": true}),
        ),
        200,
    );
    expect_status(agent.get(&path), 200);
    expect_status(
        agent.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &json!({"query": "audited"}),
        ),
        200,
    );

    let log = expect_status(admin.get("/v1/memory/admin/audit?days=1&limit=50"), 200);
    let entries = log["entries"].as_array().expect("entries");
    let summary: Vec<(String, String, String)> = entries
        .iter()
        .map(|entry| {
            (
                entry["action"].as_str().unwrap().to_owned(),
                entry["agent_label"].as_str().unwrap().to_owned(),
                entry["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("grant.put", "bootstrap", "success"),
        ("memory.delete", "reader-bot", "denied"),
        ("memory.update", "auditor-bot", "success"),
        ("memory.create", "auditor-bot", "success"),
        ("key.create", "bootstrap", "success"),
        ("key.create", "bootstrap", "success"),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
    assert_eq!(summary, expected, "newest first, reads not logged: {log}");
    assert_eq!(entries[1]["agent_id"], json!(reader_id));
    assert_eq!(entries[1]["status"], json!(403));
    assert_eq!(entries[2]["resource"], json!(path));
    let at = |index: usize| entries[index]["at"].as_str().unwrap().to_owned();
    assert!(at(0) >= at(1) && at(1) >= at(2));

    let limited = expect_status(admin.get("/v1/memory/admin/audit?limit=2"), 200);
    assert_eq!(limited["entries"].as_array().unwrap().len(), 2);
    for query in [
        "days=0",
        "days=4000",
        "limit=0",
        "limit=1001",
        "days=x",
        "colour=red",
    ] {
        expect_error(admin.get(&format!("/v1/memory/admin/audit?{query}")), 422);
    }
    expect_error(agent.get("/v1/memory/admin/audit"), 403);
    let tenant = tenant_on(&server);
    expect_error(tenant.get("/v1/memory/admin/audit"), 403);
    // An operator reads another tenant's log by id; each tenant's log is its own.
    create_memory(&tenant, "notes", json!({"text": "The tenant's own write."}));
    let tenant_id = expect_status(tenant.get("/v1/memory/admin/me"), 200)["id"].clone();
    let theirs = expect_status(
        admin.get(&format!(
            "/v1/memory/admin/audit?tenant_id={}",
            tenant_id.as_str().unwrap()
        )),
        200,
    );
    let actions: Vec<&str> = theirs["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, vec!["memory.create"], "{theirs}");
    expect_error(
        admin.get("/v1/memory/admin/audit?tenant_id=ten_nobody"),
        404,
    );
}

#[test]
fn the_limiter_fails_open_when_it_cannot_count() {
    // Room for one key per window: the admin key creating the tenants fills it, so the
    // tenants' keys find the limiter full (unavailable) and are let through, unlimited.
    let server = start_in_process(|config| {
        config.rate_limit.max_tracked_keys = 1;
        config.rate_limit.tiers.insert("free".to_owned(), 1);
    });
    for _ in 0..3 {
        let tenant = tenant_on(&server);
        let response = tenant.get("/v1/memory/collections");
        if response.headers().get("ratelimit-limit").is_some() {
            // A new window began in between and this key took the slot: again.
            continue;
        }
        assert_eq!(response.status().as_u16(), 200);
        return;
    }
    panic!("the limiter never reported itself full");
}

#[test]
fn a_rotated_agent_key_keeps_its_grants_and_jobs_follow_their_collection() {
    let owner = new_tenant();
    let base = &shared().base_url;
    let (agent, agent_id) = create_key(&owner, base, "rotating", false);
    let (outsider, _) = create_key(&owner, base, "outsider", false);
    let vault = unique("vault");
    create_memory(&owner, &vault, json!({"text": "Kept behind a grant."}));
    let grant = json!({"agent_key_id": agent_id, "can_read": true, "can_write": true});
    expect_status(owner.put(&grants_path(&vault), &grant), 200);

    let rotated = expect_status(agent.post("/v1/memory/admin/rotate-key", &json!({})), 200);
    let agent = Client::new(base, rotated["key"].as_str());
    assert_eq!(list_ids(&agent, &vault, "").len(), 1);
    let grants = expect_status(owner.get(&grants_path(&vault)), 200);
    assert_eq!(
        grants["grants"][0]["agent_key_id"], rotated["id"],
        "{grants}"
    );

    // A remember job shows the facts it stored: not to an agent without a grant.
    let job = expect_status(
        agent.post(
            &format!("/v1/memory/collections/{vault}/remember"),
            &json!({"content": "My favorite color is teal."}),
        ),
        202,
    );
    let job_path = format!("/v1/memory/extract/job/{}", job["job_id"].as_str().unwrap());
    expect_status(agent.get(&job_path), 200);
    let detail = expect_error(outsider.get(&job_path), 403);
    assert!(!detail.contains("teal"), "{detail}");
}
