//! The dashboard: server-rendered pages under `/dashboard`, served by the same binary on
//! the same origin as the API.
//!
//! - Pages are maud templates (compiled with the crate, every value HTML-escaped), with a
//!   stylesheet, a small script of our own and a vendored htmx (`assets/`); no build step,
//!   no inline script, every URL relative (a `<base>` per page), so the dashboard works
//!   behind a path prefix and with JavaScript off.
//! - Sign-in turns a pasted key into a server-side session ([`session`]); each request
//!   re-checks the key, so revoking it ends its sessions at once.
//! - Reads take the same access proofs as the API's handlers; every change is a request
//!   to the API itself, in process, as the session's agent ([`client`]): the same
//!   validation, authorization, rate limit, audit entry and events as a REST call.

pub mod assets;
pub mod client;
mod layout;
mod pages;
pub mod session;

use std::sync::Arc;

use axum::extract::Request;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::api::AppState;
use client::Api;
use memvault_storage::SessionStore;
use session::Sessions;

/// What every dashboard handler reaches.
#[derive(Clone)]
pub struct Dashboard {
    pub app: AppState,
    pub api: Api,
    pub sessions: Sessions,
    /// `Secure` on the session cookie: the public address is https.
    pub secure_cookies: bool,
    /// The origin (`scheme://host[:port]`) of `server.public_url`, when set: changes whose
    /// `Origin` is this one are same-origin even behind a proxy that rewrites `Host`.
    pub public_origin: Option<String>,
}

/// The API router with the dashboard beside it (`/dashboard/...`, and `/` leads there).
pub fn router(state: AppState, api: Router, sessions: Arc<dyn SessionStore>) -> Router {
    let public_url = state.public_url.clone();
    let public_origin = public_url.as_deref().and_then(session::origin_of);
    let cluster_state = state.clone();
    let dashboard = Dashboard {
        secure_cookies: public_url
            .as_deref()
            .is_some_and(|url| url.starts_with("https://")),
        public_origin,
        app: state,
        api: Api::new(api.clone()),
        sessions: Sessions::new(sessions),
    };
    let pages = Router::new()
        .route("/", get(|| async { Redirect::to("dashboard/") }))
        .route("/dashboard", get(|| async { Redirect::to("dashboard/") }))
        .route("/dashboard/assets/{file}", get(assets::serve))
        .route(
            "/dashboard/login",
            get(pages::login::form).post(pages::login::sign_in),
        )
        .route("/dashboard/logout", post(pages::login::sign_out))
        .route("/dashboard/recover", post(pages::login::recover))
        .route("/dashboard/", get(pages::overview::show))
        .merge(pages::collections::routes())
        .merge(pages::memories::routes())
        .merge(pages::files::routes())
        .merge(pages::connectors::routes())
        .merge(pages::keys::routes())
        .merge(pages::webhook::routes())
        .merge(pages::audit::routes())
        .merge(pages::usage::routes())
        .merge(pages::account::routes())
        .merge(pages::operator::routes())
        .layer(axum::middleware::from_fn(secure_headers))
        // Several nodes: a page goes to its account's node (found by its session cookie,
        // or by the key a sign-in posts), like a request of the API.
        .layer(axum::middleware::from_fn_with_state(
            cluster_state,
            crate::cluster::route,
        ))
        .with_state(dashboard);
    api.merge(pages)
}

/// The dashboard's response headers: a strict Content-Security-Policy (scripts and styles
/// from this origin only, no inline script, no framing), and pages never cached.
async fn secure_headers(request: Request, next: Next) -> Response {
    let asset = request.uri().path().starts_with("/dashboard/assets/");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; form-action 'self'; base-uri 'self'; object-src 'none'; \
             frame-ancestors 'none'",
        ),
    );
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    if !asset {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// A redirect that keeps the browser in the dashboard wherever it is mounted: `target` is
/// relative to `/dashboard/`, `base` the current page's way back there.
pub(crate) fn see_other(base: &str, target: &str) -> Response {
    let location = format!("{base}{target}");
    (
        axum::http::StatusCode::SEE_OTHER,
        [(axum::http::header::LOCATION, location)],
    )
        .into_response()
}
