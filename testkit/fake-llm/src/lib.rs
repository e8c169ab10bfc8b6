//! memvault-fake-llm, for tests: a scripted fake OpenAI-compatible server.
//!
//! It listens on `127.0.0.1:<random port>` on a thread of its own (so it works from async
//! and blocking tests alike), answers `POST .../chat/completions` with the replies queued
//! by [`FakeLlmServer::push`] in order, then with the fallback (by default a 500), and
//! records every request it receives.
//!
//! ```ignore
//! let server = FakeLlmServer::start();
//! server.push(FakeReply::chat(r#"{"query": "favorite color"}"#));
//! server.push(FakeReply::text(429, "slow down").header("retry-after", "0"));
//! // point a client or the service at server.base_url() ...
//! assert_eq!(server.requests()[0].header("authorization"), None);
//! ```

use std::collections::VecDeque;
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct FakeReply {
    pub status: u16,
    /// Extra response headers (`content-type: application/json` is always set unless
    /// overridden here).
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Wait this long before answering (to exercise client timeouts).
    pub delay: Duration,
}

impl FakeReply {
    /// A 200 chat completion whose `choices[0].message.content` is `content`, with usage
    /// 10 prompt and 5 completion tokens (and no `model`, so clients report their own).
    pub fn chat(content: impl Into<String>) -> Self {
        Self::chat_with_usage(content, 10, 5)
    }

    /// A 200 chat completion with the given usage.
    pub fn chat_with_usage(
        content: impl Into<String>,
        prompt_tokens: u64,
        completion_tokens: u64,
    ) -> Self {
        Self::json(
            200,
            json!({
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": content.into()},
                    "finish_reason": "stop",
                }],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }),
        )
    }

    /// Any status with a JSON body.
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    /// Any status with a raw body (sent as `application/json` unless a header says otherwise).
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A request the fake server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// The path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
    pub raw_body: String,
}

impl RecordedRequest {
    /// The first value of a header (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// `(role, content)` of each message in the body.
    pub fn messages(&self) -> Vec<(String, String)> {
        self.body["messages"]
            .as_array()
            .map(|messages| {
                messages
                    .iter()
                    .map(|message| {
                        (
                            message["role"].as_str().unwrap_or_default().to_owned(),
                            message["content"].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The content of the last `user` message ("" when there is none).
    pub fn last_user_message(&self) -> String {
        self.messages()
            .into_iter()
            .rev()
            .find(|(role, _)| role == "user")
            .map(|(_, content)| content)
            .unwrap_or_default()
    }

    /// All message contents joined, for "does the prompt mention X" assertions.
    pub fn prompt_text(&self) -> String {
        self.messages()
            .into_iter()
            .map(|(_, content)| content)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

type Responder = Arc<dyn Fn(&RecordedRequest) -> FakeReply + Send + Sync>;

struct Shared {
    queue: Mutex<VecDeque<FakeReply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    fallback: Mutex<Responder>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The fake server; it stops when dropped.
pub struct FakeLlmServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl FakeLlmServer {
    /// Starts a server on a random local port. Panics if it cannot (tests only).
    pub fn start() -> Self {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("bind the fake LLM server");
        listener
            .set_nonblocking(true)
            .expect("make the fake LLM listener non-blocking");
        let address = listener.local_addr().expect("fake LLM server address");
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            fallback: Mutex::new(Arc::new(|_: &RecordedRequest| {
                FakeReply::json(
                    500,
                    json!({"error": {"message": "fake LLM server: no scripted reply left"}}),
                )
            })),
        });
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("fake-llm-server".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("fake LLM server runtime");
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .expect("fake LLM server listener");
                    let app = Router::new().fallback(handle).with_state(state);
                    tokio::select! {
                        _ = axum::serve(listener, app).into_future() => {}
                        _ = stopped => {}
                    }
                });
            })
            .expect("spawn the fake LLM server thread");
        Self {
            address,
            shared,
            shutdown: Some(shutdown),
        }
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:<port>/v1`: what a client's `base_url` should be.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Queues a reply; queued replies are used in order, one per request.
    pub fn push(&self, reply: FakeReply) {
        lock(&self.shared.queue).push_back(reply);
    }

    /// Queues a 200 chat completion with `content`.
    pub fn push_chat(&self, content: impl Into<String>) {
        self.push(FakeReply::chat(content));
    }

    /// What to answer once the queue is empty (by default a 500). The responder sees the
    /// request, so it can answer by prompt (e.g. extraction vs rerank).
    pub fn set_fallback(
        &self,
        responder: impl Fn(&RecordedRequest) -> FakeReply + Send + Sync + 'static,
    ) {
        *lock(&self.shared.fallback) = Arc::new(responder);
    }

    /// Replies still queued.
    pub fn pending(&self) -> usize {
        lock(&self.shared.queue).len()
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.shared.requests).len()
    }
}

impl Drop for FakeLlmServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let recorded = RecordedRequest {
        method: method.to_string(),
        path: uri.path().to_owned(),
        headers: headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_str(&raw_body).unwrap_or(Value::Null),
        raw_body,
    };
    let serves = method == Method::POST && recorded.path.ends_with("/chat/completions");
    let reply = if serves {
        let queued = lock(&shared.queue).pop_front();
        queued.unwrap_or_else(|| {
            let fallback = Arc::clone(&lock(&shared.fallback));
            fallback(&recorded)
        })
    } else {
        FakeReply::json(
            404,
            json!({"error": {"message": "fake LLM server: not found"}}),
        )
    };
    lock(&shared.requests).push(recorded);

    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, reply.body).into_response();
    let response_headers = response.headers_mut();
    response_headers.insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    for (name, value) in &reply.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            response_headers.insert(name, value);
        }
    }
    response
}
