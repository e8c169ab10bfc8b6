//! Supersession: how a collection takes in extracted facts.
//!
//! [`decide`] is pure: given the published snapshot and the incoming facts, it says which
//! are stored and what each does to the facts already on its slot, and which are already
//! stored. The actor then carries the decision out in one atomic store write. Rules, per
//! slot, at the time of the remember:
//!
//! - A fact whose value and validity equal those of the slot's current holder is a
//!   duplicate. A lasting fact equal to a lasting value set aside for now is one too.
//! - A time-bound fact (it has a validity) whose holder outlives it (the holder is lasting,
//!   or expires later) **sets the holder aside** while it is valid: the holder gets a
//!   [`Suspension`](memvault_storage::Suspension) and is current again when it ends.
//! - Any other fact with another value supersedes the holder (it keeps its text,
//!   timestamps and a link to its successor; nothing is deleted). The values set aside
//!   under the holder are superseded too, unless the new fact is time-bound and they
//!   outlive it: then they stay set aside, now by the new fact.
//! - Within one remember, statements are said together: a lasting fact said with a
//!   time-bound one on its slot ("I'm in Paris until Friday. I live in Lisbon.") lies under
//!   it, set aside at once, whatever the order. Otherwise a later fact wins.
//! - Any fact whose words equal a current memory's words is a duplicate of it.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use memvault_storage::{MemoryRecord, Suspension};

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

/// What storing a fact does to another memory on its slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The target is replaced for good: superseded by the new fact.
    Supersedes(Target),
    /// The target is set aside while the new (time-bound) fact is valid.
    SetsAside(Target),
    /// The new fact is set aside at once by the target, a time-bound fact of the same
    /// batch (the batch index), while that one is valid.
    SetAsideBy(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Store it, with what it does to the memories on its slot (nothing, for a new slot
    /// or an unslotted fact).
    Store(Vec<Change>),
    /// Do not store it: the target already says the same.
    Duplicate { of: Target },
}

impl Decision {
    /// `new`, `updated` (it replaces, or sets aside for a while, what was on its slot) or
    /// `duplicate`.
    pub fn relation(&self) -> &'static str {
        match self {
            Self::Duplicate { .. } => "duplicate",
            Self::Store(changes)
                if changes
                    .iter()
                    .any(|change| !matches!(change, Change::SetAsideBy(_))) =>
            {
                "updated"
            }
            Self::Store(_) => "new",
        }
    }

    pub fn stores(&self) -> bool {
        matches!(self, Self::Store(_))
    }
}

/// A memory on a slot as a decision sees it: stored or earlier in the batch.
#[derive(Debug, Clone)]
struct Holder {
    target: Target,
    value: String,
    /// Its own expiry.
    until: Option<DateTime<Utc>>,
    /// Set aside (now) by a time-bound memory over it; else current.
    set_aside: bool,
}

/// The memories of a slot that matter now, oldest first: at most one current, the others
/// set aside under it. Expired ones are left out.
fn holders_now(snapshot: &CollectionSnapshot, slot: &str, now: DateTime<Utc>) -> Vec<Holder> {
    snapshot
        .slot_holders(slot)
        .filter_map(|memory| {
            let set_aside = if is_current(memory, now) {
                false
            } else if memory.expires_at.is_none_or(|expiry| expiry > now)
                && memory.suspended_at(now)
            {
                true
            } else {
                return None;
            };
            Some(Holder {
                target: Target::Stored(memory.id.clone()),
                value: memory.value.clone().unwrap_or_else(|| memory.text.clone()),
                until: memory.expires_at,
                set_aside,
            })
        })
        .collect()
}

/// What the facts of one remember do to the collection, in their order.
pub fn decide(
    snapshot: &CollectionSnapshot,
    facts: &[IncomingFact],
    now: DateTime<Utc>,
) -> Vec<Decision> {
    // Each slot touched so far, as the batch has changed it.
    let mut slots: HashMap<&str, Vec<Holder>> = HashMap::new();
    // Texts stored earlier in this batch.
    let mut batch_texts: HashMap<String, usize> = HashMap::new();
    let mut decisions = Vec::with_capacity(facts.len());
    for (index, fact) in facts.iter().enumerate() {
        let words = normalize_value(&fact.text);
        let on_slot = fact.slot.as_deref().and_then(|slot| {
            let holders = slots
                .entry(slot)
                .or_insert_with(|| holders_now(snapshot, slot, now));
            decide_on_slot(holders, index, fact)
        });
        let decision = on_slot.unwrap_or_else(|| {
            let decision = decide_by_text(snapshot, fact, &words, &batch_texts, now);
            if let (Some(slot), true) = (fact.slot.as_deref(), decision.stores()) {
                slots.entry(slot).or_default().push(Holder {
                    target: Target::Batch(index),
                    value: fact.value.clone(),
                    until: fact.valid_until,
                    set_aside: false,
                });
            }
            decision
        });
        if decision.stores() {
            batch_texts.insert(words, index);
        }
        decisions.push(decision);
    }
    decisions
}

/// The decision for a fact on a slot that has memories (`holders`, updated to what the
/// decision makes of them); `None` when the slot has none.
fn decide_on_slot(
    holders: &mut Vec<Holder>,
    index: usize,
    fact: &IncomingFact,
) -> Option<Decision> {
    if holders.is_empty() {
        return None;
    }
    let top = holders.iter().rposition(|holder| !holder.set_aside);
    if let Some(top) = top {
        let holder = &holders[top];
        if same_value(&holder.value, holder.until, fact) {
            return Some(Decision::Duplicate {
                of: holder.target.clone(),
            });
        }
    }
    let incoming = Holder {
        target: Target::Batch(index),
        value: fact.value.clone(),
        until: fact.valid_until,
        set_aside: false,
    };
    match (top, fact.valid_until) {
        // A time-bound fact over a value that outlives it: set aside while it holds.
        (Some(top), Some(until)) if outlives(holders[top].until, until) => {
            holders[top].set_aside = true;
            let change = Change::SetsAside(holders[top].target.clone());
            holders.push(incoming);
            return Some(Decision::Store(vec![change]));
        }
        // A lasting fact said together with a time-bound one: it lies under it.
        (Some(top), None) => {
            if let (Target::Batch(earlier), Some(_)) = (&holders[top].target, holders[top].until) {
                let earlier = *earlier;
                let mut changes = vec![Change::SetAsideBy(earlier)];
                changes.extend(take_set_aside(holders, None));
                let top = holders.iter().rposition(|holder| !holder.set_aside)?;
                holders.insert(
                    top,
                    Holder {
                        set_aside: true,
                        ..incoming
                    },
                );
                return Some(Decision::Store(changes));
            }
        }
        _ => {}
    }
    // A lasting value repeated while something else is over it: already known.
    if fact.valid_until.is_none() {
        if let Some(holder) = holders
            .iter()
            .find(|holder| holder.set_aside && same_value(&holder.value, holder.until, fact))
        {
            return Some(Decision::Duplicate {
                of: holder.target.clone(),
            });
        }
    }
    // Replaces the current value, and decides what becomes of the values under it.
    let mut changes = Vec::new();
    if let Some(top) = top {
        changes.push(Change::Supersedes(holders.remove(top).target));
    }
    changes.extend(take_set_aside(holders, fact.valid_until));
    holders.push(incoming);
    Some(Decision::Store(changes))
}

/// What a new fact valid until `until` (`None`: lasting) does to the values set aside:
/// those that outlive it stay set aside (now by it), the others are superseded and leave
/// `holders`.
fn take_set_aside(holders: &mut Vec<Holder>, until: Option<DateTime<Utc>>) -> Vec<Change> {
    let mut changes = Vec::new();
    holders.retain(|holder| {
        if !holder.set_aside {
            return true;
        }
        match until {
            Some(until) if outlives(holder.until, until) => {
                changes.push(Change::SetsAside(holder.target.clone()));
                true
            }
            _ => {
                changes.push(Change::Supersedes(holder.target.clone()));
                false
            }
        }
    });
    changes
}

/// Whether a memory valid until `holder` is still true when one valid until `until` ends.
fn outlives(holder: Option<DateTime<Utc>>, until: DateTime<Utc>) -> bool {
    holder.is_none_or(|holder| holder > until)
}

/// An unslotted fact, or one on an empty slot: a duplicate of the same words, else new.
fn decide_by_text(
    snapshot: &CollectionSnapshot,
    fact: &IncomingFact,
    words: &str,
    batch_texts: &HashMap<String, usize>,
    now: DateTime<Utc>,
) -> Decision {
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
    Decision::Store(Vec::new())
}

fn same_value(value: &str, valid_until: Option<DateTime<Utc>>, fact: &IncomingFact) -> bool {
    normalize_value(value) == normalize_value(&fact.value) && valid_until == fact.valid_until
}

/// A memory with the same words but on another slot is not the same fact.
fn conflicting_slot(memory: &MemoryRecord, fact: &IncomingFact) -> bool {
    matches!((&memory.slot, &fact.slot), (Some(a), Some(b)) if a != b)
}

/// The stored memories `decisions` change, by id, in the order they are first named: the
/// caller loads them for [`apply_changes`].
pub fn stored_targets(decisions: &[Decision]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for decision in decisions {
        let Decision::Store(changes) = decision else {
            continue;
        };
        for change in changes {
            if let Change::Supersedes(Target::Stored(id)) | Change::SetsAside(Target::Stored(id)) =
                change
            {
                if !ids.contains(id) {
                    ids.push(id.clone());
                }
            }
        }
    }
    ids
}

/// Carries out the changes of `decisions` on the new records (`fresh`, by fact index;
/// `None` for a duplicate) and on the stored memories they name (`stored`, by id).
pub fn apply_changes(
    decisions: &[Decision],
    facts: &[IncomingFact],
    fresh: &mut [Option<MemoryRecord>],
    stored: &mut HashMap<String, MemoryRecord>,
    now: DateTime<Utc>,
) {
    for (index, decision) in decisions.iter().enumerate() {
        let Decision::Store(changes) = decision else {
            continue;
        };
        let Some(by) = fresh[index].as_ref().map(|record| record.id.clone()) else {
            continue;
        };
        for change in changes {
            match change {
                Change::Supersedes(target) => {
                    if let Some(record) = target_mut(target, fresh, stored) {
                        end_set_aside(record, now);
                        record.superseded_by = Some(by.clone());
                        record.superseded_at = Some(now);
                    }
                }
                Change::SetsAside(target) => {
                    let Some(until) = facts[index].valid_until else {
                        continue;
                    };
                    if let Some(record) = target_mut(target, fresh, stored) {
                        // An override that outlasts this one is over the record again
                        // once this one ends.
                        let outlasting = record
                            .suspensions
                            .iter()
                            .filter(|suspension| suspension.from <= now && now < suspension.until)
                            .max_by_key(|suspension| suspension.until)
                            .filter(|suspension| suspension.until > until)
                            .cloned();
                        end_set_aside(record, now);
                        record.suspensions.push(Suspension {
                            by: by.clone(),
                            from: now,
                            until,
                        });
                        if let Some(outlasting) = outlasting {
                            record.suspensions.push(Suspension {
                                from: until,
                                ..outlasting
                            });
                        }
                    }
                }
                Change::SetAsideBy(earlier) => {
                    let over = fresh[*earlier].as_ref().map(|record| record.id.clone());
                    let (Some(over), Some(until)) = (over, facts[*earlier].valid_until) else {
                        continue;
                    };
                    if let Some(record) = fresh[index].as_mut() {
                        record.suspensions.push(Suspension {
                            by: over,
                            from: now,
                            until,
                        });
                    }
                }
            }
        }
    }
}

fn target_mut<'r>(
    target: &Target,
    fresh: &'r mut [Option<MemoryRecord>],
    stored: &'r mut HashMap<String, MemoryRecord>,
) -> Option<&'r mut MemoryRecord> {
    match target {
        Target::Batch(index) => fresh.get_mut(*index).and_then(Option::as_mut),
        Target::Stored(id) => stored.get_mut(id),
    }
}

/// Ends the set-aside in force at `now` (its override is being replaced); one that had
/// not begun yet (set aside earlier in the same batch) is dropped.
fn end_set_aside(record: &mut MemoryRecord, now: DateTime<Utc>) {
    for suspension in &mut record.suspensions {
        if suspension.from <= now && now < suspension.until {
            suspension.until = now;
        }
    }
    record
        .suspensions
        .retain(|suspension| suspension.from < suspension.until);
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

    fn until(slot: &str, value: &str, until: DateTime<Utc>) -> IncomingFact {
        IncomingFact {
            valid_until: Some(until),
            ..fact(Some(slot), value)
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
        let mut fresh: Vec<Option<MemoryRecord>> = facts
            .iter()
            .zip(decisions)
            .map(|(fact, decision)| {
                decision.stores().then(|| {
                    *next_id += 1;
                    record(&format!("m{next_id}"), fact, at, *next_id)
                })
            })
            .collect();
        let mut stored: HashMap<String, MemoryRecord> = stored_targets(decisions)
            .into_iter()
            .map(|id| {
                let record = (**snapshot.memories.get(id.as_str()).unwrap()).clone();
                (id, record)
            })
            .collect();
        apply_changes(decisions, facts, &mut fresh, &mut stored, at);
        for record in stored.into_values().chain(fresh.into_iter().flatten()) {
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
            images: Default::default(),
            created_at: at,
            updated_at: at,
            pinned: false,
            archived: false,
            created_by: CreatedBy {
                id: "k".to_owned(),
                label: "l".to_owned(),
            }
            .into(),
            superseded_by: None,
            superseded_at: None,
            slot: fact.slot.clone(),
            value: Some(fact.value.clone()),
            expires_at: fact.valid_until,
            suspensions: Default::default(),
            index_key: key,
        }
    }

    fn stored(id: &str) -> Target {
        Target::Stored(id.to_owned())
    }

    /// The value of the slot's current holder at `at`.
    fn current(snapshot: &CollectionSnapshot, slot: &str, at: DateTime<Utc>) -> Option<String> {
        snapshot
            .current_holder(slot, at)
            .and_then(|memory| memory.value.clone())
    }

    #[test]
    fn a_new_value_updates_the_same_value_repeats_and_other_slots_are_new() {
        let mut snapshot = CollectionSnapshot::default();
        let mut next = 0;
        let blue = [fact(Some("user/favorite_color"), "blue")];
        let decisions = decide(&snapshot, &blue, now());
        assert_eq!(decisions, vec![Decision::Store(Vec::new())]);
        assert_eq!(decisions[0].relation(), "new");
        apply(&mut snapshot, &blue, &decisions, &mut next, now());

        let again = [fact(Some("user/favorite_color"), "Blue")];
        assert_eq!(
            decide(&snapshot, &again, now()),
            vec![Decision::Duplicate { of: stored("m1") }]
        );
        let green = [fact(Some("user/favorite_color"), "green")];
        let decisions = decide(&snapshot, &green, now());
        assert_eq!(
            decisions,
            vec![Decision::Store(vec![Change::Supersedes(stored("m1"))])]
        );
        assert_eq!(decisions[0].relation(), "updated");
        apply(&mut snapshot, &green, &decisions, &mut next, now());
        assert_eq!(
            snapshot
                .current_holder("user/favorite_color", now())
                .unwrap()
                .id,
            "m2"
        );
        let blue_again = snapshot.memories.get("m1").unwrap();
        assert_eq!(blue_again.superseded_by.as_deref(), Some("m2"));
        assert_eq!(snapshot.slot_history("user/favorite_color").count(), 2);
        let drink = [fact(Some("user/favorite_drink"), "tea")];
        assert_eq!(
            decide(&snapshot, &drink, now()),
            vec![Decision::Store(Vec::new())]
        );
    }

    #[test]
    fn an_expired_holder_is_not_superseded_and_a_later_fact_in_the_batch_wins() {
        let mut snapshot = CollectionSnapshot::default();
        let mut next = 0;
        let away = until("user/current_location", "Paris", now() + Duration::days(1));
        apply(
            &mut snapshot,
            &[away],
            &[Decision::Store(Vec::new())],
            &mut next,
            now(),
        );
        let later = now() + Duration::days(2);
        let home = [fact(Some("user/current_location"), "Lisbon")];
        assert_eq!(
            decide(&snapshot, &home, later),
            vec![Decision::Store(Vec::new())]
        );

        let both = [
            fact(Some("user/favorite_color"), "blue"),
            fact(Some("user/favorite_color"), "green"),
            fact(None, "same words"),
            fact(None, "Same words!"),
        ];
        assert_eq!(
            decide(&snapshot, &both, now()),
            vec![
                Decision::Store(Vec::new()),
                Decision::Store(vec![Change::Supersedes(Target::Batch(0))]),
                Decision::Store(Vec::new()),
                Decision::Duplicate {
                    of: Target::Batch(2)
                },
            ]
        );
    }

    #[test]
    fn a_time_bound_fact_sets_a_lasting_one_aside_only_while_it_holds() {
        let slot = "user/location";
        let mut snapshot = CollectionSnapshot::default();
        let mut next = 0;
        let berlin = [fact(Some(slot), "Berlin")];
        let decisions = decide(&snapshot, &berlin, now());
        apply(&mut snapshot, &berlin, &decisions, &mut next, now());
        let paris = [until(slot, "Paris", now() + Duration::days(14))];
        let decisions = decide(&snapshot, &paris, now());
        assert_eq!(
            decisions,
            vec![Decision::Store(vec![Change::SetsAside(stored("m1"))])]
        );
        assert_eq!(decisions[0].relation(), "updated");
        apply(&mut snapshot, &paris, &decisions, &mut next, now());
        assert_eq!(current(&snapshot, slot, now()).as_deref(), Some("Paris"));
        let berlin_record = snapshot.memories.get("m1").unwrap();
        assert_eq!(
            berlin_record.superseded_by, None,
            "set aside, not superseded"
        );
        assert_eq!(berlin_record.suspensions[0].by, "m2");
        assert_eq!(
            current(&snapshot, slot, now() + Duration::days(15)).as_deref(),
            Some("Berlin"),
            "current again once the override ends"
        );
        assert_eq!(
            snapshot.next_boundary(now()),
            Some(now() + Duration::days(14))
        );
        assert_eq!(snapshot.set_aside_at(now()).count(), 1);
        assert_eq!(snapshot.set_aside_at(now() + Duration::days(15)).count(), 0);

        // Saying the lasting value again changes nothing; a new lasting value replaces
        // both the override and the value under it.
        let again = [fact(Some(slot), "Berlin")];
        assert_eq!(
            decide(&snapshot, &again, now()),
            vec![Decision::Duplicate { of: stored("m1") }]
        );
        let later = now() + Duration::days(2);
        let madrid = [fact(Some(slot), "Madrid")];
        let decisions = decide(&snapshot, &madrid, later);
        assert_eq!(
            decisions,
            vec![Decision::Store(vec![
                Change::Supersedes(stored("m2")),
                Change::Supersedes(stored("m1")),
            ])]
        );
        apply(&mut snapshot, &madrid, &decisions, &mut next, later);
        let berlin_record = snapshot.memories.get("m1").unwrap();
        assert_eq!(berlin_record.superseded_by.as_deref(), Some("m3"));
        assert_eq!(
            berlin_record.suspensions[0].until, later,
            "the set-aside ended"
        );
        for days in [3, 15, 100] {
            assert_eq!(
                current(&snapshot, slot, now() + Duration::days(days)).as_deref(),
                Some("Madrid")
            );
        }
    }

    #[test]
    fn overrides_nest_and_replace_each_other() {
        let slot = "user/location";
        let day = |days: i64| now() + Duration::days(days);
        let mut snapshot = CollectionSnapshot::default();
        let mut next = 0;
        let mut say = |snapshot: &mut CollectionSnapshot, facts: Vec<IncomingFact>, at| {
            let decisions = decide(snapshot, &facts, at);
            apply(snapshot, &facts, &decisions, &mut next, at);
            decisions
        };
        say(&mut snapshot, vec![fact(Some(slot), "Berlin")], day(0));
        say(&mut snapshot, vec![until(slot, "Paris", day(14))], day(0));
        // A shorter trip inside the longer one: Rome, then Paris again, then Berlin.
        let decisions = say(&mut snapshot, vec![until(slot, "Rome", day(4))], day(1));
        assert_eq!(
            decisions,
            vec![Decision::Store(vec![Change::SetsAside(stored("m2"))])]
        );
        for (days, value) in [(2, "Rome"), (5, "Paris"), (15, "Berlin")] {
            assert_eq!(current(&snapshot, slot, day(days)).as_deref(), Some(value));
        }
        // A longer override replaces Paris; Berlin stays set aside until it ends.
        let decisions = say(&mut snapshot, vec![until(slot, "Lyon", day(20))], day(6));
        assert_eq!(
            decisions,
            vec![Decision::Store(vec![
                Change::Supersedes(stored("m2")),
                Change::SetsAside(stored("m1")),
            ])]
        );
        for (days, value) in [(7, "Lyon"), (15, "Lyon"), (21, "Berlin")] {
            assert_eq!(current(&snapshot, slot, day(days)).as_deref(), Some(value));
        }
        let berlin = snapshot.memories.get("m1").unwrap();
        let spans: Vec<(DateTime<Utc>, DateTime<Utc>)> = berlin
            .suspensions
            .iter()
            .map(|suspension| (suspension.from, suspension.until))
            .collect();
        assert_eq!(spans, vec![(day(0), day(6)), (day(6), day(20))]);
    }

    #[test]
    fn a_lasting_fact_said_with_a_time_bound_one_lies_under_it() {
        let slot = "user/location";
        let mut snapshot = CollectionSnapshot::default();
        let mut next = 0;
        let said = [
            until(slot, "Paris", now() + Duration::days(4)),
            fact(Some(slot), "Lisbon"),
        ];
        let decisions = decide(&snapshot, &said, now());
        assert_eq!(
            decisions,
            vec![
                Decision::Store(Vec::new()),
                Decision::Store(vec![Change::SetAsideBy(0)]),
            ]
        );
        assert_eq!(decisions[1].relation(), "new");
        apply(&mut snapshot, &said, &decisions, &mut next, now());
        assert_eq!(current(&snapshot, slot, now()).as_deref(), Some("Paris"));
        assert_eq!(
            current(&snapshot, slot, now() + Duration::days(5)).as_deref(),
            Some("Lisbon")
        );
    }

    #[test]
    fn a_shorter_override_over_a_set_aside_value_hands_it_back_to_the_longer_one() {
        // Found by `lifecycle_invariants_hold`: Berlin is set aside by Paris (14 days);
        // a 2-day override then sets both aside. When it ends, Paris holds again and
        // Berlin stays set aside until Paris ends, instead of both being current.
        let slot = "user/location";
        let day = |days: i64| now() + Duration::days(days);
        let mut snapshot = CollectionSnapshot::default();
        let mut next = 0;
        let mut say = |snapshot: &mut CollectionSnapshot, facts: Vec<IncomingFact>| {
            let decisions = decide(snapshot, &facts, day(0));
            apply(snapshot, &facts, &decisions, &mut next, day(0));
        };
        say(&mut snapshot, vec![fact(Some(slot), "Berlin")]);
        say(&mut snapshot, vec![until(slot, "Paris", day(14))]);
        say(
            &mut snapshot,
            vec![until(slot, "Rome", day(1)), until(slot, "Lyon", day(2))],
        );
        for (days, value) in [
            (0, "Lyon"),
            (1, "Lyon"),
            (3, "Paris"),
            (13, "Paris"),
            (15, "Berlin"),
        ] {
            assert_eq!(
                current(&snapshot, slot, day(days)).as_deref(),
                Some(value),
                "day {days}"
            );
            let holders = snapshot
                .memories
                .values()
                .filter(|memory| memory.slot.as_deref() == Some(slot))
                .filter(|memory| is_current(memory, day(days)))
                .count();
            assert_eq!(holders, 1, "day {days}");
        }
        let berlin = snapshot.memories.get("m1").unwrap();
        let paris = snapshot.memories.get("m2").unwrap().id.clone();
        assert!(berlin
            .suspensions
            .iter()
            .any(|suspension| suspension.by == paris
                && suspension.from == day(2)
                && suspension.until == day(14)));
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
                    prop::option::weighted(0.3, 1..6u8),
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
        /// memory per slot, now and later (set-asides end, overrides expire); superseded,
        /// expired and set-aside memories never pass the search filter; supersession
        /// never deletes; identical current content is never stored twice.
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
                for later in [0, 1, 3, 7] {
                    let then = at + Duration::days(later);
                    let current: Vec<_> = snapshot.memories.values().filter(|m| is_current(m, then)).collect();
                    let mut slots = std::collections::HashSet::new();
                    let mut texts = std::collections::HashSet::new();
                    for memory in &current {
                        if let Some(slot) = &memory.slot {
                            prop_assert!(slots.insert(slot.clone()), "two current memories on {} at +{}d", slot, later);
                            prop_assert_eq!(&snapshot.current_holder(slot, then).unwrap().id, &memory.id);
                        }
                        if later == 0 {
                            prop_assert!(texts.insert(normalize_value(&memory.text)), "identical text stored twice: {}", memory.text);
                        }
                    }
                }
                let filter = memvault_index::search::filter::SearchFilter { include_archived: true, ..Default::default() };
                for memory in snapshot.memories.values() {
                    let stale = memory.superseded_by.is_some()
                        || memory.expires_at.is_some_and(|e| e <= at)
                        || memory.suspended_at(at);
                    prop_assert_eq!(filter.accepts(memory, at), !stale);
                }
            }
        }
    }
}
