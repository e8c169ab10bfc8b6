//! Operator endpoints (admin-flagged tenants only): metrics, usage, connectors and
//! analytics; who may read them, their query validation, and what they count.

use memvault_fake_llm::{FakeLlmServer, FakeReply};
use serde_json::{json, Value};

use crate::support::{
    create_memory, expect_error, expect_status, new_tenant, start_in_process, tenant_on, unique,
    Client,
};

const OPERATOR_PATHS: [&str; 5] = [
    "/v1/memory/admin/metrics",
    "/v1/memory/admin/usage",
    "/v1/memory/admin/connectors",
    "/v1/memory/admin/connectors/status",
    "/v1/memory/admin/analytics",
];

fn metrics(admin: &Client) -> Value {
    expect_status(admin.get("/v1/memory/admin/metrics"), 200)
}

fn counter(metrics: &Value, name: &str) -> u64 {
    metrics["counters"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("counter {name} missing: {metrics}"))
}

fn route<'a>(metrics: &'a Value, name: &str) -> Option<&'a Value> {
    metrics["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|route| route["route"] == json!(name))
}

fn search(client: &Client, collection: &str, query: &str) -> Value {
    expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &json!({ "query": query }),
        ),
        200,
    )
}

#[test]
fn only_an_admin_flagged_tenant_reads_operator_endpoints() {
    let admin = Client::admin();
    let ordinary = new_tenant();
    let anonymous = Client::anonymous();
    for path in OPERATOR_PATHS {
        expect_status(admin.get(path), 200);
        let detail = expect_error(ordinary.get(path), 403);
        assert!(detail.contains("admin"), "{path}: {detail}");
        expect_error(anonymous.get(path), 401);
    }
}

#[test]
fn operator_queries_are_validated() {
    let admin = Client::admin();
    for path in [
        "/v1/memory/admin/metrics?reset=maybe",
        "/v1/memory/admin/usage?days=0",
        "/v1/memory/admin/usage?days=3651",
        "/v1/memory/admin/usage?days=many",
        "/v1/memory/admin/connectors?hours=0",
        "/v1/memory/admin/connectors?hours=8761",
        "/v1/memory/admin/analytics?days=0",
        "/v1/memory/admin/analytics?days=366",
        "/v1/memory/admin/analytics?days=-1",
    ] {
        expect_error(admin.get(path), 422);
    }
    for (path, field, value) in [
        ("/v1/memory/admin/usage?days=3650", "days", 3650),
        ("/v1/memory/admin/connectors?hours=8760", "hours", 8760),
        ("/v1/memory/admin/analytics?days=365", "days", 365),
        ("/v1/memory/admin/usage", "days", 30),
        ("/v1/memory/admin/connectors", "hours", 24),
        ("/v1/memory/admin/analytics", "days", 7),
    ] {
        assert_eq!(expect_status(admin.get(path), 200)[field], json!(value));
    }
    // Validation comes after authorization: an ordinary tenant learns nothing more.
    expect_error(new_tenant().get("/v1/memory/admin/usage?days=0"), 403);
}

#[test]
fn metrics_count_routes_stages_and_the_search_cache() {
    let admin = Client::admin();
    let client = new_tenant();
    let collection = unique("metrics");
    create_memory(
        &client,
        &collection,
        json!({"text": "Metrics probe about the northern lights."}),
    );
    let before = metrics(&admin);
    assert_eq!(before["scope"], json!("process"));
    assert!(before["since"].is_string());
    let first = search(&client, &collection, "northern lights");
    let second = search(&client, &collection, "northern lights");
    assert_eq!(
        (first["cached"].clone(), second["cached"].clone()),
        (json!(false), json!(true))
    );
    expect_error(
        client.get("/v1/memory/collections/no-such-collection-here"),
        404,
    );
    expect_status(
        client.get(&format!("/v1/memory/no/such/route/{collection}")),
        404,
    );
    let after = metrics(&admin);

    assert!(counter(&after, "search_cache_miss") > counter(&before, "search_cache_miss"));
    assert!(counter(&after, "search_cache_hit") > counter(&before, "search_cache_hit"));
    assert!(counter(&after, "embed_texts") > counter(&before, "embed_texts"));

    let search_route = "POST /v1/memory/collections/{collection}/search";
    let count = |metrics: &Value, name: &str, field: &str| {
        route(metrics, name).map_or(0, |route| route[field].as_u64().unwrap())
    };
    assert!(count(&after, search_route, "count") >= count(&before, search_route, "count") + 2);
    let searches = route(&after, search_route).unwrap();
    for field in ["avg_ms", "p50_ms", "p95_ms"] {
        assert!(searches[field].as_f64().unwrap() >= 0.0, "{searches}");
    }
    assert!(
        searches["p95_ms"].as_f64().unwrap() >= searches["p50_ms"].as_f64().unwrap(),
        "{searches}"
    );
    let get_collection = "GET /v1/memory/collections/{collection}";
    assert!(
        count(&after, get_collection, "errors_4xx") > count(&before, get_collection, "errors_4xx")
    );
    assert!(count(&after, "unmatched", "count") > count(&before, "unmatched", "count"));
    let routes = after["routes"].as_array().unwrap();
    assert!(
        routes
            .iter()
            .all(|route| !route["route"].as_str().unwrap().contains(&collection)),
        "raw paths are never keys: {routes:?}"
    );
    for stage in ["embed", "cache_get", "search", "llm_extract"] {
        let figures = &after["stages"][stage];
        for field in ["count", "avg_ms", "p50_ms", "p95_ms"] {
            assert!(figures[field].is_number(), "{stage}.{field}: {after}");
        }
    }
    for stage in ["embed", "cache_get", "search"] {
        assert!(
            after["stages"][stage]["count"].as_u64() > before["stages"][stage]["count"].as_u64(),
            "{stage}: {after}"
        );
    }
}

#[test]
fn connector_views_list_every_status_and_validate_hours() {
    // The figures themselves are checked in connectors.rs, against real runs.
    let admin = Client::admin();
    let body = expect_status(admin.get("/v1/memory/admin/connectors?hours=48"), 200);
    assert_eq!(body["hours"], 48);
    assert!(body["providers"].is_array(), "{body}");
    expect_error(admin.get("/v1/memory/admin/connectors?hours=0"), 422);
    let status = expect_status(admin.get("/v1/memory/admin/connectors/status"), 200);
    let names: Vec<&str> = status
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["status"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["active", "error", "paused"]);
}

/// `days` consecutive days, oldest first, whose counts add up to `total`.
#[track_caller]
fn assert_days(by_day: &Value, days: usize, total: &Value) {
    let by_day = by_day.as_array().unwrap();
    assert_eq!(by_day.len(), days, "{by_day:?}");
    let dates: Vec<&str> = by_day
        .iter()
        .map(|day| day["day"].as_str().unwrap())
        .collect();
    assert!(dates.windows(2).all(|pair| pair[0] < pair[1]), "{dates:?}");
    let sum: u64 = by_day.iter().map(|day| day["n"].as_u64().unwrap()).sum();
    assert_eq!(Some(sum), total.as_u64(), "{by_day:?}");
}

#[test]
fn analytics_count_pageviews_and_signups() {
    let admin = Client::admin();
    let path = format!("/{}", unique("landing"));
    let referrer_host = format!("{}.example", unique("ref"));
    let beacon = json!({"path": format!("{path}?utm=x"), "referrer": format!("https://{referrer_host}/post")});
    assert_eq!(
        Client::anonymous()
            .post("/v1/pulse", &beacon)
            .status()
            .as_u16(),
        204
    );
    new_tenant();
    let body = expect_status(admin.get("/v1/memory/admin/analytics?days=3"), 200);
    assert_eq!(body["days"], json!(3));

    let pageviews = &body["pageviews"];
    let by_path = pageviews["by_path"].as_array().unwrap();
    assert!(
        by_path.contains(&json!({"path": path, "n": 1})),
        "{pageviews}"
    );
    let by_referrer = pageviews["by_referrer"].as_array().unwrap();
    assert!(
        by_referrer.contains(&json!({"referrer": referrer_host, "n": 1})),
        "{pageviews}"
    );
    assert_days(&pageviews["by_day"], 3, &pageviews["total"]);
    assert!(pageviews["total"].as_u64().unwrap() >= 1);

    let signups = &body["signups"];
    assert!(signups["total"].as_u64().unwrap() >= 1);
    assert_days(&signups["by_day"], 3, &signups["total"]);
    assert_eq!(body["funnel"]["pageviews"], pageviews["total"]);
    assert_eq!(body["funnel"]["signups"], signups["total"]);
}

#[test]
fn usage_lists_llm_purposes_and_storage_and_metrics_reset_empties_the_window() {
    let llm = FakeLlmServer::start();
    let base_url = llm.base_url();
    let server = start_in_process(move |config| {
        config.llm.base_url = Some(base_url);
        config.llm.model = "gpt-4o-mini".to_owned();
    });
    let admin = Client::new(&server.base_url, Some(&server.admin_key));
    let client = tenant_on(&server);
    let collection = unique("usage");

    let empty = expect_status(admin.get("/v1/memory/admin/usage"), 200);
    assert_eq!(empty["llm"]["by_purpose"], json!([]), "{empty}");
    assert_eq!(empty["storage"]["files_bytes"], json!(0));

    llm.push(FakeReply::chat_with_usage(
        json!({"facts": [{"type": "preference", "text": "My favorite color is blue.",
            "subject": "user", "attribute": "favorite color", "value": "blue", "valid_until": null}]})
        .to_string(),
        1_000,
        100,
    ));
    expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/remember?sync=true"),
            &json!({"content": "I really love blue"}),
        ),
        200,
    );

    let usage = expect_status(admin.get("/v1/memory/admin/usage?days=1"), 200);
    assert_eq!(usage["days"], json!(1));
    assert_eq!(usage["tenants"], json!(2), "{usage}");
    assert!(usage["storage"]["db_bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        usage["llm"]["by_purpose"],
        json!([{"purpose": "extract", "calls": 1, "prompt_tokens": 1_000,
            "completion_tokens": 100, "cost_usd": usage["llm"]["total_cost_usd"]}]),
        "{usage}"
    );
    let expected_cost = (1_000.0 * 0.15 + 100.0 * 0.60) / 1_000_000.0;
    assert!((usage["llm"]["total_cost_usd"].as_f64().unwrap() - expected_cost).abs() < 1e-12);
    assert!(!usage["llm"]["months"].as_array().unwrap().is_empty());

    let window = expect_status(admin.get("/v1/memory/admin/metrics?reset=true"), 200);
    assert_eq!(
        window["stages"]["llm_extract"]["count"],
        json!(1),
        "{window}"
    );
    assert!(window["stages"]["embed"]["count"].as_u64().unwrap() >= 1);
    assert!(route(&window, "POST /v1/memory/collections/{collection}/remember").is_some());

    // Only the reset request itself has been recorded since.
    let fresh = metrics(&admin);
    let since = |metrics: &Value| {
        chrono::DateTime::parse_from_rfc3339(metrics["since"].as_str().unwrap()).unwrap()
    };
    assert!(since(&fresh) >= since(&window));
    let routes = fresh["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 1, "{fresh}");
    assert_eq!(routes[0]["route"], json!("GET /v1/memory/admin/metrics"));
    assert_eq!(routes[0]["count"], json!(1));
    for stage in ["embed", "cache_get", "search", "llm_extract"] {
        assert_eq!(
            fresh["stages"][stage]["count"],
            json!(0),
            "{stage}: {fresh}"
        );
    }
    let counters = fresh["counters"].as_object().unwrap();
    assert!(counters.values().all(|value| value == &json!(0)), "{fresh}");
}

#[test]
fn metrics_show_the_job_kinds_recurring_tasks_and_actor_restarts() {
    let admin = Client::admin();
    let client = new_tenant();
    let collection = unique("jobs");
    let accepted = expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/remember"),
            &json!({"content": "I work at Acme."}),
        ),
        202,
    );
    let job_id = accepted["job_id"].as_str().expect("job_id").to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while expect_status(client.get(&format!("/v1/memory/extract/job/{job_id}")), 200)["complete"]
        != json!(true)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "job {job_id} did not finish"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let metrics = metrics(&admin);
    let extraction = &metrics["jobs"]["extraction"];
    assert!(extraction["done"].as_u64().unwrap() >= 1, "{metrics}");
    for field in [
        "queued",
        "running",
        "paused_groups",
        "retried",
        "failed",
        "restarts",
        "pauses",
    ] {
        assert!(extraction[field].is_u64(), "{field}: {metrics}");
        assert!(
            metrics["jobs"]["webhook_delivery"][field].is_u64(),
            "{field}: {metrics}"
        );
    }
    let recurring = metrics["recurring"].as_array().unwrap();
    for name in ["extract_job_pruning", "audit_pruning"] {
        let task = recurring
            .iter()
            .find(|task| task["name"] == json!(name))
            .unwrap_or_else(|| panic!("{name}: {metrics}"));
        assert!(task["runs"].as_u64().unwrap() >= 1, "{metrics}");
    }
    assert!(metrics["actor_restarts"]["tenants"].is_u64(), "{metrics}");
    assert!(
        metrics["actor_restarts"]["collections"].is_u64(),
        "{metrics}"
    );
}

/// Pageview counts and the status page's check history are in the data dir: a restart
/// (graceful, as an upgrade) loses neither.
#[test]
fn pageviews_and_status_checks_survive_a_restart() {
    use crate::support::{temp_data_dir, ServerProcess};
    const KEY: &str = "mv_restart_admin_key_0123456789abcd";
    let (_guard, data_dir) = temp_data_dir();
    let environment = [
        ("MEMVAULT_BOOTSTRAP_KEY", KEY),
        ("MEMVAULT__STATUS__CHECK_INTERVAL_SECS", "1"),
    ];
    let mut server = ServerProcess::start(&data_dir, &environment).expect("server starts");
    let anonymous = Client::new(&server.base_url, None);
    for path in ["/pricing", "/pricing", "/docs"] {
        let response = anonymous
            .request(reqwest::Method::POST, "/v1/pulse")
            .json(&json!({"path": path, "referrer": "https://news.example.org/item"}))
            .send()
            .unwrap();
        assert_eq!(response.status(), 204);
    }
    let admin = server.client(KEY);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let before = loop {
        let status = expect_status(admin.get("/v1/status"), 200);
        if status["checks_24h"].as_u64().unwrap_or(0) >= 2 || std::time::Instant::now() > deadline {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let checks_before = before["checks_24h"].as_u64().unwrap();
    assert!(checks_before >= 2, "{before}");
    server.stop_gracefully();

    let server = ServerProcess::start(&data_dir, &environment).expect("server restarts");
    let admin = server.client(KEY);
    let analytics = expect_status(admin.get("/v1/memory/admin/analytics?days=1"), 200);
    assert_eq!(analytics["pageviews"]["total"], 3, "{analytics}");
    let paths = &analytics["pageviews"]["by_path"];
    assert!(paths.to_string().contains("/pricing"), "{paths}");
    let status = expect_status(admin.get("/v1/status"), 200);
    assert!(
        status["checks_24h"].as_u64().unwrap() >= checks_before,
        "the checks before the restart are still counted: {status}"
    );
}
