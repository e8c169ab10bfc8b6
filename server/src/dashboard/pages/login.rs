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
            p.small.muted {
                "Lost the key? "
                a href="../v1/memory/recover-key" { "Key recovery" }
                " mails a one-time link to the account's address (POST its email to "
                code { "/v1/memory/recover-key" } ")."
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
    let id = state.sessions.open(agent.tenant_id, agent.key_id);
    let mut response = crate::dashboard::see_other("./", "");
    response.headers_mut().insert(
        SET_COOKIE,
        session::session_cookie(&id, state.secure_cookies),
    );
    response
}

/// `POST /dashboard/logout`: the session ends here and in the browser.
pub async fn sign_out(
    State(state): State<Dashboard>,
    headers: HeaderMap,
    change: Change,
) -> Response {
    if let Some(id) = session::cookie(&headers) {
        state.sessions.close(&id);
    }
    let mut response = crate::dashboard::see_other(&change.viewer.base, "login");
    response
        .headers_mut()
        .insert(SET_COOKIE, session::cleared_cookie(state.secure_cookies));
    response.into_response()
}
