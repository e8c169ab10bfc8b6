//! Search: modes, response shape, limits, filters (including one that matches 3 of 3,000),
//! archived/deleted/superseded exclusion, hybrid keyword rescue, cache, tenant-wide search,
//! related, forget, and indexes that survive a restart and a crash.

use serde_json::{json, Value};

use crate::support::{
    create_memory, expect_error, expect_status, memories_path, new_tenant, temp_data_dir,
    tenant_on, unique, Client, ServerProcess,
};

fn search(client: &Client, collection: &str, body: Value) -> Value {
    expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &body,
        ),
        200,
    )
}

fn ids(body: &Value) -> Vec<String> {
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

fn id(memory: &Value) -> String {
    memory["id"].as_str().unwrap().to_owned()
}

fn bulk(client: &Client, collection: &str, texts: &[&str]) -> Vec<Value> {
    let body: Vec<Value> = texts.iter().map(|text| json!({"text": text})).collect();
    let created = expect_status(
        client.post(&format!("{}/bulk", memories_path(collection)), &json!(body)),
        201,
    );
    created["memories"].as_array().unwrap().clone()
}

const TOPICS: [&str; 6] = [
    "The user's dog is a golden retriever named Biscuit.",
    "Sam is allergic to penicillin.",
    "Our team deploys to production every Thursday afternoon.",
    "The office coffee machine is on the third floor.",
    "Quarterly revenue grew by twelve percent.",
    "The garden needs watering twice a week in summer.",
];

#[test]
fn every_mode_finds_the_obvious_match_with_the_documented_shape() {
    let client = new_tenant();
    let collection = unique("col");
    bulk(&client, &collection, &TOPICS);
    let target = create_memory(
        &client,
        &collection,
        json!({"text": "The Helsinki office budget report is due Friday.", "category": "fact",
               "metadata": {"team": "finance"}}),
    );
    for mode in ["hybrid", "vector", "text"] {
        let body = search(
            &client,
            &collection,
            json!({"query": "Helsinki budget report", "mode": mode}),
        );
        assert_eq!(ids(&body)[0], id(&target), "{mode}");
        assert!(body["query_embedding_ms"].is_number() && body["search_ms"].is_number());
        assert_eq!(body["cached"], false);
        assert_eq!(body["skipped"], json!([]));
        let item = &body["results"][0];
        for field in [
            "id",
            "text",
            "category",
            "importance",
            "score",
            "source",
            "metadata",
            "images",
            "created_at",
        ] {
            assert!(item.get(field).is_some(), "{mode}: {field} missing");
        }
        assert!(
            item.get("collection").is_none(),
            "collection only in tenant-wide search"
        );
        assert_eq!(item["metadata"], json!({"team": "finance"}));
        assert!(body["results"].as_array().unwrap().len() <= 5);
    }
    let text_only = search(
        &client,
        &collection,
        json!({"query": "Helsinki", "mode": "text"}),
    );
    assert_eq!(
        text_only["query_embedding_ms"], 0.0,
        "text mode embeds nothing"
    );
}

#[test]
fn vector_mode_ranks_a_paraphrase_first() {
    let client = new_tenant();
    let collection = unique("col");
    bulk(&client, &collection, &TOPICS);
    let body = search(
        &client,
        &collection,
        json!({"query": "which medication must never be prescribed to him", "mode": "vector",
               "min_score": 0.0}),
    );
    assert_eq!(body["results"][0]["text"], TOPICS[1]);
}

#[test]
fn limits_and_bodies_are_validated() {
    let client = new_tenant();
    let collection = unique("col");
    create_memory(&client, &collection, json!({"text": "probe"}));
    let path = format!("/v1/memory/collections/{collection}/search");
    for body in [
        json!({}),
        json!({"query": ""}),
        json!({"query": "   "}),
        json!({"query": 5}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "limit": 51}),
        json!({"query": "x", "limit": -1}),
        json!({"query": "x", "limit": "five"}),
        json!({"query": "x", "mode": "fuzzy"}),
        json!({"query": "x", "min_score": 2}),
        json!({"query": "x", "metadata_filter": "no"}),
        json!({"query": "x", "unknown": true}),
    ] {
        let detail = expect_error(client.post(&path, &body), 422);
        assert!(!detail.is_empty(), "{body}");
    }
    for limit in [1, 50] {
        search(
            &client,
            &collection,
            json!({"query": "probe", "limit": limit}),
        );
    }
    expect_error(
        client.post(
            "/v1/memory/collections/never-made/search",
            &json!({"query": "x"}),
        ),
        404,
    );
    expect_error(
        client.post("/v1/memory/search", &json!({"query": "x", "limit": 51})),
        422,
    );
}

#[test]
fn a_filter_matching_3_of_3000_returns_all_3_in_every_mode() {
    // Filters are tested, not the model: 3,000 texts through the real one take half a
    // minute of both cores.
    let client = tenant_on(crate::support::word_embedding_server());
    let collection = unique("col");
    let path = format!("{}/bulk", memories_path(&collection));
    for batch in 0..30 {
        let body: Vec<Value> = (0..100)
            .map(|index| {
                let n = batch * 100 + index;
                let tag = if n % 1000 == 7 { "rare" } else { "common" };
                json!({"text": format!("Meeting note {n} about the harbour renovation budget."),
                       "container_tag": tag, "metadata": {"n": n}})
            })
            .collect();
        expect_status(client.post(&path, &json!(body)), 201);
    }
    for mode in ["hybrid", "vector", "text"] {
        let body = search(
            &client,
            &collection,
            json!({"query": "harbour renovation budget", "mode": mode, "container_tag": "rare",
                   "limit": 10, "min_score": 0.0}),
        );
        assert_eq!(ids(&body).len(), 3, "{mode}: {body}");
        let body = search(
            &client,
            &collection,
            json!({"query": "harbour renovation budget", "mode": mode, "limit": 10,
                   "metadata_filter": {"n": 2007}, "min_score": 0.0}),
        );
        assert_eq!(body["results"][0]["metadata"], json!({"n": 2007}), "{mode}");
        assert_eq!(ids(&body).len(), 1, "{mode}");
    }
}

#[test]
fn hybrid_returns_a_strong_keyword_match_below_min_score() {
    let client = new_tenant();
    let collection = unique("col");
    bulk(&client, &collection, &TOPICS);
    let target = create_memory(
        &client,
        &collection,
        json!({"text": "Replacement part ZX-9471-QV ships from the Leeds warehouse."}),
    );
    let vector = search(
        &client,
        &collection,
        json!({"query": "ZX-9471-QV", "mode": "vector", "min_score": 0.99}),
    );
    assert!(
        !ids(&vector).contains(&id(&target)),
        "below the vector threshold"
    );
    for body in [
        json!({"query": "ZX-9471-QV", "mode": "hybrid", "min_score": 0.99}),
        json!({"query": "ZX-9471-QV", "min_score": 0.99}),
    ] {
        assert_eq!(ids(&search(&client, &collection, body))[0], id(&target));
    }
}

#[test]
fn archived_deleted_and_patched_memories_follow_the_rules() {
    let client = new_tenant();
    let collection = unique("col");
    let visible = create_memory(
        &client,
        &collection,
        json!({"text": "The Orionvale observatory opens at night."}),
    );
    let archived = create_memory(
        &client,
        &collection,
        json!({"text": "The Orionvale observatory lens was replaced."}),
    );
    let doomed = create_memory(
        &client,
        &collection,
        json!({"text": "The Orionvale observatory charges four euros."}),
    );
    expect_status(
        client.post(
            &format!("{}/{}/archive", memories_path(&collection), id(&archived)),
            &json!({"archived": true}),
        ),
        200,
    );
    expect_status(
        client.delete(&format!("{}/{}", memories_path(&collection), id(&doomed))),
        204,
    );
    for mode in ["hybrid", "vector", "text"] {
        let found = ids(&search(
            &client,
            &collection,
            json!({"query": "Orionvale observatory", "mode": mode, "min_score": 0.0, "limit": 10}),
        ));
        assert!(found.contains(&id(&visible)), "{mode}");
        assert!(
            !found.contains(&id(&archived)) && !found.contains(&id(&doomed)),
            "{mode}"
        );
        let with_archived = ids(&search(
            &client,
            &collection,
            json!({"query": "Orionvale observatory", "mode": mode, "min_score": 0.0, "limit": 10, "include_archived": true}),
        ));
        assert!(with_archived.contains(&id(&archived)), "{mode}");
    }
    let patched_text = "Invoice INV-77812 was settled by wire transfer.";
    expect_status(
        client.patch(
            &format!("{}/{}", memories_path(&collection), id(&visible)),
            &json!({"text": patched_text}),
        ),
        200,
    );
    assert_eq!(
        ids(&search(
            &client,
            &collection,
            json!({"query": "INV-77812", "mode": "text"})
        )),
        vec![id(&visible)]
    );
    assert!(ids(&search(
        &client,
        &collection,
        json!({"query": "opens at night", "mode": "text"})
    ))
    .is_empty());
    assert_eq!(
        ids(&search(
            &client,
            &collection,
            json!({"query": patched_text, "mode": "vector"})
        ))[0],
        id(&visible)
    );
}

#[test]
fn an_exact_repeat_is_cached_until_the_collection_changes() {
    let client = new_tenant();
    let collection = unique("col");
    create_memory(
        &client,
        &collection,
        json!({"text": "The lighthouse keeper feeds the seagulls."}),
    );
    let request = json!({"query": "who feeds the seagulls", "limit": 3});
    let first = search(&client, &collection, request.clone());
    let second = search(&client, &collection, request.clone());
    assert_eq!(
        (first["cached"].clone(), second["cached"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(first["results"], second["results"]);
    assert_eq!(
        search(
            &client,
            &collection,
            json!({"query": "who feeds the seagulls", "limit": 4})
        )["cached"],
        false
    );
    create_memory(
        &client,
        &collection,
        json!({"text": "A write changes the collection."}),
    );
    assert_eq!(
        search(&client, &collection, request.clone())["cached"],
        false
    );
    assert_eq!(search(&client, &collection, request)["cached"], true);
}

#[test]
fn rewrite_and_rerank_are_accepted_and_reported_as_skipped() {
    let client = new_tenant();
    let collection = unique("col");
    create_memory(
        &client,
        &collection,
        json!({"text": "Skipped steps probe."}),
    );
    let body = search(
        &client,
        &collection,
        json!({"query": "probe", "rewrite": true, "rerank": true}),
    );
    let steps: Vec<&str> = body["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(steps, vec!["rewrite", "rerank"]);
}

#[test]
fn tenant_wide_search_spans_collections_and_names_them() {
    let client = new_tenant();
    let (first, second) = (unique("col"), unique("col"));
    let one = create_memory(
        &client,
        &first,
        json!({"text": "The Quokkafest picnic is in the north park."}),
    );
    let two = create_memory(
        &client,
        &second,
        json!({"text": "Bring sunscreen to Quokkafest."}),
    );
    let body = expect_status(
        client.post(
            "/v1/memory/search",
            &json!({"query": "Quokkafest", "limit": 10}),
        ),
        200,
    );
    let by_id: std::collections::HashMap<String, Value> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| (item["id"].as_str().unwrap().to_owned(), item.clone()))
        .collect();
    assert_eq!(by_id[&id(&one)]["collection"], first.as_str());
    assert_eq!(by_id[&id(&two)]["collection"], second.as_str());
    // Another tenant sees none of it.
    let other = new_tenant();
    let body = expect_status(
        other.post("/v1/memory/search", &json!({"query": "Quokkafest"})),
        200,
    );
    assert_eq!(body["results"], json!([]));
}

#[test]
fn related_excludes_itself_and_archived_and_ranks_the_twin_first() {
    let client = new_tenant();
    let collection = unique("col");
    bulk(&client, &collection, &TOPICS);
    let anchor = create_memory(
        &client,
        &collection,
        json!({"text": "Biscuit the golden retriever loves chasing tennis balls."}),
    );
    let twin = create_memory(
        &client,
        &collection,
        json!({"text": "Our golden retriever Biscuit adores fetching tennis balls."}),
    );
    let path = format!("{}/{}/related", memories_path(&collection), id(&anchor));
    let body = expect_status(client.get(&path), 200);
    assert_eq!(ids(&body)[0], id(&twin));
    assert_eq!(ids(&body).len(), 5);
    assert!(!ids(&body).contains(&id(&anchor)));
    let everything = ids(&expect_status(
        client.get(&format!("{path}?limit=50&min_score=-1")),
        200,
    ));
    assert_eq!(everything.len(), TOPICS.len() + 1);
    expect_status(
        client.post(
            &format!("{}/{}/archive", memories_path(&collection), id(&twin)),
            &json!({"archived": true}),
        ),
        200,
    );
    assert!(
        !ids(&expect_status(client.get(&format!("{path}?limit=50")), 200)).contains(&id(&twin))
    );
    expect_error(client.get(&format!("{path}?limit=0")), 422);
    expect_error(
        client.get(&format!("{}/nope/related", memories_path(&collection))),
        404,
    );
}

#[test]
fn forget_deletes_only_semantic_matches_and_lists_them() {
    let client = new_tenant();
    let collection = unique("col");
    bulk(&client, &collection, &TOPICS);
    let target = create_memory(
        &client,
        &collection,
        json!({"text": "My old phone number was 555-0100."}),
    );
    let path = format!("/v1/memory/collections/{collection}/forget");
    let body = expect_status(
        client.post(
            &path,
            &json!({"query": "My old phone number was 555-0100."}),
        ),
        200,
    );
    assert_eq!(body["count"], 1);
    assert_eq!(body["deleted"][0]["id"], target["id"]);
    expect_error(
        client.get(&format!("{}/{}", memories_path(&collection), id(&target))),
        404,
    );
    let left = expect_status(client.get(&memories_path(&collection)), 200);
    assert_eq!(left.as_array().unwrap().len(), TOPICS.len());
    expect_error(client.post(&path, &json!({})), 422);
    expect_error(client.post(&path, &json!({"query": "x", "limit": 0})), 422);
}

#[test]
fn indexes_survive_a_restart_and_catch_up_after_a_crash() {
    let (_guard, data_dir) = temp_data_dir();
    let key = "mv_search_restart_key_0123456789ab";
    let environment = [("MEMVAULT_BOOTSTRAP_KEY", key)];
    let mut server = ServerProcess::start(&data_dir, &environment).expect("start");
    let client = server.client(key);
    let saved = create_memory(
        &client,
        "notes",
        json!({"text": "Zanzibar spice market opens at dawn."}),
    );
    server.stop_gracefully();
    let mut server = ServerProcess::start(&data_dir, &environment).expect("restart");
    let client = server.client(key);
    let found = search(
        &client,
        "notes",
        json!({"query": "Zanzibar spice", "mode": "text"}),
    );
    assert_eq!(ids(&found), vec![id(&saved)]);
    // Written after the last save, then SIGKILL: the restart catches the indexes up.
    let unsaved = create_memory(
        &client,
        "notes",
        json!({"text": "Kilimanjaro trek starts Tuesday."}),
    );
    server.kill_hard();
    let server = ServerProcess::start(&data_dir, &environment).expect("restart after kill");
    let client = server.client(key);
    for mode in ["text", "vector", "hybrid"] {
        let found = search(
            &client,
            "notes",
            json!({"query": "Kilimanjaro trek", "mode": mode, "limit": 1}),
        );
        assert_eq!(ids(&found), vec![id(&unsaved)], "{mode}");
    }
}
