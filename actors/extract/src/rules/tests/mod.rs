//! The extractor's tests: shared helpers here, the case tables in one file per pattern
//! family.

mod events;
mod helpers;
mod i_am;
mod my_x_is_y;
mod preferences;
mod robustness;
mod sentences;
mod supersede;
mod time;
mod work_and_place;

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, TimeZone, Utc};
use proptest::prelude::*;

use super::extract;
use super::slot::is_slot_part;
use crate::{normalize_value, ExtractedFact, FactType};

use FactType::{Episode, Fact, Preference};

/// Monday 2026-11-23, 10:00 UTC.
fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 23, 10, 0, 0).unwrap()
}

fn at(month: u32, day: u32, hour: u32, minute: u32, second: u32) -> Option<DateTime<Utc>> {
    Some(
        Utc.with_ymd_and_hms(2026, month, day, hour, minute, second)
            .unwrap(),
    )
}

/// The end of a day of 2026 (23:59:59 UTC).
fn end_of(month: u32, day: u32) -> Option<DateTime<Utc>> {
    at(month, day, 23, 59, 59)
}

type Expected<'e> = (FactType, Option<&'e str>, &'e str, Option<DateTime<Utc>>);

/// Checks kind, slot, value and validity of every fact, in order.
fn check(input: &str, expected: &[Expected]) {
    let facts = extract(input, now());
    let got: Vec<Expected> = facts
        .iter()
        .map(|fact| {
            (
                fact.kind,
                fact.slot.as_deref(),
                fact.value.as_str(),
                fact.valid_until,
            )
        })
        .collect();
    assert_eq!(got, expected, "input: {input:?}\nfacts: {facts:#?}");
    assert_invariants(input, &facts);
}

fn texts(input: &str) -> Vec<String> {
    extract(input, now())
        .into_iter()
        .map(|fact| fact.text)
        .collect()
}

/// What every extraction must satisfy, whatever the input.
fn assert_invariants(input: &str, facts: &[ExtractedFact]) {
    let mut seen = HashSet::new();
    for fact in facts {
        assert!(
            !fact.text.trim().is_empty(),
            "empty text for {input:?}: {fact:?}"
        );
        assert!(
            !fact.value.trim().is_empty(),
            "empty value for {input:?}: {fact:?}"
        );
        if let Some(slot) = &fact.slot {
            let (subject, attribute) = slot.split_once('/').expect("slot has a '/'");
            assert!(
                is_slot_part(subject) && is_slot_part(attribute),
                "slot {slot:?} is not ^[a-z0-9_]+/[a-z0-9_]+$ for {input:?}"
            );
            assert_eq!(parse_slot_roundtrip(slot), Some(slot.clone()));
        } else {
            assert_eq!(
                fact.value, fact.text,
                "an unslotted fact's value is its text"
            );
        }
        if fact.kind == Episode {
            assert_eq!(fact.slot, None, "episodes have no slot");
        }
        if let Some(until) = fact.valid_until {
            assert!(
                until > now(),
                "validity in the past for {input:?}: {fact:?}"
            );
        }
        assert!(
            seen.insert(normalize_value(&fact.text)),
            "two facts with the same words for {input:?}: the caller would drop one"
        );
    }
}

fn parse_slot_roundtrip(slot: &str) -> Option<String> {
    crate::parse_slot(slot)
}
