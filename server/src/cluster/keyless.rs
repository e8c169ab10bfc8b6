//! Requests with no API key that are about one account (several nodes). Each names its
//! account some other way; the name is looked up in the database
//! ([`memvault_postgres::TenantLookup`]) and the request goes to the account's node like
//! any other:
//!
//! - a connector's OAuth callback: its `state` (`oauth_states`);
//! - a reveal link, `GET` or `POST /v1/memory/reveal/{token}`: its token (`reveals`);
//! - key recovery, `POST /v1/memory/recover-key`: the email in its body (`tenants`);
//! - the mail-in handoff, `POST /v1/memory/email/inbound`: the drop address, from
//!   `X-Memvault-Recipient` or else the message's recipients (`email_addresses`);
//! - Stripe's webhook, `POST /v1/memory/stripe/webhook`: the account id or the Stripe
//!   customer its event's object carries (`tenant_settings`);
//! - a dashboard page: its session cookie (`sessions`); the sign-in page's key recovery:
//!   the email in its form; its sign-in: the key in its form, placed like a bearer key
//!   ([`dashboard_sign_in_key`]).
//!
//! A body is read only when its `Content-Length` is within the route's own limit (what is
//! larger, or streamed, is refused by the route wherever it runs). A request that names
//! no account, or one the database does not know, is answered where it arrived, exactly
//! as by one node (the handler's own 4xx, or the same 202 a stranger's email gets).

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, Method};
use memvault_accounts::billing::stripe::ObjectFields;
use memvault_accounts::email::{hash_local_part, parse_message, recipient_local_parts};
use memvault_postgres::TenantLookup;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The largest JSON body read for routing (recovery's email, Stripe's event).
const JSON_LIMIT: usize = 1024 * 1024;

/// What a keyless request names its account by, if it is one of those above. The body,
/// when it had to be read, is put back into `request`.
pub async fn lookups(request: &mut Request, mail_domain: &str) -> Vec<TenantLookup> {
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    if method == Method::GET && is_oauth_callback(&path) {
        return query_value(request.uri().query().unwrap_or_default(), "state")
            .map(|state| vec![TenantLookup::OAuthState(sha256_hex(&state))])
            .unwrap_or_default();
    }
    if let Some(token) = path.strip_prefix("/v1/memory/reveal/") {
        if (method == Method::GET || method == Method::POST) && !token.contains('/') {
            let token = percent_encoding::percent_decode_str(token).decode_utf8_lossy();
            return vec![TenantLookup::Reveal(sha256_hex(&token))];
        }
        return Vec::new();
    }
    if path.starts_with("/dashboard/") {
        return dashboard_lookups(request, &path).await;
    }
    if method != Method::POST {
        return Vec::new();
    }
    match path.as_str() {
        "/v1/memory/recover-key" => {
            let Some(body) = read_body(request, JSON_LIMIT).await else {
                return Vec::new();
            };
            let email = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|body| body["email"].as_str().map(str::to_owned));
            email.map(TenantLookup::Email).into_iter().collect()
        }
        "/v1/memory/stripe/webhook" => {
            let Some(body) = read_body(request, JSON_LIMIT).await else {
                return Vec::new();
            };
            let Ok(event) = serde_json::from_slice::<Value>(&body) else {
                return Vec::new();
            };
            let fields = ObjectFields::of(&event["data"]["object"]);
            let by_id = fields.tenant.map(TenantLookup::Tenant);
            let by_customer = fields.customer.map(TenantLookup::StripeCustomer);
            by_id.into_iter().chain(by_customer).collect()
        }
        "/v1/memory/email/inbound" => {
            let recipient = request
                .headers()
                .get(crate::api::email::RECIPIENT_HEADER)
                .and_then(|value| value.to_str().ok())
                .map(str::trim)
                .filter(|value| !value.is_empty())
                .map(str::to_owned);
            let candidates: Vec<String> = match recipient {
                Some(recipient) => recipient.split(',').map(str::to_owned).collect(),
                None => {
                    let limit = crate::api::email::INBOUND_MAX_BYTES;
                    let Some(body) = read_body(request, limit).await else {
                        return Vec::new();
                    };
                    match parse_message(&body) {
                        Ok(message) => message.recipients,
                        Err(_) => return Vec::new(),
                    }
                }
            };
            recipient_local_parts(candidates.iter().map(String::as_str), mail_domain)
                .iter()
                .map(|local| TenantLookup::MailAddress(hash_local_part(local)))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// A dashboard page names its account by its session cookie (`sessions`); the sign-in
/// page's key recovery by the email in its form (`tenants`).
async fn dashboard_lookups(request: &mut Request, path: &str) -> Vec<TenantLookup> {
    if request.method() == Method::POST && path == "/dashboard/recover" {
        let Some(body) = read_body(request, FORM_LIMIT).await else {
            return Vec::new();
        };
        return form_value(&body, "email")
            .map(TenantLookup::Email)
            .into_iter()
            .collect();
    }
    crate::dashboard::session::cookie(request.headers())
        .map(|id| {
            vec![TenantLookup::Session(
                crate::dashboard::session::session_hash(&id),
            )]
        })
        .unwrap_or_default()
}

/// The API key a dashboard sign-in form carries (`POST /dashboard/login`, or the reveal
/// page's button that posts the new key there): the request goes to that key's account
/// like one with the key as its bearer, and its session opens there.
pub async fn dashboard_sign_in_key(request: &mut Request) -> Option<String> {
    if request.method() != Method::POST || request.uri().path() != "/dashboard/login" {
        return None;
    }
    let body = read_body(request, FORM_LIMIT).await?;
    form_value(&body, "key").filter(|key| key.starts_with(memvault_core::agent::KEY_PREFIX))
}

/// The largest dashboard form read for routing (sign-in, recovery).
const FORM_LIMIT: usize = 16 * 1024;

/// A form field's first value, trimmed; none when blank.
fn form_value(body: &[u8], name: &str) -> Option<String> {
    form_urlencoded::parse(body)
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

fn is_oauth_callback(path: &str) -> bool {
    path.strip_prefix("/v1/memory/connections/oauth/")
        .and_then(|rest| rest.strip_suffix("/callback"))
        .is_some_and(|provider| !provider.is_empty() && !provider.contains('/'))
}

/// The first value of `name` in a query string, decoded.
fn query_value(query: &str, name: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .filter(|value| !value.is_empty())
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The request's body when its declared length is at most `limit`; it is put back.
async fn read_body(request: &mut Request, limit: usize) -> Option<Bytes> {
    let declared: usize = request
        .headers()
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()?;
    if declared > limit {
        return None;
    }
    let body = std::mem::replace(request.body_mut(), Body::empty());
    match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => {
            *request.body_mut() = Body::from(bytes.clone());
            Some(bytes)
        }
        // The client stopped sending: the handler sees an empty body and answers it.
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, uri: &str, body: &str) -> Request {
        Request::builder()
            .method(method)
            .uri(uri)
            .header(header::CONTENT_LENGTH, body.len())
            .body(Body::from(body.to_owned()))
            .unwrap()
    }

    async fn body_of(request: Request) -> String {
        let bytes = axum::body::to_bytes(request.into_body(), usize::MAX)
            .await
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn each_keyless_route_names_its_account_and_keeps_its_body() {
        let mut callback = request(
            Method::GET,
            "/v1/memory/connections/oauth/notion/callback?code=c&state=s%2B1",
            "",
        );
        assert_eq!(
            lookups(&mut callback, "in.test").await,
            vec![TenantLookup::OAuthState(sha256_hex("s+1"))]
        );

        let mut reveal = request(Method::POST, "/v1/memory/reveal/tok_1", "");
        assert_eq!(
            lookups(&mut reveal, "in.test").await,
            vec![TenantLookup::Reveal(sha256_hex("tok_1"))]
        );

        let body = r#"{"email":"Ada@Example.com"}"#;
        let mut recover = request(Method::POST, "/v1/memory/recover-key", body);
        assert_eq!(
            lookups(&mut recover, "in.test").await,
            vec![TenantLookup::Email("Ada@Example.com".to_owned())]
        );
        assert_eq!(body_of(recover).await, body, "the body is put back");

        let event = r#"{"type":"customer.subscription.updated","data":{"object":{"object":"subscription","id":"sub_1","customer":"cus_9","metadata":{"tenant_id":"ten_1"}}}}"#;
        let mut stripe = request(Method::POST, "/v1/memory/stripe/webhook", event);
        assert_eq!(
            lookups(&mut stripe, "in.test").await,
            vec![
                TenantLookup::Tenant("ten_1".to_owned()),
                TenantLookup::StripeCustomer("cus_9".to_owned())
            ]
        );
        assert_eq!(body_of(stripe).await, event);

        let mut header_named = request(Method::POST, "/v1/memory/email/inbound", "x");
        header_named.headers_mut().insert(
            crate::api::email::RECIPIENT_HEADER,
            "MV-abc+tag@in.test".parse().unwrap(),
        );
        assert_eq!(
            lookups(&mut header_named, "in.test").await,
            vec![TenantLookup::MailAddress(hash_local_part("mv-abc"))]
        );
        let message = "From: a@example.com\r\nTo: Drop <mv-xyz@in.test>, b@elsewhere.test\r\nSubject: hi\r\n\r\nhello\r\n";
        let mut in_message = request(Method::POST, "/v1/memory/email/inbound", message);
        assert_eq!(
            lookups(&mut in_message, "in.test").await,
            vec![TenantLookup::MailAddress(hash_local_part("mv-xyz"))]
        );
        assert_eq!(body_of(in_message).await, message);
    }

    #[tokio::test]
    async fn other_requests_and_unreadable_bodies_name_nothing() {
        for (method, uri, body) in [
            (Method::GET, "/v1/memory/collections", ""),
            (
                Method::POST,
                "/v1/memory/connections/oauth/notion/callback?state=s",
                "",
            ),
            (
                Method::GET,
                "/v1/memory/connections/oauth/notion/callback",
                "",
            ),
            (Method::GET, "/v1/memory/reveal/a/b", ""),
            (Method::POST, "/v1/memory/recover-key", "not json"),
            (Method::POST, "/v1/memory/stripe/webhook", "{}"),
        ] {
            let mut request = request(method, uri, body);
            assert!(lookups(&mut request, "in.test").await.is_empty(), "{uri}");
        }
        // A body without a declared length is never read here.
        let mut streamed = Request::builder()
            .method(Method::POST)
            .uri("/v1/memory/recover-key")
            .body(Body::from(r#"{"email":"a@b.c"}"#))
            .unwrap();
        assert!(lookups(&mut streamed, "in.test").await.is_empty());
        assert_eq!(body_of(streamed).await, r#"{"email":"a@b.c"}"#);
        let mut oversized = request(Method::POST, "/v1/memory/recover-key", "{}");
        oversized
            .headers_mut()
            .insert(header::CONTENT_LENGTH, (JSON_LIMIT + 1).into());
        assert!(lookups(&mut oversized, "in.test").await.is_empty());
    }
}
