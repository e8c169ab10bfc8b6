//! The MCP memory tools: each one's argument schema (checked before it runs, `-32602`
//! when the arguments fail it), its result schema, its annotations, and its one call on
//! the service with the caller's permissions.
//!
//! Every collection operation is authorized first (`Memvault::authorize`: read-only keys
//! and grants); listing and tenant-wide search skip what the key may not read. A refusal,
//! a missing collection or memory, or an unavailable actor is a tool result with
//! `isError: true` (the model can read it and adapt); arguments that cannot be right are
//! `-32602`. `store_memory` and a real `archive_stale` are recorded in the audit log as
//! `mcp.store_memory` and `mcp.archive_stale` (the audit layer treats `/v1/mcp` as a read).

use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Utc};
use memvault_core::memory::{validate_metadata, validate_short_field, validate_text, NewMemory};
use memvault_core::service::{CollectionAccess, Level, Read, Write};
use memvault_core::Agent;
use memvault_index::search::{FusionParams, SearchFilter, SearchHit, SearchMode, SearchQuery};
use memvault_storage::{AuditEntry, CollectionName, MemoryRecord};
use memvault_types::limits::{
    DEDUP_THRESHOLD_DEFAULT, DEFAULT_IMPORTANCE, RELATED_LIMIT_DEFAULT, RELATED_MIN_SCORE_DEFAULT,
    SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX, SEARCH_MIN_SCORE_DEFAULT, SHORT_FIELD_MAX_CHARS,
    STALE_DAYS_DEFAULT, STALE_DAYS_MAX, SUMMARY_LIMIT_DEFAULT, SUMMARY_LIMIT_MAX,
};
use serde_json::{json, Map, Value};

use super::{schema, RpcError};
use crate::api::collections::CollectionResponse;
use crate::api::memories::MemoryResponse;
use crate::api::AppState;
use crate::error::ApiError;

/// Longest search query a tool accepts (the REST API takes a memory's length; a model's
/// query is a sentence).
const QUERY_MAX_CHARS: u64 = 1_000;
/// Most changed memories (and supersessions) `what_changed` returns.
const CHANGES_LIMIT_MAX: u64 = 200;
const CHANGES_LIMIT_DEFAULT: i64 = 50;
/// At most this many ids are listed by `archive_stale`; the count is always exact.
const ARCHIVE_STALE_IDS_MAX: usize = 1_000;

/// One tool: its `tools/list` entry and the schema its arguments are held to.
struct Tool {
    name: &'static str,
    definition: Value,
    input_schema: Value,
}

/// How a call failed.
enum ToolFailure {
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

type ToolResult = Result<Value, ToolFailure>;

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
    let no_arguments = Value::Object(Map::new());
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => &no_arguments,
        Some(arguments) => arguments,
    };
    schema::check(&tool.input_schema, arguments, "arguments").map_err(RpcError::invalid_params)?;
    let empty = Map::new();
    let arguments = Arguments(arguments.as_object().unwrap_or(&empty));
    match run(tool.name, state, agent, &arguments).await {
        Ok(structured) => Ok(json!({
            "content": [{"type": "text", "text": structured.to_string()}],
            "structuredContent": structured,
            "isError": false,
        })),
        Err(ToolFailure::InvalidParams(message)) => Err(RpcError::invalid_params(message)),
        Err(ToolFailure::Failed(error)) => Ok(json!({
            "content": [{"type": "text", "text": failure_text(tool.name, error)}],
            "isError": true,
        })),
    }
}

async fn run(name: &str, state: &AppState, agent: &Agent, arguments: &Arguments<'_>) -> ToolResult {
    match name {
        "search_memory" => search_memory(state, agent, arguments).await,
        "get_memory" => get_memory(state, agent, arguments),
        "store_memory" => {
            let outcome = store_memory(state, agent, arguments).await;
            audit_write(state, agent, "store_memory", &outcome, 201);
            outcome
        }
        "list_collections" => list_collections(state, agent),
        "related_memory" => related_memory(state, agent, arguments).await,
        "what_changed" => what_changed(state, agent, arguments).await,
        "collection_health" => collection_health(state, agent, arguments),
        "summarize_collection" => summarize_collection(state, agent, arguments).await,
        "find_duplicates" => find_duplicates(state, agent, arguments).await,
        "archive_stale" => {
            let outcome = archive_stale(state, agent, arguments).await;
            if !arguments.flag("dry_run", true) {
                audit_write(state, agent, "archive_stale", &outcome, 200);
            }
            outcome
        }
        other => Err(ToolFailure::InvalidParams(format!(
            "unknown tool '{other}'"
        ))),
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

fn audit_write(state: &AppState, agent: &Agent, tool: &str, outcome: &ToolResult, ok: u16) {
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
    state.audit.record(AuditEntry {
        id: uuid::Uuid::now_v7().to_string(),
        tenant_id: agent.tenant_id.clone(),
        at: state.audit.now(),
        agent_id: agent.key_id.clone(),
        agent_label: agent.label.clone(),
        action: format!("mcp.{tool}"),
        method: "POST".to_owned(),
        resource: "/v1/mcp".to_owned(),
        status,
        outcome: result.to_owned(),
    });
}

/// A call's arguments after they passed the tool's schema.
struct Arguments<'a>(&'a Map<String, Value>);

impl Arguments<'_> {
    fn text(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    fn required_text(&self, name: &str) -> Result<&str, ToolFailure> {
        self.text(name)
            .ok_or_else(|| ToolFailure::InvalidParams(format!("arguments.{name} is required")))
    }

    fn integer(&self, name: &str, default: i64) -> i64 {
        self.0
            .get(name)
            .and_then(schema::as_integer)
            .unwrap_or(default)
    }

    fn number(&self, name: &str, default: f64) -> f64 {
        self.0.get(name).and_then(Value::as_f64).unwrap_or(default)
    }

    fn flag(&self, name: &str, default: bool) -> bool {
        self.0.get(name).and_then(Value::as_bool).unwrap_or(default)
    }

    fn object(&self, name: &str) -> Option<Map<String, Value>> {
        self.0.get(name).and_then(Value::as_object).cloned()
    }

    /// The `collection` argument as a name: one that cannot exist is an invalid argument.
    fn collection(&self) -> Result<CollectionName, ToolFailure> {
        let raw = self.required_text("collection")?;
        CollectionName::parse(raw)
            .map_err(|reason| ToolFailure::InvalidParams(format!("arguments.collection: {reason}")))
    }
}

/// The proof that the agent may access the collection named by the arguments at level
/// `L` (the same rule as REST's).
fn authorized<L: Level>(
    state: &AppState,
    agent: &Agent,
    arguments: &Arguments<'_>,
) -> Result<CollectionAccess<L>, ToolFailure> {
    Ok(state.authorizer.authorize(agent, arguments.collection()?)?)
}

fn memory_json(memory: &MemoryRecord, collection: &CollectionName) -> Value {
    let mut value = serde_json::to_value(MemoryResponse::from(memory)).unwrap_or_default();
    if let Value::Object(fields) = &mut value {
        fields.insert("collection".to_owned(), json!(collection.as_str()));
    }
    value
}

fn hit_json(hit: &SearchHit) -> Value {
    let mut value = memory_json(&hit.memory, &hit.collection);
    if let Value::Object(fields) = &mut value {
        fields.insert("score".to_owned(), json!(hit.score));
    }
    value
}

async fn search_memory(state: &AppState, agent: &Agent, arguments: &Arguments<'_>) -> ToolResult {
    let text = arguments.required_text("query")?;
    if text.trim().is_empty() {
        return Err(ToolFailure::InvalidParams(
            "arguments.query must not be blank".to_owned(),
        ));
    }
    let scope = match arguments.text("collection") {
        Some(_) => Some(authorized::<Read>(state, agent, arguments)?),
        None => None,
    };
    let mode = match arguments.text("mode").unwrap_or("hybrid") {
        "vector" => SearchMode::Vector,
        "text" => SearchMode::Text,
        _ => SearchMode::Hybrid,
    };
    let query = SearchQuery {
        text: text.to_owned(),
        limit: arguments.integer("limit", SEARCH_LIMIT_DEFAULT as i64) as usize,
        min_score: SEARCH_MIN_SCORE_DEFAULT as f32,
        mode,
        filter: SearchFilter {
            category: arguments.text("category").map(str::to_owned),
            container_tag: arguments.text("container_tag").map(str::to_owned),
            metadata: None,
            include_archived: false,
        },
        rewrite: false,
        rerank: false,
        fusion: FusionParams::default(),
    };
    let outcome = state.search.search(agent, scope.as_ref(), query).await?;
    let results: Vec<Value> = outcome.hits.iter().map(hit_json).collect();
    Ok(json!({"results": results}))
}

fn get_memory(state: &AppState, agent: &Agent, arguments: &Arguments<'_>) -> ToolResult {
    let access = authorized::<Read>(state, agent, arguments)?;
    let name = access.collection();
    let id = arguments.required_text("memory_id")?;
    let memory = state.memories.get(&access, id)?;
    Ok(memory_json(&memory, name))
}

async fn store_memory(state: &AppState, agent: &Agent, arguments: &Arguments<'_>) -> ToolResult {
    let access = authorized::<Write>(state, agent, arguments)?;
    let name = access.collection();
    let invalid = ToolFailure::InvalidParams;
    let text = arguments.required_text("text")?.to_owned();
    validate_text(&text).map_err(invalid)?;
    let category = arguments.text("category").unwrap_or("other").to_owned();
    validate_short_field("category", &category).map_err(invalid)?;
    let container_tag = arguments.text("container_tag").map(str::to_owned);
    if let Some(tag) = &container_tag {
        validate_short_field("container_tag", tag).map_err(invalid)?;
    }
    let metadata = arguments.object("metadata").unwrap_or_default();
    validate_metadata(&metadata).map_err(invalid)?;
    let memory = NewMemory {
        text,
        importance: arguments.number("importance", DEFAULT_IMPORTANCE),
        category,
        source: "mcp".to_owned(),
        metadata,
        container_tag,
    };
    let created = state.memories.create(&access, vec![memory]).await?;
    let memory = created.first().ok_or_else(|| {
        ToolFailure::Failed(ApiError::Internal("create returned no memory".to_owned()))
    })?;
    Ok(memory_json(memory, name))
}

fn list_collections(state: &AppState, agent: &Agent) -> ToolResult {
    let mut views = state.collections.list(agent)?;
    views.sort_by(|left, right| left.record.name.as_str().cmp(right.record.name.as_str()));
    let collections: Vec<Value> = views
        .into_iter()
        .map(|view| serde_json::to_value(CollectionResponse::from(view)).unwrap_or_default())
        .collect();
    Ok(json!({"collections": collections}))
}

async fn related_memory(state: &AppState, agent: &Agent, arguments: &Arguments<'_>) -> ToolResult {
    let access = authorized::<Read>(state, agent, arguments)?;
    let id = arguments.required_text("memory_id")?;
    let limit = arguments.integer("limit", RELATED_LIMIT_DEFAULT as i64) as usize;
    let outcome = state
        .search
        .related(&access, id, limit, RELATED_MIN_SCORE_DEFAULT as f32)
        .await?;
    let results: Vec<Value> = outcome.hits.iter().map(hit_json).collect();
    Ok(json!({"memory_id": id, "results": results}))
}

async fn what_changed(state: &AppState, agent: &Agent, arguments: &Arguments<'_>) -> ToolResult {
    let access = authorized::<Read>(state, agent, arguments)?;
    let name = access.collection();
    let raw_since = arguments.required_text("since")?;
    let since = DateTime::parse_from_rfc3339(raw_since)
        .map(|since| since.with_timezone(&Utc))
        .map_err(|error| {
            ToolFailure::InvalidParams(format!(
                "arguments.since must be an RFC 3339 time like 2026-01-31T12:00:00Z: {error}"
            ))
        })?;
    let limit = arguments.integer("limit", CHANGES_LIMIT_DEFAULT) as usize;
    let changes = state.memories.changes_since(&access, since, limit).await?;
    let changed: Vec<Value> = changes
        .changed
        .iter()
        .map(|memory| memory_json(memory, name))
        .collect();
    let supersessions: Vec<Value> = changes
        .supersessions
        .iter()
        .map(|pair| {
            json!({
                "current": memory_json(&pair.current, name),
                "superseded": memory_json(&pair.superseded, name),
                "superseded_at": pair.superseded.superseded_at,
            })
        })
        .collect();
    Ok(json!({
        "collection": name.as_str(),
        "since": since,
        "changed": changed,
        "changed_truncated": changes.changed_truncated,
        "supersessions": supersessions,
    }))
}

fn collection_health(state: &AppState, agent: &Agent, arguments: &Arguments<'_>) -> ToolResult {
    let access = authorized::<Read>(state, agent, arguments)?;
    let name = access.collection();
    let stale_days = arguments.integer("stale_days", i64::from(STALE_DAYS_DEFAULT)) as u32;
    let found = state.maintenance.collection_health(&access, stale_days)?;
    let exists = found.is_some();
    let health = found.unwrap_or_default();
    Ok(json!({
        "collection": name.as_str(),
        "exists": exists,
        "total": health.total,
        "current": health.current,
        "archived": health.archived,
        "pinned": health.pinned,
        "stale": health.stale,
        "expired": health.expired,
        "supersessions": health.supersessions,
        "categories": health.categories,
        "needs_attention": health.needs_attention(),
        "stale_days": stale_days,
    }))
}

async fn summarize_collection(
    state: &AppState,
    agent: &Agent,
    arguments: &Arguments<'_>,
) -> ToolResult {
    let access = authorized::<Read>(state, agent, arguments)?;
    let name = access.collection();
    let limit = arguments.integer("limit", SUMMARY_LIMIT_DEFAULT as i64) as usize;
    let found = state.maintenance.summary(&access, limit).await?;
    Ok(match found {
        Some(summary) => {
            let summary = Arc::unwrap_or_clone(summary);
            json!({
                "collection": name.as_str(),
                "exists": true,
                "summary": summary.summary,
                "themes": summary.themes,
                "based_on": summary.based_on,
                "generated_at": summary.generated_at,
                "generated_by": summary.generated_by,
                "skipped": summary.skipped,
            })
        }
        None => json!({
            "collection": name.as_str(),
            "exists": false,
            "summary": "The collection does not exist.",
            "themes": [],
            "based_on": 0,
            "generated_at": state.audit.now(),
            "generated_by": "extractive",
            "skipped": null,
        }),
    })
}

fn dedup_memory(memory: &MemoryRecord, similarity: Option<f32>) -> Value {
    let mut value = json!({
        "id": memory.id,
        "text": memory.text,
        "importance": memory.importance,
        "pinned": memory.pinned,
        "created_at": memory.created_at,
    });
    if let (Some(similarity), Value::Object(fields)) = (similarity, &mut value) {
        let rounded = (f64::from(similarity) * 1e4).round() / 1e4;
        fields.insert("similarity".to_owned(), json!(rounded));
    }
    value
}

async fn find_duplicates(state: &AppState, agent: &Agent, arguments: &Arguments<'_>) -> ToolResult {
    let sweep = state
        .authorizer
        .authorize_sweep(agent, arguments.collection()?, true)?;
    let name = sweep.collection();
    let threshold = arguments.number("threshold", DEDUP_THRESHOLD_DEFAULT);
    let report = state.maintenance.dedup(&sweep, threshold as f32).await?;
    let clusters: Vec<Value> = report
        .clusters
        .iter()
        .map(|cluster| {
            let duplicates: Vec<Value> = cluster
                .duplicates
                .iter()
                .map(|(memory, similarity)| dedup_memory(memory, Some(*similarity)))
                .collect();
            json!({"keeper": dedup_memory(&cluster.keeper, None), "duplicates": duplicates})
        })
        .collect();
    Ok(json!({
        "collection": name.as_str(),
        "dry_run": true,
        "threshold": threshold,
        "scanned": report.scanned,
        "clusters": clusters,
    }))
}

async fn archive_stale(state: &AppState, agent: &Agent, arguments: &Arguments<'_>) -> ToolResult {
    let dry_run = arguments.flag("dry_run", true);
    let sweep = state
        .authorizer
        .authorize_sweep(agent, arguments.collection()?, dry_run)?;
    let name = sweep.collection();
    let days = arguments.integer("older_than_days", i64::from(STALE_DAYS_DEFAULT)) as u32;
    let mut ids = state.maintenance.archive_stale(&sweep, days).await?;
    let count = ids.len();
    ids.truncate(ARCHIVE_STALE_IDS_MAX);
    Ok(json!({
        "collection": name.as_str(),
        "dry_run": dry_run,
        "older_than_days": days,
        "count": count,
        "memory_ids": ids,
        "memory_ids_truncated": count > ARCHIVE_STALE_IDS_MAX,
    }))
}

fn catalog() -> &'static [Tool] {
    static CATALOG: OnceLock<Vec<Tool>> = OnceLock::new();
    CATALOG.get_or_init(build_catalog)
}

/// `readOnlyHint` tools change nothing; the others say whether they destroy anything.
fn annotations(title: &str, read_only: bool, idempotent: bool) -> Value {
    let mut hints = json!({"title": title, "readOnlyHint": read_only, "openWorldHint": false});
    if !read_only {
        hints["destructiveHint"] = json!(false);
        hints["idempotentHint"] = json!(idempotent);
    }
    hints
}

fn tool(
    name: &'static str,
    title: &str,
    description: &str,
    hints: Value,
    input_schema: Value,
    output_schema: Value,
) -> Tool {
    Tool {
        name,
        definition: json!({
            "name": name,
            "title": title,
            "description": description,
            "inputSchema": input_schema,
            "outputSchema": output_schema,
            "annotations": hints,
        }),
        input_schema,
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn collection_argument() -> Value {
    json!({
        "type": "string", "minLength": 1, "maxLength": 128,
        "pattern": "^[A-Za-z0-9_.-]+$",
        "description": "The collection's name: letters, digits, '_', '-' and '.'",
    })
}

fn memory_id_argument() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 200, "description": "The memory's id"})
}

fn limit_argument(max: u64, default: i64) -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": max, "default": default})
}

fn days_argument(description: &str) -> Value {
    json!({
        "type": "integer", "minimum": 0, "maximum": STALE_DAYS_MAX,
        "default": STALE_DAYS_DEFAULT, "description": description,
    })
}

/// A memory in a result (the REST API's memory shape plus its `collection`).
fn memory_output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "collection": {"type": "string"},
            "text": {"type": "string"},
            "importance": {"type": "number"},
            "category": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"},
            "updated_at": {"type": "string", "format": "date-time"},
        },
        "required": ["id", "collection", "text", "created_at", "updated_at"],
    })
}

fn results_output() -> Value {
    let mut hit = memory_output();
    hit["properties"]["score"] = json!({"description": "Relevance; higher is better"});
    json!({
        "type": "object",
        "properties": {"results": {"type": "array", "items": hit}},
        "required": ["results"],
    })
}

fn build_catalog() -> Vec<Tool> {
    let read = |title: &str| annotations(title, true, true);
    vec![
        tool(
            "search_memory",
            "Search memory",
            "Finds memories relevant to a query: in one collection, or in every collection \
             this key may read. Hybrid (semantic + keyword) by default; superseded, expired \
             and archived memories are left out.",
            read("Search memory"),
            object(
                json!({
                    "query": {"type": "string", "minLength": 1, "maxLength": QUERY_MAX_CHARS,
                        "description": "What to look for, in natural language"},
                    "collection": collection_argument(),
                    "limit": limit_argument(SEARCH_LIMIT_MAX as u64, SEARCH_LIMIT_DEFAULT as i64),
                    "mode": {"type": "string", "enum": ["hybrid", "vector", "text"],
                        "default": "hybrid"},
                    "container_tag": {"type": "string", "minLength": 1,
                        "maxLength": SHORT_FIELD_MAX_CHARS,
                        "description": "Only memories with this sub-namespace (e.g. a user id)"},
                    "category": {"type": "string", "minLength": 1,
                        "maxLength": SHORT_FIELD_MAX_CHARS},
                }),
                &["query"],
            ),
            results_output(),
        ),
        tool(
            "get_memory",
            "Get a memory",
            "Reads one memory by id.",
            read("Get a memory"),
            object(
                json!({"collection": collection_argument(), "memory_id": memory_id_argument()}),
                &["collection", "memory_id"],
            ),
            memory_output(),
        ),
        tool(
            "store_memory",
            "Store a memory",
            "Stores one memory in a collection (created when missing); it is stamped with \
             this key as its author. Read-only keys cannot store.",
            annotations("Store a memory", false, false),
            object(
                json!({
                    "collection": collection_argument(),
                    "text": {"type": "string", "minLength": 1, "maxLength": 10_000},
                    "importance": {"type": "number", "minimum": 0, "maximum": 1,
                        "default": DEFAULT_IMPORTANCE},
                    "category": {"type": "string", "minLength": 1,
                        "maxLength": SHORT_FIELD_MAX_CHARS, "default": "other"},
                    "metadata": {"type": "object",
                        "description": "Free-form JSON, searchable by containment"},
                    "container_tag": {"type": "string", "minLength": 1,
                        "maxLength": SHORT_FIELD_MAX_CHARS},
                }),
                &["collection", "text"],
            ),
            memory_output(),
        ),
        tool(
            "list_collections",
            "List collections",
            "Lists the collections this key may read, with their memory counts.",
            read("List collections"),
            object(json!({}), &[]),
            json!({
                "type": "object",
                "properties": {"collections": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "memory_count": {"type": "integer"},
                    },
                    "required": ["name", "memory_count"],
                }}},
                "required": ["collections"],
            }),
        ),
        tool(
            "related_memory",
            "Related memories",
            "Finds the memories closest in meaning to one memory (not itself).",
            read("Related memories"),
            object(
                json!({
                    "collection": collection_argument(),
                    "memory_id": memory_id_argument(),
                    "limit": limit_argument(SEARCH_LIMIT_MAX as u64, RELATED_LIMIT_DEFAULT as i64),
                }),
                &["collection", "memory_id"],
            ),
            results_output(),
        ),
        tool(
            "what_changed",
            "What changed",
            "Memories created or updated in a collection since a time, and the facts \
             superseded since then (current and superseded), newest first.",
            read("What changed"),
            object(
                json!({
                    "collection": collection_argument(),
                    "since": {"type": "string", "format": "date-time",
                        "description": "RFC 3339, e.g. 2026-01-31T12:00:00Z"},
                    "limit": limit_argument(CHANGES_LIMIT_MAX, CHANGES_LIMIT_DEFAULT),
                }),
                &["collection", "since"],
            ),
            json!({
                "type": "object",
                "properties": {
                    "collection": {"type": "string"},
                    "since": {"type": "string"},
                    "changed": {"type": "array", "items": memory_output()},
                    "changed_truncated": {"type": "boolean"},
                    "supersessions": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "current": memory_output(),
                            "superseded": memory_output(),
                            "superseded_at": {"type": ["string", "null"]},
                        },
                        "required": ["current", "superseded"],
                    }},
                },
                "required": ["collection", "since", "changed", "supersessions"],
            }),
        ),
        tool(
            "collection_health",
            "Collection health",
            "Counts a collection's memories by state: current, archived, pinned, stale \
             (not updated for stale_days), expired, superseded, by category.",
            read("Collection health"),
            object(
                json!({
                    "collection": collection_argument(),
                    "stale_days": days_argument("Days without an update after which a memory is stale"),
                }),
                &["collection"],
            ),
            json!({
                "type": "object",
                "properties": {
                    "collection": {"type": "string"},
                    "exists": {"type": "boolean"},
                    "total": {"type": "integer"},
                    "current": {"type": "integer"},
                    "stale": {"type": "integer"},
                    "needs_attention": {"type": "integer"},
                },
                "required": ["collection", "exists", "total", "current", "needs_attention"],
            }),
        ),
        tool(
            "summarize_collection",
            "Summarize a collection",
            "What a collection is about, from its most important and recent memories.",
            read("Summarize a collection"),
            object(
                json!({
                    "collection": collection_argument(),
                    "limit": limit_argument(SUMMARY_LIMIT_MAX as u64, SUMMARY_LIMIT_DEFAULT as i64),
                }),
                &["collection"],
            ),
            json!({
                "type": "object",
                "properties": {
                    "collection": {"type": "string"},
                    "exists": {"type": "boolean"},
                    "summary": {"type": "string"},
                    "themes": {"type": "array", "items": {"type": "string"}},
                    "based_on": {"type": "integer"},
                },
                "required": ["collection", "exists", "summary", "themes", "based_on"],
            }),
        ),
        tool(
            "find_duplicates",
            "Find duplicates",
            "Finds clusters of near-identical memories (a dedup dry run: nothing is \
             deleted); each cluster names the memory that would be kept.",
            read("Find duplicates"),
            object(
                json!({
                    "collection": collection_argument(),
                    "threshold": {"type": "number", "minimum": 0, "maximum": 1,
                        "default": DEDUP_THRESHOLD_DEFAULT,
                        "description": "Cosine similarity at which two memories are duplicates"},
                }),
                &["collection"],
            ),
            json!({
                "type": "object",
                "properties": {
                    "collection": {"type": "string"},
                    "dry_run": {"type": "boolean"},
                    "threshold": {"type": "number"},
                    "scanned": {"type": "integer"},
                    "clusters": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "keeper": {"type": "object"},
                            "duplicates": {"type": "array", "items": {"type": "object"}},
                        },
                        "required": ["keeper", "duplicates"],
                    }},
                },
                "required": ["collection", "dry_run", "scanned", "clusters"],
            }),
        ),
        tool(
            "archive_stale",
            "Archive stale memories",
            "Archives (reversibly) the memories not updated for older_than_days; never \
             pinned or superseded ones. A dry run (the default) only counts them; a real \
             run needs a key that may write.",
            annotations("Archive stale memories", false, true),
            object(
                json!({
                    "collection": collection_argument(),
                    "older_than_days": days_argument("Days without an update"),
                    "dry_run": {"type": "boolean", "default": true},
                }),
                &["collection"],
            ),
            json!({
                "type": "object",
                "properties": {
                    "collection": {"type": "string"},
                    "dry_run": {"type": "boolean"},
                    "older_than_days": {"type": "integer"},
                    "count": {"type": "integer"},
                    "memory_ids": {"type": "array", "items": {"type": "string"}},
                    "memory_ids_truncated": {"type": "boolean"},
                },
                "required": ["collection", "dry_run", "count", "memory_ids"],
            }),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_and_annotations() {
        let tools = definitions();
        assert_eq!(tools.len(), 10);
        for tool in &tools {
            assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
            assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
            assert!(tool["annotations"]["readOnlyHint"].is_boolean(), "{tool}");
        }
    }
}
