//! The request-metrics layer: times every request and records it under its method and
//! matched route template (`POST /v1/memory/collections/{collection}/search`), or under
//! `unmatched` when no route matched; never under the raw path, which any client could
//! vary without bound.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use memvault_core::Operator;

/// Use with `axum::middleware::from_fn_with_state` as a router layer, so the matched path
/// is known when it runs.
pub async fn record_request(
    State(operator): State<Operator>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let matched_path = request.extensions().get::<MatchedPath>().cloned();
    let response = next.run(request).await;
    operator.metrics().record_request(
        method.as_str(),
        matched_path.as_ref().map(MatchedPath::as_str),
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}
