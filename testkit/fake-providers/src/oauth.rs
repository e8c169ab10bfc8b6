//! A fake OAuth authorization server for one provider's fake: `GET /authorize` (the
//! consent page: it redirects straight back to `redirect_uri` with a code and the state)
//! and `POST /token` (authorization_code and refresh_token grants; client credentials by
//! HTTP Basic or in a form or JSON body), answering in the provider's shape (Slack: 200
//! with `ok`; the others: an OAuth error body with a 4xx). The access tokens it issues open
//! the provider's fake (through [`Fake::issue`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use chrono::{Duration as TimeDelta, Utc};
use serde_json::{json, Value};

use super::Fake;
use memvault_connectors::ProviderKind;

/// One request the token endpoint got.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenRequest {
    pub grant_type: String,
    pub client_ok: bool,
    pub code: Option<String>,
    pub refresh_token: Option<String>,
    pub redirect_uri: Option<String>,
    /// The access token issued, if one was.
    pub issued: Option<String>,
}

#[derive(Debug, Default)]
struct AppState {
    codes: HashMap<String, (String, bool)>,
    refresh_tokens: Vec<String>,
    access_tokens: Vec<String>,
    requests: Vec<TokenRequest>,
    refresh_revoked: bool,
}

#[derive(Clone)]
struct Shared {
    kind: ProviderKind,
    fake: Fake,
    client_id: String,
    client_secret: String,
    expires_in: Option<i64>,
    state: Arc<Mutex<AppState>>,
}

/// A running fake OAuth app.
pub struct OAuthServer {
    pub client_id: String,
    pub client_secret: String,
    pub authorize_url: String,
    pub token_url: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl OAuthServer {
    /// Starts the app of `kind` in front of `fake`; issued access tokens expire after
    /// `expires_in` seconds (None: never).
    pub async fn start(kind: ProviderKind, fake: Fake, expires_in: Option<i64>) -> OAuthServer {
        let shared = Shared {
            kind,
            fake,
            client_id: format!("{kind}-client"),
            client_secret: format!("{kind}-secret-{}", rand::random::<u32>()),
            expires_in,
            state: Arc::new(Mutex::new(AppState::default())),
        };
        let router = Router::new()
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a local port");
        let address = listener.local_addr().expect("an address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        OAuthServer {
            client_id: shared.client_id.clone(),
            client_secret: shared.client_secret.clone(),
            authorize_url: format!("http://{address}/authorize"),
            token_url: format!("http://{address}/token"),
            shared,
            task,
        }
    }

    pub fn requests(&self) -> Vec<TokenRequest> {
        self.lock().requests.clone()
    }

    pub fn access_tokens(&self) -> Vec<String> {
        self.lock().access_tokens.clone()
    }

    pub fn refresh_tokens(&self) -> Vec<String> {
        self.lock().refresh_tokens.clone()
    }

    /// Every refresh from now on is refused with `invalid_grant` (the user revoked access).
    pub fn revoke_refresh_tokens(&self) {
        self.lock().refresh_revoked = true;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, AppState> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn authorize(
    State(shared): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if query.get("client_id") != Some(&shared.client_id) {
        return (StatusCode::BAD_REQUEST, "invalid_client").into_response();
    }
    let Some(redirect_uri) = query.get("redirect_uri") else {
        return (StatusCode::BAD_REQUEST, "missing redirect_uri").into_response();
    };
    if shared.kind != ProviderKind::Slack
        && query.get("response_type").map(String::as_str) != Some("code")
    {
        return (StatusCode::BAD_REQUEST, "response_type must be code").into_response();
    }
    let code = format!("code-{}", rand::random::<u64>());
    shared
        .state
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .codes
        .insert(code.clone(), (redirect_uri.clone(), false));
    let mut target = url::Url::parse(redirect_uri).expect("an absolute redirect_uri");
    target.query_pairs_mut().append_pair("code", &code);
    if let Some(state) = query.get("state") {
        target.query_pairs_mut().append_pair("state", state);
    }
    (StatusCode::FOUND, [(header::LOCATION, target.to_string())]).into_response()
}

async fn token(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.contains("json"));
    let mut params: HashMap<String, String> = if json_body {
        serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|value| value.as_object().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(key, value)| value.as_str().map(|text| (key, text.to_owned())))
            .collect()
    } else {
        url::form_urlencoded::parse(&body).into_owned().collect()
    };
    if let Some(basic) = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Basic "))
    {
        if let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(basic.trim()) {
            let text = String::from_utf8_lossy(&decoded).into_owned();
            if let Some((id, secret)) = text.split_once(':') {
                params.insert("client_id".into(), id.to_owned());
                params.insert("client_secret".into(), secret.to_owned());
            }
        }
    }
    let grant_type = params.get("grant_type").cloned().unwrap_or_else(|| {
        if shared.kind == ProviderKind::Slack {
            "authorization_code".into()
        } else {
            String::new()
        }
    });
    let client_ok = params.get("client_id") == Some(&shared.client_id)
        && params.get("client_secret") == Some(&shared.client_secret);
    let mut request = TokenRequest {
        grant_type: grant_type.clone(),
        client_ok,
        code: params.get("code").cloned(),
        refresh_token: params.get("refresh_token").cloned(),
        redirect_uri: params.get("redirect_uri").cloned(),
        issued: None,
    };
    let mut state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
    let refused = |reason: &'static str| Err::<bool, &'static str>(reason);
    let answer = if !client_ok {
        refused("invalid_client")
    } else if grant_type == "authorization_code" {
        let code = request.code.clone().unwrap_or_default();
        match state.codes.get_mut(&code) {
            Some((redirect, used)) if !*used && request.redirect_uri.as_ref() == Some(redirect) => {
                *used = true;
                Ok(true)
            }
            _ => refused("invalid_grant"),
        }
    } else if grant_type == "refresh_token" {
        let known = request
            .refresh_token
            .as_ref()
            .is_some_and(|token| state.refresh_tokens.contains(token));
        if known && !state.refresh_revoked {
            Ok(false)
        } else {
            refused("invalid_grant")
        }
    } else {
        refused("unsupported_grant_type")
    };
    let response = match answer {
        Err(reason) => failure(shared.kind, reason),
        Ok(with_refresh) => {
            let access = format!("{}-access-{}", shared.kind, rand::random::<u64>());
            let expires = shared
                .expires_in
                .map(|seconds| Utc::now() + TimeDelta::seconds(seconds));
            shared.fake.issue(&access, expires);
            state.access_tokens.push(access.clone());
            request.issued = Some(access.clone());
            let mut body = json!({"access_token": access, "token_type": "bearer"});
            if let Some(seconds) = shared.expires_in {
                body["expires_in"] = json!(seconds);
            }
            if with_refresh && shared.kind != ProviderKind::Slack {
                let refresh = format!("{}-refresh-{}", shared.kind, rand::random::<u64>());
                state.refresh_tokens.push(refresh.clone());
                body["refresh_token"] = json!(refresh);
            }
            match shared.kind {
                ProviderKind::Slack => {
                    body["ok"] = json!(true);
                    body["team"] = json!({"id": "T0FAKE", "name": "Fake"});
                }
                ProviderKind::Notion => {
                    body["workspace_id"] = json!("ws-fake");
                    body["workspace_name"] = json!("Fake Workspace");
                    body["bot_id"] = json!("bot-fake");
                }
                _ => {}
            }
            Json(body).into_response()
        }
    };
    state.requests.push(request);
    response
}

fn failure(kind: ProviderKind, reason: &str) -> Response {
    if kind == ProviderKind::Slack {
        return Json(json!({"ok": false, "error": reason})).into_response();
    }
    let status = if reason == "invalid_client" {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::BAD_REQUEST
    };
    (
        status,
        Json(json!({"error": reason, "error_description": "refused by the fake"})),
    )
        .into_response()
}
