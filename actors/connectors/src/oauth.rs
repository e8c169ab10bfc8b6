//! OAuth for notion, slack, gdrive and gmail: the authorize URL a start hands out, the code
//! exchange the callback makes, and the refresh gdrive and gmail need before a sync, each in
//! its provider's shape (Notion: HTTP Basic client credentials and a JSON body; Slack:
//! `oauth.v2.access`, a form, and 200 `ok:false` for errors; Google: a form with the client
//! credentials in it, `access_type=offline` so a refresh token is issued).

use chrono::{DateTime, Duration as TimeDelta, Utc};
use serde_json::{json, Map, Value};
use url::Url;

use crate::http::Http;
use crate::provider::{ProviderError, ProviderKind};

/// An OAuth app registered with a provider (from `[connectors.<provider>]`).
#[derive(Clone, PartialEq, Eq)]
pub struct App {
    pub client_id: String,
    pub client_secret: String,
    pub authorize_url: String,
    pub token_url: String,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("client_id", &self.client_id)
            .field("authorize_url", &self.authorize_url)
            .field("token_url", &self.token_url)
            .finish_non_exhaustive()
    }
}

/// The provider's real authorize and token URLs, used when the config leaves them out.
pub fn default_urls(kind: ProviderKind) -> Option<(&'static str, &'static str)> {
    match kind {
        ProviderKind::Notion => Some((
            "https://api.notion.com/v1/oauth/authorize",
            "https://api.notion.com/v1/oauth/token",
        )),
        ProviderKind::Slack => Some((
            "https://slack.com/oauth/v2/authorize",
            "https://slack.com/api/oauth.v2.access",
        )),
        ProviderKind::Gdrive | ProviderKind::Gmail => Some((
            "https://accounts.google.com/o/oauth2/v2/auth",
            "https://oauth2.googleapis.com/token",
        )),
        _ => None,
    }
}

/// The scopes a sync needs (read-only).
fn scope(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::Slack => Some("channels:history,channels:read,groups:history,groups:read"),
        ProviderKind::Gdrive => Some("https://www.googleapis.com/auth/drive.readonly"),
        ProviderKind::Gmail => Some("https://www.googleapis.com/auth/gmail.readonly"),
        _ => None,
    }
}

/// The URL the user's browser is sent to for consent.
pub fn authorize_url(
    kind: ProviderKind,
    app: &App,
    redirect_uri: &str,
    state: &str,
) -> Result<String, String> {
    let mut url = Url::parse(&app.authorize_url)
        .map_err(|error| format!("the authorize URL is not a URL ({error})"))?;
    {
        let mut query = url.query_pairs_mut();
        query.append_pair("client_id", &app.client_id);
        query.append_pair("redirect_uri", redirect_uri);
        query.append_pair("state", state);
        if kind != ProviderKind::Slack {
            query.append_pair("response_type", "code");
        }
        if let Some(scope) = scope(kind) {
            query.append_pair("scope", scope);
        }
        match kind {
            ProviderKind::Notion => {
                query.append_pair("owner", "user");
            }
            ProviderKind::Gdrive | ProviderKind::Gmail => {
                // A refresh token is issued only offline, and again only with consent.
                query.append_pair("access_type", "offline");
                query.append_pair("prompt", "consent");
                query.append_pair("include_granted_scopes", "true");
            }
            _ => {}
        }
    }
    Ok(url.into())
}

/// What a token endpoint granted.
#[derive(Clone, PartialEq)]
pub struct Grant {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    /// What the provider says about the grant besides the tokens (workspace, team, scope).
    pub details: Map<String, Value>,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("expires_at", &self.expires_at)
            .field("details", &self.details)
            .finish_non_exhaustive()
    }
}

impl Grant {
    /// The credentials a connection stores (sealed): the token, the refresh token and its
    /// expiry.
    pub fn credentials(&self) -> Map<String, Value> {
        let mut credentials = Map::new();
        credentials.insert("token".into(), Value::String(self.access_token.clone()));
        if let Some(refresh) = &self.refresh_token {
            credentials.insert("refresh_token".into(), Value::String(refresh.clone()));
        }
        if let Some(expires) = self.expires_at {
            credentials.insert("expires_at".into(), Value::String(expires.to_rfc3339()));
        }
        credentials
    }
}

/// Exchanges the callback's code for tokens.
pub async fn exchange(
    http: &Http,
    kind: ProviderKind,
    app: &App,
    code: &str,
    redirect_uri: &str,
) -> Result<Grant, ProviderError> {
    let client = http.client();
    let request = match kind {
        ProviderKind::Notion => client
            .post(&app.token_url)
            .basic_auth(&app.client_id, Some(&app.client_secret))
            .json(&json!({"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri})),
        ProviderKind::Slack => client.post(&app.token_url).form(&[
            ("client_id", app.client_id.as_str()),
            ("client_secret", app.client_secret.as_str()),
            ("code", code),
            ("redirect_uri", redirect_uri),
        ]),
        _ => client.post(&app.token_url).form(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("client_id", app.client_id.as_str()),
            ("client_secret", app.client_secret.as_str()),
        ]),
    };
    grant(request).await
}

/// Renews the access token from the refresh token. A refused grant (`invalid_grant`) is
/// [`ProviderError::Reconnect`]: only a new consent helps.
pub async fn refresh(
    http: &Http,
    kind: ProviderKind,
    app: &App,
    refresh_token: &str,
) -> Result<Grant, ProviderError> {
    let client = http.client();
    let request = match kind {
        ProviderKind::Notion => client
            .post(&app.token_url)
            .basic_auth(&app.client_id, Some(&app.client_secret))
            .json(&json!({"grant_type": "refresh_token", "refresh_token": refresh_token})),
        _ => client.post(&app.token_url).form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", app.client_id.as_str()),
            ("client_secret", app.client_secret.as_str()),
        ]),
    };
    let mut granted = grant(request).await.map_err(|error| match error {
        ProviderError::Invalid(reason) | ProviderError::Unauthorized(reason) => {
            ProviderError::Reconnect(reason)
        }
        other => other,
    })?;
    // Google keeps the refresh token unless it rotates it.
    if granted.refresh_token.is_none() {
        granted.refresh_token = Some(refresh_token.to_owned());
    }
    Ok(granted)
}

async fn grant(request: reqwest::RequestBuilder) -> Result<Grant, ProviderError> {
    let response = request.send().await.map_err(|error| {
        ProviderError::Transient(format!(
            "the token endpoint could not be reached ({})",
            kind_of(&error)
        ))
    })?;
    let status = response.status();
    let body = response.bytes().await.map_err(|error| {
        ProviderError::Transient(format!(
            "the token endpoint's answer broke off ({})",
            kind_of(&error)
        ))
    })?;
    let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if status.is_server_error() {
        return Err(ProviderError::Transient(format!(
            "the token endpoint answered {status}"
        )));
    }
    // Slack: HTTP 200 with ok:false; the others: an OAuth error body with a 4xx.
    let refused = answer.get("ok") == Some(&Value::Bool(false)) || !status.is_success();
    if refused {
        let error = answer["error"].as_str().unwrap_or("refused");
        let description = answer["error_description"]
            .as_str()
            .map(|text| format!(": {text}"))
            .unwrap_or_default();
        let reason: String = format!("{error}{description}").chars().take(200).collect();
        return Err(if status.as_u16() == 401 || error == "invalid_client" {
            ProviderError::Unauthorized(format!("the OAuth client was refused ({reason})"))
        } else {
            ProviderError::Invalid(format!("the token endpoint refused the grant ({reason})"))
        });
    }
    let access_token = answer["access_token"]
        .as_str()
        .filter(|token| !token.is_empty())
        .ok_or_else(|| {
            ProviderError::Invalid("the token endpoint answered without an access_token".to_owned())
        })?
        .to_owned();
    let refresh_token = answer["refresh_token"]
        .as_str()
        .filter(|token| !token.is_empty())
        .map(str::to_owned);
    let expires_at = answer["expires_in"]
        .as_i64()
        .or_else(|| {
            answer["expires_in"]
                .as_str()
                .and_then(|text| text.parse().ok())
        })
        .filter(|seconds| *seconds > 0)
        .map(|seconds| Utc::now() + TimeDelta::seconds(seconds));
    let mut details = Map::new();
    for key in [
        "workspace_id",
        "workspace_name",
        "bot_id",
        "team",
        "scope",
        "token_type",
    ] {
        if let Some(value) = answer.get(key).filter(|value| !value.is_null()) {
            details.insert(key.to_owned(), value.clone());
        }
    }
    Ok(Grant {
        access_token,
        refresh_token,
        expires_at,
        details,
    })
}

fn kind_of(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "request failed"
    }
}

/// Whether a stored access token should be renewed before a sync: it expires within five
/// minutes, or its expiry is unknown.
pub fn needs_refresh(expires_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    expires_at.is_none_or(|at| at - now < TimeDelta::minutes(5))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> App {
        App {
            client_id: "client".into(),
            client_secret: "secret".into(),
            authorize_url: "http://127.0.0.1:9/oauth/gdrive/authorize".into(),
            token_url: "http://127.0.0.1:9/oauth/gdrive/token".into(),
        }
    }

    #[test]
    fn google_asks_for_offline_access_and_a_read_only_scope() {
        let url = authorize_url(
            ProviderKind::Gdrive,
            &app(),
            "http://memvault/cb",
            "s".repeat(32).as_str(),
        )
        .unwrap();
        let parsed = Url::parse(&url).unwrap();
        let query: std::collections::HashMap<_, _> = parsed.query_pairs().into_owned().collect();
        assert_eq!(query["access_type"], "offline");
        assert_eq!(query["response_type"], "code");
        assert_eq!(query["redirect_uri"], "http://memvault/cb");
        assert!(query["scope"].ends_with("drive.readonly"));
        assert!(
            !url.contains("secret"),
            "the client secret never goes in the authorize URL"
        );
    }

    #[test]
    fn slack_has_no_response_type() {
        let url =
            authorize_url(ProviderKind::Slack, &app(), "http://memvault/cb", "state").unwrap();
        assert!(!url.contains("response_type"));
        assert!(url.contains("channels%3Ahistory"));
    }

    #[test]
    fn tokens_are_renewed_near_expiry_or_when_it_is_unknown() {
        let now = Utc::now();
        assert!(needs_refresh(None, now));
        assert!(needs_refresh(Some(now + TimeDelta::seconds(30)), now));
        assert!(!needs_refresh(Some(now + TimeDelta::minutes(50)), now));
    }

    #[test]
    fn debug_never_shows_secrets() {
        let grant = Grant {
            access_token: "ya29.token".into(),
            refresh_token: Some("1//refresh".into()),
            expires_at: None,
            details: Map::new(),
        };
        let shown = format!("{grant:?} {:?}", app());
        assert!(
            !shown.contains("ya29") && !shown.contains("1//refresh") && !shown.contains("secret")
        );
    }
}
