//! The seam every provider implements: one page of changes since a window, and one page of
//! the ids that exist (for reconciliation). The engine does the rest the same way for all.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::http::Http;

/// A provider memvault syncs server-side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Slack,
    Notion,
    Gdrive,
    Gmail,
    Linear,
    Confluence,
    Hubspot,
}

impl ProviderKind {
    pub const ALL: [ProviderKind; 7] = [
        ProviderKind::Slack,
        ProviderKind::Notion,
        ProviderKind::Gdrive,
        ProviderKind::Gmail,
        ProviderKind::Linear,
        ProviderKind::Confluence,
        ProviderKind::Hubspot,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Slack => "slack",
            ProviderKind::Notion => "notion",
            ProviderKind::Gdrive => "gdrive",
            ProviderKind::Gmail => "gmail",
            ProviderKind::Linear => "linear",
            ProviderKind::Confluence => "confluence",
            ProviderKind::Hubspot => "hubspot",
        }
    }

    pub fn parse(name: &str) -> Option<ProviderKind> {
        ProviderKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }

    /// Whether the provider has an OAuth flow (start and callback).
    pub fn has_oauth(self) -> bool {
        matches!(
            self,
            ProviderKind::Notion | ProviderKind::Slack | ProviderKind::Gdrive | ProviderKind::Gmail
        )
    }

    /// Whether its OAuth access tokens expire and are renewed from a refresh token.
    pub fn refreshes(self) -> bool {
        matches!(self, ProviderKind::Gdrive | ProviderKind::Gmail)
    }

    /// The provider's real API root, used when `[connectors.<provider>] base_url` is unset.
    /// Confluence has none: each connection names its site in `config.base_url`.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Slack => "https://slack.com/api",
            ProviderKind::Notion => "https://api.notion.com",
            ProviderKind::Gdrive => "https://www.googleapis.com",
            ProviderKind::Gmail => "https://gmail.googleapis.com",
            ProviderKind::Linear => "https://api.linear.app",
            ProviderKind::Confluence => "",
            ProviderKind::Hubspot => "https://api.hubapi.com",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A connection's credentials, opened from their sealed form only for a sync. `Debug`
/// never shows them.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Credentials(pub Map<String, Value>);

impl Credentials {
    /// A non-empty string field.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .and_then(Value::as_str)
            .filter(|value| !value.trim().is_empty())
    }

    /// A required non-empty string field, or the message naming it
    /// (`credentials.{name} is required`).
    pub fn require(&self, name: &str) -> Result<(), String> {
        match self.0.get(name) {
            Some(Value::String(value)) if !value.trim().is_empty() => Ok(()),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                Err(format!("credentials.{name} is required"))
            }
            Some(_) => Err(format!("credentials.{name} must be a string")),
        }
    }

    /// The bearer token most providers take.
    pub fn token(&self) -> Option<&str> {
        self.get("token")
    }

    /// Every secret string the credentials hold, to scrub them from error texts.
    pub fn secrets(&self) -> Vec<String> {
        self.0
            .values()
            .filter_map(Value::as_str)
            .filter(|value| value.len() >= 4)
            .map(str::to_owned)
            .collect()
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.0.keys().map(|key| format!("{key}: <sealed>")))
            .finish()
    }
}

/// Everything a provider call needs: the paced client, the API root, the credentials and
/// the connection's config.
pub struct Context<'a> {
    pub http: &'a Http,
    /// The provider's API root (no trailing slash); Confluence's comes from the config.
    pub base_url: &'a str,
    pub credentials: &'a Credentials,
    pub config: &'a Value,
}

impl Context<'_> {
    /// A non-empty string field of the config.
    pub fn config_str(&self, name: &str) -> Option<&str> {
        self.config
            .get(name)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|value| !value.is_empty())
    }

    /// The key the pacer keeps this connection's budget under: the provider and a digest of
    /// the credential (a workspace's token shares one budget across connections).
    pub fn pace_key(&self, kind: ProviderKind) -> String {
        use sha2::Digest;
        let digest =
            sha2::Sha256::digest(serde_json::to_vec(&self.credentials.0).unwrap_or_default());
        format!("{kind}:{}", hex::encode(&digest[..8]))
    }
}

/// One record of the source as memvault stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The provider's stable id for the record.
    pub id: String,
    /// When the record last changed at the source.
    pub modified: DateTime<Utc>,
    pub title: String,
    pub text: String,
    pub url: Option<String>,
    pub author: Option<String>,
}

/// One change a walk reports.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Upsert(Record),
    /// The source reports the record gone (trashed, archived, deleted).
    Delete(String),
}

/// The window a walk covers: records changed at or after `since` (None: everything), and
/// the provider's own change token when it keeps one (Drive's page token).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub since: Option<DateTime<Utc>>,
    pub token: Option<String>,
}

/// One page of a walk.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    pub changes: Vec<Change>,
    /// The page token of the rest of the walk; None when the walk is complete.
    pub next: Option<String>,
    /// A new change token to keep once the walk completes (Drive's newStartPageToken).
    pub token: Option<String>,
}

/// One page of the ids that exist at the source, for reconciliation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IdPage {
    pub ids: Vec<String>,
    pub next: Option<String>,
}

/// Why a provider call failed, in the terms the engine acts on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// The provider's rate-limit answer (429, Slack's 429, Google's 403 rateLimitExceeded,
    /// Linear's 400 RATELIMITED), with its Retry-After when it sent one.
    #[error("rate limited by the provider")]
    RateLimited { retry_after: Option<Duration> },
    /// The credential was refused (401, invalid_auth, ...).
    #[error("the provider refused the credentials: {0}")]
    Unauthorized(String),
    /// The OAuth grant is gone (invalid_grant on refresh): only a new consent helps.
    #[error("the OAuth grant was revoked or expired ({0}); reconnect through the OAuth start")]
    Reconnect(String),
    /// A 5xx, a timeout or a broken connection: worth retrying.
    #[error("the provider failed: {0}")]
    Transient(String),
    /// The request was wrong for this connection (unknown channel, bad config, ...).
    #[error("the provider refused the request: {0}")]
    Invalid(String),
}

/// A provider: one small file each under `providers/`.
#[async_trait]
pub trait Provider: Send + Sync {
    fn kind(&self) -> ProviderKind;

    /// How far before the high-water mark an incremental walk starts, so records that share
    /// the boundary time (or whose times are rounded) are read again; unchanged ones are
    /// skipped by their content hash.
    fn overlap(&self) -> Duration;

    /// Checks a new connection's config and credentials; the error names the field.
    fn validate(&self, config: &Value, credentials: &Credentials) -> Result<(), String>;

    /// One page of the records changed in `window`, newest first; `page` continues a walk.
    async fn changes(
        &self,
        cx: &Context<'_>,
        window: &Window,
        page: Option<&str>,
    ) -> Result<Page, ProviderError>;

    /// One page of the ids of every record in the connection's scope, with no content.
    async fn ids(&self, cx: &Context<'_>, page: Option<&str>) -> Result<IdPage, ProviderError>;
}

/// A required non-empty string field of a JSON object, or the message naming it.
pub fn require(object: &Value, name: &str, what: &str) -> Result<(), String> {
    match object.get(name) {
        Some(Value::String(value)) if !value.trim().is_empty() => Ok(()),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            Err(format!("{what}.{name} is required"))
        }
        Some(_) => Err(format!("{what}.{name} must be a string")),
    }
}
