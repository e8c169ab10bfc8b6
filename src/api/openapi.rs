//! `GET /openapi.json`: the OpenAPI 3.1 description of every endpoint.

use axum::routing::get;
use axum::{Json, Router};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{
    admin, audit, collections, grants, graph, keys, maintenance, memories, operator, public,
    search, settings, webhooks, AppState,
};
use crate::error::ErrorBody;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "memvault",
        version = "0.1.0",
        description = "Self-hosted, multi-tenant long-term memory service for AI agents. \
            Every error is `{\"detail\": \"...\"}`; validation failures are 422."
    ),
    paths(
        public::health, public::status, public::pulse, public::track,
        admin::create_tenant, admin::me, admin::stats,
        collections::list, collections::create, collections::fetch, collections::update, collections::remove,
        memories::create, memories::bulk, memories::list, memories::fetch, memories::patch, memories::remove,
        memories::move_to, memories::pin, memories::archive,
        search::search_collection, search::search_tenant, search::related, search::forget,
        graph::remember, graph::job, graph::contradictions, graph::profile,
        settings::get_extraction, settings::put_extraction, settings::delete_extraction,
        settings::get_spend_cap, settings::put_spend_cap,
        maintenance::dedup, maintenance::archive_stale, maintenance::health, maintenance::summary,
        maintenance::memory_health,
        operator::metrics, operator::usage, operator::connectors, operator::connector_status,
        operator::analytics, audit::audit,
        keys::list, keys::create, keys::revoke, keys::agents, keys::rotate,
        webhooks::fetch, webhooks::put, webhooks::remove,
        grants::upsert, grants::list, grants::remove,
    ),
    components(schemas(ErrorBody)),
    modifiers(&BearerAuth),
    tags(
        (name = "public", description = "No key needed"),
        (name = "admin", description = "Tenants and the caller's account"),
        (name = "collections", description = "Named groups of memories"),
        (name = "memories", description = "Memories in a collection"),
        (name = "search", description = "Vector, full-text and hybrid search; related; forget"),
        (name = "graph", description = "Remember: facts, supersession, contradictions, profile"),
        (name = "settings", description = "Bring-your-own extraction LLM and the monthly spend cap"),
        (name = "keys", description = "API keys as agent identities: create, list, revoke, rotate"),
        (name = "maintenance", description = "Dedup, archive-stale, collection health and summary"),
        (name = "webhooks", description = "Signed outbound webhooks for memory events"),
        (name = "operator", description = "Admin-flagged tenants only: metrics, usage, connectors, analytics"),
        (name = "grants", description = "Per-agent access to a collection: zero grants = open"),
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

pub fn routes() -> Router<AppState> {
    Router::new().route("/openapi.json", get(openapi_json))
}

async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
