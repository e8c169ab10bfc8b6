//! The dashboard without a browser: sign-in and sessions, cookie flags, the CSRF and
//! same-origin checks, escaping, agent, read-only and operator limits, and every page
//! rendering for the owner. (The browser tests are `tests/e2e/`.)

use reqwest::blocking::{Client as HttpClient, Response};
use reqwest::redirect::Policy;
use serde_json::{json, Value};

use crate::support::{
    create_memory, expect_status, shared, start_in_process, tenant_on, unique, Client, TestServer,
};

/// A browser stand-in: no redirects followed, the session cookie kept by hand.
pub(crate) struct Browser {
    http: HttpClient,
    base_url: String,
    cookie: Option<String>,
    csrf: Option<String>,
}

impl Browser {
    pub(crate) fn new(base_url: &str) -> Self {
        Self {
            http: HttpClient::builder()
                .redirect(Policy::none())
                .build()
                .expect("client"),
            base_url: base_url.to_owned(),
            cookie: None,
            csrf: None,
        }
    }

    /// Signs in with `key`; panics unless a session opens.
    pub(crate) fn signed_in(base_url: &str, key: &str) -> Self {
        let mut browser = Self::new(base_url);
        let response = browser.sign_in(key);
        assert_eq!(
            response.status(),
            303,
            "{}",
            response.text().unwrap_or_default()
        );
        browser
    }

    /// The same browser (its session cookie and token) talking to another address.
    pub(crate) fn at(&self, base_url: &str) -> Self {
        Self {
            base_url: base_url.to_owned(),
            cookie: self.cookie.clone(),
            csrf: self.csrf.clone(),
            ..Self::new(base_url)
        }
    }

    pub(crate) fn sign_in(&mut self, key: &str) -> Response {
        let response = self
            .http
            .post(format!("{}/dashboard/login", self.base_url))
            .header("origin", &self.base_url)
            .form(&[("key", key)])
            .send()
            .expect("sign in");
        if let Some(cookie) = response.headers().get("set-cookie") {
            let cookie = cookie.to_str().unwrap().to_owned();
            let value = cookie
                .split(';')
                .next()
                .unwrap()
                .trim_start_matches("mv_session=")
                .to_owned();
            if !value.is_empty() {
                self.cookie = Some(value);
            }
        }
        response
    }

    pub(crate) fn get(&mut self, path: &str) -> Response {
        let mut request = self.http.get(format!("{}{path}", self.base_url));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", format!("mv_session={cookie}"));
        }
        request.send().expect("get")
    }

    /// The page's HTML after asserting 200; keeps its CSRF token.
    #[track_caller]
    pub(crate) fn page(&mut self, path: &str) -> String {
        let response = self.get(path);
        let status = response.status().as_u16();
        let html = response.text().unwrap_or_default();
        assert_eq!(status, 200, "GET {path}: {html}");
        if let Some(token) = csrf_of(&html) {
            self.csrf = Some(token);
        }
        html
    }

    /// A form post with the session's token and this origin.
    pub(crate) fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Response {
        if self.csrf.is_none() {
            self.page("/dashboard/");
        }
        let mut form: Vec<(&str, &str)> = fields.to_vec();
        let token = self.csrf.clone().unwrap_or_default();
        form.push(("csrf", &token));
        self.post_raw(path, &form, Some(&self.base_url.clone()))
    }

    fn post_raw(&self, path: &str, form: &[(&str, &str)], origin: Option<&str>) -> Response {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base_url))
            .form(form);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", format!("mv_session={cookie}"));
        }
        request.send().expect("post")
    }
}

fn csrf_of(html: &str) -> Option<String> {
    let at = html.find("name=\"csrf\" value=\"")? + "name=\"csrf\" value=\"".len();
    Some(html[at..at + 64].to_owned())
}

fn location(response: &Response) -> String {
    response
        .headers()
        .get("location")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

fn own_server() -> TestServer {
    start_in_process(|_| {})
}

#[test]
fn without_a_session_every_page_leads_to_sign_in() {
    let server = shared();
    let mut browser = Browser::new(&server.base_url);
    for (path, way_back) in [
        ("/dashboard/", "./login"),
        ("/dashboard/collections", "./login"),
        ("/dashboard/collections/notes", "../login"),
        ("/dashboard/collections/notes/memories", "../../login"),
        ("/dashboard/collections/notes/memories/x", "../../../login"),
        ("/dashboard/keys", "./login"),
        ("/dashboard/audit", "./login"),
        ("/dashboard/operator/metrics", "../login"),
    ] {
        let response = browser.get(path);
        assert_eq!(response.status(), 303, "{path}");
        assert_eq!(location(&response), way_back, "{path}");
    }
    // An htmx request is told to load the sign-in page whole.
    let response = browser
        .http
        .get(format!("{}/dashboard/files", server.base_url))
        .header("hx-request", "true")
        .send()
        .unwrap();
    assert_eq!(response.headers()["hx-redirect"], "./login");
    // A forged or unknown cookie is no session.
    browser.cookie = Some("0".repeat(64));
    assert_eq!(browser.get("/dashboard/").status(), 303);
    browser.cookie = Some("<script>".to_owned());
    assert_eq!(browser.get("/dashboard/").status(), 303);
    // The root leads to the dashboard, and the sign-in page needs no session.
    assert_eq!(location(&browser.get("/")), "dashboard/");
    assert_eq!(location(&browser.get("/dashboard")), "dashboard/");
    let html = browser.page("/dashboard/login");
    assert!(html.contains("name=\"key\""), "{html}");
}

#[test]
fn signing_in_opens_a_strict_http_only_session_and_signing_out_ends_it() {
    let server = shared();
    let mut browser = Browser::new(&server.base_url);
    // A wrong key is refused with the API's own words.
    let refused = browser.sign_in("mv_not_a_key_at_all");
    assert_eq!(refused.status(), 401);
    assert!(refused.headers().get("set-cookie").is_none());
    let html = refused.text().unwrap();
    assert!(html.contains("invalid or revoked API key"), "{html}");
    let refused = browser.sign_in("sk-something-else");
    assert_eq!(refused.status(), 401);
    assert!(refused.text().unwrap().contains("start with"));

    let response = browser.sign_in(&server.admin_key);
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "./");
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(cookie.starts_with("mv_session="), "{cookie}");
    for flag in ["HttpOnly", "SameSite=Strict", "Max-Age="] {
        assert!(cookie.contains(flag), "{cookie} lacks {flag}");
    }
    assert!(!cookie.contains("Secure"), "plain http: {cookie}");
    assert!(
        !cookie.contains(&server.admin_key),
        "the key never reaches the browser"
    );
    let html = browser.page("/dashboard/");
    assert!(html.contains("<h1>Overview</h1>"), "{html}");
    assert!(!html.contains(&server.admin_key), "no page shows the key");

    let response = browser.post("/dashboard/logout", &[]);
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "./login");
    assert!(response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
    // The old cookie opens nothing any more.
    assert_eq!(browser.get("/dashboard/").status(), 303);
}

#[test]
fn the_session_cookie_is_secure_when_the_public_address_is_https() {
    let server = start_in_process(|config| {
        config.server.public_url = Some("https://memory.example.com".to_owned());
    });
    let mut browser = Browser::new(&server.base_url);
    let response = browser.sign_in(&server.admin_key);
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(cookie.contains("; Secure"), "{cookie}");
    // The sign-in form's origin must be the public one or the Host's: a foreign one is not.
    let response = browser
        .http
        .post(format!("{}/dashboard/login", server.base_url))
        .header("origin", "https://evil.example.net")
        .form(&[("key", server.admin_key.as_str())])
        .send()
        .unwrap();
    assert_eq!(response.status(), 403);
    assert!(response.headers().get("set-cookie").is_none());
}

#[test]
fn a_change_needs_the_session_token_and_a_same_origin_request() {
    let server = shared();
    let owner = crate::support::new_tenant();
    let mut browser = Browser::signed_in(&server.base_url, owner.key());
    let name = unique("dash");
    let token = {
        browser.page("/dashboard/collections");
        browser.csrf.clone().unwrap()
    };
    // No token, a wrong token, a foreign origin, no origin at all: 403, nothing made.
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, &'a str);
    let cases: [Case; 4] = [
        (
            &[("name", &name)],
            Some(&server.base_url),
            "csrf_token_invalid",
        ),
        (
            &[("name", &name), ("csrf", &"0".repeat(64))],
            Some(&server.base_url),
            "csrf_token_invalid",
        ),
        (
            &[("name", &name), ("csrf", &token)],
            Some("http://evil.example.net"),
            "cross_origin_refused",
        ),
        (
            &[("name", &name), ("csrf", &token)],
            None,
            "cross_origin_refused",
        ),
    ];
    for (form, origin, code) in cases {
        let response = browser.post_raw("/dashboard/collections", form, origin);
        assert_eq!(response.status(), 403, "{origin:?}");
        assert!(response.text().unwrap().contains(code), "{code}");
    }
    expect_status(owner.get(&format!("/v1/memory/collections/{name}")), 404);
    // Sec-Fetch-Site: same-origin stands for a missing Origin; then the change is made.
    let response = browser
        .http
        .post(format!("{}/dashboard/collections", server.base_url))
        .header("sec-fetch-site", "same-origin")
        .header(
            "cookie",
            format!("mv_session={}", browser.cookie.as_deref().unwrap()),
        )
        .form(&[("name", name.as_str()), ("csrf", token.as_str())])
        .send()
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(
        location(&response),
        format!("./collections/{name}?done=created")
    );
    expect_status(owner.get(&format!("/v1/memory/collections/{name}")), 200);
    // Another session's token is not this one's.
    let mut other = Browser::signed_in(&server.base_url, owner.key());
    other.page("/dashboard/");
    assert_ne!(other.csrf, browser.csrf);
    let response = other.post_raw(
        "/dashboard/collections",
        &[("name", &unique("dash")), ("csrf", &token)],
        Some(&server.base_url),
    );
    assert_eq!(response.status(), 403);
}

#[test]
fn memory_text_and_metadata_are_rendered_inert() {
    let server = shared();
    let owner = crate::support::new_tenant();
    let hostile = "<script>window.x=1</script><img src=x onerror=\"alert(1)\"> & \"quotes\"";
    let memory = create_memory(
        &owner,
        "xss",
        json!({"text": hostile, "metadata": {"<b>key</b>": "<iframe src=javascript:alert(1)>"},
               "container_tag": "<svg onload=alert(1)>"}),
    );
    let id = memory["id"].as_str().unwrap();
    let mut browser = Browser::signed_in(&server.base_url, owner.key());
    for path in [
        "/dashboard/collections/xss/memories?status=all".to_owned(),
        format!("/dashboard/collections/xss/memories/{id}"),
        "/dashboard/collections/xss/memories?q=script&status=superseded".to_owned(),
    ] {
        let html = browser.page(&path);
        for raw in [
            "<script>window",
            "<img src=x",
            "<iframe",
            "<svg onload",
            "<b>key",
        ] {
            assert!(!html.contains(raw), "{path} renders {raw} raw: {html}");
        }
        if !path.contains("superseded") {
            assert!(html.contains("&lt;script&gt;"), "{path}: {html}");
        }
    }
    // Every page is served with a policy that forbids inline script and framing.
    let response = browser.get(&format!("/dashboard/collections/xss/memories/{id}"));
    let policy = response.headers()["content-security-policy"]
        .to_str()
        .unwrap();
    assert!(
        policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"),
        "{policy}"
    );
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert_eq!(response.headers()["x-frame-options"], "DENY");
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    assert_eq!(response.headers()["cache-control"], "no-store");
    let html = response.text().unwrap();
    assert!(!html.contains("<script>"), "no inline script at all");
    assert!(
        !html.contains("style=\""),
        "no inline style (the policy forbids it)"
    );
}

#[test]
fn every_page_renders_for_the_owner_with_relative_links_only() {
    let server = own_server();
    let owner = tenant_on(&server);
    let memory = create_memory(
        &owner,
        "notes",
        json!({"text": "The team meets on Tuesdays."}),
    );
    let id = memory["id"].as_str().unwrap().to_owned();
    let mut browser = Browser::signed_in(&server.base_url, owner.key());
    for (path, title) in [
        ("/dashboard/".to_owned(), "Overview"),
        ("/dashboard/collections".to_owned(), "Collections"),
        (
            "/dashboard/collections/notes".to_owned(),
            "Collection notes",
        ),
        (
            "/dashboard/collections/notes/memories".to_owned(),
            "Memories of notes",
        ),
        (
            "/dashboard/collections/notes/memories?q=meeting+day".to_owned(),
            "Memories of notes",
        ),
        (
            format!("/dashboard/collections/notes/memories/{id}"),
            "Memory",
        ),
        (
            "/dashboard/collections/notes/contradictions".to_owned(),
            "Contradictions in notes",
        ),
        ("/dashboard/files".to_owned(), "Files &amp; ingest"),
        ("/dashboard/connectors".to_owned(), "Connectors &amp; mail"),
        ("/dashboard/keys".to_owned(), "Keys &amp; agents"),
        ("/dashboard/webhook".to_owned(), "Webhook"),
        ("/dashboard/audit".to_owned(), "Audit log"),
        ("/dashboard/usage".to_owned(), "Usage &amp; spend"),
        ("/dashboard/account".to_owned(), "Account"),
    ] {
        let html = browser.page(&path);
        assert!(
            html.contains(&format!("<h1>{title}</h1>")),
            "{path}: {html}"
        );
        // Relative URLs only, so the dashboard works under any path prefix.
        for absolute in ["href=\"/", "action=\"/", "src=\"/", "hx-get=\"/"] {
            assert!(
                !html.contains(absolute),
                "{path} has an absolute URL ({absolute})"
            );
        }
    }
    let html = browser.page("/dashboard/collections/notes/memories?q=meeting+day");
    assert!(html.contains("Tuesdays"), "hybrid search finds it: {html}");
    // The assets: the pinned htmx and the stylesheet, cacheable; nothing else.
    let response = browser.get("/dashboard/assets/htmx-2.0.11.min.js");
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));
    assert_eq!(browser.get("/dashboard/assets/style.css").status(), 200);
    assert_eq!(browser.get("/dashboard/assets/../Cargo.toml").status(), 404);
    assert_eq!(browser.get("/dashboard/assets/other.js").status(), 404);
    // The public status page needs no session.
    let html = Browser::new(&server.base_url).page("/status");
    assert!(html.contains("memvault status"), "{html}");
}

#[test]
fn changes_from_the_dashboard_go_through_the_api_with_its_audit_and_errors() {
    let server = own_server();
    let admin = Client::new(&server.base_url, Some(&server.admin_key));
    let mut browser = Browser::signed_in(&server.base_url, &server.admin_key);
    let memory = create_memory(&admin, "ops", json!({"text": "The backup runs at 02:00."}));
    let id = memory["id"].as_str().unwrap().to_owned();
    let page = format!("/dashboard/collections/ops/memories/{id}");
    browser.page(&page);
    // Pin, archive, edit: each answered by a redirect back to the memory.
    for (action, fields, done) in [
        ("pin", vec![("pinned", "true")], "pinned"),
        ("archive", vec![("archived", "true")], "archived"),
        (
            "edit",
            vec![("text", "The backup runs at 03:00."), ("importance", "0.9")],
            "saved",
        ),
    ] {
        let response = browser.post(&format!("{page}/{action}"), &fields);
        assert_eq!(
            response.status(),
            303,
            "{action}: {}",
            response.text().unwrap_or_default()
        );
        assert_eq!(
            location(&response),
            format!("../../../../collections/ops/memories/{id}?done={done}")
        );
    }
    let stored = expect_status(
        admin.get(&format!("/v1/memory/collections/ops/memories/{id}")),
        200,
    );
    assert_eq!(stored["pinned"], true);
    assert_eq!(stored["archived"], true);
    assert_eq!(stored["text"], "The backup runs at 03:00.");
    assert_eq!(stored["importance"], 0.9);
    // The API's validation answers, with its status, detail and code.
    let response = browser.post(&format!("{page}/edit"), &[("text", "")]);
    assert_eq!(response.status(), 422);
    let html = response.text().unwrap();
    assert!(html.contains("validation_failed"), "{html}");
    let response = browser.post(
        &format!("{page}/edit"),
        &[("text", "x"), ("importance", "7")],
    );
    assert_eq!(response.status(), 422);
    // The audit log holds the dashboard's changes as the API's.
    let audit = expect_status(admin.get("/v1/memory/admin/audit?days=1"), 200);
    let entries = audit["entries"]
        .as_array()
        .or(audit.as_array())
        .cloned()
        .unwrap_or_default();
    let actions: Vec<&str> = entries
        .iter()
        .filter_map(|entry| entry["action"].as_str())
        .collect();
    for action in ["memory.pin", "memory.archive", "memory.update"] {
        assert!(
            actions.contains(&action),
            "{action} not audited: {actions:?}"
        );
    }
    // Bulk: restore and delete the selected.
    let other = create_memory(&admin, "ops", json!({"text": "Rotate the logs weekly."}));
    let other_id = other["id"].as_str().unwrap();
    let response = browser.post(
        "/dashboard/collections/ops/memories/bulk",
        &[
            ("ids", id.as_str()),
            ("ids", other_id),
            ("action", "delete"),
        ],
    );
    assert_eq!(
        response.status(),
        303,
        "{}",
        response.text().unwrap_or_default()
    );
    expect_status(
        admin.get(&format!("/v1/memory/collections/ops/memories/{id}")),
        404,
    );
    expect_status(
        admin.get(&format!("/v1/memory/collections/ops/memories/{other_id}")),
        404,
    );
}

#[test]
fn agent_and_read_only_keys_see_and_do_only_what_they_may() {
    let server = own_server();
    let owner = tenant_on(&server);
    create_memory(&owner, "open", json!({"text": "Open to every key."}));
    create_memory(&owner, "secret", json!({"text": "Only for the owner."}));
    let agent = expect_status(owner.post("/v1/memory/keys", &json!({"label": "bot"})), 201);
    let reader = expect_status(
        owner.post(
            "/v1/memory/keys",
            &json!({"label": "reader", "read_only": true}),
        ),
        201,
    );
    let reader_id = reader["id"].as_str().unwrap();
    // "secret" is restricted to the reader.
    expect_status(
        owner.put(
            "/v1/memory/collections/secret/grants",
            &json!({"agent_key_id": reader_id, "can_read": true, "can_write": false}),
        ),
        200,
    );
    let mut bot = Browser::signed_in(&server.base_url, agent["key"].as_str().unwrap());
    let html = bot.page("/dashboard/collections");
    assert!(
        html.contains("open") && !html.contains(">secret<"),
        "{html}"
    );
    let response = bot.get("/dashboard/collections/secret/memories");
    assert_eq!(response.status(), 403);
    assert!(response.text().unwrap().contains("no_grant"));
    // Owner-only pages refuse agent keys; operator pages refuse every non-admin tenant.
    for path in ["/dashboard/keys", "/dashboard/audit"] {
        let response = bot.get(path);
        assert_eq!(response.status(), 403, "{path}");
        assert!(response.text().unwrap().contains("owner_key_required"));
    }
    let mut owner_browser = Browser::signed_in(&server.base_url, owner.key());
    for path in [
        "/dashboard/operator/metrics",
        "/dashboard/operator/tenants",
        "/dashboard/operator/health",
        "/dashboard/operator/analytics",
        "/dashboard/operator/status",
    ] {
        let response = owner_browser.get(path);
        assert_eq!(response.status(), 403, "{path}");
        assert!(response.text().unwrap().contains("admin_key_required"));
    }
    let html = owner_browser.page("/dashboard/");
    assert!(
        !html.contains("operator/metrics"),
        "no operator links for a tenant"
    );
    let mut admin = Browser::signed_in(&server.base_url, &server.admin_key);
    for path in [
        "/dashboard/operator/metrics",
        "/dashboard/operator/tenants",
        "/dashboard/operator/health",
        "/dashboard/operator/analytics",
        "/dashboard/operator/status",
    ] {
        admin.page(path);
    }
    // A read-only key reads, is offered no change, and a forged change is refused by the API.
    let mut read_only = Browser::signed_in(&server.base_url, reader["key"].as_str().unwrap());
    let html = read_only.page("/dashboard/collections/secret/memories");
    assert!(html.contains("Only for the owner."), "{html}");
    assert!(
        !html.contains("Add a memory") && !html.contains("Archive selected"),
        "{html}"
    );
    let id = expect_status(owner.get("/v1/memory/collections/secret/memories"), 200)[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let html = read_only.page(&format!("/dashboard/collections/secret/memories/{id}"));
    assert!(!html.contains("/archive\""), "{html}");
    let response = read_only.post(
        &format!("/dashboard/collections/secret/memories/{id}/archive"),
        &[("archived", "true")],
    );
    assert_eq!(response.status(), 403);
    assert!(response.text().unwrap().contains("read_only_key"));
    let stored = expect_status(
        owner.get(&format!("/v1/memory/collections/secret/memories/{id}")),
        200,
    );
    assert_eq!(stored["archived"], false);
}

#[test]
fn revoking_a_key_ends_its_sessions_at_once() {
    let server = shared();
    let owner = crate::support::new_tenant();
    let agent = expect_status(
        owner.post("/v1/memory/keys", &json!({"label": "temp"})),
        201,
    );
    let mut browser = Browser::signed_in(&server.base_url, agent["key"].as_str().unwrap());
    browser.page("/dashboard/collections");
    let key_id = agent["id"].as_str().unwrap();
    // Revoked from the owner's dashboard session.
    let mut owner_browser = Browser::signed_in(&server.base_url, owner.key());
    owner_browser.page("/dashboard/keys");
    let response = owner_browser.post(&format!("/dashboard/keys/{key_id}/revoke"), &[]);
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "../../keys?done=revoked");
    let response = browser.get("/dashboard/collections");
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "./login");
    let api = Client::new(&server.base_url, agent["key"].as_str());
    assert_eq!(api.get("/v1/memory/collections").status(), 401);
}

#[test]
fn a_new_key_is_shown_once_and_grants_are_set_from_the_collection_page() {
    let server = shared();
    let owner = crate::support::new_tenant();
    create_memory(&owner, "crm", json!({"text": "Acme renews in March."}));
    let mut browser = Browser::signed_in(&server.base_url, owner.key());
    browser.page("/dashboard/keys");
    let response = browser.post(
        "/dashboard/keys",
        &[("label", "sales-bot"), ("read_only", "on")],
    );
    assert_eq!(response.status(), 200);
    let html = response.text().unwrap();
    let at = html.find("id=\"new-key\">").expect("the secret is shown") + "id=\"new-key\">".len();
    let secret = html[at..].split('<').next().unwrap().to_owned();
    assert!(secret.starts_with("mv_"), "{secret}");
    // Shown once: the list shows it masked only.
    let html = browser.page("/dashboard/keys");
    assert!(html.contains("sales-bot") && !html.contains(&secret));
    let keys = expect_status(owner.get("/v1/memory/keys"), 200);
    let key_id = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|key| key["label"] == "sales-bot")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let response = browser.post(
        "/dashboard/collections/crm/grants",
        &[("agent_key_id", &key_id), ("can_read", "on")],
    );
    assert_eq!(response.status(), 303);
    let grants = expect_status(owner.get("/v1/memory/collections/crm/grants"), 200);
    assert_eq!(grants["restricted"], true);
    assert_eq!(grants["grants"][0]["agent_key_id"], key_id.as_str());
    assert_eq!(grants["grants"][0]["can_write"], false);
    let html = browser.page("/dashboard/keys");
    assert!(
        html.contains("collections/crm"),
        "the key's grants are listed: {html}"
    );
    // A bad label is the API's 422.
    let response = browser.post("/dashboard/keys", &[("label", "   ")]);
    assert_eq!(response.status(), 422);
}

#[test]
fn deleting_a_collection_needs_its_name_typed() {
    let server = shared();
    let owner = crate::support::new_tenant();
    create_memory(&owner, "scratch", json!({"text": "temporary"}));
    let mut browser = Browser::signed_in(&server.base_url, owner.key());
    let response = browser.post(
        "/dashboard/collections/scratch/delete",
        &[("confirm", "scratc")],
    );
    assert_eq!(response.status(), 422);
    expect_status(owner.get("/v1/memory/collections/scratch"), 200);
    let response = browser.post(
        "/dashboard/collections/scratch/delete",
        &[("confirm", "scratch")],
    );
    assert_eq!(response.status(), 303);
    expect_status(owner.get("/v1/memory/collections/scratch"), 404);
}

#[test]
fn the_memory_browser_filters_by_status_source_agent_tag_and_date() {
    let server = shared();
    let owner = crate::support::new_tenant();
    let kept = create_memory(
        &owner,
        "mix",
        json!({"text": "alpha current", "source": "api", "container_tag": "u1"}),
    );
    let archived = create_memory(
        &owner,
        "mix",
        json!({"text": "beta archived", "source": "mcp"}),
    );
    let archived_id = archived["id"].as_str().unwrap();
    expect_status(
        owner.post(
            &format!("/v1/memory/collections/mix/memories/{archived_id}/archive"),
            &json!({"archived": true}),
        ),
        200,
    );
    let mut browser = Browser::signed_in(&server.base_url, owner.key());
    let count = |html: &str, text: &str| html.matches(text).count();
    let html = browser.page("/dashboard/collections/mix/memories");
    assert_eq!(count(&html, "alpha current"), 1);
    assert_eq!(count(&html, "beta archived"), 0, "archived is not current");
    let html = browser.page("/dashboard/collections/mix/memories?status=archived");
    assert_eq!(
        (count(&html, "alpha current"), count(&html, "beta archived")),
        (0, 1)
    );
    let html = browser.page("/dashboard/collections/mix/memories?status=all&source=mcp");
    assert_eq!(
        (count(&html, "alpha current"), count(&html, "beta archived")),
        (0, 1)
    );
    let html = browser.page("/dashboard/collections/mix/memories?status=all&tag=u1");
    assert_eq!(
        (count(&html, "alpha current"), count(&html, "beta archived")),
        (1, 0)
    );
    let label = kept["created_by"]["label"].as_str().unwrap();
    let html = browser.page(&format!(
        "/dashboard/collections/mix/memories?status=all&agent={label}"
    ));
    assert_eq!(
        count(&html, "alpha current") + count(&html, "beta archived"),
        2
    );
    let html = browser.page("/dashboard/collections/mix/memories?status=all&to=2000-01-01");
    assert!(html.contains("No memory matches"), "{html}");
    let html = browser.page("/dashboard/collections/mix/memories?status=pinned");
    assert!(html.contains("No memory matches"), "{html}");
    // Nonsense in the filters is ignored, never an error.
    let html =
        browser.page("/dashboard/collections/mix/memories?status=zzz&from=never&page=0&mode=nope");
    assert!(html.contains("Memories of mix"));
    let html = browser.page("/dashboard/collections/mix/memories?page=-1&status=all");
    assert!(html.contains("Page 1: 2 memories"), "{html}");
    browser.page("/dashboard/audit?days=forever&outcome=%3Cb%3E");

    // Paging walks the collection newest first, 50 to a page, and says when more follow.
    for part in [0..100, 100..120] {
        let bulk: Vec<Value> = part
            .map(|index| json!({ "text": format!("paged memory number {index:03}") }))
            .collect();
        expect_status(
            owner.post("/v1/memory/collections/paged/memories/bulk", &json!(bulk)),
            201,
        );
    }
    let html = browser.page("/dashboard/collections/paged/memories");
    assert!(html.contains("Page 1: 50 memories"), "{html}");
    assert!(html.contains("paged memory number 119"));
    assert!(!html.contains("paged memory number 069"));
    assert!(html.contains("Older →") && !html.contains("← Newer"));
    let html = browser.page("/dashboard/collections/paged/memories?page=3");
    assert!(html.contains("Page 3: 20 memories"), "{html}");
    assert!(html.contains("paged memory number 000"));
    assert!(!html.contains("Older →") && html.contains("← Newer"));
    let html = browser.page("/dashboard/collections/paged/memories?page=4");
    assert!(html.contains("No memory matches"), "{html}");
    let html = browser.page("/dashboard/collections/paged/memories?q=number+007&status=expired");
    assert!(html.contains("No memory matches"), "{html}");
    let html =
        browser.page("/dashboard/collections/paged/memories?q=number+007&status=all&mode=text");
    assert!(html.contains("paged memory number 007"), "{html}");
}

#[test]
fn the_older_value_of_a_contradiction_is_restored_from_the_dashboard() {
    let server = shared();
    let owner = crate::support::new_tenant();
    let remember = |content: &str| {
        expect_status(
            owner.post(
                "/v1/memory/collections/home/remember?sync=true",
                &json!({ "content": content }),
            ),
            200,
        )["memories"][0]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let berlin = remember("I live in Berlin.");
    let paris = remember("I live in Paris now.");
    let mut browser = Browser::signed_in(&server.base_url, owner.key());
    let html = browser.page("/dashboard/collections/home/contradictions");
    assert!(html.contains("Restore the older"), "{html}");
    assert!(
        html.contains(&format!("memories/{berlin}/reinstate")),
        "{html}"
    );
    let response = browser.post(
        &format!("/dashboard/collections/home/memories/{berlin}/reinstate"),
        &[],
    );
    assert_eq!(
        response.status(),
        303,
        "{}",
        response.text().unwrap_or_default()
    );
    let target = location(&response);
    assert!(target.ends_with("?done=reinstated"), "{target}");
    let again = target
        .trim_end_matches("?done=reinstated")
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    assert_ne!(again, berlin);
    let stored = expect_status(
        owner.get(&format!("/v1/memory/collections/home/memories/{again}")),
        200,
    );
    assert!(
        stored["text"].as_str().unwrap().contains("Berlin"),
        "{stored}"
    );
    let html = browser.page(&format!(
        "/dashboard/collections/home/memories/{again}?done=reinstated"
    ));
    assert!(html.contains("current again"), "{html}");
    // The chain: the page's history lists the three values, Paris among them.
    assert!(html.contains(&format!("memories/{paris}")), "{html}");
    let audit = browser.page("/dashboard/audit");
    assert!(audit.contains("memory.reinstate"), "{audit}");
    // A read-only key is refused, as by the API.
    let created = expect_status(
        owner.post(
            "/v1/memory/keys",
            &json!({"label": "ro", "read_only": true}),
        ),
        201,
    );
    let mut reader = Browser::signed_in(&server.base_url, created["key"].as_str().unwrap());
    let html = reader.page("/dashboard/collections/home/contradictions");
    assert!(!html.contains("Restore the older"), "{html}");
    let response = reader.post(
        &format!("/dashboard/collections/home/memories/{paris}/reinstate"),
        &[],
    );
    assert_eq!(response.status(), 403);
}

#[test]
fn a_session_outlives_a_kill_and_a_restart_and_its_sign_out() {
    use crate::support::{temp_data_dir, ServerProcess};
    const KEY: &str = "mv_dashboard_restart_key_0123456789ab";
    let (_guard, data_dir) = temp_data_dir();
    let environment = [("MEMVAULT_BOOTSTRAP_KEY", KEY)];
    let mut server = ServerProcess::start(&data_dir, &environment).expect("server starts");
    let mut browser = Browser::signed_in(&server.base_url, KEY);
    let token = csrf_of(&browser.page("/dashboard/")).expect("a token");
    server.kill_hard();

    // The session was in the store: the new process knows it, with the same token.
    let server = ServerProcess::start(&data_dir, &environment).expect("server restarts");
    let mut browser = browser.at(&server.base_url);
    let html = browser.page("/dashboard/");
    assert!(html.contains("<h1>Overview</h1>"), "{html}");
    assert_eq!(csrf_of(&html), Some(token));
    let response = browser.post(
        "/dashboard/collections",
        &[
            ("name", "after-restart"),
            ("description", "made after a kill"),
        ],
    );
    assert_eq!(
        response.status(),
        303,
        "{}",
        response.text().unwrap_or_default()
    );
    let collections = expect_status(server.client(KEY).get("/v1/memory/collections"), 200);
    assert!(
        collections.to_string().contains("after-restart"),
        "{collections}"
    );

    let response = browser.post("/dashboard/logout", &[]);
    assert_eq!(response.status(), 303);
    assert_eq!(
        location(&browser.get("/dashboard/")),
        "./login",
        "signed out, the session is gone from the store"
    );
}
