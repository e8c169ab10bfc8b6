//! The OpenAI-compatible chat proxy: search memories with the last user message, inject
//! them as a system message, forward the conversation to the LLM that serves the tenant,
//! and queue the user message for graph extraction.
//!
//! Decisions (README, "Chat proxy"):
//! - The memories go in one system message of their own, placed after the caller's
//!   leading `system`/`developer` messages (so the caller's instructions stay first and
//!   untouched) and before the conversation; no memories, no extra message.
//! - The tenant's own LLM (`PUT /v1/memory/extraction/config`) serves the proxy when it
//!   has one (never capped); else the platform LLM, billed as purpose `proxy` against the
//!   spend cap. On the platform LLM the model must be the configured one or one priced in
//!   `[llm.prices]`, so that no call escapes the cap unpriced.
//! - The user message is queued only once the upstream answered, so a retried request
//!   after a 502 does not queue it twice; a store that cannot happen (read-only key, no
//!   `can_write` grant, too long) never fails the chat: `stored` is false and `skipped`
//!   says why.

use memvault_index::search::{FusionParams, SearchFilter, SearchMode, SearchQuery};
use memvault_llm::{truncate_chars, LlmError};
use memvault_storage::CollectionName;
use memvault_types::limits::{
    MEMORY_TEXT_MAX_CHARS, PROXY_MESSAGES_MAX, REMEMBER_CONTENT_MAX_CHARS, SEARCH_MIN_SCORE_DEFAULT,
};
use serde_json::{Map, Value};

use super::access::{Read, Write};
use super::intelligence::{LlmChoice, Purpose};
use super::tree::Tree;
use super::{Authorizer, Graph, Llms, Search};
use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::service::RememberInput;

/// Where the user message is stored when the request names no collection.
pub const PROXY_DEFAULT_COLLECTION: &str = "chat";

/// Roles a message may have.
const ROLES: [&str; 5] = ["system", "developer", "user", "assistant", "tool"];

/// One chat-proxy call, validated at the edge (the messages are checked here).
#[derive(Debug, Clone, Default)]
pub struct ProxyRequest {
    /// The caller's messages, forwarded as they are (every field of each message kept).
    pub messages: Vec<Map<String, Value>>,
    /// The upstream model; `None` = the serving LLM's configured model.
    pub model: Option<String>,
    /// Searched and stored into; `None` = a tenant-wide search, stored into `chat`.
    pub collection: Option<CollectionName>,
    /// Only memories with this tag are injected.
    pub container_tag: Option<String>,
    /// Memories to inject, 0 (no search) to 50.
    pub memory_limit: usize,
    /// Queue the last user message for graph extraction.
    pub store: bool,
    /// Standard chat-completions fields forwarded unchanged (temperature, max_tokens, ...).
    pub options: Map<String, Value>,
}

/// A memory the proxy injected.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryUsed {
    pub id: String,
    pub collection: CollectionName,
    pub text: String,
    pub score: f32,
}

#[derive(Debug, Clone)]
pub struct ProxyOutcome {
    /// The upstream's chat.completion object, unchanged.
    pub completion: Map<String, Value>,
    pub memories_used: Vec<MemoryUsed>,
    /// Whether the user message was queued for extraction.
    pub stored: bool,
    /// The extraction job, when it was.
    pub job_id: Option<String>,
    /// Why `store` was asked for and did not happen.
    pub skipped: Option<String>,
}

/// The OpenAI-compatible chat proxy that reads and writes memories around each call.
#[derive(Clone)]
pub struct Proxy {
    pub(super) tree: Tree,
    pub(super) llms: Llms,
    pub(super) graph: Graph,
    pub(super) search: Search,
    pub(super) authorizer: Authorizer,
}

impl Proxy {
    /// One proxied chat completion (see the module docs for the decisions).
    pub async fn chat(&self, agent: &Agent, request: ProxyRequest) -> Result<ProxyOutcome> {
        validate_messages(&request.messages)?;
        let user_text = last_user_text(&request.messages)?;
        let tenant = &agent.tenant_id;
        let choice = self.llms.llm_for(tenant, Purpose::Proxy).await?;
        let llm = match &choice {
            LlmChoice::Own(llm) | LlmChoice::Platform(llm) => llm.clone(),
            LlmChoice::OverCap { cap_usd } => {
                return Err(Error::SpendCapReached { cap_usd: *cap_usd })
            }
            LlmChoice::Unconfigured => return Err(Error::LlmNotConfigured),
        };
        let model = request
            .model
            .clone()
            .unwrap_or_else(|| llm.model().to_owned());
        if !choice.is_own() && model != llm.model() && !self.llms.intelligence().has_price(&model) {
            return Err(Error::ModelNotOffered {
                model,
                offered: llm.model().to_owned(),
            });
        }
        let memories_used = self.memories_for(agent, &request, &user_text).await?;

        let mut body = request.options.clone();
        body.insert("model".to_owned(), Value::String(model.clone()));
        body.insert(
            "messages".to_owned(),
            Value::Array(with_memories(&request.messages, &memories_used)),
        );
        let completion = llm.complete_raw(body).await.map_err(upstream_error)?;
        self.llms
            .record_usage(
                tenant,
                Purpose::Proxy,
                &model,
                choice.is_own(),
                completion.usage,
            )
            .await;

        let (stored, job_id, skipped) = if request.store {
            match self
                .store_user_message(agent, request.collection.as_ref(), user_text)
                .await
            {
                Ok(job_id) => (true, Some(job_id), None),
                Err(reason) => (false, None, Some(reason)),
            }
        } else {
            (false, None, None)
        };
        Ok(ProxyOutcome {
            completion: completion.body,
            memories_used,
            stored,
            job_id,
            skipped,
        })
    }

    /// The memories to inject: a hybrid search with the user's text. A named collection
    /// that does not exist yet has none; grants apply through the search itself.
    async fn memories_for(
        &self,
        agent: &Agent,
        request: &ProxyRequest,
        user_text: &str,
    ) -> Result<Vec<MemoryUsed>> {
        if request.memory_limit == 0 {
            return Ok(Vec::new());
        }
        let query = SearchQuery {
            text: truncate_chars(user_text, MEMORY_TEXT_MAX_CHARS).to_owned(),
            limit: request.memory_limit,
            min_score: SEARCH_MIN_SCORE_DEFAULT as f32,
            mode: SearchMode::Hybrid,
            filter: SearchFilter {
                container_tag: request.container_tag.clone(),
                ..SearchFilter::default()
            },
            rewrite: false,
            rerank: false,
            fusion: FusionParams::default(),
        };
        let scope = match &request.collection {
            Some(name) => {
                let access = self.authorizer.authorize::<Read>(agent, name.clone())?;
                if self.tree.collection_entry(&agent.tenant_id, name).is_err() {
                    return Ok(Vec::new());
                }
                Some(access)
            }
            None => None,
        };
        let outcome = self.search.search(agent, scope.as_ref(), query).await?;
        Ok(outcome
            .hits
            .iter()
            .map(|hit| MemoryUsed {
                id: hit.memory.id.clone(),
                collection: hit.collection.clone(),
                text: hit.memory.text.clone(),
                score: hit.score,
            })
            .collect())
    }

    /// Queues the user message like an asynchronous remember; the job id, or why not.
    async fn store_user_message(
        &self,
        agent: &Agent,
        collection: Option<&CollectionName>,
        text: String,
    ) -> std::result::Result<String, String> {
        let name = match collection {
            Some(name) => name.clone(),
            None => CollectionName::parse(PROXY_DEFAULT_COLLECTION)
                .map_err(|error| format!("the default collection is invalid: {error}"))?,
        };
        let access = self
            .authorizer
            .authorize::<Write>(agent, name)
            .map_err(|error| error.to_string())?;
        let length = text.chars().count();
        if length > REMEMBER_CONTENT_MAX_CHARS {
            return Err(format!(
                "the last user message has {length} characters; at most \
                 {REMEMBER_CONTENT_MAX_CHARS} are stored"
            ));
        }
        let input = RememberInput {
            content: text,
            importance: None,
        };
        match self.graph.submit_remember(&access, input).await {
            Ok(job) => Ok(job.id),
            Err(error) => {
                tracing::warn!(%error, "chat proxy: the user message was not queued");
                Err(format!("the user message could not be queued: {error}"))
            }
        }
    }
}

fn upstream_error(error: LlmError) -> Error {
    match error {
        LlmError::Timeout => Error::UpstreamTimeout,
        LlmError::Transport(_)
        | LlmError::Status { .. }
        | LlmError::InvalidResponse(_)
        | LlmError::Config(_) => Error::UpstreamFailed(format!("the upstream LLM failed: {error}")),
    }
}

/// 1 to 200 messages, each with a known role and a string or array content (`null` only
/// for an assistant message, which may carry tool calls instead).
pub fn validate_messages(messages: &[Map<String, Value>]) -> Result<()> {
    if messages.is_empty() || messages.len() > PROXY_MESSAGES_MAX {
        return Err(Error::Invalid(format!(
            "messages must hold 1 to {PROXY_MESSAGES_MAX} messages, got {}",
            messages.len()
        )));
    }
    for (index, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if !ROLES.contains(&role) {
            return Err(Error::Invalid(format!(
                "messages[{index}].role must be one of {}, got {}",
                ROLES.join(", "),
                message
                    .get("role")
                    .map_or("nothing".to_owned(), Value::to_string)
            )));
        }
        match message.get("content") {
            Some(Value::String(_) | Value::Array(_)) => {}
            Some(Value::Null) | None if role == "assistant" => {}
            _ => {
                return Err(Error::Invalid(format!(
                    "messages[{index}].content must be a string or an array of parts"
                )))
            }
        }
    }
    Ok(())
}

/// The text of the last `user` message: its string content, or the `text` parts of an
/// array content joined by newlines.
pub fn last_user_text(messages: &[Map<String, Value>]) -> Result<String> {
    let message = messages
        .iter()
        .rev()
        .find(|message| message.get("role").and_then(Value::as_str) == Some("user"))
        .ok_or_else(|| Error::Invalid("messages must include a user message".to_owned()))?;
    let text = match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    if text.trim().is_empty() {
        return Err(Error::Invalid(
            "the last user message has no text".to_owned(),
        ));
    }
    Ok(text)
}

/// The system message that lists the memories.
pub fn memory_message(memories: &[MemoryUsed]) -> String {
    let mut content = String::from("Relevant memories:");
    for memory in memories {
        content.push_str("\n- ");
        content.push_str(&memory.text.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    content
}

/// The caller's messages with the memory message after their leading system and
/// developer messages (unchanged when there are no memories).
pub fn with_memories(messages: &[Map<String, Value>], memories: &[MemoryUsed]) -> Vec<Value> {
    let mut out: Vec<Value> = messages.iter().cloned().map(Value::Object).collect();
    if memories.is_empty() {
        return out;
    }
    let position = messages
        .iter()
        .position(|message| {
            !matches!(
                message.get("role").and_then(Value::as_str),
                Some("system" | "developer")
            )
        })
        .unwrap_or(messages.len());
    let mut injected = Map::new();
    injected.insert("role".to_owned(), Value::String("system".to_owned()));
    injected.insert(
        "content".to_owned(),
        Value::String(memory_message(memories)),
    );
    out.insert(position, Value::Object(injected));
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(value: Value) -> Vec<Map<String, Value>> {
        serde_json::from_value(value).unwrap()
    }

    fn memory(text: &str) -> MemoryUsed {
        MemoryUsed {
            id: "m1".to_owned(),
            collection: CollectionName::parse("chat").unwrap(),
            text: text.to_owned(),
            score: 0.9,
        }
    }

    #[test]
    fn the_last_user_message_is_the_query() {
        let list = messages(json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [
                {"type": "text", "text": "where do"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                {"type": "text", "text": "I live?"}
            ]},
        ]));
        assert_eq!(last_user_text(&list).unwrap(), "where do\nI live?");
        let none = messages(json!([{"role": "system", "content": "be brief"}]));
        assert!(matches!(last_user_text(&none), Err(Error::Invalid(_))));
        let blank = messages(json!([{"role": "user", "content": "  "}]));
        assert!(matches!(last_user_text(&blank), Err(Error::Invalid(_))));
    }

    #[test]
    fn messages_are_checked() {
        assert!(validate_messages(&[]).is_err());
        assert!(validate_messages(&messages(json!([{"role": "user", "content": "hi"}]))).is_ok());
        assert!(validate_messages(&messages(json!([
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "content": "42", "tool_call_id": "t1"},
            {"role": "developer", "content": "d"},
        ])))
        .is_ok());
        for bad in [
            json!([{"role": "robot", "content": "hi"}]),
            json!([{"content": "hi"}]),
            json!([{"role": "user"}]),
            json!([{"role": "user", "content": 3}]),
            json!([{"role": "user", "content": null}]),
        ] {
            assert!(validate_messages(&messages(bad.clone())).is_err(), "{bad}");
        }
        let too_many: Vec<_> = (0..=PROXY_MESSAGES_MAX)
            .map(|_| messages(json!([{"role": "user", "content": "x"}])).remove(0))
            .collect();
        assert!(validate_messages(&too_many).is_err());
    }

    #[test]
    fn memories_follow_the_leading_system_messages() {
        let list = messages(json!([
            {"role": "system", "content": "persona"},
            {"role": "developer", "content": "rules"},
            {"role": "user", "content": "hi", "name": "ana"},
        ]));
        let out = with_memories(
            &list,
            &[memory("Ana lives\nin Porto."), memory("Likes tea.")],
        );
        assert_eq!(out.len(), 4);
        assert_eq!(out[0]["content"], json!("persona"));
        assert_eq!(out[2]["role"], json!("system"));
        assert_eq!(
            out[2]["content"],
            json!("Relevant memories:\n- Ana lives in Porto.\n- Likes tea.")
        );
        assert_eq!(
            out[3],
            json!({"role": "user", "content": "hi", "name": "ana"})
        );

        let plain = messages(json!([{"role": "user", "content": "hi"}]));
        assert_eq!(
            with_memories(&plain, &[memory("x")])[0]["role"],
            json!("system")
        );
        assert_eq!(
            with_memories(&plain, &[]),
            vec![json!({"role": "user", "content": "hi"})]
        );
    }

    #[test]
    fn upstream_failures_map_to_gateway_errors() {
        assert!(matches!(
            upstream_error(LlmError::Timeout),
            Error::UpstreamTimeout
        ));
        let error = upstream_error(LlmError::Status {
            status: 500,
            body: "boom".to_owned(),
        });
        assert!(matches!(&error, Error::UpstreamFailed(detail) if detail.contains("HTTP 500")));
    }
}
