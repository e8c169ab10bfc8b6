//! Changing the embedding model re-embeds, live: a server whose configured model differs
//! from the one that built a collection rebuilds its vectors in the background, answers
//! searches from the old vectors meanwhile, switches in one write, and resumes after a
//! kill -9. The new model is an OpenAI-compatible `/embeddings` endpoint, played by a
//! local fake that speaks its wire format (a hashed bag of words, so word overlap is
//! similarity) and can be told to hold its answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use crate::support::{
    expect_error, expect_status, memories_path, temp_data_dir, Client, ServerProcess,
};

const KEY: &str = "mv_reembed_admin_key_0123456789ab";
const FAKE_MODEL: &str = "fake-bag-of-words";
/// The configured local model (`embedding.local_model`'s default).
const LOCAL_MODEL: &str = "all-MiniLM-L6-v2-int8";
const FAKE_DIMENSIONS: usize = 256;

/// A fake OpenAI-compatible embeddings endpoint.
struct FakeEmbeddings {
    base_url: String,
    state: Arc<FakeState>,
}

struct FakeState {
    /// Numbered notes (see [`note`]) embedded so far.
    served: AtomicUsize,
    /// How many times each text was embedded.
    counts: Mutex<HashMap<String, usize>>,
    /// A request that would take `served` past this is answered 429, as a rate-limited
    /// endpoint does. Other texts (the dimension probe, the status self-check, queries,
    /// which the embedding thread may batch with notes) do not count.
    allowed: tokio::sync::watch::Sender<usize>,
}

impl FakeEmbeddings {
    fn start(allowed: usize) -> Self {
        let (allowed, _) = tokio::sync::watch::channel(allowed);
        let state = Arc::new(FakeState {
            served: AtomicUsize::new(0),
            counts: Mutex::default(),
            allowed,
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind fake");
        listener.set_nonblocking(true).expect("nonblocking");
        let address = listener.local_addr().expect("address");
        let app = axum::Router::new()
            .route("/v1/embeddings", axum::routing::post(embeddings))
            .with_state(state.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("fake runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                axum::serve(listener, app).await.expect("fake serves");
            });
        });
        Self {
            base_url: format!("http://{address}/v1"),
            state,
        }
    }

    fn count(&self, text: &str) -> usize {
        self.state
            .counts
            .lock()
            .unwrap()
            .get(text)
            .copied()
            .unwrap_or(0)
    }

    fn allow(&self, texts: usize) {
        self.state.allowed.send_replace(texts);
    }

    /// The environment that makes a server use this endpoint.
    fn environment(&self) -> Vec<(&'static str, String)> {
        vec![
            ("MEMVAULT__EMBEDDING__PROVIDER", "openai".to_owned()),
            ("MEMVAULT__EMBEDDING__BASE_URL", self.base_url.clone()),
            ("MEMVAULT__EMBEDDING__MODEL", FAKE_MODEL.to_owned()),
            ("MEMVAULT__EMBEDDING__API_KEY", "sk-fake".to_owned()),
            ("MEMVAULT_BOOTSTRAP_KEY", KEY.to_owned()),
        ]
    }
}

async fn embeddings(
    State(state): State<Arc<FakeState>>,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    assert_eq!(body["model"], FAKE_MODEL);
    let inputs: Vec<String> = body["input"]
        .as_array()
        .expect("input is an array")
        .iter()
        .map(|text| text.as_str().expect("a text").to_owned())
        .collect();
    let notes = inputs
        .iter()
        .filter(|text| text.contains(NOTE_MARK))
        .count();
    let budget = *state.allowed.borrow();
    if state.served.load(Ordering::SeqCst) + notes > budget {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            Json(json!({"error": {"message": "Rate limit reached", "type": "requests"}})),
        );
    }
    state.served.fetch_add(notes, Ordering::SeqCst);
    {
        let mut counts = state.counts.lock().unwrap();
        for text in &inputs {
            *counts.entry(text.clone()).or_default() += 1;
        }
    }
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        // Out of order on purpose: the client must order by `index`.
        .rev()
        .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": bag_of_words(text)}))
        .collect();
    (
        StatusCode::OK,
        Json(json!({
            "object": "list",
            "data": data,
            "model": FAKE_MODEL,
            "usage": {"prompt_tokens": inputs.len(), "total_tokens": inputs.len()},
        })),
    )
}

/// The bench's stand-in model: word overlap is similarity, vectors not normalised.
fn bag_of_words(text: &str) -> Vec<f32> {
    memvault_tools::bench::fake_embeddings::bag_of_words(text, FAKE_DIMENSIONS)
}

fn health(client: &Client, collection: &str) -> Value {
    expect_status(
        client.get(&format!("/v1/memory/collections/{collection}/health")),
        200,
    )
}

fn overview(client: &Client) -> Value {
    expect_status(client.get("/v1/memory/admin/embeddings"), 200)
}

/// `memvault reembed` against `base_url`: its exit success and its stdout.
fn reembed_cli(base_url: &str, arguments: &[&str]) -> (bool, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_memvault"))
        .args(["reembed", "--url", base_url, "--interval-ms", "100"])
        .args(arguments)
        .env("MEMVAULT_API_KEY", KEY)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("memvault reembed runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn search(client: &Client, collection: &str, query: &str, mode: &str) -> Value {
    expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &json!({"query": query, "mode": mode, "limit": 3, "min_score": -1.0}),
        ),
        200,
    )
}

fn top_text(results: &Value) -> String {
    results["results"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// What every numbered note says.
const NOTE_MARK: &str = "routine note number";

/// The text of numbered note `index` of `collection`.
fn note(collection: &str, index: usize) -> String {
    format!("{collection} {NOTE_MARK} {index} about nothing special")
}

/// Fills `collection` with `count` numbered notes plus a few distinct ones, through a
/// server on the local model.
fn fill(client: &Client, collection: &str, count: usize) {
    for start in (0..count).step_by(100) {
        let items: Vec<Value> = (start..(start + 100).min(count))
            .map(|index| json!({"text": note(collection, index)}))
            .collect();
        expect_status(
            client.post(
                &format!("{}/bulk", memories_path(collection)),
                &json!(items),
            ),
            201,
        );
    }
    for text in [
        "The espresso machine in the kitchen needs descaling every month",
        "Our quarterly board meeting moved to the Lisbon office",
    ] {
        expect_status(
            client.post(&memories_path(collection), &json!({"text": text})),
            201,
        );
    }
}

#[test]
fn a_new_model_reembeds_in_the_background_while_search_answers_from_the_old_vectors() {
    let (_guard, data_dir) = temp_data_dir();
    let mut local = ServerProcess::start(&data_dir, &[("MEMVAULT_BOOTSTRAP_KEY", KEY)])
        .expect("server starts on the local model");
    let client = local.client(KEY);
    fill(&client, "notes", 300);
    let before = health(&client, "notes");
    assert_eq!(before["embedding"]["model"], LOCAL_MODEL);
    assert_eq!(before["embedding"]["dimensions"], 384);
    assert_eq!(before["embedding"]["reembedding"], Value::Null);
    local.stop_gracefully();

    // Two batches of 64 notes, then the endpoint is rate-limited.
    let fake = FakeEmbeddings::start(128);
    let environment = fake.environment();
    let environment: Vec<(&str, &str)> = environment
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();
    let mut switched = ServerProcess::start(&data_dir, &environment)
        .expect("server starts on the endpoint's model");
    let client = switched.client(KEY);
    wait_for("two staged batches", Duration::from_secs(60), || {
        health(&client, "notes")["embedding"]["reembedding"]["done"] == 128
    });
    let during = health(&client, "notes");
    assert_eq!(during["embedding"]["model"], LOCAL_MODEL, "{during}");
    let progress = &during["embedding"]["reembedding"];
    assert_eq!(progress["model"], FAKE_MODEL);
    assert_eq!(progress["dimensions"], FAKE_DIMENSIONS);
    assert_eq!(progress["total"], 302);

    // The operator's overview and the CLI say the same, without naming the collection.
    let state = overview(&client);
    assert_eq!(
        state["configured"],
        json!({"model": FAKE_MODEL, "dimensions": FAKE_DIMENSIONS})
    );
    assert_eq!(
        state["models"],
        json!([{"model": LOCAL_MODEL, "dimensions": 384, "collections": 1}])
    );
    let reembedding = &state["reembedding"];
    assert_eq!(reembedding["collections_left"], 1, "{state}");
    assert_eq!(reembedding["memories_done"], 128, "{state}");
    assert_eq!(reembedding["memories_total"], 302, "{state}");
    assert_eq!(reembedding["collections_done"], 0, "{state}");
    assert!(!state.to_string().contains("notes"), "{state}");
    let (ok, printed) = reembed_cli(&switched.base_url, &["--once"]);
    assert!(ok, "{printed}");
    assert!(
        printed.contains(&format!(
            "configured model: {FAKE_MODEL} ({FAKE_DIMENSIONS} dimensions)"
        )),
        "{printed}"
    );
    assert!(
        printed.contains("1 collections left, 128 of 302 memories"),
        "{printed}"
    );
    // Only operators see it.
    let created = expect_status(
        client.post(
            "/v1/memory/admin/tenants",
            &json!({"name": "plain", "email": "plain@example.com"}),
        ),
        201,
    );
    let plain = switched.client(created["api_key"].as_str().unwrap());
    expect_error(plain.get("/v1/memory/admin/embeddings"), 403);
    let (ok, printed) = reembed_cli(&switched.base_url, &["--once", "--key", "mv_wrong"]);
    assert!(!ok, "{printed}");

    // Search answers from the old vectors: a paraphrase sharing no word with the note
    // finds it by meaning, which a bag of words could not.
    let paraphrase = "coffee maker maintenance schedule";
    for mode in ["vector", "hybrid"] {
        let found = search(&client, "notes", paraphrase, mode);
        assert!(
            top_text(&found).contains("espresso machine"),
            "{mode} during the re-embedding: {found}"
        );
    }
    // A write during the re-embedding is embedded by the old model now and by the new
    // one before the switch.
    expect_status(
        client.post(
            &memories_path("notes"),
            &json!({"text": "The greenhouse thermostat is set to nineteen degrees"}),
        ),
        201,
    );

    fake.allow(usize::MAX);
    // The CLI follows the re-embedding to its end.
    let (ok, printed) = reembed_cli(&switched.base_url, &[]);
    assert!(ok, "{printed}");
    assert_eq!(
        health(&client, "notes")["embedding"]["model"],
        FAKE_MODEL,
        "the CLI returned before the switch: {printed}"
    );
    let state = overview(&client);
    assert_eq!(state["reembedding"]["collections_left"], 0, "{state}");
    assert_eq!(state["reembedding"]["collections_done"], 1, "{state}");
    assert!(
        state["reembedding"]["memories_switched"].as_u64().unwrap() >= 302,
        "{state}"
    );
    assert_eq!(
        state["models"],
        json!([{"model": FAKE_MODEL, "dimensions": FAKE_DIMENSIONS, "collections": 1}])
    );
    let after = health(&client, "notes");
    assert_eq!(after["embedding"]["dimensions"], FAKE_DIMENSIONS);
    assert_eq!(after["embedding"]["reembedding"], Value::Null, "{after}");
    assert_eq!(after["total"], 303);
    // Now the endpoint's vectors answer: shared words find the note written meanwhile.
    let found = search(&client, "notes", "greenhouse thermostat", "vector");
    assert!(
        top_text(&found).contains("greenhouse"),
        "vector after the switch: {found}"
    );
    // Every memory was embedded once by the new model.
    let once = |fake: &FakeEmbeddings| {
        for index in 0..300 {
            let text = note("notes", index);
            assert_eq!(fake.count(&text), 1, "{text:?}");
        }
    };
    once(&fake);
    switched.stop_gracefully();

    // A restart on the same model re-embeds nothing and loads the saved vectors.
    let again = ServerProcess::start(&data_dir, &environment).expect("server restarts");
    let client = again.client(KEY);
    let restarted = health(&client, "notes");
    assert_eq!(restarted["embedding"]["model"], FAKE_MODEL);
    assert_eq!(restarted["embedding"]["reembedding"], Value::Null);
    let found = search(&client, "notes", "Lisbon board meeting", "vector");
    assert!(top_text(&found).contains("Lisbon"), "{found}");
    // Nothing was re-embedded.
    once(&fake);
}

#[test]
fn a_reembedding_killed_mid_way_resumes_from_what_it_staged() {
    let (_guard, data_dir) = temp_data_dir();
    let mut local = ServerProcess::start(&data_dir, &[("MEMVAULT_BOOTSTRAP_KEY", KEY)])
        .expect("server starts on the local model");
    let client = local.client(KEY);
    fill(&client, "ledger", 400);
    fill(&client, "journal", 40);
    local.stop_gracefully();

    // journal's 40 notes and two batches of ledger's, then the endpoint is
    // rate-limited.
    let fake = FakeEmbeddings::start(40 + 2 * 64);
    let environment = fake.environment();
    let environment: Vec<(&str, &str)> = environment
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();
    let mut first = ServerProcess::start(&data_dir, &environment).expect("server starts");
    let client = first.client(KEY);
    // Collections are re-embedded one at a time, in name order: journal (42), then
    // ledger.
    wait_for("ledger's staged batches", Duration::from_secs(60), || {
        health(&client, "ledger")["embedding"]["reembedding"]["done"] == 128
    });
    assert_eq!(
        health(&client, "journal")["embedding"]["model"],
        FAKE_MODEL,
        "the first collection is switched"
    );
    let staged = health(&client, "ledger")["embedding"]["reembedding"]["done"]
        .as_u64()
        .unwrap() as usize;
    assert_eq!(
        staged, 128,
        "two of ledger's batches were staged before the hold"
    );
    first.kill_hard();

    fake.allow(usize::MAX);
    let second = ServerProcess::start(&data_dir, &environment).expect("server restarts");
    let client = second.client(KEY);
    wait_for("ledger's switch", Duration::from_secs(120), || {
        health(&client, "ledger")["embedding"]["model"] == FAKE_MODEL
    });
    // Resumed, not started over: what was staged before the kill is not embedded again,
    // and everything else once.
    for index in 0..400 {
        let text = note("ledger", index);
        assert_eq!(fake.count(&text), 1, "{text:?}");
    }
    for collection in ["ledger", "journal"] {
        let report = health(&client, collection);
        assert_eq!(report["embedding"]["model"], FAKE_MODEL, "{report}");
        assert_eq!(report["embedding"]["reembedding"], Value::Null);
    }
    let found = search(&client, "ledger", "espresso machine descaling", "vector");
    assert!(top_text(&found).contains("espresso"), "{found}");
    assert_eq!(health(&client, "ledger")["total"], 402);
}

#[test]
fn a_collection_whose_model_cannot_run_answers_from_words_until_it_is_reembedded() {
    let (_guard, data_dir) = temp_data_dir();
    let mut local = ServerProcess::start(&data_dir, &[("MEMVAULT_BOOTSTRAP_KEY", KEY)])
        .expect("server starts on the local model");
    let client = local.client(KEY);
    fill(&client, "orphan", 150);
    local.stop_gracefully();

    // The endpoint's model, with MiniLM's weights nowhere to be found: nothing here can
    // embed a query the way the collection's vectors were made. The endpoint turns the
    // re-embedding away meanwhile.
    let fake = FakeEmbeddings::start(0);
    let mut environment = fake.environment();
    environment.push((
        "MEMVAULT__EMBEDDING__MODEL_DIR",
        data_dir.join("no-such-model").display().to_string(),
    ));
    let environment: Vec<(&str, &str)> = environment
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();
    let server = ServerProcess::start(&data_dir, &environment).expect("server starts");
    let client = server.client(KEY);
    assert_eq!(health(&client, "orphan")["embedding"]["model"], LOCAL_MODEL);

    // Hybrid answers from the words and says what it skipped.
    let hybrid = search(&client, "orphan", "espresso machine descaling", "hybrid");
    assert!(top_text(&hybrid).contains("espresso"), "{hybrid}");
    assert_eq!(hybrid["skipped"][0]["step"], "vector", "{hybrid}");
    assert!(
        hybrid["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains(LOCAL_MODEL),
        "{hybrid}"
    );
    // Vector search and writes cannot: a 503 that says why.
    let vector = client.post(
        "/v1/memory/collections/orphan/search",
        &json!({"query": "espresso", "mode": "vector"}),
    );
    let refused = expect_error(vector, 503);
    assert!(refused.contains("cannot run"), "{refused}");
    let write = client.post(&memories_path("orphan"), &json!({"text": "a new note"}));
    let refused = expect_error(write, 503);
    assert!(refused.contains("re-embedded"), "{refused}");
    // Another collection is on the configured model from its first write.
    expect_status(
        client.post(&memories_path("fresh"), &json!({"text": "a new note"})),
        201,
    );
    assert_eq!(health(&client, "fresh")["embedding"]["model"], FAKE_MODEL);

    fake.allow(usize::MAX);
    wait_for("the switch", Duration::from_secs(120), || {
        health(&client, "orphan")["embedding"]["model"] == FAKE_MODEL
    });
    let found = search(&client, "orphan", "espresso machine descaling", "vector");
    assert!(top_text(&found).contains("espresso machine"), "{found}");
    let hybrid = search(&client, "orphan", "espresso machine descaling", "hybrid");
    assert_eq!(hybrid["skipped"], json!([]), "{hybrid}");
    expect_status(
        client.post(&memories_path("orphan"), &json!({"text": "a new note"})),
        201,
    );
}

#[test]
fn collections_of_the_fp32_model_are_reembedded_to_int8_with_no_memory_lost() {
    let (_guard, data_dir) = temp_data_dir();
    let mut fp32 = ServerProcess::start(
        &data_dir,
        &[
            ("MEMVAULT_BOOTSTRAP_KEY", KEY),
            ("MEMVAULT__EMBEDDING__LOCAL_MODEL", "all-MiniLM-L6-v2"),
        ],
    )
    .expect("server starts on the fp32 model");
    let client = fp32.client(KEY);
    fill(&client, "fp32", 250);
    assert_eq!(
        health(&client, "fp32")["embedding"]["model"],
        "all-MiniLM-L6-v2"
    );
    let listed_before = listed_ids(&client, "fp32");
    assert_eq!(listed_before.len(), 252);
    fp32.stop_gracefully();

    // The default configuration: the int8 model. The collection is re-embedded in the
    // background and switches in one write.
    let int8 = ServerProcess::start(&data_dir, &[("MEMVAULT_BOOTSTRAP_KEY", KEY)])
        .expect("server starts on the int8 model");
    let client = int8.client(KEY);
    wait_for("the switch to int8", Duration::from_secs(120), || {
        let embedding = &health(&client, "fp32")["embedding"];
        embedding["model"] == LOCAL_MODEL && embedding["reembedding"].is_null()
    });
    assert_eq!(
        overview(&client)["models"],
        json!([{"model": LOCAL_MODEL, "dimensions": 384, "collections": 1}])
    );
    // Every memory is still there, once, and found by its meaning on the new vectors.
    assert_eq!(listed_ids(&client, "fp32"), listed_before);
    assert_eq!(health(&client, "fp32")["total"], 252);
    let vector = search(&client, "fp32", "the coffee maker needs cleaning", "vector");
    assert!(top_text(&vector).contains("espresso"), "{vector}");
    let vector = search(&client, "fp32", "routine note number 17", "vector");
    assert_eq!(
        vector["results"].as_array().map_or(0, Vec::len),
        3,
        "{vector}"
    );
}

/// Every memory id of `collection`, sorted.
fn listed_ids(client: &Client, collection: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for offset in (0..).step_by(200) {
        let page = expect_status(
            client.get(&format!(
                "{}?limit=200&offset={offset}",
                memories_path(collection)
            )),
            200,
        );
        let memories = page.as_array().cloned().unwrap_or_default();
        if memories.is_empty() {
            break;
        }
        ids.extend(
            memories
                .iter()
                .map(|memory| memory["id"].as_str().unwrap_or_default().to_owned()),
        );
    }
    ids.sort();
    ids
}

#[test]
fn where_onnx_runtime_cannot_load_candle_serves_the_fp32_model_and_the_log_says_why() {
    let (guard, data_dir) = temp_data_dir();
    let corrupt = guard.path().join("libonnxruntime.so");
    std::fs::write(&corrupt, b"\x7fELF, but not a library").expect("write the corrupt library");
    let log_path = guard.path().join("server.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let corrupt = corrupt.display().to_string();
    let server = ServerProcess::start_with_log(
        &data_dir,
        "127.0.0.1:0",
        &[
            ("MEMVAULT_BOOTSTRAP_KEY", KEY),
            ("MEMVAULT__EMBEDDING__ONNXRUNTIME_LIBRARY", &corrupt),
        ],
        std::process::Stdio::from(log),
    )
    .expect("the server starts on candle");
    let client = server.client(KEY);
    fill(&client, "fallback", 20);
    assert_eq!(
        health(&client, "fallback")["embedding"]["model"],
        "all-MiniLM-L6-v2"
    );
    let vector = search(
        &client,
        "fallback",
        "the coffee maker needs cleaning",
        "vector",
    );
    assert!(top_text(&vector).contains("espresso"), "{vector}");
    let log = std::fs::read_to_string(&log_path).expect("read the log");
    assert!(
        log.contains("ONNX Runtime cannot run here") && log.contains("cannot load ONNX Runtime"),
        "{log}"
    );
}
