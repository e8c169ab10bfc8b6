//! Sign-in sessions and the checks every dashboard request passes.
//!
//! - A session is opened by a pasted API key: the browser gets a random 256-bit id in an
//!   `HttpOnly; SameSite=Strict` cookie (`Secure` under https); the server keeps only the
//!   id's SHA-256, with the tenant, the key's id and the session's CSRF token. The key
//!   itself is never stored, and never reaches a script.
//! - [`Viewer`]: each request re-resolves the key by id ([`Authorizer::agent_of_key`]), so a
//!   revoked or expired key ends its sessions at the next request.
//! - [`Change`]: a change (every POST) also needs a same-origin `Origin` (or
//!   `Sec-Fetch-Site: same-origin`) and the session's CSRF token in its form.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::header::{COOKIE, HOST, ORIGIN};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use memvault_core::Agent;
use memvault_storage::TenantId;
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
/// Most sessions kept at once; the least recently used goes first beyond it.
const MAX_SESSIONS: usize = 10_000;
/// The largest change form read (a memory's text is at most 10,000 characters).
const MAX_FORM_BYTES: usize = 256 * 1024;

/// Open sessions, by the SHA-256 of their id.
#[derive(Default)]
pub struct Sessions {
    open: Mutex<HashMap<[u8; 32], Session>>,
}

#[derive(Clone)]
struct Session {
    tenant: TenantId,
    key_id: String,
    csrf: String,
    created: Instant,
    seen: Instant,
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

fn digest(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

impl Sessions {
    /// A new session for the key; returns the id for the cookie (kept only hashed).
    pub fn open(&self, tenant: TenantId, key_id: String) -> String {
        let id = random_hex();
        let now = Instant::now();
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        open.retain(|_, session| live(session, now));
        if open.len() >= MAX_SESSIONS {
            if let Some(oldest) = open
                .iter()
                .min_by_key(|(_, session)| session.seen)
                .map(|(hash, _)| *hash)
            {
                open.remove(&oldest);
            }
        }
        open.insert(
            digest(&id),
            Session {
                tenant,
                key_id,
                csrf: random_hex(),
                created: now,
                seen: now,
            },
        );
        id
    }

    /// The live session with this id, marked as used now.
    pub fn get(&self, id: &str) -> Option<SessionKey> {
        let now = Instant::now();
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let hash = digest(id);
        let session = open.get_mut(&hash)?;
        if !live(session, now) {
            open.remove(&hash);
            return None;
        }
        session.seen = now;
        Some(SessionKey {
            tenant: session.tenant.clone(),
            key_id: session.key_id.clone(),
            csrf: session.csrf.clone(),
        })
    }

    pub fn close(&self, id: &str) {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        open.remove(&digest(id));
    }
}

fn live(session: &Session, now: Instant) -> bool {
    now.duration_since(session.seen) < IDLE && now.duration_since(session.created) < MAX_AGE
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

impl FromRequestParts<Dashboard> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &Dashboard) -> Result<Self, Response> {
        let base = base_of(parts.uri.path());
        let Some(id) = cookie(&parts.headers) else {
            return Err(to_sign_in(parts, &base));
        };
        let Some(session) = state.sessions.get(&id) else {
            return Err(to_sign_in(parts, &base));
        };
        let agent = match state
            .app
            .authorizer
            .agent_of_key(&session.tenant, &session.key_id)
        {
            Ok(agent) => agent,
            Err(_) => {
                // Revoked, expired, or its account erased: the session ends with it.
                state.sessions.close(&id);
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
