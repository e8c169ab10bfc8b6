//! Extractors whose rejections are our error type, so that a bad body, query or path
//! gets `{"detail": ..., "code": ...}` with 422 like every other validation failure.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::ApiError;

/// A JSON object body, parsed whatever the Content-Type, with the failing field's path in
/// the error (`importance: invalid type: ...`).
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = read_body(request, state).await?;
        parse_json_object(&bytes).map(ApiJson)
    }
}

/// A JSON array body (bulk calls), with the failing item's path in the error
/// (`[3].importance: invalid type: ...`).
pub struct ApiJsonArray<T>(pub Vec<T>);

impl<S, T> FromRequest<S> for ApiJsonArray<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = read_body(request, state).await?;
        parse_json_body(&bytes).map(ApiJsonArray)
    }
}

/// A JSON body whose fields are all optional: an empty body means `T::default()`.
pub struct OptionalJson<T>(pub T);

impl<S, T> FromRequest<S> for OptionalJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Default,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = read_body(request, state).await?;
        // No body, or JSON's `null` (the schema's nullable body): the defaults.
        if matches!(bytes.trim_ascii(), b"" | b"null") {
            return Ok(OptionalJson(T::default()));
        }
        parse_json_object(&bytes).map(OptionalJson)
    }
}

/// A raw body (the mail-in handoff's message): a body over the route's limit is 413
/// `payload_too_large`, an unreadable one 400, in the API's error format.
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        read_body(request, state).await.map(RawBody)
    }
}

async fn read_body<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge("request body is too large".to_owned())
            } else {
                ApiError::BodyUnreadable(format!("cannot read request body: {rejection}"))
            }
        })
}

/// Parses a request body that must be a JSON object into `T`. (serde's derived structs
/// also accept an array of their fields in order, `[null, null]`, which no client means.)
pub fn parse_json_object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let first = bytes.iter().find(|byte| !byte.is_ascii_whitespace());
    if matches!(first, Some(b'[')) {
        return Err(ApiError::InvalidBody(
            "invalid request body: expected a JSON object, got an array".to_owned(),
        ));
    }
    parse_json_body(bytes)
}

/// An optional JSON integer that may be written with a zero fraction (`48.0`): JSON Schema
/// counts that as an integer, so clients generated from the OpenAPI may send it. Anything
/// else that is not an integer in the i64 range is an error.
pub fn optional_integer<'de, D>(deserializer: D) -> Result<Option<i64>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::de::Error;
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    if let Some(integer) = number.as_i64() {
        return Ok(Some(integer));
    }
    // serde_json's parse of a long decimal such as `4342536088476246.0` may land a few
    // units in the last place off (on `...246.5`): a whole number written with a zero
    // fraction is not refused for that; `48.5` still is.
    let integral = number.as_f64().filter(|value| {
        (value - value.round()).abs() <= value.abs() * 4.0 * f64::EPSILON && value.abs() < 9.0e18
    });
    match integral {
        Some(value) => Ok(Some(value.round() as i64)),
        None => Err(D::Error::custom(format!(
            "invalid value: {number}, expected an integer"
        ))),
    }
}

/// [`optional_integer`] for a byte count: a whole number from 0 to 2^63.
pub fn optional_size<'de, D>(deserializer: D) -> Result<Option<u64>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::de::Error;
    match optional_integer(deserializer)? {
        None => Ok(None),
        Some(size) => u64::try_from(size)
            .map(Some)
            .map_err(|_| D::Error::custom(format!("invalid value: {size}, expected a size"))),
    }
}

/// A field that may be left out but, when given, is a value: `null` is refused as the
/// wrong type (with `#[serde(default)]`, absent stays `None`). For bodies that change
/// only the fields they give, where a `null` would read as "clear it".
pub fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// [`optional_size`] for a size that must be given.
pub fn size<'de, D>(deserializer: D) -> Result<u64, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::de::Error;
    optional_size(deserializer)?
        .ok_or_else(|| D::Error::custom("invalid value: null, expected a size"))
}

/// Parses a request body into `T`; every failure is a 422 that names the field.
pub fn parse_json_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::InvalidBody(
            "request body is empty; a JSON body is required".to_owned(),
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if path.is_empty() || path == "." {
            ApiError::InvalidBody(format!("invalid request body: {inner}"))
        } else {
            ApiError::InvalidBody(format!("invalid request body at {path}: {inner}"))
        }
    })?;
    deserializer
        .end()
        .map_err(|error| ApiError::InvalidBody(format!("invalid request body: {error}")))?;
    Ok(value)
}

/// Query parameters; a malformed one is a 422.
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Query(value) = Query::<T>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| ApiError::InvalidQuery(rejection.body_text()))?;
        Ok(ApiQuery(value))
    }
}

/// Path parameters.
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(value) = Path::<T>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| ApiError::InvalidPath(rejection.body_text()))?;
        Ok(ApiPath(value))
    }
}
