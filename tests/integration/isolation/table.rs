//! The isolation matrix's one table: every authenticated endpoint with its access class,
//! the resources it names, its success status and what it spends in phase two, and the
//! body each call sends. Adding an endpoint means adding its entry (and body) here.

use serde_json::{json, Value};

use super::fixtures::description_of;
use super::runner::Target;
use crate::support::unique;

/// Endpoints whose isolation (tenants, read-only keys, grants) is tested in their own
/// suites, because one request there reaches many collections: MCP tools
/// (tests/integration/mcp.rs) and the chat proxy, which needs an LLM upstream
/// (tests/integration/proxy.rs); and the file routes, whose bodies are multipart.
pub(super) const OWN_SUITES: [(&str, &str); 26] = [
    ("POST", "/v1/mcp"),
    ("POST", "/v1/proxy/chat/completions"),
    // The file routes: multipart bodies and batch ids made by earlier requests. Their
    // isolation (another tenant's memory, batch and upload keys; read-only keys; no key)
    // is checked by tests/integration/files.rs and the `files` conformance area in CI.
    ("POST", "/v1/memory/collections/{collection}/drop"),
    ("POST", "/v1/memory/collections/{collection}/drop/presign"),
    ("POST", "/v1/memory/collections/{collection}/drop/complete"),
    (
        "POST",
        "/v1/memory/collections/{collection}/memories/upload",
    ),
    (
        "POST",
        "/v1/memory/collections/{collection}/memories/folder",
    ),
    (
        "POST",
        "/v1/memory/collections/{collection}/memories/{memory_id}/images",
    ),
    (
        "DELETE",
        "/v1/memory/collections/{collection}/memories/{memory_id}/images/{image_index}",
    ),
    ("GET", "/v1/memory/ingest/batch/{batch_id}"),
    // Its success needs a live S3 bucket: tests/integration/files_storage.rs checks it,
    // and that other keys (agent, none) are refused.
    ("PUT", "/v1/memory/storage/config"),
    // Its success needs a live Postgres: tests/integration/database.rs checks it, and
    // that a read-only key and no key are refused.
    ("PUT", "/v1/memory/database/config"),
    // Their success needs Stripe: tests/integration/billing.rs checks them against a
    // fake, and that agent keys and no key are refused.
    ("POST", "/v1/memory/stripe/checkout/create"),
    // Writes only the caller's tenant, into collections it names; read-only keys and no
    // key are refused: tests/integration/portability.rs.
    ("POST", "/v1/memory/admin/import"),
    // A large import's progress by its id; another tenant's id is 404:
    // tests/integration/portability.rs.
    ("GET", "/v1/memory/admin/import/{import_id}"),
    ("POST", "/v1/memory/stripe/portal"),
    // Erases the caller's own account; tests/integration/erasure.rs checks that other
    // tenants survive and that read-only keys, agent keys and no key are refused.
    ("POST", "/v1/memory/admin/delete-account"),
    // Managed connectors: a success needs a provider (a fake of it). Another tenant's
    // connection is 404 to every route, read-only keys cannot create, sync, delete or
    // start OAuth, and no key is 401: tests/integration/connectors.rs (refusals) and the
    // `connectors` conformance area.
    ("POST", "/v1/memory/connections"),
    ("GET", "/v1/memory/connections"),
    ("GET", "/v1/memory/connections/{connection_id}"),
    ("DELETE", "/v1/memory/connections/{connection_id}"),
    ("POST", "/v1/memory/connections/{connection_id}/sync"),
    ("GET", "/v1/memory/connections/{connection_id}/runs"),
    ("GET", "/v1/memory/connections/oauth/{provider}/start"),
    ("POST", "/v1/memory/ingest/batch/{batch_id}/retry"),
    (
        "DELETE",
        "/v1/memory/ingest/batch/{batch_id}/items/{item_index}",
    ),
];

/// Endpoints without security in `/openapi.json`: they take no key and return no tenant's
/// data (readiness, the status page and the cookieless pageview beacon), or only the one
/// file a presigned URL's signature names (`/v1/blobs/{key}`; tampered, expired and
/// other-key URLs are refused in tests/integration/files.rs and the `files` conformance
/// area).
pub(super) const PUBLIC: [(&str, &str); 15] = [
    ("GET", "/v1/memory/health"),
    ("GET", "/v1/status"),
    ("POST", "/v1/pulse"),
    ("POST", "/v1/track"),
    ("GET", "/v1/blobs/{key}"),
    ("PUT", "/v1/blobs/{key}"),
    // A shared secret, not a key: tests/integration/internal.rs.
    ("POST", "/v1/memory/_internal/embed"),
    // Signup, recovery and the mailed reveal link: tests/integration/account.rs.
    ("POST", "/v1/memory/signup"),
    ("POST", "/v1/memory/recover-key"),
    ("GET", "/v1/memory/reveal/{token}"),
    ("POST", "/v1/memory/reveal/{token}"),
    // The mail relay's shared secret, not a key: tests/integration/email.rs.
    ("POST", "/v1/memory/email/inbound"),
    // Stripe signs it: tests/integration/billing.rs.
    ("POST", "/v1/memory/stripe/webhook"),
    // The browser's return from the provider: the single-use state names the tenant; a
    // made-up or replayed state is 400: tests/integration/connectors.rs.
    ("GET", "/v1/memory/connections/oauth/{provider}/callback"),
    // Its landing page: it shows only the id the redirect carried.
    ("GET", "/v1/memory/connections/oauth/{provider}/connected"),
];

/// The webhook the owner's own case sets: a public address literal, so the SSRF guard
/// accepts it without DNS. It is removed by the next request and no memory event happens
/// in between (queued remembers are waited for first), so nothing is ever sent to it.
pub(super) const PUBLIC_WEBHOOK_URL: &str = "https://93.184.215.14/memvault-isolation";
/// What refused webhook writes send: were one let through, the SSRF guard would refuse
/// the loopback target (422), so no webhook could be configured or delivered.
pub(super) const LOOPBACK_WEBHOOK_URL: &str = "http://127.0.0.1:9/memvault-isolation";

/// What an endpoint needs from the key, per the access model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Access {
    /// Operator endpoints: the owner key of an admin-flagged tenant only.
    Operator,
    /// Reads the caller's tenant: every key.
    TenantRead,
    /// Changes the caller's tenant: every key but read-only ones.
    TenantWrite,
    /// Keys, settings and the webhook: the owner key only.
    OwnerOnly,
    /// The key replaces itself: every key (SPEC: "authenticated by the key being rotated").
    SelfRotate,
    /// A queued remember: a read of the job's collection (its answer carries the ids and
    /// texts of the memories it stored there), so it follows that collection's grants.
    JobRead,
    /// Reads a collection: 404 when missing, 403 without a read grant.
    CollectionRead,
    /// Health and summary: a read, but a missing collection is 200 with `exists: false`.
    CollectionProbe,
    /// Changes an existing collection: 404 when missing, 403 for read-only keys and
    /// without a write grant.
    CollectionWrite,
    /// Writes into a collection, created when missing.
    CollectionCreate,
    /// Grants: the owner key only, on an existing collection.
    CollectionOwner,
}

impl Access {
    pub(super) fn reads(self) -> bool {
        matches!(
            self,
            Access::TenantRead | Access::JobRead | Access::CollectionRead | Access::CollectionProbe
        )
    }
}

/// Which resources a request can name, so which scopes it runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// No path parameter and nothing of another tenant's to name: once, on the own tenant.
    Tenant,
    /// No path parameter, but the body names a collection or search text.
    Naming,
    /// `{key_id}`.
    Key,
    /// `{job_id}`.
    Job,
    /// `{collection}`.
    Collection,
    /// `{collection}` and a memory id.
    Memory,
    /// `{collection}` and an agent key id, in the path or the body.
    Grant,
}

/// What phase two makes first, so an allowed destructive write spends a throwaway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Throwaway {
    Nothing,
    Memory,
    Collection,
    /// A collection where the ungranted agent has a grant to remove.
    GrantedCollection,
    Key,
}

pub(super) struct Entry {
    pub(super) method: &'static str,
    pub(super) template: &'static str,
    pub(super) access: Access,
    pub(super) shape: Shape,
    /// The status of an allowed call.
    pub(super) success: u16,
    pub(super) throwaway: Throwaway,
}

pub(super) const fn entry(
    method: &'static str,
    template: &'static str,
    access: Access,
    shape: Shape,
    success: u16,
) -> Entry {
    Entry {
        method,
        template,
        access,
        shape,
        success,
        throwaway: Throwaway::Nothing,
    }
}

impl Entry {
    pub(super) const fn spending(mut self, throwaway: Throwaway) -> Entry {
        self.throwaway = throwaway;
        self
    }

    /// Whether an allowed call changes data (and so runs in phase two).
    pub(super) fn changes(&self) -> bool {
        !self.access.reads() && self.method != "GET"
    }

    /// Settings and webhook calls run on a quiet tenant: no queued remember may run
    /// against a test LLM or raise an event for a configured webhook.
    pub(super) fn needs_quiet_tenant(&self) -> bool {
        self.template.starts_with("/v1/memory/extraction")
            || self.template.starts_with("/v1/memory/webhook")
    }
}

/// Every authenticated endpoint. Phase two runs the allowed writes in this order: data
/// first, then keys and settings, and rotate-key last (it retires the calling key).
#[rustfmt::skip]
pub(super) const TABLE: &[Entry] = &[
    // Operator endpoints.
    entry("POST", "/v1/memory/admin/tenants", Access::Operator, Shape::Tenant, 201),
    entry("GET", "/v1/memory/admin/metrics", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/usage", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/connectors", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/connectors/status", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/analytics", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/audit", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/memory-health", Access::Operator, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/embeddings", Access::Operator, Shape::Tenant, 200),
    // Reads of the caller's tenant.
    entry("GET", "/v1/memory/admin/me", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/stats", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/admin/export", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/collections", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/keys", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/agents", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/extraction/config", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/storage/config", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/database/config", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/spend-cap", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/email/address", Access::TenantRead, Shape::Tenant, 200),
    entry("GET", "/v1/memory/email/senders", Access::TenantRead, Shape::Tenant, 200),
    // No webhook is configured while the reads run.
    entry("GET", "/v1/memory/webhook/config", Access::TenantRead, Shape::Tenant, 404),
    entry("POST", "/v1/memory/search", Access::TenantRead, Shape::Naming, 200),
    entry("GET", "/v1/memory/extract/job/{job_id}", Access::JobRead, Shape::Job, 200),
    // Reads of a collection.
    entry("GET", "/v1/memory/collections/{collection}", Access::CollectionRead, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/memories", Access::CollectionRead, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/memories/{memory_id}", Access::CollectionRead, Shape::Memory, 200),
    entry("GET", "/v1/memory/collections/{collection}/memories/{memory_id}/related", Access::CollectionRead, Shape::Memory, 200),
    entry("GET", "/v1/memory/collections/{collection}/memories/{memory_id}/history", Access::CollectionRead, Shape::Memory, 200),
    entry("POST", "/v1/memory/collections/{collection}/search", Access::CollectionRead, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/health", Access::CollectionProbe, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/summary", Access::CollectionProbe, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/contradictions", Access::CollectionRead, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/profile", Access::CollectionRead, Shape::Collection, 200),
    entry("GET", "/v1/memory/collections/{collection}/grants", Access::CollectionRead, Shape::Collection, 200),
    // Writes of data.
    entry("POST", "/v1/memory/collections", Access::TenantWrite, Shape::Naming, 201),
    entry("POST", "/v1/memory/collections/{collection}/memories", Access::CollectionCreate, Shape::Collection, 201),
    entry("POST", "/v1/memory/collections/{collection}/memories/bulk", Access::CollectionCreate, Shape::Collection, 201),
    entry("POST", "/v1/memory/collections/{collection}/remember", Access::CollectionCreate, Shape::Collection, 202),
    entry("PUT", "/v1/memory/collections/{collection}", Access::CollectionWrite, Shape::Collection, 200),
    entry("PATCH", "/v1/memory/collections/{collection}/memories/{memory_id}", Access::CollectionWrite, Shape::Memory, 200).spending(Throwaway::Memory),
    entry("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/pin", Access::CollectionWrite, Shape::Memory, 200).spending(Throwaway::Memory),
    entry("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/archive", Access::CollectionWrite, Shape::Memory, 200).spending(Throwaway::Memory),
    entry("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/move", Access::CollectionWrite, Shape::Memory, 200).spending(Throwaway::Memory),
    // The matrix's memories are current, so an allowed call changes nothing (200); the
    // reinstating itself is tests/integration/graph.rs.
    entry("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/reinstate", Access::CollectionWrite, Shape::Memory, 200),
    entry("DELETE", "/v1/memory/collections/{collection}/memories/{memory_id}", Access::CollectionWrite, Shape::Memory, 204).spending(Throwaway::Memory),
    entry("POST", "/v1/memory/collections/{collection}/forget", Access::CollectionWrite, Shape::Collection, 200).spending(Throwaway::Memory),
    entry("POST", "/v1/memory/collections/{collection}/dedup", Access::CollectionWrite, Shape::Collection, 200),
    entry("POST", "/v1/memory/collections/{collection}/archive-stale", Access::CollectionWrite, Shape::Collection, 200),
    entry("DELETE", "/v1/memory/collections/{collection}", Access::CollectionWrite, Shape::Collection, 204).spending(Throwaway::Collection),
    entry("PUT", "/v1/memory/collections/{collection}/grants", Access::CollectionOwner, Shape::Grant, 200).spending(Throwaway::Collection),
    entry("DELETE", "/v1/memory/collections/{collection}/grants/{agent_key_id}", Access::CollectionOwner, Shape::Grant, 204).spending(Throwaway::GrantedCollection),
    // Keys, settings and the webhook.
    entry("POST", "/v1/memory/keys", Access::OwnerOnly, Shape::Tenant, 201),
    entry("DELETE", "/v1/memory/keys/{key_id}", Access::OwnerOnly, Shape::Key, 200).spending(Throwaway::Key),
    entry("PUT", "/v1/memory/spend-cap", Access::OwnerOnly, Shape::Tenant, 200),
    entry("PUT", "/v1/memory/extraction/config", Access::OwnerOnly, Shape::Tenant, 200),
    entry("DELETE", "/v1/memory/extraction/config", Access::OwnerOnly, Shape::Tenant, 204),
    entry("DELETE", "/v1/memory/storage/config", Access::OwnerOnly, Shape::Tenant, 204),
    entry("DELETE", "/v1/memory/database/config", Access::OwnerOnly, Shape::Tenant, 204),
    entry("PUT", "/v1/memory/webhook/config", Access::OwnerOnly, Shape::Tenant, 200),
    entry("DELETE", "/v1/memory/webhook/config", Access::OwnerOnly, Shape::Tenant, 204),
    entry("GET", "/v1/memory/webhook/deliveries", Access::OwnerOnly, Shape::Tenant, 200),
    entry("PUT", "/v1/memory/email/address", Access::OwnerOnly, Shape::Tenant, 200),
    entry("POST", "/v1/memory/email/address/rotate", Access::OwnerOnly, Shape::Tenant, 200),
    entry("PUT", "/v1/memory/email/senders", Access::OwnerOnly, Shape::Tenant, 200),
    // Last: it retires the calling key.
    entry("POST", "/v1/memory/admin/rotate-key", Access::SelfRotate, Shape::Tenant, 200),
];

/// The body a case sends: for an allowed call a valid one that changes only what it
/// should; for a call that must be refused the most destructive one the endpoint takes.
pub(super) fn body_for(
    entry: &Entry,
    target: &Target,
    allowed: bool,
    author: &str,
    llm_url: &str,
) -> Result<Option<Value>, String> {
    let text = format!("Written by {author} ({}).", unique("note"));
    let body = match (entry.method, entry.template) {
        ("GET", _)
        | ("DELETE", _)
        | ("POST", "/v1/memory/admin/rotate-key")
        | ("POST", "/v1/memory/email/address/rotate")
        | ("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/reinstate") => {
            return Ok(None)
        }
        ("POST", "/v1/memory/admin/tenants") => {
            let name = unique("iso-intruder");
            json!({"name": name, "email": format!("{name}@example.com"), "admin": true})
        }
        ("POST", "/v1/memory/search") | ("POST", "/v1/memory/collections/{collection}/search") => {
            json!({"query": target.query, "mode": "text", "limit": 50})
        }
        ("POST", "/v1/memory/collections") => {
            json!({"name": target.new_collection, "description": text})
        }
        ("POST", "/v1/memory/collections/{collection}/memories") => json!({"text": text}),
        ("POST", "/v1/memory/collections/{collection}/memories/bulk") => {
            json!([{"text": text}, {"text": format!("Also {text}")}])
        }
        ("POST", "/v1/memory/collections/{collection}/remember") => {
            json!({"content": format!("The {} report was filed.", unique("report"))})
        }
        ("PUT", "/v1/memory/collections/{collection}") if allowed => {
            json!({"description": description_of(&target.collection)})
        }
        ("PUT", "/v1/memory/collections/{collection}") => {
            json!({"description": text, "metadata": {"hijacked": true}})
        }
        ("PATCH", "/v1/memory/collections/{collection}/memories/{memory_id}") if allowed => {
            json!({"importance": 0.9})
        }
        ("PATCH", "/v1/memory/collections/{collection}/memories/{memory_id}") => {
            json!({"text": text, "importance": 0.01, "category": "hijacked"})
        }
        ("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/pin") => {
            json!({"pinned": true})
        }
        ("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/archive") => {
            json!({"archived": true})
        }
        ("POST", "/v1/memory/collections/{collection}/memories/{memory_id}/move") => {
            json!({"to_collection": target.move_to})
        }
        ("POST", "/v1/memory/collections/{collection}/forget") if allowed => {
            json!({"query": target.forget_text, "min_score": 0.9, "limit": 1})
        }
        ("POST", "/v1/memory/collections/{collection}/forget") => {
            json!({"query": target.query, "min_score": -1.0, "limit": 100})
        }
        ("POST", "/v1/memory/collections/{collection}/dedup") if allowed => {
            json!({"dry_run": true})
        }
        ("POST", "/v1/memory/collections/{collection}/dedup") => {
            json!({"threshold": 0.0, "dry_run": false})
        }
        ("POST", "/v1/memory/collections/{collection}/archive-stale") if allowed => {
            json!({"dry_run": true})
        }
        ("POST", "/v1/memory/collections/{collection}/archive-stale") => {
            json!({"older_than_days": 0, "dry_run": false})
        }
        ("PUT", "/v1/memory/collections/{collection}/grants") => {
            json!({"agent_key_id": target.grant_key_id, "can_read": true, "can_write": true})
        }
        ("POST", "/v1/memory/keys") => json!({"label": "iso-made"}),
        ("PUT", "/v1/memory/spend-cap") if allowed => json!({"monthly_usd": 50}),
        ("PUT", "/v1/memory/spend-cap") => json!({"monthly_usd": 0}),
        ("PUT", "/v1/memory/extraction/config") => json!({
            "provider": "custom", "base_url": llm_url, "model": "iso-model", "api_key": "sk-iso"
        }),
        ("PUT", "/v1/memory/email/address") if allowed => json!({"collection": "email"}),
        ("PUT", "/v1/memory/email/address") => json!({"collection": "hijacked"}),
        ("PUT", "/v1/memory/email/senders") if allowed => json!({"senders": ["owner@example.com"]}),
        ("PUT", "/v1/memory/email/senders") => json!({"senders": ["@evil.example"]}),
        ("PUT", "/v1/memory/webhook/config") if allowed => json!({"url": PUBLIC_WEBHOOK_URL}),
        ("PUT", "/v1/memory/webhook/config") => json!({"url": LOOPBACK_WEBHOOK_URL}),
        (method, template) => {
            return Err(format!(
                "no request body for {method} {template}: add one to `body_for` in \
                 tests/integration/isolation/table.rs"
            ))
        }
    };
    Ok(Some(body))
}
