//! The MCP memory tools, one file each. A tool is a [`Tool`]: typed arguments whose JSON
//! Schema is derived (`tools/list` shows it, and a call's arguments are checked against
//! that same schema before they are decoded: `-32602` when they fail it), a typed result
//! whose schema is the `outputSchema`, hints, and one call on the service of its domain
//! with the caller's permissions.
//!
//! Arguments go through the REST API's own constructors (`CreateMemoryRequest::validate`,
//! `SearchRequest::validate`, ...), so a value REST refuses, MCP refuses too. Every
//! collection operation is authorized first (`Authorizer::authorize`: read-only keys and
//! grants); listing and tenant-wide search skip what the key may not read. A refusal, a
//! missing collection or memory, or an unavailable actor is a tool result with
//! `isError: true` (the model can read it and adapt). A tool that writes names its audit
//! action ([`Tool::audited`]): `store_memory` and a real `archive_stale` are recorded as
//! `mcp.store_memory` and `mcp.archive_stale` (the audit layer treats `/v1/mcp` as a
//! read).

mod archive_stale;
mod collection_health;
mod find_duplicates;
mod get_memory;
mod list_collections;
mod related_memory;
mod search_memory;
mod shapes;
mod store_memory;
mod summarize_collection;
mod what_changed;

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;

use memvault_core::service::{CollectionAccess, Level};
use memvault_core::Agent;
use memvault_storage::{AuditEntry, CollectionName};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use super::{schema, RpcError};
use crate::api::files::sign_nested_images;
use crate::api::AppState;
use crate::error::ApiError;

/// What a tool call runs with: the services and the calling agent.
pub struct Context<'a> {
    pub state: &'a AppState,
    pub agent: &'a Agent,
    /// The client's address (`unknown` without connection info), for the audit log.
    pub client: &'a str,
}

impl Context<'_> {
    /// The proof that the agent may access `collection` at level `L` (the same rule as
    /// REST's); a name that cannot exist is an invalid argument.
    fn authorized<L: Level>(&self, collection: &str) -> Result<CollectionAccess<L>, ToolFailure> {
        Ok(self
            .state
            .authorizer
            .authorize(self.agent, collection_name(collection)?)?)
    }
}

/// The `collection` argument as a name: one that cannot exist is an invalid argument.
fn collection_name(raw: &str) -> Result<CollectionName, ToolFailure> {
    CollectionName::parse(raw)
        .map_err(|reason| ToolFailure::InvalidParams(format!("arguments.collection: {reason}")))
}

/// How a call failed.
pub enum ToolFailure {
    /// The arguments cannot be right: `-32602`.
    InvalidParams(String),
    /// The tool ran and failed (refused, not found, unavailable): `isError: true`.
    Failed(ApiError),
}

impl From<memvault_core::Error> for ToolFailure {
    fn from(error: memvault_core::Error) -> Self {
        ToolFailure::Failed(ApiError::from(error))
    }
}

impl From<ApiError> for ToolFailure {
    /// A REST constructor's refusal: a validation error is an invalid argument; anything
    /// else is the tool's failure.
    fn from(error: ApiError) -> Self {
        match error {
            ApiError::Validation(message) => ToolFailure::InvalidParams(message),
            other => ToolFailure::Failed(other),
        }
    }
}

/// The `annotations` of a tool: `readOnlyHint` tools change nothing; the others say
/// whether a repeat changes more.
#[derive(Debug, Clone, Copy)]
pub enum Hints {
    ReadOnly,
    Writes { idempotent: bool },
}

/// One MCP tool.
pub trait Tool {
    const NAME: &'static str;
    const TITLE: &'static str;
    const DESCRIPTION: &'static str;
    const HINTS: Hints;
    /// The arguments; their derived schema is the tool's `inputSchema`.
    type Arguments: DeserializeOwned + ToSchema + Send;
    /// The result; its derived schema is the tool's `outputSchema`.
    type Output: Serialize + ToSchema;

    /// The HTTP status an audit entry records for a successful call, when this call
    /// writes (audited as `mcp.<name>`); `None` for a call that changes nothing.
    fn audited(_arguments: &Self::Arguments) -> Option<u16> {
        None
    }

    fn call(
        context: &Context<'_>,
        arguments: Self::Arguments,
    ) -> impl Future<Output = Result<Self::Output, ToolFailure>> + Send;
}

type ToolResult = Result<Value, ToolFailure>;
type Running<'a> = Pin<Box<dyn Future<Output = ToolResult> + Send + 'a>>;

/// A tool in the catalog: its `tools/list` entry, the schema its arguments are held to,
/// and how to run it.
struct Entry {
    name: &'static str,
    definition: Value,
    input_schema: Value,
    run: for<'a> fn(&'a Context<'a>, Value) -> Running<'a>,
}

fn entry<T: Tool + 'static>() -> Entry {
    let input_schema = schema::derived::<T::Arguments>();
    let annotations = match T::HINTS {
        Hints::ReadOnly => json!({"title": T::TITLE, "readOnlyHint": true, "openWorldHint": false}),
        Hints::Writes { idempotent } => json!({
            "title": T::TITLE, "readOnlyHint": false, "openWorldHint": false,
            "destructiveHint": false, "idempotentHint": idempotent,
        }),
    };
    Entry {
        name: T::NAME,
        definition: json!({
            "name": T::NAME,
            "title": T::TITLE,
            "description": T::DESCRIPTION,
            "inputSchema": input_schema,
            "outputSchema": schema::derived::<T::Output>(),
            "annotations": annotations,
        }),
        input_schema,
        run: |context, arguments| Box::pin(run::<T>(context, arguments)),
    }
}

/// Decodes the checked arguments, runs the tool, records a write in the audit log.
async fn run<T: Tool>(context: &Context<'_>, arguments: Value) -> ToolResult {
    let arguments: T::Arguments = serde_json::from_value(arguments)
        .map_err(|error| ToolFailure::InvalidParams(format!("arguments: {error}")))?;
    let audited = T::audited(&arguments);
    let outcome = T::call(context, arguments)
        .await
        .map(|output| serde_json::to_value(output).unwrap_or_default());
    if let Some(ok) = audited {
        audit_write(context, T::NAME, &outcome, ok);
    }
    outcome
}

fn catalog() -> &'static [Entry] {
    static CATALOG: OnceLock<Vec<Entry>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        vec![
            entry::<search_memory::SearchMemory>(),
            entry::<get_memory::GetMemory>(),
            entry::<store_memory::StoreMemory>(),
            entry::<list_collections::ListCollections>(),
            entry::<related_memory::RelatedMemory>(),
            entry::<what_changed::WhatChanged>(),
            entry::<collection_health::CollectionHealth>(),
            entry::<summarize_collection::SummarizeCollection>(),
            entry::<find_duplicates::FindDuplicates>(),
            entry::<archive_stale::ArchiveStale>(),
        ]
    })
}

/// The `tools/list` entries.
pub fn definitions() -> Vec<Value> {
    catalog()
        .iter()
        .map(|tool| tool.definition.clone())
        .collect()
}

/// Runs `tools/call`: the named tool with its checked arguments.
pub async fn call(
    state: &AppState,
    agent: &Agent,
    client: &str,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("params.name (the tool to call) is required"))?;
    let tool = catalog()
        .iter()
        .find(|tool| tool.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = catalog().iter().map(|tool| tool.name).collect();
            RpcError::invalid_params(format!(
                "unknown tool '{name}'; the tools are {}",
                known.join(", ")
            ))
        })?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(arguments) => without_nulls(arguments.clone()),
    };
    schema::check(&tool.input_schema, &arguments, "arguments").map_err(RpcError::invalid_params)?;
    let context = Context {
        state,
        agent,
        client,
    };
    match (tool.run)(&context, arguments).await {
        Ok(mut structured) => {
            // Stored files are shown with URLs presigned now, as REST reads show them.
            sign_nested_images(&state.files, &agent.tenant_id, &mut structured).await;
            Ok(json!({
            "content": [{"type": "text", "text": structured.to_string()}],
            "structuredContent": structured,
            "isError": false,
            }))
        }
        Err(ToolFailure::InvalidParams(message)) => Err(RpcError::invalid_params(message)),
        Err(ToolFailure::Failed(error)) => Ok(json!({
            "content": [{"type": "text", "text": failure_text(tool.name, error)}],
            "isError": true,
        })),
    }
}

/// An explicit `null` argument means "not given".
fn without_nulls(arguments: Value) -> Value {
    match arguments {
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .filter(|(_, value)| !value.is_null())
                .collect(),
        ),
        other => other,
    }
}

/// The text of an `isError` result: the status and code the REST API would have answered,
/// and why.
fn failure_text(tool: &str, error: ApiError) -> String {
    let status = error.status();
    let code = error.code();
    let detail = error.detail_logged(tool);
    format!(
        "{tool} failed: {} {} ({code}): {detail}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("error")
    )
}

fn audit_write(context: &Context<'_>, tool: &str, outcome: &ToolResult, ok: u16) {
    let status = match outcome {
        Ok(_) => ok,
        Err(ToolFailure::InvalidParams(_)) => 422,
        Err(ToolFailure::Failed(error)) => error.status().as_u16(),
    };
    let result = match status {
        200..=299 => "success",
        401 | 403 | 429 => "denied",
        _ => "failed",
    };
    let (audit, agent) = (&context.state.audit, context.agent);
    audit.record(AuditEntry {
        id: uuid::Uuid::now_v7().to_string(),
        tenant_id: agent.tenant_id.clone(),
        at: audit.now(),
        agent_id: agent.key_id.clone(),
        agent_label: agent.label.clone(),
        action: format!("mcp.{tool}"),
        method: "POST".to_owned(),
        resource: "/v1/mcp".to_owned(),
        status,
        outcome: result.to_owned(),
        client_address: (context.client != "unknown").then(|| context.client.to_owned()),
    });
}
