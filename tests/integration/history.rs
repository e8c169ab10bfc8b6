//! Facts over time: a time-bound fact that sets a lasting one aside until it expires,
//! search `as_of` a past moment, and a slot's history.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use memvault_types::clock::ManualClock;
use serde_json::{json, Value};

use crate::support::{
    create_memory, expect_error, expect_status, memories_path, new_tenant,
    start_in_process_with_clock, tenant_on, unique, Client,
};

fn collection_path(collection: &str, action: &str) -> String {
    format!("/v1/memory/collections/{collection}/{action}")
}

/// Remembers `content` now; the ids of the memories it stored or found, in order.
fn remember(client: &Client, collection: &str, content: &str) -> Vec<(String, String)> {
    let body = expect_status(
        client.post(
            &format!("{}?sync=true", collection_path(collection, "remember")),
            &json!({ "content": content }),
        ),
        200,
    );
    body["memories"]
        .as_array()
        .expect("memories")
        .iter()
        .map(|memory| {
            (
                memory["id"].as_str().expect("id").to_owned(),
                memory["relation"].as_str().expect("relation").to_owned(),
            )
        })
        .collect()
}

fn memory(client: &Client, collection: &str, id: &str) -> Value {
    expect_status(
        client.get(&format!("{}/{id}", memories_path(collection))),
        200,
    )
}

fn timestamp(value: &Value) -> DateTime<Utc> {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a timestamp: {value}"))
        .parse()
        .expect("RFC 3339")
}

/// The texts a search returns, lower-cased; `as_of` when given.
fn search(client: &Client, collection: &str, query: &str, as_of: Option<&str>) -> Vec<String> {
    let mut body = json!({"query": query, "mode": "hybrid", "min_score": 0.0, "limit": 50});
    if let Some(as_of) = as_of {
        body["as_of"] = json!(as_of);
    }
    let found = expect_status(
        client.post(&collection_path(collection, "search"), &body),
        200,
    );
    texts(&found)
}

fn texts(found: &Value) -> Vec<String> {
    found["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|result| result["text"].as_str().unwrap_or_default().to_lowercase())
        .collect()
}

fn mentions(texts: &[String], word: &str) -> bool {
    texts.iter().any(|text| text.contains(word))
}

fn profile(client: &Client, collection: &str) -> String {
    let body = expect_status(client.get(&collection_path(collection, "profile")), 200);
    body["profile"].as_str().expect("profile").to_lowercase()
}

fn health(client: &Client, collection: &str) -> Value {
    expect_status(client.get(&collection_path(collection, "health")), 200)
}

fn contradictions(client: &Client, collection: &str) -> Vec<Value> {
    let body = expect_status(
        client.get(&collection_path(collection, "contradictions")),
        200,
    );
    body["contradictions"]
        .as_array()
        .expect("contradictions")
        .clone()
}

fn history(client: &Client, collection: &str, id: &str) -> Value {
    expect_status(
        client.get(&format!("{}/{id}/history", memories_path(collection))),
        200,
    )
}

#[test]
fn a_time_bound_override_holds_until_it_expires_and_the_lasting_value_returns() {
    let clock = Arc::new(ManualClock::new());
    let server = start_in_process_with_clock(|_| {}, clock.clone());
    let client = tenant_on(&server);
    let collection = unique("override");
    let berlin = remember(&client, &collection, "I live in Berlin.");
    assert_eq!(berlin[0].1, "new");
    let berlin_id = berlin[0].0.clone();
    clock.advance(Duration::days(1));
    let paris = remember(
        &client,
        &collection,
        "For the next two weeks I'm living in Paris.",
    );
    assert_eq!(paris[0].1, "updated", "the stay overrides where I live");
    let paris_id = paris[0].0.clone();
    let paris_memory = memory(&client, &collection, &paris_id);
    let paris_from = timestamp(&paris_memory["created_at"]);
    let paris_until = timestamp(&paris_memory["expires_at"]);
    let berlin_memory = memory(&client, &collection, &berlin_id);
    assert_eq!(
        berlin_memory["superseded_by"],
        Value::Null,
        "set aside only"
    );

    // While the stay holds: search, profile, health and contradictions agree on Paris.
    let query = "where do I live, Berlin or Paris";
    let during = search(&client, &collection, query, None);
    assert!(mentions(&during, "paris"), "{during:?}");
    assert!(!mentions(&during, "berlin"), "{during:?}");
    let text = profile(&client, &collection);
    assert!(text.contains("paris") && !text.contains("berlin"), "{text}");
    let counts = health(&client, &collection);
    assert_eq!(
        (
            counts["current"].clone(),
            counts["suspended"].clone(),
            counts["supersessions"].clone(),
            counts["expired"].clone()
        ),
        (json!(1), json!(1), json!(0), json!(0)),
        "{counts}"
    );
    let pairs = contradictions(&client, &collection);
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    assert_eq!(pairs[0]["current"]["id"], json!(paris_id));
    assert_eq!(pairs[0]["superseded"]["id"], json!(berlin_id));
    assert_eq!(pairs[0]["slot"], json!("user/location"));
    assert_eq!(timestamp(&pairs[0]["until"]), paris_until);
    assert_eq!(timestamp(&pairs[0]["superseded_at"]), paris_from);

    // Two weeks and a day later the stay has expired: Berlin is current again, with no
    // write in between (the same search is not answered from a stale cache).
    clock.advance(Duration::days(15));
    let after = search(&client, &collection, query, None);
    assert!(mentions(&after, "berlin"), "{after:?}");
    assert!(!mentions(&after, "paris"), "{after:?}");
    let text = profile(&client, &collection);
    assert!(text.contains("berlin") && !text.contains("paris"), "{text}");
    let counts = health(&client, &collection);
    assert_eq!(
        (
            counts["current"].clone(),
            counts["suspended"].clone(),
            counts["expired"].clone()
        ),
        (json!(1), json!(0), json!(1)),
        "{counts}"
    );
    assert!(contradictions(&client, &collection).is_empty());

    // The slot's history: Berlin (set aside for the stay, current again), then Paris.
    let body = history(&client, &collection, &berlin_id);
    assert_eq!(body["slot"], json!("user/location"));
    let entries = body["history"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{body}");
    assert_eq!(entries[0]["memory"]["id"], json!(berlin_id));
    assert_eq!(entries[0]["current"], json!(true));
    assert_eq!(entries[0]["valid_until"], Value::Null);
    let set_aside = entries[0]["set_aside"].as_array().unwrap();
    assert_eq!(set_aside.len(), 1);
    assert_eq!(set_aside[0]["by"], json!(paris_id));
    assert_eq!(timestamp(&set_aside[0]["from"]), paris_from);
    assert_eq!(timestamp(&set_aside[0]["until"]), paris_until);
    assert_eq!(entries[1]["memory"]["id"], json!(paris_id));
    assert_eq!(entries[1]["value"], json!("Paris"));
    assert_eq!(entries[1]["current"], json!(false));
    assert_eq!(timestamp(&entries[1]["valid_from"]), paris_from);
    assert_eq!(timestamp(&entries[1]["valid_until"]), paris_until);
    assert_eq!(
        history(&client, &collection, &paris_id)["history"],
        body["history"],
        "any memory of the slot gives the same history"
    );

    // As of a moment during the stay: Paris; before it: Berlin; before both: nothing.
    let during_stay = (paris_from + Duration::days(3)).to_rfc3339();
    let then = search(&client, &collection, query, Some(&during_stay));
    assert!(
        mentions(&then, "paris") && !mentions(&then, "berlin"),
        "{then:?}"
    );
    let before_stay = (paris_from - Duration::hours(12)).to_rfc3339();
    let then = search(&client, &collection, query, Some(&before_stay));
    assert!(
        mentions(&then, "berlin") && !mentions(&then, "paris"),
        "{then:?}"
    );
    let before_all = (timestamp(&berlin_memory["created_at"]) - Duration::hours(1)).to_rfc3339();
    assert!(search(&client, &collection, query, Some(&before_all)).is_empty());
}

#[test]
fn a_new_lasting_value_during_an_override_replaces_both_and_deleting_an_override_ends_it() {
    let client = new_tenant();
    let collection = unique("override");
    let berlin = remember(&client, &collection, "I live in Berlin.")[0]
        .0
        .clone();
    let paris = remember(
        &client,
        &collection,
        "I'm living in Paris for the next 10 days.",
    )[0]
    .0
    .clone();
    let madrid = remember(&client, &collection, "I moved to Madrid.");
    assert_eq!(madrid[0].1, "updated");
    let madrid = madrid[0].0.clone();
    for id in [&berlin, &paris] {
        assert_eq!(
            memory(&client, &collection, id)["superseded_by"],
            json!(madrid)
        );
    }
    let found = search(&client, &collection, "Berlin Paris Madrid", None);
    assert!(
        mentions(&found, "madrid") && !mentions(&found, "berlin") && !mentions(&found, "paris"),
        "{found:?}"
    );
    let pairs = contradictions(&client, &collection);
    assert_eq!(pairs.len(), 2, "{pairs:?}");

    // Another collection: a deleted override no longer hides what it overrode.
    let other = unique("override");
    let home = remember(&client, &other, "I live in Lisbon.")[0].0.clone();
    let trip = remember(&client, &other, "I'm living in Rome for the next 10 days.")[0]
        .0
        .clone();
    assert!(!mentions(
        &search(&client, &other, "Lisbon Rome", None),
        "lisbon"
    ));
    expect_status(
        client.delete(&format!("{}/{trip}", memories_path(&other))),
        204,
    );
    let found = search(&client, &other, "Lisbon Rome", None);
    assert!(mentions(&found, "lisbon"), "{found:?}");
    let entries = history(&client, &other, &home);
    assert_eq!(entries["history"].as_array().unwrap().len(), 1, "{entries}");
    assert_eq!(entries["history"][0]["set_aside"], json!([]));
    assert_eq!(health(&client, &other)["suspended"], json!(0));
}

#[test]
fn a_superseded_value_is_found_as_of_when_it_was_true() {
    let client = new_tenant();
    let collection = unique("as-of");
    let blue = remember(&client, &collection, "My favorite color is blue.")[0]
        .0
        .clone();
    let green = remember(&client, &collection, "My favorite color is green.")[0]
        .0
        .clone();
    let blue_from = memory(&client, &collection, &blue)["created_at"].clone();
    let green_from = timestamp(&memory(&client, &collection, &green)["created_at"]);
    let as_of_blue = blue_from.as_str().unwrap();
    let query = "favorite color blue green";

    let then = search(&client, &collection, query, Some(as_of_blue));
    assert!(
        mentions(&then, "blue") && !mentions(&then, "green"),
        "{then:?}"
    );
    let now = search(&client, &collection, query, None);
    assert!(
        mentions(&now, "green") && !mentions(&now, "blue"),
        "{now:?}"
    );
    let at_green = search(&client, &collection, query, Some(&green_from.to_rfc3339()));
    assert!(
        mentions(&at_green, "green") && !mentions(&at_green, "blue"),
        "{at_green:?}"
    );
    // An offset other than Z names the same moment.
    let shifted = green_from
        .with_timezone(&chrono::FixedOffset::east_opt(2 * 3600).unwrap())
        .to_rfc3339();
    assert_eq!(
        search(&client, &collection, query, Some(&shifted)),
        at_green
    );

    // Tenant-wide search takes `as_of` too.
    let found = expect_status(
        client.post(
            "/v1/memory/search",
            &json!({"query": query, "mode": "text", "as_of": as_of_blue, "limit": 50}),
        ),
        200,
    );
    let results = found["results"].as_array().unwrap();
    assert!(results
        .iter()
        .any(|result| result["id"] == json!(blue) && result["collection"] == json!(collection)));
    assert!(!results.iter().any(|result| result["id"] == json!(green)));
}

#[test]
fn history_lists_every_value_of_the_slot_with_its_interval() {
    let client = new_tenant();
    let collection = unique("history");
    let mut ids = Vec::new();
    for color in ["blue", "green", "red"] {
        ids.push(
            remember(
                &client,
                &collection,
                &format!("My favorite color is {color}."),
            )[0]
            .0
            .clone(),
        );
    }
    let body = history(&client, &collection, &ids[2]);
    assert_eq!(body["memory_id"], json!(ids[2]));
    assert_eq!(body["slot"], json!("user/favorite_color"));
    let entries = body["history"].as_array().unwrap();
    let values: Vec<&str> = entries
        .iter()
        .map(|entry| entry["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["blue", "green", "red"]);
    for (index, entry) in entries.iter().enumerate() {
        assert_eq!(entry["memory"]["id"], json!(ids[index]));
        assert_eq!(entry["current"], json!(index == 2));
        assert_eq!(entry["valid_from"], entry["memory"]["created_at"]);
        if index < 2 {
            assert_eq!(entry["superseded_by"], json!(ids[index + 1]));
            assert_eq!(entry["valid_until"], entry["superseded_at"]);
            assert_eq!(entry["valid_until"], entries[index + 1]["valid_from"]);
        } else {
            assert_eq!(entry["valid_until"], Value::Null);
        }
    }
    // A memory without a slot is its own history.
    let note = create_memory(
        &client,
        &collection,
        json!({"text": "The shed key is under the mat."}),
    );
    let id = note["id"].as_str().unwrap();
    let own = history(&client, &collection, id);
    assert_eq!(own["slot"], Value::Null);
    assert_eq!(own["history"].as_array().unwrap().len(), 1);
    assert_eq!(own["history"][0]["current"], json!(true));
}

#[test]
fn as_of_and_history_refuse_bad_input_and_follow_read_access() {
    let owner = new_tenant();
    let collection = unique("as-of");
    let id = remember(&owner, &collection, "My favorite drink is tea.")[0]
        .0
        .clone();
    let search_path = collection_path(&collection, "search");
    for bad in [
        json!("yesterday"),
        json!("2026-13-01T00:00:00Z"),
        json!("2026-03-01"),
        json!(""),
        json!(5),
    ] {
        expect_error(
            owner.post(&search_path, &json!({"query": "tea", "as_of": bad})),
            422,
        );
        expect_error(
            owner.post("/v1/memory/search", &json!({"query": "tea", "as_of": bad})),
            422,
        );
    }
    // The earliest and latest moments RFC 3339 allows are answered, not refused.
    for edge in ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"] {
        expect_status(
            owner.post(&search_path, &json!({"query": "tea", "as_of": edge})),
            200,
        );
    }
    let history_path =
        |collection: &str, id: &str| format!("{}/{id}/history", memories_path(collection));
    expect_error(owner.get(&history_path(&collection, "no-such-memory")), 404);
    expect_error(owner.get(&history_path("never-made", &id)), 404);
    expect_error(
        Client::anonymous().get(&history_path(&collection, &id)),
        401,
    );
    expect_error(new_tenant().get(&history_path(&collection, &id)), 404);

    // A read-only key reads history and searches as of a moment; an agent without a
    // grant on a restricted collection does neither.
    let key = |read_only: bool| {
        let created = expect_status(
            owner.post(
                "/v1/memory/keys",
                &json!({"label": unique("agent"), "read_only": read_only}),
            ),
            201,
        );
        (
            Client::new(&crate::support::shared().base_url, created["key"].as_str()),
            created["id"].as_str().unwrap().to_owned(),
        )
    };
    let (reader, reader_id) = key(true);
    let (outsider, _) = key(false);
    expect_status(reader.get(&history_path(&collection, &id)), 200);
    let now = Utc::now().to_rfc3339();
    expect_status(
        reader.post(&search_path, &json!({"query": "tea", "as_of": now})),
        200,
    );
    expect_status(
        owner.put(
            &collection_path(&collection, "grants"),
            &json!({"agent_key_id": reader_id, "can_read": true, "can_write": false}),
        ),
        200,
    );
    expect_error(outsider.get(&history_path(&collection, &id)), 403);
    expect_error(
        outsider.post(&search_path, &json!({"query": "tea", "as_of": now})),
        403,
    );
    expect_status(reader.get(&history_path(&collection, &id)), 200);
}
