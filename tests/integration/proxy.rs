//! The chat proxy, `POST /v1/proxy/chat/completions`, against a fake OpenAI-compatible
//! upstream: memories injected as a system message, the upstream's answer plus the
//! `memvault` extension, the user message queued for extraction, upstream failures as
//! 502/504, validation, keys and grants.
//!
//! The tests share one server whose platform LLM is a fake that answers by content (so
//! tests running at once do not take each other's scripted replies): extraction calls
//! (JSON mode) get facts, a last user message containing `FAIL-500` a 500, one containing
//! `SLOW` a reply later than the server's 1 s LLM timeout, anything else a fixed answer.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use memvault_fake_llm::{FakeLlmServer, FakeReply, RecordedRequest};
use serde_json::{json, Value};

use crate::support::{
    create_memory, expect_error, expect_status, start_in_process, tenant_on, unique, Client,
    TestServer,
};

const PATH: &str = "/v1/proxy/chat/completions";
const ANSWER: &str = "Fake upstream answer.";

struct ProxyServer {
    server: TestServer,
    upstream: FakeLlmServer,
}

fn respond(request: &RecordedRequest) -> FakeReply {
    if request.body["response_format"]["type"] == json!("json_object") {
        // An extraction job: one fact when the content says a favourite colour.
        let prompt = request.prompt_text();
        let facts = match ["teal", "amber"]
            .into_iter()
            .find(|color| prompt.contains(&format!("favorite color is {color}")))
        {
            Some(color) => {
                json!([{"type": "preference", "text": format!("My favorite color is {color}."),
                "subject": "user", "attribute": "favorite_color", "value": color, "valid_until": null}])
            }
            None => json!([]),
        };
        return FakeReply::chat(json!({ "facts": facts }).to_string());
    }
    let last = request.last_user_message();
    if last.contains("FAIL-500") {
        return FakeReply::json(500, json!({"error": {"message": "upstream exploded"}}));
    }
    if last.contains("SLOW") {
        return FakeReply::chat("too late").delay(Duration::from_secs(4));
    }
    FakeReply::json(
        200,
        json!({
            "id": "chatcmpl-proxy",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": request.body["model"],
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 6, "total_tokens": 46},
        }),
    )
}

fn proxy_server() -> &'static ProxyServer {
    static SERVER: OnceLock<ProxyServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let upstream = FakeLlmServer::start();
        upstream.set_fallback(respond);
        let base_url = upstream.base_url();
        let server = start_in_process(move |config| {
            config.llm.base_url = Some(base_url);
            config.llm.model = "gpt-4o-mini".to_owned();
            config.llm.timeout_secs = 1;
            config.llm.max_retries = 0;
        });
        ProxyServer { server, upstream }
    })
}

/// The upstream's chat requests (not extraction) whose last user message contains `marker`.
fn chats_with(upstream: &FakeLlmServer, marker: &str) -> Vec<RecordedRequest> {
    upstream
        .requests()
        .into_iter()
        .filter(|request| request.body.get("response_format").is_none())
        .filter(|request| request.last_user_message().contains(marker))
        .collect()
}

fn chat(client: &Client, body: Value) -> reqwest::blocking::Response {
    client.post(PATH, &body)
}

fn user(text: &str) -> Value {
    json!([{"role": "user", "content": text}])
}

fn wait_for_job(client: &Client, job_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let job = expect_status(client.get(&format!("/v1/memory/extract/job/{job_id}")), 200);
        if job["complete"] == json!(true) {
            return job;
        }
        assert!(Instant::now() < deadline, "job did not finish: {job}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn memories_are_injected_and_the_upstream_answer_comes_back_with_the_extension() {
    let proxy = proxy_server();
    let client = tenant_on(&proxy.server);
    let collection = unique("proxy");
    let porto = create_memory(
        &client,
        &collection,
        json!({"text": "Ana lives in Porto and works as a nurse."}),
    );
    create_memory(
        &client,
        &collection,
        json!({"text": "The quarterly tax filing is due in April."}),
    );

    let marker = unique("where-does-ana-live");
    let response = client
        .request(reqwest::Method::POST, PATH)
        .header("x-custom-secret", "caller-header-value")
        .json(&json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": format!("Where does Ana live? ({marker})")},
            ],
            "collection": collection,
            "memory_limit": 1,
            "store": false,
            "temperature": 0.2,
            "max_tokens": 50,
            "top_p": 0.9,
            "user": "end-user-7",
        }))
        .send()
        .expect("request");
    let body = expect_status(response, 200);

    // The upstream's object comes back unchanged, plus the extension.
    assert_eq!(body["id"], json!("chatcmpl-proxy"));
    assert_eq!(body["object"], json!("chat.completion"));
    assert_eq!(body["system_fingerprint"], json!("fp_fake"));
    assert_eq!(body["choices"][0]["message"]["content"], json!(ANSWER));
    assert_eq!(body["usage"]["total_tokens"], json!(46));
    let extension = &body["memvault"];
    assert_eq!(extension["stored"], json!(false));
    assert!(extension.get("job_id").is_none(), "{extension}");
    let used = extension["memories_used"]
        .as_array()
        .expect("memories_used");
    assert_eq!(used.len(), 1, "{extension}");
    assert_eq!(used[0]["id"], porto["id"]);
    assert_eq!(used[0]["collection"], json!(collection));
    assert_eq!(used[0]["text"], porto["text"]);
    assert!(used[0]["score"].as_f64().unwrap() > 0.0);

    // Upstream: the memory in a system message after the caller's own, the fields passed
    // through, and none of the caller's credentials or headers.
    let received = chats_with(&proxy.upstream, &marker);
    assert_eq!(received.len(), 1);
    let request = &received[0];
    let messages = request.messages();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(
        messages[0],
        (
            "system".to_owned(),
            "You are a helpful assistant.".to_owned()
        )
    );
    assert_eq!(messages[1].0, "system");
    assert_eq!(
        messages[1].1,
        "Relevant memories:\n- Ana lives in Porto and works as a nurse."
    );
    assert_eq!(messages[2].0, "user");
    assert_eq!(request.body["model"], json!("gpt-4o-mini"));
    assert_eq!(request.body["temperature"], json!(0.2));
    assert_eq!(request.body["max_tokens"], json!(50));
    assert_eq!(request.body["top_p"], json!(0.9));
    assert_eq!(request.body["user"], json!("end-user-7"));
    for field in ["collection", "memory_limit", "store", "container_tag"] {
        assert!(request.body.get(field).is_none(), "{field} went upstream");
    }
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.header("x-custom-secret"), None);
    assert!(!request.raw_body.contains(client.key()));
    assert!(request
        .headers
        .iter()
        .all(|(_, value)| !value.contains(client.key()) && !value.contains("caller-header")));

    // The call is billed as `proxy`.
    let spend = expect_status(client.get("/v1/memory/spend-cap"), 200);
    let proxy_row = spend["usage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["purpose"] == json!("proxy"))
        .cloned()
        .expect("proxy usage");
    assert_eq!(proxy_row["prompt_tokens"], json!(40));
    assert_eq!(proxy_row["own_llm"], json!(false));

    // memory_limit 0: no search, no system message added; the model defaults to the
    // configured one.
    let marker = unique("no-memories");
    let body = expect_status(
        chat(
            &client,
            json!({"messages": user(&format!("Where does Ana live? {marker}")),
                   "collection": collection, "memory_limit": 0, "store": false}),
        ),
        200,
    );
    assert_eq!(body["memvault"]["memories_used"], json!([]));
    let request = chats_with(&proxy.upstream, &marker).pop().unwrap();
    assert_eq!(request.messages().len(), 1);
    assert_eq!(request.body["model"], json!("gpt-4o-mini"));

    // A collection that does not exist yet has no memories (and is no error).
    let body = expect_status(
        chat(
            &client,
            json!({"messages": user("Where does Ana live?"), "collection": unique("empty"),
                   "store": false}),
        ),
        200,
    );
    assert_eq!(body["memvault"]["memories_used"], json!([]));
}

#[test]
fn store_queues_the_user_message_for_extraction_and_store_false_stores_nothing() {
    let proxy = proxy_server();
    let client = tenant_on(&proxy.server);
    let collection = unique("proxy-store");

    let body = expect_status(
        chat(
            &client,
            json!({"messages": user("My favorite color is teal."), "collection": collection}),
        ),
        200,
    );
    assert_eq!(body["memvault"]["stored"], json!(true), "{body}");
    let job_id = body["memvault"]["job_id"].as_str().expect("job_id");
    let job = wait_for_job(&client, job_id);
    assert_eq!(job["state"], json!("done"), "{job}");
    assert_eq!(job["collection"], json!(collection));
    assert_eq!(job["facts"][0]["text"], json!("My favorite color is teal."));
    let listed = expect_status(
        client.get(&format!("/v1/memory/collections/{collection}/memories")),
        200,
    );
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");

    // The stored fact is what the next turn gets injected.
    let body = expect_status(
        chat(
            &client,
            json!({"messages": user("What is my favorite color?"), "collection": collection,
                   "store": false}),
        ),
        200,
    );
    assert_eq!(
        body["memvault"]["memories_used"][0]["text"],
        json!("My favorite color is teal.")
    );

    // store false: nothing is queued or stored.
    let quiet = unique("proxy-quiet");
    let body = expect_status(
        chat(
            &client,
            json!({"messages": user("My favorite color is amber."), "collection": quiet,
                   "store": false}),
        ),
        200,
    );
    assert_eq!(body["memvault"]["stored"], json!(false));
    assert!(body["memvault"].get("job_id").is_none());
    expect_error(client.get(&format!("/v1/memory/collections/{quiet}")), 404);

    // Without a collection the message goes to `chat`.
    let body = expect_status(
        chat(
            &client,
            json!({"messages": user("My favorite color is amber.")}),
        ),
        200,
    );
    let job = wait_for_job(&client, body["memvault"]["job_id"].as_str().unwrap());
    assert_eq!(job["collection"], json!("chat"));

    // A read-only key chats but does not store, and says why.
    let created = expect_status(
        client.post(
            "/v1/memory/keys",
            &json!({"label": "reader", "read_only": true}),
        ),
        201,
    );
    let reader = Client::new(&proxy.server.base_url, created["key"].as_str());
    let body = expect_status(
        chat(
            &reader,
            json!({"messages": user("My favorite color is amber."), "collection": collection}),
        ),
        200,
    );
    assert_eq!(body["choices"][0]["message"]["content"], json!(ANSWER));
    assert_eq!(body["memvault"]["stored"], json!(false));
    assert!(
        body["memvault"]["skipped"]
            .as_str()
            .unwrap()
            .contains("read-only"),
        "{body}"
    );
}

#[test]
fn the_tenant_s_own_llm_serves_the_proxy_when_configured() {
    let proxy = proxy_server();
    let client = tenant_on(&proxy.server);
    let own = FakeLlmServer::start();
    own.push(FakeReply::chat_with_usage("{\"ok\": true}", 5, 2));
    expect_status(
        client.put(
            "/v1/memory/extraction/config",
            &json!({"provider": "custom", "base_url": own.base_url(), "model": "own-model",
                    "api_key": "sk-own-secret"}),
        ),
        200,
    );
    own.push(FakeReply::chat_with_usage("From your own LLM.", 30, 4));
    let marker = unique("own");
    let body = expect_status(
        chat(
            &client,
            json!({"messages": user(&format!("hello {marker}")), "store": false}),
        ),
        200,
    );
    assert_eq!(
        body["choices"][0]["message"]["content"],
        json!("From your own LLM.")
    );
    assert!(chats_with(&proxy.upstream, &marker).is_empty());
    let request = own.requests().pop().unwrap();
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-own-secret")
    );
    assert_eq!(request.body["model"], json!("own-model"));
    assert!(!request.raw_body.contains(client.key()));

    // Any model may be asked of the tenant's own LLM.
    own.push(FakeReply::chat("ok"));
    expect_status(
        chat(
            &client,
            json!({"messages": user("hi"), "model": "own-model-large", "store": false}),
        ),
        200,
    );
    assert_eq!(
        own.requests().pop().unwrap().body["model"],
        json!("own-model-large")
    );
}

#[test]
fn upstream_failures_are_502_and_timeouts_504() {
    let proxy = proxy_server();
    let client = tenant_on(&proxy.server);
    let collection = unique("proxy-fail");

    let detail = expect_error(
        chat(
            &client,
            json!({"messages": user("please FAIL-500"), "collection": collection}),
        ),
        502,
    );
    assert!(
        detail.contains("HTTP 500") && detail.contains("upstream exploded"),
        "{detail}"
    );
    // Nothing was queued for a chat that failed.
    expect_error(
        client.get(&format!("/v1/memory/collections/{collection}")),
        404,
    );

    // The fake answers after 4 s, past the 1 s timeout: a 504 is the timeout's answer.
    let detail = expect_error(chat(&client, json!({"messages": user("SLOW please")})), 504);
    assert!(detail.contains("upstream LLM"), "{detail}");

    // A model the platform does not offer (or price) is refused before any call.
    let detail = expect_error(
        chat(
            &client,
            json!({"messages": user("hi"), "model": "unpriced-model", "store": false}),
        ),
        422,
    );
    assert!(detail.contains("unpriced-model"), "{detail}");
}

#[test]
fn invalid_bodies_are_422_and_a_missing_key_is_401() {
    const MARKER: &str = "an invalid request that must stay here";
    let proxy = proxy_server();
    let client = tenant_on(&proxy.server);
    for (body, expected) in [
        (json!({}), "messages"),
        (json!({"messages": []}), "messages"),
        (
            json!({"messages": [{"role": "system", "content": "be brief"}]}),
            "user message",
        ),
        (json!({"messages": user(MARKER), "stream": true}), "stream"),
        (
            json!({"messages": user(MARKER), "memory_limit": 51}),
            "memory_limit",
        ),
        (
            json!({"messages": user(MARKER), "memory_limit": -1}),
            "memory_limit",
        ),
        (
            json!({"messages": user(MARKER), "temperature": 3}),
            "temperature",
        ),
        (
            json!({"messages": user(MARKER), "max_tokens": 0}),
            "max_tokens",
        ),
        (
            json!({"messages": user(MARKER), "memory_limt": 3}),
            "memory_limt",
        ),
        (
            json!({"messages": [{"role": "robot", "content": MARKER}]}),
            "role",
        ),
        (
            json!({"messages": [{"role": "user", "content": 5}]}),
            "content",
        ),
        (
            json!({"messages": user(MARKER), "collection": "bad name!"}),
            "collection",
        ),
        (json!({"messages": "hi"}), "messages"),
    ] {
        let detail = expect_error(chat(&client, body.clone()), 422);
        assert!(detail.to_lowercase().contains(expected), "{body}: {detail}");
    }
    // The server is shared with the other proxy tests, so count only what carries this marker.
    let sent = proxy
        .upstream
        .requests()
        .into_iter()
        .filter(|request| request.body.to_string().contains(MARKER))
        .count();
    assert_eq!(sent, 0, "no invalid request went upstream");

    let anonymous = Client::new(&proxy.server.base_url, None);
    expect_error(chat(&anonymous, json!({"messages": user("hi")})), 401);
    let forged = Client::new(&proxy.server.base_url, Some("mv_not_a_real_key"));
    expect_error(chat(&forged, json!({"messages": user("hi")})), 401);
}

#[test]
fn grants_decide_which_memories_an_agent_gets() {
    let proxy = proxy_server();
    let owner = tenant_on(&proxy.server);
    let created = expect_status(
        owner.post(
            "/v1/memory/keys",
            &json!({"label": "outsider", "read_only": false}),
        ),
        201,
    );
    let outsider = Client::new(&proxy.server.base_url, created["key"].as_str());
    let vault = unique("vault");
    let open = unique("open");
    let secret = create_memory(
        &owner,
        &vault,
        json!({"text": "The zephyrine vault code is 4471."}),
    );
    let visible = create_memory(
        &owner,
        &open,
        json!({"text": "The zephyrine spare key is under the mat."}),
    );
    let owner_key_id = expect_status(owner.get("/v1/memory/keys"), 200)["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|key| key["owner"] == json!(true))
        .map(|key| key["id"].clone())
        .unwrap();
    // Restricted to the owner's own key: the outsider has no grant.
    expect_status(
        owner.put(
            &format!("/v1/memory/collections/{vault}/grants"),
            &json!({"agent_key_id": owner_key_id, "can_read": true, "can_write": true}),
        ),
        200,
    );

    let ask = json!({"messages": user("What is the zephyrine code?"), "memory_limit": 10,
                     "store": false});
    let ids = |body: &Value| -> Vec<Value> {
        body["memvault"]["memories_used"]
            .as_array()
            .unwrap()
            .iter()
            .map(|memory| memory["id"].clone())
            .collect()
    };
    let owner_sees = ids(&expect_status(chat(&owner, ask.clone()), 200));
    assert!(owner_sees.contains(&secret["id"]), "{owner_sees:?}");
    let outsider_sees = ids(&expect_status(chat(&outsider, ask.clone()), 200));
    assert!(outsider_sees.contains(&visible["id"]), "{outsider_sees:?}");
    assert!(!outsider_sees.contains(&secret["id"]), "{outsider_sees:?}");

    // Naming the restricted collection is refused, as a search of it is.
    let mut named = ask.clone();
    named["collection"] = json!(vault);
    let detail = expect_error(chat(&outsider, named), 403);
    assert!(detail.contains("can_read"), "{detail}");

    // Storing into a collection without can_write does not fail the chat.
    let mut storing = ask;
    storing["store"] = json!(true);
    storing["collection"] = json!(open);
    expect_status(
        owner.put(
            &format!("/v1/memory/collections/{open}/grants"),
            &json!({"agent_key_id": created["id"], "can_read": true, "can_write": false}),
        ),
        200,
    );
    let body = expect_status(chat(&outsider, storing), 200);
    assert_eq!(body["memvault"]["stored"], json!(false));
    assert!(
        body["memvault"]["skipped"]
            .as_str()
            .unwrap()
            .contains("can_write"),
        "{body}"
    );
}
