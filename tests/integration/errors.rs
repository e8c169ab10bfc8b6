//! Error bodies as clients see them: one error of each common code provoked over HTTP, and
//! the whole `/openapi.json`, checked against committed insta snapshots (`snapshots/`), so
//! a changed code, status or wording shows up in review. Ids that vary per run are
//! replaced by placeholders before the comparison.

use reqwest::blocking::Response;
use serde_json::{json, Map, Value};

use crate::support::{
    expect_status, memories_path, new_tenant, start_in_process, tenant_on, unique, Client,
};

/// Collects `code → {status, detail}` with the run's ids replaced.
struct Answers {
    replacements: Vec<(String, &'static str)>,
    answers: Map<String, Value>,
}

impl Answers {
    fn new() -> Self {
        Answers {
            replacements: Vec::new(),
            answers: Map::new(),
        }
    }

    /// Writes `placeholder` wherever `actual` appears in a detail.
    fn replace(&mut self, actual: &str, placeholder: &'static str) {
        self.replacements.push((actual.to_owned(), placeholder));
    }

    #[track_caller]
    fn record(&mut self, response: Response, status: u16) {
        let body = expect_status(response, status);
        let code = body["code"].as_str().expect("a string code").to_owned();
        let mut detail = body["detail"].as_str().expect("a string detail").to_owned();
        for (actual, placeholder) in &self.replacements {
            detail = detail.replace(actual.as_str(), placeholder);
        }
        assert_eq!(
            body.as_object().map(|object| object.len()),
            Some(2),
            "an error body has exactly detail and code: {body}"
        );
        let previous = self
            .answers
            .insert(code.clone(), json!({"status": status, "detail": detail}));
        assert!(previous.is_none(), "{code} provoked twice");
    }
}

fn create_key(client: &Client, body: Value) -> (Client, String) {
    let created = expect_status(client.post("/v1/memory/keys", &body), 201);
    let secret = created["key"].as_str().expect("key").to_owned();
    let id = created["id"].as_str().expect("id").to_owned();
    (
        Client::new(&crate::support::shared().base_url, Some(&secret)),
        id,
    )
}

#[test]
fn one_error_of_each_common_code() {
    let mut answers = Answers::new();
    let owner = new_tenant();
    let collection = unique("errors");
    answers.replace(&collection, "<collection>");
    let memories = memories_path(&collection);
    let memory = expect_status(
        owner.post(&memories, &json!({"text": "Ana likes tea."})),
        201,
    );
    let memory_id = memory["id"].as_str().expect("id").to_owned();
    let (reader, reader_id) = create_key(&owner, json!({"label": "reader", "read_only": true}));
    answers.replace(&reader_id, "<reader_key_id>");
    let (outsider, outsider_id) = create_key(&owner, json!({"label": "outsider"}));
    answers.replace(&outsider_id, "<outsider_key_id>");

    // 401
    answers.record(Client::anonymous().get("/v1/memory/collections"), 401);
    let bogus = Client::new(
        &crate::support::shared().base_url,
        Some("mv_not_a_key_of_anyone_0000"),
    );
    answers.record(bogus.get("/v1/memory/collections"), 401);
    // 403
    answers.record(reader.post(&memories, &json!({"text": "Nope."})), 403);
    answers.record(
        outsider.post("/v1/memory/keys", &json!({"label": "escalate"})),
        403,
    );
    answers.record(owner.get("/v1/memory/admin/metrics"), 403);
    let grants = format!("/v1/memory/collections/{collection}/grants");
    let only_reader = json!({"agent_key_id": reader_id, "can_read": true, "can_write": false});
    expect_status(owner.put(&grants, &only_reader), 200);
    answers.record(outsider.get(&memories), 403);
    // 404
    answers.record(owner.get("/v1/no-such-route"), 404);
    answers.record(owner.get("/v1/memory/collections/no-such-collection"), 404);
    answers.record(
        owner.get(&format!("{memories}/0193aaaa-0000-7000-8000-000000000000")),
        404,
    );
    answers.record(owner.delete("/v1/memory/keys/key_nonexistent"), 404);
    answers.record(owner.delete(&format!("{grants}/{outsider_id}")), 404);
    answers.record(owner.get("/v1/memory/extract/job/job_nonexistent"), 404);
    answers.record(owner.get("/v1/memory/webhook/config"), 404);
    // 405
    answers.record(owner.patch("/v1/memory/collections", &json!({})), 405);
    // 409
    answers.record(
        owner.post("/v1/memory/collections", &json!({"name": collection})),
        409,
    );
    expect_status(owner.delete(&format!("/v1/memory/keys/{outsider_id}")), 200);
    answers.record(owner.delete(&format!("/v1/memory/keys/{outsider_id}")), 409);
    // 422
    answers.record(
        owner.post_raw(&memories, b"{\"text\": ", "application/json"),
        422,
    );
    answers.record(owner.get(&format!("{memories}?limit=many")), 422);
    answers.record(
        owner.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &json!({"query": ""}),
        ),
        422,
    );
    answers.record(
        owner.put(
            "/v1/memory/webhook/config",
            &json!({"url": "http://127.0.0.1:9/hook"}),
        ),
        422,
    );
    // 503: the shared server has no LLM.
    answers.record(
        owner.post(
            "/v1/proxy/chat/completions",
            &json!({"messages": [{"role": "user", "content": "hi"}]}),
        ),
        503,
    );
    answers.replace(&memory_id, "<memory_id>");

    insta::assert_json_snapshot!("error_bodies", Value::Object(answers.answers));
}

/// 409 for the last key and 413 and 429 need a tenant alone or a server of their own.
#[test]
fn limits_and_the_last_key() {
    let mut answers = Answers::new();
    let lonely = new_tenant();
    let me = expect_status(lonely.get("/v1/memory/admin/me"), 200);
    let own_id = me["key"]["id"].as_str().expect("key id").to_owned();
    answers.replace(&own_id, "<key_id>");
    answers.record(lonely.delete(&format!("/v1/memory/keys/{own_id}")), 409);

    let server = start_in_process(|config| {
        config.server.max_body_bytes = 1024;
        config.rate_limit.per_minute = 1000;
        config.rate_limit.tiers.insert("free".to_owned(), 3);
    });
    let client = tenant_on(&server);
    let big = json!({"text": "x".repeat(4096)});
    answers.record(client.post(&memories_path("big"), &big), 413);
    // A request may straddle a minute boundary and find a fresh window: retry once.
    let mut limited = None;
    for _ in 0..10 {
        let response = client.get("/v1/memory/collections");
        if response.status().as_u16() == 429 {
            limited = Some(response);
            break;
        }
    }
    let response = limited.expect("no 429 within 10 requests at 3 per minute");
    let retry_after = response
        .headers()
        .get("retry-after")
        .expect("Retry-After")
        .to_str()
        .unwrap()
        .to_owned();
    answers.replace(&format!("retry in {retry_after} s"), "retry in <seconds> s");
    answers.record(response, 429);

    insta::assert_json_snapshot!("limit_bodies", Value::Object(answers.answers));
}

#[test]
fn openapi_document() {
    let document = expect_status(Client::anonymous().get("/openapi.json"), 200);
    insta::assert_json_snapshot!("openapi", document);
}
