//! Sign-in with a pasted key, sign-out.

use axum::extract::State;
use axum::http::header::SET_COOKIE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::html;

use crate::api::auth::authenticate_secret;
use crate::dashboard::layout;
use crate::dashboard::session::{self, Change, Fields};
use crate::dashboard::Dashboard;

/// `GET /dashboard/login`.
pub async fn form() -> Response {
    sign_in_page(StatusCode::OK, None)
}

fn sign_in_page(status: StatusCode, error: Option<(&str, &str)>) -> Response {
    layout::bare(
        status,
        "./",
        "Sign in",
        html! {
            h1 { "memvault" }
            div.panel {
                @if let Some((detail, code)) = error {
                    (layout::error_notice(detail, code))
                }
                form.stack method="post" action="login" {
                    div {
                        label for="key" { "API key" }
                        input.wide #key type="password" name="key" autocomplete="off"
                            placeholder="mv_..." required autofocus;
                    }
                    p.small.muted {
                        "Paste the account's owner key, or an agent key to see what it may see. "
                        "The key is checked once and kept only on the server; the browser gets a "
                        "session cookie that scripts cannot read."
                    }
                    button type="submit" { "Sign in" }
                }
            }
            div.panel {
                form.stack method="post" action="recover" {
                    div {
                        label for="email" { "Lost the key? The account's email address" }
                        input.wide #email type="email" name="email" autocomplete="email" required;
                    }
                    p.small.muted {
                        "A one-time link goes to that address. It shows a new owner key (the old one "
                        "stops working) and signs you in here with it."
                    }
                    button.secondary type="submit" { "Mail me a sign-in link" }
                }
            }
        },
    )
}

/// `POST /dashboard/login`: a valid key opens a session and goes to the overview.
pub async fn sign_in(
    State(state): State<Dashboard>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Err(reason) = session::check_origin(&headers, &state) {
        let code = crate::error::ApiError::CrossOriginRefused(String::new()).code();
        return sign_in_page(StatusCode::FORBIDDEN, Some((&reason, code.as_str())));
    }
    let fields = Fields::parse(&body);
    let Some(key) = fields.get("key") else {
        return sign_in_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            Some(("paste an API key (it starts with mv_)", "validation_error")),
        );
    };
    let agent = match authenticate_secret(key, &state.app.authorizer) {
        Ok(agent) => agent,
        Err(error) => {
            let detail = error.detail_logged("dashboard sign-in");
            return sign_in_page(error.status(), Some((&detail, error.code().as_str())));
        }
    };
    let id = match state.sessions.open(agent.tenant_id, agent.key_id).await {
        Ok(id) => id,
        Err(error) => return session::unavailable("./", error),
    };
    let mut response = crate::dashboard::see_other("./", "");
    response.headers_mut().insert(
        SET_COOKIE,
        session::session_cookie(&id, state.secure_cookies),
    );
    response
}

/// `POST /dashboard/recover`: the key recovery of the API (a mailed one-time link whose
/// page reveals a new owner key and signs in with it). Answered the same whether the
/// address has an account or not.
pub async fn recover(State(state): State<Dashboard>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let Ok(body) = axum::body::to_bytes(body, 16 * 1024).await else {
        return sign_in_page(
            StatusCode::PAYLOAD_TOO_LARGE,
            Some(("the form is too large", "payload_too_large")),
        );
    };
    if let Err(reason) = session::check_origin(headers, &state) {
        let code = crate::error::ApiError::CrossOriginRefused(String::new()).code();
        return sign_in_page(StatusCode::FORBIDDEN, Some((&reason, code.as_str())));
    }
    let fields = Fields::parse(&body);
    let email = fields.get("email").unwrap_or("");
    let answer = state
        .api
        .public_post(
            "/v1/memory/recover-key",
            &serde_json::json!({ "email": email }),
            &parts,
        )
        .await;
    match crate::dashboard::client::read_json(answer).await {
        Ok(_) => layout::bare(
            StatusCode::OK,
            "./",
            "Check your mail",
            html! {
                h1 { "Check your mail" }
                div.panel {
                    p { "If " strong { (email) } " is an account's address, a one-time link is on its way. "
                        "Open it, reveal the new key, and press “Sign in to the dashboard with it”." }
                    p.small.muted { "The link works once, for a limited time." }
                }
                p { a href="login" { "Back to sign-in" } }
            },
        ),
        Err(failure) => sign_in_page(failure.status, Some((&failure.detail, &failure.code))),
    }
}

/// `POST /dashboard/logout`: the session ends here and in the browser.
pub async fn sign_out(
    State(state): State<Dashboard>,
    headers: HeaderMap,
    change: Change,
) -> Response {
    if let Some(id) = session::cookie(&headers) {
        if let Err(error) = state.sessions.close(&id).await {
            return session::unavailable(&change.viewer.base, error);
        }
    }
    let mut response = crate::dashboard::see_other(&change.viewer.base, "login");
    response
        .headers_mut()
        .insert(SET_COOKIE, session::cleared_cookie(state.secure_cookies));
    response.into_response()
}
