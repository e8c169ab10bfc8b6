//! Google Drive: one `files.list` walk ordered by `modifiedTime desc`, with
//! `q = modifiedTime >= '<since>' and mimeType != '<folder>' ['<folder_id>' in parents]
//! [and (<query>)]`, and the text of each file: Google Docs and Slides exported as
//! text/plain (Sheets as text/csv), text files downloaded with `alt=media`; other files
//! (PDFs, images, other Google types) have no text this provider can read and are left out.
//! Folders are not records.
//!
//! Deletions: an incremental walk leaves out `trashed = false`, so a file trashed since the
//! last sync is listed with `trashed: true` and becomes a [`Change::Delete`]; the first walk
//! (no `since`) asks for `trashed = false` so that it does not read the whole trash.
//! Reconciliation lists the ids of the untrashed files in scope.
//!
//! `config.folder_id` narrows to the folder's direct children; `config.query` is a Drive
//! query expression (`name contains 'plan'`) ANDed with the rest. Errors come in Google's
//! JSON shape (see [`super::google`]).

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::provider::{
    Change, Context, Credentials, IdPage, Page, Provider, ProviderError, ProviderKind, Record,
    Window,
};
use crate::providers::google::{self, quoted};
use crate::providers::{html_to_text, parse_time, text_of};

/// Files per page of the changes walk (each one costs a content call; Drive allows 1000).
const PAGE: u32 = 100;
/// Files per page of the id listing.
const IDS_PAGE: u32 = 1000;

const FOLDER: &str = "application/vnd.google-apps.folder";
const DOCUMENT: &str = "application/vnd.google-apps.document";
const PRESENTATION: &str = "application/vnd.google-apps.presentation";
const SPREADSHEET: &str = "application/vnd.google-apps.spreadsheet";

/// The partial response a walk needs (without `fields` Drive answers only id, name and
/// mimeType); `size` is there to leave out text files too large to download.
const CHANGE_FIELDS: &str = "nextPageToken,files(id,name,mimeType,modifiedTime,trashed,size,\
webViewLink,owners(displayName),lastModifyingUser(displayName))";
const ID_FIELDS: &str = "nextPageToken,files(id)";

/// The largest text file downloaded (Drive's own export limit is 10 MB too).
const MAX_TEXT_BYTES: u64 = 10 * 1024 * 1024;

pub struct Gdrive;

#[async_trait]
impl Provider for Gdrive {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Gdrive
    }

    fn overlap(&self) -> Duration {
        Duration::from_secs(120)
    }

    fn validate(&self, config: &Value, credentials: &Credentials) -> Result<(), String> {
        credentials.require("token")?;
        for name in ["folder_id", "query"] {
            match config.get(name) {
                None | Some(Value::Null) | Some(Value::String(_)) => {}
                Some(_) => return Err(format!("config.{name} must be a string")),
            }
        }
        Ok(())
    }

    async fn changes(
        &self,
        cx: &Context<'_>,
        window: &Window,
        page: Option<&str>,
    ) -> Result<Page, ProviderError> {
        let q = files_query(
            window.since,
            cx.config_str("folder_id"),
            cx.config_str("query"),
            // The first walk has nothing stored to delete: it leaves the trash out.
            window.since.is_none(),
        );
        let listing = list(cx, q, CHANGE_FIELDS, PAGE, Some("modifiedTime desc"), page).await?;
        let mut changes = Vec::new();
        for file in listing["files"].as_array().into_iter().flatten() {
            let Some(id) = file["id"].as_str().filter(|id| !id.is_empty()) else {
                continue;
            };
            let mime = file["mimeType"].as_str().unwrap_or_default();
            if mime == FOLDER {
                continue;
            }
            if file["trashed"].as_bool() == Some(true) {
                changes.push(Change::Delete(id.to_owned()));
                continue;
            }
            let Some(modified) = parse_time(&file["modifiedTime"]) else {
                tracing::warn!(file = id, "a Drive file without modifiedTime is skipped");
                continue;
            };
            let Some(text) = text(cx, id, mime, &file["size"]).await? else {
                continue;
            };
            changes.push(Change::Upsert(record(id, modified, file, text)));
        }
        Ok(Page {
            changes,
            next: next_page(&listing),
            token: None,
        })
    }

    async fn ids(&self, cx: &Context<'_>, page: Option<&str>) -> Result<IdPage, ProviderError> {
        let q = files_query(
            None,
            cx.config_str("folder_id"),
            cx.config_str("query"),
            true,
        );
        let listing = list(cx, q, ID_FIELDS, IDS_PAGE, None, page).await?;
        Ok(IdPage {
            ids: listing["files"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|file| file["id"].as_str().map(str::to_owned))
                .collect(),
            next: next_page(&listing),
        })
    }
}

/// The `q` of a walk: changed since `since` (when set), no folders, untrashed only when
/// `untrashed`, the folder's children and the user's query (in parentheses) when set.
fn files_query(
    since: Option<DateTime<Utc>>,
    folder_id: Option<&str>,
    query: Option<&str>,
    untrashed: bool,
) -> String {
    let mut clauses = Vec::new();
    if let Some(since) = since {
        clauses.push(format!(
            "modifiedTime >= '{}'",
            since.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        ));
    }
    clauses.push(format!("mimeType != {}", quoted(FOLDER)));
    if untrashed {
        clauses.push("trashed = false".to_owned());
    }
    if let Some(folder_id) = folder_id {
        clauses.push(format!("{} in parents", quoted(folder_id)));
    }
    if let Some(query) = query {
        clauses.push(format!("({query})"));
    }
    clauses.join(" and ")
}

async fn list(
    cx: &Context<'_>,
    q: String,
    fields: &str,
    page_size: u32,
    order_by: Option<&str>,
    page: Option<&str>,
) -> Result<Value, ProviderError> {
    let mut query = vec![
        ("q", q),
        ("fields", fields.to_owned()),
        ("pageSize", page_size.to_string()),
        ("supportsAllDrives", "true".to_owned()),
        ("includeItemsFromAllDrives", "true".to_owned()),
    ];
    if let Some(order_by) = order_by {
        query.push(("orderBy", order_by.to_owned()));
    }
    if let Some(page) = page {
        query.push(("pageToken", page.to_owned()));
    }
    let url = format!("{}/drive/v3/files", cx.base_url);
    google::get_json(cx, ProviderKind::Gdrive, &url, &query).await
}

fn next_page(listing: &Value) -> Option<String> {
    text_of(&listing["nextPageToken"])
}

fn record(id: &str, modified: DateTime<Utc>, file: &Value, text: String) -> Record {
    let author = file["owners"]
        .as_array()
        .and_then(|owners| owners.first())
        .and_then(|owner| text_of(&owner["displayName"]))
        .or_else(|| text_of(&file["lastModifyingUser"]["displayName"]));
    Record {
        id: id.to_owned(),
        modified,
        title: text_of(&file["name"]).unwrap_or_default(),
        text,
        url: text_of(&file["webViewLink"]),
        author,
    }
}

/// How a file's text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// A Google type exported to this MIME type.
    Export(&'static str),
    /// A text file's own bytes.
    Media,
    /// Nothing readable as text.
    Unreadable,
}

fn source(mime: &str) -> Source {
    match mime {
        DOCUMENT | PRESENTATION => Source::Export("text/plain"),
        SPREADSHEET => Source::Export("text/csv"),
        _ if mime.starts_with("application/vnd.google-apps.") => Source::Unreadable,
        _ if mime.starts_with("text/") => Source::Media,
        "application/json"
        | "application/xml"
        | "application/x-yaml"
        | "application/yaml"
        | "application/javascript"
        | "application/x-sh"
        | "application/sql" => Source::Media,
        _ => Source::Unreadable,
    }
}

/// The file's text, or None when it has none this provider can read (an unreadable type,
/// too large, or a content call Drive refuses for this one file, which must not stop the
/// walk).
async fn text(
    cx: &Context<'_>,
    id: &str,
    mime: &str,
    size: &Value,
) -> Result<Option<String>, ProviderError> {
    let base = format!("{}/drive/v3/files/{}", cx.base_url, path_segment(id));
    let fetched = match source(mime) {
        Source::Unreadable => return Ok(None),
        Source::Export(target) => {
            let url = format!("{base}/export");
            let query = [("mimeType", target.to_owned())];
            google::get_bytes(cx, ProviderKind::Gdrive, &url, &query).await
        }
        Source::Media => {
            let size = size
                .as_str()
                .and_then(|size| size.parse::<u64>().ok())
                .or_else(|| size.as_u64());
            if size.is_some_and(|size| size > MAX_TEXT_BYTES) {
                tracing::info!(file = id, ?size, "a Drive text file too large is skipped");
                return Ok(None);
            }
            let query = [
                ("alt", "media".to_owned()),
                ("supportsAllDrives", "true".to_owned()),
            ];
            google::get_bytes(cx, ProviderKind::Gdrive, &base, &query).await
        }
    };
    match fetched {
        Ok(bytes) => Ok(Some(decode_text(&bytes, mime))),
        Err(ProviderError::Invalid(reason)) => {
            tracing::warn!(file = id, %reason, "Drive refused this file's content; skipped");
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// Text from exported or downloaded bytes: UTF-8 (invalid sequences replaced), without a
/// byte-order mark, with Unix line ends; HTML files as their text.
fn decode_text(bytes: &[u8], mime: &str) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let text = text.replace("\r\n", "\n");
    if mime == "text/html" {
        html_to_text(&text)
    } else {
        text.trim().to_owned()
    }
}

/// A file id as one URL path segment (Drive ids are URL-safe; anything else is escaped).
fn path_segment(id: &str) -> String {
    url::form_urlencoded::byte_serialize(id.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn the_first_walk_asks_for_untrashed_files_that_are_not_folders() {
        assert_eq!(
            files_query(None, None, None, true),
            "mimeType != 'application/vnd.google-apps.folder' and trashed = false"
        );
    }

    #[test]
    fn an_incremental_walk_sees_the_trash_and_narrows_by_folder_and_query() {
        assert_eq!(
            files_query(
                Some(at("2024-05-01T10:00:00.5Z")),
                Some("1AbC"),
                Some("name contains 'plan'"),
                false
            ),
            "modifiedTime >= '2024-05-01T10:00:00.500Z' and \
             mimeType != 'application/vnd.google-apps.folder' and '1AbC' in parents and \
             (name contains 'plan')"
        );
    }

    #[test]
    fn a_folder_id_with_quotes_is_escaped() {
        assert_eq!(
            files_query(None, Some(r"x' or 'a\"), None, true),
            r"mimeType != 'application/vnd.google-apps.folder' and trashed = false and 'x\' or \'a\\' in parents"
        );
    }

    #[test]
    fn readable_types_are_known() {
        assert_eq!(source(DOCUMENT), Source::Export("text/plain"));
        assert_eq!(source(SPREADSHEET), Source::Export("text/csv"));
        assert_eq!(
            source("application/vnd.google-apps.form"),
            Source::Unreadable
        );
        assert_eq!(source(FOLDER), Source::Unreadable);
        assert_eq!(source("text/markdown"), Source::Media);
        assert_eq!(source("application/json"), Source::Media);
        assert_eq!(source("application/pdf"), Source::Unreadable);
        assert_eq!(source("image/png"), Source::Unreadable);
    }

    #[test]
    fn exported_text_loses_its_bom_and_carriage_returns() {
        assert_eq!(
            decode_text("\u{feff}first\r\nsecond\r\n".as_bytes(), "text/plain"),
            "first\nsecond"
        );
        assert_eq!(decode_text(b"<p>a &amp; b</p>", "text/html"), "a & b");
        assert_eq!(decode_text(&[0x66, 0xff, 0x6f], "text/plain"), "f\u{fffd}o");
    }

    #[test]
    fn a_file_becomes_a_record() {
        let file = serde_json::json!({
            "id": "1abc", "name": "Plan", "webViewLink": "https://docs.google.com/d/1abc",
            "owners": [{"displayName": "Ada"}], "lastModifyingUser": {"displayName": "Grace"},
        });
        let modified = at("2024-05-01T10:00:00Z");
        let record = record("1abc", modified, &file, "text".to_owned());
        assert_eq!(record.title, "Plan");
        assert_eq!(record.author.as_deref(), Some("Ada"));
        assert_eq!(
            record.url.as_deref(),
            Some("https://docs.google.com/d/1abc")
        );
        let bare = super::record(
            "1abc",
            modified,
            &serde_json::json!({"owners": 3}),
            String::new(),
        );
        assert_eq!(bare.author, None);
        assert_eq!(bare.title, "");
    }

    #[test]
    fn ids_are_one_path_segment() {
        assert_eq!(path_segment("1AbC-_x"), "1AbC-_x");
        assert_eq!(path_segment("a/b c"), "a%2Fb%20c");
    }
}
