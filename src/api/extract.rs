//! Extractors whose rejections are our error type, so that a bad body, query or path
//! gets `{"detail": ...}` with 422 like every other validation failure.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON body, parsed whatever the Content-Type, with the failing field's path in the
/// error (`[3].importance: invalid type: ...`).
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = read_body(request, state).await?;
        parse_json_body(&bytes).map(ApiJson)
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
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(T::default()));
        }
        parse_json_body(&bytes).map(OptionalJson)
    }
}

async fn read_body<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge("request body is too large".to_owned())
            } else {
                ApiError::BadRequest(format!("cannot read request body: {rejection}"))
            }
        })
}

/// Parses a request body into `T`; every failure is a 422 that names the field.
pub fn parse_json_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::Validation(
            "request body is empty; a JSON body is required".to_owned(),
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if path.is_empty() || path == "." {
            ApiError::Validation(format!("invalid request body: {inner}"))
        } else {
            ApiError::Validation(format!("invalid request body at {path}: {inner}"))
        }
    })?;
    deserializer
        .end()
        .map_err(|error| ApiError::Validation(format!("invalid request body: {error}")))?;
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
            .map_err(|rejection| ApiError::Validation(rejection.body_text()))?;
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
            .map_err(|rejection| ApiError::Validation(rejection.body_text()))?;
        Ok(ApiPath(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Probe {
        text: String,
        importance: Option<f64>,
    }

    fn detail(bytes: &[u8]) -> String {
        match parse_json_body::<Probe>(bytes) {
            Err(ApiError::Validation(detail)) => detail,
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn failures_are_422_and_name_the_field() {
        assert!(detail(b"").contains("empty"));
        assert!(detail(br#"{"text": "#).contains("invalid request body"));
        assert!(detail(br#"{"text": "a", "importance": "high"}"#).contains("importance"));
        assert!(detail(br#"{"text": "a", "other": 1}"#).contains("unknown field"));
        assert!(detail(br#"{"text": "a"} trailing"#).contains("trailing"));
        assert!(detail(br#"[{"text": "a"}]"#).contains("invalid"));
    }

    #[test]
    fn a_valid_body_parses() {
        let probe: Probe = parse_json_body(br#"{"text": "a", "importance": 1}"#).unwrap();
        assert_eq!(probe.importance, Some(1.0));
    }
}
