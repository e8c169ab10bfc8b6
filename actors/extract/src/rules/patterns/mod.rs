//! The patterns matched on a clause, by what the clause starts with ("I", "my", "we",
//! "call me"); each family lives in its own file.

mod events;
mod i_am;
mod my_x_is_y;
mod preferences;
mod work_and_place;

use super::clause::{ClauseView, Cursor};
use super::lexicon::ADVERBS;
use crate::FactType;

/// A fact found by a pattern in one clause.
pub(super) struct Found {
    pub(super) kind: FactType,
    pub(super) slot: Option<String>,
    pub(super) value: String,
    /// Replaces the clause's text (one item of a list: "I like tea." from "I like tea and
    /// coffee.").
    pub(super) text: Option<String>,
    /// A state that "today" / "this week" can bound ("I'm in Paris today").
    pub(super) temporary: bool,
    /// The value itself holds a date ("My birthday is on March 3"): dates are kept as said.
    pub(super) value_has_dates: bool,
    /// The slot the fact takes instead of `slot` when it has a validity: a stay "until
    /// Friday" is a time-bound value of where the user lives (`user/location`), while an
    /// open-ended "I'm in Paris" is only where the user is now.
    pub(super) bounded_slot: Option<String>,
    /// The clause's dates are the value (a rescheduled appointment "postponed until March
    /// 10"), not a validity.
    pub(super) dates_are_value: bool,
}

impl Found {
    fn new(kind: FactType, slot: Option<String>, value: String) -> Self {
        Self {
            kind,
            slot,
            value,
            text: None,
            temporary: false,
            value_has_dates: false,
            bounded_slot: None,
            dates_are_value: false,
        }
    }

    /// A fact that takes `slot` when it has a validity (and its own `slot` otherwise).
    fn bounded(mut self, slot: Option<String>) -> Self {
        self.bounded_slot = slot;
        self
    }

    /// The slot the fact is stored under, given whether it has a validity.
    pub(super) fn slot_for(&self, bounded: bool) -> Option<String> {
        match (&self.bounded_slot, bounded) {
            (Some(slot), true) => Some(slot.clone()),
            _ => self.slot.clone(),
        }
    }

    fn temporary(mut self) -> Self {
        self.temporary = true;
        self
    }
}

impl<'s, 'a> ClauseView<'s, 'a> {
    pub(super) fn match_patterns(&self) -> Vec<Found> {
        let norms = self.norms_of();
        let mut cursor = Cursor::new(&norms);
        if cursor.eat_seq(&["call", "me"]) {
            return self.name(cursor.pos);
        }
        match cursor.next() {
            "i" => self.match_i(cursor),
            "my" => self.match_my(cursor.pos),
            "we" => self.match_we(cursor),
            "our" | "the" => {
                let event = self.event_change(cursor.pos); // "the meeting was moved to ..."
                if event.is_empty() {
                    self.match_other(&norms)
                } else {
                    event
                }
            }
            _ => self.match_other(&norms),
        }
    }

    /// A clause about something else: "tea is my favorite drink", "they moved my flight
    /// to Monday".
    fn match_other(&self, norms: &[&str]) -> Vec<Found> {
        let favorite = self.favorite_said_backwards(norms);
        if favorite.is_empty() {
            self.event_moved_by_someone(norms)
        } else {
            favorite
        }
    }

    /// After "I".
    fn match_i(&self, mut cursor: Cursor) -> Vec<Found> {
        cursor.skip(ADVERBS);
        if cursor.eat("am") {
            return self.match_am(cursor);
        }
        if cursor.eat("would") {
            return self.would_rather(cursor); // "I'd rather have coffee"
        }
        if cursor.eat_seq(&["will", "be"]) {
            return self.future_stay(cursor); // "I'll be in Tokyo for a week"
        }
        let auxiliary = cursor.eat_any(&["have", "had"]);
        let perfect = auxiliary.is_some();
        cursor.skip(ADVERBS);
        if perfect && matches!(cursor.peek(), "a" | "an" | "my") {
            if auxiliary == Some("have") {
                let event = self.event_held(cursor.pos); // "I have a dentist appointment on ..."
                if !event.is_empty() {
                    return event;
                }
            }
            return self.new_job(cursor); // "I have a new job at Acme"
        }
        let negated = if cursor.eat("do") {
            cursor.eat("not")
        } else {
            cursor.eat_seq(&["no", "longer"]) || cursor.eat("never")
        };
        cursor.skip(ADVERBS);
        if cursor.eat_seq(&["can", "not", "stand"]) {
            return self.preference(cursor, "stand", false);
        }
        if !negated {
            // "I moved my dentist appointment to March 10", "I cancelled my flight".
            let event = self.event_moved_object(cursor.pos);
            if !event.is_empty() {
                return event;
            }
        }
        match cursor.next() {
            "live" | "reside" => self.place(cursor, negated),
            "lived" | "resided" if perfect && !negated => self.place(cursor, false),
            "moved" | "relocated" if !negated => self.moved(cursor),
            "work" => self.work(cursor, negated),
            "worked" if perfect && !negated => self.work(cursor, false),
            "started" if !negated => self.started(cursor),
            "got" | "have" if !negated => {
                let event = self.event_held(cursor.pos); // "I've got a flight on Friday"
                if event.is_empty() {
                    self.new_job(cursor)
                } else {
                    event
                }
            }
            "switched" | "switching" if !negated => self.switched(cursor),
            "turned" if !negated => self.age(cursor.pos, false),
            verb @ ("like" | "love" | "enjoy" | "adore" | "prefer" | "hate" | "dislike"
            | "detest" | "loathe") => self.preference(cursor, verb, negated),
            _ => Vec::new(),
        }
    }

    /// After "we": where the user's household lives.
    fn match_we(&self, mut cursor: Cursor) -> Vec<Found> {
        cursor.skip(ADVERBS);
        if cursor.eat("have") {
            cursor.skip(ADVERBS);
            cursor.eat("got");
            let event = self.event_held(cursor.pos); // "we have a dinner party on Saturday"
            if !event.is_empty() {
                return event;
            }
        }
        let event = self.event_moved_object(cursor.pos); // "we moved the meeting to Friday"
        if !event.is_empty() {
            return event;
        }
        if cursor.eat("are") {
            cursor.skip(ADVERBS);
            return match cursor.next() {
                "living" => self.place(cursor, false),
                "based" => self.place(cursor, false),
                _ => Vec::new(),
            };
        }
        cursor.eat("have");
        cursor.skip(ADVERBS);
        match cursor.next() {
            "live" => self.place(cursor, false),
            "moved" | "relocated" => self.moved(cursor),
            _ => Vec::new(),
        }
    }
}
