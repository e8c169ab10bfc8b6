//! Sign-in sessions and the checks every dashboard request passes.
//!
//! - A session is opened by a pasted API key: the browser gets a random 256-bit id in an
//!   `HttpOnly; SameSite=Strict` cookie (`Secure` under https); the store keeps only the
//!   id's SHA-256, with the tenant, the key's id and the session's CSRF token, so a restart
//!   keeps sessions and every node finds them. The key itself is never stored, and never
//!   reaches a script.
//! - [`Viewer`]: each request re-resolves the key by id ([`Authorizer::agent_of_key`]), so a
//!   revoked or expired key ends its sessions at the next request.
//! - [`Change`]: a change (every POST) also needs a same-origin `Origin` (or
//!   `Sec-Fetch-Site: same-origin`) and the session's CSRF token in its form.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::header::{COOKIE, HOST, ORIGIN};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use memvault_core::Agent;
use memvault_storage::{SessionRecord, SessionStore, StorageError, TenantId};
use rand::RngCore;
use sha2::{Digest, Sha256};

use super::layout;
use super::Dashboard;
use crate::error::ApiError;

/// The session cookie's name.
pub const COOKIE_NAME: &str = "mv_session";
/// A session unused this long is closed.
const IDLE: Duration = Duration::from_secs(12 * 3600);
/// And any session this old.
const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// A session's last use is written to the store at most this often (a page view is a
/// read, not a write).
const TOUCH_EVERY: Duration = Duration::from_secs(5 * 60);
/// Most sessions one account keeps at once; the least recently used goes first beyond it.
pub const MAX_SESSIONS_PER_TENANT: usize = 100;
/// The largest change form read (a memory's text is at most 10,000 characters).
const MAX_FORM_BYTES: usize = 256 * 1024;

/// Open sessions, kept in the store by the SHA-256 of their id (so a restart keeps them
/// and every node finds them). The `*_at` calls block on the store and take the instant
/// to judge by; the others run them off the async threads, now.
#[derive(Clone)]
pub struct Sessions {
    store: Arc<dyn SessionStore>,
}

/// What a session names.
pub struct SessionKey {
    pub tenant: TenantId,
    pub key_id: String,
    pub csrf: String,
}

fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// The hex SHA-256 a session is stored (and several nodes route it) by.
pub fn session_hash(id: &str) -> String {
    hex::encode(Sha256::digest(id.as_bytes()))
}

fn after(at: DateTime<Utc>, span: Duration) -> DateTime<Utc> {
    at + chrono::Duration::from_std(span).unwrap_or(chrono::Duration::MAX)
}

/// The session's end: idle since `seen_at`, or too old.
fn ends(created_at: DateTime<Utc>, seen_at: DateTime<Utc>) -> DateTime<Utc> {
    after(seen_at, IDLE).min(after(created_at, MAX_AGE))
}

async fn off_thread<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StorageError> + Send + 'static,
) -> Result<T, StorageError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| {
            Err(StorageError::Backend(format!(
                "session task failed: {error}"
            )))
        })
}

impl Sessions {
    pub fn new(store: Arc<dyn SessionStore>) -> Self {
        Self { store }
    }

    /// A new session for the key; returns the id for the cookie (stored only hashed).
    /// Beyond [`MAX_SESSIONS_PER_TENANT`], the account's least recently used ones end.
    pub fn open_at(
        &self,
        tenant: TenantId,
        key_id: String,
        now: DateTime<Utc>,
    ) -> Result<String, StorageError> {
        let mut others = self.store.sessions_of(&tenant)?;
        others.sort_by_key(|session| std::cmp::Reverse(session.seen_at));
        for (kept, session) in others.iter().enumerate() {
            if kept + 1 >= MAX_SESSIONS_PER_TENANT || session.expires_at <= now {
                self.store.delete_session(&session.id_hash)?;
            }
        }
        let id = random_hex();
        self.store.put_session(&SessionRecord {
            id_hash: session_hash(&id),
            tenant_id: tenant,
            key_id,
            csrf: random_hex(),
            created_at: now,
            seen_at: now,
            expires_at: ends(now, now),
        })?;
        Ok(id)
    }

    /// The live session with this id; its use is recorded (every few minutes).
    pub fn get_at(&self, id: &str, now: DateTime<Utc>) -> Result<Option<SessionKey>, StorageError> {
        let hash = session_hash(id);
        let Some(mut session) = self.store.session(&hash)? else {
            return Ok(None);
        };
        if session.expires_at <= now {
            self.store.delete_session(&hash)?;
            return Ok(None);
        }
        if now - session.seen_at >= chrono::Duration::from_std(TOUCH_EVERY).unwrap_or_default() {
            session.seen_at = now;
            session.expires_at = ends(session.created_at, now);
            self.store.put_session(&session)?;
        }
        Ok(Some(SessionKey {
            tenant: session.tenant_id,
            key_id: session.key_id,
            csrf: session.csrf,
        }))
    }

    pub fn close_at(&self, id: &str) -> Result<(), StorageError> {
        self.store.delete_session(&session_hash(id)).map(drop)
    }

    pub async fn open(&self, tenant: TenantId, key_id: String) -> Result<String, StorageError> {
        let sessions = self.clone();
        off_thread(move || sessions.open_at(tenant, key_id, Utc::now())).await
    }

    pub async fn get(&self, id: &str) -> Result<Option<SessionKey>, StorageError> {
        let (sessions, id) = (self.clone(), id.to_owned());
        off_thread(move || sessions.get_at(&id, Utc::now())).await
    }

    pub async fn close(&self, id: &str) -> Result<(), StorageError> {
        let (sessions, id) = (self.clone(), id.to_owned());
        off_thread(move || sessions.close_at(&id)).await
    }
}

/// The `Set-Cookie` value that opens a session.
pub fn session_cookie(id: &str, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    // No Path: the browser scopes the cookie to the directory of the sign-in page, which
    // is the dashboard wherever a proxy mounts it.
    HeaderValue::from_str(&format!(
        "{COOKIE_NAME}={id}; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        MAX_AGE.as_secs()
    ))
    .expect("hex and ASCII")
}

/// The `Set-Cookie` value that removes it.
pub fn cleared_cookie(secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{COOKIE_NAME}=; HttpOnly; SameSite=Strict; Max-Age=0{secure}"
    ))
    .expect("ASCII")
}

/// The session cookie's value, if the request carries one.
pub fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value.to_owned())
        .filter(|value| value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `scheme://host[:port]` of a URL.
pub fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    (!authority.is_empty()).then(|| format!("{}://{}", scheme.to_ascii_lowercase(), authority))
}

/// The way back to `/dashboard/` from a path under it: `./` on the dashboard's first
/// level, one `../` per level below. Pages put it in `<base href>`, so every link and
/// form is relative to the dashboard's root wherever it is mounted.
pub fn base_of(path: &str) -> String {
    let below = path.strip_prefix("/dashboard/").unwrap_or("");
    match below.matches('/').count() {
        0 => "./".to_owned(),
        depth => "../".repeat(depth),
    }
}

/// The signed-in agent behind a dashboard request.
pub struct Viewer {
    pub agent: Agent,
    /// The session's CSRF token, for the forms of the page.
    pub csrf: String,
    /// The way back to `/dashboard/` (see [`base_of`]).
    pub base: String,
    /// The browser's address and `X-Forwarded-For`, passed on to the API (its audit log
    /// records the client).
    pub client: Option<ConnectInfo<SocketAddr>>,
    pub forwarded_for: Option<HeaderValue>,
}

impl Viewer {
    /// May change things (not a read-only key).
    pub fn may_write(&self) -> bool {
        !self.agent.read_only
    }

    pub fn is_owner(&self) -> bool {
        self.agent.owner
    }

    pub fn is_operator(&self) -> bool {
        self.agent.owner && self.agent.admin
    }
}

/// Where a request without a live session goes: the sign-in page (htmx requests are told
/// to go there as a whole page).
fn to_sign_in(parts: &Parts, base: &str) -> Response {
    if parts.headers.contains_key("hx-request") {
        let mut response = StatusCode::NO_CONTENT.into_response();
        if let Ok(value) = HeaderValue::from_str(&format!("{base}login")) {
            response.headers_mut().insert("hx-redirect", value);
        }
        return response;
    }
    super::see_other(base, "login")
}

/// The page of a request whose session could not be read (the store did not answer).
pub fn unavailable(base: &str, error: StorageError) -> Response {
    let failure =
        super::client::Failure::from(ApiError::from(memvault_core::Error::Storage(error)));
    layout::bare(
        failure.status,
        base,
        "Unavailable",
        maud::html! { (layout::error_notice(&failure.detail, &failure.code)) },
    )
}

impl FromRequestParts<Dashboard> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &Dashboard) -> Result<Self, Response> {
        let base = base_of(parts.uri.path());
        let Some(id) = cookie(&parts.headers) else {
            return Err(to_sign_in(parts, &base));
        };
        let session = match state.sessions.get(&id).await {
            Ok(Some(session)) => session,
            Ok(None) => return Err(to_sign_in(parts, &base)),
            Err(error) => return Err(unavailable(&base, error)),
        };
        let agent = match state
            .app
            .authorizer
            .agent_of_key(&session.tenant, &session.key_id)
        {
            Ok(agent) => agent,
            Err(_) => {
                // Revoked, expired, or its account erased: the session ends with it.
                if let Err(error) = state.sessions.close(&id).await {
                    return Err(unavailable(&base, error));
                }
                return Err(to_sign_in(parts, &base));
            }
        };
        Ok(Viewer {
            agent,
            csrf: session.csrf,
            base,
            client: parts.extensions.get::<ConnectInfo<SocketAddr>>().cloned(),
            forwarded_for: parts.headers.get("x-forwarded-for").cloned(),
        })
    }
}

/// Refuses a change whose `Origin` is not this dashboard's.
pub fn check_origin(headers: &HeaderMap, state: &Dashboard) -> Result<(), String> {
    // `Origin: null` is what a page with `Referrer-Policy: no-referrer` sends (the mailed
    // reveal page's sign-in button): then the browser's Sec-Fetch-Site decides.
    let origin = headers
        .get(ORIGIN)
        .and_then(|value| value.to_str().ok())
        .filter(|origin| *origin != "null");
    let Some(origin) = origin else {
        let same_site = headers
            .get("sec-fetch-site")
            .and_then(|value| value.to_str().ok());
        return match same_site {
            Some("same-origin") => Ok(()),
            _ => Err("the request names no Origin; changes are accepted only from the dashboard's own pages".to_owned()),
        };
    };
    if state.public_origin.as_deref() == Some(origin) {
        return Ok(());
    }
    let host = headers.get(HOST).and_then(|value| value.to_str().ok());
    let authority = origin.split_once("://").map(|(_, authority)| authority);
    match (host, authority) {
        (Some(host), Some(authority)) if host.eq_ignore_ascii_case(authority) => Ok(()),
        _ => Err(format!(
            "a change from another origin ({origin}) is refused; use the dashboard's own pages"
        )),
    }
}

/// A change form's fields, in order (a field may repeat, e.g. the ids of a bulk action).
pub struct Fields(Vec<(String, String)>);

impl Fields {
    pub fn parse(body: &[u8]) -> Self {
        Fields(
            form_urlencoded::parse(body)
                .map(|(name, value)| (name.into_owned(), value.into_owned()))
                .collect(),
        )
    }

    /// The field's value, trimmed; `None` when absent or blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.trim())
            .filter(|value| !value.is_empty())
    }

    /// The field's value as sent (not trimmed), or "".
    pub fn raw(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.as_str())
            .unwrap_or("")
    }

    /// Every value of a repeated field.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(field, _)| field == name)
            .map(|(_, value)| value.as_str())
            .collect()
    }

    /// A checkbox: present and not "false"/"off".
    pub fn flag(&self, name: &str) -> bool {
        self.get(name)
            .is_some_and(|value| !matches!(value, "false" | "off" | "0"))
    }
}

/// A change: a signed-in viewer, a same-origin request and the session's CSRF token in the
/// form (field `csrf`). Anything else is refused with 403 before the handler runs.
pub struct Change {
    pub viewer: Viewer,
    pub fields: Fields,
}

/// The form field that carries the CSRF token.
pub const CSRF_FIELD: &str = "csrf";

impl FromRequest<Dashboard> for Change {
    type Rejection = Response;

    async fn from_request(request: Request, state: &Dashboard) -> Result<Self, Response> {
        let (viewer, _parts, body) = same_origin_viewer(request, state).await?;
        let bytes = match axum::body::to_bytes(body, MAX_FORM_BYTES).await {
            Ok(bytes) => bytes,
            Err(_) => {
                return Err(layout::refused(
                    &viewer,
                    ApiError::PayloadTooLarge(
                        "the form is larger than the dashboard accepts (256 KiB)".to_owned(),
                    ),
                ))
            }
        };
        let fields = Fields::parse(&bytes);
        if !token_matches(&viewer, fields.raw(CSRF_FIELD)) {
            return Err(token_refused(&viewer));
        }
        Ok(Change { viewer, fields })
    }
}

/// The signed-in viewer of a change, once its `Origin` is found to be the dashboard's
/// (else the 403 page); the request's parts and body for the rest of the checks.
async fn same_origin_viewer(
    request: Request,
    state: &Dashboard,
) -> Result<(Viewer, Parts, axum::body::Body), Response> {
    let (mut parts, body) = request.into_parts();
    let viewer = Viewer::from_request_parts(&mut parts, state).await?;
    if let Err(reason) = check_origin(&parts.headers, state) {
        return Err(layout::refused(
            &viewer,
            ApiError::CrossOriginRefused(reason),
        ));
    }
    Ok((viewer, parts, body))
}

/// Whether a change carries the session's CSRF token (compared in constant time).
pub fn token_matches(viewer: &Viewer, token: &str) -> bool {
    let expected = viewer.csrf.as_bytes();
    let given = token.as_bytes();
    expected.len() == given.len()
        && expected
            .iter()
            .zip(given)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The refusal of a change without the session's CSRF token.
fn token_refused(viewer: &Viewer) -> Response {
    layout::refused(viewer, ApiError::CsrfTokenInvalid)
}

/// A change whose body the handler reads itself (a file upload): the same checks as
/// [`Change`], with the CSRF token in the query string (`?csrf=`).
pub struct Upload {
    pub viewer: Viewer,
    pub request: Request,
}

impl FromRequest<Dashboard> for Upload {
    type Rejection = Response;

    async fn from_request(request: Request, state: &Dashboard) -> Result<Self, Response> {
        let (viewer, parts, body) = same_origin_viewer(request, state).await?;
        let token = parts
            .uri
            .query()
            .map(|query| Fields::parse(query.as_bytes()))
            .and_then(|fields| fields.get(CSRF_FIELD).map(str::to_owned))
            .unwrap_or_default();
        if !token_matches(&viewer, &token) {
            return Err(token_refused(&viewer));
        }
        Ok(Upload {
            viewer,
            request: Request::from_parts(parts, body),
        })
    }
}
