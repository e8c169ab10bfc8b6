//! Per-key rate limiting at the edge: every authenticated request is counted against its
//! key's fixed one-minute window (the limit per tenant tier, from `[rate_limit]`), and
//! every authenticated response carries `RateLimit-Limit`, `RateLimit-Remaining` and
//! `RateLimit-Reset` (unix seconds). Over the limit the answer is 429 with `Retry-After`.
//!
//! The middleware authenticates once and leaves the [`Agent`] in the request's extensions
//! for the handler's extractor and the audit log. Unauthenticated requests pass through
//! untouched: the handler answers them with 401. When the limiter is unavailable the
//! request goes through without the headers (fail open).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use memvault_types::rate_limit::{Decision, FixedWindowLimiter, RateLimiter};

use super::auth::authenticate;
use super::AppState;
use crate::error::ApiError;

/// The limiter and each tier's requests per minute.
pub struct RateLimits {
    pub enabled: bool,
    pub limiter: Arc<dyn RateLimiter>,
    /// Requests per minute per key of a tier not listed in `tiers`.
    pub per_minute: u32,
    pub tiers: BTreeMap<String, u32>,
}

impl RateLimits {
    pub fn limit_for(&self, tier: &str) -> u32 {
        self.tiers.get(tier).copied().unwrap_or(self.per_minute)
    }
}

impl RateLimits {
    pub fn from_config(config: &crate::config::RateLimitConfig) -> Self {
        Self {
            enabled: config.enabled,
            limiter: Arc::new(FixedWindowLimiter::new(config.max_tracked_keys)),
            per_minute: config.per_minute,
            tiers: config.tiers.clone(),
        }
    }
}

const LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
const REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
const RESET: HeaderName = HeaderName::from_static("ratelimit-reset");

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0)
}

fn set_headers(headers: &mut HeaderMap, decision: &Decision) {
    headers.insert(LIMIT, HeaderValue::from(decision.limit));
    headers.insert(REMAINING, HeaderValue::from(decision.remaining));
    headers.insert(RESET, HeaderValue::from(decision.reset));
}

pub async fn limit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let Ok(agent) = authenticate(&parts, &state.authorizer) else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    let limits = &state.rate_limits;
    let decision = if limits.enabled {
        let tier = state
            .tenants
            .get(&agent.tenant_id)
            .map(|tenant| limits.limit_for(&tenant.tier))
            .unwrap_or(limits.per_minute);
        let now = unix_now();
        match limits.limiter.check(&agent.key_id, tier, now) {
            Ok(decision) => Some((decision, now)),
            Err(unavailable) => {
                tracing::warn!(%unavailable, "rate limiter unavailable; request let through");
                None
            }
        }
    } else {
        None
    };
    if let Some((decision, now)) = decision.filter(|(decision, _)| !decision.allowed) {
        let mut response = ApiError::RateLimited(format!(
            "rate limit of {} requests per minute for this API key exceeded; retry in {} s",
            decision.limit,
            decision.retry_after(now)
        ))
        .into_response();
        set_headers(response.headers_mut(), &decision);
        response.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            HeaderValue::from(decision.retry_after(now)),
        );
        return response;
    }
    parts.extensions.insert(agent);
    let mut response = next.run(Request::from_parts(parts, body)).await;
    if let Some((decision, _)) = decision {
        set_headers(response.headers_mut(), &decision);
    }
    response
}
