//! A fake Confluence Cloud site, mirroring the conformance fake for the calls a sync makes:
//! `GET /wiki/rest/api/content/search` with a CQL subset (`type = / in (page, blogpost)`,
//! `space = / in`, `lastmodified` / `created` with = != > >= < <= and "yyyy/MM/dd HH:mm",
//! "yyyy-MM-dd HH:mm", "yyyy/MM/dd" or "yyyy-MM-dd" in UTC, `id`, AND, ORDER BY), `limit`,
//! `start`, `cursor`, `expand` (body.storage, version, history); `_links.next` relative to
//! `_links.base` (the site's `/wiki`); and `GET /wiki/rest/api/user/current` (timeZone UTC).
//! Basic auth with the account's email and API token; 401 as text/plain, 429 with
//! Retry-After: 1, 500 as JSON, 400 `cql.parse.error` for CQL it cannot read. A record's
//! scope is its space key ([`SPACE_KEY`] when none); deleted records leave the search.

use std::collections::HashMap;

use axum::extract::{Query, State as AxumState};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine;
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde_json::{json, Map, Value};
use sha2::Digest;

use super::{window, Admit, CallKind, Fake, FakeRecord, FakeServer, FaultKind, State};
use memvault_connectors::ProviderKind;

/// The space records are in unless their scope names another.
pub const SPACE_KEY: &str = "MV";
/// Another space of the site.
pub const OTHER_SPACE_KEY: &str = "OPS";
/// The account the API token belongs to.
pub const EMAIL: &str = "fake-bot@example.com";

pub async fn start(records: usize) -> FakeServer {
    let token = format!("ATATT3xFfGF0{}", hex::encode(rand::random::<[u8; 24]>()));
    let fake = Fake::new(ProviderKind::Confluence, token.clone());
    for _ in 0..records {
        fake.add_in(content_id, None);
    }
    let router = Router::new()
        .route("/wiki/rest/api/content/search", get(search))
        .route("/wiki/rest/api/user/current", get(current_user))
        .with_state(fake.clone());
    let mut credentials = Map::new();
    credentials.insert("email".into(), Value::String(EMAIL.to_owned()));
    credentials.insert("api_token".into(), Value::String(token));
    FakeServer::serve(
        ProviderKind::Confluence,
        router,
        fake,
        content_id,
        credentials,
        |base_url| json!({"base_url": base_url}),
    )
    .await
}

/// Ten-digit content ids, increasing, as Confluence Cloud's.
pub fn content_id(state: &mut State) -> String {
    (2_400_000_000u64 + state.next_number() * 7).to_string()
}

/// The API token of a Basic `Authorization` header for the fake's account (another
/// account's or an unreadable one presents something no token equals).
fn presented(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let encoded = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))?;
    let Some(decoded) = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
    else {
        return Some("\u{0}unreadable".to_owned());
    };
    match decoded.split_once(':') {
        Some((user, token)) if user == EMAIL => Some(token.to_owned()),
        _ => Some("\u{0}another-user".to_owned()),
    }
}

// An axum answer is the natural error of a handler's helper; a fake's speed is moot.
#[allow(clippy::result_large_err)]
fn admit(fake: &Fake, headers: &HeaderMap, kind: CallKind, path: &str) -> Result<(), Response> {
    let credential = presented(headers);
    let answer = fake.lock().admit(kind, path, credential.as_deref());
    match answer {
        Admit::Ok => Ok(()),
        Admit::Unauthorized | Admit::Fault(FaultKind::Auth) => {
            let text = if credential.is_none() {
                "Client must be authenticated to access this resource.\n"
            } else {
                "Basic authentication with passwords is deprecated.  For more information, see: \
                 https://confluence.atlassian.com/cloud/deprecation-of-basic-authentication-with-passwords-for-jira-and-confluence-apis-972355348.html\n"
            };
            let mut response = (StatusCode::UNAUTHORIZED, text).into_response();
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                "text/plain;charset=UTF-8".parse().expect("a header value"),
            );
            if credential.is_some() {
                headers.insert(
                    "x-seraph-loginreason",
                    "AUTHENTICATED_FAILED".parse().expect("a header value"),
                );
            }
            Err(response)
        }
        Admit::Fault(FaultKind::RateLimit) => {
            let mut response = (
                StatusCode::TOO_MANY_REQUESTS,
                Json(json!({"statusCode": 429, "message": "Too Many Requests"})),
            )
                .into_response();
            let headers = response.headers_mut();
            headers.insert("retry-after", "1".parse().expect("a header value"));
            headers.insert(
                "x-ratelimit-remaining",
                "0".parse().expect("a header value"),
            );
            Err(response)
        }
        Admit::Fault(FaultKind::Server) => Err((
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"statusCode": 500, "message": "Internal Server Error"})),
        )
            .into_response()),
    }
}

fn bad_request(message: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({
            "statusCode": 400,
            "data": {"authorized": true, "valid": false, "successful": false,
                     "errors": [{"message": {"key": "cql.parse.error", "args": [], "translation": message}}]},
            "message": message,
        })),
    )
        .into_response()
}

/// The site root as the client addressed it.
fn site(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

fn space(record: &FakeRecord) -> &str {
    record.scope.as_deref().unwrap_or(SPACE_KEY)
}

fn iso(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn slug(title: &str) -> String {
    title
        .to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

fn user(site: &str, author: &str) -> Value {
    let account = hex::encode(&sha2::Sha256::digest(author.as_bytes())[..12]);
    json!({
        "type": "known", "accountId": account, "accountType": "atlassian",
        "publicName": author, "displayName": author,
        "_links": {"self": format!("{site}/wiki/rest/api/user?accountId={account}")},
    })
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Storage-format XHTML: the first sentence as a paragraph, the rest as a list item.
fn storage(record: &FakeRecord) -> String {
    match record.text.split_once(". ") {
        Some((head, rest)) => format!(
            "<p>{}.</p><ul><li><p>{}</p></li></ul>",
            escape(head),
            escape(rest)
        ),
        None => format!("<p>{}</p>", escape(&record.text)),
    }
}

fn content(site: &str, record: &FakeRecord, expand: &[&str]) -> Value {
    let key = space(record);
    let mut content = json!({
        "id": record.id, "type": "page", "status": if record.deleted { "trashed" } else { "current" },
        "title": record.title,
        "_links": {
            "webui": format!("/spaces/{key}/pages/{}/{}", record.id, slug(&record.title)),
            "self": format!("{site}/wiki/rest/api/content/{}", record.id),
        },
    });
    let wants = |name: &str| {
        expand
            .iter()
            .any(|item| *item == name || item.starts_with(&format!("{name}.")))
    };
    let version = json!({
        "by": user(site, &record.author), "when": iso(record.modified), "number": record.version,
        "minorEdit": false, "message": "",
    });
    if wants("version") {
        content["version"] = version;
    }
    if wants("history") {
        content["history"] = json!({
            "latest": !record.deleted, "createdBy": user(site, &record.author),
            "createdDate": iso(record.created),
        });
    }
    if wants("space") {
        content["space"] = json!({"key": key, "name": key, "type": "global"});
    }
    if expand.contains(&"body.storage") {
        content["body"] =
            json!({"storage": {"value": storage(record), "representation": "storage"}});
    }
    content
}

async fn search(
    AxumState(fake): AxumState<Fake>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if let Err(response) = admit(
        &fake,
        &headers,
        CallKind::List,
        "/wiki/rest/api/content/search",
    ) {
        return response;
    }
    let Some(cql) = params.get("cql").filter(|cql| !cql.trim().is_empty()) else {
        return bad_request("The cql parameter is required");
    };
    let query = match Cql::parse(cql) {
        Ok(query) => query,
        Err(reason) => return bad_request(&format!("Could not parse cql : {cql} ({reason})")),
    };
    let start = match params.get("cursor") {
        Some(cursor) => base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(cursor)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .and_then(|marker| {
                marker
                    .strip_prefix("s:")
                    .and_then(|n| n.parse::<usize>().ok())
            }),
        None => params
            .get("start")
            .map_or(Some(0), |start| start.parse().ok()),
    };
    let limit = params
        .get("limit")
        .map_or(Some(25), |limit| limit.parse::<usize>().ok());
    let (Some(start), Some(limit)) = (start, limit) else {
        return bad_request("Invalid start, limit or cursor");
    };
    let records = {
        let state = fake.lock();
        let mut found: Vec<FakeRecord> = state
            .records
            .iter()
            .filter(|record| !record.deleted && query.matches(record))
            .cloned()
            .collect();
        query.sort(&mut found);
        found
    };
    let expand_raw = params.get("expand").cloned().unwrap_or_default();
    let expand: Vec<&str> = expand_raw
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    let (page, more) = window(&records, start, Some(limit.max(1)));
    let site = site(&headers);
    let mut links = json!({
        "base": format!("{site}/wiki"), "context": "/wiki",
        "self": format!("{site}/wiki/rest/api/content/search"),
    });
    if more {
        let next = start + page.len();
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        query
            .append_pair("next", "true")
            .append_pair(
                "cursor",
                &base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("s:{next}")),
            )
            // The limit asked for, as far as the page size allows (Confluence's own next
            // link repeats the effective limit).
            .append_pair("limit", &limit.clamp(1, super::page_size()).to_string())
            .append_pair("start", &next.to_string())
            .append_pair("cql", cql);
        if !expand_raw.is_empty() {
            query.append_pair("expand", &expand_raw);
        }
        links["next"] = Value::String(format!("/rest/api/content/search?{}", query.finish()));
    }
    Json(json!({
        "results": page.iter().map(|record| content(&site, record, &expand)).collect::<Vec<_>>(),
        "start": start, "limit": limit.clamp(1, super::page_size()), "size": page.len(),
        "totalSize": records.len(), "cqlQuery": cql, "searchDuration": 7, "_links": links,
    }))
    .into_response()
}

async fn current_user(AxumState(fake): AxumState<Fake>, headers: HeaderMap) -> Response {
    if let Err(response) = admit(
        &fake,
        &headers,
        CallKind::Meta,
        "/wiki/rest/api/user/current",
    ) {
        return response;
    }
    let mut me = user(&site(&headers), "Fake Bot");
    me["email"] = json!(EMAIL);
    me["timeZone"] = json!("UTC");
    Json(me).into_response()
}

// ---------------------------------------------------------------------------------------
// The CQL subset
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Text(String),
    Op(&'static str),
    Open,
    Close,
    Comma,
}

fn tokens(cql: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = cql.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' => {
                chars.next();
                out.push(Token::Open);
            }
            ')' => {
                chars.next();
                out.push(Token::Close);
            }
            ',' => {
                chars.next();
                out.push(Token::Comma);
            }
            '"' | '\'' => {
                chars.next();
                let mut text = String::new();
                loop {
                    match chars.next() {
                        None => return Err("an unterminated string".to_owned()),
                        Some('\\') => text.push(chars.next().ok_or("an unterminated string")?),
                        Some(q) if q == c => break,
                        Some(other) => text.push(other),
                    }
                }
                out.push(Token::Text(text));
            }
            '>' | '<' | '!' | '=' | '~' => {
                chars.next();
                let op = match (c, chars.peek()) {
                    ('>', Some('=')) => ">=",
                    ('<', Some('=')) => "<=",
                    ('!', Some('=')) => "!=",
                    ('!', Some('~')) => "!~",
                    ('>', _) => ">",
                    ('<', _) => "<",
                    ('=', _) => "=",
                    ('~', _) => "~",
                    _ => return Err("a lone !".to_owned()),
                };
                if op.len() == 2 {
                    chars.next();
                }
                out.push(Token::Op(op));
            }
            c if c.is_alphanumeric() || c == '_' || c == '.' || c == '-' => {
                let mut word = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_alphanumeric() || c == '_' || c == '.' || c == '-' {
                        word.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push(Token::Word(word));
            }
            other => return Err(format!("cannot read {other:?}")),
        }
    }
    Ok(out)
}

#[derive(Debug, Clone)]
enum Clause {
    In(String, Vec<String>),
    Compare(String, &'static str, String),
}

/// Clauses joined by AND, then ORDER BY.
#[derive(Debug, Clone)]
struct Cql {
    clauses: Vec<Clause>,
    order: Vec<(String, bool)>,
}

fn keyword(token: Option<&Token>, word: &str) -> bool {
    matches!(token, Some(Token::Word(w)) if w.eq_ignore_ascii_case(word))
}

fn value(token: Option<Token>) -> Result<String, String> {
    match token {
        Some(Token::Word(word) | Token::Text(word)) => Ok(word),
        other => Err(format!("expected a value, found {other:?}")),
    }
}

/// A CQL date in UTC (the fake user's time zone).
fn cql_time(text: &str) -> Result<DateTime<Utc>, String> {
    for format in ["%Y/%m/%d %H:%M", "%Y-%m-%d %H:%M"] {
        if let Ok(time) = NaiveDateTime::parse_from_str(text.trim(), format) {
            return Ok(time.and_utc());
        }
    }
    for format in ["%Y/%m/%d", "%Y-%m-%d"] {
        if let Ok(date) = NaiveDate::parse_from_str(text.trim(), format) {
            return Ok(date.and_time(chrono::NaiveTime::MIN).and_utc());
        }
    }
    Err(format!(
        "{text:?} is not a CQL date (yyyy/MM/dd HH:mm, yyyy-MM-dd HH:mm, yyyy/MM/dd, yyyy-MM-dd)"
    ))
}

impl Cql {
    fn parse(cql: &str) -> Result<Cql, String> {
        let mut tokens = tokens(cql)?.into_iter().peekable();
        let mut clauses = Vec::new();
        let mut order = Vec::new();
        while tokens.peek().is_some() && !keyword(tokens.peek(), "order") {
            let field = match tokens.next() {
                Some(Token::Word(field)) => field.to_lowercase(),
                other => return Err(format!("expected a field, found {other:?}")),
            };
            if !matches!(
                field.as_str(),
                "type" | "space" | "space.key" | "lastmodified" | "created" | "id"
            ) {
                return Err(format!("this fake does not model the CQL field {field:?}"));
            }
            if keyword(tokens.peek(), "in") {
                tokens.next();
                if tokens.next() != Some(Token::Open) {
                    return Err("expected ( after IN".to_owned());
                }
                let mut values = vec![value(tokens.next())?];
                while tokens.peek() == Some(&Token::Comma) {
                    tokens.next();
                    values.push(value(tokens.next())?);
                }
                if tokens.next() != Some(Token::Close) {
                    return Err("missing ) after IN list".to_owned());
                }
                clauses.push(Clause::In(field, values));
            } else {
                let Some(Token::Op(op)) = tokens.next() else {
                    return Err(format!("expected an operator after {field}"));
                };
                let value = value(tokens.next())?;
                if matches!(field.as_str(), "lastmodified" | "created") {
                    cql_time(&value)?;
                } else if !matches!(op, "=" | "!=") {
                    return Err(format!("{field} does not take {op}"));
                }
                clauses.push(Clause::Compare(field, op, value));
            }
            if tokens.peek().is_some() && !keyword(tokens.peek(), "order") {
                if !keyword(tokens.peek(), "and") {
                    return Err("this fake joins clauses with AND only".to_owned());
                }
                tokens.next();
            }
        }
        if keyword(tokens.peek(), "order") {
            tokens.next();
            if !keyword(tokens.next().as_ref(), "by") {
                return Err("expected BY after ORDER".to_owned());
            }
            loop {
                let field = match tokens.next() {
                    Some(Token::Word(field)) => field.to_lowercase(),
                    other => {
                        return Err(format!("expected a field after ORDER BY, found {other:?}"))
                    }
                };
                if !matches!(field.as_str(), "lastmodified" | "created" | "id" | "title") {
                    return Err(format!("this fake cannot ORDER BY {field}"));
                }
                let descending = keyword(tokens.peek(), "desc");
                if descending || keyword(tokens.peek(), "asc") {
                    tokens.next();
                }
                order.push((field, descending));
                if tokens.peek() != Some(&Token::Comma) {
                    break;
                }
                tokens.next();
            }
        }
        if let Some(extra) = tokens.next() {
            return Err(format!("unexpected {extra:?}"));
        }
        Ok(Cql { clauses, order })
    }

    fn attribute(record: &FakeRecord, field: &str) -> String {
        match field {
            "type" => "page".to_owned(),
            "space" | "space.key" => space(record).to_owned(),
            _ => record.id.clone(),
        }
    }

    fn matches(&self, record: &FakeRecord) -> bool {
        self.clauses.iter().all(|clause| match clause {
            Clause::In(field, values) => {
                let attribute = Cql::attribute(record, field);
                values.iter().any(|v| v.eq_ignore_ascii_case(&attribute))
            }
            Clause::Compare(field, op, value) if field == "lastmodified" || field == "created" => {
                let Ok(target) = cql_time(value) else {
                    return false;
                };
                let mut moment = if field == "lastmodified" {
                    record.modified
                } else {
                    record.created
                };
                if matches!(*op, "=" | "!=") {
                    moment = moment
                        .date_naive()
                        .and_hms_opt(
                            chrono::Timelike::hour(&moment),
                            chrono::Timelike::minute(&moment),
                            0,
                        )
                        .map_or(moment, |t| t.and_utc());
                }
                match *op {
                    "=" => moment == target,
                    "!=" => moment != target,
                    ">" => moment > target,
                    ">=" => moment >= target,
                    "<" => moment < target,
                    "<=" => moment <= target,
                    _ => false,
                }
            }
            Clause::Compare(field, op, value) => {
                let same = Cql::attribute(record, field).eq_ignore_ascii_case(value);
                if *op == "=" {
                    same
                } else {
                    !same
                }
            }
        })
    }

    fn sort(&self, records: &mut [FakeRecord]) {
        let id = |r: &FakeRecord| r.id.parse::<u64>().unwrap_or(0);
        records.sort_by_key(id);
        for (field, descending) in self.order.iter().rev() {
            records.sort_by(|a, b| {
                let ordering = match field.as_str() {
                    "lastmodified" => a.modified.cmp(&b.modified),
                    "created" => a.created.cmp(&b.created),
                    "title" => a.title.to_lowercase().cmp(&b.title.to_lowercase()),
                    _ => id(a).cmp(&id(b)),
                };
                if *descending {
                    ordering.reverse()
                } else {
                    ordering
                }
            });
        }
    }
}
