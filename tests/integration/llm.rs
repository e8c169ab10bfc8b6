//! Graph memory and search with an LLM: the platform LLM and a tenant's own extraction
//! LLM are local fake OpenAI-compatible servers that speak the chat-completions wire
//! format, scripted reply by reply.

use memvault_fake_llm::{FakeLlmServer, FakeReply};
use serde_json::{json, Value};

use crate::support::{expect_error, expect_status, start_in_process, tenant_on, unique, Client};

fn facts_reply(facts: Value, prompt_tokens: u64, completion_tokens: u64) -> FakeReply {
    FakeReply::chat_with_usage(
        json!({ "facts": facts }).to_string(),
        prompt_tokens,
        completion_tokens,
    )
}

fn color(value: &str) -> Value {
    json!([{"type": "preference", "text": format!("My favorite color is {value}."),
            "subject": "user", "attribute": "favorite color", "value": value, "valid_until": null}])
}

fn remember(client: &Client, collection: &str, content: &str) -> reqwest::blocking::Response {
    client.post(
        &format!("/v1/memory/collections/{collection}/remember?sync=true"),
        &json!({ "content": content }),
    )
}

fn search(client: &Client, collection: &str, body: Value) -> Value {
    expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &body,
        ),
        200,
    )
}

#[test]
fn the_platform_llm_extracts_bills_retries_and_respects_the_cap() {
    let llm = FakeLlmServer::start();
    let base_url = llm.base_url();
    let server = start_in_process(move |config| {
        config.llm.base_url = Some(base_url);
        config.llm.model = "gpt-4o-mini".to_owned();
        config.llm.max_retries = 1;
    });
    let client = tenant_on(&server);
    let collection = unique("llm");

    // Extraction through the LLM; its facts supersede as the rule path's do.
    llm.push(facts_reply(color("blue"), 1_000, 100));
    let body = expect_status(
        remember(&client, &collection, "I really love blue, it's my color"),
        200,
    );
    assert_eq!(body["extractor"], json!("llm"));
    assert_eq!(
        body["memories"][0]["text"],
        json!("My favorite color is blue.")
    );
    let request = llm.requests().pop().unwrap();
    assert_eq!(request.body["model"], json!("gpt-4o-mini"));
    assert_eq!(
        request.body["response_format"]["type"],
        json!("json_object")
    );
    assert!(request.prompt_text().contains("I really love blue"));

    // Invalid JSON once: one retry, and both calls' tokens are billed.
    llm.push(FakeReply::chat_with_usage("not json at all", 500, 50));
    llm.push(facts_reply(color("green"), 1_000, 100));
    let body = expect_status(remember(&client, &collection, "green now"), 200);
    assert_eq!(body["memories"][0]["relation"], json!("updated"));

    // A 500 is retried by the client.
    llm.push(FakeReply::text(500, "overloaded"));
    llm.push(facts_reply(json!([]), 100, 10));
    let body = expect_status(remember(&client, &collection, "hello there"), 200);
    assert_eq!(body["created"], json!(0));

    // Invalid twice: the remember fails with 502 and stores nothing.
    llm.push(FakeReply::chat_with_usage("{\"facts\": 3}", 10, 1));
    llm.push(FakeReply::chat_with_usage(
        "{\"facts\": [{\"type\": \"rumour\"}]}",
        10,
        1,
    ));
    let detail = expect_error(
        remember(&client, &collection, "My favorite color is red."),
        502,
    );
    assert!(detail.contains("invalid output"), "{detail}");

    let spend = expect_status(client.get("/v1/memory/spend-cap"), 200);
    let extract = spend["usage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["purpose"] == json!("extract"))
        .expect("extract usage")
        .clone();
    assert_eq!(extract["model"], json!("gpt-4o-mini"));
    assert_eq!(extract["calls"], json!(4));
    assert_eq!(
        extract["prompt_tokens"],
        json!(1_000 + 500 + 1_000 + 100 + 20)
    );
    assert_eq!(extract["completion_tokens"], json!(100 + 50 + 100 + 10 + 2));
    let expected_cost = (2_620.0 * 0.15 + 262.0 * 0.60) / 1_000_000.0;
    assert!(
        (spend["spent_usd"].as_f64().unwrap() - expected_cost).abs() < 1e-9,
        "{spend}"
    );
    // The dashboard's usage page counts the same calls under today's date.
    let mut browser = crate::dashboard::Browser::signed_in(&server.base_url, client.key());
    let html = browser.page("/dashboard/usage");
    let today = chrono::Utc::now().format("%Y-%m-%d");
    let row = format!(
        "<td>{today}</td><td>extract</td><td>gpt-4o-mini</td><td>platform</td><td class=\"num\">4</td><td class=\"num\">2882</td><td class=\"num\">{expected_cost:.4}</td>"
    );
    assert!(html.contains(&row), "no {row} in {html}");
    assert!(html.contains("LLM tokens per day"), "{html}");

    // Over the cap: stored raw, no LLM call; search's LLM steps are skipped, saying why.
    let capped = expect_status(
        client.put("/v1/memory/spend-cap", &json!({"monthly_usd": 0.0001})),
        200,
    );
    assert_eq!(capped["over_cap"], json!(true));
    let calls_before = llm.request_count();
    let body = expect_status(
        remember(&client, &collection, "My favorite color is red."),
        200,
    );
    assert_eq!(body["extractor"], json!("skipped"));
    assert_eq!(body["memories"][0]["type"], json!("other"));
    assert!(body["detail"].as_str().unwrap().contains("spend cap"));
    let results = search(
        &client,
        &collection,
        json!({"query": "color", "rerank": true, "rewrite": true}),
    );
    let skipped = results["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 2, "{results}");
    assert!(skipped[0]["reason"].as_str().unwrap().contains("spend cap"));
    assert_eq!(
        llm.request_count(),
        calls_before,
        "no LLM call over the cap"
    );

    // Cap cleared: rewrite and rerank each make one call and shape the answer.
    expect_status(
        client.put("/v1/memory/spend-cap", &json!({"monthly_usd": null})),
        200,
    );
    let plain = search(
        &client,
        &collection,
        json!({"query": "favorite color", "min_score": 0.0, "limit": 2}),
    );
    let ids: Vec<Value> = plain["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].clone())
        .collect();
    assert_eq!(ids.len(), 2, "{plain}");
    llm.push(FakeReply::chat_with_usage(
        json!({"query": "favorite color"}).to_string(),
        20,
        5,
    ));
    llm.push(FakeReply::chat_with_usage(
        json!({"ranking": [ids[1], ids[0]]}).to_string(),
        40,
        5,
    ));
    let reranked = search(
        &client,
        &collection,
        json!({"query": "which colour do I like", "min_score": 0.0, "limit": 2, "rewrite": true, "rerank": true}),
    );
    assert_eq!(reranked["skipped"], json!([]), "{reranked}");
    let order: Vec<Value> = reranked["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].clone())
        .collect();
    assert_eq!(order, vec![ids[1].clone(), ids[0].clone()]);
    assert_eq!(llm.request_count(), calls_before + 2);

    // A profile through the LLM.
    llm.push(FakeReply::chat_with_usage(
        json!({"profile": "Likes green."}).to_string(),
        30,
        5,
    ));
    let profile = expect_status(
        client.get(&format!("/v1/memory/collections/{collection}/profile")),
        200,
    );
    assert_eq!(profile["profile"], json!("Likes green."));
    assert_eq!(profile["generated_by"], json!("llm"));
}

#[test]
fn a_tenant_s_own_llm_is_self_tested_kept_secret_and_never_capped() {
    let platform = FakeLlmServer::start();
    let own = FakeLlmServer::start();
    let base_url = platform.base_url();
    let server = start_in_process(move |config| {
        config.llm.base_url = Some(base_url);
        config.llm.max_retries = 0;
    });
    let client = tenant_on(&server);
    let collection = unique("own-llm");
    let path = "/v1/memory/extraction/config";
    let body = json!({"provider": "custom", "base_url": own.base_url(), "model": "own-model", "api_key": "sk-own-secret"});

    // A failing self-test saves nothing.
    own.push(FakeReply::json(
        401,
        json!({"error": {"message": "bad key"}}),
    ));
    let detail = expect_error(client.put(path, &body), 422);
    assert!(
        detail.contains("self-test") && !detail.contains("sk-own-secret"),
        "{detail}"
    );
    assert_eq!(
        expect_status(client.get(path), 200)["configured"],
        json!(false)
    );

    own.push(FakeReply::chat_with_usage("{\"ok\": true}", 5, 2));
    let saved = expect_status(client.put(path, &body), 200);
    assert_eq!(saved["configured"], json!(true));
    assert_eq!(saved["model"], json!("own-model"));
    let shown = expect_status(client.get(path), 200).to_string();
    assert!(!shown.contains("sk-own-secret"), "{shown}");
    let self_test = own.requests().pop().unwrap();
    assert_eq!(
        self_test.header("authorization"),
        Some("Bearer sk-own-secret")
    );

    // A zero cap does not stop the tenant's own LLM.
    expect_status(
        client.put("/v1/memory/spend-cap", &json!({"monthly_usd": 0})),
        200,
    );
    own.push(facts_reply(color("teal"), 300, 30));
    let body = expect_status(remember(&client, &collection, "teal it is"), 200);
    assert_eq!(body["extractor"], json!("llm"));
    assert_eq!(platform.request_count(), 0, "the platform LLM was not used");
    let spend = expect_status(client.get("/v1/memory/spend-cap"), 200);
    assert_eq!(
        spend["spent_usd"],
        json!(0.0),
        "own-LLM calls are not counted against the cap"
    );
    assert!(spend["usage"]
        .as_array()
        .unwrap()
        .iter()
        .all(|row| row["own_llm"] == json!(true)));

    // DELETE reverts to the platform default, which is over the cap now.
    assert_eq!(expect_status(client.delete(path), 204), Value::Null);
    let body = expect_status(
        remember(&client, &collection, "My favorite color is red."),
        200,
    );
    assert_eq!(body["extractor"], json!("skipped"));
}

#[test]
fn the_summary_is_one_llm_call_billed_as_summary_cached_and_extractive_when_it_fails() {
    let llm = FakeLlmServer::start();
    let base_url = llm.base_url();
    let server = start_in_process(move |config| {
        config.llm.base_url = Some(base_url);
        config.llm.model = "gpt-4o-mini".to_owned();
        config.llm.max_retries = 0;
    });
    let client = tenant_on(&server);
    let collection = unique("llm-summary");
    for (text, importance) in [
        ("The billing service moved to Rust in May.", 0.9),
        ("Churn dropped after the onboarding redesign.", 0.4),
        ("Support is busiest on Monday mornings.", 0.1),
    ] {
        expect_status(
            client.post(
                &format!("/v1/memory/collections/{collection}/memories"),
                &json!({"text": text, "importance": importance}),
            ),
            201,
        );
    }
    let summary_path = format!("/v1/memory/collections/{collection}/summary");

    llm.push(FakeReply::chat_with_usage(
        json!({"summary": "A product team's engineering and support notes.",
               "themes": ["billing", "onboarding"]})
        .to_string(),
        400,
        40,
    ));
    let body = expect_status(client.get(&format!("{summary_path}?limit=2")), 200);
    assert_eq!(body["generated_by"], json!("llm"), "{body}");
    assert_eq!(
        body["summary"],
        json!("A product team's engineering and support notes.")
    );
    assert_eq!(body["themes"], json!(["billing", "onboarding"]));
    assert_eq!(body["based_on"], json!(2));
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "one bounded call");
    let prompt = requests[0].prompt_text();
    assert!(prompt.contains("billing service moved to Rust"), "{prompt}");
    assert!(
        !prompt.contains("busiest on Monday"),
        "limit=2 keeps the least important memory out: {prompt}"
    );

    let cached = expect_status(client.get(&format!("{summary_path}?limit=2")), 200);
    assert_eq!(cached["generated_at"], body["generated_at"]);
    assert_eq!(llm.request_count(), 1, "a cached summary makes no call");

    let spend = expect_status(client.get("/v1/memory/spend-cap"), 200);
    let row = spend["usage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["purpose"] == json!("summary"))
        .expect("summary usage")
        .clone();
    assert_eq!(
        (row["calls"].clone(), row["prompt_tokens"].clone()),
        (json!(1), json!(400))
    );

    // The LLM fails: an extractive summary, with the reason, and not cached.
    llm.push(FakeReply::json(500, json!({"error": {"message": "down"}})));
    let degraded = expect_status(client.get(&summary_path), 200);
    assert_eq!(degraded["generated_by"], json!("extractive"), "{degraded}");
    assert_eq!(degraded["based_on"], json!(3));
    assert!(degraded["skipped"]
        .as_str()
        .unwrap()
        .contains("LLM call failed"));
    llm.push(FakeReply::chat(
        json!({"summary": "Recovered.", "themes": []}).to_string(),
    ));
    let recovered = expect_status(client.get(&summary_path), 200);
    assert_eq!(recovered["generated_by"], json!("llm"), "{recovered}");
    assert_eq!(recovered["summary"], json!("Recovered."));

    // Over the cap: extractive without a call, saying why.
    expect_status(
        client.put("/v1/memory/spend-cap", &json!({"monthly_usd": 0.000001})),
        200,
    );
    expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/memories"),
            &json!({"text": "A fourth note invalidates the cache."}),
        ),
        201,
    );
    let calls = llm.request_count();
    let capped = expect_status(client.get(&summary_path), 200);
    assert_eq!(capped["generated_by"], json!("extractive"));
    assert!(capped["skipped"].as_str().unwrap().contains("spend cap"));
    assert_eq!(llm.request_count(), calls);
}

/// The extraction queue's figures from the operator metrics of `server`.
fn extraction_metrics(server: &crate::support::TestServer) -> Value {
    let admin = Client::new(&server.base_url, Some(&server.admin_key));
    expect_status(admin.get("/v1/memory/admin/metrics"), 200)["jobs"]["extraction"].clone()
}

#[test]
fn an_unreachable_llm_pauses_the_tenant_s_extraction_which_resumes_when_it_recovers() {
    let llm = FakeLlmServer::start();
    llm.set_fallback(|_| FakeReply::json(503, json!({"error": {"message": "overloaded"}})));
    let base_url = llm.base_url();
    let server = start_in_process(move |config| {
        config.llm.base_url = Some(base_url);
        config.llm.max_retries = 0;
        config.extraction.workers = 1;
        config.extraction.pause_secs = 2;
    });
    let client = tenant_on(&server);
    let collection = unique("paused");
    let jobs: Vec<String> = (0..8)
        .map(|n| {
            let accepted = expect_status(
                client.post(
                    &format!("/v1/memory/collections/{collection}/remember"),
                    &json!({ "content": format!("My favorite color is number {n}") }),
                ),
                202,
            );
            accepted["job_id"].as_str().expect("job_id").to_owned()
        })
        .collect();

    // Five calls fail in a row: the tenant's extraction pauses; its jobs wait, queued.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while extraction_metrics(&server)["paused_groups"] != json!(1) {
        assert!(
            std::time::Instant::now() < deadline,
            "extraction never paused"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let calls_when_paused = llm.request_count();
    assert!(calls_when_paused >= 5, "{calls_when_paused}");
    for job in &jobs {
        let job = expect_status(client.get(&format!("/v1/memory/extract/job/{job}")), 200);
        assert_ne!(
            job["state"],
            json!("failed"),
            "an unreachable LLM fails no job: {job}"
        );
        assert_ne!(job["state"], json!("done"), "{job}");
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        llm.request_count() <= calls_when_paused + 1,
        "a paused tenant does not call its LLM (at most a probe)"
    );

    // The LLM recovers: the next probe gets through and every job is done, none lost.
    llm.set_fallback(|_| facts_reply(color("green"), 10, 5));
    for job in &jobs {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let state = expect_status(client.get(&format!("/v1/memory/extract/job/{job}")), 200);
            if state["state"] == json!("done") {
                break;
            }
            assert_ne!(state["state"], json!("failed"), "{state}");
            assert!(
                std::time::Instant::now() < deadline,
                "job never finished: {state}"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    let metrics = extraction_metrics(&server);
    assert_eq!(metrics["paused_groups"], json!(0), "{metrics}");
    assert!(
        metrics["pauses"].as_u64().unwrap_or_default() >= 1,
        "{metrics}"
    );
    assert_eq!(metrics["failed"], json!(0), "{metrics}");
}
