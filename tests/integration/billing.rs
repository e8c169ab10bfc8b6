//! Billing against a local fake of Stripe's API (form-encoded requests, bearer secret
//! key, Stripe-shaped answers): checkout and portal sessions, and signed webhook events
//! that move the tier, each event id once; bad signatures change nothing.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::Json;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::support::{
    expect_error, expect_status, serve_fake, shared, start_in_process, tenant_on, Client,
    TestServer,
};

const SECRET_KEY: &str = "sk_test_memvault_billing";
const WEBHOOK_SECRET: &str = "whsec_memvault_billing_test";
const PRICE: &str = "price_test_pro";

/// One request the fake Stripe received.
#[derive(Debug, Clone)]
struct Call {
    path: String,
    authorization: String,
    content_type: String,
    form: Vec<(String, String)>,
}

impl Call {
    fn field(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

#[derive(Clone, Default)]
struct FakeStripe {
    calls: Arc<Mutex<Vec<Call>>>,
    /// Answer every call with Stripe's card-declined error.
    failing: Arc<Mutex<bool>>,
}

async fn stripe_route(
    State(fake): State<FakeStripe>,
    uri: Uri,
    headers: HeaderMap,
    body: String,
) -> impl IntoResponse {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let form: Vec<(String, String)> = form_urlencoded::parse(body.as_bytes())
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    fake.calls.lock().unwrap().push(Call {
        path: uri.path().to_owned(),
        authorization: header("authorization"),
        content_type: header("content-type"),
        form,
    });
    if *fake.failing.lock().unwrap() {
        return (
            StatusCode::PAYMENT_REQUIRED,
            Json(json!({"error": {"type": "card_error", "message": "Your card was declined."}})),
        );
    }
    let answer = match uri.path() {
        "/v1/checkout/sessions" => json!({
            "id": "cs_test_1", "object": "checkout.session",
            "url": "https://checkout.stripe.test/c/pay/cs_test_1", "mode": "subscription"
        }),
        "/v1/billing_portal/sessions" => json!({
            "id": "bps_test_1", "object": "billing_portal.session",
            "url": "https://billing.stripe.test/p/session/bps_test_1"
        }),
        _ => {
            return (
                StatusCode::NOT_FOUND,
                Json(json!({"error": {"message": "no route"}})),
            )
        }
    };
    (StatusCode::OK, Json(answer))
}

fn fake_stripe() -> (FakeStripe, String) {
    let fake = FakeStripe::default();
    let app = axum::Router::new()
        .fallback(stripe_route)
        .with_state(fake.clone());
    let address = serve_fake(app);
    (fake, format!("http://{address}"))
}

fn billing_server(api_base: &str) -> TestServer {
    let api_base = api_base.to_owned();
    start_in_process(move |config| {
        config.billing.stripe_api_base = api_base;
        config.billing.stripe_secret_key = Some(SECRET_KEY.to_owned());
        config.billing.webhook_secret = Some(WEBHOOK_SECRET.to_owned());
        config.billing.price_pro = Some(PRICE.to_owned());
    })
}

fn sign(body: &str, secret: &str, timestamp: i64) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{timestamp}.{body}").as_bytes());
    format!(
        "t={timestamp},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn post_event(
    server: &TestServer,
    body: &str,
    signature: Option<&str>,
) -> reqwest::blocking::Response {
    let client = reqwest::blocking::Client::new();
    let mut request = client
        .post(format!("{}/v1/memory/stripe/webhook", server.base_url))
        .header("content-type", "application/json; charset=utf-8")
        .body(body.to_owned());
    if let Some(signature) = signature {
        request = request.header("Stripe-Signature", signature);
    }
    request.send().unwrap()
}

fn event(id: &str, kind: &str, object: Value) -> String {
    json!({
        "id": id, "object": "event", "api_version": "2024-06-20", "created": now(),
        "livemode": false, "type": kind, "data": {"object": object}
    })
    .to_string()
}

fn tier(tenant: &Client) -> String {
    expect_status(tenant.get("/v1/memory/admin/me"), 200)["tier"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn checkout_and_signed_events_move_the_tier_once_per_event() {
    let (fake, base) = fake_stripe();
    let server = billing_server(&base);
    let tenant = tenant_on(&server);
    let me = expect_status(tenant.get("/v1/memory/admin/me"), 200);
    let tenant_id = me["id"].as_str().unwrap().to_owned();
    assert_eq!(tier(&tenant), "free");

    let session = expect_status(
        tenant.post("/v1/memory/stripe/checkout/create", &json!({})),
        200,
    );
    assert_eq!(
        session["url"],
        "https://checkout.stripe.test/c/pay/cs_test_1"
    );
    let call = fake.calls.lock().unwrap().last().cloned().unwrap();
    assert_eq!(call.path, "/v1/checkout/sessions");
    assert_eq!(call.authorization, format!("Bearer {SECRET_KEY}"));
    assert!(call
        .content_type
        .starts_with("application/x-www-form-urlencoded"));
    assert_eq!(call.field("mode"), Some("subscription"));
    assert_eq!(call.field("line_items[0][price]"), Some(PRICE));
    assert_eq!(call.field("client_reference_id"), Some(tenant_id.as_str()));
    assert_eq!(call.field("metadata[tenant_id]"), Some(tenant_id.as_str()));
    assert_eq!(
        call.field("subscription_data[metadata][tenant_id]"),
        Some(tenant_id.as_str())
    );
    assert_eq!(call.field("customer_email"), me["email"].as_str());
    assert_eq!(
        call.field("success_url"),
        Some(format!("{}/", server.base_url).as_str())
    );

    let completed = event(
        "evt_completed_1",
        "checkout.session.completed",
        json!({"id": "cs_test_1", "object": "checkout.session", "client_reference_id": tenant_id,
               "customer": "cus_test_1", "subscription": "sub_test_1", "status": "complete",
               "payment_status": "paid", "metadata": {"tenant_id": tenant_id}}),
    );
    let applied = expect_status(
        post_event(
            &server,
            &completed,
            Some(&sign(&completed, WEBHOOK_SECRET, now())),
        ),
        200,
    );
    assert_eq!(applied["outcome"], "applied", "{applied}");
    assert_eq!(applied["tier"], "pro");
    assert_eq!(tier(&tenant), "pro");
    let again = expect_status(
        post_event(
            &server,
            &completed,
            Some(&sign(&completed, WEBHOOK_SECRET, now())),
        ),
        200,
    );
    assert_eq!(again["outcome"], "duplicate");

    // The portal opens for the customer the completed checkout named; a new checkout
    // goes as that customer.
    let portal = expect_status(
        tenant.post(
            "/v1/memory/stripe/portal",
            &json!({"return_url": "https://app.example.com/billing"}),
        ),
        200,
    );
    assert_eq!(
        portal["url"],
        "https://billing.stripe.test/p/session/bps_test_1"
    );
    let call = fake.calls.lock().unwrap().last().cloned().unwrap();
    assert_eq!(call.path, "/v1/billing_portal/sessions");
    assert_eq!(call.field("customer"), Some("cus_test_1"));
    assert_eq!(
        call.field("return_url"),
        Some("https://app.example.com/billing")
    );
    expect_status(
        tenant.post("/v1/memory/stripe/checkout/create", &json!({})),
        200,
    );
    let call = fake.calls.lock().unwrap().last().cloned().unwrap();
    assert_eq!(call.field("customer"), Some("cus_test_1"));
    assert_eq!(call.field("customer_email"), None);

    // Subscription events, matched by the customer alone: past due keeps the plan,
    // deletion ends it; other event types are acknowledged and change nothing.
    let subscription = |status: &str| json!({"id": "sub_test_1", "object": "subscription", "customer": "cus_test_1", "status": status});
    for (id, kind, object, expected) in [
        (
            "evt_2",
            "customer.subscription.updated",
            subscription("past_due"),
            "pro",
        ),
        (
            "evt_3",
            "invoice.paid",
            json!({"id": "in_1", "customer": "cus_test_1"}),
            "pro",
        ),
        (
            "evt_4",
            "customer.subscription.deleted",
            subscription("canceled"),
            "free",
        ),
        (
            "evt_5",
            "customer.subscription.updated",
            subscription("active"),
            "pro",
        ),
        (
            "evt_6",
            "customer.subscription.updated",
            subscription("unpaid"),
            "free",
        ),
    ] {
        let body = event(id, kind, object);
        expect_status(
            post_event(&server, &body, Some(&sign(&body, WEBHOOK_SECRET, now()))),
            200,
        );
        assert_eq!(tier(&tenant), expected, "after {id} ({kind})");
    }
    let ignored = event("evt_7", "invoice.paid", json!({"id": "in_2"}));
    let answer = expect_status(
        post_event(
            &server,
            &ignored,
            Some(&sign(&ignored, WEBHOOK_SECRET, now())),
        ),
        200,
    );
    assert_eq!(answer["outcome"], "ignored");
}

#[test]
fn bad_signatures_are_400_and_change_nothing() {
    let (_fake, base) = fake_stripe();
    let server = billing_server(&base);
    let tenant = tenant_on(&server);
    let tenant_id = expect_status(tenant.get("/v1/memory/admin/me"), 200)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = event(
        "evt_signed_1",
        "checkout.session.completed",
        json!({"id": "cs_1", "object": "checkout.session", "client_reference_id": tenant_id, "customer": "cus_9"}),
    );
    let tampered = body.replace("cus_9", "cus_8");
    let cases = [
        (
            "wrong secret",
            body.clone(),
            Some(sign(&body, "whsec_other", now())),
        ),
        (
            "tampered body",
            tampered,
            Some(sign(&body, WEBHOOK_SECRET, now())),
        ),
        (
            "stale",
            body.clone(),
            Some(sign(&body, WEBHOOK_SECRET, now() - 600)),
        ),
        ("missing", body.clone(), None),
        (
            "malformed",
            body.clone(),
            Some("not-a-signature".to_owned()),
        ),
    ];
    for (case, sent, signature) in cases {
        let detail = expect_error(post_event(&server, &sent, signature.as_deref()), 400);
        assert!(!detail.is_empty(), "{case}");
        assert_eq!(tier(&tenant), "free", "{case} changed the tier");
    }
    // The refusals were the signatures': the same event signed well is applied (it was
    // not recorded as handled by the refused attempts).
    expect_status(
        post_event(&server, &body, Some(&sign(&body, WEBHOOK_SECRET, now()))),
        200,
    );
    assert_eq!(tier(&tenant), "pro");
    // A signed body that is not an event.
    let junk = "[1, 2, 3]";
    expect_error(
        post_event(&server, junk, Some(&sign(junk, WEBHOOK_SECRET, now()))),
        422,
    );
}

#[test]
fn keys_bodies_missing_configuration_and_stripe_failures() {
    let (fake, base) = fake_stripe();
    let server = billing_server(&base);
    let tenant = tenant_on(&server);
    for path in [
        "/v1/memory/stripe/checkout/create",
        "/v1/memory/stripe/portal",
    ] {
        expect_error(
            Client::new(&server.base_url, None).post(path, &json!({})),
            401,
        );
        let agent = expect_status(
            tenant.post("/v1/memory/keys", &json!({"label": "agent"})),
            201,
        );
        let agent = Client::new(
            &server.base_url,
            agent["key"].as_str().or(agent["api_key"].as_str()),
        );
        expect_error(agent.post(path, &json!({})), 403);
        for body in [
            json!({"unknown": 1}),
            json!({"success_url": "ftp://x"}),
            json!({"return_url": "not a url"}),
            json!([1]),
        ] {
            expect_error(tenant.post(path, &body), 422);
        }
    }
    // No body at all is the defaults too.
    let empty = reqwest::blocking::Client::new()
        .post(format!(
            "{}/v1/memory/stripe/checkout/create",
            server.base_url
        ))
        .bearer_auth(tenant.key())
        .send()
        .unwrap();
    expect_status(empty, 200);
    // The portal before any completed checkout: no customer yet.
    expect_error(tenant.post("/v1/memory/stripe/portal", &json!({})), 409);
    // Stripe refusing: 502 with its message.
    *fake.failing.lock().unwrap() = true;
    let detail = expect_error(
        tenant.post("/v1/memory/stripe/checkout/create", &json!({})),
        502,
    );
    assert!(detail.contains("declined"), "{detail}");

    // A server without billing: 503 for all three.
    let plain = tenant_on(shared());
    expect_error(
        plain.post("/v1/memory/stripe/checkout/create", &json!({})),
        503,
    );
    expect_error(plain.post("/v1/memory/stripe/portal", &json!({})), 503);
    let body = event("evt_x", "checkout.session.completed", json!({}));
    let shared_server = shared();
    expect_error(
        post_event(
            shared_server,
            &body,
            Some(&sign(&body, WEBHOOK_SECRET, now())),
        ),
        503,
    );
}
