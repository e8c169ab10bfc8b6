//! Likes and dislikes: "I like X", "I don't like X", "I prefer X over Y", "I'm into X".

use super::Found;
use crate::rules::clause::{ClauseView, Cursor};
use crate::rules::lexicon::{OBJECT_FILLERS, OBJECT_TAILS, PRONOUNS};
use crate::rules::slot::user_slot_prefixed;
use crate::FactType;

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
        }
        self.preference_object(start, false, value)
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
        let mut end = self.value_end_at(start, OBJECT_TAILS, false);
        // Drop trailing fillers ("tea a lot", "coffee too").
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
