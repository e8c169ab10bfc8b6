//! `POST /v1/mcp`: the MCP JSON-RPC endpoint (stateless streamable HTTP, JSON responses):
//! the handshake, the ten tools on a real collection, the JSON-RPC error codes, and that
//! every tool runs with the key's permissions (read-only keys, grants, tenants).

use std::time::{Duration, Instant};

use reqwest::blocking::Response;
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{
    create_memory, expect_error, expect_status, memories_path, new_tenant, shared, unique, Client,
};

const TOOLS: [&str; 10] = [
    "search_memory",
    "get_memory",
    "store_memory",
    "list_collections",
    "related_memory",
    "what_changed",
    "collection_health",
    "summarize_collection",
    "find_duplicates",
    "archive_stale",
];

/// POSTs one JSON-RPC message the way MCP clients do.
fn post_mcp(client: &Client, message: &Value) -> Response {
    client
        .request(Method::POST, "/v1/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(message)
        .send()
        .expect("request")
}

/// A request's JSON-RPC response (HTTP 200).
#[track_caller]
fn rpc(client: &Client, method: &str, params: Value) -> Value {
    let body = expect_status(
        post_mcp(
            client,
            &json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}),
        ),
        200,
    );
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], 7, "{body}");
    body
}

/// The `tools/call` result (success or `isError`).
#[track_caller]
fn call(client: &Client, tool: &str, arguments: Value) -> Value {
    let body = rpc(
        client,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    );
    assert!(body.get("error").is_none(), "{tool}: {body}");
    body["result"].clone()
}

/// A successful call's `structuredContent`, checked against its text twin.
#[track_caller]
fn call_ok(client: &Client, tool: &str, arguments: Value) -> Value {
    let result = call(client, tool, arguments);
    assert_eq!(result["isError"], false, "{tool}: {result}");
    let structured = result["structuredContent"].clone();
    assert!(structured.is_object(), "{tool}: {result}");
    let text = result["content"][0]["text"].as_str().expect("text content");
    assert_eq!(result["content"][0]["type"], "text");
    assert_eq!(
        serde_json::from_str::<Value>(text).expect("text is JSON"),
        structured
    );
    structured
}

/// A refused or failed call: `isError` with the reason; returns the text.
#[track_caller]
fn call_refused(client: &Client, tool: &str, arguments: Value) -> String {
    let result = call(client, tool, arguments);
    assert_eq!(result["isError"], true, "{tool}: {result}");
    assert!(result.get("structuredContent").is_none(), "{result}");
    result["content"][0]["text"]
        .as_str()
        .expect("text")
        .to_owned()
}

/// A JSON-RPC error of a request: its code and message.
#[track_caller]
fn rpc_error(client: &Client, method: &str, params: Value) -> (i64, String) {
    let body = rpc(client, method, params);
    assert!(body.get("result").is_none(), "{body}");
    (
        body["error"]["code"].as_i64().expect("code"),
        body["error"]["message"]
            .as_str()
            .expect("message")
            .to_owned(),
    )
}

fn ids(results: &Value) -> Vec<String> {
    results
        .as_array()
        .expect("array")
        .iter()
        .map(|memory| memory["id"].as_str().expect("id").to_owned())
        .collect()
}

fn create_key(owner: &Client, label: &str, read_only: bool) -> (Client, String) {
    let created = expect_status(
        owner.post(
            "/v1/memory/keys",
            &json!({"label": label, "read_only": read_only}),
        ),
        201,
    );
    (
        Client::new(&shared().base_url, created["key"].as_str()),
        created["id"].as_str().expect("id").to_owned(),
    )
}

#[test]
fn initialize_negotiates_the_version_and_tools_list_describes_ten_tools() {
    let client = new_tenant();
    let response = post_mcp(
        &client,
        &json!({"jsonrpc": "2.0", "id": "init-1", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
    );
    assert!(response.headers().get("mcp-session-id").is_none());
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    let body = expect_status(response, 200);
    assert_eq!(body["id"], "init-1");
    assert_eq!(body["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(body["result"]["serverInfo"]["name"], "memvault");
    assert!(body["result"]["capabilities"]["tools"].is_object());
    let newest = rpc(
        &client,
        "initialize",
        json!({"protocolVersion": "1999-01-01", "capabilities": {}}),
    );
    assert_eq!(newest["result"]["protocolVersion"], "2025-11-25");

    let accepted = post_mcp(
        &client,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(accepted.status().as_u16(), 202);
    assert_eq!(accepted.text().unwrap(), "");
    assert_eq!(rpc(&client, "ping", json!({}))["result"], json!({}));

    let listed = rpc(&client, "tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, TOOLS);
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool["description"]
            .as_str()
            .is_some_and(|text| !text.is_empty()));
    }
    let read_only: Vec<&str> = tools
        .iter()
        .filter(|tool| tool["annotations"]["readOnlyHint"] == true)
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(!read_only.contains(&"store_memory") && !read_only.contains(&"archive_stale"));
    assert_eq!(read_only.len(), 8);
    let archive = &tools[9];
    assert_eq!(archive["annotations"]["destructiveHint"], false);
    assert_eq!(
        archive["inputSchema"]["properties"]["dry_run"]["default"],
        true
    );
}

#[test]
fn every_tool_works_on_a_real_collection() {
    let client = new_tenant();
    let collection = unique("mcp-notes");
    let before = chrono::Utc::now() - chrono::Duration::seconds(5);
    let first = call_ok(
        &client,
        "store_memory",
        json!({"collection": collection, "text": "The quokkabay ferry leaves at nine.",
            "importance": 0.8, "category": "fact", "metadata": {"trip": "bay"}}),
    );
    assert_eq!(first["collection"], collection.as_str());
    assert_eq!(first["importance"], 0.8);
    assert_eq!(first["source"], "mcp");
    let owner_key_id = first["created_by"]["id"].as_str().expect("created_by");
    assert!(owner_key_id.starts_with("key_"), "{first}");
    let first_id = first["id"].as_str().unwrap().to_owned();
    let second = call_ok(
        &client,
        "store_memory",
        json!({"collection": collection, "text": "The quokkabay ferry leaves at nine."}),
    );
    let second_id = second["id"].as_str().unwrap().to_owned();
    // Stored through MCP, visible through REST.
    expect_status(
        client.get(&format!("{}/{first_id}", memories_path(&collection))),
        200,
    );

    let found = call_ok(
        &client,
        "search_memory",
        json!({"query": "quokkabay ferry", "collection": collection, "mode": "text"}),
    );
    let found_ids = ids(&found["results"]);
    assert!(found_ids.contains(&first_id), "{found}");
    assert!(found["results"][0]["score"].is_number());
    let everywhere = call_ok(
        &client,
        "search_memory",
        json!({"query": "quokkabay", "mode": "text", "limit": 1}),
    );
    assert_eq!(everywhere["results"].as_array().unwrap().len(), 1);
    assert_eq!(everywhere["results"][0]["collection"], collection.as_str());

    let got = call_ok(
        &client,
        "get_memory",
        json!({"collection": collection, "memory_id": first_id}),
    );
    assert_eq!(got["text"], "The quokkabay ferry leaves at nine.");
    assert_eq!(got["metadata"], json!({"trip": "bay"}));

    let listed = call_ok(&client, "list_collections", json!({}));
    assert_eq!(listed["collections"][0]["name"], collection.as_str());
    assert_eq!(listed["collections"][0]["memory_count"], 2);

    let related = call_ok(
        &client,
        "related_memory",
        json!({"collection": collection, "memory_id": first_id, "limit": 3}),
    );
    assert_eq!(ids(&related["results"]), vec![second_id.clone()]);

    let changed = call_ok(
        &client,
        "what_changed",
        json!({"collection": collection, "since": before.to_rfc3339()}),
    );
    let mut changed_ids = ids(&changed["changed"]);
    changed_ids.sort();
    let mut both = vec![first_id.clone(), second_id.clone()];
    both.sort();
    assert_eq!(changed_ids, both);
    assert_eq!(changed["supersessions"], json!([]));
    let later = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let nothing = call_ok(
        &client,
        "what_changed",
        json!({"collection": collection, "since": later}),
    );
    assert_eq!(nothing["changed"], json!([]));

    let health = call_ok(
        &client,
        "collection_health",
        json!({"collection": collection}),
    );
    assert_eq!(health["exists"], true);
    assert_eq!(health["total"], 2);
    assert_eq!(health["stale_days"], 90);

    let summary = call_ok(
        &client,
        "summarize_collection",
        json!({"collection": collection, "limit": 10}),
    );
    assert_eq!(summary["exists"], true);
    assert_eq!(summary["based_on"], 2);

    let duplicates = call_ok(
        &client,
        "find_duplicates",
        json!({"collection": collection, "threshold": 0.9}),
    );
    assert_eq!(duplicates["dry_run"], true);
    assert_eq!(
        duplicates["clusters"].as_array().unwrap().len(),
        1,
        "{duplicates}"
    );
    assert_eq!(
        duplicates["clusters"][0]["duplicates"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let dry = call_ok(
        &client,
        "archive_stale",
        json!({"collection": collection, "older_than_days": 0}),
    );
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["count"], dry["memory_ids"].as_array().unwrap().len());
    // Nothing was deleted or archived by the dry runs.
    let after = call_ok(
        &client,
        "collection_health",
        json!({"collection": collection}),
    );
    assert_eq!(
        (after["total"].clone(), after["archived"].clone()),
        (json!(2), json!(0))
    );
    let real = call_ok(
        &client,
        "archive_stale",
        json!({"collection": collection, "older_than_days": 0, "dry_run": false}),
    );
    assert_eq!(real["dry_run"], false);
    let archived = call_ok(
        &client,
        "collection_health",
        json!({"collection": collection}),
    );
    assert_eq!(archived["archived"], real["count"]);
}

#[test]
fn json_rpc_errors_have_their_codes_and_never_run_a_tool() {
    let client = new_tenant();
    let parse = client
        .request(Method::POST, "/v1/mcp")
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .expect("request");
    let body = expect_status(parse, 400);
    assert_eq!(body["error"]["code"], -32700);
    assert_eq!(body["id"], Value::Null);

    let batch = expect_status(
        post_mcp(
            &client,
            &json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
        ),
        400,
    );
    assert_eq!(batch["error"]["code"], -32600);
    let no_version = expect_status(post_mcp(&client, &json!({"id": 1, "method": "ping"})), 400);
    assert_eq!(no_version["error"]["code"], -32600);
    assert_eq!(no_version["id"], 1);

    let (code, message) = rpc_error(&client, "resources/list", json!({}));
    assert_eq!(code, -32601);
    assert!(message.contains("resources/list"), "{message}");

    let (code, message) = rpc_error(&client, "tools/call", json!({"name": "drop_tables"}));
    assert_eq!(code, -32602);
    assert!(message.contains("unknown tool 'drop_tables'"), "{message}");
    let collection = unique("errors");
    let cases = [
        (
            "get_memory",
            json!({"collection": collection}),
            "memory_id is required",
        ),
        (
            "search_memory",
            json!({"query": "x", "limit": 0}),
            "limit must be between 1 and 50",
        ),
        (
            "search_memory",
            json!({"query": "x", "limit": "5"}),
            "limit must be an integer",
        ),
        (
            "search_memory",
            json!({"query": "x", "mode": "fuzzy"}),
            "mode must be one of",
        ),
        (
            "search_memory",
            json!({"query": ""}),
            "query must be at least 1",
        ),
        (
            "store_memory",
            json!({"collection": collection, "text": "x", "colour": 1}),
            "colour is not a known",
        ),
        (
            "store_memory",
            json!({"collection": "bad name!", "text": "x"}),
            "arguments.collection",
        ),
        (
            "what_changed",
            json!({"collection": collection, "since": "yesterday"}),
            "RFC 3339",
        ),
        (
            "find_duplicates",
            json!({"collection": collection, "threshold": 1.5}),
            "threshold",
        ),
    ];
    for (tool, arguments, expected) in cases {
        let (code, message) = rpc_error(
            &client,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        );
        assert_eq!(code, -32602, "{tool} {arguments}: {message}");
        assert!(message.contains(expected), "{tool} {arguments}: {message}");
    }
    // None of the refused calls wrote anything.
    expect_error(client.get(&memories_path(&collection)), 404);

    let stream = client.get("/v1/mcp");
    assert_eq!(stream.status().as_u16(), 405);
    assert_eq!(stream.headers()["allow"], "POST");
}

#[test]
fn a_bad_or_missing_key_is_401_with_a_challenge_and_runs_nothing() {
    let owner = new_tenant();
    let collection = unique("unauth");
    let store = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "store_memory", "arguments": {"collection": collection, "text": "Sneaky."}}});
    for client in [
        Client::anonymous(),
        Client::new(&shared().base_url, Some("mv_not_a_real_key_at_all_000000")),
    ] {
        let response = post_mcp(&client, &store);
        assert_eq!(
            response.headers()["www-authenticate"],
            "Bearer realm=\"memvault\""
        );
        expect_error(response, 401);
    }
    expect_error(owner.get(&memories_path(&collection)), 404);
}

#[test]
fn a_read_only_key_reads_but_cannot_store_or_archive() {
    let owner = new_tenant();
    let (reader, _) = create_key(&owner, "mcp-reader", true);
    let collection = unique("ro");
    let memory = create_memory(
        &owner,
        &collection,
        json!({"text": "Read-only readers read."}),
    );
    let id = memory["id"].as_str().unwrap();
    let got = call_ok(
        &reader,
        "get_memory",
        json!({"collection": collection, "memory_id": id}),
    );
    assert_eq!(got["id"], id);

    let refused = call_refused(
        &reader,
        "store_memory",
        json!({"collection": collection, "text": "Written by a reader."}),
    );
    assert!(
        refused.contains("403") && refused.contains("read-only"),
        "{refused}"
    );
    let elsewhere = unique("ro-new");
    call_refused(
        &reader,
        "store_memory",
        json!({"collection": elsewhere, "text": "Written by a reader."}),
    );
    let listed = expect_status(owner.get(&memories_path(&collection)), 200);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    expect_error(owner.get(&memories_path(&elsewhere)), 404);

    let dry = call_ok(
        &reader,
        "archive_stale",
        json!({"collection": collection, "older_than_days": 0}),
    );
    assert_eq!(dry["dry_run"], true);
    let refused = call_refused(
        &reader,
        "archive_stale",
        json!({"collection": collection, "older_than_days": 0, "dry_run": false}),
    );
    assert!(refused.contains("403"), "{refused}");
    let health = call_ok(
        &owner,
        "collection_health",
        json!({"collection": collection}),
    );
    assert_eq!(health["archived"], 0);
}

#[test]
fn grants_hold_for_mcp_calls_and_tenant_wide_search_skips_restricted_collections() {
    let owner = new_tenant();
    let (granted, granted_id) = create_key(&owner, "mcp-granted", false);
    let (outsider, _) = create_key(&owner, "mcp-outsider", false);
    let vault = unique("mcp-vault");
    let open = unique("mcp-open");
    let secret = create_memory(
        &owner,
        &vault,
        json!({"text": "The glimmerfen vault code is 9921."}),
    );
    let visible = create_memory(
        &owner,
        &open,
        json!({"text": "The glimmerfen gate is blue."}),
    );
    let secret_id = secret["id"].as_str().unwrap();
    expect_status(
        owner.put(
            &format!("/v1/memory/collections/{vault}/grants"),
            &json!({"agent_key_id": granted_id, "can_read": true, "can_write": false}),
        ),
        200,
    );

    let got = call_ok(
        &granted,
        "get_memory",
        json!({"collection": vault, "memory_id": secret_id}),
    );
    assert_eq!(got["id"], secret_id);
    let refused = call_refused(
        &granted,
        "store_memory",
        json!({"collection": vault, "text": "Granted read, not write."}),
    );
    assert!(
        refused.contains("403") && refused.contains("can_write"),
        "{refused}"
    );

    for (tool, arguments) in [
        (
            "get_memory",
            json!({"collection": vault, "memory_id": secret_id}),
        ),
        (
            "search_memory",
            json!({"query": "glimmerfen", "collection": vault, "mode": "text"}),
        ),
        (
            "what_changed",
            json!({"collection": vault, "since": "2000-01-01T00:00:00Z"}),
        ),
        (
            "related_memory",
            json!({"collection": vault, "memory_id": secret_id}),
        ),
    ] {
        let refused = call_refused(&outsider, tool, arguments);
        assert!(
            refused.contains("403") && refused.contains("restricted"),
            "{tool}: {refused}"
        );
    }
    let everywhere = call_ok(
        &outsider,
        "search_memory",
        json!({"query": "glimmerfen", "mode": "text", "limit": 10}),
    );
    assert_eq!(
        ids(&everywhere["results"]),
        vec![visible["id"].as_str().unwrap().to_owned()]
    );
    let listed = call_ok(&outsider, "list_collections", json!({}));
    let names: Vec<&str> = listed["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|collection| collection["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec![open.as_str()]);
}

#[test]
fn another_tenants_collections_are_invisible() {
    let owner = new_tenant();
    let stranger = new_tenant();
    let collection = unique("mcp-private");
    let memory = create_memory(
        &owner,
        &collection,
        json!({"text": "The plumbrook key is mine."}),
    );
    let id = memory["id"].as_str().unwrap();
    let missing = call_refused(
        &stranger,
        "get_memory",
        json!({"collection": collection, "memory_id": id}),
    );
    assert!(missing.contains("404"), "{missing}");
    let everywhere = call_ok(
        &stranger,
        "search_memory",
        json!({"query": "plumbrook", "mode": "text"}),
    );
    assert_eq!(everywhere["results"], json!([]));
    assert_eq!(
        call_ok(&stranger, "list_collections", json!({}))["collections"],
        json!([])
    );
    let health = call_ok(
        &stranger,
        "collection_health",
        json!({"collection": collection}),
    );
    assert_eq!(health["exists"], false);
}

#[test]
fn writes_through_mcp_are_in_the_audit_log() {
    let admin = Client::admin();
    let label = unique("mcp-auditor");
    let (writer, _) = create_key(&admin, &label, false);
    let reader_label = unique("mcp-audit-reader");
    let (reader, _) = create_key(&admin, &reader_label, true);
    let collection = unique("mcp-audited");
    call_ok(
        &writer,
        "store_memory",
        json!({"collection": collection, "text": "Audited through MCP."}),
    );
    call_refused(
        &reader,
        "store_memory",
        json!({"collection": collection, "text": "Refused through MCP."}),
    );
    let wanted = [
        (label.as_str(), "success", 201),
        (reader_label.as_str(), "denied", 403),
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = expect_status(admin.get("/v1/memory/admin/audit?days=1&limit=1000"), 200);
        let entries = log["entries"].as_array().expect("entries").clone();
        let found = wanted.iter().all(|(agent, outcome, status)| {
            entries.iter().any(|entry| {
                entry["agent_label"] == *agent
                    && entry["action"] == "mcp.store_memory"
                    && entry["outcome"] == *outcome
                    && entry["status"] == *status
                    && entry["resource"] == "/v1/mcp"
            })
        });
        if found {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no mcp.store_memory entries: {log}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The same agent gets the same answer from REST and MCP: one access rule behind both.
/// Cases: a read-only key, an agent granted read only on a restricted collection, and an
/// agent with no grant there; for reads, dry runs (read access) and applied sweeps and
/// writes (write access).
#[test]
fn rest_and_mcp_answer_the_same_for_the_same_agent() {
    let owner = new_tenant();
    let (reader, _) = create_key(&owner, "parity-read-only", true);
    let (granted, granted_id) = create_key(&owner, "parity-granted", false);
    let (outsider, _) = create_key(&owner, "parity-outsider", false);
    let open = unique("parity-open");
    let restricted = unique("parity-restricted");
    let memory = create_memory(&owner, &open, json!({"text": "Parity holds."}));
    let restricted_memory = create_memory(&owner, &restricted, json!({"text": "Guarded."}));
    expect_status(
        owner.put(
            &format!("/v1/memory/collections/{restricted}/grants"),
            &json!({"agent_key_id": granted_id, "can_read": true, "can_write": false}),
        ),
        200,
    );

    // (agent, collection, memory id, REST may read, REST may write)
    let cases = [
        (&reader, &open, memory["id"].as_str().unwrap(), true, false),
        (
            &granted,
            &restricted,
            restricted_memory["id"].as_str().unwrap(),
            true,
            false,
        ),
        (
            &outsider,
            &restricted,
            restricted_memory["id"].as_str().unwrap(),
            false,
            false,
        ),
        (&granted, &open, memory["id"].as_str().unwrap(), true, true),
    ];
    for (agent, collection, id, may_read, may_write) in cases {
        let base = format!("/v1/memory/collections/{collection}");
        let rest_status = |response: Response| response.status().as_u16();
        let mcp_allowed = |tool: &str, arguments: Value| {
            let result = call(agent, tool, arguments);
            result["isError"] == json!(false)
        };
        let read_status = rest_status(agent.get(&format!("{base}/memories/{id}")));
        assert_eq!(
            read_status == 200,
            may_read,
            "{collection}: GET {read_status}"
        );
        assert_eq!(
            mcp_allowed(
                "get_memory",
                json!({"collection": collection, "memory_id": id})
            ),
            may_read,
            "{collection}: get_memory"
        );
        let dry = rest_status(agent.post_raw(
            &format!("{base}/archive-stale"),
            br#"{"dry_run": true}"#,
            "application/json",
        ));
        assert_eq!(
            dry == 200,
            may_read,
            "{collection}: archive-stale dry run {dry}"
        );
        assert_eq!(
            mcp_allowed(
                "archive_stale",
                json!({"collection": collection, "dry_run": true})
            ),
            may_read,
            "{collection}: archive_stale dry run"
        );
        let dedup = rest_status(agent.post_raw(
            &format!("{base}/dedup"),
            br#"{"dry_run": true}"#,
            "application/json",
        ));
        assert_eq!(
            dedup == 200,
            may_read,
            "{collection}: dedup dry run {dedup}"
        );
        assert_eq!(
            mcp_allowed("find_duplicates", json!({"collection": collection})),
            may_read,
            "{collection}: find_duplicates"
        );
        // Applying a sweep with a window that matches nothing: allowed means 200.
        let applied = rest_status(agent.post_raw(
            &format!("{base}/archive-stale"),
            br#"{"dry_run": false, "older_than_days": 36500}"#,
            "application/json",
        ));
        assert_eq!(
            applied == 200,
            may_write,
            "{collection}: archive-stale apply {applied}"
        );
        assert_eq!(
            mcp_allowed(
                "archive_stale",
                json!({"collection": collection, "dry_run": false, "older_than_days": 36500})
            ),
            may_write,
            "{collection}: archive_stale apply"
        );
        if !may_write {
            assert!([403, 404].contains(&applied), "{collection}: {applied}");
        }
    }
}

/// The `tools/list` entry of one tool.
fn tool_definition(client: &Client, tool: &str) -> Value {
    let listed = rpc(client, "tools/list", json!({}));
    listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|definition| definition["name"] == tool)
        .cloned()
        .unwrap_or_else(|| panic!("{tool} is not listed"))
}

#[test]
fn tool_schemas_are_derived_from_the_rest_limits_and_stand_alone() {
    let client = new_tenant();
    let document = expect_status(client.get("/openapi.json"), 200);
    let rest = |schema: &str, field: &str| {
        document["components"]["schemas"][schema]["properties"][field].clone()
    };
    let search = tool_definition(&client, "search_memory");
    let store = tool_definition(&client, "store_memory");
    let arguments = |tool: &Value, field: &str| tool["inputSchema"]["properties"][field].clone();
    assert_eq!(
        arguments(&search, "limit")["maximum"],
        rest("SearchRequest", "limit")["maximum"]
    );
    assert_eq!(
        arguments(&store, "text")["maxLength"],
        rest("CreateMemoryRequest", "text")["maxLength"]
    );
    assert_eq!(
        arguments(&store, "importance")["maximum"],
        rest("CreateMemoryRequest", "importance")["maximum"]
    );
    let listed = rpc(&client, "tools/list", json!({}));
    for tool in listed["result"]["tools"].as_array().expect("tools") {
        let text = tool.to_string();
        assert!(!text.contains("$ref") && !text.contains("allOf"), "{text}");
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{text}");
    }
    // A result carries every key its derived outputSchema requires.
    let collection = unique("mcp-derived");
    let stored = call_ok(
        &client,
        "store_memory",
        json!({"collection": collection, "text": "Derived schemas hold."}),
    );
    for key in store["outputSchema"]["required"]
        .as_array()
        .expect("required")
    {
        let key = key.as_str().expect("key");
        assert!(
            stored.get(key).is_some(),
            "store_memory result lacks {key}: {stored}"
        );
    }
}

#[test]
fn mcp_refuses_what_rest_refuses() {
    let client = new_tenant();
    let collection = unique("mcp-same-rules");
    let path = memories_path(&collection);
    let oversized = json!({"blob": "x".repeat(17 * 1024)});
    let bodies = [
        json!({"text": "   "}),
        json!({"text": "Fine.", "importance": 1.5}),
        json!({"text": "Fine.", "category": "c".repeat(201)}),
        json!({"text": "Fine.", "metadata": oversized}),
        json!({"text": "Fine.", "container_tag": ""}),
    ];
    for body in bodies {
        expect_error(client.post(&path, &body), 422);
        let mut arguments = body.clone();
        arguments["collection"] = json!(collection);
        let (code, message) = rpc_error(
            &client,
            "tools/call",
            json!({"name": "store_memory", "arguments": arguments}),
        );
        assert_eq!(code, -32602, "{body}: {message}");
    }
    expect_status(
        client.post(&path, &json!({"text": "Nothing refused was stored."})),
        201,
    );
    let listed = expect_status(client.get(&path), 200);
    assert_eq!(listed.as_array().expect("a list").len(), 1);
    let search = format!("/v1/memory/collections/{collection}/search");
    expect_error(client.post(&search, &json!({"query": "  "})), 422);
    let (code, _) = rpc_error(
        &client,
        "tools/call",
        json!({"name": "search_memory", "arguments": {"query": "  ", "collection": collection}}),
    );
    assert_eq!(code, -32602);
}

#[test]
fn health_and_summary_are_the_rest_answers() {
    let client = new_tenant();
    let collection = unique("mcp-same-shapes");
    for text in [
        "Otters hold hands while sleeping.",
        "Sea otters use rocks as tools.",
    ] {
        create_memory(&client, &collection, json!({"text": text}));
    }
    let base = format!("/v1/memory/collections/{collection}");
    let rest_health = expect_status(client.get(&format!("{base}/health?stale_days=30")), 200);
    let mcp_health = call_ok(
        &client,
        "collection_health",
        json!({"collection": collection, "stale_days": 30}),
    );
    assert_eq!(mcp_health, rest_health);
    let rest_summary = expect_status(client.get(&format!("{base}/summary?limit=10")), 200);
    let mcp_summary = call_ok(
        &client,
        "summarize_collection",
        json!({"collection": collection, "limit": 10}),
    );
    assert_eq!(mcp_summary, rest_summary, "the cached summary, both ways");
}
