//! The patterns matched on a clause, by what the clause starts with ("I", "my", "we",
//! "call me"); each family lives in its own file.

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
            _ => Vec::new(),
        }
    }

    /// After "I".
    fn match_i(&self, mut cursor: Cursor) -> Vec<Found> {
        cursor.skip(ADVERBS);
        if cursor.eat("am") {
            return self.match_am(cursor);
        }
        let perfect = cursor.eat_any(&["have", "had"]).is_some();
        cursor.skip(ADVERBS);
        if perfect && matches!(cursor.peek(), "a" | "my") {
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
        match cursor.next() {
            "live" | "reside" => self.place(cursor, negated),
            "lived" | "resided" if perfect && !negated => self.place(cursor, false),
            "moved" | "relocated" if !negated => self.moved(cursor),
            "work" => self.work(cursor, negated),
            "worked" if perfect && !negated => self.work(cursor, false),
            "started" if !negated => self.started(cursor),
            "got" | "have" if !negated => self.new_job(cursor),
            "turned" if !negated => self.age(cursor.pos, false),
            verb @ ("like" | "love" | "enjoy" | "adore" | "prefer" | "hate" | "dislike"
            | "detest" | "loathe") => self.preference(cursor, verb, negated),
            _ => Vec::new(),
        }
    }

    /// After "we": where the user's household lives.
    fn match_we(&self, mut cursor: Cursor) -> Vec<Found> {
        cursor.skip(ADVERBS);
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
