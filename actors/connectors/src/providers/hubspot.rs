//! HubSpot: CRM notes through the search API (`POST /crm/v3/objects/notes/search`), filtered
//! by `hs_lastmodifieddate >= since` (epoch milliseconds) and sorted by it, newest first,
//! paged by `paging.next.after`. A note's body (`hs_note_body`) is HTML; it is stored as
//! text. A private-app token goes in `Authorization: Bearer`.
//!
//! The search stops at 10,000 results per query (HubSpot answers 400 past them): a walk
//! whose next offset would pass that restarts the search with an upper bound, the oldest
//! modification time it has seen (inclusive, so notes sharing that millisecond are read
//! again and skipped by their hash). The page token is a small JSON [`Walk`] holding the
//! offset, that bound and the portal id (read once per walk from `account-info`, for the
//! records' links).
//!
//! Archived notes leave the search; reconciliation lists the live note ids
//! (`GET /crm/v3/objects/notes`). Errors: 401 unauthorized, 429 rate limited (no
//! Retry-After: the client backs off), 5xx transient, other 4xx invalid.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::http::Answer;
use crate::provider::{
    Change, Context, Credentials, IdPage, Page, Provider, ProviderError, ProviderKind, Record,
    Window,
};
use crate::providers::{code_of, first_line, parse_time, scrub, text_of};

/// Results per search page (HubSpot allows up to 200; 100 is its documented default cap).
const PAGE: u64 = 100;

/// The most results one search query may page through.
const MAX_RESULTS: u64 = 10_000;

const MODIFIED: &str = "hs_lastmodifieddate";

/// The properties a search asks for (they replace HubSpot's default set).
const PROPERTIES: [&str; 5] = [
    "hs_note_body",
    MODIFIED,
    "hs_createdate",
    "hs_object_id",
    "hs_timestamp",
];

/// Where a search walk stands: the page token, as JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Walk {
    /// HubSpot's `paging.next.after` (an offset into the current query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The upper bound (epoch ms, inclusive) of a query restarted past 10,000 results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
    /// The HubSpot account (portal) id, for the records' links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub portal: Option<u64>,
}

impl Walk {
    /// The walk after a page: None when the query is done; the next offset; or, when that
    /// offset would page past 10,000 results, the same search restarted below `oldest`
    /// (the oldest modification time seen, in epoch ms).
    pub fn advance(&self, next_after: Option<String>, oldest: Option<i64>) -> Option<Walk> {
        let after = next_after?;
        let offset = after.trim().parse::<u64>().ok();
        match (offset, oldest) {
            (Some(offset), Some(oldest)) if offset.saturating_add(PAGE) > MAX_RESULTS => {
                // A whole query's worth of notes in one millisecond cannot be paged
                // through; step past that millisecond rather than loop on it.
                let until = if self.until == Some(oldest) {
                    tracing::warn!(
                        at = oldest,
                        "more than 10,000 HubSpot notes share one modification time; skipping past it"
                    );
                    oldest - 1
                } else {
                    oldest
                };
                Some(Walk {
                    after: None,
                    until: Some(until),
                    portal: self.portal,
                })
            }
            _ => Some(Walk {
                after: Some(after),
                until: self.until,
                portal: self.portal,
            }),
        }
    }

    fn parse(token: &str) -> Result<Walk, ProviderError> {
        serde_json::from_str(token).map_err(|_| {
            ProviderError::Invalid("the HubSpot page token is not one memvault made".to_owned())
        })
    }

    fn token(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The search request of one page of a walk over notes modified at or after `since`.
pub fn search_body(since: Option<i64>, walk: &Walk) -> Value {
    let mut filters = Vec::new();
    if let Some(since) = since {
        filters
            .push(json!({"propertyName": MODIFIED, "operator": "GTE", "value": since.to_string()}));
    }
    if let Some(until) = walk.until {
        filters
            .push(json!({"propertyName": MODIFIED, "operator": "LTE", "value": until.to_string()}));
    }
    let mut body = json!({
        "sorts": [{"propertyName": MODIFIED, "direction": "DESCENDING"}],
        "properties": PROPERTIES,
        "limit": PAGE,
    });
    if !filters.is_empty() {
        body["filterGroups"] = json!([{ "filters": filters }]);
    }
    if let Some(after) = &walk.after {
        body["after"] = json!(after);
    }
    body
}

pub struct Hubspot;

#[async_trait]
impl Provider for Hubspot {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Hubspot
    }

    /// The search index lags writes by up to a minute; five cover it.
    fn overlap(&self) -> Duration {
        Duration::from_secs(300)
    }

    fn validate(&self, _config: &Value, credentials: &Credentials) -> Result<(), String> {
        credentials.require("token")
    }

    async fn changes(
        &self,
        cx: &Context<'_>,
        window: &Window,
        page: Option<&str>,
    ) -> Result<Page, ProviderError> {
        let walk = match page {
            Some(token) => Walk::parse(token)?,
            None => Walk {
                portal: portal(cx).await?,
                ..Walk::default()
            },
        };
        let body = search_body(window.since.map(|since| since.timestamp_millis()), &walk);
        let url = format!("{}/crm/v3/objects/notes/search", cx.base_url);
        let answer = send(cx, |client| client.post(&url).json(&body)).await?;
        let mut changes = Vec::new();
        let mut oldest: Option<i64> = None;
        for result in answer["results"].as_array().into_iter().flatten() {
            // Every result counts for the bound of a restarted search, kept or not.
            if let Some(at) = modified(result).map(|at| at.timestamp_millis()) {
                oldest = Some(oldest.map_or(at, |oldest| oldest.min(at)));
            }
            changes.extend(change(result, walk.portal));
        }
        Ok(Page {
            changes,
            next: walk
                .advance(next_after(&answer), oldest)
                .map(|walk| walk.token()),
            token: None,
        })
    }

    async fn ids(&self, cx: &Context<'_>, page: Option<&str>) -> Result<IdPage, ProviderError> {
        let url = format!("{}/crm/v3/objects/notes", cx.base_url);
        let mut query = vec![
            ("limit", PAGE.to_string()),
            ("archived", "false".to_owned()),
        ];
        if let Some(after) = page {
            query.push(("after", after.to_owned()));
        }
        let answer = send(cx, |client| client.get(&url).query(&query)).await?;
        Ok(IdPage {
            ids: answer["results"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(id_of)
                .collect(),
            next: next_after(&answer),
        })
    }
}

fn next_after(answer: &Value) -> Option<String> {
    let after = &answer["paging"]["next"]["after"];
    text_of(after).or_else(|| after.as_u64().map(|after| after.to_string()))
}

fn id_of(result: &Value) -> Option<String> {
    text_of(&result["id"])
        .or_else(|| result["id"].as_u64().map(|id| id.to_string()))
        .or_else(|| text_of(&result["properties"]["hs_object_id"]))
}

fn modified(result: &Value) -> Option<chrono::DateTime<chrono::Utc>> {
    parse_time(&result["properties"][MODIFIED]).or_else(|| parse_time(&result["updatedAt"]))
}

/// One search result as a change; None for a note without an id, a time or any text.
fn change(result: &Value, portal: Option<u64>) -> Option<Change> {
    let id = id_of(result)?;
    if result["archived"].as_bool() == Some(true) {
        return Some(Change::Delete(id));
    }
    let properties = &result["properties"];
    let Some(modified) = modified(result) else {
        tracing::warn!(note = %id, "skipping a HubSpot note without a modification time");
        return None;
    };
    let text = html_to_text(properties["hs_note_body"].as_str().unwrap_or_default());
    if text.is_empty() {
        return None;
    }
    Some(Change::Upsert(Record {
        title: first_line(&text, 80).unwrap_or_else(|| format!("HubSpot note {id}")),
        url: portal
            .map(|portal| format!("https://app.hubspot.com/contacts/{portal}/record/0-46/{id}")),
        id,
        modified,
        text,
        author: None,
    }))
}

/// The account's portal id, for links; None when the token may not read it (the links
/// are left out, the sync goes on). Auth failures, rate limits and outages still count.
async fn portal(cx: &Context<'_>) -> Result<Option<u64>, ProviderError> {
    let url = format!("{}/account-info/v3/details", cx.base_url);
    match send(cx, |client| client.get(&url)).await {
        Ok(details) => Ok(details["portalId"]
            .as_u64()
            .or_else(|| details["portalId"].as_str().and_then(|id| id.parse().ok()))),
        Err(ProviderError::Invalid(reason)) => {
            tracing::debug!(%reason, "no HubSpot portal id; notes get no links");
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

async fn send(
    cx: &Context<'_>,
    build: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
) -> Result<Value, ProviderError> {
    let token = cx
        .credentials
        .token()
        .ok_or_else(|| ProviderError::Unauthorized("the connection has no token".to_owned()))?;
    let secrets = cx.credentials.secrets();
    cx.http
        .call(
            ProviderKind::Hubspot,
            &cx.pace_key(ProviderKind::Hubspot),
            |client| build(client).bearer_auth(token),
            |answer| judge(answer, &secrets),
        )
        .await
}

fn judge(answer: Answer, secrets: &[String]) -> Result<Value, ProviderError> {
    let status = answer.status.as_u16();
    if answer.status.is_success() {
        let body = answer.json()?;
        return if body.is_object() {
            Ok(body)
        } else {
            Err(ProviderError::Transient(format!(
                "HubSpot answered HTTP {status} with JSON that is not an object"
            )))
        };
    }
    let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    let category = code_of(&body["category"])
        .or_else(|| code_of(&body["errorType"]))
        .unwrap_or_else(|| "no category".to_owned());
    let message = body["message"]
        .as_str()
        .map(|message| scrub(message, secrets))
        .unwrap_or_default();
    Err(match status {
        401 => ProviderError::Unauthorized(format!("HTTP 401 {category}")),
        // A token without the scopes the call needs.
        403 => ProviderError::Unauthorized(format!("HTTP 403 {category}: {message}")),
        429 => ProviderError::RateLimited {
            retry_after: answer.retry_after(),
        },
        500..=599 => ProviderError::Transient(format!("HTTP {status} {category}")),
        _ => ProviderError::Invalid(format!("HTTP {status} {category}: {message}")),
    })
}

/// The text of a note body: tags dropped (`<br>`, block ends and list items become line
/// breaks), `<script>`/`<style>` contents dropped, entities decoded, blank runs collapsed.
/// Anything malformed is kept as text; it never fails.
pub fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        out.push_str(&decode_entities(&rest[..at]));
        let tag = &rest[at + 1..];
        let opens_tag = tag
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!' || c == '?');
        if !opens_tag {
            out.push('<');
            rest = tag;
            continue;
        }
        if tag.starts_with("!--") {
            rest = tag.find("-->").map_or("", |end| &tag[end + 3..]);
            continue;
        }
        let Some(end) = tag.find('>') else {
            // An unterminated tag: the rest is markup, not text.
            rest = "";
            break;
        };
        let name: String = tag[..end]
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        rest = &tag[end + 1..];
        let closing = tag.starts_with('/');
        if !closing && (name == "script" || name == "style") {
            let close = format!("</{name}");
            rest = find_ascii_case_insensitive(rest, &close)
                .and_then(|start| rest[start..].find('>').map(|end| &rest[start + end + 1..]))
                .unwrap_or("");
            continue;
        }
        if matches!(
            name.as_str(),
            "br" | "p"
                | "div"
                | "li"
                | "tr"
                | "h1"
                | "h2"
                | "h3"
                | "h4"
                | "h5"
                | "h6"
                | "blockquote"
                | "pre"
                | "ul"
                | "ol"
                | "table"
        ) {
            out.push('\n');
        } else if matches!(name.as_str(), "td" | "th") {
            out.push(' ');
        }
    }
    out.push_str(&decode_entities(rest));
    tidy(&out)
}

fn find_ascii_case_insensitive(haystack: &str, needle: &str) -> Option<usize> {
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Whitespace runs inside a line become one space; lines are trimmed; blank lines go.
fn tidy(text: &str) -> String {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let decoded = after
            .find(';')
            .filter(|end| *end <= 10)
            .and_then(|end| entity(&after[..end]).map(|c| (c, end)));
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    let code = if let Some(hex) = name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
        u32::from_str_radix(hex, 16).ok()?
    } else if let Some(decimal) = name.strip_prefix('#') {
        decimal.parse::<u32>().ok()?
    } else {
        return match name {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some(' '),
            "ndash" => Some('–'),
            "mdash" => Some('—'),
            "hellip" => Some('…'),
            "rsquo" => Some('’'),
            "lsquo" => Some('‘'),
            "rdquo" => Some('”'),
            "ldquo" => Some('“'),
            _ => None,
        };
    };
    char::from_u32(code)
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;

    use super::*;

    #[test]
    fn html_becomes_text() {
        assert_eq!(
            html_to_text(
                "<div><p>Call with <b>Ada</b> &amp; Grace</p><p>Next:&nbsp;Friday</p></div>"
            ),
            "Call with Ada & Grace\nNext: Friday"
        );
        assert_eq!(
            html_to_text("line one<br>line two<br/>three"),
            "line one\nline two\nthree"
        );
        assert_eq!(
            html_to_text("<ul><li>one</li><li>two</li></ul>"),
            "one\ntwo"
        );
        assert_eq!(
            html_to_text("<style>p { color: red }</style>kept<SCRIPT>alert(1)</SCRIPT> text"),
            "kept text"
        );
        assert_eq!(html_to_text("<!-- a comment -->after"), "after");
        assert_eq!(
            html_to_text("plain text, no markup"),
            "plain text, no markup"
        );
        assert_eq!(
            html_to_text("&#65;&#x42;&lt;tag&gt; &unknown; & alone"),
            "AB<tag> &unknown; & alone"
        );
    }

    #[test]
    fn malformed_html_never_panics() {
        for html in [
            "<",
            "<<<",
            "a < b and c > d",
            "<p",
            "<p>unclosed",
            "<!-- never closed",
            "&",
            "&#;",
            "&#xZZ;",
            "&#99999999999;",
            "<script>never closed",
            "é<é>é",
            "<\u{0}>",
            "</>",
        ] {
            let _ = html_to_text(html);
        }
        assert_eq!(html_to_text("a < b and c > d"), "a < b and c > d");
        assert_eq!(html_to_text("text <p"), "text");
        assert_eq!(html_to_text("é<b>é</b>é"), "ééé");
    }

    #[test]
    fn a_walk_pages_by_offset_under_10000() {
        let walk = Walk::default();
        let next = walk.advance(Some("100".into()), Some(5)).unwrap();
        assert_eq!(next.after.as_deref(), Some("100"));
        assert_eq!(next.until, None);
        assert_eq!(walk.advance(None, Some(5)), None, "no paging.next: done");
        let deep = walk.advance(Some("9900".into()), Some(5)).unwrap();
        assert_eq!(
            deep.after.as_deref(),
            Some("9900"),
            "9,900 + 100 is still allowed"
        );
    }

    #[test]
    fn a_walk_past_10000_restarts_below_the_oldest_time_seen() {
        let walk = Walk {
            after: Some("9900".into()),
            until: None,
            portal: Some(42),
        };
        let next = walk
            .advance(Some("10000".into()), Some(1_700_000_000_000))
            .unwrap();
        assert_eq!(
            next,
            Walk {
                after: None,
                until: Some(1_700_000_000_000),
                portal: Some(42)
            }
        );
        // The token round-trips and the restarted search carries both bounds.
        let token = next.token();
        assert_eq!(Walk::parse(&token).unwrap(), next);
        let body = search_body(Some(1_600_000_000_000), &next);
        let filters = &body["filterGroups"][0]["filters"];
        assert_eq!(filters[0]["operator"], "GTE");
        assert_eq!(filters[0]["value"], "1600000000000");
        assert_eq!(filters[1]["operator"], "LTE");
        assert_eq!(filters[1]["value"], "1700000000000");
        assert!(body.get("after").is_none());
        // Within the restarted query, paging keeps the bound.
        let paged = next
            .advance(Some("100".into()), Some(1_690_000_000_000))
            .unwrap();
        assert_eq!(paged.until, Some(1_700_000_000_000));
        assert_eq!(search_body(None, &paged)["after"], "100");
    }

    #[test]
    fn a_walk_stuck_on_one_millisecond_steps_past_it() {
        let walk = Walk {
            after: Some("9900".into()),
            until: Some(1_700_000_000_000),
            portal: None,
        };
        let next = walk
            .advance(Some("10000".into()), Some(1_700_000_000_000))
            .unwrap();
        assert_eq!(next.until, Some(1_699_999_999_999));
    }

    #[test]
    fn page_tokens_that_are_not_walks_are_invalid() {
        assert!(matches!(Walk::parse("abc"), Err(ProviderError::Invalid(_))));
        assert_eq!(Walk::parse("{}").unwrap(), Walk::default());
    }

    #[test]
    fn a_first_search_has_no_filters() {
        let body = search_body(None, &Walk::default());
        assert!(body.get("filterGroups").is_none());
        assert_eq!(body["sorts"][0]["direction"], "DESCENDING");
        assert_eq!(body["limit"], 100);
    }

    #[test]
    fn results_become_changes() {
        let result = json!({
            "id": "123",
            "properties": {"hs_object_id": "123", "hs_note_body": "<p>Met the <b>team</b></p>",
                           "hs_lastmodifieddate": "2024-03-01T10:00:00.250Z"},
            "archived": false,
        });
        let Some(Change::Upsert(record)) = change(&result, Some(7)) else {
            panic!("an upsert");
        };
        assert_eq!(record.id, "123");
        assert_eq!(record.text, "Met the team");
        assert_eq!(record.title, "Met the team");
        assert_eq!(
            record.modified,
            DateTime::parse_from_rfc3339("2024-03-01T10:00:00.250Z").unwrap()
        );
        assert_eq!(
            record.url.as_deref(),
            Some("https://app.hubspot.com/contacts/7/record/0-46/123")
        );
        let archived = json!({"id": "9", "archived": true});
        assert_eq!(change(&archived, None), Some(Change::Delete("9".into())));
        let timeless = json!({"id": "9", "properties": {"hs_note_body": "x"}});
        assert_eq!(change(&timeless, None), None);
        let ms = json!({"id": 9, "properties": {"hs_note_body": "x", "hs_lastmodifieddate": "1700000000000"}});
        assert!(matches!(change(&ms, None), Some(Change::Upsert(_))));
    }

    #[test]
    fn errors_map_to_the_engine_terms() {
        use reqwest::header::HeaderMap;
        use reqwest::StatusCode;
        let answer = |status: u16, body: &str| Answer {
            status: StatusCode::from_u16(status).unwrap(),
            headers: HeaderMap::new(),
            body: body.as_bytes().to_vec(),
        };
        let secrets = vec!["pat-na1-secret".to_owned()];
        let auth = judge(
            answer(
                401,
                r#"{"status":"error","message":"bad pat-na1-secret","category":"INVALID_AUTHENTICATION"}"#,
            ),
            &secrets,
        );
        assert!(
            matches!(auth, Err(ProviderError::Unauthorized(ref text)) if !text.contains("secret"))
        );
        assert_eq!(
            judge(answer(429, r#"{"errorType":"RATE_LIMIT"}"#), &secrets),
            Err(ProviderError::RateLimited { retry_after: None })
        );
        assert!(matches!(
            judge(answer(500, "oops"), &secrets),
            Err(ProviderError::Transient(_))
        ));
        let invalid = judge(
            answer(
                400,
                r#"{"message":"token pat-na1-secret is odd","category":"VALIDATION_ERROR"}"#,
            ),
            &secrets,
        );
        assert!(
            matches!(invalid, Err(ProviderError::Invalid(ref text)) if !text.contains("pat-na1-secret"))
        );
        assert!(matches!(
            judge(answer(200, "not json"), &secrets),
            Err(ProviderError::Transient(_))
        ));
        assert!(matches!(
            judge(answer(200, "[]"), &secrets),
            Err(ProviderError::Transient(_))
        ));
    }
}
