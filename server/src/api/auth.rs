//! Authentication extractors: `Authorization: Bearer mv_...` to an [`Agent`].
//!
//! - [`Authenticated`]: any active key.
//! - [`Writer`]: a key that may write (read-only keys get 403).
//! - [`Owner`]: the tenant's owner key (agent keys get 403): keys, grants, webhooks,
//!   settings.
//! - [`Admin`]: the owner key of an admin-flagged tenant (others get 403).

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use memvault_core::agent::KEY_PREFIX;
use memvault_core::Agent;
use memvault_core::Authorizer;

use super::AppState;
use crate::error::ApiError;

pub struct Authenticated(pub Agent);
pub struct Writer(pub Agent);
pub struct Owner(pub Agent);
pub struct Admin(pub Agent);

/// The agent behind the request's bearer key, or the 401 that explains what is wrong.
/// The rate limiter authenticates first and leaves the agent in the extensions.
pub fn authenticate(parts: &Parts, authorizer: &Authorizer) -> Result<Agent, ApiError> {
    if let Some(agent) = parts.extensions.get::<Agent>() {
        return Ok(agent.clone());
    }
    let header = parts.headers.get(AUTHORIZATION).ok_or_else(|| {
        ApiError::MissingApiKey(
            "missing Authorization header; send 'Authorization: Bearer mv_...'".to_owned(),
        )
    })?;
    let value = header.to_str().map_err(|_| {
        ApiError::InvalidApiKey("Authorization header is not valid text".to_owned())
    })?;
    let (scheme, secret) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(ApiError::InvalidApiKey(
            "Authorization header must use the Bearer scheme: 'Bearer mv_...'".to_owned(),
        ));
    }
    let secret = secret.trim();
    if secret.is_empty() {
        return Err(ApiError::MissingApiKey(
            "Authorization header has no API key after 'Bearer'".to_owned(),
        ));
    }
    authenticate_secret(secret, authorizer)
}

/// The agent behind a presented key (the dashboard's sign-in form takes one too).
pub fn authenticate_secret(secret: &str, authorizer: &Authorizer) -> Result<Agent, ApiError> {
    if !secret.starts_with(KEY_PREFIX) {
        return Err(ApiError::InvalidApiKey(format!(
            "malformed API key: memvault keys start with '{KEY_PREFIX}'"
        )));
    }
    authorizer
        .authenticate(secret)
        .ok_or_else(|| ApiError::InvalidApiKey("invalid or revoked API key".to_owned()))
}

impl FromRequestParts<AppState> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        authenticate(parts, &state.authorizer).map(Authenticated)
    }
}

impl FromRequestParts<AppState> for Writer {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let agent = authenticate(parts, &state.authorizer)?;
        if agent.read_only {
            return Err(memvault_core::Error::ReadOnlyKey.into());
        }
        Ok(Writer(agent))
    }
}

impl FromRequestParts<AppState> for Owner {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let agent = authenticate(parts, &state.authorizer)?;
        if !agent.owner {
            return Err(ApiError::OwnerKeyRequired);
        }
        Ok(Owner(agent))
    }
}

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let agent = authenticate(parts, &state.authorizer)?;
        if !agent.admin || !agent.owner {
            return Err(ApiError::AdminKeyRequired);
        }
        Ok(Admin(agent))
    }
}
