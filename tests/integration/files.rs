//! Files, end to end over HTTP: every real format dropped, found by a text search and
//! downloaded byte for byte through its presigned URL; a file that crashes or hangs its
//! worker failing alone; a batch cut by kill -9 finishing exactly once after a restart;
//! duplicates; files following their memories (delete, move, dedup); URL expiry.
//!
//! The spec-level checks of each endpoint are in `shared/conformance/test_files.py`; these
//! are the process-level ones. Misbehaving workers are played by
//! `tests/fixtures/files-worker.sh`, which passes any other file to the real worker.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{
    expect_status, memories_path, start_in_process, temp_data_dir, tenant_on, unique, Client,
    ServerProcess, TestServer,
};

const KEY: &str = "mv_files_admin_key_0123456789abcdef";
/// A synchronous drop of real files waits for every extraction (OCR, speech, pdfium, the
/// engines fetched on first use).
const DROP_TIMEOUT: Duration = Duration::from_secs(900);

fn shared_file(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/files")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/files")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A `multipart/form-data` body: each file a part named `files`, then the fields.
fn multipart(files: &[(String, Vec<u8>)], fields: &[(&str, &str)]) -> (Vec<u8>, String) {
    let boundary = format!("memvault-test-{}", unique("b"));
    let mut body = Vec::new();
    for (name, bytes) in files {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; \
                 filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    for (name, value) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                .as_bytes(),
        );
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (body, format!("multipart/form-data; boundary={boundary}"))
}

fn send_form(
    client: &Client,
    path: &str,
    files: &[(String, Vec<u8>)],
    fields: &[(&str, &str)],
) -> reqwest::blocking::Response {
    let (body, content_type) = multipart(files, fields);
    client
        .request(Method::POST, path)
        .header("content-type", content_type)
        .body(body)
        .timeout(DROP_TIMEOUT)
        .send()
        .expect("request")
}

/// A synchronous drop (201): its body.
#[track_caller]
fn drop_now(client: &Client, collection: &str, files: &[(String, Vec<u8>)]) -> Value {
    let path = format!("/v1/memory/collections/{collection}/drop");
    expect_status(send_form(client, &path, files, &[]), 201)
}

/// An asynchronous drop (202): its body.
#[track_caller]
fn drop_later(client: &Client, collection: &str, files: &[(String, Vec<u8>)]) -> Value {
    let path = format!("/v1/memory/collections/{collection}/drop");
    expect_status(
        send_form(client, &path, files, &[("async_ingest", "true")]),
        202,
    )
}

/// One memory with `text` and the files attached.
#[track_caller]
fn upload(
    client: &Client,
    collection: &str,
    text: &str,
    importance: &str,
    files: &[(String, Vec<u8>)],
) -> Value {
    let path = format!("{}/upload", memories_path(collection));
    expect_status(
        send_form(
            client,
            &path,
            files,
            &[("text", text), ("importance", importance)],
        ),
        201,
    )
}

fn batch(client: &Client, id: &str) -> Value {
    expect_status(client.get(&format!("/v1/memory/ingest/batch/{id}")), 200)
}

/// Polls the batch until `done` says so; its last state.
#[track_caller]
fn poll_batch(
    client: &Client,
    id: &str,
    timeout: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + timeout;
    loop {
        let state = batch(client, id);
        if done(&state) {
            return state;
        }
        assert!(
            Instant::now() < deadline,
            "batch {id} did not get there: {state:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn text_search(client: &Client, collection: &str, query: &str) -> Vec<Value> {
    let body = expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &json!({"query": query, "mode": "text", "limit": 50}),
        ),
        200,
    );
    body["results"].as_array().expect("results").clone()
}

fn get_memory(client: &Client, collection: &str, id: &str) -> Value {
    expect_status(
        client.get(&format!("{}/{id}", memories_path(collection))),
        200,
    )
}

/// Every memory of the collection.
fn all_memories(client: &Client, collection: &str) -> Vec<Value> {
    let mut memories = Vec::new();
    loop {
        let page = expect_status(
            client.get(&format!(
                "{}?limit=200&offset={}",
                memories_path(collection),
                memories.len()
            )),
            200,
        );
        let page = page.as_array().expect("array").clone();
        let last = page.len() < 200;
        memories.extend(page);
        if last {
            return memories;
        }
    }
}

/// A presigned URL fetched the way a browser would: no key.
fn fetch(url: &str) -> reqwest::blocking::Response {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client")
        .get(url)
        .send()
        .expect("download")
}

fn first_url(memory: &Value) -> String {
    memory["images"][0]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("no file URL: {memory:#}"))
        .to_owned()
}

#[track_caller]
fn assert_downloads(url: &str, original: &[u8], what: &str) {
    let response = fetch(url);
    assert_eq!(response.status().as_u16(), 200, "{what}: {url}");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        header("content-disposition").starts_with("attachment"),
        "{what}: Content-Disposition {:?}",
        header("content-disposition")
    );
    assert_eq!(header("x-content-type-options"), "nosniff", "{what}");
    let bytes = response.bytes().expect("body");
    assert!(
        bytes.as_ref() == original,
        "{what}: {} bytes downloaded, the original has {}",
        bytes.len(),
        original.len()
    );
}

#[track_caller]
fn assert_status(url: &str, status: u16, what: &str) {
    let response = fetch(url);
    let actual = response.status().as_u16();
    let text = response.text().unwrap_or_default();
    assert_eq!(actual, status, "{what}: {text}");
}

/// A program for `files.worker_program`: `tests/fixtures/files-worker.sh` told where the
/// real worker is.
fn misbehaving_worker(directory: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/files-worker.sh");
    let wrapper = directory.join("worker.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nMEMVAULT_WORKER_BIN='{}' exec '{}' \"$@\"\n",
            env!("CARGO_BIN_EXE_memvault"),
            script.display()
        ),
    )
    .expect("write the wrapper");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    wrapper
}

/// Files, each of its own server: the shared one is never reconfigured.
fn files_server(configure: impl FnOnce(&mut memvault_server::config::Config)) -> TestServer {
    start_in_process(configure)
}

#[test]
fn every_format_is_found_by_its_text_and_downloads_as_the_exact_original() {
    let server = files_server(|_| {});
    let client = tenant_on(&server);
    let collection = "formats";
    // (file name, bytes, kind the server reads it as, a phrase of its text)
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        (
            "minimal-document.pdf",
            shared_file("minimal-document.pdf"),
            "pdf",
            "sed diam nonumy eirmod",
        ),
        (
            "google-doc-document.pdf",
            shared_file("google-doc-document.pdf"),
            "pdf",
            "Namespaces are one honking great idea",
        ),
        (
            "par-known-paragraphs.docx",
            shared_file("par-known-paragraphs.docx"),
            "docx",
            "Heading Paragraph",
        ),
        (
            "test-slides.pptx",
            shared_file("test-slides.pptx"),
            "pptx",
            "Group test text",
        ),
        (
            "any-sheets.xlsx",
            shared_file("any-sheets.xlsx"),
            "xlsx",
            "This workbook contains 4 sheets",
        ),
        (
            "libre-office-writer.odt",
            shared_file("libre-office-writer.odt"),
            "odt",
            "At vero eos et accusam",
        ),
        (
            "aldermoor-field-notes.epub",
            fixture("aldermoor-field-notes.epub"),
            "epub",
            "contained charred hazelnut shells",
        ),
        (
            "skerryvane-lighthouse.html",
            shared_file("skerryvane-lighthouse.html"),
            "html",
            "Paraffin for the lamp room",
        ),
        (
            "aldermoor-field-notes.md",
            shared_file("aldermoor-field-notes.md"),
            "markdown",
            "38 cm below the surface at the northern stake",
        ),
        (
            "pigments.csv",
            shared_file("pigments.csv"),
            "csv",
            "copper plates exposed to vinegar fumes",
        ),
        (
            "ferry-timetable.json",
            shared_file("ferry-timetable.json"),
            "json",
            "Bicycles travel free on the first sailing",
        ),
        (
            "hare-and-tortoise.eml",
            shared_file("hare-and-tortoise.eml"),
            "eml",
            "Slow but steady wins the race",
        ),
        (
            "aldermoor-field-notes.rtf",
            fixture("aldermoor-field-notes.rtf"),
            "rtf",
            "whether the 1871 drainage map shows the lost causeway",
        ),
        (
            "google-doc-document-page1.png",
            shared_file("google-doc-document-page1.png"),
            "png",
            "Explicit is better than implicit",
        ),
        ("jfk.wav", shared_file("jfk.wav"), "wav", "fellow Americans"),
    ];
    let files: Vec<(String, Vec<u8>)> = cases
        .iter()
        .map(|(name, bytes, _, _)| (name.to_string(), bytes.clone()))
        .collect();
    let started = Instant::now();
    let dropped = drop_now(&client, collection, &files);
    println!("{} files dropped in {:?}", files.len(), started.elapsed());
    assert_eq!(dropped["failed"], 0, "{dropped:#}");
    let results = dropped["results"].as_array().expect("results");
    assert_eq!(results.len(), cases.len());
    for ((name, original, kind, phrase), result) in cases.iter().zip(results) {
        assert_eq!(result["filename"], *name, "{result:#}");
        assert_eq!(result["status"], "done", "{name}: {result:#}");
        assert_eq!(result["kind"], *kind, "{name}: {result:#}");
        assert_eq!(result["size"], original.len(), "{name}");
        let file_id = result["file_id"].as_str().expect("file_id");
        let hits = text_search(&client, collection, phrase);
        let hit = hits
            .iter()
            .find(|hit| hit["images"][0]["file_id"] == file_id)
            .unwrap_or_else(|| {
                panic!("{name}: a text search for {phrase:?} does not find it: {hits:#?}")
            });
        assert_eq!(hit["metadata"]["file_id"], file_id, "{name}");
        assert!(
            hit["text"]
                .as_str()
                .unwrap_or_default()
                .to_lowercase()
                .contains(&phrase.to_lowercase()),
            "{name}: the hit does not hold {phrase:?}: {hit:#}"
        );
        assert_eq!(hit["images"][0]["size"], original.len(), "{name}");
        assert_downloads(&first_url(hit), original, name);
    }
}

#[test]
fn a_file_that_crashes_or_hangs_its_worker_fails_alone() {
    let directory = tempfile::tempdir().expect("temp dir");
    let worker = misbehaving_worker(directory.path());
    let server = files_server(|config| {
        config.files.worker_program = Some(worker);
        config.files.worker_wall_secs = 3;
    });
    let client = tenant_on(&server);
    let files = |tag: &str| -> Vec<(String, Vec<u8>)> {
        ["good.txt", "hang.txt", "crash.txt", "good2.txt"]
            .iter()
            .map(|name| {
                (
                    name.to_string(),
                    format!("{tag}: the {name} file mentions the heron colony at Quillmere.")
                        .into_bytes(),
                )
            })
            .collect()
    };
    let check_failure = |name: &str, reason: &str| match name {
        "hang.txt" => assert!(
            reason.contains("did not finish within 3 s"),
            "hang.txt: {reason}"
        ),
        "crash.txt" => assert!(reason.contains("SIGSEGV"), "crash.txt: {reason}"),
        other => panic!("{other} failed: {reason}"),
    };

    // Synchronously: one result per file, in order.
    let started = Instant::now();
    let dropped = drop_now(&client, "now", &files("now"));
    println!("synchronous drop answered in {:?}", started.elapsed());
    assert_eq!(
        (dropped["done"].as_u64(), dropped["failed"].as_u64()),
        (Some(2), Some(2)),
        "{dropped:#}"
    );
    for result in dropped["results"].as_array().expect("results") {
        let name = result["filename"].as_str().unwrap();
        if name.starts_with("good") {
            assert_eq!(result["status"], "done", "{result:#}");
            let ids = result["memory_ids"].as_array().unwrap();
            assert_eq!(ids.len(), 1, "{result:#}");
            let memory = get_memory(&client, "now", ids[0].as_str().unwrap());
            assert!(
                memory["text"].as_str().unwrap().contains(name),
                "{memory:#}"
            );
        } else {
            assert_eq!(result["status"], "failed", "{result:#}");
            let code = if name == "hang.txt" {
                "timed_out"
            } else {
                "worker_crashed"
            };
            assert_eq!(result["code"], code, "{result:#}");
            // What the file is, by content, even though reading it failed.
            assert_eq!(result["kind"], "text", "{result:#}");
            check_failure(name, result["detail"].as_str().unwrap_or_default());
        }
    }
    assert_eq!(all_memories(&client, "now").len(), 2);

    // As a batch: the same, and the batch completes.
    let accepted = drop_later(&client, "later", &files("later"));
    let id = accepted["batch_id"].as_str().expect("batch_id").to_owned();
    let finished = poll_batch(&client, &id, Duration::from_secs(120), |batch| {
        batch["complete"] == true
    });
    assert_eq!(
        (
            finished["done"].as_u64(),
            finished["failed"].as_u64(),
            finished["pending"].as_u64()
        ),
        (Some(2), Some(2), Some(0)),
        "{finished:#}"
    );
    for item in finished["items"].as_array().unwrap() {
        let name = item["filename"].as_str().unwrap();
        if name.starts_with("good") {
            assert_eq!(item["state"], "done", "{item:#}");
            assert_eq!(item["memory_ids"].as_array().unwrap().len(), 1, "{item:#}");
        } else {
            assert_eq!(item["state"], "failed", "{item:#}");
            assert!(
                item["memory_ids"].as_array().unwrap().is_empty(),
                "{item:#}"
            );
            check_failure(name, item["reason"].as_str().unwrap_or_default());
        }
    }
    assert_eq!(all_memories(&client, "later").len(), 2);
}

#[test]
fn a_batch_cut_by_kill_9_finishes_after_a_restart_with_each_file_stored_once() {
    const FILES: usize = 20;
    let (_guard, data_dir) = temp_data_dir();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/files-worker.sh");
    let script = script.to_str().expect("a UTF-8 path").to_owned();
    let environment = [
        ("MEMVAULT__FILES__WORKER_PROGRAM", script.as_str()),
        ("MEMVAULT_WORKER_BIN", env!("CARGO_BIN_EXE_memvault")),
    ];
    let mut first_environment = environment.to_vec();
    first_environment.push(("MEMVAULT_BOOTSTRAP_KEY", KEY));
    let mut server = ServerProcess::start(&data_dir, &first_environment).expect("server starts");
    let client = server.client(KEY);
    let words = [
        "alder", "birch", "cedar", "damson", "elm", "fir", "ginkgo", "hazel", "ilex", "juniper",
        "katsura", "larch", "maple", "nutmeg", "oak", "pine", "quince", "rowan", "spruce", "teak",
    ];
    let files: Vec<(String, Vec<u8>)> = words
        .iter()
        .enumerate()
        .map(|(index, word)| {
            (
                format!("slow-{index:02}.txt"),
                format!("Nursery row {index} holds {word} saplings planted by the {word} crew.")
                    .into_bytes(),
            )
        })
        .collect();
    assert_eq!(files.len(), FILES);
    let accepted = drop_later(&client, "orchard", &files);
    let id = accepted["batch_id"].as_str().expect("batch_id").to_owned();
    let before = poll_batch(&client, &id, Duration::from_secs(300), |batch| {
        batch["done"].as_u64().unwrap_or(0) >= 3
    });
    assert!(
        before["done"].as_u64().unwrap() < FILES as u64,
        "the batch finished too soon: {before:#}"
    );
    server.kill_hard();
    println!("killed with {} of {FILES} done", before["done"]);

    let restarted = ServerProcess::start(&data_dir, &environment).expect("server restarts");
    let client = restarted.client(KEY);
    let finished = poll_batch(&client, &id, Duration::from_secs(300), |batch| {
        batch["complete"] == true
    });
    assert_eq!(finished["done"], FILES, "{finished:#}");
    let restarted_items = finished["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["attempts"].as_u64().unwrap_or(0) > 1)
        .count();
    println!("{restarted_items} item(s) ran again after the restart");

    let mut per_file: HashMap<String, Vec<String>> = HashMap::new();
    for memory in all_memories(&client, "orchard") {
        let file_id = memory["metadata"]["file_id"]
            .as_str()
            .expect("file_id")
            .to_owned();
        per_file
            .entry(file_id)
            .or_default()
            .push(memory["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(per_file.len(), FILES, "{per_file:#?}");
    for item in finished["items"].as_array().unwrap() {
        let file_id = item["file_id"].as_str().unwrap();
        let stored = per_file.get(file_id).cloned().unwrap_or_default();
        assert_eq!(stored.len(), 1, "{item:#}: memories {stored:?}");
        assert_eq!(item["memory_ids"], json!(stored), "{item:#}");
    }
}

#[test]
fn the_same_file_twice_in_a_collection_is_a_duplicate_and_in_another_is_stored() {
    let server = files_server(|_| {});
    let client = tenant_on(&server);
    let file = vec![("pigments.csv".to_owned(), shared_file("pigments.csv"))];
    let first = drop_now(&client, "paints", &file);
    let first = &first["results"][0];
    assert_eq!(first["status"], "done", "{first:#}");
    let stored = all_memories(&client, "paints");

    let again = drop_now(&client, "paints", &file);
    let again = &again["results"][0];
    assert_eq!(again["status"], "duplicate", "{again:#}");
    assert_eq!(again["memory_ids"], first["memory_ids"], "{again:#}");
    let ids = |memories: &[Value]| -> HashSet<String> {
        memories
            .iter()
            .map(|memory| memory["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&all_memories(&client, "paints")), ids(&stored));

    // Also as a batch: the item is done, naming the stored memories.
    let accepted = drop_later(&client, "paints", &file);
    let finished = poll_batch(
        &client,
        accepted["batch_id"].as_str().unwrap(),
        Duration::from_secs(120),
        |batch| batch["complete"] == true,
    );
    let item = &finished["items"][0];
    assert_eq!(item["state"], "done", "{item:#}");
    assert_eq!(item["memory_ids"], first["memory_ids"], "{item:#}");
    assert!(
        item["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("same file"),
        "{item:#}"
    );
    assert_eq!(ids(&all_memories(&client, "paints")), ids(&stored));

    let elsewhere = drop_now(&client, "inks", &file);
    let elsewhere = &elsewhere["results"][0];
    assert_eq!(elsewhere["status"], "done", "{elsewhere:#}");
    assert_ne!(elsewhere["file_id"], first["file_id"]);
    let memories = all_memories(&client, "inks");
    assert_eq!(memories.len(), stored.len());
    assert_downloads(
        &first_url(&memories[0]),
        &file[0].1,
        "the copy in another collection",
    );
    // The first copy is still there too.
    let kept = get_memory(&client, "paints", first["memory_ids"][0].as_str().unwrap());
    assert_downloads(&first_url(&kept), &file[0].1, "the first copy");
}

/// Paragraphs on unrelated subjects, so the chunks of the file are far apart.
const ESSAY: &str = "\
Tidal mills on the Atlantic coast stored sea water in a pond at high tide and released it \
through a wheel as the tide fell. The miller's working day followed the moon, so grinding \
often started in the middle of the night, and a mill that lost its sluice gate in a storm \
could stand idle for a whole season while carpenters shaped a new one from seasoned oak.

The violin family settled into its modern form in northern Italy during the sixteenth \
century. Makers in Cremona refined the arching of the plates, the shape of the f-holes and \
the varnish, and their instruments were later rebuilt with longer necks and heavier bass \
bars so they could fill large concert halls with sound.

Sourdough starters are colonies of wild yeasts and lactic acid bacteria living in flour \
and water. Feeding the starter on a regular schedule keeps the balance between the two, \
and bakers adjust the temperature of the kitchen to make the bread more or less sour, \
since warm fermentation favours the bacteria that produce acetic and lactic acid.

Glaciers move because ice deforms under its own weight and slides over meltwater at its \
base. Crevasses open where the ice stretches over a steepening bed, and surveyors measure \
the flow by planting stakes and returning each summer to record how far downstream each \
one has travelled since the previous visit.

Chess engines search a tree of possible moves and score the positions at its leaves. \
Modern engines combine that search with evaluation functions learned from millions of \
games, and their suggestions have changed how grandmasters prepare openings, especially \
sharp lines that were once thought too risky for tournament play.

Lighthouse keepers kept logs of the weather, passing ships and the oil burned each night. \
On remote rocks the relief boat might be delayed for weeks by heavy seas, so every station \
kept stores of flour, tinned meat and paraffin, and the keepers learned to mend their own \
clothes, boots and lamps with whatever the last supply run had brought them.
";

#[test]
fn files_follow_their_memories_through_delete_move_and_dedup() {
    let server = files_server(|_| {});
    let client = tenant_on(&server);
    let attachment = |name: &str| {
        (
            name.to_owned(),
            format!("the contents of {name}").into_bytes(),
        )
    };

    // Delete: the file goes with its memory.
    let doomed_file = attachment("doomed.txt");
    let doomed = upload(
        &client,
        "desk",
        "a note about the doomed file",
        "0.5",
        std::slice::from_ref(&doomed_file),
    );
    let doomed_url = first_url(&doomed);
    assert_downloads(&doomed_url, &doomed_file.1, "before the delete");
    expect_status(
        client.delete(&format!(
            "{}/{}",
            memories_path("desk"),
            doomed["id"].as_str().unwrap()
        )),
        204,
    );
    assert_status(&doomed_url, 404, "after the delete");

    // Move: the file stays, under the URL given before and the one read after.
    let moving_file = attachment("moving.txt");
    let moving = upload(
        &client,
        "desk",
        "a note that moves to the archive",
        "0.5",
        std::slice::from_ref(&moving_file),
    );
    let moving_url = first_url(&moving);
    let moved = expect_status(
        client.post(
            &format!(
                "{}/{}/move",
                memories_path("desk"),
                moving["id"].as_str().unwrap()
            ),
            &json!({"to_collection": "archive"}),
        ),
        200,
    );
    let moved_id = moved["id"].as_str().expect("id").to_owned();
    assert_downloads(&moving_url, &moving_file.1, "the URL given before the move");
    let moved = get_memory(&client, "archive", &moved_id);
    assert_eq!(
        moved["images"][0]["file_id"],
        moving["images"][0]["file_id"]
    );
    assert_downloads(
        &first_url(&moved),
        &moving_file.1,
        "the URL read after the move",
    );

    // Dedup. Cluster 1: a chunk of a dropped file and a more important copy of its text;
    // the chunk goes, and the file stays, since its other chunks still reference it.
    let essay = vec![("essay.txt".to_owned(), ESSAY.as_bytes().to_vec())];
    let dropped = drop_now(&client, "notes", &essay);
    let chunks = dropped["results"][0]["memory_ids"]
        .as_array()
        .expect("ids")
        .clone();
    assert!(
        chunks.len() >= 2,
        "the essay should be several chunks: {dropped:#}"
    );
    let chunk = get_memory(&client, "notes", chunks[0].as_str().unwrap());
    let chunk_url = first_url(&chunk);
    let copy_file = attachment("copy.txt");
    let copy = upload(
        &client,
        "notes",
        chunk["text"].as_str().unwrap(),
        "0.9",
        std::slice::from_ref(&copy_file),
    );
    // Cluster 2: two uploads with one text; the less important one and its own file go.
    let text = "The quarterly inventory of the seed vault found 412 sealed packets of barley.";
    let keeper_file = attachment("keeper.txt");
    let keeper = upload(
        &client,
        "notes",
        text,
        "0.9",
        std::slice::from_ref(&keeper_file),
    );
    let loser_file = attachment("loser.txt");
    let loser = upload(
        &client,
        "notes",
        text,
        "0.1",
        std::slice::from_ref(&loser_file),
    );
    let loser_url = first_url(&loser);
    assert_downloads(&loser_url, &loser_file.1, "before the dedup");

    let report = expect_status(
        client.post(
            "/v1/memory/collections/notes/dedup",
            &json!({"dry_run": false}),
        ),
        200,
    );
    let deleted: HashSet<&str> = report["deleted_ids"]
        .as_array()
        .expect("deleted_ids")
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    let expected: HashSet<&str> =
        HashSet::from([chunk["id"].as_str().unwrap(), loser["id"].as_str().unwrap()]);
    assert_eq!(deleted, expected, "{report:#}");
    assert_status(&loser_url, 404, "the removed duplicate's own file");
    assert_downloads(
        &chunk_url,
        ESSAY.as_bytes(),
        "the file other chunks still reference",
    );
    assert_downloads(&first_url(&copy), &copy_file.1, "the first keeper's file");
    assert_downloads(
        &first_url(&keeper),
        &keeper_file.1,
        "the second keeper's file",
    );
}

#[test]
fn a_presigned_url_stops_working_when_it_expires() {
    let server = files_server(|config| config.blobs.url_expiry_secs = 2);
    let client = tenant_on(&server);
    let file = (
        "brief.txt".to_owned(),
        b"a file whose links expire quickly".to_vec(),
    );
    let memory = upload(
        &client,
        "short",
        "a file with a short-lived link",
        "0.5",
        std::slice::from_ref(&file),
    );
    let url = first_url(&memory);
    assert_downloads(&url, &file.1, "a fresh URL");
    std::thread::sleep(Duration::from_secs(3));
    assert_status(&url, 403, "the URL after its expiry");
    // A new read signs a new URL that works.
    let again = get_memory(&client, "short", memory["id"].as_str().unwrap());
    assert_downloads(&first_url(&again), &file.1, "a URL read again");
}

#[test]
fn mcp_tools_and_the_slot_history_show_files_with_fresh_urls() {
    let server = files_server(|_| {});
    let client = tenant_on(&server);
    let collection = unique("signed-everywhere");
    let word = unique("periwinkle").replace('-', "");
    let file = (
        "field-notes.txt".to_owned(),
        b"notes from the marsh".to_vec(),
    );
    let memory = upload(
        &client,
        &collection,
        &format!("{word} field notes with the original attached"),
        "0.5",
        std::slice::from_ref(&file),
    );
    let id = memory["id"].as_str().unwrap();

    // Every way of reading the memory shows the file with a working URL and never its
    // storage path.
    let mut shown = Vec::new();
    let history = expect_status(
        client.get(&format!(
            "/v1/memory/collections/{collection}/memories/{id}/history"
        )),
        200,
    );
    shown.push((
        "history",
        history["history"][0]["memory"]["images"][0].clone(),
    ));
    for (tool, arguments, pointer) in [
        (
            "get_memory",
            json!({"collection": collection, "memory_id": id}),
            "/images/0",
        ),
        (
            "search_memory",
            json!({"collection": collection, "query": word, "mode": "text"}),
            "/results/0/images/0",
        ),
    ] {
        let response = expect_status(
            client
                .request(Method::POST, "/v1/mcp")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-11-25")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": tool, "arguments": arguments}}))
                .send()
                .unwrap(),
            200,
        );
        let structured = &response["result"]["structuredContent"];
        let image = structured
            .pointer(pointer)
            .unwrap_or_else(|| panic!("{tool}: {response}"))
            .clone();
        let text = response["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            !text.contains("\"path\""),
            "{tool} text shows the path: {text}"
        );
        shown.push((tool, image));
    }
    for (what, image) in shown {
        assert_eq!(image["filename"], "field-notes.txt", "{what}: {image}");
        assert!(
            image.get("path").is_none(),
            "{what} shows the storage path: {image}"
        );
        let url = image["url"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: no url in {image}"));
        assert_downloads(url, &file.1, what);
    }
}

#[test]
fn malformed_file_requests_are_client_errors_and_store_nothing() {
    let server = files_server(|_| {});
    let client = tenant_on(&server);
    let collection = unique("malformed");
    // A `files` part that is not a file upload (no filename).
    let boundary = "memvault-malformed-boundary";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"files\"\r\n\r\n{{}}\r\n\
         --{boundary}--\r\n"
    );
    for path in ["drop", "memories/folder"] {
        let response = client
            .request(
                Method::POST,
                &format!("/v1/memory/collections/{collection}/{path}"),
            )
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body.clone())
            .send()
            .unwrap();
        assert_eq!(response.status(), 422, "{path}");
        let error: Value = response.json().unwrap();
        assert_eq!(error["code"], "validation_failed", "{path}: {error}");
    }
    // A field given twice: one value or the other would be a guess.
    let note = vec![("note.txt".to_owned(), b"a note".to_vec())];
    let twice = send_form(
        &client,
        &format!("/v1/memory/collections/{}/drop", unique("twice")),
        &note,
        &[("async_ingest", "true"), ("async_ingest", "false")],
    );
    assert_eq!(twice.status(), 422);
    let error: Value = twice.json().unwrap();
    assert!(
        error["detail"].as_str().unwrap().contains("more than once"),
        "{error}"
    );
    // Sizes beyond the schema's integer.
    let huge = json!([{"filename": "a.txt", "key": "x", "size": 9_223_372_036_854_775_808u64}]);
    for path in ["drop/presign", "drop/complete"] {
        let mut item = huge[0].clone();
        if path == "drop/presign" {
            item.as_object_mut().unwrap().remove("key");
        }
        let response = client.post(
            &format!("/v1/memory/collections/{collection}/{path}"),
            &json!([item]),
        );
        assert_eq!(response.status(), 422, "{path}");
    }
    // Nothing was stored: the collection a first file would have made does not exist.
    let response = client.get(&format!("/v1/memory/collections/{collection}/memories"));
    assert_eq!(response.status(), 404);
    // A presigned URL whose expiry is not a signable time is a bad signature.
    for method in [Method::GET, Method::PUT] {
        let response = Client::anonymous()
            .request(
                method.clone(),
                "/v1/blobs/0?expires=9223372036854775808&sig=00",
            )
            .send()
            .unwrap();
        assert_eq!(response.status(), 403, "{method}");
    }
}
