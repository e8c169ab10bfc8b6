//! An OpenAI-compatible chat-completions client (`POST {base_url}/chat/completions`).
//!
//! - `Authorization: Bearer <api_key>` when a key is configured.
//! - Each attempt has the configured timeout, covering connect to the end of the body.
//! - Timeouts, transport errors, 429 and 5xx are retried up to `max_retries` times, waiting
//!   `backoff`, then twice that, and so on (capped at 10 s); a `Retry-After` (seconds) on a
//!   429 or 503 replaces the backoff (also capped at 10 s). Other 4xx are not retried.
//! - Endpoints that reject `max_tokens` in favour of `max_completion_tokens`, or that reject
//!   a `temperature`, are adapted to once (on their 400) and remembered; that resend is not
//!   counted as a retry.
//! - [`Llm::complete_raw`] (the chat proxy) posts the caller's body as it is, with the same
//!   timeout and retries but no adaptation, and returns the endpoint's JSON object whole.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderValue, AUTHORIZATION, RETRY_AFTER};
use reqwest::StatusCode;
use serde_json::{json, Map, Value};

use super::{
    truncate_chars, ChatRequest, ChatResponse, Llm, LlmConfig, LlmError, RawCompletion, TokenUsage,
};

/// The most a retry waits, whatever the backoff or `Retry-After` says.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(10);
/// A successful response larger than this is refused.
const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
/// How much of an error response is read, and how much of it is kept in the error.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
const ERROR_BODY_CHARS: usize = 300;

/// A client for one OpenAI-compatible endpoint and model. Cheap to share behind an `Arc`.
pub struct OpenAiClient {
    http: reqwest::Client,
    endpoint: reqwest::Url,
    config: LlmConfig,
    authorization: Option<HeaderValue>,
    /// Learnt from a 400: send `max_completion_tokens` instead of `max_tokens`.
    use_max_completion_tokens: AtomicBool,
    /// Learnt from a 400: the model only accepts its default temperature.
    omit_temperature: AtomicBool,
}

impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OpenAiClient")
            .field("endpoint", &self.endpoint.as_str())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OpenAiClient {
    /// Checks the configuration (an http(s) base URL, a model, a header-safe key) and builds
    /// the client. Makes no request: see [`super::self_test`] for a live check.
    pub fn new(config: LlmConfig) -> Result<Self, LlmError> {
        if config.model.trim().is_empty() {
            return Err(LlmError::Config("the model name is empty".to_owned()));
        }
        let endpoint = chat_completions_url(&config.base_url)?;
        let authorization = match config.api_key.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    LlmError::Config(
                        "the API key contains characters that cannot be sent in an HTTP header"
                            .to_owned(),
                    )
                })?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout.min(Duration::from_secs(10)))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("memvault/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| {
                LlmError::Config(format!(
                    "could not build the HTTP client: {}",
                    describe(error)
                ))
            })?;
        Ok(Self {
            http,
            endpoint,
            config,
            authorization,
            use_max_completion_tokens: AtomicBool::new(false),
            omit_temperature: AtomicBool::new(false),
        })
    }

    /// The URL every call is POSTed to.
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    fn wire_body(&self, request: &ChatRequest) -> Value {
        let mut body = json!({
            "model": self.config.model,
            "messages": request.messages,
        });
        if let Some(temperature) = request.temperature {
            if !self.omit_temperature.load(Ordering::Relaxed) {
                // f32 → f64 without the binary noise (0.2f32 is 0.200000003).
                body["temperature"] = json!((f64::from(temperature) * 1000.0).round() / 1000.0);
            }
        }
        if let Some(max_tokens) = request.max_tokens {
            let field = if self.use_max_completion_tokens.load(Ordering::Relaxed) {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body[field] = json!(max_tokens);
        }
        if request.json {
            body["response_format"] = json!({"type": "json_object"});
        }
        body
    }

    /// After a 400, whether its message names a parameter this client can stop sending;
    /// if so the change is remembered and the request can be sent again.
    fn adapt_to_rejection(&self, request: &ChatRequest, body: &str) -> bool {
        let body = body.to_ascii_lowercase();
        if request.max_tokens.is_some()
            && body.contains("max_completion_tokens")
            && !self.use_max_completion_tokens.swap(true, Ordering::Relaxed)
        {
            tracing::info!(model = %self.config.model, "endpoint wants max_completion_tokens");
            return true;
        }
        let rejects_temperature = body.contains("temperature")
            && [
                "unsupported",
                "not supported",
                "does not support",
                "only the default",
            ]
            .iter()
            .any(|phrase| body.contains(phrase));
        if request.temperature.is_some()
            && rejects_temperature
            && !self.omit_temperature.swap(true, Ordering::Relaxed)
        {
            tracing::info!(model = %self.config.model, "endpoint rejects temperature; omitting it");
            return true;
        }
        false
    }

    async fn attempt(&self, request: &ChatRequest) -> Result<ChatResponse, Failure> {
        let bytes = self
            .post(&self.wire_body(request), |body| {
                self.adapt_to_rejection(request, body)
            })
            .await?;
        self.parse_response(&bytes).map_err(Failure::fatal)
    }

    async fn attempt_raw(&self, body: &Value) -> Result<RawCompletion, Failure> {
        // A pass-through sends what the caller chose: no adaptation to rejections.
        let bytes = self.post(body, |_| false).await?;
        self.parse_raw_response(&bytes).map_err(Failure::fatal)
    }

    /// One POST of `body`; the successful response's bytes. `adapt` sees a 400's body and
    /// says whether the client changed what it sends (so the request can go again at once).
    async fn post(
        &self,
        body: &Value,
        adapt: impl FnOnce(&str) -> bool,
    ) -> Result<Vec<u8>, Failure> {
        let mut builder = self.http.post(self.endpoint.clone()).json(body);
        if let Some(authorization) = &self.authorization {
            builder = builder.header(AUTHORIZATION, authorization.clone());
        }
        let response = builder.send().await.map_err(Failure::from_reqwest)?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(&response);
            let body = read_capped(response, MAX_ERROR_BODY_BYTES)
                .await
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_default();
            let adapted = status == StatusCode::BAD_REQUEST && adapt(&body);
            return Err(Failure {
                error: LlmError::Status {
                    status: status.as_u16(),
                    body: self.redact(truncate_chars(body.trim(), ERROR_BODY_CHARS)),
                },
                retryable: status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error(),
                retry_after: match status {
                    StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => retry_after,
                    _ => None,
                },
                adapted,
            });
        }
        match read_capped(response, MAX_RESPONSE_BYTES).await {
            Ok(bytes) => Ok(bytes),
            Err(ReadError::TooLarge) => Err(Failure::fatal(LlmError::InvalidResponse(format!(
                "the response is larger than {} MiB",
                MAX_RESPONSE_BYTES / (1024 * 1024)
            )))),
            Err(ReadError::Http(error)) => Err(Failure::from_reqwest(error)),
        }
    }

    /// A pass-through's answer: a JSON object with a `choices` array, kept whole.
    fn parse_raw_response(&self, bytes: &[u8]) -> Result<RawCompletion, LlmError> {
        let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(bytes) else {
            return Err(LlmError::InvalidResponse(
                "the response body is not a JSON object".to_owned(),
            ));
        };
        if !body.get("choices").is_some_and(Value::is_array) {
            if let Some(message) = body
                .get("error")
                .and_then(|error| error.get("message"))
                .and_then(Value::as_str)
            {
                return Err(LlmError::InvalidResponse(format!(
                    "the endpoint reported an error: {}",
                    self.redact(truncate_chars(message, ERROR_BODY_CHARS))
                )));
            }
            return Err(LlmError::InvalidResponse(
                "the response has no choices array".to_owned(),
            ));
        }
        let tokens = |field: &str| {
            body.get("usage")
                .and_then(|usage| usage.get(field))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let usage = TokenUsage {
            prompt_tokens: tokens("prompt_tokens"),
            completion_tokens: tokens("completion_tokens"),
        };
        Ok(RawCompletion { body, usage })
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retries are spent.
    async fn with_retries<T, Attempt, Outcome>(&self, mut attempt: Attempt) -> Result<T, LlmError>
    where
        Attempt: FnMut() -> Outcome,
        Outcome: std::future::Future<Output = Result<T, Failure>>,
    {
        let mut retries = 0;
        let mut adaptations = 0;
        loop {
            let failure = match attempt().await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            if failure.adapted && adaptations < 2 {
                adaptations += 1;
                continue;
            }
            if !failure.retryable || retries >= self.config.max_retries {
                return Err(failure.error);
            }
            let delay = failure
                .retry_after
                .unwrap_or_else(|| backoff_delay(self.config.backoff, retries));
            retries += 1;
            tracing::warn!(
                model = %self.config.model,
                error = %failure.error,
                retry = retries,
                delay_ms = delay.as_millis() as u64,
                "LLM call failed; retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    fn parse_response(&self, bytes: &[u8]) -> Result<ChatResponse, LlmError> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|_| LlmError::InvalidResponse("the response body is not JSON".to_owned()))?;
        let Some(content) = value
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
        else {
            if let Some(message) = value.pointer("/error/message").and_then(Value::as_str) {
                return Err(LlmError::InvalidResponse(format!(
                    "the endpoint reported an error: {}",
                    self.redact(truncate_chars(message, ERROR_BODY_CHARS))
                )));
            }
            return Err(LlmError::InvalidResponse(
                "the response has no choices[0].message.content".to_owned(),
            ));
        };
        let tokens = |pointer: &str| value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
        Ok(ChatResponse {
            content: content.to_owned(),
            model: value
                .get("model")
                .and_then(Value::as_str)
                .filter(|model| !model.trim().is_empty())
                .unwrap_or(&self.config.model)
                .to_owned(),
            usage: TokenUsage {
                prompt_tokens: tokens("/usage/prompt_tokens"),
                completion_tokens: tokens("/usage/completion_tokens"),
            },
        })
    }

    /// Removes the API key from text that came back from the endpoint.
    fn redact(&self, text: &str) -> String {
        match self.config.api_key.as_deref().map(str::trim) {
            Some(key) if key.len() >= 4 => text.replace(key, "[redacted]"),
            _ => text.to_owned(),
        }
    }
}

#[async_trait]
impl Llm for OpenAiClient {
    fn model(&self) -> &str {
        &self.config.model
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        self.with_retries(|| self.attempt(&request)).await
    }

    async fn complete_raw(&self, body: Map<String, Value>) -> Result<RawCompletion, LlmError> {
        let mut body = body;
        if !body.get("model").is_some_and(Value::is_string) {
            body.insert("model".to_owned(), json!(self.config.model));
        }
        let body = Value::Object(body);
        self.with_retries(|| self.attempt_raw(&body)).await
    }
}

/// One failed attempt and what to do about it.
struct Failure {
    error: LlmError,
    retryable: bool,
    retry_after: Option<Duration>,
    /// The client changed what it sends; resend at once.
    adapted: bool,
}

impl Failure {
    fn fatal(error: LlmError) -> Self {
        Self {
            error,
            retryable: false,
            retry_after: None,
            adapted: false,
        }
    }

    fn from_reqwest(error: reqwest::Error) -> Self {
        let error = if error.is_timeout() {
            LlmError::Timeout
        } else {
            LlmError::Transport(describe(error))
        };
        Self {
            error,
            retryable: true,
            retry_after: None,
            adapted: false,
        }
    }
}

/// `{base_url}/chat/completions`, for an http or https base URL.
fn chat_completions_url(base_url: &str) -> Result<reqwest::Url, LlmError> {
    let base = base_url.trim().trim_end_matches('/');
    let url = reqwest::Url::parse(&format!("{base}/chat/completions"))
        .map_err(|error| LlmError::Config(format!("the base URL is not a valid URL: {error}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(LlmError::Config(
            "the base URL must be an http:// or https:// URL".to_owned(),
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(LlmError::Config(
            "the base URL must not have a query or fragment".to_owned(),
        ));
    }
    Ok(url)
}

fn backoff_delay(initial: Duration, retries_so_far: u32) -> Duration {
    memvault_types::Backoff::new(initial, MAX_RETRY_DELAY).delay(retries_so_far.saturating_add(1))
}

/// A `Retry-After` given in seconds (an HTTP date is ignored), capped.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let seconds: f64 = response
        .headers()
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (seconds.is_finite() && seconds >= 0.0)
        .then(|| Duration::from_secs_f64(seconds.min(MAX_RETRY_DELAY.as_secs_f64())))
}

enum ReadError {
    TooLarge,
    Http(reqwest::Error),
}

async fn read_capped(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(ReadError::Http)? {
        if bytes.len() + chunk.len() > limit {
            return Err(ReadError::TooLarge);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// A reqwest error and its causes, without the URL (which may carry credentials).
fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut parts: Vec<String> = vec![error.to_string()];
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        let text = cause.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use memvault_fake_llm::{FakeLlmServer, FakeReply};

    use super::super::{test_config, ChatMessage};
    use super::*;

    fn request() -> ChatRequest {
        ChatRequest {
            messages: vec![ChatMessage::system("be brief"), ChatMessage::user("hi")],
            json: false,
            temperature: None,
            max_tokens: None,
        }
    }

    fn client(server: &FakeLlmServer) -> OpenAiClient {
        OpenAiClient::new(test_config(server, "test-model")).unwrap()
    }

    #[tokio::test]
    async fn success_reports_content_model_and_usage() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::chat_with_usage("hello there", 21, 7));
        let mut config = test_config(&server, "test-model");
        config.api_key = Some("sk-test-key".to_owned());
        let client = OpenAiClient::new(config).unwrap();

        let response = client
            .chat(ChatRequest {
                json: true,
                temperature: Some(0.2),
                max_tokens: Some(64),
                ..request()
            })
            .await
            .unwrap();
        assert_eq!(response.content, "hello there");
        assert_eq!(response.model, "test-model");
        assert_eq!(
            response.usage,
            TokenUsage {
                prompt_tokens: 21,
                completion_tokens: 7
            }
        );

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let recorded = &requests[0];
        assert_eq!(recorded.method, "POST");
        assert_eq!(recorded.path, "/v1/chat/completions");
        assert_eq!(recorded.header("authorization"), Some("Bearer sk-test-key"));
        assert_eq!(recorded.header("content-type"), Some("application/json"));
        assert_eq!(recorded.body["model"], "test-model");
        assert_eq!(recorded.body["response_format"]["type"], "json_object");
        assert_eq!(recorded.body["temperature"], 0.2);
        assert_eq!(recorded.body["max_tokens"], 64);
        assert_eq!(recorded.body["messages"][0]["role"], "system");
        assert_eq!(recorded.body["messages"][1]["content"], "hi");
    }

    #[tokio::test]
    async fn optional_fields_and_auth_are_left_out() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::chat("ok"));
        client(&server).chat(request()).await.unwrap();
        let recorded = &server.requests()[0];
        assert_eq!(recorded.header("authorization"), None);
        let body = recorded.body.as_object().unwrap();
        for field in ["temperature", "max_tokens", "response_format"] {
            assert!(!body.contains_key(field), "{field} was sent");
        }
    }

    #[tokio::test]
    async fn a_trailing_slash_in_the_base_url_is_fine() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::chat("ok"));
        let mut config = test_config(&server, "test-model");
        config.base_url.push('/');
        let client = OpenAiClient::new(config).unwrap();
        assert!(client.endpoint().ends_with("/v1/chat/completions"));
        client.chat(request()).await.unwrap();
        assert_eq!(server.requests()[0].path, "/v1/chat/completions");
    }

    #[tokio::test]
    async fn missing_usage_counts_as_zero() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::json(
            200,
            json!({"model": "served-model-2024", "choices": [{"message": {"role": "assistant", "content": "hi"}}]}),
        ));
        let response = client(&server).chat(request()).await.unwrap();
        assert_eq!(response.usage, TokenUsage::default());
        assert_eq!(response.content, "hi");
        assert_eq!(response.model, "served-model-2024");
    }

    #[tokio::test]
    async fn missing_content_is_an_invalid_response() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::json(200, json!({"choices": []})));
        server.push(FakeReply::json(
            200,
            json!({"choices": [{"message": {"role": "assistant", "content": null}}]}),
        ));
        server.push(FakeReply::text(200, "<html>hello</html>"));
        server.push(FakeReply::json(
            200,
            json!({"error": {"message": "model overloaded"}}),
        ));
        let client = client(&server);
        for _ in 0..4 {
            let error = client.chat(request()).await.unwrap_err();
            assert!(matches!(error, LlmError::InvalidResponse(_)), "{error}");
        }
        // Not retried.
        assert_eq!(server.request_count(), 4);
    }

    #[tokio::test]
    async fn retries_429_and_500_then_succeeds() {
        let server = FakeLlmServer::start();
        server.push(
            FakeReply::json(429, json!({"error": {"message": "slow down"}}))
                .header("retry-after", "0"),
        );
        server.push(FakeReply::text(500, "boom"));
        server.push(FakeReply::chat_with_usage("finally", 5, 1));
        let response = client(&server).chat(request()).await.unwrap();
        assert_eq!(response.content, "finally");
        assert_eq!(server.request_count(), 3);
    }

    #[tokio::test]
    async fn retry_after_is_honoured() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::text(429, "slow down").header("retry-after", "1"));
        server.push(FakeReply::chat("ok"));
        let started = Instant::now();
        client(&server).chat(request()).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(950));
        assert_eq!(server.request_count(), 2);
    }

    #[tokio::test]
    async fn gives_up_after_max_retries() {
        let server = FakeLlmServer::start();
        for _ in 0..5 {
            server.push(FakeReply::text(503, "unavailable"));
        }
        let error = client(&server).chat(request()).await.unwrap_err();
        assert_eq!(
            error,
            LlmError::Status {
                status: 503,
                body: "unavailable".to_owned()
            }
        );
        // One attempt and two retries (the fake config's max_retries).
        assert_eq!(server.request_count(), 3);
    }

    #[tokio::test]
    async fn client_errors_are_not_retried() {
        for status in [400, 401, 403, 404, 422] {
            let server = FakeLlmServer::start();
            server.push(FakeReply::json(
                status,
                json!({"error": {"message": "nope"}}),
            ));
            server.push(FakeReply::chat("should not be reached"));
            let error = client(&server).chat(request()).await.unwrap_err();
            match error {
                LlmError::Status { status: got, body } => {
                    assert_eq!(got, status);
                    assert!(body.contains("nope"));
                }
                other => panic!("unexpected {other:?}"),
            }
            assert_eq!(server.request_count(), 1, "status {status}");
        }
    }

    #[tokio::test]
    async fn error_bodies_are_truncated_and_redacted() {
        let server = FakeLlmServer::start();
        let long = format!("bad key sk-secret-value {}", "x".repeat(2000));
        server.push(FakeReply::text(401, long));
        let mut config = test_config(&server, "test-model");
        config.api_key = Some("sk-secret-value".to_owned());
        let error = OpenAiClient::new(config)
            .unwrap()
            .chat(request())
            .await
            .unwrap_err();
        let LlmError::Status { body, .. } = &error else {
            panic!("unexpected {error:?}");
        };
        assert!(body.chars().count() <= ERROR_BODY_CHARS);
        assert!(!error.to_string().contains("sk-secret-value"));
        assert!(body.contains("[redacted]"));
    }

    #[tokio::test]
    async fn a_slow_endpoint_times_out() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::chat("too late").delay(Duration::from_secs(5)));
        let mut config = test_config(&server, "test-model");
        config.timeout = Duration::from_millis(200);
        config.max_retries = 0;
        let error = OpenAiClient::new(config)
            .unwrap()
            .chat(request())
            .await
            .unwrap_err();
        // The reply comes after 5 s: a Timeout error can only be the client's own.
        assert_eq!(error, LlmError::Timeout);
        assert_eq!(server.request_count(), 1);
    }

    #[tokio::test]
    async fn timeouts_are_retried() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::chat("too late").delay(Duration::from_secs(5)));
        server.push(FakeReply::chat("in time"));
        let mut config = test_config(&server, "test-model");
        config.timeout = Duration::from_millis(200);
        let response = OpenAiClient::new(config)
            .unwrap()
            .chat(request())
            .await
            .unwrap();
        assert_eq!(response.content, "in time");
        assert_eq!(server.request_count(), 2);
    }

    #[tokio::test]
    async fn unreachable_endpoints_are_transport_errors() {
        // Bind then drop a listener so that the port is (almost certainly) closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut config = LlmConfig::new(format!("http://127.0.0.1:{port}/v1"), "m", None);
        config.max_retries = 1;
        config.backoff = Duration::from_millis(5);
        let error = OpenAiClient::new(config)
            .unwrap()
            .chat(request())
            .await
            .unwrap_err();
        assert!(matches!(error, LlmError::Transport(_)), "{error}");
        assert!(!error.to_string().contains("127.0.0.1"), "{error}");
    }

    #[tokio::test]
    async fn adapts_to_max_completion_tokens_and_fixed_temperature() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::json(
            400,
            json!({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."}}),
        ));
        server.push(FakeReply::json(
            400,
            json!({"error": {"message": "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported."}}),
        ));
        server.push(FakeReply::chat("ok"));
        server.push(FakeReply::chat("ok again"));
        let mut config = test_config(&server, "test-model");
        config.max_retries = 0;
        let client = OpenAiClient::new(config).unwrap();
        let tuned = ChatRequest {
            temperature: Some(0.0),
            max_tokens: Some(10),
            ..request()
        };
        assert_eq!(client.chat(tuned.clone()).await.unwrap().content, "ok");
        assert_eq!(client.chat(tuned).await.unwrap().content, "ok again");
        let requests = server.requests();
        assert_eq!(requests.len(), 4);
        assert_eq!(requests[0].body["max_tokens"], 10);
        assert_eq!(requests[1].body["max_completion_tokens"], 10);
        assert!(requests[1].body.get("max_tokens").is_none());
        assert!(requests[2].body.get("temperature").is_none());
        assert!(requests[3].body.get("temperature").is_none());
        assert_eq!(requests[3].body["max_completion_tokens"], 10);
    }

    fn raw_body(model: Option<&str>) -> Map<String, Value> {
        let mut body = Map::new();
        body.insert(
            "messages".to_owned(),
            json!([{"role": "user", "content": "hi", "name": "ana"}]),
        );
        body.insert("top_p".to_owned(), json!(0.5));
        if let Some(model) = model {
            body.insert("model".to_owned(), json!(model));
        }
        body
    }

    #[tokio::test]
    async fn raw_completions_pass_the_body_through_and_return_the_object_whole() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::json(
            200,
            json!({"id": "chatcmpl-1", "object": "chat.completion", "system_fingerprint": "fp",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": "yo"}}],
                   "usage": {"prompt_tokens": 9, "completion_tokens": 2}}),
        ));
        server.push(FakeReply::chat("again"));
        let mut config = test_config(&server, "test-model");
        config.api_key = Some("sk-platform".to_owned());
        let client = OpenAiClient::new(config).unwrap();

        let completion = client.complete_raw(raw_body(None)).await.unwrap();
        assert_eq!(completion.body["system_fingerprint"], json!("fp"));
        assert_eq!(completion.body["id"], json!("chatcmpl-1"));
        assert_eq!(
            completion.usage,
            TokenUsage {
                prompt_tokens: 9,
                completion_tokens: 2
            }
        );
        client.complete_raw(raw_body(Some("other"))).await.unwrap();
        let requests = server.requests();
        assert_eq!(
            requests[0].header("authorization"),
            Some("Bearer sk-platform")
        );
        assert_eq!(requests[0].body["model"], json!("test-model"));
        assert_eq!(requests[0].body["top_p"], json!(0.5));
        assert_eq!(requests[0].body["messages"][0]["name"], json!("ana"));
        assert_eq!(requests[1].body["model"], json!("other"));
    }

    #[tokio::test]
    async fn raw_completions_retry_5xx_not_4xx_and_refuse_non_completions() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::text(502, "bad gateway"));
        server.push(FakeReply::chat("ok"));
        server.push(FakeReply::json(
            400,
            json!({"error": {"message": "Unsupported parameter: 'max_tokens'; use 'max_completion_tokens'"}}),
        ));
        server.push(FakeReply::json(
            200,
            json!({"error": {"message": "overloaded"}}),
        ));
        server.push(FakeReply::text(200, "not json"));
        let client = client(&server);
        assert!(client.complete_raw(raw_body(None)).await.is_ok());
        assert_eq!(server.request_count(), 2);
        let mut with_max_tokens = raw_body(None);
        with_max_tokens.insert("max_tokens".to_owned(), json!(5));
        let error = client.complete_raw(with_max_tokens).await.unwrap_err();
        assert!(
            matches!(error, LlmError::Status { status: 400, .. }),
            "{error}"
        );
        // Not adapted or retried: the caller chose what to send.
        assert_eq!(server.request_count(), 3);
        let error = client.complete_raw(raw_body(None)).await.unwrap_err();
        assert!(error.to_string().contains("overloaded"), "{error}");
        let error = client.complete_raw(raw_body(None)).await.unwrap_err();
        assert!(matches!(error, LlmError::InvalidResponse(_)), "{error}");
        assert_eq!(server.request_count(), 5);
    }

    #[test]
    fn configs_are_checked() {
        let config = |base_url: &str, model: &str, key: Option<&str>| {
            OpenAiClient::new(LlmConfig::new(base_url, model, key.map(str::to_owned)))
        };
        assert!(config("https://api.openai.com/v1", "gpt-4o-mini", Some("sk-x")).is_ok());
        assert_eq!(
            config("https://api.openai.com/v1/", "m", None)
                .unwrap()
                .endpoint(),
            "https://api.openai.com/v1/chat/completions"
        );
        for (base_url, model, key) in [
            ("not a url", "m", None),
            ("ftp://example.com/v1", "m", None),
            ("https://example.com/v1?x=1", "m", None),
            ("https://example.com/v1", " ", None),
            ("https://example.com/v1", "m", Some("bad\nkey")),
        ] {
            let error = config(base_url, model, key).unwrap_err();
            assert!(matches!(error, LlmError::Config(_)), "{base_url} {error}");
        }
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let initial = Duration::from_millis(500);
        assert_eq!(backoff_delay(initial, 0), Duration::from_millis(500));
        assert_eq!(backoff_delay(initial, 1), Duration::from_millis(1000));
        assert_eq!(backoff_delay(initial, 2), Duration::from_millis(2000));
        assert_eq!(backoff_delay(initial, 40), MAX_RETRY_DELAY);
    }
}
