use axum::http::HeaderMap;
use axum::http::HeaderValue;

use memvault_server::api::internal::*;
use memvault_server::error::ApiError;

fn with(secret: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(SECRET_HEADER, HeaderValue::from_str(secret).unwrap());
    headers
}

#[test]
fn the_secret_must_match_exactly_and_be_configured() {
    assert!(check_secret(&with("s3cret"), Some("s3cret"), "x").is_ok());
    for headers in [with("s3cre"), with("s3cret "), with(""), HeaderMap::new()] {
        assert!(matches!(
            check_secret(&headers, Some("s3cret"), "x"),
            Err(ApiError::InternalSecretInvalid)
        ));
    }
    for configured in [None, Some("")] {
        assert!(matches!(
            check_secret(&with(""), configured, "x"),
            Err(ApiError::InternalNotConfigured(_))
        ));
    }
}
