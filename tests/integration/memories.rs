//! Memories: create (defaults, limits, validation), get, list (paging, order, archived),
//! patch, delete, bulk, move, pin, archive.

use std::thread::sleep;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{
    create_memory, expect_error, expect_status, list_ids, memories_path, new_tenant, unique, Client,
};

fn memory_path(collection: &str, id: &Value) -> String {
    format!("{}/{}", memories_path(collection), id.as_str().unwrap())
}

#[test]
fn create_fills_defaults_and_stamps_the_agent() {
    let client = new_tenant();
    let collection = unique("col");
    let memory = create_memory(
        &client,
        &collection,
        json!({"text": "The user likes green tea."}),
    );
    assert_eq!(memory["text"], "The user likes green tea.");
    assert_eq!(memory["category"], "other");
    assert_eq!(memory["source"], "api");
    assert_eq!(memory["metadata"], json!({}));
    assert_eq!(memory["importance"], 0.5);
    assert_eq!(memory["pinned"], false);
    assert_eq!(memory["archived"], false);
    assert_eq!(memory["container_tag"], Value::Null);
    assert_eq!(memory["images"], json!([]));
    assert!(memory["created_at"].is_string() && memory["updated_at"].is_string());
    let me = expect_status(client.get("/v1/memory/admin/me"), 200);
    assert_eq!(
        memory["created_by"],
        json!({"id": me["key"]["id"], "label": "default"})
    );
}

#[test]
fn create_persists_every_given_field() {
    let client = new_tenant();
    let collection = unique("col");
    let body = json!({
        "text": "Ana's flight to Lisbon leaves at 9:40.",
        "importance": 0.8,
        "category": "fact",
        "source": "suite",
        "metadata": {"trip": "lisbon", "seats": [12, 13], "nested": {"ok": true}},
        "container_tag": "user-42",
    });
    let created = create_memory(&client, &collection, body.clone());
    let fetched = expect_status(client.get(&memory_path(&collection, &created["id"])), 200);
    for memory in [&created, &fetched] {
        for (field, value) in body.as_object().unwrap() {
            assert_eq!(&memory[field], value, "{field}");
        }
    }
}

#[test]
fn text_and_importance_limits() {
    let client = new_tenant();
    let collection = unique("col");
    for text in [
        "x".to_owned(),
        "a".repeat(10_000),
        "é".repeat(10_000),
        "語".repeat(10_000),
    ] {
        let memory = create_memory(&client, &collection, json!({"text": text}));
        assert_eq!(memory["text"].as_str().unwrap(), text);
    }
    for text in [
        "".to_owned(),
        "  \n ".to_owned(),
        "a".repeat(10_001),
        "é".repeat(10_001),
    ] {
        expect_error(
            client.post(&memories_path(&collection), &json!({"text": text})),
            422,
        );
    }
    for importance in [json!(0), json!(1), json!(0.25)] {
        let memory = create_memory(
            &client,
            &collection,
            json!({"text": "i", "importance": importance}),
        );
        assert_eq!(memory["importance"].as_f64(), importance.as_f64());
    }
    for importance in [
        json!(-0.01),
        json!(1.01),
        json!(2),
        json!("high"),
        json!(true),
    ] {
        expect_error(
            client.post(
                &memories_path(&collection),
                &json!({"text": "i", "importance": importance}),
            ),
            422,
        );
    }
    assert_eq!(
        list_ids(&client, &collection, "?limit=200").len(),
        7,
        "rejected creates wrote nothing"
    );
}

#[test]
fn invalid_bodies_are_422_and_write_nothing() {
    let client = new_tenant();
    let collection = unique("col");
    create_memory(&client, &collection, json!({"text": "the only one"}));
    for body in [
        json!({}),
        json!({"importance": 0.5}),
        json!({"text": null}),
        json!({"text": 42}),
        json!({"text": "ok", "unknown_field": 1}),
        json!({"text": "ok", "metadata": "not an object"}),
        json!({"text": "ok", "metadata": [1, 2]}),
        json!({"text": "ok", "container_tag": 7}),
        json!({"text": "ok", "category": ""}),
        json!({"text": "ok", "source": "s".repeat(201)}),
        json!({"text": "ok", "metadata": {"big": "x".repeat(20_000)}}),
        json!([{"text": "array instead of object"}]),
    ] {
        expect_error(client.post(&memories_path(&collection), &body), 422);
    }
    expect_error(
        client.post_raw(
            &memories_path(&collection),
            br#"{"text": "#,
            "application/json",
        ),
        422,
    );
    expect_error(
        client.post_raw(
            &memories_path(&collection),
            br#"{"text": "a"} {}"#,
            "application/json",
        ),
        422,
    );
    expect_error(
        client.post_raw(&memories_path(&collection), b"\xff\xfe", "application/json"),
        422,
    );
    assert_eq!(list_ids(&client, &collection, "").len(), 1);
}

#[test]
fn an_oversized_body_is_413_with_detail() {
    let client = new_tenant();
    let huge = format!(r#"{{"text": "{}"}}"#, "a".repeat(17 * 1024 * 1024));
    expect_error(
        client.post_raw(
            &memories_path(&unique("col")),
            huge.as_bytes(),
            "application/json",
        ),
        413,
    );
}

#[test]
fn get_of_absent_memory_or_collection_is_404() {
    let client = new_tenant();
    let collection = unique("col");
    create_memory(&client, &collection, json!({"text": "exists"}));
    expect_error(
        client.get(&format!("{}/absent-id", memories_path(&collection))),
        404,
    );
    expect_error(
        client.get(&format!("{}/absent-id", memories_path(&unique("col")))),
        404,
    );
    expect_error(client.get(&memories_path(&unique("col"))), 404);
}

#[test]
fn list_pages_newest_first_with_pinned_first() {
    let client = new_tenant();
    let collection = unique("col");
    let ids: Vec<String> = (0..5)
        .map(|index| {
            let memory = create_memory(
                &client,
                &collection,
                json!({"text": format!("memory {index}")}),
            );
            memory["id"].as_str().unwrap().to_owned()
        })
        .collect();
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(list_ids(&client, &collection, ""), newest_first);
    assert_eq!(
        list_ids(&client, &collection, "?limit=2&offset=0"),
        newest_first[..2]
    );
    assert_eq!(
        list_ids(&client, &collection, "?limit=2&offset=2"),
        newest_first[2..4]
    );
    assert_eq!(
        list_ids(&client, &collection, "?limit=2&offset=4"),
        newest_first[4..]
    );
    assert!(list_ids(&client, &collection, "?offset=10").is_empty());

    let pinned = expect_status(
        client.post(
            &format!("{}/{}/pin", memories_path(&collection), ids[0]),
            &json!({"pinned": true}),
        ),
        200,
    );
    assert_eq!(pinned["pinned"], true);
    let mut expected = vec![ids[0].clone()];
    expected.extend(newest_first[..4].iter().cloned());
    assert_eq!(list_ids(&client, &collection, ""), expected);
    expect_status(
        client.post(
            &format!("{}/{}/pin", memories_path(&collection), ids[0]),
            &json!({"pinned": false}),
        ),
        200,
    );
    assert_eq!(list_ids(&client, &collection, ""), newest_first);
}

#[test]
fn list_limit_bounds() {
    let client = new_tenant();
    let collection = unique("col");
    for chunk in 0..3 {
        let items: Vec<Value> = (0..100)
            .map(|index| json!({"text": format!("item {chunk}-{index}")}))
            .collect();
        expect_status(
            client.post(
                &format!("{}/bulk", memories_path(&collection)),
                &json!(items),
            ),
            201,
        );
    }
    assert_eq!(list_ids(&client, &collection, "").len(), 50);
    assert_eq!(list_ids(&client, &collection, "?limit=200").len(), 200);
    assert_eq!(
        list_ids(&client, &collection, "?limit=200&offset=200").len(),
        100
    );
    for query in [
        "?limit=201",
        "?limit=0",
        "?limit=-1",
        "?limit=abc",
        "?offset=-3",
        "?include_archived=maybe",
    ] {
        expect_error(
            client.get(&format!("{}{query}", memories_path(&collection))),
            422,
        );
    }
}

#[test]
fn archived_memories_leave_listings_until_asked_for_or_restored() {
    let client = new_tenant();
    let collection = unique("col");
    let kept = create_memory(&client, &collection, json!({"text": "visible"}));
    let hidden = create_memory(&client, &collection, json!({"text": "archived"}));
    let archive_path = format!("{}/archive", memory_path(&collection, &hidden["id"]));
    let archived = expect_status(client.post(&archive_path, &json!({"archived": true})), 200);
    assert_eq!(archived["archived"], true);
    assert_eq!(
        archived["updated_at"], hidden["updated_at"],
        "archiving is not a content change"
    );
    let kept_id = kept["id"].as_str().unwrap().to_owned();
    assert_eq!(list_ids(&client, &collection, ""), vec![kept_id.clone()]);
    assert_eq!(
        list_ids(&client, &collection, "?include_archived=false"),
        vec![kept_id.clone()]
    );
    assert_eq!(
        list_ids(&client, &collection, "?include_archived=true").len(),
        2
    );
    expect_status(client.post(&archive_path, &json!({"archived": false})), 200);
    assert_eq!(list_ids(&client, &collection, "").len(), 2);
    expect_error(client.post(&archive_path, &json!({"archived": "yes"})), 422);
    expect_error(
        client.post(
            &format!("{}/absent/archive", memories_path(&collection)),
            &json!({"archived": true}),
        ),
        404,
    );
}

#[test]
fn patch_changes_only_the_given_fields() {
    let client = new_tenant();
    let collection = unique("col");
    let original = create_memory(
        &client,
        &collection,
        json!({"text": "blue bicycle", "importance": 0.3, "category": "fact", "source": "suite",
               "metadata": {"k": "v"}, "container_tag": "t1"}),
    );
    let path = memory_path(&collection, &original["id"]);
    sleep(Duration::from_millis(5));
    let updated = expect_status(client.patch(&path, &json!({"importance": 0.9})), 200);
    assert_eq!(updated["importance"], 0.9);
    for field in [
        "id",
        "text",
        "category",
        "source",
        "metadata",
        "container_tag",
        "created_at",
        "created_by",
    ] {
        assert_eq!(updated[field], original[field], "{field}");
    }
    assert_ne!(updated["updated_at"], original["updated_at"]);
    let updated = expect_status(
        client.patch(
            &path,
            &json!({"text": "red scooter", "metadata": {"k": "w"}}),
        ),
        200,
    );
    assert_eq!(updated["text"], "red scooter");
    assert_eq!(updated["metadata"], json!({"k": "w"}));
    assert_eq!(updated["importance"], 0.9);
    let fetched = expect_status(client.get(&path), 200);
    assert_eq!(fetched["text"], "red scooter");
    assert_eq!(fetched["category"], "fact");
}

#[test]
fn invalid_patches_are_rejected_and_change_nothing() {
    let client = new_tenant();
    let collection = unique("col");
    let original = create_memory(
        &client,
        &collection,
        json!({"text": "stable", "importance": 0.3}),
    );
    let path = memory_path(&collection, &original["id"]);
    for body in [
        json!({"text": ""}),
        json!({"text": "a".repeat(10_001)}),
        json!({"importance": 1.5}),
        json!({"importance": -0.5}),
        json!({"unknown": 1}),
        json!({"metadata": "x"}),
        json!({}),
        // A field given is a value: null would read as "clear it", which PATCH does not do.
        json!({"metadata": null}),
        json!({"text": "kept?", "importance": null}),
        json!({"category": null}),
    ] {
        expect_error(client.patch(&path, &body), 422);
    }
    let fetched = expect_status(client.get(&path), 200);
    assert_eq!(fetched, original);
    expect_error(
        client.patch(
            &format!("{}/absent", memories_path(&collection)),
            &json!({"importance": 0.5}),
        ),
        404,
    );
    expect_error(
        client.patch(
            &format!("{}/absent", memories_path(&unique("col"))),
            &json!({"importance": 0.5}),
        ),
        404,
    );
}

#[test]
fn delete_removes_only_that_memory() {
    let client = new_tenant();
    let collection = unique("col");
    let keep = create_memory(&client, &collection, json!({"text": "stays"}));
    let doomed = create_memory(&client, &collection, json!({"text": "goes"}));
    let path = memory_path(&collection, &doomed["id"]);
    assert_eq!(client.delete(&path).status().as_u16(), 204);
    expect_error(client.get(&path), 404);
    expect_error(client.delete(&path), 404);
    assert_eq!(
        list_ids(&client, &collection, ""),
        vec![keep["id"].as_str().unwrap().to_owned()]
    );
}

#[test]
fn bulk_creates_all_or_nothing() {
    let client = new_tenant();
    let collection = unique("col");
    let bulk = format!("{}/bulk", memories_path(&collection));
    let response = expect_status(
        client.post(
            &bulk,
            &json!([
                {"text": "for alice", "container_tag": "alice"},
                {"text": "for bob", "container_tag": "bob", "importance": 0.7, "category": "fact"},
                {"text": "untagged", "metadata": {"n": 3}},
            ]),
        ),
        201,
    );
    assert_eq!(response["created"], 3);
    let created = response["memories"].as_array().unwrap();
    assert_eq!(created[1]["container_tag"], "bob");
    assert_eq!(created[1]["category"], "fact");
    assert_eq!(created[0]["category"], "other");
    assert_eq!(created[2]["metadata"], json!({"n": 3}));
    let listed = expect_status(client.get(&memories_path(&collection)), 200);
    assert_eq!(listed.as_array().unwrap().len(), 3);

    let hundred: Vec<Value> = (0..100)
        .map(|index| json!({"text": format!("item {index}")}))
        .collect();
    assert_eq!(
        expect_status(client.post(&bulk, &json!(hundred)), 201)["created"],
        100
    );
    let too_many: Vec<Value> = (0..101)
        .map(|index| json!({"text": format!("item {index}")}))
        .collect();
    expect_error(client.post(&bulk, &json!(too_many)), 422);
    expect_error(client.post(&bulk, &json!([])), 422);
    expect_error(client.post(&bulk, &json!({"text": "not an array"})), 422);
    for bad in [
        json!({"text": ""}),
        json!({"text": "ok", "importance": 3}),
        json!({"importance": 0.5}),
    ] {
        let detail = expect_error(client.post(&bulk, &json!([{"text": "fine"}, bad])), 422);
        assert!(
            detail.contains("[1]"),
            "the detail names the item: {detail}"
        );
    }
    assert_eq!(
        list_ids(&client, &collection, "?limit=200").len(),
        103,
        "rejected bulks wrote nothing"
    );
}

#[test]
fn move_keeps_the_memory_and_creates_the_target() {
    let client = new_tenant();
    let (source, target) = (unique("col"), unique("col"));
    let staying = create_memory(&client, &source, json!({"text": "stays home"}));
    let moving = create_memory(
        &client,
        &source,
        json!({"text": "travels", "container_tag": "t", "importance": 0.9}),
    );
    let moved = expect_status(
        client.post(
            &format!("{}/move", memory_path(&source, &moving["id"])),
            &json!({"to_collection": target}),
        ),
        200,
    );
    assert_eq!(moved["id"], moving["id"]);
    assert_eq!(moved["text"], "travels");
    assert_eq!(moved["container_tag"], "t");
    expect_error(client.get(&memory_path(&source, &moving["id"])), 404);
    assert_eq!(
        list_ids(&client, &source, ""),
        vec![staying["id"].as_str().unwrap().to_owned()]
    );
    let fetched = expect_status(client.get(&memory_path(&target, &moving["id"])), 200);
    assert_eq!(fetched["importance"], 0.9);
    // Into an existing collection, and back.
    expect_status(
        client.post(
            &format!("{}/move", memory_path(&target, &moving["id"])),
            &json!({"to_collection": source}),
        ),
        200,
    );
    assert_eq!(list_ids(&client, &source, "").len(), 2);
    assert!(list_ids(&client, &target, "").is_empty());
    // Errors.
    expect_error(
        client.post(
            &format!("{}/absent/move", memories_path(&source)),
            &json!({"to_collection": target}),
        ),
        404,
    );
    expect_error(
        client.post(
            &format!("{}/move", memory_path(&source, &moving["id"])),
            &json!({"to_collection": "bad name"}),
        ),
        422,
    );
    expect_error(
        client.post(
            &format!("{}/move", memory_path(&source, &moving["id"])),
            &json!({}),
        ),
        422,
    );
}

#[test]
fn concurrent_creates_in_one_collection_all_land() {
    let client = new_tenant();
    let collection = unique("col");
    let workers: Vec<_> = (0..8)
        .map(|worker| {
            let client: Client = client.clone();
            let collection = collection.clone();
            std::thread::spawn(move || {
                for index in 0..10 {
                    create_memory(
                        &client,
                        &collection,
                        json!({"text": format!("worker {worker} item {index}")}),
                    );
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(list_ids(&client, &collection, "?limit=200").len(), 80);
}
