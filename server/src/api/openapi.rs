//! `GET /openapi.json`: the OpenAPI 3.1 description of every endpoint.

use std::sync::Arc;

use axum::routing::get;
use axum::{Json, Router};
use utoipa::openapi::header::{Header, HeaderBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use super::{audit, AppState};
use crate::error::ErrorBody;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "memvault",
        version = "0.1.0",
        description = "Self-hosted, multi-tenant long-term memory service for AI agents. \
            Every error is `{\"detail\": \"...\", \"code\": \"...\"}`: `code` is stable \
            and listed, with its status, in the `ErrorBody` schema; validation failures are 422."
    ),
    components(schemas(ErrorBody)),
    tags(
        (name = "public", description = "No key needed"),
        (name = "admin", description = "Tenants and the caller's account"),
        (name = "collections", description = "Named groups of memories"),
        (name = "memories", description = "Memories in a collection"),
        (name = "search", description = "Vector, full-text and hybrid search; related; forget"),
        (name = "graph", description = "Remember: facts, supersession, contradictions, profile"),
        (name = "settings", description = "Bring-your-own extraction LLM and object storage, and the monthly spend cap"),
        (name = "email", description = "Mail-in: the private drop address, the sender allowlist, the relay's handoff"),
        (name = "internal", description = "For memvault's own other processes: a shared secret, not an API key"),
        (name = "keys", description = "API keys as agent identities: create, list, revoke, rotate"),
        (name = "maintenance", description = "Dedup, archive-stale, collection health and summary"),
        (name = "webhooks", description = "Signed outbound webhooks for memory events"),
        (name = "operator", description = "Admin-flagged tenants only: metrics, usage, connectors, analytics"),
        (name = "grants", description = "Per-agent access to a collection: zero grants = open"),
        (name = "proxy", description = "OpenAI-compatible chat completions with memories injected"),
        (name = "mcp", description = "Model Context Protocol over streamable HTTP: memory tools for agents"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("An API key: `Authorization: Bearer mv_...`"))
                    .build(),
            ),
        );
    }
}

/// The error answers every authenticated operation can give, added here so that each
/// operation's annotation lists only its own: 401 (no, bad or revoked key), 422 (a path,
/// query or body that does not validate) and 429 (over the key's rate limit, with
/// `Retry-After`); plus 400 (an unreadable body) and 413 (a body over the size limit) on
/// operations that take a body. Every answer to an authenticated request carries the
/// `RateLimit-*` headers (absent only while the limiter fails open).
struct CommonResponses;

impl CommonResponses {
    fn error(description: &str) -> Response {
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build()
    }

    fn integer_header(description: &str) -> Header {
        HeaderBuilder::new()
            .schema(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(0)),
            )
            .description(Some(description))
            .build()
    }

    fn rate_limit_headers() -> [(&'static str, Header); 3] {
        [
            (
                "RateLimit-Limit",
                Self::integer_header("Requests per minute allowed for this API key"),
            ),
            (
                "RateLimit-Remaining",
                Self::integer_header("Requests left in the current window"),
            ),
            (
                "RateLimit-Reset",
                Self::integer_header("When the window resets, in unix seconds"),
            ),
        ]
    }
}

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let mut too_many = ResponseBuilder::new()
            .description("Over the API key's rate limit; retry after `Retry-After` seconds")
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .header(
                "Retry-After",
                Self::integer_header("Seconds until the window resets"),
            );
        for (name, header) in Self::rate_limit_headers() {
            too_many = too_many.header(name, header);
        }
        let components = openapi.components.get_or_insert_with(Default::default);
        components
            .responses
            .insert("TooManyRequests".to_owned(), too_many.build().into());
        for path in openapi.paths.paths.values_mut() {
            let operations = [
                path.get.as_mut(),
                path.put.as_mut(),
                path.post.as_mut(),
                path.delete.as_mut(),
                path.patch.as_mut(),
            ];
            for operation in operations.into_iter().flatten() {
                let secured = operation
                    .security
                    .as_ref()
                    .is_some_and(|requirements| !requirements.is_empty());
                if !secured {
                    continue;
                }
                let takes_body = operation.request_body.is_some();
                let responses = &mut operation.responses.responses;
                for response in responses.values_mut() {
                    if let RefOr::T(response) = response {
                        for (name, header) in Self::rate_limit_headers() {
                            response.headers.entry(name.to_owned()).or_insert(header);
                        }
                    }
                }
                let mut common = vec![
                    (
                        "401",
                        Self::error("Missing, malformed, invalid or revoked API key"),
                    ),
                    (
                        "422",
                        Self::error("A path, query or body value that does not validate"),
                    ),
                ];
                if takes_body {
                    common.push(("400", Self::error("The request body could not be read")));
                    common.push(("413", Self::error("The request body is too large")));
                }
                for (status, response) in common {
                    responses
                        .entry(status.to_owned())
                        .or_insert_with(|| response.into());
                }
                responses
                    .entry("429".to_owned())
                    .or_insert_with(|| Ref::from_response_name("TooManyRequests").into());
            }
        }
    }
}

/// Every `{collection}` path parameter is a collection name (1 to 128 letters, digits,
/// `_`, `-` and `.`, not starting with `.`): set here once rather than on each operation.
/// Health and summary keep a free string: they answer any name (`exists: false`).
struct CollectionNames;

impl Modify for CollectionNames {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (template, path) in openapi.paths.paths.iter_mut() {
            let any_name = template.ends_with("/health") || template.ends_with("/summary");
            if !template.contains("{collection}") || any_name {
                continue;
            }
            let operations = [
                path.get.as_mut(),
                path.put.as_mut(),
                path.post.as_mut(),
                path.delete.as_mut(),
                path.patch.as_mut(),
            ];
            let parameters = operations
                .into_iter()
                .flatten()
                .filter_map(|operation| operation.parameters.as_mut())
                .flatten()
                .filter(|parameter| parameter.name == "collection");
            for parameter in parameters {
                parameter.schema = Some(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .max_length(Some(128))
                        .pattern(Some("^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$"))
                        .into(),
                );
            }
        }
    }
}

/// Bodies that change only the fields they give need at least one: `minProperties: 1`.
/// Set here because utoipa 5.5's `#[schema(min_properties = …)]` emits `maxProperties`.
struct AtLeastOneField;

impl AtLeastOneField {
    const SCHEMAS: [&'static str; 1] = ["PatchMemoryRequest"];
}

impl Modify for AtLeastOneField {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        for name in Self::SCHEMAS {
            if let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(name) {
                object.min_properties = Some(1);
            }
        }
    }
}

/// The served document: the description above, the paths the routes declared (see
/// `api::documented_routes`), then what the modifiers add to every operation; the routes'
/// audit declarations are removed.
pub fn document(paths: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    let mut document = ApiDoc::openapi();
    document.merge(paths);
    let modifiers: [&dyn Modify; 4] = [
        &BearerAuth,
        &CommonResponses,
        &CollectionNames,
        &AtLeastOneField,
    ];
    for modifier in modifiers {
        modifier.modify(&mut document);
    }
    audit::strip_declarations(&mut document);
    template_wildcards(&mut document);
    document
}

/// axum's catch-all segment (`{*key}`) is an ordinary OpenAPI path parameter (`{key}`,
/// whose value may hold slashes).
fn template_wildcards(document: &mut utoipa::openapi::OpenApi) {
    let paths = std::mem::take(&mut document.paths.paths);
    document.paths.paths = paths
        .into_iter()
        .map(|(path, item)| (path.replace("{*", "{"), item))
        .collect();
}

pub fn routes(document: utoipa::openapi::OpenApi) -> Router<AppState> {
    let document = Arc::new(document);
    Router::new().route(
        "/openapi.json",
        get(move || {
            let document = Arc::clone(&document);
            async move { Json(document) }
        }),
    )
}
