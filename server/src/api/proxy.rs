//! `POST /v1/proxy/chat/completions`: an OpenAI-compatible, non-streaming chat completion
//! with the tenant's memories injected (README, "Chat proxy"). OpenAI clients point their
//! `base_url` at `{server}/v1/proxy` and use their memvault key as the API key; that key
//! and the caller's headers never go upstream.

use axum::extract::State;
use axum::Json;
use memvault_core::service::proxy::{ProxyOutcome, ProxyRequest};
use memvault_core::Agent;
use memvault_core::{Authorizer, Proxy};
use memvault_storage::CollectionName;
use memvault_types::limits::{
    PROXY_MEMORY_LIMIT_DEFAULT, PROXY_MEMORY_LIMIT_MAX, SHORT_FIELD_MAX_CHARS,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth::Authenticated;
use super::collections::readable;
use super::extract::ApiJson;
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/proxy`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(chat_completions).audit(Audit::Change("proxy.chat")))
}

/// Standard chat-completions fields forwarded upstream unchanged (besides `model`,
/// `messages`, `temperature` and `max_tokens`). Any other field is refused with 422, so a
/// misspelt memvault field does not pass silently.
const FORWARDED_FIELDS: [&str; 17] = [
    "max_completion_tokens",
    "top_p",
    "n",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "user",
    "seed",
    "response_format",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_effort",
    "service_tier",
];

/// An OpenAI chat-completions body plus memvault's fields.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatCompletionRequest {
    /// 1 to 200 messages, each `{role, content, ...}`: role `system`, `developer`,
    /// `user`, `assistant` or `tool`; content a string or an array of parts (`null` only
    /// for an assistant message). Other message fields (`name`, `tool_calls`,
    /// `tool_call_id`) are forwarded. The last `user` message's text is the memory query.
    #[schema(value_type = Vec<Object>, min_items = 1, max_items = 200)]
    pub messages: Vec<Map<String, Value>>,
    /// The upstream model; default the serving LLM's configured model. On the platform
    /// LLM only the configured model and the models priced in `[llm.prices]` are offered.
    pub model: Option<String>,
    /// Search this collection (and store into it); default: a tenant-wide search, and the
    /// user message is stored into the collection `chat`.
    pub collection: Option<String>,
    /// Only memories with this container tag are injected.
    pub container_tag: Option<String>,
    /// Memories to inject, 0 (no search) to 50; default 5.
    #[schema(minimum = 0, maximum = 50)]
    #[serde(default, deserialize_with = "super::extract::optional_integer")]
    pub memory_limit: Option<i64>,
    /// Queue the last user message for graph extraction (like an asynchronous remember);
    /// default true. Needs write access; without it the chat still answers, with
    /// `memvault.stored` false and the reason in `memvault.skipped`.
    pub store: Option<bool>,
    /// 0 to 2.
    #[schema(minimum = 0, maximum = 2)]
    pub temperature: Option<f64>,
    /// At least 1.
    #[schema(minimum = 1)]
    #[serde(default, deserialize_with = "super::extract::optional_integer")]
    pub max_tokens: Option<i64>,
    /// Must be false or absent: the proxy is non-streaming.
    pub stream: Option<bool>,
    /// `max_completion_tokens`, `top_p`, `n`, `stop`, `presence_penalty`,
    /// `frequency_penalty`, `logit_bias`, `logprobs`, `top_logprobs`, `user`, `seed`,
    /// `response_format`, `tools`, `tool_choice`, `parallel_tool_calls`,
    /// `reasoning_effort` and `service_tier` are forwarded unchanged; any other field is
    /// a 422.
    #[serde(flatten)]
    #[schema(ignore)]
    pub forwarded: Map<String, Value>,
}

/// The body's schema: [`ChatCompletionRequest`]'s fields, the forwarded ones (any JSON,
/// passed on unchanged) and no other.
pub struct ChatCompletionBody;

impl utoipa::PartialSchema for ChatCompletionBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Schema, SchemaType};
        use utoipa::openapi::RefOr;
        let mut schema = <ChatCompletionRequest as utoipa::PartialSchema>::schema();
        if let RefOr::T(Schema::Object(object)) = &mut schema {
            for field in FORWARDED_FIELDS {
                // Any JSON: forwarded as it is.
                let any = ObjectBuilder::new().schema_type(SchemaType::AnyValue);
                object
                    .properties
                    .insert((*field).to_owned(), any.build().into());
            }
            object.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
        }
        schema
    }
}

impl ToSchema for ChatCompletionBody {}

impl ChatCompletionRequest {
    fn validate(self, authorizer: &Authorizer, agent: &Agent) -> ApiResult<ProxyRequest> {
        if let Some(field) = self
            .forwarded
            .keys()
            .find(|field| !FORWARDED_FIELDS.contains(&field.as_str()))
        {
            return Err(ApiError::Validation(format!(
                "unknown field '{field}'; besides messages, model, collection, container_tag, \
                 memory_limit, store, temperature, max_tokens and stream the proxy accepts {}",
                FORWARDED_FIELDS.join(", ")
            )));
        }
        if self.stream == Some(true) {
            return Err(ApiError::Validation(
                "stream must be false: the chat proxy is non-streaming".to_owned(),
            ));
        }
        let memory_limit = match self.memory_limit {
            None => PROXY_MEMORY_LIMIT_DEFAULT,
            Some(limit) if (0..=PROXY_MEMORY_LIMIT_MAX as i64).contains(&limit) => limit as usize,
            Some(limit) => {
                return Err(ApiError::Validation(format!(
                    "memory_limit must be between 0 and {PROXY_MEMORY_LIMIT_MAX}, got {limit}"
                )))
            }
        };
        let mut options = self.forwarded;
        if let Some(temperature) = self.temperature {
            if !(0.0..=2.0).contains(&temperature) {
                return Err(ApiError::Validation(format!(
                    "temperature must be between 0 and 2, got {temperature}"
                )));
            }
            options.insert("temperature".to_owned(), temperature.into());
        }
        if let Some(max_tokens) = self.max_tokens {
            if max_tokens < 1 {
                return Err(ApiError::Validation(format!(
                    "max_tokens must be at least 1, got {max_tokens}"
                )));
            }
            options.insert("max_tokens".to_owned(), max_tokens.into());
        }
        if let Some(model) = &self.model {
            if model.trim().is_empty() || model.chars().count() > SHORT_FIELD_MAX_CHARS {
                return Err(ApiError::Validation(format!(
                    "model must be 1 to {SHORT_FIELD_MAX_CHARS} characters"
                )));
            }
        }
        Ok(ProxyRequest {
            messages: self.messages,
            model: self.model,
            collection: self
                .collection
                .map(|raw| {
                    // A body field: an impossible name is invalid input, not a missing page.
                    CollectionName::parse(&raw).map_err(ApiError::Validation)?;
                    readable(authorizer, agent, &raw).map(|access| access.collection().clone())
                })
                .transpose()?,
            container_tag: self.container_tag,
            memory_limit,
            store: self.store.unwrap_or(true),
            options,
        })
    }
}

/// A memory injected into the conversation.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryUsedItem {
    pub id: String,
    pub collection: String,
    pub text: String,
    pub score: f32,
}

/// memvault's extension of the completion.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProxyExtension {
    /// The memories injected as a system message, most relevant first.
    pub memories_used: Vec<MemoryUsedItem>,
    /// Whether the last user message was queued for graph extraction.
    pub stored: bool,
    /// The extraction job (`GET /v1/memory/extract/job/{job_id}`), when stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// Why `store` was asked for and did not happen (read-only key, no `can_write` grant,
    /// message too long).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// The upstream's `chat.completion` object unchanged (`id`, `object`, `created`, `model`,
/// `choices`, `usage`, ...) plus the `memvault` extension.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatCompletionResponse {
    #[serde(flatten)]
    pub completion: Map<String, Value>,
    pub memvault: ProxyExtension,
}

impl From<ProxyOutcome> for ChatCompletionResponse {
    fn from(outcome: ProxyOutcome) -> Self {
        let mut completion = outcome.completion;
        // The extension's name is ours, whatever the upstream sent.
        completion.remove("memvault");
        Self {
            completion,
            memvault: ProxyExtension {
                memories_used: outcome
                    .memories_used
                    .into_iter()
                    .map(|memory| MemoryUsedItem {
                        id: memory.id,
                        collection: memory.collection.as_str().to_owned(),
                        text: memory.text,
                        score: memory.score,
                    })
                    .collect(),
                stored: outcome.stored,
                job_id: outcome.job_id,
                skipped: outcome.skipped,
            },
        }
    }
}

/// OpenAI-compatible chat completion, non-streaming. Searches the memories with the last
/// user message, injects them as one system message (after the caller's leading system
/// and developer messages), forwards the conversation to the tenant's own LLM when it has
/// one, else the platform LLM (billed as `proxy`, under the spend cap), and answers the
/// upstream's completion plus `memvault: {memories_used, stored, job_id?, skipped?}`.
/// Upstream timeout 504, upstream failure 502, no LLM or spend cap reached 503.
#[utoipa::path(post, path = "/chat/completions", tag = "proxy",
    request_body = ChatCompletionBody,
    responses((status = 200, body = ChatCompletionResponse), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "the named collection is restricted"),
        (status = 422, body = ErrorBody), (status = 429, body = ErrorBody),
        (status = 502, body = ErrorBody, description = "the upstream LLM failed"),
        (status = 503, body = ErrorBody, description = "no LLM, or the spend cap is reached"),
        (status = 504, body = ErrorBody, description = "the upstream LLM timed out")),
    security(("bearer" = [])))]
pub async fn chat_completions(
    State(proxy): State<Proxy>,
    State(authorizer): State<Authorizer>,
    Authenticated(agent): Authenticated,
    ApiJson(request): ApiJson<ChatCompletionRequest>,
) -> ApiResult<Json<ChatCompletionResponse>> {
    let request = request.validate(&authorizer, &agent)?;
    let outcome = proxy.chat(&agent, request).await?;
    Ok(Json(ChatCompletionResponse::from(outcome)))
}
