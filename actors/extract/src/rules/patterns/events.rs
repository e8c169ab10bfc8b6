//! Scheduled events: "my dentist appointment is on March 3", "I have a job interview on
//! Friday", and the same event moved or cancelled ("my dentist appointment was moved to
//! March 10", "I rescheduled my flight to Monday", "they cancelled my haircut").
//!
//! The event's name is its slot (`user/dentist_appointment`) and its date the value
//! (`2027-03-10`), so a new date for the same event replaces the old one while two
//! different events never touch each other.

use super::Found;
use crate::rules::clause::ClauseView;
use crate::rules::lexicon::{
    EVENT_NOUNS, RESCHEDULE_AUXILIARIES, RESCHEDULE_PARTICLES, RESCHEDULE_VERBS, SCHEDULE_FILLERS,
};
use crate::rules::slot::{strip_possessive, user_slot};
use crate::rules::time::{phrases_between, time_of_day};
use crate::FactType;

/// Verbs that call an event off.
const CANCEL_VERBS: &[&str] = &["cancelled", "canceled", "scrapped", "scratched"];

/// Words that make a clause a hypothetical, a wish or a denial rather than news.
const NOT_NEWS: &[&str] = &[
    "if", "whether", "would", "could", "should", "might", "may", "maybe", "perhaps", "not",
    "never", "wish", "hope", "want", "wanted", "need", "needs", "try", "tried", "trying", "asked",
    "ask", "can", "will", "please",
];

/// Words that end an event's name before its head noun is found ("my ... is", "... on",
/// "my boss moved my review": the boss is no part of the review's name).
const NAME_STOPS: &[&str] = &[
    "is", "are", "was", "were", "has", "have", "had", "got", "will", "on", "at", "in", "for", "to",
    "from", "with", "and", "but", "or", "by", "until", "till", "be", "been", "my", "our", "your",
    "their", "his", "her", "the",
];

impl<'s, 'a> ClauseView<'s, 'a> {
    /// After "my", "our" or "the": "my X is on D", "my X (was) moved to D", "my X was
    /// cancelled".
    pub(super) fn event_change(&self, start: usize) -> Vec<Found> {
        let Some((end, slot)) = self.event_name(start) else {
            return Vec::new();
        };
        let norms = self.norms_of();
        let rest = &norms[end..];
        let mut index = 0;
        while index < rest.len() && RESCHEDULE_AUXILIARIES.contains(&rest[index]) {
            index += 1;
        }
        let verb = rest.get(index).copied().unwrap_or("");
        if CANCEL_VERBS.contains(&verb)
            || (verb == "called" && rest.get(index + 1) == Some(&"off"))
            || (verb == "off" && index > 0 && index + 1 == rest.len())
        {
            return self.event_found(slot, "cancelled".to_owned());
        }
        let moved = RESCHEDULE_VERBS.contains(&verb)
            && self.only_schedule_words(&rest[index + 1..], RESCHEDULE_PARTICLES);
        let scheduled = matches!(rest.first(), Some(&("is" | "are" | "will")))
            && self.only_schedule_words(rest, SCHEDULE_FILLERS);
        if !moved && !scheduled {
            return Vec::new();
        }
        match self.event_when() {
            Some(when) => self.event_found(slot, when),
            None => Vec::new(),
        }
    }

    /// After "I have", "I've got", "we have": "a dentist appointment on March 3".
    pub(super) fn event_held(&self, start: usize) -> Vec<Found> {
        let norms = self.norms_of();
        if !matches!(norms.get(start), Some(&("a" | "an" | "my" | "our"))) {
            return Vec::new(); // "another appointment" is a second one, not this one
        }
        let Some((end, slot)) = self.event_name(start + 1) else {
            return Vec::new();
        };
        let extra: &[&str] = &["coming", "up", "booked", "scheduled"];
        let rest_ok = norms[end..].iter().enumerate().all(|(offset, word)| {
            SCHEDULE_FILLERS.contains(word)
                || extra.contains(word)
                || self.is_time_word(&norms, end + offset)
        });
        if !rest_ok || !self.has_event_date() {
            return Vec::new();
        }
        match self.event_when() {
            Some(when) => self.event_found(slot, when),
            None => Vec::new(),
        }
    }

    /// After "I (have) moved / rescheduled / postponed / cancelled" (the verb at core word
    /// `verb`): "my dentist appointment to March 10".
    pub(super) fn event_moved_object(&self, verb: usize) -> Vec<Found> {
        let norms = self.norms_of();
        let Some(verb_word) = norms.get(verb) else {
            return Vec::new();
        };
        let cancelled = CANCEL_VERBS.contains(verb_word);
        if !cancelled && !RESCHEDULE_VERBS.contains(verb_word) {
            return Vec::new();
        }
        let mut start = verb + 1;
        while matches!(norms.get(start), Some(&("back" | "forward" | "up" | "out"))) {
            start += 1;
        }
        if !matches!(norms.get(start), Some(&("my" | "our" | "the"))) {
            return Vec::new();
        }
        let Some((end, slot)) = self.event_name(start + 1) else {
            return Vec::new();
        };
        if cancelled {
            return match norms.len() == end {
                true => self.event_found(slot, "cancelled".to_owned()),
                false => Vec::new(),
            };
        }
        if !self.only_schedule_words(&norms[end..], RESCHEDULE_PARTICLES) {
            return Vec::new();
        }
        match self.event_when() {
            Some(when) => self.event_found(slot, when),
            None => Vec::new(),
        }
    }

    /// Someone else moved or cancelled it: "They moved my dentist appointment to March
    /// 10", "The clinic postponed my checkup until June".
    pub(super) fn event_moved_by_someone(&self, norms: &[&str]) -> Vec<Found> {
        let verb = norms
            .iter()
            .take(5)
            .position(|word| RESCHEDULE_VERBS.contains(word) || CANCEL_VERBS.contains(word));
        match verb {
            Some(verb) if !norms[..verb].iter().any(|word| NOT_NEWS.contains(word)) => {
                self.event_moved_object(verb)
            }
            _ => Vec::new(),
        }
    }

    /// The name of an event starting at core word `start`: up to five words ending in an
    /// event noun ("dentist appointment", "doctor's appointment", "dinner party"), and a
    /// named companion or destination ("meeting with Anna", "flight to Rome"). Returns
    /// the end of the name and its slot.
    fn event_name(&self, start: usize) -> Option<(usize, Option<String>)> {
        let norms = self.norms_of();
        let mut head = None;
        for (index, word) in norms.iter().enumerate().skip(start).take(5) {
            let word = strip_possessive(word);
            if EVENT_NOUNS.contains(&word) {
                head = Some(index);
            } else if head.is_some()
                || NAME_STOPS.contains(&word)
                || RESCHEDULE_VERBS.contains(&word)
                || CANCEL_VERBS.contains(&word)
            {
                break;
            }
        }
        let mut end = head? + 1;
        if matches!(norms.get(end), Some(&("with" | "to"))) && self.capitalized_at(end + 1) {
            let mut stop = end + 1;
            while stop < norms.len() && stop < end + 4 && self.capitalized_at(stop) {
                stop += 1;
            }
            end = stop;
        }
        let words = self.slot_words(start, end);
        if words.is_empty() || words.len() > 6 {
            return None;
        }
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        Some((end, user_slot(&words)))
    }

    /// Whether `words` (core words, their first at `self.core` index `first`) hold nothing
    /// but scheduling words and times of day.
    fn only_schedule_words(&self, words: &[&str], allowed: &[&str]) -> bool {
        let norms = self.norms_of();
        let offset = norms.len() - words.len();
        words.iter().enumerate().all(|(index, word)| {
            allowed.contains(word)
                || SCHEDULE_FILLERS.contains(word)
                || self.is_time_word(&norms, offset + index)
        })
    }

    /// A time of day or part of one at core word `index` ("10am", "10:30", "10", "pm").
    fn is_time_word(&self, norms: &[&str], index: usize) -> bool {
        let word = norms[index];
        time_of_day(norms, index).is_some()
            || matches!(
                word,
                "am" | "pm" | "a.m" | "p.m" | "noon" | "midday" | "o'clock"
            )
            || (word.len() <= 2 && word.bytes().all(|b| b.is_ascii_digit()))
    }

    /// Whether the clause names a date (not only a validity or a filler).
    fn has_event_date(&self) -> bool {
        phrases_between(self.phrases, self.clause.start, self.clause.end)
            .iter()
            .any(|phrase| phrase.is_dated())
    }

    /// When the event is: the last date said in the clause ("moved from March 3 to March
    /// 10" is March 10), with the last time of day said outside a time phrase.
    fn event_when(&self) -> Option<String> {
        let date = phrases_between(self.phrases, self.clause.start, self.clause.end)
            .iter()
            .rev()
            .find(|phrase| phrase.is_dated())
            .and_then(|phrase| phrase.date_value());
        let norms = self.norms_of();
        let time = (0..norms.len())
            .rev()
            .find_map(|index| time_of_day(&norms, index))
            .map(|(_, hour, minute)| format!("{hour:02}:{minute:02}"));
        match (date, time) {
            (Some(date), Some(time)) => Some(format!("{date} {time}")),
            (Some(date), None) => Some(date),
            (None, Some(time)) => Some(time),
            (None, None) => None,
        }
    }

    fn event_found(&self, slot: Option<String>, value: String) -> Vec<Found> {
        if slot.is_none() {
            return Vec::new();
        }
        let mut found = Found::new(FactType::Fact, slot, value);
        found.dates_are_value = true;
        vec![found]
    }
}
