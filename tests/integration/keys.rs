//! API keys as agent identities: create (secret once), list (masked), agents, revoke (soft,
//! never the last active key), rotate, read-only keys, and created_by stamping.

use serde_json::{json, Value};

use crate::support::{
    expect_error, expect_status, memories_path, new_tenant, shared, unique, Client,
};

fn create_key(client: &Client, body: Value) -> (Client, Value) {
    let created = expect_status(client.post("/v1/memory/keys", &body), 201);
    let secret = created["key"].as_str().expect("key").to_owned();
    assert!(secret.starts_with("mv_"), "{created}");
    (Client::new(&shared().base_url, Some(&secret)), created)
}

fn own_key_id(client: &Client) -> String {
    expect_status(client.get("/v1/memory/admin/me"), 200)["key"]["id"]
        .as_str()
        .expect("key id")
        .to_owned()
}

#[test]
fn keys_are_created_once_listed_masked_and_stamp_their_writes() {
    let client = new_tenant();
    let (bot, created) = create_key(&client, json!({"label": "helper-bot"}));
    assert_eq!(created["label"], json!("helper-bot"));
    assert_eq!(created["read_only"], json!(false));
    assert_eq!(created["active"], json!(true));
    let secret = bot.key().to_owned();

    let listed = client.get("/v1/memory/keys");
    let text = listed.text().expect("body");
    assert!(
        !text.contains(&secret) && !text.contains(&secret[3..]),
        "{text}"
    );
    assert!(!text.contains(&client.key()[3..]), "{text}");
    let listed: Value = serde_json::from_str(&text).expect("json");
    let keys = listed["keys"].as_array().expect("keys");
    assert_eq!(keys.len(), 2, "{listed}");
    assert!(keys
        .iter()
        .all(|key| key["masked"].as_str().unwrap().ends_with('…')));

    let agents = expect_status(client.get("/v1/memory/agents"), 200);
    let labels: Vec<&str> = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|agent| agent["label"].as_str().unwrap())
        .collect();
    assert!(labels.contains(&"helper-bot"), "{agents}");
    assert!(!agents.to_string().contains(&secret[3..]));

    let collection = unique("stamped");
    let memory = expect_status(
        bot.post(
            &memories_path(&collection),
            &json!({"text": "Written by the bot."}),
        ),
        201,
    );
    assert_eq!(
        memory["created_by"],
        json!({"id": created["id"], "label": "helper-bot"})
    );
    let bulk = expect_status(
        bot.post(
            &format!("{}/bulk", memories_path(&collection)),
            &json!([{"text": "Bulk one."}, {"text": "Bulk two."}]),
        ),
        201,
    );
    for memory in bulk["memories"].as_array().unwrap() {
        assert_eq!(memory["created_by"]["id"], created["id"]);
    }
}

#[test]
fn a_read_only_key_reads_and_searches_but_every_write_is_refused() {
    let client = new_tenant();
    let collection = unique("ro");
    let memory = expect_status(
        client.post(
            &memories_path(&collection),
            &json!({"text": "Do not change me."}),
        ),
        201,
    );
    let id = memory["id"].as_str().unwrap();
    let (reader, created) = create_key(&client, json!({"label": "reader", "read_only": true}));
    assert_eq!(created["read_only"], json!(true));

    expect_status(
        reader.get(&format!("{}/{id}", memories_path(&collection))),
        200,
    );
    expect_status(
        reader.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &json!({"query": "change", "mode": "text"}),
        ),
        200,
    );
    let writes = [
        reader.post(&memories_path(&collection), &json!({"text": "Sneaky."})),
        reader.patch(
            &format!("{}/{id}", memories_path(&collection)),
            &json!({"text": "Changed."}),
        ),
        reader.delete(&format!("{}/{id}", memories_path(&collection))),
        reader.post(
            &format!("/v1/memory/collections/{collection}/remember?sync=true"),
            &json!({"content": "My favorite color is red."}),
        ),
        reader.post(
            &format!("/v1/memory/collections/{collection}/dedup"),
            &json!({"dry_run": false}),
        ),
    ];
    for response in writes {
        let detail = expect_error(response, 403);
        assert!(detail.contains("read-only"), "{detail}");
    }
    // Managing keys needs the owner key, which no agent key is.
    for response in [
        reader.post("/v1/memory/keys", &json!({"label": "escalate"})),
        reader.delete(&format!("/v1/memory/keys/{}", own_key_id(&client))),
    ] {
        let detail = expect_error(response, 403);
        assert!(detail.contains("owner key"), "{detail}");
    }
    let after = expect_status(
        client.get(&format!("{}/{id}", memories_path(&collection))),
        200,
    );
    assert_eq!(after["text"], json!("Do not change me."));
    let listed = expect_status(client.get(&memories_path(&collection)), 200);
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(1),
        "nothing was written"
    );
    assert_eq!(
        expect_status(client.get("/v1/memory/keys"), 200)["keys"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[test]
fn revoking_is_soft_immediate_and_never_the_last_active_key() {
    let client = new_tenant();
    let (doomed, created) = create_key(&client, json!({"label": "short-lived"}));
    let id = created["id"].as_str().unwrap().to_owned();
    expect_status(doomed.get("/v1/memory/collections"), 200);

    let revoked = expect_status(client.delete(&format!("/v1/memory/keys/{id}")), 200);
    assert_eq!(revoked["active"], json!(false));
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    expect_error(doomed.get("/v1/memory/collections"), 401);
    let keys = expect_status(client.get("/v1/memory/keys"), 200);
    assert!(
        keys["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|key| key["id"] == json!(id)),
        "a revoked key stays listed"
    );
    let agents = expect_status(client.get("/v1/memory/agents"), 200);
    assert!(!agents.to_string().contains(&id), "{agents}");
    expect_error(client.delete(&format!("/v1/memory/keys/{id}")), 409);
    expect_error(client.delete("/v1/memory/keys/key_nonexistent"), 404);

    let detail = expect_error(
        client.delete(&format!("/v1/memory/keys/{}", own_key_id(&client))),
        409,
    );
    assert!(detail.contains("last active key"), "{detail}");
    expect_status(client.get("/v1/memory/collections"), 200);

    // Another tenant's key is not found here.
    let other = new_tenant();
    let (_, theirs) = create_key(&other, json!({"label": "theirs"}));
    expect_error(
        client.delete(&format!(
            "/v1/memory/keys/{}",
            theirs["id"].as_str().unwrap()
        )),
        404,
    );
}

#[test]
fn rotation_issues_a_new_key_and_kills_the_old_one_at_once() {
    let client = new_tenant();
    let collection = unique("rotate");
    expect_status(
        client.post(
            &memories_path(&collection),
            &json!({"text": "Survives rotation."}),
        ),
        201,
    );
    let (bot, created) = create_key(&client, json!({"label": "rotating-bot", "read_only": true}));
    let rotated = expect_status(bot.post("/v1/memory/admin/rotate-key", &json!({})), 200);
    let secret = rotated["key"].as_str().unwrap();
    assert_ne!(secret, bot.key());
    assert_eq!(rotated["label"], json!("rotating-bot"));
    assert_eq!(
        rotated["read_only"],
        json!(true),
        "rotation keeps the access"
    );
    assert_ne!(rotated["id"], created["id"]);
    expect_error(bot.get("/v1/memory/collections"), 401);
    let fresh = Client::new(&shared().base_url, Some(secret));
    assert_eq!(
        expect_status(fresh.get(&memories_path(&collection)), 200)
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn key_requests_are_validated() {
    let client = new_tenant();
    for body in [
        json!({}),
        json!({"label": ""}),
        json!({"label": "   "}),
        json!({"label": "x".repeat(201)}),
        json!({"label": "x", "read_only": "sometimes"}),
        json!({"label": "x", "expires_at": "2020-01-01T00:00:00Z"}),
        json!({"label": "x", "expires_at": "tomorrow"}),
        json!({"label": "x", "unknown": 1}),
    ] {
        expect_error(client.post("/v1/memory/keys", &body), 422);
    }
    let (expiring, created) = create_key(
        &client,
        json!({"label": "temp", "expires_at": "2999-01-01T00:00:00Z"}),
    );
    assert_eq!(created["expires_at"], json!("2999-01-01T00:00:00Z"));
    expect_status(expiring.get("/v1/memory/collections"), 200);
    let anonymous = Client::new(&shared().base_url, None);
    expect_error(anonymous.get("/v1/memory/keys"), 401);
    expect_error(anonymous.get("/v1/memory/agents"), 401);
    expect_error(
        anonymous.post("/v1/memory/admin/rotate-key", &json!({})),
        401,
    );
}
