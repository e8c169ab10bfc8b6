use proptest::prelude::*;
use serde_json::json;
use serde_json::Value;

use memvault_core::memory::validate_text;
use memvault_server::api::memories::*;
use memvault_types::limits::DEFAULT_IMPORTANCE;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>().prop_map(|number| json!(number)),
        any::<i64>().prop_map(|number| json!(number)),
        ".{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("text".to_owned()),
                    Just("importance".to_owned()),
                    Just("metadata".to_owned()),
                    Just("container_tag".to_owned()),
                    ".{0,8}"
                ],
                inner,
                0..5
            )
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    /// The fuzz target's property on stable Rust: any bytes are a memory or a 422.
    #[test]
    fn create_body_parsing_never_panics_on_bytes(body in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Err(error) = parse_create_memory(&body) {
            prop_assert_eq!(error.status().as_u16(), 422, "{}", error);
        }
    }

    #[test]
    fn create_body_parsing_never_panics_on_json(value in json_value()) {
        let body = serde_json::to_vec(&value).unwrap();
        match parse_create_memory(&body) {
            Ok(memory) => {
                prop_assert!(validate_text(&memory.text).is_ok());
                prop_assert!((0.0..=1.0).contains(&memory.importance));
            }
            Err(error) => prop_assert_eq!(error.status().as_u16(), 422, "{}", error),
        }
    }
}

#[test]
fn a_minimal_body_gets_the_defaults() {
    let memory = parse_create_memory(br#"{"text": "hello"}"#).unwrap();
    assert_eq!(memory.category, "other");
    assert_eq!(memory.source, "api");
    assert_eq!(memory.importance, DEFAULT_IMPORTANCE);
    assert!(memory.metadata.is_empty());
    assert_eq!(memory.container_tag, None);
}
