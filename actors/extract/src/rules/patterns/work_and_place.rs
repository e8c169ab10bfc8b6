//! Where the user lives and works: "I live in X", "I moved to X", "I work at X as Y",
//! "I got a new job at X".

use super::Found;
use crate::rules::clause::{ClauseView, Cursor};
use crate::rules::lexicon::{EMPLOYER_TAILS, OCCUPATION_TAILS, PLACE_TAILS};
use crate::rules::slot::user_slot;
use crate::FactType;

/// The two halves of a job statement.
#[derive(Clone, Copy)]
pub(super) enum Role {
    Employer,
    Occupation,
}

impl Role {
    fn slot(self) -> Option<String> {
        match self {
            Self::Employer => user_slot(&["employer"]),
            Self::Occupation => user_slot(&["occupation"]),
        }
    }

    fn tails(self) -> &'static [&'static str] {
        match self {
            Self::Employer => EMPLOYER_TAILS,
            Self::Occupation => OCCUPATION_TAILS,
        }
    }

    /// Words introducing the other half after this one.
    fn links(self) -> &'static [&'static str] {
        match self {
            Self::Employer => &["as"],
            Self::Occupation => &["at", "for"],
        }
    }

    fn other(self) -> Self {
        match self {
            Self::Employer => Self::Occupation,
            Self::Occupation => Self::Employer,
        }
    }
}

impl<'s, 'a> ClauseView<'s, 'a> {
    /// "live in X": the user's home. A negation makes the value "not X", which replaces a
    /// stored "X" (and, unavoidably, any other stored home).
    pub(super) fn place(&self, mut cursor: Cursor, negated: bool) -> Vec<Found> {
        let Some(preposition) = cursor.eat_any(&["in", "at", "near", "on"]) else {
            return Vec::new();
        };
        let Some(value) = self.value_from(cursor.pos, PLACE_TAILS) else {
            return Vec::new();
        };
        let value = if preposition == "near" {
            format!("near {value}")
        } else {
            value
        };
        let value = if negated {
            format!("not {value}")
        } else {
            value
        };
        vec![Found::new(FactType::Fact, user_slot(&["location"]), value)]
    }

    /// "moved (back) (from X) to Y".
    pub(super) fn moved(&self, mut cursor: Cursor) -> Vec<Found> {
        cursor.skip(&["back", "here", "over", "out", "away"]);
        if cursor.eat("from") {
            while cursor.rest_len() > 0 && cursor.peek() != "to" {
                cursor.next();
            }
        }
        if !cursor.eat("to") {
            return Vec::new();
        }
        match self.value_from(cursor.pos, PLACE_TAILS) {
            Some(value) => vec![Found::new(FactType::Fact, user_slot(&["location"]), value)],
            None => Vec::new(),
        }
    }

    /// "work at/for X (as Y)", "work as Y (at X)".
    pub(super) fn work(&self, mut cursor: Cursor, negated: bool) -> Vec<Found> {
        if !negated && cursor.peek() == "remotely" {
            cursor.next();
        }
        if !negated && cursor.eat("from") {
            // "I'm working from Lisbon until Friday": a time-bound location.
            return self
                .value_from(cursor.pos, PLACE_TAILS)
                .map(|value| {
                    vec![Found::new(FactType::Fact, None, value)
                        .temporary()
                        .bounded(user_slot(&["location"]))]
                })
                .unwrap_or_default();
        }
        if cursor.eat("as") {
            return self.job(Role::Occupation, cursor.pos, negated);
        }
        if cursor.eat_any(&["at", "for"]).is_some() {
            return self.job(Role::Employer, cursor.pos, negated);
        }
        Vec::new()
    }

    /// A job statement's value at core word `start`, and the other half of the job after
    /// "as" or "at"/"for" ("Acme as an engineer", "an engineer at Acme"). The first fact's
    /// text stops before the second half, so that the two facts have different texts.
    pub(super) fn job(&self, role: Role, start: usize, negated: bool) -> Vec<Found> {
        let end = self.value_end(start, role.tails());
        let Some(value) = self.job_value(role, start, end) else {
            return Vec::new();
        };
        let value = if negated {
            format!("not {value}")
        } else {
            value
        };
        let mut found = vec![Found::new(FactType::Fact, role.slot(), value)];
        let link = self.core.get(end).map_or("", |word| word.norm);
        let other = role.other();
        if !negated && role.links().contains(&link) {
            let other_end = self.value_end(end + 1, other.tails());
            if let Some(other_value) = self.job_value(other, end + 1, other_end) {
                found[0].text = Some(self.text_before(end));
                found.push(Found::new(FactType::Fact, other.slot(), other_value));
            }
        }
        found
    }

    fn job_value(&self, role: Role, start: usize, end: usize) -> Option<String> {
        match role {
            Role::Employer if start < end => {
                let value = self.value(start..end);
                (!value.is_empty()).then_some(value)
            }
            Role::Employer => None,
            Role::Occupation => self.occupation_value(start, end),
        }
    }

    /// An occupation from core words `start..end`, without its article.
    fn occupation_value(&self, start: usize, end: usize) -> Option<String> {
        let start = start
            + usize::from(matches!(
                self.core.get(start).map(|word| word.norm),
                Some("a" | "an" | "the")
            ));
        if start >= end {
            return None;
        }
        let value = self.value(start..end);
        (!value.is_empty()).then_some(value)
    }

    /// "started working at X", "started a new job at X".
    pub(super) fn started(&self, mut cursor: Cursor) -> Vec<Found> {
        if cursor.eat_any(&["working", "work"]).is_some() {
            return self.work(cursor, false);
        }
        self.new_job(cursor)
    }

    /// "(got|have|started) a (new) job at/with X (as Y)", "... a job as Y (at X)".
    pub(super) fn new_job(&self, mut cursor: Cursor) -> Vec<Found> {
        cursor.eat_any(&["a", "my"]);
        cursor.skip(&["new", "first", "full-time", "part-time", "permanent"]);
        if !cursor.eat("job") {
            return Vec::new();
        }
        if cursor.eat("as") {
            return self.job(Role::Occupation, cursor.pos, false);
        }
        if cursor.eat_any(&["at", "with", "for"]).is_some() {
            return self.job(Role::Employer, cursor.pos, false);
        }
        Vec::new()
    }
}
