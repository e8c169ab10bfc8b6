use memvault_server::api::admin::*;

#[test]
fn emails_the_schema_takes_are_the_ones_the_server_takes() {
    for good in [
        "ada@example.com",
        " ada.lovelace+memvault@mail.example.org\n",
        "o'brien@x",
        "a@b-c.d",
    ] {
        assert!(valid_email(good).is_ok(), "{good:?}");
    }
    for bad in [
        "",
        "ada",
        "@example.com",
        "ada@",
        "a..b@example.com",
        ".ada@example.com",
        "ada@-example.com",
        "ada@example-.com",
        "ada@exa_mple.com",
        "jörg@example.de",
        "ada lovelace@example.com",
        "\u{a0}ada@example.com",
        &format!("{}@example.com", "a".repeat(65)),
    ] {
        assert!(valid_email(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn the_documented_pattern_is_the_one_in_the_schema() {
    use utoipa::PartialSchema;
    let signup =
        serde_json::to_value(memvault_server::api::account::EmailRequest::schema()).unwrap();
    assert_eq!(signup["properties"]["email"]["pattern"], EMAIL_PATTERN);
    let tenant = serde_json::to_value(CreateTenantRequest::schema()).unwrap();
    assert_eq!(tenant["properties"]["email"]["pattern"], EMAIL_PATTERN);
}
