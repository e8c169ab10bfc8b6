//! Graph memory without an LLM (the embedded default): remember, jobs, supersession,
//! expiry, contradictions, profile, spend cap and extraction config validation; and a job
//! that survives SIGKILL.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::{
    expect_error, expect_status, memories_path, new_tenant, temp_data_dir, unique, Client,
    ServerProcess,
};

fn remember_path(collection: &str) -> String {
    format!("/v1/memory/collections/{collection}/remember")
}

#[track_caller]
fn remember_sync(client: &Client, collection: &str, content: &str) -> Value {
    expect_status(
        client.post(
            &format!("{}?sync=true", remember_path(collection)),
            &json!({ "content": content }),
        ),
        200,
    )
}

fn memories(body: &Value) -> &Vec<Value> {
    body["memories"].as_array().expect("memories array")
}

fn search_texts(client: &Client, collection: &str, query: &str, mode: &str) -> Vec<String> {
    let body = expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &json!({"query": query, "mode": mode, "min_score": 0.0, "limit": 50}),
        ),
        200,
    );
    body["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|result| result["text"].as_str().unwrap_or_default().to_lowercase())
        .collect()
}

fn wait_for_job(client: &Client, job_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let job = expect_status(client.get(&format!("/v1/memory/extract/job/{job_id}")), 200);
        let state = job["state"].as_str().unwrap_or_default().to_owned();
        assert!(
            ["queued", "processing", "done", "failed"].contains(&state.as_str()),
            "{job}"
        );
        if job["complete"] == json!(true) {
            return job;
        }
        assert!(Instant::now() < deadline, "job did not finish: {job}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn remember_sync_extracts_typed_facts_and_reports_relations() {
    let client = new_tenant();
    let collection = unique("graph");
    let body = remember_sync(
        &client,
        &collection,
        "My favorite color is blue. I live in Lisbon. Is it raining?",
    );
    assert_eq!(body["created"], json!(2), "{body}");
    assert_eq!(body["extractor"], json!("rules"));
    let facts = memories(&body);
    assert_eq!(facts.len(), 2, "the question is not a fact: {body}");
    assert_eq!(facts[0]["type"], json!("preference"));
    assert_eq!(facts[0]["relation"], json!("new"));
    assert_eq!(facts[1]["type"], json!("fact"));
    for fact in facts {
        let stored = expect_status(
            client.get(&format!(
                "{}/{}",
                memories_path(&collection),
                fact["id"].as_str().unwrap()
            )),
            200,
        );
        assert_eq!(stored["text"], fact["text"]);
        assert_eq!(stored["source"], json!("remember"));
        assert_eq!(stored["category"], fact["type"]);
    }
    let again = remember_sync(&client, &collection, "my favorite colour is Blue");
    assert_eq!(again["created"], json!(0), "{again}");
    assert_eq!(memories(&again)[0]["relation"], json!("duplicate"));
    assert_eq!(memories(&again)[0]["id"], facts[0]["id"]);
}

#[test]
fn a_newer_fact_supersedes_the_older_everywhere_and_nothing_is_deleted() {
    let client = new_tenant();
    let collection = unique("graph");
    let blue = memories(&remember_sync(
        &client,
        &collection,
        "My favorite color is blue.",
    ))[0]
        .clone();
    let green_body = remember_sync(&client, &collection, "My favorite color is green.");
    let green = memories(&green_body)[0].clone();
    assert_eq!(green["relation"], json!("updated"));
    for mode in ["hybrid", "vector", "text"] {
        let texts = search_texts(&client, &collection, "favorite color blue", mode);
        assert!(
            texts.iter().any(|text| text.contains("green")),
            "{mode}: {texts:?}"
        );
        assert!(
            !texts.iter().any(|text| text.contains("blue")),
            "{mode}: {texts:?}"
        );
    }
    let old = expect_status(
        client.get(&format!(
            "{}/{}",
            memories_path(&collection),
            blue["id"].as_str().unwrap()
        )),
        200,
    );
    assert_eq!(old["superseded_by"], green["id"]);
    assert!(old["superseded_at"].is_string());
    assert_eq!(old["slot"], json!("user/favorite_color"));
    let related = expect_status(
        client.get(&format!(
            "{}/{}/related?limit=50",
            memories_path(&collection),
            green["id"].as_str().unwrap()
        )),
        200,
    );
    assert!(!related["results"]
        .as_array()
        .unwrap()
        .iter()
        .any(|result| result["id"] == blue["id"]));

    let pairs = expect_status(
        client.get(&format!(
            "/v1/memory/collections/{collection}/contradictions"
        )),
        200,
    );
    let pairs = pairs["contradictions"].as_array().unwrap();
    assert_eq!(pairs.len(), 1);
    assert_eq!(pairs[0]["current"]["id"], green["id"]);
    assert_eq!(pairs[0]["superseded"]["id"], blue["id"]);

    let profile = expect_status(
        client.get(&format!("/v1/memory/collections/{collection}/profile")),
        200,
    );
    assert_eq!(profile["based_on"], json!(1));
    assert_eq!(profile["generated_by"], json!("extractive"));
    let text = profile["profile"].as_str().unwrap().to_lowercase();
    assert!(text.contains("green") && !text.contains("blue"), "{text}");
    // Listing still has both: supersession never deletes.
    let listed = expect_status(client.get(&memories_path(&collection)), 200);
    assert_eq!(listed.as_array().unwrap().len(), 2);
}

#[test]
fn contradictions_are_newest_first_and_limited() {
    let client = new_tenant();
    let collection = unique("graph");
    for content in [
        "My favorite color is blue.",
        "My favorite color is green.",
        "My favorite drink is tea.",
        "My favorite drink is coffee.",
    ] {
        remember_sync(&client, &collection, content);
    }
    let path = format!("/v1/memory/collections/{collection}/contradictions");
    let pairs = expect_status(client.get(&path), 200);
    let currents: Vec<&str> = pairs["contradictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| pair["current"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        currents,
        vec![
            "My favorite drink is coffee.",
            "My favorite color is green."
        ]
    );
    let one = expect_status(client.get(&format!("{path}?limit=1")), 200);
    assert_eq!(one["contradictions"].as_array().unwrap().len(), 1);
    for bad in ["0", "101", "x"] {
        expect_error(client.get(&format!("{path}?limit={bad}")), 422);
    }
    expect_error(
        client.get("/v1/memory/collections/never-made/contradictions"),
        404,
    );
    expect_error(client.get("/v1/memory/collections/never-made/profile"), 404);
}

#[test]
fn a_time_bound_fact_is_current_until_it_expires() {
    let client = new_tenant();
    let collection = unique("graph");
    let body = remember_sync(&client, &collection, "I'm in Paris for the next 3 days.");
    let fact = &memories(&body)[0];
    let stored = expect_status(
        client.get(&format!(
            "{}/{}",
            memories_path(&collection),
            fact["id"].as_str().unwrap()
        )),
        200,
    );
    let expires: chrono::DateTime<chrono::Utc> = stored["expires_at"]
        .as_str()
        .expect("expires_at")
        .parse()
        .unwrap();
    let in_three_days = chrono::Utc::now() + chrono::Duration::days(3);
    assert!(
        (expires - in_three_days).num_minutes().abs() < 5,
        "{expires}"
    );
    let texts = search_texts(&client, &collection, "where am I, Paris", "hybrid");
    assert!(texts.iter().any(|text| text.contains("paris")), "{texts:?}");
}

#[test]
fn remember_async_runs_the_job_and_polling_reports_it() {
    let client = new_tenant();
    let collection = unique("graph");
    let accepted = expect_status(
        client.post(
            &remember_path(&collection),
            &json!({"content": "I work at Acme.", "importance": 0.9}),
        ),
        202,
    );
    let job_id = accepted["job_id"].as_str().expect("job_id");
    let job = wait_for_job(&client, job_id);
    assert_eq!(job["state"], json!("done"), "{job}");
    let facts = job["facts"].as_array().unwrap();
    assert_eq!(facts.len(), 1);
    let stored = expect_status(
        client.get(&format!(
            "{}/{}",
            memories_path(&collection),
            facts[0]["id"].as_str().unwrap()
        )),
        200,
    );
    assert_eq!(stored["importance"], json!(0.9));
    assert_eq!(stored["slot"], json!("user/employer"));
    // Another tenant cannot see the job.
    expect_error(
        new_tenant().get(&format!("/v1/memory/extract/job/{job_id}")),
        404,
    );
    expect_error(client.get("/v1/memory/extract/job/job_nope"), 404);
}

#[test]
fn remember_rejects_bad_bodies_and_missing_keys() {
    let client = new_tenant();
    let collection = unique("graph");
    let path = remember_path(&collection);
    for body in [
        json!({}),
        json!({"content": 5}),
        json!({"content": "   "}),
        json!({"content": "x".repeat(10_001)}),
        json!({"content": "My name is Ana.", "importance": 2}),
        json!({"content": "My name is Ana.", "extra": true}),
    ] {
        expect_error(client.post(&path, &body), 422);
    }
    expect_error(
        client.post(
            "/v1/memory/collections/bad%20name/remember",
            &json!({"content": "I am here."}),
        ),
        422,
    );
    expect_error(
        Client::anonymous().post(&path, &json!({"content": "I live in Rome."})),
        401,
    );
}

#[test]
fn spend_cap_round_trips_and_validates() {
    let client = new_tenant();
    let initial = expect_status(client.get("/v1/memory/spend-cap"), 200);
    assert_eq!(initial["monthly_usd"], Value::Null);
    assert_eq!(initial["spent_usd"], json!(0.0));
    let set = expect_status(
        client.put("/v1/memory/spend-cap", &json!({"monthly_usd": 12.5})),
        200,
    );
    assert_eq!(set["monthly_usd"], json!(12.5));
    assert_eq!(
        expect_status(client.get("/v1/memory/spend-cap"), 200)["monthly_usd"],
        json!(12.5)
    );
    for bad in [
        json!({"monthly_usd": -1}),
        json!({"monthly_usd": "ten"}),
        json!({}),
        json!({"monthly_usd": 1, "x": 1}),
    ] {
        expect_error(client.put("/v1/memory/spend-cap", &bad), 422);
    }
    let cleared = expect_status(
        client.put("/v1/memory/spend-cap", &json!({"monthly_usd": null})),
        200,
    );
    assert_eq!(cleared["monthly_usd"], Value::Null);
}

#[test]
fn extraction_config_validates_and_refuses_an_unreachable_llm() {
    let client = new_tenant();
    let path = "/v1/memory/extraction/config";
    let empty = expect_status(client.get(path), 200);
    assert_eq!(empty["configured"], json!(false));
    for bad in [
        json!({"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "k"}),
        json!({"provider": "custom", "base_url": "not a url", "model": "m", "api_key": "k"}),
        json!({"provider": "custom", "base_url": "ftp://x/v1", "model": "m", "api_key": "k"}),
        json!({"provider": "custom", "base_url": "http://127.0.0.1:9/v1", "model": "", "api_key": "k"}),
        json!({"provider": "custom", "base_url": "http://127.0.0.1:9/v1", "model": "m"}),
    ] {
        expect_error(client.put(path, &bad), 422);
    }
    // Port 9 (discard) refuses connections here: the self-test fails, nothing is saved.
    let detail = expect_error(
        client.put(
            path,
            &json!({"provider": "custom", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "sk-test"}),
        ),
        422,
    );
    assert!(detail.contains("self-test"), "{detail}");
    assert!(!detail.contains("sk-test"), "the key leaked: {detail}");
    assert_eq!(
        expect_status(client.get(path), 200)["configured"],
        json!(false)
    );
    assert_eq!(expect_status(client.delete(path), 204), Value::Null);
}

#[test]
fn a_job_queued_before_sigkill_runs_after_the_restart() {
    const KEY: &str = "mv_graph_restart_admin_key_0123456789";
    // An "LLM" that accepts connections and never answers: the job stays in processing.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}/v1", silent.local_addr().unwrap());
    let (_guard, data_dir) = temp_data_dir();
    let mut server = ServerProcess::start(
        &data_dir,
        &[
            ("MEMVAULT_BOOTSTRAP_KEY", KEY),
            ("MEMVAULT__LLM__BASE_URL", silent_url.as_str()),
            ("MEMVAULT__LLM__MAX_RETRIES", "0"),
        ],
    )
    .expect("server starts");
    let client = server.client(KEY);
    let accepted = expect_status(
        client.post(
            &remember_path("inbox"),
            &json!({"content": "My favorite color is teal."}),
        ),
        202,
    );
    let job_id = accepted["job_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let job = expect_status(client.get(&format!("/v1/memory/extract/job/{job_id}")), 200);
        if job["state"] == json!("processing") {
            break;
        }
        assert!(Instant::now() < deadline, "job never started: {job}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The job asks the LLM only after its processing state (attempt 1) is flushed to disk,
    // so once the request arrives a kill cannot lose that attempt.
    let (connection, request) = accept_one_request(&silent, deadline);
    assert!(
        request.starts_with("POST /v1/chat/completions"),
        "{request}"
    );
    server.kill_hard();
    drop((connection, silent));

    let server = ServerProcess::start(&data_dir, &[]).expect("server restarts");
    let client = server.client(KEY);
    let job = wait_for_job(&client, &job_id);
    assert_eq!(job["state"], json!("done"), "{job}");
    assert_eq!(job["attempts"], json!(2), "{job}");
    let facts = job["facts"].as_array().unwrap();
    assert!(facts[0]["text"].as_str().unwrap().contains("teal"), "{job}");
}

/// Waits (until `deadline`) for one connection on `listener` and returns it, unanswered
/// and open, with the start of what it sent.
fn accept_one_request(
    listener: &std::net::TcpListener,
    deadline: Instant,
) -> (std::net::TcpStream, String) {
    use std::io::Read;
    listener.set_nonblocking(true).unwrap();
    let mut stream = loop {
        match listener.accept() {
            Ok((stream, _)) => break stream,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "the LLM was never called");
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) => panic!("accept failed: {error}"),
        }
    };
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut start = [0u8; 64];
    let read = stream.read(&mut start).unwrap_or(0);
    let text = String::from_utf8_lossy(&start[..read]).into_owned();
    (stream, text)
}

#[test]
fn reinstating_a_superseded_value_makes_it_current_again_and_keeps_the_chain() {
    let client = new_tenant();
    let collection = unique("graph");
    let berlin = memories(&remember_sync(&client, &collection, "I live in Berlin."))[0].clone();
    let paris = memories(&remember_sync(&client, &collection, "I live in Paris now."))[0].clone();
    assert_eq!(paris["relation"], json!("updated"), "{paris}");
    let (berlin_id, paris_id) = (
        berlin["id"].as_str().unwrap(),
        paris["id"].as_str().unwrap(),
    );
    let reinstate = |id: &str| {
        client.post(
            &format!("{}/{id}/reinstate", memories_path(&collection)),
            &json!({}),
        )
    };

    // Only a superseded value can be reinstated; a current one, an unknown one, or a
    // read-only key's call is refused, and nothing changes.
    let unchanged = expect_status(reinstate(paris_id), 200);
    assert_eq!(
        unchanged["id"],
        json!(paris_id),
        "a current memory stays as it is"
    );
    expect_error(reinstate("no-such-memory"), 404);
    let created = expect_status(
        client.post(
            "/v1/memory/keys",
            &json!({"label": "reader", "read_only": true}),
        ),
        201,
    );
    let reader = Client::new(&crate::support::shared().base_url, created["key"].as_str());
    expect_error(
        reader.post(
            &format!("{}/{berlin_id}/reinstate", memories_path(&collection)),
            &json!({}),
        ),
        403,
    );

    let again = expect_status(reinstate(berlin_id), 201);
    let again_id = again["id"].as_str().expect("id");
    assert_ne!(
        again_id, berlin_id,
        "a new memory: the older one stays as it was"
    );
    assert_eq!(again["text"], berlin["text"], "{again}");
    for mode in ["hybrid", "vector", "text"] {
        let texts = search_texts(
            &client,
            &collection,
            "where do I live, Berlin or Paris",
            mode,
        );
        assert!(
            texts.iter().any(|text| text.contains("berlin")),
            "{mode}: {texts:?}"
        );
        assert!(
            !texts.iter().any(|text| text.contains("paris")),
            "{mode}: {texts:?}"
        );
    }
    let stored = expect_status(
        client.get(&format!("{}/{paris_id}", memories_path(&collection))),
        200,
    );
    assert_eq!(stored["text"], paris["text"], "Paris is kept, superseded");

    // The slot's history holds all three, oldest first; only the reinstated one is current.
    let history = expect_status(
        client.get(&format!(
            "{}/{again_id}/history",
            memories_path(&collection)
        )),
        200,
    );
    let values: Vec<(&str, bool)> = history["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|entry| {
            (
                entry["memory"]["id"].as_str().unwrap_or_default(),
                entry["current"] == json!(true),
            )
        })
        .collect();
    assert_eq!(
        values,
        vec![(berlin_id, false), (paris_id, false), (again_id, true)],
        "{history:#}"
    );
    let pairs = expect_status(
        client.get(&format!(
            "/v1/memory/collections/{collection}/contradictions"
        )),
        200,
    );
    let pairs: Vec<(&str, &str)> = pairs["contradictions"]
        .as_array()
        .expect("pairs")
        .iter()
        .map(|pair| {
            (
                pair["current"]["id"].as_str().unwrap_or_default(),
                pair["superseded"]["id"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(pairs, vec![(again_id, paris_id), (paris_id, berlin_id)]);
    // Reinstating the same value again is a repeat of what holds the slot: that memory
    // is answered (200), nothing is added.
    let repeat = expect_status(reinstate(berlin_id), 200);
    assert_eq!(repeat["id"], json!(again_id), "{repeat}");
}
