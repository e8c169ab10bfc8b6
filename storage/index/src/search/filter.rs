//! Which memories a search may return.

use chrono::{DateTime, Utc};
use memvault_storage::MemoryRecord;
use serde_json::{Map, Value};

/// The request's filters. Superseded and expired memories are never eligible; archived
/// ones only with `include_archived`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchFilter {
    pub category: Option<String>,
    pub container_tag: Option<String>,
    /// JSON containment: every key of the filter is in the memory's metadata with a value
    /// that contains the filter's value.
    pub metadata: Option<Map<String, Value>>,
    pub include_archived: bool,
}

impl SearchFilter {
    pub fn accepts(&self, memory: &MemoryRecord, now: DateTime<Utc>) -> bool {
        is_current(memory, now)
            && (self.include_archived || !memory.archived)
            && self
                .category
                .as_ref()
                .is_none_or(|category| &memory.category == category)
            && self
                .container_tag
                .as_ref()
                .is_none_or(|tag| memory.container_tag.as_ref() == Some(tag))
            && self
                .metadata
                .as_ref()
                .is_none_or(|filter| map_contains(&memory.metadata, filter))
    }

    /// Whether the filter may exclude many memories (beyond the default exclusions), so
    /// that approximate search might come back short.
    pub fn narrows(&self) -> bool {
        self.category.is_some()
            || self.container_tag.is_some()
            || self
                .metadata
                .as_ref()
                .is_some_and(|filter| !filter.is_empty())
    }
}

/// Not superseded and not expired: the memory is current truth.
pub fn is_current(memory: &MemoryRecord, now: DateTime<Utc>) -> bool {
    memory.superseded_by.is_none() && memory.expires_at.is_none_or(|expiry| expiry > now)
}

fn map_contains(haystack: &Map<String, Value>, needle: &Map<String, Value>) -> bool {
    needle.iter().all(|(key, wanted)| {
        haystack
            .get(key)
            .is_some_and(|value| json_contains(value, wanted))
    })
}

/// PostgreSQL's `@>` for JSON: objects contain sub-objects, arrays contain every element
/// of the wanted array (each contained by some element), scalars are equal.
pub fn json_contains(value: &Value, wanted: &Value) -> bool {
    match (value, wanted) {
        (Value::Object(have), Value::Object(want)) => map_contains(have, want),
        (Value::Array(have), Value::Array(want)) => want
            .iter()
            .all(|item| have.iter().any(|candidate| json_contains(candidate, item))),
        // As in Postgres, an array contains a scalar it holds.
        (Value::Array(have), scalar) if !scalar.is_object() => {
            have.iter().any(|candidate| candidate == scalar)
        }
        (have, want) => have == want,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    #[test]
    fn containment_follows_postgres() {
        let value = json!({"a": 1, "tags": ["x", "y"], "owner": {"team": "infra", "n": 2}});
        assert!(json_contains(&value, &json!({})));
        assert!(json_contains(&value, &json!({"a": 1})));
        assert!(json_contains(&value, &json!({"tags": ["y"]})));
        assert!(json_contains(&value, &json!({"tags": "x"})));
        assert!(json_contains(&value, &json!({"owner": {"team": "infra"}})));
        assert!(!json_contains(&value, &json!({"a": 2})));
        assert!(!json_contains(&value, &json!({"tags": ["z"]})));
        assert!(!json_contains(&value, &json!({"owner": {"team": "web"}})));
        assert!(!json_contains(&value, &json!({"missing": null})));
        assert!(!json_contains(&json!(1), &json!("1")));
    }

    fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (0i64..5).prop_map(|n| json!(n)),
            "[a-c]".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-c]", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn everything_contains_itself(value in arbitrary_json()) {
            prop_assert!(json_contains(&value, &value));
        }

        #[test]
        fn an_object_contains_any_subset_of_its_keys(
            value in prop::collection::btree_map("[a-e]", arbitrary_json(), 0..5),
            keep in prop::collection::vec(any::<bool>(), 5),
        ) {
            let whole: Map<String, Value> = value.clone().into_iter().collect();
            let part: Map<String, Value> = value
                .into_iter()
                .zip(keep)
                .filter_map(|(entry, keep)| keep.then_some(entry))
                .collect();
            prop_assert!(map_contains(&whole, &part));
        }
    }
}
