//! Talking to a language model: the [`Llm`] trait the rest of the service calls, an
//! OpenAI-compatible chat-completions client ([`OpenAiClient`]), and the prompts and
//! response parsers of each LLM-backed feature ([`prompts`]).
//!
//! Every call reports its [`TokenUsage`] so that callers can bill it, and every error is
//! an [`LlmError`] whose message is safe to show to the tenant (never a key).
//!
//! - [`openai`]: the HTTP client: bearer auth, per-request timeout, bounded retries.
//! - [`prompts`]: query rewrite, rerank, profile and summary prompts and parsers.
//!
//! The scripted fake OpenAI-compatible server the tests talk to is `memvault-fake-llm`.

use std::fmt;
use std::ops::{Add, AddAssign};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub mod openai;
pub mod prompts;

pub use openai::OpenAiClient;
pub use prompts::{
    parse_profile, parse_rerank, parse_rewrite, parse_summary, profile_request, rerank_request,
    rewrite_request, summary_request,
};

/// One chat message: `role` is `system`, `user` or `assistant`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: "system".to_owned(),
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: "user".to_owned(),
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: "assistant".to_owned(),
            content: content.into(),
        }
    }
}

/// One chat-completions call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    /// Ask for a JSON object (`response_format: {"type": "json_object"}`).
    pub json: bool,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
}

/// Tokens one or more calls spent, as the endpoint reported them (zeros when it did not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl TokenUsage {
    pub fn total(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

impl Add for TokenUsage {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self {
            prompt_tokens: self.prompt_tokens.saturating_add(other.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_add(other.completion_tokens),
        }
    }
}

impl AddAssign for TokenUsage {
    fn add_assign(&mut self, other: Self) {
        *self = *self + other;
    }
}

/// What a successful call returned.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// `choices[0].message.content`.
    pub content: String,
    /// The model that answered, as the endpoint named it (the configured one if it did not).
    pub model: String,
    pub usage: TokenUsage,
}

/// What a pass-through call ([`Llm::complete_raw`]) returned: the endpoint's
/// chat-completion object as it sent it, and the tokens it reports.
#[derive(Debug, Clone, PartialEq)]
pub struct RawCompletion {
    pub body: serde_json::Map<String, serde_json::Value>,
    pub usage: TokenUsage,
}

/// Why a call failed. Messages are meant for humans (operators and tenants checking their
/// own LLM configuration) and never include the API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    #[error("the LLM request timed out")]
    Timeout,
    #[error("could not reach the LLM endpoint: {0}")]
    Transport(String),
    #[error("the LLM endpoint answered HTTP {status}{hint}: {body}", hint = status_hint(*status))]
    Status {
        status: u16,
        /// The start of the response body (about 300 characters).
        body: String,
    },
    #[error("the LLM endpoint returned an invalid response: {0}")]
    InvalidResponse(String),
    /// The configuration cannot work (bad base URL, empty model, unusable API key).
    #[error("invalid LLM configuration: {0}")]
    Config(String),
}

impl LlmError {
    /// Whether the same request may succeed later (timeouts, transport errors, 429, 5xx).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Timeout | Self::Transport(_) => true,
            Self::Status { status, .. } => *status == 429 || *status >= 500,
            Self::InvalidResponse(_) | Self::Config(_) => false,
        }
    }
}

fn status_hint(status: u16) -> &'static str {
    match status {
        401 | 403 => " (check the API key)",
        404 => " (check the base URL and the model name)",
        429 => " (rate limited or out of quota)",
        _ => "",
    }
}

/// A language model the service can call. Object-safe: the service holds `Arc<dyn Llm>`.
#[async_trait]
pub trait Llm: Send + Sync {
    /// The configured model name (for usage accounting).
    fn model(&self) -> &str;

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError>;

    /// Posts a chat-completions body built by someone else (the chat proxy) as it is, with
    /// the configured model when it names none, and returns the endpoint's JSON object
    /// whole. Only this LLM's own credentials are sent.
    async fn complete_raw(
        &self,
        body: serde_json::Map<String, serde_json::Value>,
    ) -> Result<RawCompletion, LlmError>;
}

/// How to reach an OpenAI-compatible chat-completions endpoint.
#[derive(Clone)]
pub struct LlmConfig {
    /// The API root, e.g. `https://api.openai.com/v1`; the client POSTs
    /// `{base_url}/chat/completions` (a trailing slash is fine).
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer ...` when set.
    pub api_key: Option<String>,
    /// Per attempt, from connecting to the end of the response body.
    pub timeout: Duration,
    /// Extra attempts after a timeout, transport error, 429 or 5xx.
    pub max_retries: u32,
    /// The wait before the first retry, doubled for each further one.
    pub backoff: Duration,
}

impl LlmConfig {
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
    pub const DEFAULT_MAX_RETRIES: u32 = 2;
    pub const DEFAULT_BACKOFF: Duration = Duration::from_millis(500);

    /// A configuration with the default timeout (60 s), retries (2) and backoff (500 ms).
    pub fn new(
        base_url: impl Into<String>,
        model: impl Into<String>,
        api_key: Option<String>,
    ) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key,
            timeout: Self::DEFAULT_TIMEOUT,
            max_retries: Self::DEFAULT_MAX_RETRIES,
            backoff: Self::DEFAULT_BACKOFF,
        }
    }
}

impl fmt::Debug for LlmConfig {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("LlmConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff", &self.backoff)
            .finish()
    }
}

/// The request [`self_test`] sends: tiny, JSON mode, deterministic.
pub fn self_test_request() -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::system(
                "You are a connectivity check. Reply with a JSON object and nothing else.",
            ),
            ChatMessage::user(r#"Reply with exactly this JSON object: {"ok": true}"#),
        ],
        json: true,
        temperature: Some(0.0),
        max_tokens: None,
    }
}

/// One tiny JSON-mode call that must come back as a JSON object: run before a tenant's own
/// LLM configuration is saved. Returns the tokens it spent.
pub async fn self_test(llm: &dyn Llm) -> Result<TokenUsage, LlmError> {
    let response = llm.chat(self_test_request()).await?;
    if parse_json_object(&response.content).is_some() {
        Ok(response.usage)
    } else {
        Err(LlmError::InvalidResponse(format!(
            "asked for JSON, the model answered {:?}; does it support JSON mode \
             (response_format json_object)?",
            truncate_chars(response.content.trim(), 80)
        )))
    }
}

/// The JSON object in a model's reply: the whole reply, or the reply inside a Markdown code
/// fence, or the span from its first `{` to its last `}` (models add chatter even in JSON
/// mode). `None` when there is no JSON object.
pub fn parse_json_object(content: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let unfenced = strip_code_fence(content.trim());
    if let Ok(serde_json::Value::Object(object)) = serde_json::from_str(unfenced) {
        return Some(object);
    }
    let start = unfenced.find('{')?;
    let end = unfenced.rfind('}')?;
    if end <= start {
        return None;
    }
    match serde_json::from_str(&unfenced[start..=end]) {
        Ok(serde_json::Value::Object(object)) => Some(object),
        _ => None,
    }
}

fn strip_code_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    // Drop the info string ("json") on the opening line.
    let body = rest.split_once('\n').map_or("", |(_, body)| body);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// The first `max` characters of `text` (never splitting a character).
pub fn truncate_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((index, _)) => &text[..index],
        None => text,
    }
}

/// A client configuration for a fake server, for tests: no key, 5 s timeout, 2 retries,
/// 10 ms backoff.
#[cfg(test)]
fn test_config(server: &memvault_fake_llm::FakeLlmServer, model: &str) -> LlmConfig {
    LlmConfig {
        base_url: server.base_url(),
        model: model.to_owned(),
        api_key: None,
        timeout: Duration::from_secs(5),
        max_retries: 2,
        backoff: Duration::from_millis(10),
    }
}

#[cfg(test)]
mod tests {
    use memvault_fake_llm::{FakeLlmServer, FakeReply};

    use super::*;

    #[test]
    fn usage_adds_up() {
        let mut usage = TokenUsage {
            prompt_tokens: 3,
            completion_tokens: 4,
        };
        usage += TokenUsage {
            prompt_tokens: 10,
            completion_tokens: 1,
        };
        assert_eq!(
            usage + TokenUsage::default(),
            TokenUsage {
                prompt_tokens: 13,
                completion_tokens: 5
            }
        );
        assert_eq!(usage.total(), 18);
    }

    #[test]
    fn json_objects_are_found_in_replies() {
        assert!(parse_json_object(r#"{"a": 1}"#).is_some());
        assert!(parse_json_object("```json\n{\"a\": 1}\n```").is_some());
        assert!(parse_json_object("```\n{\"a\": 1}\n```\n").is_some());
        assert!(
            parse_json_object("Sure! Here it is: {\"a\": {\"b\": 2}} Hope it helps.").is_some()
        );
        assert!(parse_json_object("[1, 2]").is_none());
        assert!(parse_json_object("not json").is_none());
        assert!(parse_json_object("} {").is_none());
        assert!(parse_json_object("").is_none());
    }

    #[test]
    fn truncation_respects_characters() {
        assert_eq!(truncate_chars("héllo", 2), "hé");
        assert_eq!(truncate_chars("hi", 5), "hi");
    }

    #[test]
    fn config_debug_redacts_the_key() {
        let config = LlmConfig::new("http://x/v1", "m", Some("sk-secret".to_owned()));
        let debug = format!("{config:?}");
        assert!(!debug.contains("sk-secret"));
        assert!(debug.contains("<redacted>"));
    }

    #[test]
    fn error_messages_are_human() {
        let error = LlmError::Status {
            status: 401,
            body: "bad key".to_owned(),
        };
        assert_eq!(
            error.to_string(),
            "the LLM endpoint answered HTTP 401 (check the API key): bad key"
        );
        assert!(!error.is_transient());
        assert!(LlmError::Timeout.is_transient());
        assert!(LlmError::Status {
            status: 503,
            body: String::new()
        }
        .is_transient());
    }

    #[tokio::test]
    async fn self_test_accepts_a_json_reply() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::chat_with_usage(r#"{"ok": true}"#, 12, 3));
        let client = OpenAiClient::new(test_config(&server, "test-model")).unwrap();
        let usage = self_test(&client).await.unwrap();
        assert_eq!(
            usage,
            TokenUsage {
                prompt_tokens: 12,
                completion_tokens: 3
            }
        );
        let request = &server.requests()[0];
        assert_eq!(request.body["response_format"]["type"], "json_object");
    }

    #[tokio::test]
    async fn self_test_rejects_a_non_json_reply() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::chat("OK! Everything works."));
        let client = OpenAiClient::new(test_config(&server, "test-model")).unwrap();
        let error = self_test(&client).await.unwrap_err();
        assert!(matches!(error, LlmError::InvalidResponse(_)), "{error}");
        assert!(error.to_string().contains("JSON"));
    }

    #[tokio::test]
    async fn self_test_reports_a_rejected_key() {
        let server = FakeLlmServer::start();
        server.push(FakeReply::json(
            401,
            serde_json::json!({"error": {"message": "Incorrect API key provided"}}),
        ));
        let client = OpenAiClient::new(test_config(&server, "test-model")).unwrap();
        let error = self_test(&client).await.unwrap_err();
        assert!(
            matches!(error, LlmError::Status { status: 401, .. }),
            "{error}"
        );
        assert_eq!(server.request_count(), 1);
    }
}
