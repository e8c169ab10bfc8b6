//! Supersession: how a collection takes in extracted facts.
//!
//! [`decide`] is pure: given the published snapshot and the incoming facts, it says which
//! are new, which update (supersede) a fact already on their slot, and which are already
//! stored. The actor then carries the decision out in one atomic store write. Rules:
//!
//! - A fact with a slot whose current holder (not superseded, not expired) has the same
//!   value and validity is a duplicate; with another value or validity it is an update,
//!   and the holder is superseded by it (it keeps its text, timestamps and a link to its
//!   successor; nothing is deleted).
//! - Any fact whose words equal a current memory's words is a duplicate of it.
//! - Within one remember, a later fact on the same slot supersedes an earlier one.

use chrono::{DateTime, Utc};
use memvault_storage::MemoryRecord;

use super::state::CollectionSnapshot;
use memvault_extract::normalize_value;
use memvault_index::search::filter::is_current;

/// One fact to take in, with its embedding.
#[derive(Debug, Clone)]
pub struct IncomingFact {
    /// The memory's category: `fact`, `preference`, `episode`, or `other` for content
    /// stored without extraction.
    pub category: String,
    pub text: String,
    pub slot: Option<String>,
    pub value: String,
    pub valid_until: Option<DateTime<Utc>>,
    pub embedding: Vec<f32>,
}

/// A memory a decision points at: already stored, or an earlier fact of the same batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Stored(String),
    Batch(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Store it; nothing else changes.
    New,
    /// Store it and supersede the target.
    Updated { supersedes: Target },
    /// Do not store it: the target already says the same.
    Duplicate { of: Target },
}

impl Decision {
    pub fn relation(&self) -> &'static str {
        match self {
            Self::New => "new",
            Self::Updated { .. } => "updated",
            Self::Duplicate { .. } => "duplicate",
        }
    }

    pub fn stores(&self) -> bool {
        !matches!(self, Self::Duplicate { .. })
    }
}

/// What the facts of one remember do to the collection, in their order.
pub fn decide(
    snapshot: &CollectionSnapshot,
    facts: &[IncomingFact],
    now: DateTime<Utc>,
) -> Vec<Decision> {
    // Holders of slots and texts created earlier in this batch (only stored ones).
    let mut batch_slots: std::collections::HashMap<&str, usize> = Default::default();
    let mut batch_texts: std::collections::HashMap<String, usize> = Default::default();
    let mut decisions = Vec::with_capacity(facts.len());
    for (index, fact) in facts.iter().enumerate() {
        let words = normalize_value(&fact.text);
        let decision = decide_one(
            snapshot,
            fact,
            &words,
            &batch_slots,
            &batch_texts,
            facts,
            now,
        );
        if decision.stores() {
            if let Some(slot) = &fact.slot {
                batch_slots.insert(slot, index);
            }
            batch_texts.insert(words, index);
        }
        decisions.push(decision);
    }
    decisions
}

fn decide_one(
    snapshot: &CollectionSnapshot,
    fact: &IncomingFact,
    words: &str,
    batch_slots: &std::collections::HashMap<&str, usize>,
    batch_texts: &std::collections::HashMap<String, usize>,
    facts: &[IncomingFact],
    now: DateTime<Utc>,
) -> Decision {
    if let Some(slot) = &fact.slot {
        if let Some(&earlier) = batch_slots.get(slot.as_str()) {
            let holder = &facts[earlier];
            return if same_value(&holder.value, holder.valid_until, fact) {
                Decision::Duplicate {
                    of: Target::Batch(earlier),
                }
            } else {
                Decision::Updated {
                    supersedes: Target::Batch(earlier),
                }
            };
        }
        if let Some(holder) = snapshot
            .slot_holder(slot)
            .filter(|holder| is_current(holder, now))
        {
            let value = holder.value.as_deref().unwrap_or(&holder.text);
            return if same_value(value, holder.expires_at, fact) {
                Decision::Duplicate {
                    of: Target::Stored(holder.id.clone()),
                }
            } else {
                Decision::Updated {
                    supersedes: Target::Stored(holder.id.clone()),
                }
            };
        }
    }
    if let Some(&earlier) = batch_texts.get(words) {
        return Decision::Duplicate {
            of: Target::Batch(earlier),
        };
    }
    if let Some(existing) = snapshot
        .same_text(&fact.text)
        .find(|memory| is_current(memory, now) && !conflicting_slot(memory, fact))
    {
        return Decision::Duplicate {
            of: Target::Stored(existing.id.clone()),
        };
    }
    Decision::New
}

fn same_value(value: &str, valid_until: Option<DateTime<Utc>>, fact: &IncomingFact) -> bool {
    normalize_value(value) == normalize_value(&fact.value) && valid_until == fact.valid_until
}

/// A memory with the same words but on another slot is not the same fact.
fn conflicting_slot(memory: &MemoryRecord, fact: &IncomingFact) -> bool {
    matches!((&memory.slot, &fact.slot), (Some(a), Some(b)) if a != b)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::{Duration, TimeZone};
    use memvault_storage::CreatedBy;
    use proptest::prelude::*;

    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 23, 10, 0, 0).unwrap()
    }

    fn fact(slot: Option<&str>, value: &str) -> IncomingFact {
        let text = match slot {
            Some(slot) => format!("My {} is {value}.", slot.replace('/', " ")),
            None => format!("Note: {value}."),
        };
        IncomingFact {
            category: "fact".to_owned(),
            text,
            slot: slot.map(str::to_owned),
            value: value.to_owned(),
            valid_until: None,
            embedding: Vec::new(),
        }
    }

    /// Applies decisions to a snapshot the way the actor does (ids are `m{n}`).
    fn apply(
        snapshot: &mut CollectionSnapshot,
        facts: &[IncomingFact],
        decisions: &[Decision],
        next_id: &mut u64,
        at: DateTime<Utc>,
    ) {
        let mut ids: Vec<Option<String>> = vec![None; facts.len()];
        let mut records: Vec<Option<MemoryRecord>> = vec![None; facts.len()];
        for (index, (fact, decision)) in facts.iter().zip(decisions).enumerate() {
            if !decision.stores() {
                continue;
            }
            *next_id += 1;
            let id = format!("m{next_id}");
            ids[index] = Some(id.clone());
            records[index] = Some(record(&id, fact, at, *next_id));
        }
        for (index, decision) in decisions.iter().enumerate() {
            if let Decision::Updated { supersedes } = decision {
                let successor = ids[index].clone().unwrap();
                match supersedes {
                    Target::Stored(id) => {
                        let mut old = (**snapshot.memories.get(id).unwrap()).clone();
                        old.superseded_by = Some(successor);
                        old.superseded_at = Some(at);
                        snapshot.insert(Arc::new(old));
                    }
                    Target::Batch(earlier) => {
                        let old = records[*earlier].as_mut().unwrap();
                        old.superseded_by = Some(successor);
                        old.superseded_at = Some(at);
                    }
                }
            }
        }
        for record in records.into_iter().flatten() {
            snapshot.insert(Arc::new(record));
        }
    }

    fn record(id: &str, fact: &IncomingFact, at: DateTime<Utc>, key: u64) -> MemoryRecord {
        MemoryRecord {
            id: id.to_owned(),
            text: fact.text.clone(),
            importance: 0.5,
            category: fact.category.clone(),
            source: "remember".to_owned(),
            metadata: Default::default(),
            container_tag: None,
            images: Vec::new(),
            created_at: at,
            updated_at: at,
            pinned: false,
            archived: false,
            created_by: CreatedBy {
                id: "k".to_owned(),
                label: "l".to_owned(),
            },
            superseded_by: None,
            superseded_at: None,
            slot: fact.slot.clone(),
            value: Some(fact.value.clone()),
            expires_at: fact.valid_until,
            index_key: key,
        }
    }

    #[test]
    fn a_new_value_updates_the_same_value_repeats_and_other_slots_are_new() {
        let mut snapshot = CollectionSnapshot::default();
        let mut next = 0;
        let blue = [fact(Some("user/favorite_color"), "blue")];
        let decisions = decide(&snapshot, &blue, now());
        assert_eq!(decisions, vec![Decision::New]);
        apply(&mut snapshot, &blue, &decisions, &mut next, now());

        let again = [fact(Some("user/favorite_color"), "Blue")];
        assert_eq!(
            decide(&snapshot, &again, now()),
            vec![Decision::Duplicate {
                of: Target::Stored("m1".to_owned())
            }]
        );
        let green = [fact(Some("user/favorite_color"), "green")];
        let decisions = decide(&snapshot, &green, now());
        assert_eq!(
            decisions,
            vec![Decision::Updated {
                supersedes: Target::Stored("m1".to_owned())
            }]
        );
        apply(&mut snapshot, &green, &decisions, &mut next, now());
        assert_eq!(
            snapshot.slot_holder("user/favorite_color").unwrap().id,
            "m2"
        );
        let blue_again = snapshot.memories.get("m1").unwrap();
        assert_eq!(blue_again.superseded_by.as_deref(), Some("m2"));
        let drink = [fact(Some("user/favorite_drink"), "tea")];
        assert_eq!(decide(&snapshot, &drink, now()), vec![Decision::New]);
    }

    #[test]
    fn an_expired_holder_is_not_superseded_and_a_later_fact_in_the_batch_wins() {
        let mut snapshot = CollectionSnapshot::default();
        let mut next = 0;
        let mut away = fact(Some("user/current_location"), "Paris");
        away.valid_until = Some(now() + Duration::days(1));
        apply(
            &mut snapshot,
            &[away.clone()],
            &[Decision::New],
            &mut next,
            now(),
        );
        let later = now() + Duration::days(2);
        let home = [fact(Some("user/current_location"), "Lisbon")];
        assert_eq!(decide(&snapshot, &home, later), vec![Decision::New]);

        let both = [
            fact(Some("user/favorite_color"), "blue"),
            fact(Some("user/favorite_color"), "green"),
            fact(None, "same words"),
            fact(None, "Same words!"),
        ];
        assert_eq!(
            decide(&snapshot, &both, now()),
            vec![
                Decision::New,
                Decision::Updated {
                    supersedes: Target::Batch(0)
                },
                Decision::New,
                Decision::Duplicate {
                    of: Target::Batch(2)
                },
            ]
        );
    }

    #[derive(Debug, Clone)]
    struct Step {
        facts: Vec<(Option<u8>, u8, Option<u8>)>,
        advance_days: u8,
    }

    fn step() -> impl Strategy<Value = Step> {
        (
            prop::collection::vec(
                (
                    prop::option::of(0..4u8),
                    0..4u8,
                    prop::option::weighted(0.2, 1..4u8),
                ),
                1..5,
            ),
            0..3u8,
        )
            .prop_map(|(facts, advance_days)| Step {
                facts,
                advance_days,
            })
    }

    proptest! {
        /// The lifecycle invariants, over any sequence of remembers: at most one current
        /// memory per slot; superseded and expired memories never pass the search filter;
        /// supersession never deletes; identical current content is never stored twice.
        #[test]
        fn lifecycle_invariants_hold(steps in prop::collection::vec(step(), 1..12)) {
            let mut snapshot = CollectionSnapshot::default();
            let mut next = 0;
            let mut at = now();
            let mut stored_ever = 0usize;
            for step in steps {
                at += Duration::days(i64::from(step.advance_days));
                let facts: Vec<IncomingFact> = step.facts.iter().map(|(slot, value, days)| {
                    let mut incoming = fact(slot.map(|s| format!("user/slot_{s}")).as_deref(), &format!("v{value}"));
                    incoming.valid_until = days.map(|d| at + Duration::days(i64::from(d)));
                    incoming
                }).collect();
                let decisions = decide(&snapshot, &facts, at);
                stored_ever += decisions.iter().filter(|d| d.stores()).count();
                apply(&mut snapshot, &facts, &decisions, &mut next, at);

                prop_assert_eq!(snapshot.memories.len(), stored_ever, "supersession deleted something");
                let current: Vec<_> = snapshot.memories.values().filter(|m| is_current(m, at)).collect();
                let mut slots = std::collections::HashSet::new();
                let mut texts = std::collections::HashSet::new();
                for memory in &current {
                    if let Some(slot) = &memory.slot {
                        prop_assert!(slots.insert(slot.clone()), "two current memories on {}", slot);
                    }
                    prop_assert!(texts.insert(normalize_value(&memory.text)), "identical text stored twice: {}", memory.text);
                }
                let filter = memvault_index::search::filter::SearchFilter { include_archived: true, ..Default::default() };
                for memory in snapshot.memories.values() {
                    let stale = memory.superseded_by.is_some() || memory.expires_at.is_some_and(|e| e <= at);
                    prop_assert_eq!(filter.accepts(memory, at), !stale);
                }
            }
        }
    }
}
