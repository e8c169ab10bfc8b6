//! Outbound webhooks: the SSRF guard at configuration, signed deliveries of
//! memory.created/updated/deleted, tenant isolation, retries with the same delivery id, a
//! bounded number of attempts, writes that never wait for a receiver, and the outbox
//! across SIGKILL.
//!
//! Receivers listen on 127.0.0.1, so every test that delivers runs on a server with
//! `webhooks.allow_private_targets = true`; the refusal tests run on the shared server,
//! which keeps the default (refuse). No test sends anything beyond this machine: refused
//! URLs are refused before any connection.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::support::{
    create_memory, expect_error, expect_status, memories_path, new_tenant, start_in_process,
    temp_data_dir, tenant_on, unique, Client, ServerProcess, TestServer,
};

const CONFIG: &str = "/v1/memory/webhook/config";
/// Generous bound of every wait-until loop.
const WAIT: Duration = Duration::from_secs(15);
/// Attempts per event on the delivering server (small, so giving up is observable).
const MAX_ATTEMPTS: u32 = 3;

/// A server that may deliver to 127.0.0.1, retrying quickly.
fn delivering_server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        start_in_process(|config| {
            config.webhooks.allow_private_targets = true;
            config.webhooks.max_attempts = MAX_ATTEMPTS;
            config.webhooks.initial_backoff_ms = 50;
        })
    })
}

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    /// Lowercase header names.
    headers: HashMap<String, String>,
    body: Vec<u8>,
    /// The status it was answered with.
    status: u16,
    /// When the answer was sent (after the programmed delay).
    answered_at: Instant,
}

impl Received {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(String::as_str)
            .unwrap_or_default()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("delivery body is JSON")
    }
}

#[derive(Default)]
struct ReceiverState {
    received: Mutex<Vec<Received>>,
    /// Statuses to answer, in order; when empty, `fallback`.
    script: Mutex<VecDeque<u16>>,
    fallback: AtomicU16,
    /// How long to wait before answering.
    delay: Mutex<Duration>,
}

/// A webhook receiver on 127.0.0.1:0 with a programmable answer; it runs until the test
/// binary exits.
struct Receiver {
    url: String,
    state: Arc<ReceiverState>,
}

impl Receiver {
    fn start() -> Self {
        let state = Arc::new(ReceiverState::default());
        state.fallback.store(200, Ordering::SeqCst);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind receiver");
        listener.set_nonblocking(true).expect("nonblocking");
        let address = listener.local_addr().expect("address");
        let app = axum::Router::new()
            .fallback(receive)
            .with_state(state.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("receiver runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                axum::serve(listener, app).await.expect("receiver serves");
            });
        });
        Self {
            url: format!("http://{address}/hook"),
            state,
        }
    }

    fn answering(self, fallback: u16) -> Self {
        self.state.fallback.store(fallback, Ordering::SeqCst);
        self
    }

    fn scripted(self, statuses: &[u16]) -> Self {
        self.state.script.lock().unwrap().extend(statuses);
        self
    }

    fn delayed(self, delay: Duration) -> Self {
        *self.state.delay.lock().unwrap() = delay;
        self
    }

    fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }

    /// Waits until `done` holds for what was received; panics after [`WAIT`].
    #[track_caller]
    fn wait_for(&self, what: &str, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + WAIT;
        loop {
            let received = self.received();
            if done(&received) {
                return received;
            }
            assert!(
                Instant::now() < deadline,
                "within {WAIT:?} the receiver did not get {what}; it got {:?}",
                received
                    .iter()
                    .map(|each| String::from_utf8_lossy(&each.body).into_owned())
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

async fn receive(
    State(state): State<Arc<ReceiverState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let delay = *state.delay.lock().unwrap();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let status = state
        .script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| state.fallback.load(Ordering::SeqCst));
    let headers = headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                value.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    state.received.lock().unwrap().push(Received {
        path: uri.path().to_owned(),
        headers,
        body: body.to_vec(),
        status,
        answered_at: Instant::now(),
    });
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// HMAC-SHA256 (RFC 2104) written out here, so the test does not trust the service's own
/// implementation.
fn hmac_sha256_hex(key: &[u8], message: &[u8]) -> String {
    let mut block = [0_u8; 64];
    if key.len() > block.len() {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|each| each ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    let outer = Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize();
    hex::encode(outer)
}

#[track_caller]
fn assert_signed(delivery: &Received, secret: &str) {
    assert_eq!(
        delivery.header("x-service-signature"),
        hmac_sha256_hex(secret.as_bytes(), &delivery.body),
        "X-Service-Signature is not the hex HMAC-SHA256 of the body"
    );
}

/// Configures the webhook; returns the signing secret.
#[track_caller]
fn configure(client: &Client, url: &str) -> String {
    let body = expect_status(client.put(CONFIG, &json!({"url": url})), 200);
    assert_eq!(body["url"], url);
    assert_eq!(
        body["events"],
        json!(["memory.created", "memory.updated", "memory.deleted"])
    );
    let secret = body["secret"].as_str().expect("secret").to_owned();
    assert!(
        secret.starts_with("whsec_") && secret.len() > 40,
        "{secret}"
    );
    secret
}

fn events_of<'a>(received: &'a [Received], event: &str) -> Vec<&'a Received> {
    received
        .iter()
        .filter(|delivery| delivery.header("x-service-event") == event)
        .collect()
}

#[test]
fn private_targets_are_refused_when_configured() {
    let client = new_tenant();
    for url in [
        "http://127.0.0.1:1/h",
        "http://[::1]:1/h",
        "http://10.0.0.1/h",
        "http://169.254.169.254/latest/meta-data",
        "http://localhost:1/h",
    ] {
        let detail = expect_error(client.put(CONFIG, &json!({"url": url})), 422);
        assert!(
            detail.contains("address"),
            "{url}: the detail should say why: {detail}"
        );
        assert_eq!(
            expect_error(client.get(CONFIG), 404),
            "no webhook configured"
        );
    }
}

#[test]
fn invalid_config_bodies_are_422() {
    let client = new_tenant();
    for body in [
        json!({}),
        json!({"url": 5}),
        json!({"url": "not a url"}),
        json!({"url": "ftp://example.com/hook"}),
        json!({"url": "https://user:pass@example.com/hook"}),
        json!({"url": "https://example.com/hook", "secret": "mine"}),
    ] {
        expect_error(client.put(CONFIG, &body), 422);
    }
    expect_error(client.get(CONFIG), 404);
    expect_error(client.delete(CONFIG), 404);
}

#[test]
fn memory_events_are_delivered_signed_and_only_to_their_tenant() {
    let server = delivering_server();
    let (ours, theirs) = (Receiver::start(), Receiver::start());
    let client = tenant_on(server);
    let other = tenant_on(server);
    let secret = configure(&client, &ours.url);
    let their_secret = configure(&other, &theirs.url);
    assert_ne!(secret, their_secret);

    let shown = client.get(CONFIG);
    let shown_text = shown.text().unwrap();
    let shown: Value = serde_json::from_str(&shown_text).unwrap();
    assert_eq!(shown["url"], ours.url.as_str());
    assert!(shown.get("secret").is_none() && !shown_text.contains(&secret));

    let collection = unique("hooks");
    let their_memory = create_memory(&other, &collection, json!({"text": "Theirs only."}));
    let memory = create_memory(
        &client,
        &collection,
        json!({"text": "A memory that triggers webhooks.", "metadata": {"n": 1}}),
    );
    let id = memory["id"].as_str().unwrap();
    let path = format!("{}/{id}", memories_path(&collection));
    expect_status(
        client.patch(&path, &json!({"text": "An updated memory."})),
        200,
    );
    expect_status(client.delete(&path), 204);

    let received = ours.wait_for("created, updated and deleted", |received| {
        ["memory.created", "memory.updated", "memory.deleted"]
            .iter()
            .all(|event| !events_of(received, event).is_empty())
    });
    for delivery in &received {
        assert_signed(delivery, &secret);
        let body = delivery.json();
        assert_eq!(delivery.path, "/hook");
        assert_eq!(delivery.header("content-type"), "application/json");
        assert_eq!(delivery.header("user-agent"), "memvault-webhooks/0.1");
        assert_eq!(body["event"], delivery.header("x-service-event"));
        assert_eq!(body["id"], delivery.header("x-service-delivery"));
        assert_eq!(body["collection"], collection.as_str());
        assert_eq!(
            body["memory"]["id"], id,
            "another tenant's memory delivered"
        );
    }
    let text_of = |event| events_of(&received, event)[0].json()["memory"]["text"].clone();
    assert_eq!(
        text_of("memory.created"),
        "A memory that triggers webhooks."
    );
    assert_eq!(text_of("memory.updated"), "An updated memory.");
    assert_eq!(text_of("memory.deleted"), "An updated memory.");

    let theirs_received = theirs.wait_for("their created", |received| {
        !events_of(received, "memory.created").is_empty()
    });
    for delivery in &theirs_received {
        assert_signed(delivery, &their_secret);
        assert_eq!(delivery.json()["memory"]["id"], their_memory["id"]);
    }
}

#[test]
fn deleting_the_config_stops_deliveries() {
    let server = delivering_server();
    let (first, second) = (Receiver::start(), Receiver::start());
    let client = tenant_on(server);
    configure(&client, &first.url);
    let collection = unique("stop");
    create_memory(&client, &collection, json!({"text": "Delivered."}));
    first.wait_for("the first event", |received| !received.is_empty());
    expect_status(client.delete(CONFIG), 204);
    expect_error(client.get(CONFIG), 404);
    expect_error(client.delete(CONFIG), 404);
    let unheard = create_memory(&client, &collection, json!({"text": "Never delivered."}));
    // Events are handled in order: once the write made after reconfiguring has been
    // delivered, the one made while unconfigured has been dropped.
    let secret = configure(&client, &second.url);
    let heard = create_memory(&client, &collection, json!({"text": "Delivered again."}));
    let received = second.wait_for("the event after reconfiguring", |received| {
        received
            .iter()
            .any(|delivery| delivery.json()["memory"]["id"] == heard["id"])
    });
    for delivery in received.iter().chain(first.received().iter()) {
        assert_ne!(delivery.json()["memory"]["id"], unheard["id"]);
    }
    assert_signed(&received[0], &secret);
    assert_eq!(first.received().len(), 1);
}

#[test]
fn a_failed_delivery_is_retried_with_the_same_id_and_signature() {
    let receiver = Receiver::start().scripted(&[500, 500]);
    let client = tenant_on(delivering_server());
    let secret = configure(&client, &receiver.url);
    create_memory(&client, &unique("retry"), json!({"text": "Retried twice."}));
    let received = receiver.wait_for("three attempts", |received| received.len() >= 3);
    let statuses: Vec<u16> = received.iter().map(|delivery| delivery.status).collect();
    assert_eq!(statuses, vec![500, 500, 200]);
    let first = &received[0];
    for attempt in &received {
        assert_signed(attempt, &secret);
        assert_eq!(
            attempt.header("x-service-delivery"),
            first.header("x-service-delivery")
        );
        assert_eq!(attempt.body, first.body);
    }

    // The account sees each attempt, newest first, with its outcome; nothing is pending.
    let log = wait_for_attempts(&client, 3);
    let outcomes: Vec<(u64, &str)> = attempts(&log)
        .iter()
        .map(|attempt| {
            (
                attempt["attempt"].as_u64().unwrap_or(0),
                attempt["outcome"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        vec![(3, "delivered"), (2, "retrying"), (1, "retrying")],
        "{log:#}"
    );
    for attempt in attempts(&log) {
        assert_eq!(
            attempt["delivery_id"].as_str(),
            Some(first.header("x-service-delivery"))
        );
        assert_eq!(attempt["event"], json!("memory.created"));
    }
    assert!(attempts(&log)[1]["reason"]
        .as_str()
        .is_some_and(|reason| reason.contains("500")));
    assert_eq!(attempts(&log)[0]["reason"], Value::Null);
    assert_eq!(log["pending"], json!([]), "{log:#}");
    // Only the owner reads them.
    let created = expect_status(
        client.post(
            "/v1/memory/keys",
            &json!({"label": "agent", "read_only": false}),
        ),
        201,
    );
    let agent = Client::new(&delivering_server().base_url, created["key"].as_str());
    expect_error(agent.get("/v1/memory/webhook/deliveries"), 403);
}

fn attempts(log: &Value) -> &Vec<Value> {
    log["attempts"].as_array().expect("attempts")
}

/// The account's delivery log once it lists `count` attempts and nothing pending.
#[track_caller]
fn wait_for_attempts(client: &Client, count: usize) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let log = expect_status(client.get("/v1/memory/webhook/deliveries"), 200);
        if attempts(&log).len() >= count && log["pending"] == json!([]) {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "the log did not list {count} attempts: {log:#}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_receiver_that_always_fails_gets_exactly_max_attempts() {
    let receiver = Receiver::start().answering(500);
    let client = tenant_on(delivering_server());
    configure(&client, &receiver.url);
    create_memory(
        &client,
        &unique("give-up"),
        json!({"text": "Never accepted."}),
    );
    receiver.wait_for("max_attempts attempts", |received| {
        received.len() >= MAX_ATTEMPTS as usize
    });
    // A further attempt would come 200 ms (50 ms × 2²) after the last one; none may
    // come at all.
    std::thread::sleep(Duration::from_millis(1500));
    let received = receiver.received();
    assert_eq!(received.len(), MAX_ATTEMPTS as usize);
    assert!(received
        .iter()
        .all(|attempt| attempt.header("x-service-delivery")
            == received[0].header("x-service-delivery")));
    let log = wait_for_attempts(&client, MAX_ATTEMPTS as usize);
    assert_eq!(attempts(&log).len(), MAX_ATTEMPTS as usize, "{log:#}");
    assert_eq!(
        attempts(&log)[0]["outcome"],
        json!("failed"),
        "given up: {log:#}"
    );
    assert_eq!(attempts(&log)[1]["outcome"], json!("retrying"), "{log:#}");
}

#[test]
fn writes_do_not_wait_for_a_slow_receiver() {
    let receiver = Receiver::start().delayed(Duration::from_secs(3));
    let client = tenant_on(delivering_server());
    configure(&client, &receiver.url);
    let memory = create_memory(&client, &unique("slow"), json!({"text": "Fast write."}));
    let written_at = Instant::now();
    let received = receiver.wait_for("the slow answer", |received| !received.is_empty());
    assert_eq!(received[0].json()["memory"]["id"], memory["id"]);
    assert!(
        written_at < received[0].answered_at,
        "the create answered only after the receiver did"
    );
}

#[test]
fn a_delivery_pending_at_kill_9_is_sent_after_restart() {
    const KEY: &str = "mv_webhook_outbox_admin_key_0123456789";
    let (_guard, data_dir) = temp_data_dir();
    let receiver = Receiver::start().answering(503);
    let environment = |backoff_ms: &'static str| {
        [
            ("MEMVAULT_BOOTSTRAP_KEY", KEY),
            ("MEMVAULT__WEBHOOKS__ALLOW_PRIVATE_TARGETS", "true"),
            ("MEMVAULT__WEBHOOKS__MAX_ATTEMPTS", "100"),
            ("MEMVAULT__WEBHOOKS__INITIAL_BACKOFF_MS", backoff_ms),
        ]
    };
    let mut server = ServerProcess::start(&data_dir, &environment("60000")).expect("server starts");
    let client = server.client(KEY);
    let secret = configure(&client, &receiver.url);
    let memory = create_memory(&client, "outbox", json!({"text": "Survives SIGKILL."}));
    receiver.wait_for("the first (refused) attempt", |received| {
        !received.is_empty()
    });
    server.kill_hard();
    let refused = receiver.received();
    assert!(refused.iter().all(|attempt| attempt.status == 503));
    receiver.state.fallback.store(200, Ordering::SeqCst);

    let _restarted = ServerProcess::start(&data_dir, &environment("50")).expect("restarts");
    let received = receiver.wait_for("the delivery after the restart", |received| {
        received.iter().any(|attempt| attempt.status == 200)
    });
    let delivered = received
        .iter()
        .find(|attempt| attempt.status == 200)
        .unwrap();
    assert_signed(delivered, &secret);
    assert_eq!(delivered.header("x-service-event"), "memory.created");
    assert_eq!(
        delivered.header("x-service-delivery"),
        refused[0].header("x-service-delivery")
    );
    assert_eq!(delivered.json()["memory"]["id"], memory["id"]);
}
