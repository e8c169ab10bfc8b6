//! Which memories a search may return.

use chrono::{DateTime, Utc};
use memvault_storage::MemoryRecord;
use serde_json::{Map, Value};

/// The request's filters. Only memories true at the search's moment are eligible (not
/// superseded, expired or set aside then; see [`valid_at`]); archived ones only with
/// `include_archived`.
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
    /// Whether `memory` may be returned by a search of what is true at `at`: now, or the
    /// moment an `as_of` search asks about.
    pub fn accepts(&self, memory: &MemoryRecord, at: DateTime<Utc>) -> bool {
        valid_at(memory, at)
            && (self.include_archived || !memory.archived)
            && self
                .category
                .as_ref()
                .is_none_or(|category| &memory.category == category)
            && self
                .container_tag
                .as_ref()
                .is_none_or(|tag| memory.container_tag.as_deref() == Some(tag.as_str()))
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

/// Not superseded, not expired and not set aside by a time-bound fact on its slot: the
/// memory is current truth.
pub fn is_current(memory: &MemoryRecord, now: DateTime<Utc>) -> bool {
    memory.superseded_by.is_none()
        && memory.expires_at.is_none_or(|expiry| expiry > now)
        && !memory.suspended_at(now)
}

/// Whether the memory was true at `at`: written by then, not yet superseded, not expired,
/// and not set aside then. At the present moment this is [`is_current`]; at a past one it
/// includes memories superseded since.
pub fn valid_at(memory: &MemoryRecord, at: DateTime<Utc>) -> bool {
    let superseded = match &memory.superseded_by {
        None => false,
        // A supersession with no time (older records) counts from the start.
        Some(_) => memory
            .superseded_at
            .is_none_or(|superseded| superseded <= at),
    };
    memory.created_at <= at
        && !superseded
        && memory.expires_at.is_none_or(|expiry| expiry > at)
        && !memory.suspended_at(at)
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

    #[test]
    fn validity_follows_creation_supersession_expiry_and_set_asides() {
        use chrono::{Duration, TimeZone};
        use memvault_storage::{CreatedBy, Suspension};

        let start = Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap();
        let day = |days: i64| start + Duration::days(days);
        let mut memory = MemoryRecord::new(
            "I live in Berlin.".to_owned(),
            0.5,
            "fact".to_owned(),
            "remember".to_owned(),
            CreatedBy {
                id: "k".to_owned(),
                label: "l".to_owned(),
            },
            day(0),
        );
        memory.suspensions.push(Suspension {
            by: "paris".to_owned(),
            from: day(10),
            until: day(24),
        });
        memory.superseded_by = Some("madrid".to_owned());
        memory.superseded_at = Some(day(40));
        let cases = [
            (-1, false),
            (0, true),
            (9, true),
            (10, false),
            (23, false),
            (24, true),
            (39, true),
            (40, false),
            (90, false),
        ];
        for (days, valid) in cases {
            assert_eq!(valid_at(&memory, day(days)), valid, "day {days}");
        }
        assert!(!is_current(&memory, day(30)), "superseded now");
        memory.superseded_by = None;
        memory.superseded_at = None;
        memory.expires_at = Some(day(50));
        assert!(is_current(&memory, day(30)));
        assert!(!is_current(&memory, day(12)), "set aside");
        assert!(!valid_at(&memory, day(50)), "expired");
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
