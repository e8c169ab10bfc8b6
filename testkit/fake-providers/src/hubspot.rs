//! A fake HubSpot CRM API whose records are notes: `POST /crm/v3/objects/{type}/search`
//! (filterGroups with EQ NEQ LT LTE GT GTE HAS_PROPERTY NOT_HAS_PROPERTY on the date
//! properties, as epoch ms or ISO 8601, and hs_object_id; sorts; properties, which replace
//! the default set; limit 1..=200; after; `paging.next.after`; 400 past 10,000 results),
//! `GET /crm/v3/objects/{type}` (limit, after, archived) and `GET /account-info/v3/details`.
//! Other CRM object types answer empty lists, unknown ones 400.
//!
//! `Authorization: Bearer <private-app token>`; 401 category INVALID_AUTHENTICATION; rate
//! limit 429 errorType RATE_LIMIT without Retry-After; server fault 500 INTERNAL_ERROR.
//! Deleted (archived) notes leave the search and the default listing.
//!
//! Unlike the conformance fake, `hs_note_body` is HTML (`<div><p>text</p></div>`), as
//! HubSpot stores notes written in its editor, so that the provider's HTML stripping is
//! exercised; the distinctive word stays in the text.

use axum::body::Bytes;
use axum::extract::{Path, Query, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use super::{bearer, window, Admit, CallKind, Fake, FakeRecord, FakeServer, FaultKind, State};
use memvault_connectors::ProviderKind;

const TYPES: [&str; 12] = [
    "contacts",
    "companies",
    "deals",
    "tickets",
    "notes",
    "calls",
    "emails",
    "meetings",
    "tasks",
    "products",
    "line_items",
    "quotes",
];
const BASE: [&str; 3] = ["hs_createdate", "hs_lastmodifieddate", "hs_object_id"];
const DATES: [&str; 3] = ["hs_lastmodifieddate", "hs_createdate", "hs_timestamp"];

#[derive(Clone)]
struct Hubspot {
    fake: Fake,
    portal: u64,
}

pub async fn start(records: usize) -> FakeServer {
    let token = format!("pat-na1-{}", uuid::Uuid::new_v4());
    let fake = Fake::new(ProviderKind::Hubspot, token.clone());
    for _ in 0..records {
        fake.add_in(note_id, None);
    }
    let hubspot = Hubspot {
        fake: fake.clone(),
        portal: 40_000_000 + rand::random::<u64>() % 9_000_000,
    };
    let router = Router::new()
        .route("/crm/v3/objects/{object_type}/search", post(search))
        .route("/crm/v3/objects/{object_type}", get(list))
        .route("/account-info/v3/details", get(account))
        .with_state(hubspot);
    let mut credentials = Map::new();
    credentials.insert("token".into(), Value::String(token));
    FakeServer::serve(
        ProviderKind::Hubspot,
        router,
        fake,
        note_id,
        credentials,
        |_| json!({}),
    )
    .await
}

/// A numeric note id, increasing.
pub fn note_id(state: &mut State) -> String {
    (61_000_000_000 + state.next_number() * 7).to_string()
}

fn error(status: StatusCode, message: &str, category: &str) -> Response {
    let mut body = json!({
        "status": "error",
        "message": message,
        "correlationId": uuid::Uuid::new_v4().to_string(),
    });
    if status == StatusCode::TOO_MANY_REQUESTS {
        body["errorType"] = json!("RATE_LIMIT");
        body["policyName"] = json!("SECONDLY");
        body["groupName"] = json!("publicapi:crm-search");
    } else {
        body["category"] = json!(category);
    }
    (status, Json(body)).into_response()
}

fn invalid(message: &str) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        &format!("There was a problem with the request: {message}"),
        "VALIDATION_ERROR",
    )
}

/// Admits the call; the refusal in HubSpot's shape if it is not admitted.
fn admit(state: &mut State, kind: CallKind, path: &str, headers: &HeaderMap) -> Option<Response> {
    let presented = bearer(headers);
    match state.admit(kind, path, presented.as_deref()) {
        Admit::Ok => None,
        Admit::Unauthorized | Admit::Fault(FaultKind::Auth) => Some(error(
            StatusCode::UNAUTHORIZED,
            "Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview",
            "INVALID_AUTHENTICATION",
        )),
        Admit::Fault(FaultKind::RateLimit) => Some(error(
            StatusCode::TOO_MANY_REQUESTS,
            "You have reached your secondly limit.",
            "RATE_LIMITS",
        )),
        Admit::Fault(FaultKind::Server) => Some(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error",
            "INTERNAL_ERROR",
        )),
    }
}

fn unknown_type(object_type: &str) -> Option<Response> {
    (!TYPES.contains(&object_type)).then(|| {
        error(
            StatusCode::BAD_REQUEST,
            &format!("Unable to infer object type from: {object_type}"),
            "VALIDATION_ERROR",
        )
    })
}

fn iso(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn properties(record: &FakeRecord) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("hs_object_id".into(), json!(record.id));
    props.insert("hs_createdate".into(), json!(iso(record.created)));
    props.insert("hs_lastmodifieddate".into(), json!(iso(record.modified)));
    props.insert("hs_timestamp".into(), json!(iso(record.created)));
    props.insert(
        "hs_note_body".into(),
        json!(format!("<div><p>{}</p></div>", record.text)),
    );
    props
}

fn object(record: &FakeRecord, wanted: &[String]) -> Value {
    let all = properties(record);
    let mut names: Vec<&str> = BASE.to_vec();
    names.extend(wanted.iter().map(String::as_str));
    names.sort_unstable();
    names.dedup();
    let props: Map<String, Value> = names
        .into_iter()
        .map(|name| {
            (
                name.to_owned(),
                all.get(name).cloned().unwrap_or(Value::Null),
            )
        })
        .collect();
    json!({
        "id": record.id,
        "properties": props,
        "createdAt": iso(record.created),
        "updatedAt": iso(record.modified),
        "archived": record.deleted,
    })
}

/// A property value made comparable: dates in epoch ms, ids as numbers, the rest lowercase.
fn comparable(name: &str, value: &Value) -> Option<Value> {
    if value.is_null() {
        return None;
    }
    if DATES.contains(&name) {
        return epoch_ms(value).map(Value::from);
    }
    let text = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    if name == "hs_object_id" {
        return text.trim().parse::<i64>().ok().map(Value::from);
    }
    Some(Value::from(text.to_lowercase()))
}

fn epoch_ms(value: &Value) -> Option<i64> {
    match value {
        Value::Number(number) => number.as_i64(),
        Value::String(text) => text.trim().parse::<i64>().ok().or_else(|| {
            DateTime::parse_from_rfc3339(text.trim())
                .ok()
                .map(|time| time.timestamp_millis())
        }),
        _ => None,
    }
}

fn order(left: &Value, right: &Value) -> Option<std::cmp::Ordering> {
    match (left, right) {
        (Value::Number(a), Value::Number(b)) => a.as_i64()?.partial_cmp(&b.as_i64()?),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

/// Whether `record` passes one filter; Err for a filter HubSpot would refuse.
fn filter_ok(record: &FakeRecord, filter: &Value) -> Result<bool, String> {
    let name = filter["propertyName"]
        .as_str()
        .ok_or("a filter needs a propertyName")?;
    let operator = filter["operator"].as_str().unwrap_or("EQ");
    let props = properties(record);
    let actual = props.get(name).cloned().unwrap_or(Value::Null);
    let present = !(actual.is_null() || actual.as_str() == Some(""));
    match operator {
        "HAS_PROPERTY" => return Ok(present),
        "NOT_HAS_PROPERTY" => return Ok(!present),
        _ => {}
    }
    let Some(left) = comparable(name, &actual) else {
        return Ok(false);
    };
    let right = comparable(name, &filter["value"])
        .ok_or_else(|| format!("{name} {operator} needs a value"))?;
    let ordering = order(&left, &right);
    use std::cmp::Ordering::{Equal, Greater, Less};
    Ok(match operator {
        "EQ" => ordering == Some(Equal),
        "NEQ" => ordering != Some(Equal),
        "LT" => ordering == Some(Less),
        "LTE" => matches!(ordering, Some(Less | Equal)),
        "GT" => ordering == Some(Greater),
        "GTE" => matches!(ordering, Some(Greater | Equal)),
        other => return Err(format!("unknown operator {other}")),
    })
}

async fn search(
    AxumState(hubspot): AxumState<Hubspot>,
    Path(object_type): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut state = hubspot.fake.lock();
    let path = format!("/crm/v3/objects/{object_type}/search");
    if let Some(refused) = admit(&mut state, CallKind::List, &path, &headers) {
        return refused;
    }
    if let Some(refused) = unknown_type(&object_type) {
        return refused;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "Invalid input JSON on line 1",
            "VALIDATION_ERROR",
        );
    };
    let groups: Vec<Value> = body["filterGroups"].as_array().cloned().unwrap_or_default();
    let too_many = groups.len() > 5
        || groups
            .iter()
            .any(|group| group["filters"].as_array().is_some_and(|f| f.len() > 6));
    if too_many {
        return invalid("too many filters (5 groups of 6 at most).");
    }
    let number = |value: &Value| match value {
        Value::Null => Some(None),
        Value::Number(number) => number.as_i64().map(Some),
        Value::String(text) => text.trim().parse::<i64>().ok().map(Some),
        _ => None,
    };
    let (Some(limit), Some(after)) = (number(&body["limit"]), number(&body["after"])) else {
        return invalid("limit must be between 1 and 200 and after a number");
    };
    let (limit, after) = (limit.unwrap_or(10), after.unwrap_or(0));
    if !(1..=200).contains(&limit) || after < 0 {
        return invalid("limit must be between 1 and 200 and after a number");
    }
    if after + limit > 10_000 {
        return invalid("paging past 10,000 results is not supported.");
    }
    let mut found: Vec<FakeRecord> = Vec::new();
    for record in state.records.iter().filter(|record| !record.deleted) {
        if object_type != "notes" {
            break;
        }
        let mut passes = groups.is_empty();
        for group in &groups {
            let mut all = true;
            for filter in group["filters"].as_array().into_iter().flatten() {
                match filter_ok(record, filter) {
                    Ok(true) => {}
                    Ok(false) => all = false,
                    Err(message) => return invalid(&message),
                }
            }
            passes |= all;
        }
        if passes {
            found.push(record.clone());
        }
    }
    found.sort_by_key(|record| record.id.parse::<u64>().unwrap_or(0));
    if let Some(sort) = body["sorts"].as_array().and_then(|sorts| sorts.first()) {
        let (name, descending) = match sort {
            Value::String(text) => (
                text.trim_start_matches('-').to_owned(),
                text.starts_with('-'),
            ),
            other => (
                other["propertyName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                other["direction"].as_str() == Some("DESCENDING"),
            ),
        };
        let key = |record: &FakeRecord| {
            comparable(&name, properties(record).get(&name).unwrap_or(&Value::Null))
                .unwrap_or(Value::from(0))
        };
        found.sort_by(|a, b| {
            let ordering = order(&key(a), &key(b)).unwrap_or(std::cmp::Ordering::Equal);
            if descending {
                ordering.reverse()
            } else {
                ordering
            }
        });
    }
    let wanted: Vec<String> = body["properties"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|name| name.as_str().map(str::to_owned))
        .collect();
    let start = usize::try_from(after).unwrap_or(usize::MAX);
    let (page, more) = window(&found, start, usize::try_from(limit).ok());
    let results: Vec<Value> = page.iter().map(|record| object(record, &wanted)).collect();
    let mut out = json!({"total": found.len(), "results": results});
    if more {
        let next = start + page.len();
        out["paging"] =
            json!({"next": {"after": next.to_string(), "link": format!("?after={next}")}});
    }
    Json(out).into_response()
}

async fn list(
    AxumState(hubspot): AxumState<Hubspot>,
    Path(object_type): Path<String>,
    headers: HeaderMap,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let mut state = hubspot.fake.lock();
    let path = format!("/crm/v3/objects/{object_type}");
    if let Some(refused) = admit(&mut state, CallKind::List, &path, &headers) {
        return refused;
    }
    if let Some(refused) = unknown_type(&object_type) {
        return refused;
    }
    let param = |name: &str| {
        params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    let archived = param("archived").is_some_and(|value| value.eq_ignore_ascii_case("true"));
    let (Ok(limit), Ok(after)) = (
        param("limit").unwrap_or("10").parse::<usize>(),
        param("after").unwrap_or("0").parse::<usize>(),
    ) else {
        return error(
            StatusCode::BAD_REQUEST,
            "limit and after must be numbers",
            "VALIDATION_ERROR",
        );
    };
    let wanted: Vec<String> = params
        .iter()
        .filter(|(key, _)| key == "properties")
        .flat_map(|(_, value)| value.split(',').map(str::to_owned))
        .collect();
    let mut found: Vec<FakeRecord> = if object_type == "notes" {
        state
            .records
            .iter()
            .filter(|record| record.deleted == archived)
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    found.sort_by_key(|record| record.id.parse::<u64>().unwrap_or(0));
    let (page, more) = window(&found, after, Some(limit));
    let results: Vec<Value> = page.iter().map(|record| object(record, &wanted)).collect();
    let mut out = json!({"results": results});
    if more {
        let next = after + page.len();
        out["paging"] = json!({"next": {"after": next.to_string(), "link": format!("/crm/v3/objects/{object_type}?after={next}")}});
    }
    Json(out).into_response()
}

async fn account(AxumState(hubspot): AxumState<Hubspot>, headers: HeaderMap) -> Response {
    let mut state = hubspot.fake.lock();
    if let Some(refused) = admit(
        &mut state,
        CallKind::Meta,
        "/account-info/v3/details",
        &headers,
    ) {
        return refused;
    }
    Json(json!({
        "portalId": hubspot.portal,
        "accountType": "STANDARD",
        "timeZone": "Etc/UTC",
        "companyCurrency": "USD",
        "additionalCurrencies": [],
        "utcOffset": "+00:00",
        "utcOffsetMilliseconds": 0,
        "uiDomain": "app.hubspot.com",
        "dataHostingLocation": "na1",
    }))
    .into_response()
}
