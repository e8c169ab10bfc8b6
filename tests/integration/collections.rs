//! Collections: create, get, list with counts, update, delete, auto-create, validation,
//! and tenant isolation.

use serde_json::json;

use crate::support::{
    create_memory, expect_error, expect_status, list_ids, memories_path, new_tenant, unique,
};

const COLLECTIONS: &str = "/v1/memory/collections";

fn listed_count(client: &crate::support::Client, name: &str) -> Option<u64> {
    let listed = expect_status(client.get(COLLECTIONS), 200);
    listed
        .as_array()
        .unwrap()
        .iter()
        .find(|collection| collection["name"] == name)
        .map(|collection| collection["memory_count"].as_u64().unwrap())
}

#[test]
fn create_get_update_delete() {
    let client = new_tenant();
    let name = unique("col");
    let created = expect_status(
        client.post(
            COLLECTIONS,
            &json!({"name": name, "description": "trips", "metadata": {"owner": "ana"}}),
        ),
        201,
    );
    assert_eq!(created["name"], name.as_str());
    assert_eq!(created["description"], "trips");
    assert_eq!(created["metadata"], json!({"owner": "ana"}));
    assert_eq!(created["memory_count"], 0);
    expect_error(client.post(COLLECTIONS, &json!({"name": name})), 409);

    let path = format!("{COLLECTIONS}/{name}");
    assert_eq!(
        expect_status(client.get(&path), 200)["description"],
        "trips"
    );

    let updated = expect_status(client.put(&path, &json!({"metadata": {"v": 2}})), 200);
    assert_eq!(
        updated["description"], "trips",
        "a field left out keeps its value"
    );
    assert_eq!(updated["metadata"], json!({"v": 2}));
    let updated = expect_status(client.put(&path, &json!({"description": "new"})), 200);
    assert_eq!(updated["description"], "new");
    assert_eq!(
        expect_status(client.get(&path), 200)["metadata"],
        json!({"v": 2})
    );

    assert_eq!(client.delete(&path).status().as_u16(), 204);
    expect_error(client.get(&path), 404);
    expect_error(client.delete(&path), 404);
    expect_error(client.put(&path, &json!({"description": "x"})), 404);
    assert_eq!(listed_count(&client, &name), None);
}

#[test]
fn list_counts_memories_through_bulk_delete_and_move() {
    let client = new_tenant();
    let (name, other) = (unique("col"), unique("col"));
    let bulk: Vec<_> = (0..5)
        .map(|index| json!({"text": format!("memory {index}")}))
        .collect();
    expect_status(
        client.post(&format!("{}/bulk", memories_path(&name)), &json!(bulk)),
        201,
    );
    assert_eq!(listed_count(&client, &name), Some(5));
    let ids = list_ids(&client, &name, "");
    assert_eq!(
        client
            .delete(&format!("{}/{}", memories_path(&name), ids[0]))
            .status()
            .as_u16(),
        204
    );
    assert_eq!(listed_count(&client, &name), Some(4));
    expect_status(
        client.post(
            &format!("{}/{}/move", memories_path(&name), ids[1]),
            &json!({"to_collection": other}),
        ),
        200,
    );
    assert_eq!(listed_count(&client, &name), Some(3));
    assert_eq!(listed_count(&client, &other), Some(1));
}

#[test]
fn delete_removes_memories_and_a_new_collection_of_that_name_starts_empty() {
    let client = new_tenant();
    let name = unique("col");
    let doomed = create_memory(&client, &name, json!({"text": "goes with the collection"}));
    assert_eq!(
        client
            .delete(&format!("{COLLECTIONS}/{name}"))
            .status()
            .as_u16(),
        204
    );
    expect_error(
        client.get(&format!(
            "{}/{}",
            memories_path(&name),
            doomed["id"].as_str().unwrap()
        )),
        404,
    );
    let fresh = create_memory(&client, &name, json!({"text": "fresh"}));
    assert_eq!(
        list_ids(&client, &name, ""),
        vec![fresh["id"].as_str().unwrap().to_owned()]
    );
}

#[test]
fn first_write_creates_the_collection() {
    let client = new_tenant();
    let name = unique("col");
    expect_error(client.get(&format!("{COLLECTIONS}/{name}")), 404);
    create_memory(&client, &name, json!({"text": "auto"}));
    let fetched = expect_status(client.get(&format!("{COLLECTIONS}/{name}")), 200);
    assert_eq!(fetched["name"], name.as_str());
    assert_eq!(fetched["memory_count"], 1);
}

#[test]
fn invalid_bodies_and_names_are_422() {
    let client = new_tenant();
    for body in [
        json!({}),
        json!({"description": "no name"}),
        json!({"name": 5}),
        json!({"name": null}),
        json!({"name": "ok-name", "metadata": "text"}),
        json!({"name": "ok-name", "metadata": [1]}),
        json!({"name": "ok-name", "description": 5}),
        json!({"name": "ok-name", "unknown": true}),
        json!({"name": "has space"}),
        json!({"name": "slash/inside"}),
        json!({"name": "x".repeat(129)}),
        json!(["name", "x"]),
    ] {
        expect_error(client.post(COLLECTIONS, &body), 422);
    }
    expect_error(
        client.post_raw(COLLECTIONS, br#"{"name": "#, "application/json"),
        422,
    );
    expect_error(client.post_raw(COLLECTIONS, b"", "application/json"), 422);
    // Writing to an invalid name is a validation error; reading one is simply not found.
    expect_error(
        client.post(&memories_path("bad%20name"), &json!({"text": "x"})),
        422,
    );
    expect_error(client.get(&format!("{COLLECTIONS}/bad%20name")), 404);
    let name = unique("col");
    expect_status(client.post(COLLECTIONS, &json!({"name": name})), 201);
    expect_error(
        client.put(&format!("{COLLECTIONS}/{name}"), &json!({"metadata": "x"})),
        422,
    );
    expect_error(
        client.put(&format!("{COLLECTIONS}/{name}"), &json!({"other": 1})),
        422,
    );
    assert_eq!(
        expect_status(client.get(&format!("{COLLECTIONS}/{name}")), 200)["metadata"],
        json!({})
    );
}

#[test]
fn tenants_never_see_each_others_collections() {
    let (owner, stranger) = (new_tenant(), new_tenant());
    let name = unique("col");
    let memory = create_memory(&owner, &name, json!({"text": "owner's secret"}));
    let id = memory["id"].as_str().unwrap();
    assert_eq!(listed_count(&stranger, &name), None);
    expect_error(stranger.get(&format!("{COLLECTIONS}/{name}")), 404);
    expect_error(stranger.get(&format!("{}/{id}", memories_path(&name))), 404);
    expect_error(stranger.delete(&format!("{COLLECTIONS}/{name}")), 404);
    // The stranger's own collection of the same name is a different one.
    create_memory(&stranger, &name, json!({"text": "stranger's note"}));
    assert_eq!(listed_count(&owner, &name), Some(1));
    assert_eq!(list_ids(&owner, &name, ""), vec![id.to_owned()]);
}
