//! `POST /v1/mcp`: the Model Context Protocol over streamable HTTP, stateless, with JSON
//! responses (never an SSE stream), authenticated by the same bearer key as the REST API.
//!
//! - `mod.rs`: the transport and JSON-RPC framing: authentication, parsing, the methods
//!   `initialize`, `ping`, `tools/list`, `tools/call`, and the error codes.
//! - `tools/`: the ten memory tools, one file each: typed arguments and result (their
//!   schemas derived), and the tool's one call on the service with the caller's
//!   permissions.
//! - `schema.rs`: standalone schemas from the derived ones, and the JSON Schema subset
//!   the arguments are checked against.
//!
//! Why not rmcp (the official Rust SDK): its `StreamableHttpService` is a tower service
//! with its own request pipeline. Our contract needs the edge's own pieces on this route:
//! the bearer key turned into our `Agent` by the rate-limit layer, a 401 with
//! `WWW-Authenticate` and a `{"detail", "code"}` body, the audit and metrics layers keyed by the
//! matched route, `-32602` for an unknown tool or arguments that fail the tool's schema,
//! and a 4xx (never a 500) for any client input; rmcp also refuses Host headers that are
//! not loopback by default (`allowed_hosts`). The stateless subset is small: one request
//! or notification per POST, answered at once, so it is written here, with no new
//! dependency.
//!
//! Wire rules (MCP 2025-11-25 streamable HTTP, also answering 2024-11-05 to 2025-06-18):
//! - A request gets HTTP 200, `application/json`, one JSON-RPC response; errors of a
//!   well-formed request (`-32601` unknown method, `-32602` invalid params) are JSON-RPC
//!   errors in that 200 body.
//! - A body that is not JSON is HTTP 400 with a `-32700` error (id null); a JSON body that
//!   is not one JSON-RPC message, and batches (arrays), are HTTP 400 with `-32600`.
//! - Notifications (`notifications/initialized`, ...) and client responses: 202, no body.
//! - No session: no `Mcp-Session-Id` is issued and one sent is ignored. `GET` (the
//!   server-to-client SSE stream) and `DELETE` (session end) are 405 with `Allow: POST`.
//! - Tool execution failures (403 refused, 404 not found, 503) are `tools/call` results
//!   with `isError: true` and the reason as text, as MCP prescribes.

pub mod schema;
pub mod tools;

use axum::extract::{Request, State};
use axum::http::header::{ALLOW, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use memvault_core::Agent;
use serde::Serialize;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use super::audit::{Audit, AuditRoutes};
use super::auth;
use super::client::ClientAddress;
use super::AppState;
use crate::error::{ApiError, ErrorBody};

/// Nested at `/v1`. The tools audit themselves, one entry per call.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(
        routes!(handle)
            .map(|method_router| method_router.fallback(no_stream))
            .audit(Audit::ByHandler),
    )
}

/// JSON-RPC 2.0 error codes used here.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// Protocol revisions answered through `initialize`, oldest first; a client asking for
/// one of them gets it, any other gets the newest.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The challenge a 401 carries: the same bearer key as the REST API.
const CHALLENGE: &str = "Bearer realm=\"memvault\"";

/// A JSON-RPC error: its code and a message meant for the developer.
#[derive(Debug)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self {
            code: INVALID_PARAMS,
            message: message.into(),
        }
    }
}

/// A JSON-RPC 2.0 id, for the OpenAPI description: a string or any number (JSON-RPC 2.0
/// section 4 allows fractions, though it discourages them; the answer echoes the id as
/// sent); a message's `id` may also be null or absent.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum JsonRpcId {
    Text(String),
    Number(f64),
}

/// A JSON-RPC 2.0 message (request, notification or response), for the OpenAPI
/// description.
#[derive(Debug, Serialize, ToSchema)]
pub struct JsonRpcMessage {
    /// Always `2.0`.
    pub jsonrpc: String,
    /// A string or number; absent on notifications; null on a parse error.
    #[schema(value_type = Option<JsonRpcId>)]
    pub id: Option<Value>,
    /// Requests and notifications: `initialize`, `ping`, `tools/list`, `tools/call`,
    /// `notifications/initialized`.
    pub method: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub params: Option<Value>,
    /// Responses: the method's result.
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// Responses: `{code, message}`; -32700 parse error, -32600 invalid request,
    /// -32601 unknown method, -32602 invalid params (unknown tool, arguments that fail
    /// the tool's schema).
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
}

/// MCP over streamable HTTP, stateless, JSON responses. Tools: `search_memory`,
/// `get_memory`, `store_memory`, `list_collections`, `related_memory`, `what_changed`,
/// `collection_health`, `summarize_collection`, `find_duplicates` (read-only),
/// `archive_stale` (reversible, dry run by default); `tools/list` gives each one's
/// argument schema. Calls run with the key's permissions (read-only keys, grants).
#[utoipa::path(post, path = "/mcp", tag = "mcp",
    request_body = JsonRpcMessage,
    responses(
        (status = 200, description = "The JSON-RPC response to a request (errors included)",
            body = JsonRpcMessage),
        (status = 202, description = "A notification or response was accepted; no body"),
        (status = 400, description = "Not JSON (-32700), or not one JSON-RPC message (-32600)",
            body = JsonRpcMessage),
        (status = 401, description = "Missing or invalid key; carries WWW-Authenticate",
            body = ErrorBody),
        (status = 405, description = "GET and DELETE: no SSE stream, no session",
            body = ErrorBody),
        (status = 413, body = ErrorBody),
        (status = 429, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn handle(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let agent = match auth::authenticate(&parts, &state.authorizer) {
        Ok(agent) => agent,
        Err(error) => return unauthorized(error),
    };
    let ClientAddress(client) =
        ClientAddress::of(&parts.extensions, &parts.headers, &state.trusted_proxies);
    let bytes = match axum::body::to_bytes(body, state.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return ApiError::PayloadTooLarge(format!(
                "the request body could not be read whole; at most {} bytes are accepted",
                state.max_body_bytes
            ))
            .into_response()
        }
    };
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(message) => message,
        Err(error) => {
            let reply = error_body(Value::Null, PARSE_ERROR, format!("parse error: {error}"));
            return (StatusCode::BAD_REQUEST, Json(reply)).into_response();
        }
    };
    match classify(message) {
        Incoming::Request { id, method, params } => {
            let reply = match dispatch(&state, &agent, &client, &method, params).await {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err(error) => error_body(id, error.code, error.message),
            };
            (StatusCode::OK, Json(reply)).into_response()
        }
        Incoming::Accepted => StatusCode::ACCEPTED.into_response(),
        Incoming::Invalid { id, reason } => {
            let reply = error_body(id, INVALID_REQUEST, format!("invalid request: {reason}"));
            (StatusCode::BAD_REQUEST, Json(reply)).into_response()
        }
    }
}

/// `GET` would open the server-to-client SSE stream and `DELETE` end a session; a
/// stateless JSON server has neither.
async fn no_stream() -> Response {
    let mut response = ApiError::MethodNotAllowed(
        "this MCP endpoint is stateless: POST one JSON-RPC message; there is no SSE stream \
         and no session to end"
            .to_owned(),
    )
    .into_response();
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    response
}

fn unauthorized(error: ApiError) -> Response {
    let mut response = error.into_response();
    response
        .headers_mut()
        .insert(WWW_AUTHENTICATE, HeaderValue::from_static(CHALLENGE));
    response
}

fn error_body(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// What one POSTed JSON value is.
enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    /// A notification or a response to a server request: nothing to answer.
    Accepted,
    Invalid {
        id: Value,
        reason: String,
    },
}

fn classify(message: Value) -> Incoming {
    let Value::Object(mut fields) = message else {
        let reason = if message.is_array() {
            "batches are not supported; send one JSON-RPC message per POST"
        } else {
            "the body must be a JSON-RPC 2.0 message object"
        };
        return Incoming::Invalid {
            id: Value::Null,
            reason: reason.to_owned(),
        };
    };
    let id = fields.remove("id");
    let usable_id = match &id {
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        _ => None,
    };
    let invalid = |reason: &str| Incoming::Invalid {
        id: usable_id.clone().unwrap_or(Value::Null),
        reason: reason.to_owned(),
    };
    if fields.get("jsonrpc") != Some(&Value::String("2.0".to_owned())) {
        return invalid("\"jsonrpc\" must be \"2.0\"");
    }
    let method = match fields.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => return invalid("\"method\" must be a string"),
        None if fields.contains_key("result") || fields.contains_key("error") => {
            return Incoming::Accepted
        }
        None => return invalid("a request needs a \"method\""),
    };
    let params = fields.remove("params");
    if params
        .as_ref()
        .is_some_and(|params| !params.is_object() && !params.is_array())
    {
        return invalid("\"params\" must be an object");
    }
    match (id, usable_id.clone()) {
        (None, _) => Incoming::Accepted,
        (Some(_), Some(id)) => Incoming::Request { id, method, params },
        (Some(_), None) => invalid("\"id\" must be a string or a number"),
    }
}

async fn dispatch(
    state: &AppState,
    agent: &Agent,
    client: &str,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    let params = match params {
        None => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => return Err(RpcError::invalid_params("params must be an object")),
    };
    match method {
        "initialize" => initialize(&params),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools::definitions()})),
        "tools/call" => tools::call(state, agent, client, &params).await,
        other => Err(RpcError {
            code: METHOD_NOT_FOUND,
            message: format!(
                "method '{other}' not found; this stateless server answers initialize, ping, \
                 tools/list and tools/call"
            ),
        }),
    }
}

fn initialize(params: &Map<String, Value>) -> Result<Value, RpcError> {
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("params.protocolVersion is required"))?;
    let latest = PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.len() - 1];
    let version = PROTOCOL_VERSIONS
        .iter()
        .find(|supported| **supported == requested)
        .copied()
        .unwrap_or(latest);
    Ok(json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {
            "name": "memvault",
            "title": "memvault",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "instructions": "Long-term memory. search_memory finds memories across the \
            collections this key may read; store_memory writes one; what_changed, \
            collection_health, summarize_collection, find_duplicates and archive_stale \
            (dry run by default) look after a collection.",
    }))
}
