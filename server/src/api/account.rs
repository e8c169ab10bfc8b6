//! Accounts that run themselves (public, no key): `POST /v1/memory/signup`,
//! `POST /v1/memory/recover-key`, and the one-time reveal at `/v1/memory/reveal/{token}`:
//! GET shows a confirmation page and burns nothing (mail scanners open links before
//! people do); POST from that page reveals the key once.
//!
//! Signup and recovery are limited per client address (`account.requests_per_minute`,
//! with `RateLimit-*` headers and 429 + `Retry-After`), and answer 202 with the same body
//! whatever the email: whether an address has an account is never told.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use memvault_accounts::reveal::escape_html;
use memvault_accounts::{Accounts, RevealPurpose};
use memvault_core::Error as ServiceError;
use memvault_types::rate_limit::{Decision, FixedWindowLimiter, RateLimiter};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::valid_email;
use super::audit::{Audit, AuditRoutes};
use super::client::ClientAddress;
use super::extract::{ApiJson, ApiPath};
use super::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};

/// Nested at `/v1/memory`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(signup).audit(Audit::NoTenantChange))
        .routes(routes!(recover_key).audit(Audit::NoTenantChange))
        .routes(routes!(reveal_page))
        .routes(routes!(reveal_key).audit(Audit::NoTenantChange))
}

/// How the public account routes are limited (config `[account]`).
pub struct AccountLimits {
    pub signup_enabled: bool,
    /// Signup and recover-key requests per client address per minute.
    pub per_minute: u32,
    pub limiter: FixedWindowLimiter,
}

impl Default for AccountLimits {
    fn default() -> Self {
        Self {
            signup_enabled: true,
            per_minute: 10,
            limiter: FixedWindowLimiter::new(100_000),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailRequest {
    /// The account's mail address: an ASCII local part (at most 64 characters), `@`, a
    /// host name.
    #[schema(
        example = "ada@example.com",
        max_length = 254,
        pattern = r"^[ \t\r\n]*[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*[ \t\r\n]*$"
    )]
    pub email: String,
}

/// The answer of signup and recover-key: the same whatever the email.
#[derive(Debug, Serialize, ToSchema)]
pub struct MailSentResponse {
    /// Always `mail_sent`.
    pub status: &'static str,
    pub detail: String,
}

const SIGNUP_DETAIL: &str = "If this address can sign up, a mail with a one-time link to its \
                             API key is on its way. The link works once.";
const RECOVER_DETAIL: &str = "If this address has an account, a mail with a one-time link to a \
                              new API key is on its way. The current key works until the new \
                              one is revealed.";

/// Creates a `free` account for the email (one per email) and mails a one-time link that
/// reveals its API key. The answer is the same for an email that has an account already
/// (no second account, no mail).
#[utoipa::path(post, path = "/signup", tag = "account",
    request_body = EmailRequest,
    responses((status = 202, body = MailSentResponse), (status = 403, body = ErrorBody, description = "signup turned off"),
        (status = 422, body = ErrorBody), (status = 429, body = ErrorBody),
        (status = 503, body = ErrorBody, description = "the server sends no mail")))]
pub async fn signup(
    State(accounts): State<Accounts>,
    State(state): State<AppState>,
    ClientAddress(client): ClientAddress,
    ApiJson(request): ApiJson<EmailRequest>,
) -> Response {
    per_address(&state, &client, async {
        if !state.account_limits.signup_enabled {
            return Err(ApiError::SignupDisabled);
        }
        let email = valid_email(&request.email)?;
        accounts.signup(&email).await?;
        Ok(mail_sent(SIGNUP_DETAIL))
    })
    .await
}

/// Mails a one-time link that reveals a new API key for the account of this email; the
/// current key keeps working until the link is used. Unknown emails get the same answer
/// (and no mail).
#[utoipa::path(post, path = "/recover-key", tag = "account",
    request_body = EmailRequest,
    responses((status = 202, body = MailSentResponse), (status = 422, body = ErrorBody),
        (status = 429, body = ErrorBody),
        (status = 503, body = ErrorBody, description = "the server sends no mail")))]
pub async fn recover_key(
    State(accounts): State<Accounts>,
    State(state): State<AppState>,
    ClientAddress(client): ClientAddress,
    ApiJson(request): ApiJson<EmailRequest>,
) -> Response {
    per_address(&state, &client, async {
        let email = valid_email(&request.email)?;
        accounts.recover(&email).await?;
        Ok(mail_sent(RECOVER_DETAIL))
    })
    .await
}

/// Runs `work` when the client's address is within its limit (429 otherwise), and puts
/// the `RateLimit-*` headers on the answer.
async fn per_address<R: IntoResponse>(
    state: &AppState,
    client: &str,
    work: impl std::future::Future<Output = ApiResult<R>>,
) -> Response {
    let decision = match limited(state, client) {
        Ok(decision) => decision,
        Err(response) => return *response,
    };
    with_limit_headers(work.await, decision)
}

fn mail_sent(detail: &str) -> (StatusCode, Json<MailSentResponse>) {
    (
        StatusCode::ACCEPTED,
        Json(MailSentResponse {
            status: "mail_sent",
            detail: detail.to_owned(),
        }),
    )
}

/// Counts the request against the client's window; over the limit, the 429 to answer.
fn limited(state: &AppState, client: &str) -> Result<Option<Decision>, Box<Response>> {
    let limits = &state.account_limits;
    let now = unix_now();
    let decision = match limits
        .limiter
        .check(&format!("account:{client}"), limits.per_minute, now)
    {
        Ok(decision) => decision,
        Err(unavailable) => {
            tracing::warn!(%unavailable, "account rate limiter unavailable; request let through");
            return Ok(None);
        }
    };
    if decision.allowed {
        return Ok(Some(decision));
    }
    let retry = decision.retry_after(now);
    let mut response = ApiError::RateLimited(format!(
        "at most {} signup and recover-key requests per minute from one address; retry in {retry} s",
        decision.limit
    ))
    .into_response();
    set_limit_headers(response.headers_mut(), &decision);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry));
    Err(Box::new(response))
}

fn with_limit_headers(
    outcome: ApiResult<impl IntoResponse>,
    decision: Option<Decision>,
) -> Response {
    let mut response = match outcome {
        Ok(answer) => answer.into_response(),
        Err(error) => error.into_response(),
    };
    if let Some(decision) = decision {
        set_limit_headers(response.headers_mut(), &decision);
    }
    response
}

fn set_limit_headers(headers: &mut HeaderMap, decision: &Decision) {
    headers.insert("ratelimit-limit", HeaderValue::from(decision.limit));
    headers.insert("ratelimit-remaining", HeaderValue::from(decision.remaining));
    headers.insert("ratelimit-reset", HeaderValue::from(decision.reset));
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0)
}

/// A reveal link that still works, for a client that asked for JSON.
#[derive(Debug, Serialize, ToSchema)]
pub struct RevealLinkResponse {
    /// Always `valid` (a link that does not work is a 404).
    pub status: &'static str,
    pub tenant_name: String,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    pub detail: &'static str,
}

/// A revealed key, for a client that asked for JSON.
#[derive(Debug, Serialize, ToSchema)]
pub struct RevealedKeyResponse {
    /// The new owner key; shown this once. The previous owner key no longer works.
    pub api_key: String,
    pub key_id: String,
    pub tenant_id: String,
    pub tenant_name: String,
    pub email: String,
}

/// The confirmation page of a reveal link: it names the account and has the button that
/// reveals the key (a POST to the same URL). Opening it burns nothing. An unknown, used
/// or expired link answers 404. Answers JSON when the client accepts JSON but not HTML.
#[utoipa::path(get, path = "/reveal/{token}", tag = "account",
    params(("token" = String, Path, description = "the token of the mailed link")),
    responses(
        (status = 200, description = "the confirmation page", content(
            (String = "text/html"), (RevealLinkResponse = "application/json"))),
        (status = 404, description = "unknown, used or expired link", content(
            (String = "text/html"), (ErrorBody = "application/json")))))]
pub async fn reveal_page(
    State(accounts): State<Accounts>,
    headers: HeaderMap,
    ApiPath(token): ApiPath<String>,
) -> Response {
    let json = wants_json(&headers);
    match accounts.inspect(&token).await {
        Ok(view) if json => private(
            Json(RevealLinkResponse {
                status: "valid",
                tenant_name: view.tenant_name,
                expires_at: view.expires_at,
                detail: "POST to this URL to reveal the key (once)",
            })
            .into_response(),
        ),
        Ok(view) => {
            let what = match view.purpose {
                RevealPurpose::Signup => "the API key of your new account",
                RevealPurpose::Recover => {
                    "a new API key for your account (the current one stops working)"
                }
            };
            private(
                Html(page(
                    "Reveal your memvault key",
                    &format!(
                        "<p>This link shows {what} <strong>{}</strong>, once.</p>\
                         <form method=\"post\"><input type=\"hidden\" name=\"confirm\" value=\"reveal\">\
                         <button type=\"submit\">Show my API key</button></form>\
                         <p>The link works until {} UTC.</p>",
                        escape_html(&view.tenant_name),
                        view.expires_at.format("%Y-%m-%d %H:%M"),
                    ),
                ))
                .into_response(),
            )
        }
        Err(error) => refused(error, json),
    }
}

/// Reveals the key of a mailed link, once: a new owner key, shown in this answer only;
/// the previous owner key stops working now. A second use, or an unknown or expired
/// link, answers 404 and reveals nothing. Answers JSON when the client accepts JSON but
/// not HTML.
#[utoipa::path(post, path = "/reveal/{token}", tag = "account",
    params(("token" = String, Path, description = "the token of the mailed link")),
    responses(
        (status = 200, description = "the key, shown once", content(
            (String = "text/html"), (RevealedKeyResponse = "application/json"))),
        (status = 404, description = "unknown, used or expired link", content(
            (String = "text/html"), (ErrorBody = "application/json")))))]
pub async fn reveal_key(
    State(accounts): State<Accounts>,
    headers: HeaderMap,
    ApiPath(token): ApiPath<String>,
) -> Response {
    let json = wants_json(&headers);
    match accounts.reveal(&token).await {
        Ok(revealed) if json => private(
            Json(RevealedKeyResponse {
                api_key: revealed.api_key,
                key_id: revealed.key_id,
                tenant_id: revealed.tenant_id.to_string(),
                tenant_name: revealed.tenant_name,
                email: revealed.email,
            })
            .into_response(),
        ),
        Ok(revealed) => private(
            Html(page(
                "Your memvault API key",
                &format!(
                    "<p>The API key of <strong>{}</strong>:</p><p><code id=\"api-key\">{}</code></p>\
                     <p>It is shown this once: copy it now. Send it as <code>Authorization: Bearer &lt;key&gt;</code>.</p>\
                     <form method=\"post\" action=\"../../../dashboard/login\">\
                     <input type=\"hidden\" name=\"key\" value=\"{}\">\
                     <button type=\"submit\">Sign in to the dashboard with it</button></form>",
                    escape_html(&revealed.tenant_name),
                    escape_html(&revealed.api_key),
                    escape_html(&revealed.api_key),
                ),
            ))
            .into_response(),
        ),
        Err(error) => refused(error, json),
    }
}

/// An error as JSON, or as a page for a browser.
fn refused(error: ServiceError, json: bool) -> Response {
    let error = ApiError::from(error);
    if json {
        return private(error.into_response());
    }
    let status = error.status();
    let body = if status == StatusCode::NOT_FOUND {
        "<p>This link does not work: it was already used, it expired, or it never existed.</p>\
         <p>Ask for a new one with <code>POST /v1/memory/recover-key</code>.</p>"
            .to_owned()
    } else {
        format!("<p>{}</p>", escape_html(&error.to_string()))
    };
    private((status, Html(page("memvault", &body))).into_response())
}

/// Reveal answers are never cached or sent on as a referrer (the token is in the URL).
fn private(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// JSON when the client accepts `application/json` and not `text/html`; a page otherwise
/// (a browser, or a client that accepts anything).
fn wants_json(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    accept.contains("application/json") && !accept.contains("text/html")
}

pub(super) fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex\"><title>{}</title></head>\
         <body style=\"font-family: sans-serif; max-width: 40em; margin: 3em auto\">\
         <h1>{}</h1>{body}</body></html>",
        escape_html(title),
        escape_html(title),
    )
}
