use std::sync::Arc;

use axum::http::HeaderMap;
use axum::http::HeaderValue;

use memvault_server::api::email::*;
use memvault_server::error::ApiError;

fn with(secret: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(SECRET_HEADER, HeaderValue::from_str(secret).unwrap());
    headers
}

#[test]
fn the_relay_needs_the_exact_configured_secret() {
    let configured = InboundSecret(Some(Arc::from("s3cret")));
    assert!(check_relay(&with("s3cret"), &configured).is_ok());
    for headers in [with("s3cre"), with("s3cret0"), with(""), HeaderMap::new()] {
        assert!(matches!(
            check_relay(&headers, &configured),
            Err(ApiError::InboundSecretInvalid)
        ));
    }
    for off in [InboundSecret(None), InboundSecret(Some(Arc::from("")))] {
        assert!(matches!(
            check_relay(&with(""), &off),
            Err(ApiError::InboundNotConfigured)
        ));
    }
}
