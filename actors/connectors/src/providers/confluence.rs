//! Confluence Cloud: CQL search over the REST API v1 (v2 has no search),
//! `GET {site}/wiki/rest/api/content/search?cql=..&limit=..&expand=body.storage,version,history`
//! with `type in (page, blogpost) [AND space = "KEY"] AND lastmodified >= "yyyy/MM/dd HH:mm"
//! ORDER BY lastmodified DESC`, paged by `_links.next` (relative to the site's `/wiki`
//! context). Basic auth with the account's email and an API token.
//!
//! CQL times are whole minutes in the API user's time zone, so the window's start is written
//! in UTC and the overlap is a day: whatever the user's zone (UTC-12 to UTC+14), the query
//! starts before the high-water mark, and the engine's content hash skips what was read
//! again. Deleted content leaves the search (reconciliation removes it); trashed content that
//! still shows is a deletion. The body is storage-format XHTML, read as text.
//! Errors: 401 as text/plain, 403 (no site access), 429 with Retry-After, 5xx; a CQL error
//! is a 400 with `message`.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::http::Answer;
use crate::provider::{
    require, Change, Context, Credentials, IdPage, Page, Provider, ProviderError, ProviderKind,
    Record, Window,
};
use crate::providers::{html_to_text, parse_time, scrub, text_of};

/// Results per page with bodies expanded (Confluence caps expanded pages low).
const PAGE: u32 = 25;
/// Ids per page of the reconciliation listing (no expansion).
const ID_PAGE: u32 = 100;
const EXPAND: &str = "body.storage,version,history";

pub struct Confluence;

#[async_trait]
impl Provider for Confluence {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Confluence
    }

    /// A day: CQL reads `lastmodified` to the minute in the API user's time zone.
    fn overlap(&self) -> Duration {
        Duration::from_secs(24 * 60 * 60)
    }

    fn validate(&self, config: &Value, credentials: &Credentials) -> Result<(), String> {
        require(config, "base_url", "config")?;
        let base_url = config["base_url"].as_str().unwrap_or_default().trim();
        match url::Url::parse(base_url) {
            Ok(url)
                if matches!(url.scheme(), "http" | "https")
                    && url.host_str().is_some_and(|host| !host.is_empty()) => {}
            _ => {
                return Err(
                    "config.base_url must be an http or https URL (the site, e.g. https://example.atlassian.net)"
                        .to_owned(),
                )
            }
        }
        match config.get("space_key") {
            None | Some(Value::Null | Value::String(_)) => {}
            Some(_) => return Err("config.space_key must be a string".to_owned()),
        }
        let credentials = Value::Object(credentials.0.clone());
        require(&credentials, "email", "credentials")?;
        require(&credentials, "api_token", "credentials")
    }

    async fn changes(
        &self,
        cx: &Context<'_>,
        window: &Window,
        page: Option<&str>,
    ) -> Result<Page, ProviderError> {
        let site = site(cx);
        let url = match page {
            Some(next) => follow(&site, next)?,
            None => search_url(
                &site,
                &cql(
                    cx.config_str("space_key"),
                    window.since,
                    "lastmodified DESC",
                ),
                PAGE,
                Some(EXPAND),
            )?,
        };
        let answer = call(cx, &url).await?;
        let base = answer["_links"]["base"]
            .as_str()
            .map(|base| base.trim_end_matches('/').to_owned())
            .unwrap_or_else(|| format!("{site}/wiki"));
        let mut changes = Vec::new();
        for content in answer["results"].as_array().into_iter().flatten() {
            let Some(id) = content_id(content) else {
                continue;
            };
            if content["status"].as_str() == Some("trashed") {
                changes.push(Change::Delete(id));
                continue;
            }
            let modified = parse_time(&content["version"]["when"])
                .or_else(|| parse_time(&content["history"]["lastUpdated"]["when"]))
                .or_else(|| parse_time(&content["history"]["createdDate"]))
                .ok_or_else(|| {
                    ProviderError::Transient(format!("content {id} has no version time"))
                })?;
            let author = text_of(&content["version"]["by"]["displayName"])
                .or_else(|| text_of(&content["history"]["createdBy"]["displayName"]))
                .or_else(|| text_of(&content["history"]["createdBy"]["publicName"]));
            changes.push(Change::Upsert(Record {
                id,
                modified,
                title: text_of(&content["title"]).unwrap_or_default(),
                text: content["body"]["storage"]["value"]
                    .as_str()
                    .map(html_to_text)
                    .unwrap_or_default(),
                url: text_of(&content["_links"]["webui"]).map(|webui| format!("{base}{webui}")),
                author,
            }));
        }
        Ok(Page {
            changes,
            next: next_link(&answer, &site)?,
            token: None,
        })
    }

    async fn ids(&self, cx: &Context<'_>, page: Option<&str>) -> Result<IdPage, ProviderError> {
        let site = site(cx);
        let url = match page {
            Some(next) => follow(&site, next)?,
            // By creation: an edit during the listing does not move anything.
            None => search_url(
                &site,
                &cql(cx.config_str("space_key"), None, "created ASC"),
                ID_PAGE,
                None,
            )?,
        };
        let answer = call(cx, &url).await?;
        Ok(IdPage {
            ids: answer["results"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|content| content["status"].as_str() != Some("trashed"))
                .filter_map(content_id)
                .collect(),
            next: next_link(&answer, &site)?,
        })
    }
}

/// The site root: the connection's base_url without a trailing `/` or `/wiki`.
fn site(cx: &Context<'_>) -> String {
    let site = cx.base_url.trim().trim_end_matches('/');
    site.strip_suffix("/wiki").unwrap_or(site).to_owned()
}

/// The CQL of a walk: pages and blog posts, in the space if one is set, changed at or after
/// `since` (to the minute, written in UTC).
pub fn cql(space: Option<&str>, since: Option<DateTime<Utc>>, order: &str) -> String {
    let mut cql = "type in (page, blogpost)".to_owned();
    if let Some(space) = space {
        cql.push_str(&format!(" AND space = {}", quoted(space)));
    }
    if let Some(since) = since {
        cql.push_str(&format!(" AND lastmodified >= \"{}\"", cql_time(since)));
    }
    cql.push_str(" ORDER BY ");
    cql.push_str(order);
    cql
}

/// A CQL date: `yyyy/MM/dd HH:mm` (seconds are cut: the minute holds the time).
pub fn cql_time(time: DateTime<Utc>) -> String {
    time.format("%Y/%m/%d %H:%M").to_string()
}

/// A CQL string literal.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

fn search_url(
    site: &str,
    cql: &str,
    limit: u32,
    expand: Option<&str>,
) -> Result<String, ProviderError> {
    let mut url = url::Url::parse(&format!("{site}/wiki/rest/api/content/search"))
        .map_err(|_| ProviderError::Invalid("config.base_url is not a URL".to_owned()))?;
    {
        let mut query = url.query_pairs_mut();
        query.append_pair("cql", cql);
        query.append_pair("limit", &limit.to_string());
        if let Some(expand) = expand {
            query.append_pair("expand", expand);
        }
    }
    Ok(url.into())
}

/// The URL of a page token: a path on the site (never another host).
fn follow(site: &str, token: &str) -> Result<String, ProviderError> {
    if !token.starts_with('/') || token.starts_with("//") || token.contains('\\') {
        return Err(ProviderError::Invalid(
            "the page token is not a path on the site".to_owned(),
        ));
    }
    Ok(format!("{site}{token}"))
}

/// The page token of the rest of the walk: `_links.next` as a path on the site. It is
/// relative to the `_links.context` (`/wiki`) or, rarely, a URL on the site itself.
pub fn next_link(answer: &Value, site: &str) -> Result<Option<String>, ProviderError> {
    let Some(next) = text_of(&answer["_links"]["next"]) else {
        return Ok(None);
    };
    let context = answer["_links"]["context"]
        .as_str()
        .map(|context| context.trim_end_matches('/'))
        .unwrap_or("/wiki");
    let path = if let Some(rest) = next.strip_prefix(site) {
        rest.to_owned()
    } else if next.contains("://") || next.starts_with("//") {
        return Err(ProviderError::Invalid(
            "Confluence's next page is on another site".to_owned(),
        ));
    } else if next.starts_with(&format!("{context}/")) {
        next
    } else {
        format!("{context}/{}", next.trim_start_matches('/'))
    };
    if !path.starts_with('/') {
        return Err(ProviderError::Invalid(
            "Confluence's next page is not a path on the site".to_owned(),
        ));
    }
    Ok(Some(path))
}

/// A content id: a string of digits (a number in some answers).
fn content_id(content: &Value) -> Option<String> {
    match &content["id"] {
        Value::Number(number) => Some(number.to_string()),
        other => text_of(other),
    }
}

async fn call(cx: &Context<'_>, url: &str) -> Result<Value, ProviderError> {
    let (Some(email), Some(api_token)) =
        (cx.credentials.get("email"), cx.credentials.get("api_token"))
    else {
        return Err(ProviderError::Unauthorized(
            "the connection has no email and API token".to_owned(),
        ));
    };
    let mut secrets = cx.credentials.secrets();
    {
        use base64::Engine;
        secrets
            .push(base64::engine::general_purpose::STANDARD.encode(format!("{email}:{api_token}")));
    }
    cx.http
        .call(
            ProviderKind::Confluence,
            &cx.pace_key(ProviderKind::Confluence),
            |client| {
                client
                    .get(url)
                    .basic_auth(email, Some(api_token))
                    .header(reqwest::header::ACCEPT, "application/json")
            },
            |answer| judge(answer, &secrets),
        )
        .await
}

/// Confluence's answers in the engine's terms. Error texts come from the JSON `message` only
/// (the 401 is text/plain and says nothing of use), scrubbed of the credentials.
fn judge(answer: Answer, secrets: &[String]) -> Result<Value, ProviderError> {
    let status = answer.status.as_u16();
    if answer.status.is_success() {
        return answer.json();
    }
    let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    let message: String = body["message"]
        .as_str()
        .or_else(|| body["errors"][0]["title"].as_str())
        .unwrap_or("")
        .chars()
        .take(300)
        .collect();
    let reason = scrub(
        format!("HTTP {status}: {message}").trim_end_matches([' ', ':']),
        secrets,
    );
    match status {
        401 => Err(ProviderError::Unauthorized(
            "HTTP 401: Confluence refused the email and API token".to_owned(),
        )),
        403 => Err(ProviderError::Unauthorized(reason)),
        429 => Err(ProviderError::RateLimited {
            retry_after: answer.retry_after(),
        }),
        500..=599 => Err(ProviderError::Transient(reason)),
        300..=399 => Err(ProviderError::Invalid(format!(
            "HTTP {status}: the site redirected; check config.base_url"
        ))),
        _ => Err(ProviderError::Invalid(reason)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn time(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn cql_times_are_minutes_in_utc() {
        assert_eq!(
            cql_time(time("2025-03-04T05:06:59.999Z")),
            "2025/03/04 05:06"
        );
        assert_eq!(
            cql_time(time("2025-03-04T23:30:00+02:00")),
            "2025/03/04 21:30"
        );
        assert_eq!(
            cql(Some("MV"), Some(time("2025-12-31T23:59:01Z")), "lastmodified DESC"),
            "type in (page, blogpost) AND space = \"MV\" AND lastmodified >= \"2025/12/31 23:59\" ORDER BY lastmodified DESC"
        );
        assert_eq!(
            cql(None, None, "created ASC"),
            "type in (page, blogpost) ORDER BY created ASC"
        );
        assert_eq!(
            cql(Some("a\"b\\"), None, "created ASC"),
            "type in (page, blogpost) AND space = \"a\\\"b\\\\\" ORDER BY created ASC"
        );
    }

    #[test]
    fn next_links_stay_on_the_site() {
        let site = "https://x.atlassian.net";
        let answer = |next: &str| json!({"_links": {"base": "https://x.atlassian.net/wiki", "context": "/wiki", "next": next}});
        assert_eq!(
            next_link(&answer("/rest/api/content/search?cursor=a"), site).unwrap(),
            Some("/wiki/rest/api/content/search?cursor=a".to_owned())
        );
        assert_eq!(
            next_link(&answer("/wiki/api/v2/pages?cursor=b"), site).unwrap(),
            Some("/wiki/api/v2/pages?cursor=b".to_owned())
        );
        assert_eq!(
            next_link(&answer("https://x.atlassian.net/wiki/rest/api/x"), site).unwrap(),
            Some("/wiki/rest/api/x".to_owned())
        );
        assert!(next_link(&answer("https://evil.example/wiki/rest"), site).is_err());
        assert!(next_link(&answer("//evil.example/wiki/rest"), site).is_err());
        assert_eq!(next_link(&json!({"_links": {}}), site).unwrap(), None);
        assert_eq!(next_link(&json!([]), site).unwrap(), None);
        assert!(follow(site, "//evil.example/x").is_err());
        assert!(follow(site, "https://evil.example/x").is_err());
        assert_eq!(
            follow(site, "/wiki/rest/api/content/search?x=1").unwrap(),
            "https://x.atlassian.net/wiki/rest/api/content/search?x=1"
        );
    }

    #[test]
    fn validate_names_the_field() {
        let good_credentials = Credentials(
            json!({"email": "a@example.com", "api_token": "ATATT-secret"})
                .as_object()
                .unwrap()
                .clone(),
        );
        let provider = Confluence;
        assert_eq!(
            provider.validate(
                &json!({"base_url": "https://x.atlassian.net"}),
                &good_credentials
            ),
            Ok(())
        );
        assert_eq!(
            provider.validate(&json!({}), &good_credentials),
            Err("config.base_url is required".to_owned())
        );
        assert!(provider
            .validate(&json!({"base_url": "ftp://x"}), &good_credentials)
            .unwrap_err()
            .contains("config.base_url"));
        assert!(provider
            .validate(&json!({"base_url": "x.atlassian.net"}), &good_credentials)
            .unwrap_err()
            .contains("config.base_url"));
        assert_eq!(
            provider.validate(
                &json!({"base_url": "https://x.atlassian.net"}),
                &Credentials(
                    json!({"email": "a@example.com"})
                        .as_object()
                        .unwrap()
                        .clone()
                )
            ),
            Err("credentials.api_token is required".to_owned())
        );
        assert_eq!(
            provider.validate(
                &json!({"base_url": "https://x.atlassian.net"}),
                &Credentials(json!({"api_token": "t0ken"}).as_object().unwrap().clone())
            ),
            Err("credentials.email is required".to_owned())
        );
        assert_eq!(
            provider.validate(
                &json!({"base_url": "https://x.atlassian.net", "space_key": 3}),
                &good_credentials
            ),
            Err("config.space_key must be a string".to_owned())
        );
    }

    #[test]
    fn errors_keep_no_secret() {
        let answer = |status: u16, body: &[u8]| Answer {
            status: reqwest::StatusCode::from_u16(status).unwrap(),
            headers: reqwest::header::HeaderMap::new(),
            body: body.to_vec(),
        };
        let secrets = vec!["ATATT-secret".to_owned()];
        assert!(matches!(
            judge(
                answer(401, b"Basic authentication with passwords is deprecated"),
                &secrets
            ),
            Err(ProviderError::Unauthorized(_))
        ));
        assert_eq!(
            judge(
                answer(400, br#"{"message": "Could not parse cql ATATT-secret"}"#),
                &secrets
            ),
            Err(ProviderError::Invalid(
                "HTTP 400: Could not parse cql <redacted>".to_owned()
            ))
        );
        assert_eq!(
            judge(answer(500, b"oops"), &secrets),
            Err(ProviderError::Transient("HTTP 500".to_owned()))
        );
        assert!(matches!(
            judge(answer(429, b""), &secrets),
            Err(ProviderError::RateLimited { .. })
        ));
        assert!(matches!(
            judge(answer(200, b"<html>login</html>"), &secrets),
            Err(ProviderError::Transient(_))
        ));
    }
}
