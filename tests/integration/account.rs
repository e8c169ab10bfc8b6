//! Accounts that run themselves, black-box against a real SMTP exchange: signup to a
//! working key through the mailed link, recovery, the one-time reveal (GET burns
//! nothing; POST reveals once), no account enumeration, the per-address limit, mail
//! retried after a temporary SMTP failure, and the outbox without SMTP.

use std::process::Command;

use reqwest::blocking::{Client as HttpClient, Response};
use serde_json::{json, Value};

use crate::smtp_sink::{SmtpSink, SunkMail};
use crate::support::{expect_status, start_in_process, tenant_on, unique, Client, TestServer};

fn server_with(
    sink: &SmtpSink,
    configure: impl FnOnce(&mut memvault_server::config::Config),
) -> TestServer {
    let url = sink.url();
    start_in_process(move |config| {
        config.mail.smtp_url = Some(url);
        config.mail.from = "memvault <noreply@memvault.test>".to_owned();
        config.mail.initial_backoff_ms = 100;
        configure(config);
    })
}

fn anonymous(server: &TestServer) -> Client {
    Client::new(&server.base_url, None)
}

fn fresh_email(prefix: &str) -> String {
    format!("{}@example.com", unique(prefix))
}

/// The reveal link in a mail's text.
fn link_in(mail: &SunkMail) -> String {
    let text = mail.text();
    let start = text
        .find("http")
        .filter(|start| text[*start..].contains("/v1/memory/reveal/"))
        .unwrap_or_else(|| panic!("no reveal link in the mail: {text}"));
    text[start..].split_whitespace().next().unwrap().to_owned()
}

fn browser() -> HttpClient {
    HttpClient::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn open(link: &str) -> Response {
    browser()
        .get(link)
        .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .send()
        .unwrap()
}

fn press(link: &str, accept: &str) -> Response {
    browser()
        .post(link)
        .header("accept", accept)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("confirm=reveal")
        .send()
        .unwrap()
}

/// Every `mv_` key in a text.
fn keys_in(text: &str) -> Vec<String> {
    text.match_indices("mv_")
        .map(|(start, _)| {
            text[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                .collect::<String>()
        })
        .filter(|key| key.len() > 11)
        .collect()
}

/// An error answer with this status and code.
#[track_caller]
fn expect_code(response: Response, status: u16, code: &str) {
    let body = expect_status(response, status);
    assert_eq!(body["code"], code, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|detail| !detail.is_empty()),
        "{body}"
    );
}

fn me(server: &TestServer, key: &str) -> Response {
    Client::new(&server.base_url, Some(key)).get("/v1/memory/admin/me")
}

#[test]
fn signup_reaches_a_working_key_through_the_mailed_link_once() {
    let sink = SmtpSink::start();
    let server = server_with(&sink, |_| {});
    let email = fresh_email("signup");
    let answer = expect_status(
        anonymous(&server).post("/v1/memory/signup", &json!({"email": email})),
        202,
    );
    assert_eq!(answer["status"], "mail_sent");

    let mail = sink.wait_for(&email, 1).remove(0);
    assert!(
        keys_in(&mail.text()).is_empty(),
        "a raw key in the mail: {}",
        mail.text()
    );
    assert!(keys_in(&String::from_utf8_lossy(&mail.raw)).is_empty());
    assert!(mail.subject().contains("memvault"), "{}", mail.subject());
    let raw = String::from_utf8_lossy(&mail.raw).to_string();
    assert!(
        raw.contains("multipart/alternative") && raw.contains("text/html"),
        "{raw}"
    );
    let link = link_in(&mail);
    assert!(
        link.starts_with(&format!("{}/v1/memory/reveal/", server.base_url)),
        "the link is on server.public_url: {link}"
    );

    // Opening the link (twice, as a mail scanner and then the person would) shows the
    // confirmation page and burns nothing.
    for _ in 0..2 {
        let page = open(&link);
        assert_eq!(page.status(), 200);
        assert_eq!(page.headers()["cache-control"], "no-store");
        let html = page.text().unwrap();
        assert!(html.contains("<form method=\"post\""), "{html}");
        assert!(keys_in(&html).is_empty(), "the GET showed a key: {html}");
    }

    let revealed = press(&link, "text/html");
    assert_eq!(revealed.status(), 200);
    let html = revealed.text().unwrap();
    let mut keys = keys_in(&html);
    keys.dedup();
    assert_eq!(
        keys.len(),
        1,
        "one key, shown and in the dashboard sign-in button: {html}"
    );
    let key = &keys[0];
    let account = expect_status(me(&server, key), 200);
    assert_eq!(account["email"], email.as_str());
    assert_eq!(account["tier"], "free");
    assert_eq!(account["key"]["owner"], true);
    let tenant = Client::new(&server.base_url, Some(key));
    expect_status(
        tenant.post(
            "/v1/memory/collections/notes/memories",
            &json!({"text": "The first memory of a signed-up tenant."}),
        ),
        201,
    );

    // Once only: a second POST and a later GET reveal nothing, and the key stays valid.
    for response in [press(&link, "text/html"), open(&link)] {
        assert_eq!(response.status(), 404);
        assert!(keys_in(&response.text().unwrap()).is_empty());
    }
    let json_refusal = press(&link, "application/json");
    expect_code(json_refusal, 404, "reveal_link_invalid");
    expect_status(me(&server, key), 200);

    // A second signup for the same email: the same answer, no second tenant, no mail.
    let again = expect_status(
        anonymous(&server).post("/v1/memory/signup", &json!({"email": email.to_uppercase()})),
        202,
    );
    assert_eq!(again, answer);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(
        sink.mails_to(&email).len(),
        1,
        "a second signup mailed again"
    );
    expect_status(me(&server, key), 200);
}

#[test]
fn recovery_mails_a_link_and_replaces_the_owner_key_only_when_revealed() {
    let sink = SmtpSink::start();
    let server = server_with(&sink, |_| {});
    let tenant = tenant_on(&server);
    let before = expect_status(tenant.get("/v1/memory/admin/me"), 200);
    let email = before["email"].as_str().unwrap().to_owned();
    let old_key = tenant.key().to_owned();

    let known = expect_status(
        anonymous(&server).post("/v1/memory/recover-key", &json!({"email": email})),
        202,
    );
    let stranger = fresh_email("nobody");
    let unknown = expect_status(
        anonymous(&server).post("/v1/memory/recover-key", &json!({"email": stranger})),
        202,
    );
    assert_eq!(
        known, unknown,
        "an unknown email is answered exactly like a known one"
    );

    let mail = sink.wait_for(&email, 1).remove(0);
    assert!(!String::from_utf8_lossy(&mail.raw).contains(&old_key[3..]));
    assert!(keys_in(&mail.text()).is_empty());
    let link = link_in(&mail);
    // Until the link is used the current key works.
    assert_eq!(open(&link).status(), 200);
    expect_status(me(&server, &old_key), 200);

    let revealed = expect_status(press(&link, "application/json"), 200);
    let new_key = revealed["api_key"].as_str().unwrap();
    assert_ne!(new_key, old_key);
    assert_eq!(revealed["email"], email.as_str());
    let after = expect_status(me(&server, new_key), 200);
    assert_eq!(after["id"], before["id"], "the same tenant");
    assert_eq!(after["key"]["owner"], true);
    expect_code(me(&server, &old_key), 401, "invalid_api_key");
    expect_code(press(&link, "application/json"), 404, "reveal_link_invalid");

    std::thread::sleep(std::time::Duration::from_millis(1000));
    assert!(
        sink.mails_to(&stranger).is_empty(),
        "an unknown email was sent mail"
    );
}

#[test]
fn bad_bodies_unknown_links_and_the_per_address_limit() {
    let sink = SmtpSink::start();
    let server = server_with(&sink, |config| config.account.requests_per_minute = 8);
    let client = anonymous(&server);
    for body in [
        json!({}),
        json!({"email": 5}),
        json!({"email": "not an email address"}),
        json!({"email": "a@b.example", "extra": 1}),
    ] {
        for path in ["/v1/memory/signup", "/v1/memory/recover-key"] {
            let refusal = expect_status(client.post(path, &body), 422);
            assert!(
                ["invalid_body", "validation_failed"].contains(&refusal["code"].as_str().unwrap()),
                "{refusal}"
            );
        }
    }
    for token in [
        "short",
        "x".repeat(43).as_str(),
        "not-a-token-but-long-enough-to-look-like-one",
    ] {
        let link = format!("{}/v1/memory/reveal/{token}", server.base_url);
        assert_eq!(open(&link).status(), 404);
        expect_code(press(&link, "application/json"), 404, "reveal_link_invalid");
    }
    assert!(sink.mails().is_empty());

    // The limit counts signup and recover-key together per client address; the 429
    // carries Retry-After and the RateLimit headers.
    let mut remaining = Vec::new();
    let limited = loop {
        let response = client.post(
            "/v1/memory/recover-key",
            &json!({"email": fresh_email("burst")}),
        );
        if response.status() == 429 {
            break response;
        }
        assert_eq!(response.status(), 202);
        remaining.push(
            response.headers()["ratelimit-remaining"]
                .to_str()
                .unwrap()
                .parse::<u32>()
                .unwrap(),
        );
        assert!(remaining.len() <= 8, "no 429 after {remaining:?}");
    };
    assert!(
        remaining.windows(2).all(|pair| pair[1] < pair[0]),
        "{remaining:?}"
    );
    let retry: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry));
    assert_eq!(limited.headers()["ratelimit-remaining"], "0");
    expect_code(limited, 429, "rate_limited");
}

#[test]
fn mail_is_retried_after_a_temporary_smtp_failure() {
    let sink = SmtpSink::refusing_first(2);
    let server = server_with(&sink, |_| {});
    let email = fresh_email("retry");
    expect_status(
        anonymous(&server).post("/v1/memory/signup", &json!({"email": email})),
        202,
    );
    let mail = sink.wait_for(&email, 1).remove(0);
    assert_eq!(sink.refused(), 2, "the first two attempts met a 451");
    let key = keys_in(&press(&link_in(&mail), "text/html").text().unwrap()).remove(0);
    expect_status(me(&server, &key), 200);
}

#[test]
fn without_smtp_mail_goes_to_the_outbox_the_operator_reads() {
    let server = start_in_process(|config| config.mail.smtp_url = None);
    let email = fresh_email("outbox");
    expect_status(
        anonymous(&server).post("/v1/memory/signup", &json!({"email": email})),
        202,
    );
    let outbox = server.data_dir().join("outbox");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let listing = loop {
        let output = Command::new(env!("CARGO_BIN_EXE_memvault"))
            .args(["mail", "outbox", "--data-dir"])
            .arg(server.data_dir())
            .env_remove("MEMVAULT__MAIL__SMTP_URL")
            .current_dir(server.data_dir())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let listing = String::from_utf8(output.stdout).unwrap();
        if listing.contains(&email) {
            break listing;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no mail in {}: {listing}",
            outbox.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(
        listing.contains("Subject: Your memvault account is ready"),
        "{listing}"
    );
    let start = listing
        .find(&format!("{}/v1/memory/reveal/", server.base_url))
        .unwrap();
    let link = listing[start..].split_whitespace().next().unwrap();
    let answer: Value = press(link, "application/json").json().unwrap();
    expect_status(me(&server, answer["api_key"].as_str().unwrap()), 200);
}

/// Signup from `client` as a trusted proxy would forward it.
fn signup_forwarded_for(server: &TestServer, client: &str) -> u16 {
    anonymous(server)
        .request(reqwest::Method::POST, "/v1/memory/signup")
        .header("X-Forwarded-For", client)
        .json(&json!({"email": fresh_email("proxied")}))
        .send()
        .unwrap()
        .status()
        .as_u16()
}

/// Creates a collection with the admin key as if forwarded for `client`; its audit entry
/// (the newest `collection.create`).
fn audited_write_forwarded_for(server: &TestServer, client: &str) -> Value {
    let admin = Client::new(&server.base_url, Some(&server.admin_key));
    let name = unique("audited");
    let created = admin
        .request(reqwest::Method::POST, "/v1/memory/collections")
        .header("X-Forwarded-For", client)
        .json(&json!({ "name": name }))
        .send()
        .unwrap();
    assert_eq!(created.status(), 201);
    let log = expect_status(admin.get("/v1/memory/admin/audit?days=1"), 200);
    log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["action"] == "collection.create")
        .cloned()
        .unwrap_or_else(|| panic!("{log}"))
}

#[test]
fn behind_a_trusted_proxy_limits_and_the_audit_log_see_the_forwarded_client() {
    let sink = SmtpSink::start();
    let trusted = server_with(&sink, |config| {
        config.account.requests_per_minute = 2;
        config.server.trusted_proxies = vec!["127.0.0.1".to_owned()];
    });
    // Each forwarded client has its own budget.
    assert_eq!(signup_forwarded_for(&trusted, "198.51.100.1"), 202);
    assert_eq!(signup_forwarded_for(&trusted, "198.51.100.1"), 202);
    assert_eq!(signup_forwarded_for(&trusted, "198.51.100.1"), 429);
    assert_eq!(signup_forwarded_for(&trusted, "198.51.100.2"), 202);
    // An address the client wrote in front of the proxy's is not believed.
    assert_eq!(
        signup_forwarded_for(&trusted, "198.51.100.2, 198.51.100.1"),
        429
    );

    // The audit log names the forwarded client of a write.
    let entry = audited_write_forwarded_for(&trusted, "203.0.113.77");
    assert_eq!(entry["client_address"], "203.0.113.77", "{entry}");

    // Without trusted proxies the header is ignored: the peer is the client.
    let untrusted = server_with(&sink, |config| config.account.requests_per_minute = 2);
    assert_eq!(signup_forwarded_for(&untrusted, "198.51.100.1"), 202);
    assert_eq!(signup_forwarded_for(&untrusted, "198.51.100.2"), 202);
    assert_eq!(signup_forwarded_for(&untrusted, "198.51.100.3"), 429);
    let entry = audited_write_forwarded_for(&untrusted, "203.0.113.77");
    assert_eq!(entry["client_address"], "127.0.0.1", "{entry}");
}

/// An owner who lost the key signs in to the dashboard through a mailed link: the
/// dashboard asks for the mail, the link's page reveals a new owner key and signs in
/// with it (a session cookie), and the old key stops working.
#[test]
fn the_dashboard_signs_in_through_a_mailed_link() {
    let sink = SmtpSink::start();
    let server = server_with(&sink, |_| {});
    let tenant = tenant_on(&server);
    let email = expect_status(tenant.get("/v1/memory/admin/me"), 200)["email"]
        .as_str()
        .unwrap()
        .to_owned();
    let asked = browser()
        .post(format!("{}/dashboard/recover", server.base_url))
        .header("origin", &server.base_url)
        .form(&[("email", email.as_str())])
        .send()
        .unwrap();
    assert_eq!(asked.status(), 200);
    assert!(asked.text().unwrap().contains("Check your mail"));
    // From another origin nothing is sent.
    let foreign = browser()
        .post(format!("{}/dashboard/recover", server.base_url))
        .header("origin", "https://evil.example.net")
        .form(&[("email", email.as_str())])
        .send()
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let link = link_in(&sink.wait_for(&email, 1).remove(0));
    let page = press(&link, "text/html");
    assert_eq!(page.status(), 200);
    let html = page.text().unwrap();
    assert!(
        html.contains("action=\"../../../dashboard/login\""),
        "{html}"
    );
    let new_key = keys_in(&html)
        .into_iter()
        .next()
        .expect("the page shows the key");
    // The page's button: a form post to the dashboard's sign-in; the browser sends
    // `Origin: null` from a no-referrer page, and Sec-Fetch-Site says it is ours.
    let signed_in = browser()
        .post(format!("{}/dashboard/login", server.base_url))
        .header("origin", "null")
        .header("sec-fetch-site", "same-origin")
        .form(&[("key", new_key.as_str())])
        .send()
        .unwrap();
    assert_eq!(signed_in.status(), 303);
    assert!(signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .starts_with("mv_session="));
    expect_code(me(&server, tenant.key()), 401, "invalid_api_key");
    // `Origin: null` without Sec-Fetch-Site is no same-origin proof.
    let refused = browser()
        .post(format!("{}/dashboard/login", server.base_url))
        .header("origin", "null")
        .form(&[("key", new_key.as_str())])
        .send()
        .unwrap();
    assert_eq!(refused.status(), 403);
    sink.wait_for(&email, 1);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        sink.mails_to(&email).len(),
        1,
        "the foreign request sent nothing"
    );
}
