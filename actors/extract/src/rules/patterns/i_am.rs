//! "I am ...": age, name, origin, current place, allergies, diet, relationship status,
//! occupation and other states.

use super::work_and_place::Role;
use super::Found;
use crate::rules::clause::{ClauseView, Cursor};
use crate::rules::lexicon::{
    ADVERBS, COMMON_TAILS, CONVERSATIONAL, DIETS, JOBS, NOT_NAMES, OCCUPATION_TAILS, PLACE_TAILS,
    RELATIONSHIP_STATUSES,
};
use crate::rules::slot::{user_slot, user_slot_prefixed};
use crate::rules::text::{number_words, trim_value};
use crate::FactType;

/// Places known by a number or code ("room 414", "gate B12", "desk 4B").
const NUMBERED_PLACES: &[&str] = &[
    "room",
    "ward",
    "bed",
    "cabin",
    "suite",
    "seat",
    "gate",
    "office",
    "desk",
    "booth",
    "bay",
    "hall",
    "building",
    "apartment",
    "flat",
    "unit",
    "table",
    "locker",
    "platform",
    "terminal",
    "lab",
    "classroom",
    "dorm",
];

impl<'s, 'a> ClauseView<'s, 'a> {
    /// After "I am".
    pub(super) fn match_am(&self, mut cursor: Cursor) -> Vec<Found> {
        cursor.skip(ADVERBS);
        let negated = cursor.eat_negation();
        cursor.skip(ADVERBS);
        let start = cursor.pos;
        if cursor.rest_len() == 0 {
            return Vec::new();
        }
        let age = self.age(start, negated);
        if !age.is_empty() || cursor.peek().bytes().all(|b| b.is_ascii_digit()) {
            return age; // "I'm 34", "I'm thirty-four years old" (other numbers: plain facts)
        }
        if let Some(found) = self.am_phrase(&cursor, start, negated) {
            return found;
        }
        // Diet, relationship status, occupation, then any short state.
        self.diet(&cursor, start, negated)
            .or_else(|| self.relationship_status(&cursor, negated))
            .or_else(|| self.occupation_after_am(start, negated))
            .unwrap_or_else(|| self.state(start, negated))
    }

    /// The fixed phrases after "I am" (at core word `start`): "allergic to", "from", "in a
    /// relationship", "in Paris", "staying at", "living in", "working at", "employed by",
    /// "called", "into", "fond of", "obsessed with", "a (big) fan of".
    fn am_phrase(&self, cursor: &Cursor, start: usize, negated: bool) -> Option<Vec<Found>> {
        let yes_no = if negated { "no" } else { "yes" };
        match (cursor.peek(), cursor.peek_at(1)) {
            ("allergic", "to") => Some(self.allergies(start + 2, yes_no)),
            ("from", _) if !negated => Some(
                self.value_from(start + 1, PLACE_TAILS)
                    .map(|value| vec![Found::new(FactType::Fact, user_slot(&["origin"]), value)])
                    .unwrap_or_default(),
            ),
            ("in", "a") if cursor.peek_at(2) == "relationship" => {
                let value = if negated {
                    "not in a relationship"
                } else {
                    "in a relationship"
                };
                Some(vec![Found::new(
                    FactType::Fact,
                    user_slot(&["relationship", "status"]),
                    value.to_string(),
                )])
            }
            // "I'm in room 414", "I'm at gate B12": the numbered place's slot, as "my room
            // is 414" fills it.
            ("in" | "at", place)
                if !negated
                    && NUMBERED_PLACES.contains(&place)
                    && self.value_end(start + 2, COMMON_TAILS) == start + 3
                    && cursor.peek_at(2).chars().any(|c| c.is_ascii_digit()) =>
            {
                Some(
                    self.value_from(start + 2, COMMON_TAILS)
                        .map(|code| vec![Found::new(FactType::Fact, user_slot(&[place]), code)])
                        .unwrap_or_default(),
                )
            }
            ("in" | "at", _) if !negated && self.capitalized_at(start + 1) => {
                Some(self.current_place(start + 1))
            }
            ("away" | "spending", "in" | "at") if !negated && self.capitalized_at(start + 2) => {
                Some(self.current_place(start + 2)) // "I'm spending the next week in Nice"
            }
            ("going", "to") if !negated && cursor.peek_at(2) == "be" => {
                let mut cursor = cursor.clone();
                cursor.pos += 3;
                Some(self.future_stay(cursor)) // "I'm going to be in Rome until May"
            }
            ("more", "of") if !negated && matches!(cursor.peek_at(2), "a" | "an") => {
                self.kind_of_person(start + 3) // "I'm more of a coffee person"
            }
            ("staying" | "visiting" | "traveling" | "travelling" | "vacationing", _)
                if !negated =>
            {
                let skip = usize::from(matches!(
                    cursor.peek_at(1),
                    "in" | "at" | "around" | "through" | "with"
                ));
                Some(self.current_place(start + 1 + skip))
            }
            ("living" | "based", "in" | "at" | "near") => {
                let mut cursor = cursor.clone();
                cursor.next();
                Some(self.place(cursor, negated))
            }
            ("working", _) => {
                let mut cursor = cursor.clone();
                cursor.next();
                Some(self.work(cursor, negated))
            }
            ("employed", "at" | "by") if !negated => {
                Some(self.job(Role::Employer, start + 2, false))
            }
            ("called" | "named", _) if !negated => Some(self.name(start + 1)),
            ("into", _) => Some(self.preference_object(start + 1, negated, "likes")),
            ("fond" | "fan", "of") => Some(self.preference_object(start + 2, negated, "likes")),
            ("obsessed" | "crazy", "with" | "about") => {
                Some(self.preference_object(start + 2, negated, "loves"))
            }
            ("a" | "an", _) => {
                let mut offset = 1;
                while matches!(
                    cursor.peek_at(offset),
                    "big" | "huge" | "great" | "massive" | "real"
                ) {
                    offset += 1;
                }
                let fan = cursor.peek_at(offset) == "fan" && cursor.peek_at(offset + 1) == "of";
                fan.then(|| self.preference_object(start + offset + 2, negated, "likes"))
            }
            _ => None,
        }
    }

    /// "I'm (a) (strict) vegetarian": the diet, when nothing follows it.
    fn diet(&self, cursor: &Cursor, start: usize, negated: bool) -> Option<Vec<Found>> {
        let article = usize::from(matches!(cursor.peek(), "a" | "an"));
        let strict = usize::from(matches!(
            cursor.peek_at(article),
            "strict" | "full" | "committed"
        ));
        let diet_word = cursor.peek_at(article + strict);
        if !DIETS.contains(&diet_word)
            || self.value_end(start, COMMON_TAILS) > start + article + strict + 1
        {
            return None;
        }
        let value = if negated {
            format!("not {diet_word}")
        } else {
            diet_word.to_string()
        };
        Some(vec![Found::new(
            FactType::Fact,
            user_slot(&["diet"]),
            value,
        )
        .temporary()])
    }

    /// "I'm single", "I'm not married".
    fn relationship_status(&self, cursor: &Cursor, negated: bool) -> Option<Vec<Found>> {
        let status = cursor.peek();
        if !RELATIONSHIP_STATUSES.contains(&status) {
            return None;
        }
        let value = if negated {
            format!("not {status}")
        } else {
            status.to_string()
        };
        Some(vec![Found::new(
            FactType::Fact,
            user_slot(&["relationship", "status"]),
            value,
        )])
    }

    /// "34", "34 years old" at core word `start`, and nothing after.
    pub(super) fn age(&self, start: usize, negated: bool) -> Vec<Found> {
        let norms = self.norms_of();
        let rest = &norms[start.min(norms.len())..];
        let (number, used) = match rest.first().and_then(|word| word.parse::<u32>().ok()) {
            Some(number) if rest[0].len() <= 3 && rest[0].bytes().all(|b| b.is_ascii_digit()) => {
                (Some(number), 1)
            }
            _ => match number_words(rest) {
                Some((number, used)) => (Some(number), used),
                None => (None, 0),
            },
        };
        let unit = &rest[used.min(rest.len())..];
        let Some(number) = number.filter(|age| *age <= 150) else {
            return Vec::new();
        };
        let number = number.to_string();
        let unit_ok = matches!(
            unit,
            [] | ["years", "old"]
                | ["year", "old"]
                | ["yrs", "old"]
                | ["years"]
                | ["yrs"]
                | ["yo"]
                | ["y/o"]
                | ["years", "of", "age"]
        );
        if !unit_ok || negated {
            return Vec::new();
        }
        vec![Found::new(FactType::Fact, user_slot(&["age"]), number)]
    }

    /// "call me X", "I'm called X".
    pub(super) fn name(&self, start: usize) -> Vec<Found> {
        let end = self.value_end(start, COMMON_TAILS);
        if start >= end || end - start > 4 {
            return Vec::new();
        }
        let value = self.value(start..end);
        if value.is_empty() {
            return Vec::new();
        }
        vec![Found::new(FactType::Fact, user_slot(&["name"]), value)]
    }

    /// "I'm in Paris", "I'm staying at the Ritz": where the user is for now. With a
    /// validity ("until Friday", "for two weeks", "today") it is a time-bound value of
    /// where the user lives, which it overrides while it lasts.
    fn current_place(&self, start: usize) -> Vec<Found> {
        self.value_from(start, PLACE_TAILS)
            .map(|value| {
                vec![
                    Found::new(FactType::Fact, user_slot(&["current", "location"]), value)
                        .temporary()
                        .bounded(user_slot(&["location"])),
                ]
            })
            .unwrap_or_default()
    }

    /// After "I'll be" / "I'm going to be": "in Tokyo for a week", "staying in Rome until
    /// May". Only a stay with a validity is a (time-bound) location; without one it is a
    /// plan, kept as said.
    pub(super) fn future_stay(&self, cursor: Cursor) -> Vec<Found> {
        let start = cursor.pos;
        let skip = match (cursor.peek(), cursor.peek_at(1)) {
            ("in" | "at", _) if self.capitalized_at(start + 1) => 1,
            ("away", "in" | "at") => 2,
            (
                "staying" | "visiting" | "living" | "based" | "traveling" | "travelling"
                | "working" | "spending",
                next,
            ) => 1 + usize::from(matches!(next, "in" | "at" | "from" | "around" | "near")),
            _ => return Vec::new(),
        };
        self.value_from(start + skip, PLACE_TAILS)
            .map(|value| {
                vec![Found::new(FactType::Fact, None, value)
                    .temporary()
                    .bounded(user_slot(&["location"]))]
            })
            .unwrap_or_default()
    }

    /// "I'm allergic to peanuts (and shellfish)": one slot per allergen.
    fn allergies(&self, start: usize, yes_no: &str) -> Vec<Found> {
        let end = self.value_end_at(start, COMMON_TAILS, false);
        self.list_items(start, end)
            .into_iter()
            .filter_map(|(item_start, item_end)| {
                let words = self.slot_words(item_start, item_end);
                if words.len() > 4 {
                    return None;
                }
                let slot = user_slot_prefixed("allergy", &words)?;
                let mut found = Found::new(FactType::Fact, Some(slot), yes_no.to_string());
                if item_end - item_start < end - start {
                    found.text = Some(self.item_text(start, item_start, item_end));
                }
                Some(found)
            })
            .collect()
    }

    /// "I'm a (senior) software engineer (at Acme)": only when the head noun is a job.
    fn occupation_after_am(&self, start: usize, negated: bool) -> Option<Vec<Found>> {
        let end = self.value_end(start, OCCUPATION_TAILS);
        let has_article = matches!(self.core.get(start).map(|word| word.norm), Some("a" | "an"));
        let head = self.core.get(end.checked_sub(1)?)?.norm;
        if end <= start || !JOBS.contains(&head) || (!has_article && end - start > 1) {
            return None;
        }
        if end - start > 5 {
            return None;
        }
        let found = self.job(Role::Occupation, start, negated);
        (!found.is_empty()).then_some(found)
    }

    /// "I'm tired", "I'm a night owl", "I'm not a morning person": a yes/no slot per
    /// statement (`user/is_<state>`), so unrelated states never replace each other but
    /// "I'm not X" replaces "I'm X". "I'm Ana" (one capitalized word) is a name.
    fn state(&self, start: usize, negated: bool) -> Vec<Found> {
        let end = self.value_end(start, COMMON_TAILS);
        let Some(first) = self.core.get(start).map(|word| word.norm) else {
            return Vec::new();
        };
        if end <= start || CONVERSATIONAL.contains(&first) {
            return Vec::new();
        }
        if first.len() > 4 && first.ends_with("ing") {
            return Vec::new(); // "I'm reading a book": an activity, kept as a plain fact
        }
        if !negated && end - start == 1 && self.looks_like_name(start) {
            return vec![Found::new(
                FactType::Fact,
                user_slot(&["name"]),
                self.value(start..end),
            )];
        }
        let article = usize::from(matches!(first, "a" | "an"));
        if article == 1
            && matches!(self.core.get(start + 1).map(|w| w.norm), Some(w) if CONVERSATIONAL.contains(&w))
        {
            return Vec::new();
        }
        let words = self.slot_words(start + article, end);
        if words.is_empty() || words.len() > 4 {
            return Vec::new();
        }
        let Some(slot) = user_slot_prefixed("is", &words) else {
            return Vec::new();
        };
        let value = if negated { "no" } else { "yes" };
        vec![Found::new(FactType::Fact, Some(slot), value.to_string()).temporary()]
    }

    fn looks_like_name(&self, core_index: usize) -> bool {
        let Some(word) = self.core.get(core_index).and_then(|word| word.word) else {
            return false;
        };
        let text = trim_value(self.sentence.token_of(word).text);
        let mut letters = text.chars();
        let capitalized = letters.next().is_some_and(char::is_uppercase);
        let all_caps = text
            .chars()
            .filter(|c| c.is_alphabetic())
            .all(char::is_uppercase);
        let norm = self.core[core_index].norm;
        capitalized
            && !all_caps
            && text
                .chars()
                .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
            && !NOT_NAMES.contains(&norm)
            && !DIETS.contains(&norm)
            && !["ese", "ish", "ian", "ean"]
                .iter()
                .any(|suffix| norm.ends_with(suffix))
    }
}
