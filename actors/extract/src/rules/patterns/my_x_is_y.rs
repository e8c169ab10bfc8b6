//! "My X is Y": an attribute of the user and its value ("my favorite color is blue").

use super::Found;
use crate::rules::clause::{ClauseView, CoreWord};
use crate::rules::lexicon::{ATTRIBUTE_NOUNS, COMMON_TAILS, FAVORITE_MODIFIERS};
use crate::rules::slot::{singular, strip_possessive, unify_spelling, user_slot};
use crate::rules::time::When;
use crate::FactType;

impl<'s, 'a> ClauseView<'s, 'a> {
    /// After "my": "my X is Y".
    pub(super) fn match_my(&self, start: usize) -> Vec<Found> {
        let event = self.event_change(start); // "my dentist appointment is on March 3"
        if !event.is_empty() {
            return event;
        }
        let norms = self.norms_of();
        let event = self.event_moved_by_someone(&norms); // "my boss moved my review to ..."
        if !event.is_empty() {
            return event;
        }
        let Some((verb, attribute)) = attribute_before_verb(&norms, start) else {
            return Vec::new();
        };
        // The value: the words after the verb, dates included ("my birthday is March 3").
        let Some(verb_word) = self.core[verb].word else {
            return Vec::new();
        };
        let Some((sub, value_has_dates)) = self.value_after(verb_word) else {
            return Vec::new(); // "my X is not Y" says what it is not: kept as a plain fact
        };
        let Some(value) = sub.value_from(0, COMMON_TAILS) else {
            return Vec::new();
        };
        let value_words_count = sub.value_end(0, COMMON_TAILS);
        let Some((kind, slot_words)) = attribute_slot_words(&attribute, &sub, value_words_count)
        else {
            return Vec::new(); // "my car is broken": a description, not a value
        };
        if slot_words.len() == 1 && slot_words[0] == "favorite" {
            return Vec::new();
        }
        let words: Vec<&str> = slot_words.iter().map(String::as_str).collect();
        let Some(slot) = user_slot(&words) else {
            return Vec::new();
        };
        let mut found = Found::new(kind, Some(slot), value);
        found.value_has_dates = value_has_dates;
        vec![found]
    }

    /// The words after the sentence word `verb_word` up to the clause end, as a view of
    /// their own: time phrases dropped except events (kept as dates of the value, the
    /// `bool`), leading adverbs dropped. `None` when the value is negated ("not Y").
    fn value_after(&self, verb_word: usize) -> Option<(ClauseView<'s, 'a>, bool)> {
        let mut value_words: Vec<CoreWord> = Vec::new();
        let mut value_has_dates = false;
        for index in verb_word + 1..self.clause.end {
            let keep = match self.phrase_of[index] {
                None => true,
                Some(number) => {
                    let is_event = matches!(self.phrases[number].when, When::Event(_));
                    value_has_dates |= is_event;
                    is_event
                }
            };
            if keep && self.norms[index].chars().any(char::is_alphanumeric) {
                value_words.push(CoreWord {
                    norm: self.norms[index],
                    word: Some(index),
                });
            }
        }
        while value_words
            .first()
            .is_some_and(|word| matches!(word.norm, "still" | "also" | "really" | "definitely"))
        {
            value_words.remove(0);
        }
        if value_words.first().is_some_and(|word| word.norm == "not") {
            return None;
        }
        let sub = ClauseView {
            sentence: self.sentence,
            norms: self.norms,
            phrases: self.phrases,
            phrase_of: self.phrase_of,
            clause: self.clause,
            text_start: self.text_start,
            core: value_words,
        };
        Some((sub, value_has_dates))
    }
}

/// The verb of "my X is Y" in core words `norms` from `start` ("is"/"are", or a contracted
/// "'s": "my name's Ana") and the attribute before it as slot words (possessives dropped,
/// spellings unified).
fn attribute_before_verb(norms: &[&str], start: usize) -> Option<(usize, Vec<String>)> {
    let window = norms.len().min(start + 8);
    let (verb, contracted) =
        match (start..window).find(|&index| matches!(norms[index], "is" | "are")) {
            Some(index) => (index, false),
            None => (
                (start..window)
                    .rev()
                    .find(|&index| norms[index].ends_with("'s"))?,
                true,
            ),
        };
    let mut attribute: Vec<String> = norms[start..verb]
        .iter()
        .map(|word| (*word).to_string())
        .collect();
    if contracted {
        attribute.push(norms[verb].to_string());
    }
    if attribute.is_empty() {
        return None;
    }
    let attribute: Vec<String> = attribute
        .iter()
        .map(|word| unify_spelling(strip_possessive(word)))
        .filter(|word| !word.is_empty())
        .collect();
    // "my go-to drink", "my preferred drink" name the favorite ("my preferred name" does
    // not: it is the name).
    let attribute = attribute
        .iter()
        .enumerate()
        .map(|(index, word)| {
            let next = attribute.get(index + 1).map_or("", String::as_str);
            let favorite = matches!(word.as_str(), "go-to" | "goto")
                || (word == "preferred" && !matches!(next, "name" | "pronouns" | "title" | ""));
            if favorite {
                "favorite".to_owned()
            } else {
                word.clone()
            }
        })
        .collect();
    Some((verb, attribute))
}

/// The kind and slot words of "my <attribute> is <value>": a preference for a favorite
/// ("my (least) favorite (kind of) colors" -> `favorite_color`), otherwise a fact when the
/// attribute is a known noun or the value (its first `value_len` words) names something.
/// `None` for a description ("my car is broken").
fn attribute_slot_words(
    attribute: &[String],
    value: &ClauseView,
    value_len: usize,
) -> Option<(FactType, Vec<String>)> {
    let favorite = attribute.iter().position(|word| word == "favorite");
    match favorite {
        Some(position)
            if attribute[..position]
                .iter()
                .all(|word| FAVORITE_MODIFIERS.contains(&word.as_str()) || word == "least") =>
        {
            Some((
                FactType::Preference,
                favorite_slot_words(attribute, position),
            ))
        }
        Some(_) => Some((FactType::Fact, attribute.to_vec())),
        None => {
            let head = attribute.last().map_or("", String::as_str);
            let article = usize::from(matches!(
                value.core.first().map(|w| w.norm),
                Some("a" | "an" | "the")
            ));
            let names_something = value_len <= 4 + article && value.capitalized_at(article);
            // One word with a digit is a number or a code ("my room is 414", "my desk is
            // 4B"): a value, as a capitalized name is.
            let is_code = value_len == 1 + article
                && value
                    .core
                    .get(article)
                    .is_some_and(|word| word.norm.chars().any(|c| c.is_ascii_digit()));
            if !ATTRIBUTE_NOUNS.contains(&head) && !names_something && !is_code {
                return None;
            }
            Some((FactType::Fact, attribute.to_vec()))
        }
    }
}

/// The slot words of a favorite whose "favorite" is attribute word `position`: "least"
/// kept, "kind of" dropped, the last word singular.
fn favorite_slot_words(attribute: &[String], position: usize) -> Vec<String> {
    let least = attribute[..position].iter().any(|word| word == "least");
    let mut rest: Vec<String> = attribute[position + 1..].to_vec();
    let kinds = ["kind", "type", "sort", "genre", "style"];
    if rest.len() > 2 && kinds.contains(&rest[0].as_str()) && rest[1] == "of" {
        rest.drain(..2);
    }
    if let Some(last) = rest.last_mut() {
        *last = singular(last);
    }
    let mut words = Vec::new();
    if least {
        words.push("least".to_string());
    }
    words.push("favorite".to_string());
    words.extend(rest);
    words
}
