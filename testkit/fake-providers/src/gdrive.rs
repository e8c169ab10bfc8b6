//! A fake Google Drive v3: `GET /drive/v3/files` (q: `modifiedTime` compared with an
//! RFC 3339 literal, `mimeType =`/`!=`, `trashed = true|false`, `'<id>' in parents`,
//! `name contains`, joined by `and`, with parentheses; orderBy `modifiedTime [desc]` or
//! `name`; pageSize 1..=1000; pageToken; the `fields` partial response, without which a file
//! is only kind, id, name and mimeType), `GET /drive/v3/files/{id}` (`alt=media`: a text
//! file's bytes; Google Docs answer 403 fileNotDownloadable) and
//! `GET /drive/v3/files/{id}/export?mimeType=text/plain` (Google Docs only, with a BOM and
//! CRLF line ends, as Google's). Every other record is a Google Doc, the rest text/plain
//! files; the listing also holds the folders (a fixed one and one per record scope, which
//! is the record's parent folder; records without one sit in My Drive). A trashed
//! (deleted) file is still listed, with `trashed: true`, unless q says `trashed = false`.
//! Bearer tokens; 401 Google errors; rate limit 403 userRateLimitExceeded without
//! Retry-After; server fault 500 backendError.

use axum::extract::{Path, Query, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use super::google::{self, admit, invalid, param, parse_mask, project, Mask};
use super::{window, CallKind, Fake, FakeRecord, FakeServer, State};
use memvault_connectors::ProviderKind;

/// The root every record without a scope sits in.
pub const MY_DRIVE: &str = "0AFakeMyDriveRootUk9PVA";
/// A folder the listing always holds, with no records in it.
pub const NOTES_FOLDER: &str = "1FakeNotesFolder0a1b2c3d4e5f6a7b8c9";

const FOLDER: &str = "application/vnd.google-apps.folder";
const DOCUMENT: &str = "application/vnd.google-apps.document";
const RATE_LIMIT_REASON: &str = "userRateLimitExceeded";

#[derive(Clone)]
struct Drive {
    fake: Fake,
    /// When the folders were made (their created and modified time).
    folders_at: DateTime<Utc>,
}

pub async fn start(records: usize) -> FakeServer {
    let token = google::new_token();
    let fake = Fake::new(ProviderKind::Gdrive, token.clone());
    let folders_at = fake.lock().now();
    for _ in 0..records {
        fake.add_in(drive_id, None);
    }
    let router = Router::new()
        .route("/drive/v3/files", get(files_list))
        .route("/drive/v3/files/{id}", get(file_get))
        .route("/drive/v3/files/{id}/export", get(export))
        .with_state(Drive {
            fake: fake.clone(),
            folders_at,
        });
    let mut credentials = Map::new();
    credentials.insert("token".into(), Value::String(token));
    FakeServer::serve(
        ProviderKind::Gdrive,
        router,
        fake,
        drive_id,
        credentials,
        |_| json!({}),
    )
    .await
}

/// Drive's id shape: "1" and 32 URL-safe characters.
pub fn drive_id(state: &mut State) -> String {
    let n = state.next_number();
    let id = format!("1{n:x}{}", hex::encode(rand::random::<[u8; 16]>()));
    id[..33].to_owned()
}

fn iso(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn user(author: &str) -> Value {
    let address = author.to_lowercase().replace(' ', ".");
    json!({"kind": "drive#user", "displayName": author, "emailAddress": format!("{address}@example.org"), "me": false})
}

/// Every other record (by its position) is a Google Doc.
fn mime_of(state: &State, record: &FakeRecord) -> &'static str {
    let index = state
        .records
        .iter()
        .position(|r| r.id == record.id)
        .unwrap_or(0);
    if index % 2 == 0 {
        DOCUMENT
    } else {
        "text/plain"
    }
}

fn file(state: &State, record: &FakeRecord) -> Value {
    let mime = mime_of(state, record);
    let owner = user(&record.author);
    let (name, link) = if mime == DOCUMENT {
        (
            record.title.clone(),
            format!("https://docs.google.com/document/d/{}/edit", record.id),
        )
    } else {
        (
            format!("{}.txt", record.title),
            format!("https://drive.google.com/file/d/{}/view", record.id),
        )
    };
    let mut file = json!({
        "kind": "drive#file", "id": record.id, "name": name, "mimeType": mime,
        "parents": [record.scope.as_deref().unwrap_or(MY_DRIVE)], "webViewLink": link,
        "createdTime": iso(record.created), "modifiedTime": iso(record.modified),
        "trashed": record.deleted, "explicitlyTrashed": record.deleted,
        "owners": [owner.clone()], "lastModifyingUser": owner,
        "version": (record.version + 1).to_string(),
    });
    if mime != DOCUMENT {
        file["size"] = Value::String(record.text.len().to_string());
    }
    file
}

fn folders(state: &State, at: DateTime<Utc>) -> Vec<Value> {
    let mut ids = vec![NOTES_FOLDER.to_owned()];
    for scope in state.records.iter().filter_map(|r| r.scope.clone()) {
        if !ids.contains(&scope) {
            ids.push(scope);
        }
    }
    ids.into_iter()
        .map(|id| {
            json!({
                "kind": "drive#file", "id": id, "name": format!("Folder {id}"), "mimeType": FOLDER,
                "parents": [MY_DRIVE],
                "webViewLink": format!("https://drive.google.com/drive/folders/{id}"),
                "createdTime": iso(at), "modifiedTime": iso(at), "trashed": false,
                "owners": [user("Ada Lovelace")], "lastModifyingUser": user("Ada Lovelace"),
            })
        })
        .collect()
}

fn not_found(id: &str) -> Response {
    google::error(
        StatusCode::NOT_FOUND,
        "notFound",
        &format!("File not found: {id}."),
        "global",
    )
}

/// The `fields` mask asked for, else `default`; None when it cannot be read.
fn fields(params: &[(String, String)], default: Mask) -> Option<Mask> {
    match param(params, "fields") {
        None => Some(default),
        Some(mask) => parse_mask(mask),
    }
}

fn default_list_mask() -> Mask {
    parse_mask("kind,nextPageToken,incompleteSearch,files(kind,id,name,mimeType)")
        .expect("a valid mask")
}

async fn files_list(
    AxumState(drive): AxumState<Drive>,
    headers: HeaderMap,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let mut state = drive.fake.lock();
    if let Some(refused) = admit(
        &mut state,
        CallKind::List,
        "/drive/v3/files",
        &headers,
        RATE_LIMIT_REASON,
    ) {
        return refused;
    }
    let condition = match Condition::parse(param(&params, "q").unwrap_or_default()) {
        Ok(condition) => condition,
        Err(reason) => return invalid("q", &format!("Invalid Value: {reason}")),
    };
    let Some(mask) = fields(&params, default_list_mask()) else {
        return invalid("fields", "Invalid field selection");
    };
    let Some(size) = google::page_size(param(&params, "pageSize"), 100, 1000) else {
        return invalid("pageSize", "Invalid Value");
    };
    let mut files: Vec<Value> = folders(&state, drive.folders_at);
    files.extend(state.records.iter().map(|record| file(&state, record)));
    files.retain(|file| condition.matches(file));
    let modified = |file: &Value| file["modifiedTime"].as_str().unwrap_or_default().to_owned();
    let id = |file: &Value| file["id"].as_str().unwrap_or_default().to_owned();
    let name = |file: &Value| file["name"].as_str().unwrap_or_default().to_lowercase();
    match param(&params, "orderBy").map(str::trim) {
        Some("modifiedTime desc") => {
            files.sort_by(|a, b| modified(b).cmp(&modified(a)).then(id(a).cmp(&id(b))));
        }
        Some("modifiedTime") => {
            files.sort_by(|a, b| modified(a).cmp(&modified(b)).then(id(a).cmp(&id(b))));
        }
        None | Some("name") => files.sort_by(|a, b| name(a).cmp(&name(b)).then(id(a).cmp(&id(b)))),
        Some(other) => return invalid("orderBy", &format!("Invalid Value: {other}")),
    }
    let start = match param(&params, "pageToken") {
        None => 0,
        Some(token) => match read_page_token(token) {
            Some(start) => start,
            None => return invalid("pageToken", "Invalid Value"),
        },
    };
    let (page, more) = window(&files, start, Some(size));
    let mut out = json!({"kind": "drive#fileList", "incompleteSearch": false, "files": page});
    if more {
        out["nextPageToken"] = Value::String(page_token(start + page.len()));
    }
    Json(project(&out, &mask)).into_response()
}

fn page_token(offset: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("o:{offset}"))
}

fn read_page_token(token: &str) -> Option<usize> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()?;
    String::from_utf8(raw)
        .ok()?
        .strip_prefix("o:")?
        .parse()
        .ok()
}

async fn file_get(
    AxumState(drive): AxumState<Drive>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let mut state = drive.fake.lock();
    let path = format!("/drive/v3/files/{id}");
    if let Some(refused) = admit(
        &mut state,
        CallKind::Content,
        &path,
        &headers,
        RATE_LIMIT_REASON,
    ) {
        return refused;
    }
    let Some(record) = state.records.iter().find(|r| r.id == id).cloned() else {
        return not_found(&id);
    };
    let file = file(&state, &record);
    if param(&params, "alt") == Some("media") {
        if mime_of(&state, &record) == DOCUMENT {
            return google::error(
                StatusCode::FORBIDDEN,
                "fileNotDownloadable",
                "Only files with binary content can be downloaded. Use Export with Docs Editors files.",
                "global",
            );
        }
        return (
            [("content-type", "text/plain; charset=UTF-8")],
            record.text.into_bytes(),
        )
            .into_response();
    }
    let default = parse_mask("kind,id,name,mimeType").expect("a valid mask");
    let Some(mask) = fields(&params, default) else {
        return invalid("fields", "Invalid field selection");
    };
    Json(project(&file, &mask)).into_response()
}

async fn export(
    AxumState(drive): AxumState<Drive>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let mut state = drive.fake.lock();
    let path = format!("/drive/v3/files/{id}/export");
    if let Some(refused) = admit(
        &mut state,
        CallKind::Content,
        &path,
        &headers,
        RATE_LIMIT_REASON,
    ) {
        return refused;
    }
    let Some(record) = state.records.iter().find(|r| r.id == id).cloned() else {
        return not_found(&id);
    };
    let Some(wanted) = param(&params, "mimeType") else {
        return google::error(
            StatusCode::BAD_REQUEST,
            "required",
            "Required parameter: mimeType",
            "global",
        );
    };
    if mime_of(&state, &record) != DOCUMENT {
        return google::error(
            StatusCode::FORBIDDEN,
            "fileNotExportable",
            "Export only supports Docs Editors files.",
            "global",
        );
    }
    if wanted != "text/plain" {
        return google::error(
            StatusCode::BAD_REQUEST,
            "badRequest",
            "The requested conversion is not supported.",
            "global",
        );
    }
    let body = format!("\u{feff}{}", record.text.replace('\n', "\r\n"));
    (
        [("content-type", "text/plain; charset=utf-8")],
        body.into_bytes(),
    )
        .into_response()
}

/// The part of Drive's `q` language the provider sends.
#[derive(Debug, Clone, PartialEq)]
enum Condition {
    All(Vec<Condition>),
    Modified(String, DateTime<Utc>),
    Mime(bool, String),
    Trashed(bool, bool),
    InParents(String),
    NameContains(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Literal(String),
    Word(String),
    Op(String),
    Open,
    Close,
}

impl Condition {
    fn parse(q: &str) -> Result<Condition, String> {
        let tokens = tokenize(q)?;
        if tokens.is_empty() {
            return Ok(Condition::All(Vec::new()));
        }
        let mut pos = 0;
        let condition = conjunction(&tokens, &mut pos)?;
        if pos != tokens.len() {
            return Err(format!("unexpected {:?}", tokens[pos]));
        }
        Ok(condition)
    }

    fn matches(&self, file: &Value) -> bool {
        match self {
            Condition::All(all) => all.iter().all(|condition| condition.matches(file)),
            Condition::Modified(op, at) => file["modifiedTime"]
                .as_str()
                .and_then(|time| DateTime::parse_from_rfc3339(time).ok())
                .is_some_and(|time| {
                    let time = time.with_timezone(&Utc);
                    match op.as_str() {
                        ">" => time > *at,
                        ">=" => time >= *at,
                        "<" => time < *at,
                        "<=" => time <= *at,
                        "=" => time == *at,
                        _ => time != *at,
                    }
                }),
            Condition::Mime(equal, mime) => (file["mimeType"].as_str() == Some(mime)) == *equal,
            Condition::Trashed(equal, trashed) => {
                (file["trashed"].as_bool().unwrap_or(false) == *trashed) == *equal
            }
            Condition::InParents(folder) => file["parents"]
                .as_array()
                .is_some_and(|parents| parents.iter().any(|p| p.as_str() == Some(folder))),
            Condition::NameContains(part) => file["name"]
                .as_str()
                .is_some_and(|name| name.to_lowercase().contains(&part.to_lowercase())),
        }
    }
}

fn tokenize(q: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = q.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            _ if c.is_whitespace() => {
                chars.next();
            }
            '(' | ')' => {
                chars.next();
                tokens.push(if c == '(' { Token::Open } else { Token::Close });
            }
            '\'' => {
                chars.next();
                let mut literal = String::new();
                loop {
                    match chars.next() {
                        Some('\\') => literal.push(chars.next().ok_or("a dangling \\")?),
                        Some('\'') => break,
                        Some(other) => literal.push(other),
                        None => return Err("an unterminated string".to_owned()),
                    }
                }
                tokens.push(Token::Literal(literal));
            }
            '=' | '!' | '<' | '>' => {
                let mut op = String::new();
                while let Some(&next) = chars.peek().filter(|c| matches!(c, '=' | '!' | '<' | '>'))
                {
                    op.push(next);
                    chars.next();
                }
                if !matches!(op.as_str(), "=" | "!=" | "<" | "<=" | ">" | ">=") {
                    return Err(format!("the operator {op}"));
                }
                tokens.push(Token::Op(op));
            }
            _ if c.is_ascii_alphanumeric() || c == '_' => {
                let mut word = String::new();
                while let Some(&next) = chars
                    .peek()
                    .filter(|c| c.is_ascii_alphanumeric() || **c == '_')
                {
                    word.push(next);
                    chars.next();
                }
                tokens.push(Token::Word(word));
            }
            other => return Err(format!("the character {other:?}")),
        }
    }
    Ok(tokens)
}

fn conjunction(tokens: &[Token], pos: &mut usize) -> Result<Condition, String> {
    let mut all = vec![term(tokens, pos)?];
    while matches!(tokens.get(*pos), Some(Token::Word(word)) if word.eq_ignore_ascii_case("and")) {
        *pos += 1;
        all.push(term(tokens, pos)?);
    }
    Ok(Condition::All(all))
}

fn term(tokens: &[Token], pos: &mut usize) -> Result<Condition, String> {
    let next = |pos: &mut usize| {
        let token = tokens.get(*pos).cloned();
        *pos += 1;
        token
    };
    match next(pos) {
        Some(Token::Open) => {
            let inner = conjunction(tokens, pos)?;
            match next(pos) {
                Some(Token::Close) => Ok(inner),
                _ => Err("a missing )".to_owned()),
            }
        }
        Some(Token::Literal(value)) => match (next(pos), next(pos)) {
            (Some(Token::Word(word)), Some(Token::Word(collection)))
                if word == "in" && collection == "parents" =>
            {
                Ok(Condition::InParents(value))
            }
            _ => Err(format!("'{value}' is not followed by `in parents`")),
        },
        Some(Token::Word(field)) => {
            let op = match next(pos) {
                Some(Token::Op(op)) => op,
                Some(Token::Word(word)) if word == "contains" => word,
                other => return Err(format!("{other:?} after {field}")),
            };
            let value = next(pos);
            match (field.as_str(), op.as_str(), value) {
                ("modifiedTime", op, Some(Token::Literal(time))) if op != "contains" => {
                    let at = DateTime::parse_from_rfc3339(&time)
                        .map_err(|_| format!("the time {time}"))?
                        .with_timezone(&Utc);
                    Ok(Condition::Modified(op.to_owned(), at))
                }
                ("mimeType", "=" | "!=", Some(Token::Literal(mime))) => {
                    Ok(Condition::Mime(op == "=", mime))
                }
                ("trashed", "=" | "!=", Some(Token::Word(flag)))
                    if flag == "true" || flag == "false" =>
                {
                    Ok(Condition::Trashed(op == "=", flag == "true"))
                }
                ("name", "contains", Some(Token::Literal(part))) => {
                    Ok(Condition::NameContains(part))
                }
                (field, op, value) => Err(format!("unsupported clause {field} {op} {value:?}")),
            }
        }
        other => Err(format!("unexpected {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_reads_what_the_provider_sends() {
        let q = r"modifiedTime >= '2024-05-01T10:00:00.000Z' and mimeType != 'application/vnd.google-apps.folder' and 'x\'y' in parents and (name contains 'plan')";
        let condition = Condition::parse(q).unwrap();
        let file = json!({"modifiedTime": "2024-05-01T10:00:00.000Z", "mimeType": DOCUMENT,
                          "parents": ["x'y"], "name": "The Plan", "trashed": true});
        assert!(condition.matches(&file));
        assert!(!Condition::parse("trashed = false").unwrap().matches(&file));
        assert!(Condition::parse("modifiedTime > 'soon'").is_err());
        assert!(Condition::parse("starred = true").is_err());
        assert!(Condition::parse("'a").is_err());
        assert!(Condition::parse("(trashed = true").is_err());
    }

    #[test]
    fn page_tokens_round_trip() {
        assert_eq!(read_page_token(&page_token(42)), Some(42));
        assert_eq!(read_page_token("garbage!"), None);
    }
}
