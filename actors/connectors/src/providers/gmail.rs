//! Gmail: `users.messages.list` (newest first) with `q = <config.query> after:<epoch
//! seconds>`, then `users.messages.get?format=full` per message: Subject is the title, From
//! the author, `internalDate` (epoch ms) the modification time, and the text the message's
//! text/plain parts (base64url), or its HTML parts as text when it has no plain one.
//! Attachments are left out.
//!
//! Messages are immutable (only their labels change), so a walk only adds; a deleted
//! message leaves the listing (Gmail leaves out trash and spam), and reconciliation, which
//! lists the ids matching the user's query, removes it. Errors come in Google's JSON shape
//! (see [`super::google`]).

use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::provider::{
    Change, Context, Credentials, IdPage, Page, Provider, ProviderError, ProviderKind, Record,
    Window,
};
use crate::providers::google;
use crate::providers::{html_to_text, parse_time, text_of};

/// Messages per page of the changes walk (each one costs a `messages.get`).
const PAGE: u32 = 100;
/// Messages per page of the id listing (Gmail's maximum).
const IDS_PAGE: u32 = 500;
/// How deep a message's MIME tree is walked.
const MAX_DEPTH: usize = 16;

pub struct Gmail;

#[async_trait]
impl Provider for Gmail {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Gmail
    }

    /// `internalDate` is the receipt time, and mail can be indexed a little after it;
    /// messages read again are skipped by their content hash.
    fn overlap(&self) -> Duration {
        Duration::from_secs(3600)
    }

    fn validate(&self, config: &Value, credentials: &Credentials) -> Result<(), String> {
        credentials.require("token")?;
        match config.get("query") {
            None | Some(Value::Null) | Some(Value::String(_)) => Ok(()),
            Some(_) => Err("config.query must be a string".to_owned()),
        }
    }

    async fn changes(
        &self,
        cx: &Context<'_>,
        window: &Window,
        page: Option<&str>,
    ) -> Result<Page, ProviderError> {
        let q = search(cx.config_str("query"), window.since);
        let listing = list(cx, q, PAGE, page).await?;
        let mut changes = Vec::new();
        for id in message_ids(&listing) {
            if let Some(record) = message(cx, &id).await? {
                changes.push(Change::Upsert(record));
            }
        }
        Ok(Page {
            changes,
            next: text_of(&listing["nextPageToken"]),
            token: None,
        })
    }

    async fn ids(&self, cx: &Context<'_>, page: Option<&str>) -> Result<IdPage, ProviderError> {
        let q = search(cx.config_str("query"), None);
        let listing = list(cx, q, IDS_PAGE, page).await?;
        Ok(IdPage {
            ids: message_ids(&listing),
            next: text_of(&listing["nextPageToken"]),
        })
    }
}

/// The `q` of a walk: the user's query and, when set, `after:` one second before `since`
/// (`after:` is exclusive and counts whole seconds, the window includes `since`).
fn search(query: Option<&str>, since: Option<DateTime<Utc>>) -> Option<String> {
    let after = since.map(|since| format!("after:{}", since.timestamp().saturating_sub(1)));
    let q: Vec<&str> = query.into_iter().chain(after.as_deref()).collect();
    (!q.is_empty()).then(|| q.join(" "))
}

async fn list(
    cx: &Context<'_>,
    q: Option<String>,
    page_size: u32,
    page: Option<&str>,
) -> Result<Value, ProviderError> {
    let mut query = vec![("maxResults", page_size.to_string())];
    if let Some(q) = q {
        query.push(("q", q));
    }
    if let Some(page) = page {
        query.push(("pageToken", page.to_owned()));
    }
    let url = format!("{}/gmail/v1/users/me/messages", cx.base_url);
    google::get_json(cx, ProviderKind::Gmail, &url, &query).await
}

/// The ids of a listing (an empty one has no `messages` key at all).
fn message_ids(listing: &Value) -> Vec<String> {
    listing["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|message| text_of(&message["id"]))
        .collect()
}

/// One message as a record; None when it vanished since the listing or cannot be read.
async fn message(cx: &Context<'_>, id: &str) -> Result<Option<Record>, ProviderError> {
    let id_segment: String = url::form_urlencoded::byte_serialize(id.as_bytes()).collect();
    let url = format!("{}/gmail/v1/users/me/messages/{id_segment}", cx.base_url);
    let query = [("format", "full".to_owned())];
    match google::get_json(cx, ProviderKind::Gmail, &url, &query).await {
        Ok(message) => {
            let record = to_record(id, &message);
            if record.is_none() {
                tracing::warn!(message = id, "a Gmail message without a date is skipped");
            }
            Ok(record)
        }
        // Deleted between the listing and this call, or refused for this one message: it
        // must not stop the walk.
        Err(ProviderError::Invalid(reason)) => {
            tracing::warn!(message = id, %reason, "Gmail refused this message; skipped");
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// A `format=full` message as a record; None without a usable date.
fn to_record(id: &str, message: &Value) -> Option<Record> {
    let payload = &message["payload"];
    let modified = parse_time(&message["internalDate"]).or_else(|| {
        header(payload, "Date")
            .and_then(|date| DateTime::parse_from_rfc2822(&date).ok())
            .map(|date| date.with_timezone(&Utc))
    })?;
    let mut text = body_text(payload);
    if text.is_empty() {
        // The snippet is HTML-escaped.
        text = message["snippet"]
            .as_str()
            .map(html_to_text)
            .unwrap_or_default();
    }
    Some(Record {
        id: id.to_owned(),
        modified,
        title: header(payload, "Subject").unwrap_or_default(),
        text,
        url: Some(format!("https://mail.google.com/mail/u/0/#all/{id}")),
        author: header(payload, "From"),
    })
}

/// A header of a message part by name (case-insensitive), trimmed and non-empty.
fn header(part: &Value, name: &str) -> Option<String> {
    part["headers"]
        .as_array()?
        .iter()
        .find(|header| {
            header["name"]
                .as_str()
                .is_some_and(|found| found.eq_ignore_ascii_case(name))
        })
        .and_then(|header| text_of(&header["value"]))
}

/// The text of a message: its inline text/plain parts, or else its text/html parts as
/// text, in order, with Unix line ends.
fn body_text(payload: &Value) -> String {
    let mut plain = Vec::new();
    let mut html = Vec::new();
    collect_parts(payload, &mut plain, &mut html, 0);
    let parts = if plain.is_empty() {
        html.iter().map(|part| html_to_text(part)).collect()
    } else {
        plain
    };
    parts
        .iter()
        .map(|part| part.replace("\r\n", "\n").trim().to_owned())
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Walks a MIME tree depth first, keeping the decoded bodies of the inline text parts.
fn collect_parts(part: &Value, plain: &mut Vec<String>, html: &mut Vec<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(children) = part["parts"].as_array() {
        for child in children {
            collect_parts(child, plain, html, depth + 1);
        }
        return;
    }
    let attached = part["filename"]
        .as_str()
        .is_some_and(|name| !name.is_empty())
        || header(part, "Content-Disposition")
            .is_some_and(|value| value.to_ascii_lowercase().starts_with("attachment"));
    if attached {
        return;
    }
    let mime = part["mimeType"]
        .as_str()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let target = match mime.as_str() {
        "text/plain" => plain,
        "text/html" => html,
        _ => return,
    };
    let Some(bytes) = part["body"]["data"].as_str().and_then(decode_base64url) else {
        return;
    };
    target.push(decode_charset(
        &bytes,
        header(part, "Content-Type").as_deref(),
    ));
}

/// Gmail's base64url body data; padding, whitespace and the standard alphabet are
/// tolerated.
fn decode_base64url(data: &str) -> Option<Vec<u8>> {
    let cleaned: String = data
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '=')
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            other => other,
        })
        .collect();
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cleaned)
        .ok()
}

/// Bytes in the part's charset: Latin-1 and its kin byte by byte, anything else as UTF-8
/// (invalid sequences replaced).
fn decode_charset(bytes: &[u8], content_type: Option<&str>) -> String {
    let charset = content_type
        .and_then(|value| {
            value.split(';').find_map(|parameter| {
                let (name, value) = parameter.split_once('=')?;
                name.trim()
                    .eq_ignore_ascii_case("charset")
                    .then(|| value.trim().trim_matches('"').to_ascii_lowercase())
            })
        })
        .unwrap_or_default();
    if matches!(
        charset.as_str(),
        "iso-8859-1" | "latin1" | "latin-1" | "iso8859-1" | "windows-1252" | "cp1252"
    ) {
        bytes.iter().map(|&byte| char::from(byte)).collect()
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn encode(text: &str) -> String {
        base64::engine::general_purpose::URL_SAFE.encode(text)
    }

    #[test]
    fn base64url_bodies_decode_with_or_without_padding() {
        // "?>?" encodes to "Pz4_" in base64url and "Pz4/" in standard base64.
        assert_eq!(decode_base64url("Pz4_").unwrap(), b"?>?");
        assert_eq!(decode_base64url("Pz4/").unwrap(), b"?>?");
        assert_eq!(decode_base64url("aGk=").unwrap(), b"hi");
        assert_eq!(decode_base64url("aGk").unwrap(), b"hi");
        assert_eq!(decode_base64url("aG\r\nk=").unwrap(), b"hi");
        assert_eq!(decode_base64url("not base64 !"), None);
        assert_eq!(decode_base64url("").unwrap(), b"");
    }

    #[test]
    fn the_plain_part_of_an_alternative_wins() {
        let payload = json!({"mimeType": "multipart/alternative", "parts": [
            {"mimeType": "text/plain", "filename": "", "body": {"data": encode("plain words\r\n")}},
            {"mimeType": "text/html", "filename": "", "body": {"data": encode("<p>html words</p>")}},
        ]});
        assert_eq!(body_text(&payload), "plain words");
    }

    #[test]
    fn nested_parts_are_walked_and_attachments_left_out() {
        let payload = json!({"mimeType": "multipart/mixed", "parts": [
            {"mimeType": "multipart/alternative", "parts": [
                {"mimeType": "multipart/related", "parts": [
                    {"mimeType": "text/html", "body": {"data": encode("<div>only &amp; html</div>")}},
                    {"mimeType": "image/png", "filename": "logo.png", "body": {"attachmentId": "a1"}},
                ]},
            ]},
            {"mimeType": "text/html", "filename": "report.html", "body": {"data": encode("<p>attached</p>")}},
            {"mimeType": "text/html", "headers": [{"name": "Content-Disposition", "value": "attachment"}],
             "body": {"data": encode("<p>also attached</p>")}},
        ]});
        assert_eq!(body_text(&payload), "only & html");
    }

    #[test]
    fn a_single_part_message_and_a_latin1_charset() {
        let payload = json!({"mimeType": "text/plain", "body": {"data": encode("hello")}});
        assert_eq!(body_text(&payload), "hello");
        let latin = base64::engine::general_purpose::URL_SAFE.encode([0x63, 0x61, 0x66, 0xe9]);
        let payload = json!({"mimeType": "text/plain",
            "headers": [{"name": "content-type", "value": "text/plain; charset=\"ISO-8859-1\""}],
            "body": {"data": latin}});
        assert_eq!(body_text(&payload), "café");
    }

    #[test]
    fn odd_payloads_answer_empty_text() {
        for payload in [
            json!(null),
            json!({"parts": "no"}),
            json!({"mimeType": "text/plain", "body": {"data": 7}}),
            json!({"mimeType": "text/plain", "body": {"data": "%%%"}}),
        ] {
            assert_eq!(body_text(&payload), "");
        }
        let mut deep = json!({"mimeType": "text/plain", "body": {"data": encode("deep")}});
        for _ in 0..40 {
            deep = json!({"mimeType": "multipart/mixed", "parts": [deep]});
        }
        assert_eq!(body_text(&deep), "");
    }

    #[test]
    fn a_full_message_becomes_a_record() {
        let message = json!({
            "id": "18f0a", "internalDate": "1714557600000", "snippet": "hi &amp; bye",
            "payload": {"mimeType": "multipart/alternative", "headers": [
                {"name": "Subject", "value": "Quarterly planning"},
                {"name": "From", "value": "Ada Lovelace <ada@example.org>"},
                {"name": "Date", "value": "Wed, 01 May 2024 10:00:00 +0000"},
            ], "parts": [{"mimeType": "text/plain", "body": {"data": encode("The budget\r\n")}}]},
        });
        let record = to_record("18f0a", &message).unwrap();
        assert_eq!(record.title, "Quarterly planning");
        assert_eq!(
            record.author.as_deref(),
            Some("Ada Lovelace <ada@example.org>")
        );
        assert_eq!(record.text, "The budget");
        assert_eq!(record.modified.timestamp_millis(), 1_714_557_600_000);
        assert_eq!(
            record.url.as_deref(),
            Some("https://mail.google.com/mail/u/0/#all/18f0a")
        );
    }

    #[test]
    fn the_date_header_and_snippet_stand_in() {
        let message = json!({"snippet": "hi &amp; bye", "payload": {"headers": [
            {"name": "date", "value": "Wed, 01 May 2024 10:00:00 +0000"}]}});
        let record = to_record("x", &message).unwrap();
        assert_eq!(record.modified.timestamp(), 1_714_557_600);
        assert_eq!(record.text, "hi & bye");
        assert_eq!(record.title, "");
        assert_eq!(to_record("x", &json!({"payload": 3})), None);
    }

    #[test]
    fn the_search_joins_the_query_and_the_window() {
        let since = DateTime::from_timestamp(1_714_557_600, 500_000_000).unwrap();
        assert_eq!(search(None, None), None);
        assert_eq!(search(Some("from:ada"), None).as_deref(), Some("from:ada"));
        assert_eq!(
            search(Some("label:work -in:chats"), Some(since)).as_deref(),
            Some("label:work -in:chats after:1714557599")
        );
        assert_eq!(
            search(None, Some(since)).as_deref(),
            Some("after:1714557599")
        );
    }

    #[test]
    fn an_empty_listing_has_no_ids() {
        assert!(message_ids(&json!({"resultSizeEstimate": 0})).is_empty());
        assert_eq!(
            message_ids(&json!({"messages": [{"id": "a"}, {"id": 3}, {}, {"id": "b"}]})),
            vec!["a", "b"]
        );
    }
}
