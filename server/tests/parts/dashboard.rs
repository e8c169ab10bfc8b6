//! The dashboard's parts: sessions, cookies, origins, the way back to its root, and the
//! pinned htmx.

use axum::http::header::COOKIE;
use axum::http::{HeaderMap, HeaderValue};
use memvault_server::dashboard::assets::{asset, HTMX};
use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use memvault_server::dashboard::session::{
    base_of, cookie, origin_of, session_hash, Sessions, COOKIE_NAME, MAX_SESSIONS_PER_TENANT,
};
use memvault_storage::{SessionStore, SledStore, TenantId};
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

fn sled_sessions() -> (Sessions, Arc<SledStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SledStore::open(dir.path()).unwrap());
    (Sessions::new(store.clone()), store, dir)
}

fn hour(hour: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 5, 1, 0, 0, 0).unwrap() + chrono::Duration::hours(hour)
}

#[test]
fn sessions_open_close_and_never_mix() {
    let (sessions, store, _dir) = sled_sessions();
    let tenant = TenantId::generate();
    let first = sessions
        .open_at(tenant.clone(), "k1".to_owned(), hour(0))
        .unwrap();
    let second = sessions
        .open_at(tenant.clone(), "k2".to_owned(), hour(0))
        .unwrap();
    assert_eq!(first.len(), 64);
    assert!(first.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_ne!(first, second);
    let (one, two) = (
        sessions.get_at(&first, hour(1)).unwrap().unwrap(),
        sessions.get_at(&second, hour(1)).unwrap().unwrap(),
    );
    assert_eq!((one.key_id.as_str(), two.key_id.as_str()), ("k1", "k2"));
    assert_ne!(one.csrf, two.csrf, "each session has its own CSRF token");
    // The store keeps the id's hash, never the id.
    let stored = store.sessions_of(&tenant).unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored
        .iter()
        .all(|session| session.id_hash != first && session.id_hash != second));
    assert!(stored
        .iter()
        .any(|session| session.id_hash == session_hash(&first)));
    sessions.close_at(&first).unwrap();
    assert!(sessions.get_at(&first, hour(1)).unwrap().is_none());
    assert!(sessions.get_at(&second, hour(1)).unwrap().is_some());
    assert!(sessions.get_at(&"0".repeat(64), hour(1)).unwrap().is_none());
}

#[test]
fn a_session_outlives_its_server_and_ends_idle_or_old() {
    let dir = tempfile::tempdir().unwrap();
    let tenant = TenantId::generate();
    let (kept, idle) = {
        let sessions = Sessions::new(Arc::new(SledStore::open(dir.path()).unwrap()));
        (
            sessions
                .open_at(tenant.clone(), "k1".to_owned(), hour(0))
                .unwrap(),
            sessions
                .open_at(tenant.clone(), "k2".to_owned(), hour(0))
                .unwrap(),
        )
    };
    // A new process on the same store knows both.
    let sessions = Sessions::new(Arc::new(SledStore::open(dir.path()).unwrap()));
    assert_eq!(
        sessions.get_at(&kept, hour(1)).unwrap().unwrap().key_id,
        "k1"
    );
    // Used every 11 hours, it lives on past 12 hours; the other, idle 12 hours, has ended.
    for at in [11, 22, 33] {
        assert!(
            sessions.get_at(&kept, hour(at)).unwrap().is_some(),
            "used at {at}"
        );
    }
    assert!(
        sessions.get_at(&idle, hour(12)).unwrap().is_none(),
        "idle 12 hours"
    );
    // Used or not, a session ends 7 days after it opened.
    for at in (44..168).step_by(11) {
        assert!(
            sessions.get_at(&kept, hour(at)).unwrap().is_some(),
            "used at {at}"
        );
    }
    assert!(
        sessions.get_at(&kept, hour(168)).unwrap().is_none(),
        "a week old"
    );
}

#[test]
fn an_account_keeps_its_most_recently_used_sessions() {
    let (sessions, store, _dir) = sled_sessions();
    let (tenant, other) = (TenantId::generate(), TenantId::generate());
    let elsewhere = sessions.open_at(other, "k".to_owned(), hour(0)).unwrap();
    let oldest = sessions
        .open_at(tenant.clone(), "k".to_owned(), hour(0))
        .unwrap();
    for _ in 1..MAX_SESSIONS_PER_TENANT {
        sessions
            .open_at(tenant.clone(), "k".to_owned(), hour(1))
            .unwrap();
    }
    assert_eq!(
        store.sessions_of(&tenant).unwrap().len(),
        MAX_SESSIONS_PER_TENANT
    );
    let newest = sessions
        .open_at(tenant.clone(), "k".to_owned(), hour(2))
        .unwrap();
    assert_eq!(
        store.sessions_of(&tenant).unwrap().len(),
        MAX_SESSIONS_PER_TENANT
    );
    assert!(
        sessions.get_at(&oldest, hour(2)).unwrap().is_none(),
        "the least recently used went"
    );
    assert!(sessions.get_at(&newest, hour(2)).unwrap().is_some());
    assert!(
        sessions.get_at(&elsewhere, hour(2)).unwrap().is_some(),
        "other accounts keep theirs"
    );
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
