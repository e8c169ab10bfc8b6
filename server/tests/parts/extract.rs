use memvault_server::api::extract::*;
use memvault_server::error::ApiError;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Probe {
    text: String,
    importance: Option<f64>,
}

fn detail(bytes: &[u8]) -> String {
    match parse_json_body::<Probe>(bytes) {
        Err(ApiError::InvalidBody(detail)) => detail,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn failures_are_422_and_name_the_field() {
    assert!(detail(b"").contains("empty"));
    assert!(detail(br#"{"text": "#).contains("invalid request body"));
    assert!(detail(br#"{"text": "a", "importance": "high"}"#).contains("importance"));
    assert!(detail(br#"{"text": "a", "other": 1}"#).contains("unknown field"));
    assert!(detail(br#"{"text": "a"} trailing"#).contains("trailing"));
    assert!(detail(br#"[{"text": "a"}]"#).contains("invalid"));
}

#[test]
fn an_object_body_is_not_read_from_an_array() {
    match parse_json_object::<Probe>(br#" ["a", 1]"#) {
        Err(ApiError::InvalidBody(detail)) => assert!(detail.contains("JSON object")),
        other => panic!("expected a validation error, got {other:?}"),
    }
    let probe: Probe = parse_json_object(br#"{"text": "a"}"#).unwrap();
    assert_eq!(probe.text, "a");
}

#[derive(Debug, serde::Deserialize)]
struct Limit {
    #[serde(default, deserialize_with = "optional_integer")]
    limit: Option<i64>,
}

#[test]
fn integers_may_have_a_zero_fraction_but_nothing_else() {
    let limit = |body: &[u8]| parse_json_body::<Limit>(body).map(|parsed| parsed.limit);
    assert_eq!(limit(br#"{"limit": 48}"#).unwrap(), Some(48));
    assert_eq!(limit(br#"{"limit": 48.0}"#).unwrap(), Some(48));
    // schemathesis sent this; serde_json's parse lands on ...246.5.
    let long = limit(br#"{"limit": 4342536088476246.0}"#).unwrap().unwrap();
    assert!((long - 4_342_536_088_476_246).abs() <= 1, "{long}");
    assert_eq!(limit(br#"{"limit": null}"#).unwrap(), None);
    assert_eq!(limit(br#"{}"#).unwrap(), None);
    for bad in [
        &br#"{"limit": 48.5}"#[..],
        br#"{"limit": "48"}"#,
        br#"{"limit": 1e300}"#,
        br#"{"limit": 18446744073709551615}"#,
    ] {
        assert!(limit(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn a_valid_body_parses() {
    let probe: Probe = parse_json_body(br#"{"text": "a", "importance": 1}"#).unwrap();
    assert_eq!(probe.importance, Some(1.0));
}
