//! The dashboard's changes go through the API itself: a request to the API's router, in
//! process, carrying the session's agent in its extensions (the API's authentication takes
//! an agent found there, as the rate limiter leaves it). So a change made in the browser
//! is validated, authorized, rate-limited, audited and announced (webhook events) exactly
//! as the same REST call would be.

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::{Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::Value;
use tower::ServiceExt;

use super::session::Viewer;

/// The largest API answer the dashboard reads (an account export is streamed instead).
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// Characters left as they are in a path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// One path segment, percent-encoded.
pub fn segment(value: &str) -> String {
    utf8_percent_encode(value, SEGMENT).to_string()
}

/// The API's router, for requests made in process.
#[derive(Clone)]
pub struct Api {
    router: Router,
}

/// An API error as the API gave it: status, `detail` and `code`.
#[derive(Debug, Clone)]
pub struct Failure {
    pub status: StatusCode,
    pub detail: String,
    pub code: String,
}

impl From<crate::error::ApiError> for Failure {
    fn from(error: crate::error::ApiError) -> Self {
        Failure {
            status: error.status(),
            detail: error.detail_logged("dashboard"),
            code: error.code().as_str().to_owned(),
        }
    }
}

impl From<memvault_core::Error> for Failure {
    fn from(error: memvault_core::Error) -> Self {
        Failure::from(crate::error::ApiError::from(error))
    }
}

impl Api {
    pub fn new(router: Router) -> Self {
        Self { router }
    }

    /// Runs a built request through the API's router.
    async fn dispatch(&self, request: Request<Body>) -> Response {
        match self.router.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }

    /// `method path` with a JSON body, as the viewer; the JSON answer (`null` for an empty
    /// one), or the API's error.
    pub async fn call(
        &self,
        viewer: &Viewer,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Failure> {
        let body = match body {
            Some(value) => Body::from(serde_json::to_vec(&value).unwrap_or_default()),
            None => Body::empty(),
        };
        let response = self
            .send(viewer, method, path, Some("application/json"), body)
            .await;
        read_json(response).await
    }

    /// `GET path` as the viewer.
    pub async fn get(&self, viewer: &Viewer, path: &str) -> Result<Value, Failure> {
        self.call(viewer, Method::GET, path, None).await
    }

    /// A public `GET` (no agent): the status page's figures.
    pub async fn public_get(&self, path: &str) -> Response {
        let request = match Request::builder().uri(path).body(Body::empty()) {
            Ok(request) => request,
            Err(error) => {
                return crate::error::ApiError::Internal(format!("bad request: {error}"))
                    .into_response()
            }
        };
        self.dispatch(request).await
    }

    /// A public `POST` of a JSON body (no agent), from the client of `from` (its address
    /// and `X-Forwarded-For` count against the route's per-address limit).
    pub async fn public_post(
        &self,
        path: &str,
        body: &Value,
        from: &axum::http::request::Parts,
    ) -> Response {
        let headers = &from.headers;
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(CONTENT_TYPE, "application/json");
        if let Some(forwarded) = headers.get("x-forwarded-for") {
            request = request.header("x-forwarded-for", forwarded.clone());
        }
        let mut request =
            match request.body(Body::from(serde_json::to_vec(body).unwrap_or_default())) {
                Ok(request) => request,
                Err(error) => {
                    return crate::error::ApiError::Internal(format!("bad request: {error}"))
                        .into_response()
                }
            };
        if let Some(client) = from
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        {
            request.extensions_mut().insert(*client);
        }
        self.dispatch(request).await
    }

    /// A request with any body (a multipart upload passed on as it came), as the viewer.
    pub async fn send(
        &self,
        viewer: &Viewer,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Body,
    ) -> Response {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(content_type) = content_type {
            request = request.header(CONTENT_TYPE, content_type);
        }
        if let Some(forwarded) = &viewer.forwarded_for {
            request = request.header("x-forwarded-for", forwarded.clone());
        }
        let mut request = match request.body(body) {
            Ok(request) => request,
            Err(error) => {
                return crate::error::ApiError::Internal(format!(
                    "the dashboard built a bad request: {error}"
                ))
                .into_response()
            }
        };
        request.extensions_mut().insert(viewer.agent.clone());
        if let Some(client) = viewer.client {
            request.extensions_mut().insert(client);
        }
        self.dispatch(request).await
    }
}

/// The JSON of a 2xx answer, or the `{detail, code}` of another.
pub async fn read_json(response: Response) -> Result<Value, Failure> {
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES)
        .await
        .map_err(|error| Failure {
            status: StatusCode::BAD_GATEWAY,
            detail: format!("the API's answer could not be read: {error}"),
            code: "internal_error".to_owned(),
        })?;
    let value: Value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    };
    if status.is_success() {
        return Ok(value);
    }
    Err(Failure {
        status,
        detail: value["detail"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("the request failed with {status}")),
        code: value["code"].as_str().unwrap_or("error").to_owned(),
    })
}
