use memvault_server::api::audit::*;
use memvault_server::api::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The rule the audit log rests on: every write route of the API says what it
/// records, so none is audited under a made-up name or silently skipped.
#[test]
fn every_write_route_declares_its_audit() {
    let mut document = memvault_server::api::documented_routes().into_openapi();
    let undeclared = undeclared_writes(&mut document);
    assert!(
        undeclared.is_empty(),
        "write routes without an audit declaration: add `.audit(Audit::Change(\"...\"))` \
         (or the reason it records none) to their `routes!`: {undeclared:?}"
    );
}

#[utoipa::path(post, path = "/audited")]
async fn audited() {}

#[utoipa::path(post, path = "/forgotten")]
async fn forgotten() {}

#[utoipa::path(get, path = "/read")]
async fn read() {}

#[test]
fn a_write_without_a_declaration_is_found() {
    let mut document = OpenApiRouter::<AppState>::new()
        .routes(routes!(audited).audit(Audit::Change("test.audited")))
        .routes(routes!(forgotten))
        .routes(routes!(read))
        .into_openapi();
    assert_eq!(undeclared_writes(&mut document), ["POST /forgotten"]);
}

#[test]
#[should_panic(expected = "only writes are audited")]
fn a_read_cannot_declare_an_audit() {
    let _ = routes!(read).audit(Audit::Change("test.read"));
}

#[test]
fn served_document_carries_no_declarations() {
    let paths = memvault_server::api::documented_routes().into_openapi();
    assert!(serde_json::to_string(&paths).unwrap().contains(DECLARATION));
    let served = memvault_server::api::openapi::document(paths);
    assert!(!serde_json::to_string(&served)
        .unwrap()
        .contains(DECLARATION));
}
