//! The account export (a streamed JSON download, no vectors, files by name and size) and
//! the import (collections created, texts re-embedded, ids reassigned): a tenant exported
//! and imported into a fresh one answers the same searches with the same texts.

use std::collections::BTreeMap;

use reqwest::blocking::multipart::{Form, Part};
use serde_json::{json, Value};

use crate::support::{
    expect_error, expect_status, memories_path, shared, tenant_on, unique, Client,
};

const WORDS: [&str; 40] = [
    "lighthouse",
    "bakery",
    "ferry",
    "orchard",
    "observatory",
    "harbour",
    "keeper",
    "bread",
    "island",
    "apples",
    "telescope",
    "crane",
    "fog",
    "oven",
    "noon",
    "ladder",
    "comet",
    "tide",
    "horn",
    "flour",
    "ticket",
    "cider",
    "lens",
    "rope",
    "lamp",
    "yeast",
    "deck",
    "blossom",
    "planet",
    "anchor",
    "storm",
    "crust",
    "wave",
    "harvest",
    "star",
    "sail",
    "beam",
    "dough",
    "gull",
    "moon",
];

/// A distinct sentence for `n`: 5 to 12 words picked by a small LCG, so texts differ in
/// words and length and searches rarely tie.
fn sentence(n: usize) -> String {
    let mut state = (n as u64)
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let count = 5 + n % 8;
    let words: Vec<&str> = (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            WORDS[(state >> 33) as usize % WORDS.len()]
        })
        .collect();
    format!("Note {n}: {}.", words.join(" "))
}

fn export(client: &Client) -> Value {
    let response = client.get("/v1/memory/admin/export");
    assert_eq!(response.status(), 200);
    let disposition = response.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        disposition.starts_with("attachment; filename=\"memvault-export-"),
        "{disposition}"
    );
    let text = response.text().unwrap();
    let body: Value = serde_json::from_str(&text).expect("the export is JSON");
    body
}

fn texts_by_collection(client: &Client) -> BTreeMap<String, Vec<String>> {
    let collections = expect_status(client.get("/v1/memory/collections"), 200);
    let mut found = BTreeMap::new();
    for collection in collections.as_array().unwrap() {
        let name = collection["name"].as_str().unwrap().to_owned();
        let mut texts: Vec<String> = Vec::new();
        loop {
            let path = format!(
                "{}?limit=200&offset={}&include_archived=true",
                memories_path(&name),
                texts.len()
            );
            let page = expect_status(client.get(&path), 200);
            let page = page.as_array().unwrap();
            texts.extend(
                page.iter()
                    .map(|memory| memory["text"].as_str().unwrap().to_owned()),
            );
            if page.len() < 200 {
                break;
            }
        }
        texts.sort();
        found.insert(name, texts);
    }
    found
}

/// The top 20 as (score, text), equal scores put in text order (their order among
/// themselves depends on ids, which an import reassigns), without the results tied with
/// the last one (which of them made the cut depends on ids too).
fn top_texts(client: &Client, collection: &str, query: &str, mode: &str) -> Vec<(f64, String)> {
    let body = expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &json!({"query": query, "mode": mode, "limit": 20}),
        ),
        200,
    );
    let mut top: Vec<(f64, String)> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["score"].as_f64().unwrap(),
                item["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    top.sort_by(|a, b| {
        if (a.0 - b.0).abs() < 1e-6 {
            a.1.cmp(&b.1)
        } else {
            b.0.total_cmp(&a.0)
        }
    });
    if let Some(last) = top.last().map(|(score, _)| *score) {
        top.retain(|(score, _)| score - last > 1e-6);
    }
    top
}

/// The same texts in the same order with scores equal up to float noise. For hybrid
/// search only the top 10 are compared: its fusion takes a window of keyword candidates,
/// and keyword scores tied at the window's edge are cut by memory id, which an import
/// reassigns, so the tail of a long hybrid list may differ by one tied candidate.
#[track_caller]
fn assert_same_results(left: &[(f64, String)], right: &[(f64, String)], what: &str) {
    let shown = if what.starts_with("hybrid") {
        10
    } else {
        usize::MAX
    };
    let (left, right) = (
        &left[..left.len().min(shown)],
        &right[..right.len().min(shown)],
    );
    let texts = |results: &[(f64, String)]| {
        results
            .iter()
            .map(|(_, text)| text.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(left), texts(right), "{what}");
    for ((a, _), (b, _)) in left.iter().zip(right) {
        assert!((a - b).abs() < 1e-4, "{what}: scores {a} and {b}");
    }
}

fn has_vector(node: &Value) -> bool {
    match node {
        Value::Array(items) => {
            (items.len() >= 100 && items.iter().all(Value::is_number))
                || items.iter().any(has_vector)
        }
        Value::Object(fields) => fields.values().any(has_vector),
        _ => false,
    }
}

#[test]
fn an_exported_tenant_imported_into_a_fresh_one_answers_the_same_searches() {
    let source = tenant_on(shared());
    let (notes, log, empty) = (unique("notes"), unique("log"), unique("empty"));
    expect_status(
        source.post(
            "/v1/memory/collections",
            &json!({"name": empty, "description": "Nothing yet.", "metadata": {"owner": "ada"}}),
        ),
        201,
    );
    // 300 memories over two collections, in bulk.
    for (collection, start) in [(&notes, 0), (&log, 150)] {
        for chunk in 0..3 {
            let items: Vec<Value> = (0..50)
                .map(|i| {
                    let n = start + chunk * 50 + i;
                    json!({
                        "text": sentence(n),
                        "importance": 0.3 + (n % 5) as f64 / 10.0,
                        "metadata": {"n": n},
                    })
                })
                .collect();
            expect_status(
                source.post(
                    &format!("{}/bulk", memories_path(collection)),
                    &json!(items),
                ),
                201,
            );
        }
    }
    // One memory with a file, one archived.
    let form = Form::new()
        .text("text", "The orchard plan is in the attached file.")
        .part(
            "files",
            Part::bytes(b"rows of apple trees".to_vec()).file_name("plan.txt"),
        );
    let uploaded = source
        .request(
            reqwest::Method::POST,
            &format!("{}/upload", memories_path(&notes)),
        )
        .multipart(form)
        .send()
        .unwrap();
    assert_eq!(uploaded.status(), 201);
    let archived = expect_status(
        source.post(
            &memories_path(&log),
            &json!({"text": "The old harbour crane was taken down."}),
        ),
        201,
    );
    expect_status(
        source.post(
            &format!(
                "{}/{}/archive",
                memories_path(&log),
                archived["id"].as_str().unwrap()
            ),
            &json!({"archived": true}),
        ),
        200,
    );

    let body = export(&source);
    assert_eq!(body["format"], "memvault-export");
    assert_eq!(body["memories"].as_array().unwrap().len(), 302);
    assert!(!has_vector(&body), "the export holds a vector");
    let with_file = body["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|memory| memory["text"] == "The orchard plan is in the attached file.")
        .unwrap();
    assert_eq!(with_file["files"][0]["filename"], "plan.txt");
    assert_eq!(with_file["files"][0]["size"], 19);
    assert_eq!(with_file["collection"], notes.as_str());
    let empty_entry = body["collections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|collection| collection["name"] == empty.as_str())
        .unwrap();
    assert_eq!(empty_entry["description"], "Nothing yet.");

    // Into a fresh tenant: the export as it is.
    let target = tenant_on(shared());
    let answer = expect_status(
        target.post(
            "/v1/memory/admin/import",
            &json!({"memories": body["memories"], "collections": body["collections"]}),
        ),
        200,
    );
    assert_eq!(answer["imported"], 302, "{answer}");
    assert_eq!(answer["skipped"], 0, "{answer}");
    assert_eq!(texts_by_collection(&target), texts_by_collection(&source));
    for query in [
        "lighthouse keeper in the fog",
        "bread oven flour",
        "telescope comet",
        "anchor in the storm",
        "orchard plan",
    ] {
        for collection in [&notes, &log] {
            for mode in ["vector", "text", "hybrid"] {
                assert_same_results(
                    &top_texts(&target, collection, query, mode),
                    &top_texts(&source, collection, query, mode),
                    &format!("{mode} search for {query:?} in {collection}"),
                );
            }
        }
    }
    // Ids are new; the archived memory stays archived; the empty collection came along.
    let target_export = export(&target);
    let ids = |export: &Value| -> Vec<String> {
        export["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|memory| memory["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let source_ids = ids(&body);
    assert!(ids(&target_export)
        .iter()
        .all(|id| !source_ids.contains(id)));
    let crane = target_export["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|memory| memory["text"] == "The old harbour crane was taken down.")
        .unwrap();
    assert_eq!(crane["archived"], true);
    let described = expect_status(target.get(&format!("/v1/memory/collections/{empty}")), 200);
    assert_eq!(described["description"], "Nothing yet.");
}

#[test]
fn import_skips_bad_items_refuses_bad_bodies_and_read_only_keys() {
    let tenant = tenant_on(shared());
    let target = unique("into");
    let answer = expect_status(
        tenant.post(
            "/v1/memory/admin/import",
            &json!({
                "memories": [
                    {"text": "A good memory about the canal.", "collection": "ignored-by-into"},
                    {"text": ""},
                    "not an object",
                    {"text": "Another good one.", "importance": 7},
                    {"text": "Without a collection, into the target."},
                    {"collection": 5, "text": "into_collection wins over a bad collection"}
                ],
                "into_collection": target,
            }),
        ),
        200,
    );
    assert_eq!(answer["imported"], 3, "{answer}");
    assert_eq!(answer["skipped"], 3, "{answer}");
    assert_eq!(answer["collections"], json!([target]));
    let skipped: Vec<u64> = answer["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|error| error["index"].as_u64().unwrap())
        .collect();
    assert_eq!(skipped, vec![1, 2, 3]);
    // Without a collection and without into_collection: the `imported` collection.
    let answer = expect_status(
        tenant.post(
            "/v1/memory/admin/import",
            &json!({"memories": [{"text": "Homeless memory."}]}),
        ),
        200,
    );
    assert_eq!(answer["collections"], json!(["imported"]));

    for body in [
        json!({}),
        json!({"memories": "not a list"}),
        json!({"memories": [], "into_collection": "bad name!"}),
        json!({"memories": [], "collections": [5]}),
    ] {
        expect_error(tenant.post("/v1/memory/admin/import", &body), 422);
    }
    let reader = expect_status(
        tenant.post(
            "/v1/memory/keys",
            &json!({"label": "reader", "read_only": true}),
        ),
        201,
    );
    let reader = Client::new(&shared().base_url, reader["key"].as_str());
    let refused = unique("refused");
    expect_error(
        reader.post(
            "/v1/memory/admin/import",
            &json!({"memories": [{"text": "Not by a reader.", "collection": refused}]}),
        ),
        403,
    );
    expect_error(
        tenant.get(&format!("/v1/memory/collections/{refused}")),
        404,
    );
    expect_error(
        Client::new(&shared().base_url, None).get("/v1/memory/admin/export"),
        401,
    );
}

/// Follows an import job until it is finished; the `imported` counts it saw on the way.
fn follow_import(client: &Client, id: &str) -> (Value, Vec<u64>) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(900);
    let mut seen = Vec::new();
    loop {
        let job = expect_status(client.get(&format!("/v1/memory/admin/import/{id}")), 200);
        seen.push(job["imported"].as_u64().unwrap());
        if job["state"] == "done" || job["state"] == "failed" {
            return (job, seen);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the import did not finish: {job}"
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

#[test]
fn ten_thousand_memories_with_files_export_and_import_as_a_job_with_the_same_searches() {
    const MEMORIES: usize = 10_000;
    // What is tested is the export and import machinery at this size, not the model.
    let server = crate::support::word_embedding_server();
    let source = tenant_on(server);
    let (notes, log) = (unique("notes"), unique("log"));
    for (collection, start) in [(&notes, 0), (&log, MEMORIES / 2)] {
        for chunk in 0..MEMORIES / 2 / 100 {
            let items: Vec<Value> = (0..100)
                .map(|i| {
                    let n = start + chunk * 100 + i;
                    json!({"text": format!("{} (entry {n})", sentence(n)), "metadata": {"n": n}})
                })
                .collect();
            expect_status(
                source.post(
                    &format!("{}/bulk", memories_path(collection)),
                    &json!(items),
                ),
                201,
            );
        }
    }
    // Files: two dropped (their text becomes memories) and one attached to a memory.
    let form = Form::new()
        .part(
            "files",
            Part::bytes(
                b"The lighthouse logbook lists every ship that passed in the fog.".to_vec(),
            )
            .file_name("logbook.txt"),
        )
        .part(
            "files",
            Part::bytes(b"Bake the sourdough at dawn; the oven must be very hot.".to_vec())
                .file_name("bakery.md"),
        );
    let dropped = source
        .request(
            reqwest::Method::POST,
            &format!("/v1/memory/collections/{notes}/drop"),
        )
        .multipart(form)
        .send()
        .unwrap();
    expect_status(dropped, 201);
    let form = Form::new()
        .text("text", "The harbour map is in the attached file.")
        .part(
            "files",
            Part::bytes(b"harbour map".to_vec()).file_name("map.txt"),
        );
    let uploaded = source
        .request(
            reqwest::Method::POST,
            &format!("{}/upload", memories_path(&log)),
        )
        .multipart(form)
        .send()
        .unwrap();
    expect_status(uploaded, 201);

    let body = export(&source);
    let exported = body["memories"].as_array().unwrap().len();
    assert_eq!(exported, MEMORIES + 3, "two dropped files and one upload");
    assert!(body["memories"]
        .as_array()
        .unwrap()
        .iter()
        .any(|memory| memory["files"][0]["filename"] == "map.txt"));

    let target = tenant_on(server);
    let accepted = expect_status(
        target.post(
            "/v1/memory/admin/import",
            &json!({"memories": body["memories"], "collections": body["collections"]}),
        ),
        202,
    );
    assert_eq!(accepted["total"], exported, "{accepted}");
    let id = accepted["import_id"]
        .as_str()
        .expect("import_id")
        .to_owned();
    // Another tenant does not see it.
    expect_error(source.get(&format!("/v1/memory/admin/import/{id}")), 404);
    let (finished, seen) = follow_import(&target, &id);
    assert_eq!(finished["state"], "done", "{finished}");
    assert_eq!(finished["imported"], exported, "{finished}");
    assert_eq!(finished["skipped"], 0, "{finished}");
    assert!(seen.windows(2).all(|pair| pair[0] <= pair[1]), "{seen:?}");
    println!(
        "import progress seen: {} polls, {:?}",
        seen.len(),
        &seen[..seen.len().min(8)]
    );

    assert_eq!(texts_by_collection(&target), texts_by_collection(&source));
    for query in [
        "lighthouse keeper in the fog",
        "bread oven flour",
        "telescope comet",
        "harbour map",
    ] {
        for collection in [&notes, &log] {
            for mode in ["vector", "text", "hybrid"] {
                assert_same_results(
                    &top_texts(&target, collection, query, mode),
                    &top_texts(&source, collection, query, mode),
                    &format!("{mode} search for {query:?} in {collection}"),
                );
            }
        }
    }
}

#[test]
fn an_import_cut_by_kill_9_resumes_and_stores_each_memory_once() {
    const KEY: &str = "mv_import_admin_key_0123456789abcdef";
    const ITEMS: usize = 3_000;
    let (_guard, data_dir) = crate::support::temp_data_dir();
    let mut server =
        crate::support::ServerProcess::start(&data_dir, &[("MEMVAULT_BOOTSTRAP_KEY", KEY)])
            .expect("server starts");
    let client = server.client(KEY);
    let items: Vec<Value> = (0..ITEMS)
        .map(|n| json!({"text": format!("{} (item {n})", sentence(n)), "collection": "restored"}))
        .collect();
    let accepted = expect_status(
        client.post("/v1/memory/admin/import", &json!({"memories": items})),
        202,
    );
    let id = accepted["import_id"].as_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let before = loop {
        let job = expect_status(client.get(&format!("/v1/memory/admin/import/{id}")), 200);
        if job["imported"].as_u64().unwrap() >= 256 {
            break job;
        }
        assert!(std::time::Instant::now() < deadline, "no progress: {job}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_ne!(
        before["state"], "done",
        "the import finished before the kill: {before}"
    );
    server.kill_hard();
    println!("killed at {} of {ITEMS}", before["imported"]);

    let restarted = crate::support::ServerProcess::start(&data_dir, &[]).expect("server restarts");
    let client = restarted.client(KEY);
    let (finished, _) = follow_import(&client, &id);
    assert_eq!(finished["state"], "done", "{finished}");
    assert_eq!(finished["imported"], ITEMS, "{finished}");
    let texts = texts_by_collection(&client);
    let restored = &texts["restored"];
    assert_eq!(restored.len(), ITEMS, "each item stored once");
    let mut unique_texts = restored.clone();
    unique_texts.dedup();
    assert_eq!(unique_texts.len(), ITEMS);
}
