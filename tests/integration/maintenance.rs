//! Intelligent maintenance over HTTP: dedup, archive-stale, collection health, summary and
//! the service-wide memory health. Tests that age memories run a server of their own whose
//! clock they move; the others share the common server.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::Duration;
use memvault_types::clock::ManualClock;
use serde_json::{json, Value};

use crate::support::{
    create_memory, expect_error, expect_status, list_ids, memories_path, new_tenant,
    start_in_process_with_clock, tenant_on, unique, Client,
};

fn path(collection: &str, action: &str) -> String {
    format!("/v1/memory/collections/{collection}/{action}")
}

fn ids(values: &Value) -> BTreeSet<String> {
    values
        .as_array()
        .expect("array")
        .iter()
        .map(|value| {
            value
                .get("id")
                .unwrap_or(value)
                .as_str()
                .expect("id")
                .to_owned()
        })
        .collect()
}

fn memory(client: &Client, collection: &str, text: &str, importance: f64) -> String {
    let body = create_memory(
        client,
        collection,
        json!({"text": text, "importance": importance}),
    );
    body["id"].as_str().expect("id").to_owned()
}

fn set_flag(client: &Client, collection: &str, id: &str, action: &str, on: bool) {
    let field = if action == "pin" {
        "pinned"
    } else {
        "archived"
    };
    expect_status(
        client.post(
            &format!("{}/{id}/{action}", memories_path(collection)),
            &json!({ field: on }),
        ),
        200,
    );
}

fn health(client: &Client, collection: &str, query: &str) -> Value {
    let body = expect_status(
        client.get(&format!("{}{query}", path(collection, "health"))),
        200,
    );
    let [stale, expired, supersessions] =
        ["stale", "expired", "supersessions"].map(|field| body[field].as_u64().expect(field));
    assert_eq!(
        body["needs_attention"].as_u64(),
        Some(stale + expired + supersessions),
        "{body}"
    );
    body
}

const DOOR: &str = "The server room door code is 4821.";

#[test]
fn dedup_reports_clusters_then_deletes_only_the_non_keepers() {
    let client = new_tenant();
    let collection = unique("dedup");
    let pinned = memory(&client, &collection, DOOR, 0.1);
    let important = memory(&client, &collection, DOOR, 0.9);
    let plain = memory(
        &client,
        &collection,
        "the server room door code is 4821",
        0.5,
    );
    let unrelated = memory(
        &client,
        &collection,
        "The marathon route passes the old cathedral.",
        0.5,
    );
    set_flag(&client, &collection, &pinned, "pin", true);

    // An empty body is a dry run with the defaults.
    let dry = expect_status(
        client.post_raw(&path(&collection, "dedup"), b"", "application/json"),
        200,
    );
    assert_eq!(dry["dry_run"], json!(true), "{dry}");
    assert_eq!(dry["threshold"], json!(0.95));
    assert_eq!(dry["scanned"], json!(4));
    assert_eq!(dry["deleted"], json!(0));
    let clusters = dry["clusters"].as_array().expect("clusters");
    assert_eq!(clusters.len(), 1, "{dry}");
    assert_eq!(
        clusters[0]["keeper"]["id"],
        json!(pinned),
        "pinned is kept first"
    );
    assert_eq!(
        ids(&clusters[0]["duplicates"]),
        BTreeSet::from([important.clone(), plain.clone()])
    );
    for duplicate in clusters[0]["duplicates"].as_array().unwrap() {
        assert!(
            duplicate["similarity"].as_f64().unwrap() >= 0.95,
            "{duplicate}"
        );
    }
    assert_eq!(
        list_ids(&client, &collection, "").len(),
        4,
        "a dry run deletes nothing"
    );

    let applied = expect_status(
        client.post(&path(&collection, "dedup"), &json!({"dry_run": false})),
        200,
    );
    assert_eq!(applied["deleted"], json!(2), "{applied}");
    assert_eq!(
        ids(&applied["deleted_ids"]),
        BTreeSet::from([important.clone(), plain.clone()])
    );
    assert_eq!(
        list_ids(&client, &collection, "")
            .into_iter()
            .collect::<BTreeSet<_>>(),
        BTreeSet::from([pinned.clone(), unrelated])
    );
    expect_error(
        client.get(&format!("{}/{important}", memories_path(&collection))),
        404,
    );
    let found = expect_status(
        client.post(
            &path(&collection, "search"),
            &json!({"query": "door code", "mode": "text", "min_score": 0.0}),
        ),
        200,
    );
    assert_eq!(ids(&found["results"]), BTreeSet::from([pinned]));
    let again = expect_status(client.post(&path(&collection, "dedup"), &json!({})), 200);
    assert_eq!(again["clusters"], json!([]));
}

#[test]
fn dedup_keeps_the_most_important_then_the_newest() {
    let client = new_tenant();
    let collection = unique("dedup-keeper");
    let _low = memory(&client, &collection, DOOR, 0.2);
    let high = memory(&client, &collection, DOOR, 0.8);
    let body = expect_status(client.post(&path(&collection, "dedup"), &json!({})), 200);
    assert_eq!(body["clusters"][0]["keeper"]["id"], json!(high));

    let collection = unique("dedup-newest");
    let _older = memory(&client, &collection, DOOR, 0.5);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let newer = memory(&client, &collection, DOOR, 0.5);
    let body = expect_status(client.post(&path(&collection, "dedup"), &json!({})), 200);
    assert_eq!(body["clusters"][0]["keeper"]["id"], json!(newer));
    // A threshold of 1 still finds identical texts; archived memories are not compared.
    let body = expect_status(
        client.post(&path(&collection, "dedup"), &json!({"threshold": 1.0})),
        200,
    );
    assert_eq!(body["clusters"].as_array().map(Vec::len), Some(1), "{body}");
    set_flag(&client, &collection, &newer, "archive", true);
    let body = expect_status(client.post(&path(&collection, "dedup"), &json!({})), 200);
    assert_eq!(body["clusters"], json!([]));
    assert_eq!(body["scanned"], json!(1));
}

#[test]
fn maintenance_requests_are_validated_and_need_a_key() {
    let client = new_tenant();
    let collection = unique("maint-422");
    memory(&client, &collection, "Probe.", 0.5);
    for body in [
        json!({"threshold": 1.5}),
        json!({"threshold": -0.1}),
        json!({"threshold": "high"}),
        json!({"dry_run": "maybe"}),
        json!({"unknown": 1}),
        json!([]),
    ] {
        let detail = expect_error(client.post(&path(&collection, "dedup"), &body), 422);
        assert!(!detail.is_empty());
    }
    for body in [
        json!({"older_than_days": -1}),
        json!({"older_than_days": 36_501}),
        json!({"older_than_days": 1.5}),
        json!({"older_than_days": "old"}),
        json!({"dry_run": 1}),
        json!({"unknown": true}),
    ] {
        expect_error(client.post(&path(&collection, "archive-stale"), &body), 422);
    }
    for query in ["?stale_days=-1", "?stale_days=36501", "?stale_days=abc"] {
        expect_error(
            client.get(&format!("{}{query}", path(&collection, "health"))),
            422,
        );
    }
    for query in ["?limit=0", "?limit=201", "?limit=x"] {
        expect_error(
            client.get(&format!("{}{query}", path(&collection, "summary"))),
            422,
        );
    }
    let ghost = unique("ghost");
    let detail = expect_error(client.post(&path(&ghost, "dedup"), &json!({})), 404);
    assert!(detail.contains(&ghost), "{detail}");
    expect_error(client.post(&path(&ghost, "archive-stale"), &json!({})), 404);

    let anonymous = Client::new(&crate::support::shared().base_url, None);
    expect_error(anonymous.get(&path(&collection, "health")), 401);
    expect_error(anonymous.get(&path(&collection, "summary")), 401);
    expect_error(anonymous.post(&path(&collection, "dedup"), &json!({})), 401);
    expect_error(
        anonymous.post(&path(&collection, "archive-stale"), &json!({})),
        401,
    );
    expect_error(client.get("/v1/memory/admin/memory-health"), 403);
}

#[test]
fn unknown_collections_have_health_and_a_summary_that_say_so() {
    let client = new_tenant();
    let ghost = unique("ghost");
    let body = health(&client, &ghost, "");
    assert_eq!(body["exists"], json!(false));
    assert_eq!(body["total"], json!(0));
    let summary = expect_status(client.get(&path(&ghost, "summary")), 200);
    assert_eq!(summary["exists"], json!(false));
    assert_eq!(summary["based_on"], json!(0));
    // Another tenant's collection is unknown too.
    let other = new_tenant();
    let collection = unique("private");
    memory(&other, &collection, "Only mine.", 0.5);
    assert_eq!(health(&client, &collection, "")["exists"], json!(false));
    assert_eq!(health(&other, &collection, "")["total"], json!(1));
}

#[test]
fn the_summary_is_extractive_without_an_llm_and_cached_until_a_write() {
    let client = new_tenant();
    let collection = unique("summary");
    let texts = [
        "Invoices for the billing service are sent on the first of the month.",
        "The billing service retries failed card payments three times.",
        "Billing disputes go to the finance team within two days.",
        "We hiked the mountain trail above the lake in June.",
        "The mountain hut near the trail sleeps twelve hikers.",
        "Hiking boots must be waterproof for the mountain trail.",
    ];
    let mut created = Vec::new();
    for text in texts {
        created.push(memory(&client, &collection, text, 0.5));
    }
    let first = expect_status(client.get(&path(&collection, "summary")), 200);
    assert_eq!(first["exists"], json!(true));
    assert_eq!(first["generated_by"], json!("extractive"), "{first}");
    assert_eq!(first["based_on"], json!(6));
    let summary = first["summary"].as_str().unwrap();
    assert!(
        texts
            .iter()
            .any(|text| summary.contains(text.trim_end_matches('.'))),
        "the summary quotes a central memory: {summary}"
    );
    let themes: Vec<String> = first["themes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|theme| theme.as_str().unwrap().to_owned())
        .collect();
    assert!(!themes.is_empty(), "{first}");
    assert!(
        themes.iter().any(|theme| theme.contains("billing")
            || theme.contains("mountain")
            || theme.contains("trail")),
        "{themes:?}"
    );

    std::thread::sleep(std::time::Duration::from_millis(20));
    let cached = expect_status(client.get(&path(&collection, "summary")), 200);
    assert_eq!(cached["generated_at"], first["generated_at"]);

    let limited = expect_status(
        client.get(&format!("{}?limit=2", path(&collection, "summary"))),
        200,
    );
    assert_eq!(limited["based_on"], json!(2));

    set_flag(&client, &collection, &created[0], "archive", true);
    let after = expect_status(client.get(&path(&collection, "summary")), 200);
    assert_ne!(after["generated_at"], first["generated_at"]);
    assert_eq!(
        after["based_on"],
        json!(5),
        "archived memories are left out"
    );

    let empty = unique("summary-empty");
    expect_status(
        client.post("/v1/memory/collections", &json!({"name": empty})),
        201,
    );
    let body = expect_status(client.get(&path(&empty, "summary")), 200);
    assert_eq!(body["based_on"], json!(0));
    assert!(!body["summary"].as_str().unwrap().is_empty());
}

#[test]
fn memories_go_stale_with_the_clock_and_archive_stale_takes_only_them() {
    let clock = Arc::new(ManualClock::new());
    let server = start_in_process_with_clock(|_| {}, clock.clone());
    let client = tenant_on(&server);
    let collection = unique("aging");
    let old_plain = memory(
        &client,
        &collection,
        "An old note about the garden shed.",
        0.5,
    );
    let old_pinned = memory(&client, &collection, "An old pinned note.", 0.5);
    let old_archived = memory(&client, &collection, "An old archived note.", 0.5);
    let old_edited = memory(&client, &collection, "An old note edited later.", 0.5);
    set_flag(&client, &collection, &old_pinned, "pin", true);
    set_flag(&client, &collection, &old_archived, "archive", true);
    let body = health(&client, &collection, "");
    assert_eq!(
        (body["stale"].clone(), body["current"].clone()),
        (json!(0), json!(3))
    );

    clock.advance(Duration::days(91));
    let fresh = memory(&client, &collection, "A fresh note.", 0.5);
    expect_status(
        client.patch(
            &format!("{}/{old_edited}", memories_path(&collection)),
            &json!({"text": "An old note, edited after three months."}),
        ),
        200,
    );
    let body = health(&client, &collection, "");
    assert_eq!(body["total"], json!(5), "{body}");
    assert_eq!(body["current"], json!(4));
    assert_eq!(body["archived"], json!(1));
    assert_eq!(body["pinned"], json!(1));
    assert_eq!(
        body["stale"],
        json!(1),
        "only the unpinned, unedited, current one"
    );
    assert_eq!(body["needs_attention"], json!(1));
    assert_eq!(body["stale_days"], json!(90));
    assert_eq!(
        health(&client, &collection, "?stale_days=120")["stale"],
        json!(0)
    );
    assert_eq!(
        health(&client, &collection, "?stale_days=0")["stale"],
        json!(3)
    );

    let dry = expect_status(
        client.post(&path(&collection, "archive-stale"), &json!({})),
        200,
    );
    assert_eq!(dry["would_archive"], json!(1), "{dry}");
    assert_eq!(dry["memory_ids"], json!([old_plain]));
    assert!(dry.get("archived").is_none());
    let got = expect_status(
        client.get(&format!("{}/{old_plain}", memories_path(&collection))),
        200,
    );
    assert_eq!(got["archived"], json!(false), "a dry run changes nothing");

    let applied = expect_status(
        client.post(
            &path(&collection, "archive-stale"),
            &json!({"older_than_days": 90, "dry_run": false}),
        ),
        200,
    );
    assert_eq!(applied["archived"], json!(1), "{applied}");
    let got = expect_status(
        client.get(&format!("{}/{old_plain}", memories_path(&collection))),
        200,
    );
    assert_eq!(got["archived"], json!(true));
    let pinned = expect_status(
        client.get(&format!("{}/{old_pinned}", memories_path(&collection))),
        200,
    );
    assert_eq!(
        pinned["archived"],
        json!(false),
        "pinned memories are never archived"
    );
    let body = health(&client, &collection, "");
    assert_eq!(
        (body["stale"].clone(), body["archived"].clone()),
        (json!(0), json!(2))
    );
    let again = expect_status(
        client.post(
            &path(&collection, "archive-stale"),
            &json!({"dry_run": false}),
        ),
        200,
    );
    assert_eq!(again["archived"], json!(0));
    // Archiving is reversible and the restored memory is stale again.
    set_flag(&client, &collection, &old_plain, "archive", false);
    assert_eq!(health(&client, &collection, "")["stale"], json!(1));
    let _ = fresh;

    // The operator's view sums every collection of every tenant on this server.
    let other = tenant_on(&server);
    memory(&other, "elsewhere", "Another tenant's note.", 0.5);
    let admin = Client::new(&server.base_url, Some(&server.admin_key));
    let all = expect_status(admin.get("/v1/memory/admin/memory-health"), 200);
    assert_eq!(all["collections"], json!(2), "{all}");
    assert_eq!(all["total"], json!(6));
    assert_eq!(all["archived"], json!(1));
    assert_eq!(all["stale"], json!(1));
    assert_eq!(all["pinned"], json!(1));
    assert_eq!(all["needs_attention"], json!(1));
    assert_eq!(
        expect_status(
            admin.get("/v1/memory/admin/memory-health?stale_days=0"),
            200
        )["stale"],
        json!(4)
    );
}

#[test]
fn time_bound_facts_expire_with_the_clock() {
    let clock = Arc::new(ManualClock::new());
    let server = start_in_process_with_clock(|_| {}, clock.clone());
    let client = tenant_on(&server);
    let collection = unique("expiry");
    let body = expect_status(
        client.post(
            &format!("{}?sync=true", path(&collection, "remember")),
            &json!({"content": "I'm staying in Paris until Friday. I live in Lisbon."}),
        ),
        200,
    );
    assert_eq!(body["created"], json!(2), "{body}");
    // Said together, the stay sets the home aside until it ends.
    let before = health(&client, &collection, "");
    assert_eq!(
        (
            before["current"].clone(),
            before["suspended"].clone(),
            before["expired"].clone()
        ),
        (json!(1), json!(1), json!(0))
    );
    let summary = expect_status(client.get(&path(&collection, "summary")), 200);
    assert_eq!(summary["based_on"], json!(1), "the stay only");

    clock.advance(Duration::days(8));
    let after = health(&client, &collection, "");
    assert_eq!(after["expired"], json!(1), "{after}");
    assert_eq!(after["suspended"], json!(0), "{after}");
    assert_eq!(after["current"], json!(1), "the home is current again");
    assert_eq!(after["needs_attention"], json!(1));
    let found = expect_status(
        client.post(
            &path(&collection, "search"),
            &json!({"query": "Paris", "mode": "text", "min_score": 0.0}),
        ),
        200,
    );
    let texts: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| result["text"].as_str().unwrap())
        .collect();
    assert!(
        texts.iter().all(|text| !text.contains("Paris")),
        "{texts:?}"
    );
    let summary = expect_status(client.get(&path(&collection, "summary")), 200);
    assert_eq!(
        summary["based_on"],
        json!(1),
        "expired facts are not summarised"
    );
    assert!(
        summary["summary"].as_str().unwrap().contains("Lisbon"),
        "a summary cached before the expiry is not served after it: {summary}"
    );
}
