//! The dashboard's parts: sessions, cookies, origins, the way back to its root, and the
//! pinned htmx.

use axum::http::header::COOKIE;
use axum::http::{HeaderMap, HeaderValue};
use memvault_server::dashboard::assets::{asset, HTMX};
use memvault_server::dashboard::session::{base_of, cookie, origin_of, Sessions, COOKIE_NAME};
use memvault_storage::TenantId;
use sha2::{Digest, Sha256};

#[test]
fn the_base_leads_back_to_the_dashboard_root() {
    assert_eq!(base_of("/dashboard/"), "./");
    assert_eq!(base_of("/dashboard/keys"), "./");
    assert_eq!(base_of("/dashboard/collections/notes"), "../");
    assert_eq!(
        base_of("/dashboard/collections/notes/memories/1"),
        "../../../"
    );
    assert_eq!(base_of("/elsewhere"), "./");
}

#[test]
fn sessions_open_close_and_never_mix() {
    let sessions = Sessions::default();
    let tenant = TenantId::generate();
    let first = sessions.open(tenant.clone(), "k1".to_owned());
    let second = sessions.open(tenant, "k2".to_owned());
    assert_eq!(first.len(), 64);
    assert!(first.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_ne!(first, second);
    let (one, two) = (
        sessions.get(&first).unwrap(),
        sessions.get(&second).unwrap(),
    );
    assert_eq!((one.key_id.as_str(), two.key_id.as_str()), ("k1", "k2"));
    assert_ne!(one.csrf, two.csrf, "each session has its own CSRF token");
    sessions.close(&first);
    assert!(sessions.get(&first).is_none());
    assert!(sessions.get(&second).is_some());
    assert!(sessions.get(&"0".repeat(64)).is_none());
}

#[test]
fn only_a_well_formed_session_cookie_is_read() {
    let mut headers = HeaderMap::new();
    let id = "a".repeat(64);
    headers.insert(
        COOKIE,
        HeaderValue::from_str(&format!("x=1; {COOKIE_NAME}={id}; y=2")).unwrap(),
    );
    assert_eq!(cookie(&headers), Some(id));
    for bad in [
        "mv_session=<script>",
        "mv_session=",
        "other=1",
        "mv_session=abc",
    ] {
        headers.insert(COOKIE, HeaderValue::from_static(bad));
        assert_eq!(cookie(&headers), None, "{bad}");
    }
}

#[test]
fn origins_are_scheme_and_authority() {
    assert_eq!(
        origin_of("https://mv.example.com/base/"),
        Some("https://mv.example.com".to_owned())
    );
    assert_eq!(
        origin_of("HTTP://127.0.0.1:8420"),
        Some("http://127.0.0.1:8420".to_owned())
    );
    assert_eq!(origin_of("nonsense"), None);
    assert_eq!(origin_of("https:///path"), None);
}

#[test]
fn the_vendored_htmx_is_the_pinned_file() {
    let (bytes, content_type) = asset(HTMX).expect("htmx is served");
    assert_eq!(
        hex::encode(Sha256::digest(bytes)),
        "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717"
    );
    assert!(content_type.starts_with("text/javascript"));
    assert!(asset("style.css").is_some() && asset("dashboard.js").is_some());
    assert!(asset("../Cargo.toml").is_none());
}
