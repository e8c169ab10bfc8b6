//! Slack: one channel's `conversations.history`, newest first, paged by
//! `response_metadata.next_cursor`. A record is a top-level message (thread replies are
//! out of scope), its id the message `ts`, its modification time `edited.ts` when the
//! message was edited.
//!
//! `oldest` filters on when a message was posted, so an edit to an older message is
//! invisible to it: an incremental walk asks for everything posted up to [`LOOKBACK`]
//! before the window (the engine skips the unchanged messages by their hash), so edits
//! made within a week of posting reach the memory. Deletions never show in the history;
//! reconciliation ([`Provider::ids`], the whole history) removes them.
//!
//! The token goes in `Authorization: Bearer` (never the query string). Slack answers its
//! errors as HTTP 200 with `ok: false` and an `error` code; rate limits as HTTP 429 with
//! `Retry-After`.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;

use crate::http::Answer;
use crate::provider::{
    require, Change, Context, Credentials, IdPage, Page, Provider, ProviderError, ProviderKind,
    Record, Window,
};
use crate::providers::{code_of, first_line, text_of};

/// Messages asked for per page (Slack's maximum is 999; it may answer fewer).
const PAGE: u32 = 200;

/// How far before the window an incremental walk re-reads the history, so that edits to
/// recently posted messages are seen.
pub const LOOKBACK: TimeDelta = TimeDelta::days(7);

/// Message subtypes that are channel events, not anything someone wrote.
const EVENTS: [&str; 9] = [
    "channel_join",
    "channel_leave",
    "channel_topic",
    "channel_purpose",
    "channel_name",
    "channel_archive",
    "channel_unarchive",
    "group_join",
    "group_leave",
];

pub struct Slack;

#[async_trait]
impl Provider for Slack {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Slack
    }

    /// Small: [`LOOKBACK`] already re-reads a week of history on every walk.
    fn overlap(&self) -> Duration {
        Duration::from_secs(60)
    }

    fn validate(&self, config: &Value, credentials: &Credentials) -> Result<(), String> {
        require(config, "channel_id", "config")?;
        credentials.require("token")
    }

    async fn changes(
        &self,
        cx: &Context<'_>,
        window: &Window,
        page: Option<&str>,
    ) -> Result<Page, ProviderError> {
        let channel = channel(cx)?;
        let mut params = vec![("channel", channel.to_owned()), ("limit", PAGE.to_string())];
        if let Some(since) = window.since {
            params.push(("oldest", oldest(since)));
        }
        if let Some(cursor) = page {
            params.push(("cursor", cursor.to_owned()));
        }
        let body = call(cx, "conversations.history", &params).await?;
        let changes = body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|message| record(channel, message))
            .map(Change::Upsert)
            .collect();
        Ok(Page {
            changes,
            next: next_cursor(&body)?,
            token: None,
        })
    }

    async fn ids(&self, cx: &Context<'_>, page: Option<&str>) -> Result<IdPage, ProviderError> {
        let channel = channel(cx)?;
        let mut params = vec![("channel", channel.to_owned()), ("limit", PAGE.to_string())];
        if let Some(cursor) = page {
            params.push(("cursor", cursor.to_owned()));
        }
        let body = call(cx, "conversations.history", &params).await?;
        Ok(IdPage {
            ids: body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|message| text_of(&message["ts"]))
                .collect(),
            next: next_cursor(&body)?,
        })
    }
}

fn channel<'a>(cx: &'a Context<'_>) -> Result<&'a str, ProviderError> {
    cx.config_str("channel_id")
        .ok_or_else(|| ProviderError::Invalid("config.channel_id is required".to_owned()))
}

/// The `oldest` of a walk from `since`: [`LOOKBACK`] earlier, as a Slack ts.
fn oldest(since: DateTime<Utc>) -> String {
    let start = since
        .checked_sub_signed(LOOKBACK)
        .unwrap_or(DateTime::UNIX_EPOCH)
        .max(DateTime::UNIX_EPOCH);
    to_ts(start)
}

/// A time as a Slack ts: epoch seconds and six digits of microseconds.
pub fn to_ts(time: DateTime<Utc>) -> String {
    // A leap second shows as 1,000,000 or more; it stays in its second.
    let micros = time.timestamp_subsec_micros().min(999_999);
    format!("{}.{micros:06}", time.timestamp())
}

/// A Slack ts ("1712345678.000200") as a time; None unless it is digits with an optional
/// fraction (microseconds beyond six digits are dropped).
pub fn parse_ts(ts: &str) -> Option<DateTime<Utc>> {
    let ts = ts.trim();
    let (seconds, fraction) = ts.split_once('.').unwrap_or((ts, ""));
    let digits = |text: &str| text.bytes().all(|byte| byte.is_ascii_digit());
    if seconds.is_empty() || seconds.len() > 12 || !digits(seconds) || !digits(fraction) {
        return None;
    }
    let seconds: i64 = seconds.parse().ok()?;
    let mut micros = 0u32;
    for (place, byte) in fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(6)
        .enumerate()
    {
        micros += u32::from(byte - b'0') * 10u32.pow(5 - place as u32);
    }
    DateTime::from_timestamp(seconds, micros * 1000)
}

/// One message as a record; None for channel events, blank messages and a malformed ts.
fn record(channel: &str, message: &Value) -> Option<Record> {
    let ts = text_of(&message["ts"])?;
    if message["subtype"]
        .as_str()
        .is_some_and(|subtype| EVENTS.contains(&subtype))
    {
        return None;
    }
    let text = text_of(&message["text"])?;
    let Some(posted) = parse_ts(&ts) else {
        tracing::warn!(channel, "skipping a Slack message with a malformed ts");
        return None;
    };
    let modified = message["edited"]["ts"]
        .as_str()
        .and_then(parse_ts)
        .map_or(posted, |edited| edited.max(posted));
    Some(Record {
        url: Some(format!(
            "https://slack.com/archives/{channel}/p{}",
            ts.replace('.', "")
        )),
        id: ts,
        modified,
        title: first_line(&text, 80).unwrap_or_else(|| format!("Message in #{channel}")),
        text,
        author: text_of(&message["user"])
            .or_else(|| text_of(&message["username"]))
            .or_else(|| text_of(&message["bot_id"])),
    })
}

/// The page token of the rest of the history: `response_metadata.next_cursor`.
fn next_cursor(body: &Value) -> Result<Option<String>, ProviderError> {
    let cursor = text_of(&body["response_metadata"]["next_cursor"]);
    if cursor.is_none() && body["has_more"].as_bool() == Some(true) {
        // Without a cursor the rest cannot be asked for; ending here would lose it.
        return Err(ProviderError::Invalid(
            "Slack answered has_more without a next_cursor".to_owned(),
        ));
    }
    Ok(cursor)
}

async fn call(
    cx: &Context<'_>,
    method: &str,
    params: &[(&str, String)],
) -> Result<Value, ProviderError> {
    let token = cx
        .credentials
        .token()
        .ok_or_else(|| ProviderError::Unauthorized("the connection has no token".to_owned()))?;
    let url = format!("{}/{method}", cx.base_url);
    cx.http
        .call(
            ProviderKind::Slack,
            &cx.pace_key(ProviderKind::Slack),
            |client| client.get(&url).bearer_auth(token).query(params),
            judge,
        )
        .await
}

fn judge(answer: Answer) -> Result<Value, ProviderError> {
    let status = answer.status.as_u16();
    if status == 429 {
        return Err(ProviderError::RateLimited {
            retry_after: answer.retry_after(),
        });
    }
    let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    if body["ok"].as_bool() == Some(true) && answer.status.is_success() {
        return Ok(body);
    }
    if let Some(code) = code_of(&body["error"]) {
        return Err(classify(&code, &answer));
    }
    Err(match status {
        200..=299 => ProviderError::Transient(format!(
            "Slack answered HTTP {status} without ok (or with a body that is not JSON)"
        )),
        401 | 403 => ProviderError::Unauthorized(format!("HTTP {status}")),
        500..=599 => ProviderError::Transient(format!("HTTP {status}")),
        _ => ProviderError::Invalid(format!("HTTP {status}")),
    })
}

/// Slack's `error` code in the engine's terms.
fn classify(code: &str, answer: &Answer) -> ProviderError {
    match code {
        "not_authed"
        | "invalid_auth"
        | "account_inactive"
        | "token_revoked"
        | "token_expired"
        | "no_permission"
        | "missing_scope"
        | "not_allowed_token_type"
        | "ekm_access_denied"
        | "team_access_not_granted" => {
            ProviderError::Unauthorized(format!("Slack answered {code}"))
        }
        "ratelimited" | "rate_limited" => ProviderError::RateLimited {
            retry_after: answer.retry_after(),
        },
        "internal_error" | "fatal_error" | "service_unavailable" | "request_timeout" => {
            ProviderError::Transient(format!("Slack answered {code}"))
        }
        _ if answer.status.is_server_error() => {
            ProviderError::Transient(format!("Slack answered {code}"))
        }
        _ => ProviderError::Invalid(format!("Slack answered {code}")),
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderMap;
    use reqwest::StatusCode;
    use serde_json::json;

    use super::*;

    fn answer(status: u16, body: &str, retry_after: Option<&str>) -> Answer {
        let mut headers = HeaderMap::new();
        if let Some(value) = retry_after {
            headers.insert("retry-after", value.parse().unwrap());
        }
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            headers,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn ts_round_trips_with_microseconds() {
        let time = parse_ts("1712345678.000200").unwrap();
        assert_eq!(time.timestamp(), 1_712_345_678);
        assert_eq!(time.timestamp_subsec_micros(), 200);
        assert_eq!(to_ts(time), "1712345678.000200");
        assert_eq!(parse_ts("1712345678").unwrap().timestamp_subsec_micros(), 0);
        assert_eq!(
            parse_ts("1712345678.5").unwrap().timestamp_subsec_micros(),
            500_000
        );
        assert_eq!(
            parse_ts("1712345678.1234567")
                .unwrap()
                .timestamp_subsec_micros(),
            123_456
        );
        let millis = DateTime::from_timestamp_millis(1_712_345_678_042).unwrap();
        assert_eq!(to_ts(millis), "1712345678.042000");
    }

    #[test]
    fn malformed_ts_is_none() {
        for ts in [
            "",
            ".5",
            "abc",
            "12.3x",
            "-5.000001",
            "1.2.3",
            "99999999999999999999",
        ] {
            assert_eq!(parse_ts(ts), None, "{ts:?}");
        }
    }

    #[test]
    fn oldest_looks_back_a_week() {
        let since = parse_ts("1712345678.000200").unwrap();
        assert_eq!(oldest(since), "1711740878.000200");
        assert_eq!(oldest(DateTime::UNIX_EPOCH), "0.000000");
    }

    #[test]
    fn an_edited_message_is_modified_at_its_edit() {
        let message = json!({
            "type": "message", "user": "U1", "text": "first line\nsecond", "ts": "1700000000.000100",
            "edited": {"user": "U1", "ts": "1700000500.000000"},
        });
        let edited = record("C1", &message).unwrap();
        assert_eq!(edited.id, "1700000000.000100");
        assert_eq!(edited.modified.timestamp(), 1_700_000_500);
        assert_eq!(edited.title, "first line");
        assert_eq!(edited.author.as_deref(), Some("U1"));
        assert_eq!(
            edited.url.as_deref(),
            Some("https://slack.com/archives/C1/p1700000000000100")
        );
        let unedited = json!({"text": "hi", "ts": "1700000000.000100"});
        assert_eq!(
            record("C1", &unedited).unwrap().modified.timestamp(),
            1_700_000_000
        );
    }

    #[test]
    fn events_blank_and_malformed_messages_are_skipped() {
        for message in [
            json!({"subtype": "channel_join", "text": "<@U1> has joined", "ts": "1.000000"}),
            json!({"text": "  ", "ts": "1.000000"}),
            json!({"text": "hi", "ts": "yesterday"}),
            json!({"text": "hi"}),
            json!("not an object"),
        ] {
            assert_eq!(record("C1", &message), None, "{message}");
        }
    }

    #[test]
    fn errors_map_to_the_engine_terms() {
        let judged = |status, body: &str, retry| judge(answer(status, body, retry));
        assert!(judged(200, r#"{"ok":true,"messages":[]}"#, None).is_ok());
        assert!(matches!(
            judged(200, r#"{"ok":false,"error":"invalid_auth"}"#, None),
            Err(ProviderError::Unauthorized(_))
        ));
        assert!(matches!(
            judged(200, r#"{"ok":false,"error":"token_revoked"}"#, None),
            Err(ProviderError::Unauthorized(_))
        ));
        assert_eq!(
            judged(429, r#"{"ok":false,"error":"ratelimited"}"#, Some("3")),
            Err(ProviderError::RateLimited {
                retry_after: Some(Duration::from_secs(3))
            })
        );
        assert!(matches!(
            judged(200, r#"{"ok":false,"error":"internal_error"}"#, None),
            Err(ProviderError::Transient(_))
        ));
        assert!(matches!(
            judged(503, "<html>down</html>", None),
            Err(ProviderError::Transient(_))
        ));
        assert!(matches!(
            judged(200, r#"{"ok":false,"error":"channel_not_found"}"#, None),
            Err(ProviderError::Invalid(_))
        ));
        assert!(matches!(
            judged(200, "not json", None),
            Err(ProviderError::Transient(_))
        ));
        assert!(matches!(
            judged(200, "[1,2]", None),
            Err(ProviderError::Transient(_))
        ));
    }

    #[test]
    fn has_more_needs_a_cursor() {
        let more = json!({"has_more": true, "response_metadata": {"next_cursor": "abc"}});
        assert_eq!(next_cursor(&more).unwrap().as_deref(), Some("abc"));
        let done = json!({"has_more": false, "response_metadata": {"next_cursor": ""}});
        assert_eq!(next_cursor(&done).unwrap(), None);
        assert!(next_cursor(&json!({"has_more": true})).is_err());
    }

    #[test]
    fn validate_names_the_missing_field() {
        let token = Credentials(json!({"token": "xoxb-1"}).as_object().unwrap().clone());
        assert!(Slack.validate(&json!({"channel_id": "C1"}), &token).is_ok());
        let error = Slack.validate(&json!({}), &token).unwrap_err();
        assert!(error.contains("config.channel_id"), "{error}");
        let error = Slack
            .validate(&json!({"channel_id": "C1"}), &Credentials::default())
            .unwrap_err();
        assert!(error.contains("credentials.token"), "{error}");
    }
}
