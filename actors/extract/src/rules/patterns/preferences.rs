//! Likes and dislikes: "I like X", "I don't like X", "I prefer X over Y", "I'm into X".

use super::Found;
use crate::rules::clause::{ClauseView, Cursor};
use crate::rules::lexicon::{
    ADVERBS, OBJECT_FILLERS, OBJECT_TAILS, PREFERENCE_CATEGORIES, PREFERENCE_LEAD_WORDS, PRONOUNS,
    SUBJECTS,
};
use crate::rules::slot::{singular, unify_spelling, user_slot, user_slot_prefixed};
use crate::FactType;

/// The category a preferred thing belongs to ("green tea" -> `drink`, "window seats" ->
/// `seat`): the whole thing or its head noun, singular, in [`PREFERENCE_CATEGORIES`].
pub(in crate::rules) fn preference_category(words: &[String]) -> Option<&'static str> {
    let (last, rest) = words.split_last()?;
    let head = singular(last);
    let mut whole: Vec<&str> = rest.iter().map(String::as_str).collect();
    whole.push(&head);
    let whole = whole.join(" ");
    let lookup = |thing: &str| {
        PREFERENCE_CATEGORIES
            .iter()
            .find(|(_, things)| things.contains(&thing))
            .map(|(category, _)| *category)
    };
    lookup(&whole)
        .or_else(|| lookup(last))
        .or_else(|| lookup(&head))
}

impl<'s, 'a> ClauseView<'s, 'a> {
    /// "I like X", "I don't like X", "I prefer X over Y", "I can't stand X".
    pub(super) fn preference(&self, mut cursor: Cursor, verb: &str, negated: bool) -> Vec<Found> {
        let value = match (verb, negated) {
            ("like" | "enjoy", false) => "likes",
            ("love" | "adore", false) => "loves",
            ("prefer", false) => "prefers",
            ("like" | "love" | "enjoy" | "adore", true) => "dislikes",
            ("dislike", false) => "dislikes",
            ("hate" | "detest" | "loathe" | "stand", false) => "hates",
            _ => return Vec::new(),
        };
        cursor.eat("to"); // "I like to run"
        let start = cursor.pos;
        if verb == "prefer" {
            if let Some(found) = self.comparison(start) {
                return found;
            }
            if let Some(found) = self.preferred_choice(start) {
                return found;
            }
        }
        self.preference_object(start, false, value)
    }

    /// After "I would": "I'd rather have coffee", "I would prefer tea (to coffee)". "I'd
    /// rather not" says nothing to keep.
    pub(super) fn would_rather(&self, mut cursor: Cursor) -> Vec<Found> {
        cursor.skip(ADVERBS);
        if !(cursor.eat("rather") || cursor.eat("prefer")) {
            return Vec::new();
        }
        cursor.skip(ADVERBS);
        if cursor.eat_negation() {
            return Vec::new();
        }
        // "I'd rather have tea than coffee": the verb is not part of either thing.
        cursor.skip(PREFERENCE_LEAD_WORDS);
        self.preference(cursor, "prefer", false)
    }

    /// After "I (have) switched": "(over) (from tea) to coffee": the new favorite of the
    /// thing's category; nothing for a thing of no known category ("switched to Linux").
    pub(super) fn switched(&self, mut cursor: Cursor) -> Vec<Found> {
        cursor.eat("over");
        if cursor.eat("from") {
            while cursor.rest_len() > 0 && cursor.peek() != "to" {
                cursor.next();
            }
        }
        if !cursor.eat("to") {
            return Vec::new();
        }
        self.preferred_choice(cursor.pos).unwrap_or_default()
    }

    /// "Coffee is my favorite drink", "coffee is my drink of choice", "coffee is my go-to
    /// drink": the favorite of that kind (`user/favorite_drink`), said the other way round.
    pub(super) fn favorite_said_backwards(&self, norms: &[&str]) -> Vec<Found> {
        let Some(verb) =
            (1..norms.len().min(6)).find(|&index| matches!(norms[index], "is" | "are"))
        else {
            return Vec::new();
        };
        if norms.get(verb + 1) != Some(&"my") || SUBJECTS.contains(&norms[0]) {
            return Vec::new();
        }
        let rest = &norms[verb + 2..];
        let kind: &[&str] = match rest {
            [lead, kind @ ..]
                if matches!(*lead, "favorite" | "favourite" | "go-to" | "preferred") =>
            {
                kind
            }
            [kind @ .., "of", "choice"] => kind,
            _ => return Vec::new(),
        };
        if kind.is_empty() || kind.len() > 3 || PRONOUNS.contains(&norms[0]) {
            return Vec::new();
        }
        let mut words = vec!["favorite".to_owned()];
        words.extend(kind.iter().map(|word| unify_spelling(word)));
        if let Some(last) = words.last_mut() {
            *last = singular(last);
        }
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let value = self.value(0..verb);
        if value.is_empty() {
            return Vec::new();
        }
        vec![Found::new(FactType::Preference, user_slot(&words), value)]
    }

    /// "I'm more of a coffee person": the favorite of the thing's category.
    pub(super) fn kind_of_person(&self, start: usize) -> Option<Vec<Found>> {
        let norms = self.norms_of();
        let person = (start..norms.len().min(start + 4))
            .find(|&index| matches!(norms[index], "person" | "guy" | "girl" | "gal" | "people"))?;
        let words = self.slot_words(start, person);
        let category = preference_category(&words)?;
        let value = self.value(start..person);
        Some(vec![Found::new(
            FactType::Preference,
            user_slot(&["favorite", category]),
            value,
        )])
    }

    /// A bare "I prefer X" (no comparison) where X has a category: the favorite of that
    /// category (`user/favorite_drink` = tea), so "I prefer coffee" later replaces it.
    /// `None` for a list or a thing of no known category.
    fn preferred_choice(&self, start: usize) -> Option<Vec<Found>> {
        let norms = self.norms_of();
        let mut start = start;
        while start < norms.len() && PREFERENCE_LEAD_WORDS.contains(&norms[start]) {
            start += 1;
        }
        let end = self.object_end(start);
        if end <= start || self.list_items(start, end).len() > 1 {
            return None;
        }
        let words = self.slot_words(start, end);
        if words.is_empty() || words.len() > 4 {
            return None;
        }
        let category = preference_category(&words)?;
        let value = self.value(start..end);
        Some(vec![Found::new(
            FactType::Preference,
            user_slot(&["favorite", category]),
            value,
        )])
    }

    /// The end of a liked object at core word `start`: its tail words and trailing
    /// fillers ("tea a lot", "coffee too") cut off.
    fn object_end(&self, start: usize) -> usize {
        let mut end = self.value_end_at(start, OBJECT_TAILS, false);
        let norms = self.norms_of();
        'trim: loop {
            for filler in OBJECT_FILLERS {
                if end > start + filler.len() && norms[end - filler.len()..end] == **filler {
                    end -= filler.len();
                    continue 'trim;
                }
            }
            break;
        }
        end
    }

    /// "I prefer tea over/to/rather than coffee": one slot per pair, whichever order it is
    /// said in, valued with the preferred one.
    fn comparison(&self, start: usize) -> Option<Vec<Found>> {
        let norms = self.norms_of();
        let end = self.value_end(start, OBJECT_TAILS);
        let mut split = None;
        for index in start + 1..end {
            let previous = norms[index - 1];
            // "going to the beach" is not "going" compared to "the beach".
            let motion = previous.ends_with("ing")
                || matches!(
                    previous,
                    "go" | "come"
                        | "listen"
                        | "talk"
                        | "travel"
                        | "walk"
                        | "drive"
                        | "fly"
                        | "run"
                        | "cycle"
                        | "move"
                        | "get"
                        | "commute"
                        | "ride"
                        | "swim"
                );
            let size = match (norms[index], norms.get(index + 1).copied().unwrap_or("")) {
                ("to", _) if motion => continue,
                ("over" | "to" | "than", _) => 1,
                ("rather" | "more", "than") | ("instead", "of") => 2,
                _ => continue,
            };
            split = Some((index, index + size));
            break;
        }
        let (middle, other_start) = split?;
        let preferred = self.slot_words(start, middle);
        let other = self.slot_words(other_start, end);
        if preferred.is_empty() || other.is_empty() || preferred.len() > 5 || other.len() > 5 {
            return None;
        }
        let (first, second) = if preferred.join(" ") <= other.join(" ") {
            (&preferred, &other)
        } else {
            (&other, &preferred)
        };
        let mut words: Vec<String> = first.clone();
        words.push("or".to_string());
        words.extend(second.iter().cloned());
        let slot = user_slot_prefixed("prefers", &words);
        let value = self.value(start..middle);
        Some(vec![Found::new(FactType::Preference, slot, value)])
    }

    /// A liked or disliked object at core word `start`, split into list items; one slot
    /// per item (`user/likes_<item>`), valued with the attitude.
    pub(super) fn preference_object(
        &self,
        start: usize,
        negated: bool,
        attitude: &str,
    ) -> Vec<Found> {
        let attitude = match (attitude, negated) {
            (_, true) => "dislikes",
            (attitude, false) => attitude,
        };
        let first = self.core.get(start).map_or("", |word| word.norm);
        if first.is_empty() {
            return Vec::new();
        }
        if PRONOUNS.contains(&first) {
            // "I hate it when people are late": a preference, but of nothing nameable.
            return vec![Found::new(FactType::Preference, None, String::new())];
        }
        let end = self.object_end(start);
        let items = self.list_items(start, end);
        let several = items.len() > 1;
        items
            .into_iter()
            .map(|(item_start, item_end)| {
                let words = self.slot_words(item_start, item_end);
                let slot = if words.len() <= 5 {
                    user_slot_prefixed("likes", &words)
                } else {
                    None
                };
                let mut found = Found::new(FactType::Preference, slot, attitude.to_string());
                if several {
                    found.text = Some(self.item_text(start, item_start, item_end));
                }
                found
            })
            .collect()
    }
}
