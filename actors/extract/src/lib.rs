//! Fact extraction: turning what a user said into atomic, typed facts.
//!
//! - [`rules`]: the built-in rule-based extractor for common English, used when no LLM is
//!   configured (the embedded default).
//! - [`llm`]: extraction through an OpenAI-compatible LLM (JSON output, validated).
//!
//! Both produce [`ExtractedFact`]s. A fact with a `slot` is a value of that slot: a newer
//! current fact on the same slot with a different value supersedes the older one.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub mod llm;
pub mod rules;

/// The kind of an extracted fact; stored as the memory's `category`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FactType {
    /// A stable statement about the world or the user ("My sister lives in Porto").
    Fact,
    /// A like, dislike or preference ("I prefer tea").
    Preference,
    /// Something that happened at a time ("Yesterday I ran 10 km").
    Episode,
}

impl FactType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fact => "fact",
            Self::Preference => "preference",
            Self::Episode => "episode",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "fact" => Some(Self::Fact),
            "preference" => Some(Self::Preference),
            "episode" => Some(Self::Episode),
            _ => None,
        }
    }
}

/// One atomic fact, ready to be stored as a memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtractedFact {
    #[serde(rename = "type")]
    pub kind: FactType,
    /// The memory's text: one self-contained sentence ("My favorite color is blue.").
    pub text: String,
    /// Normalized `subject/attribute` (see [`normalize_slot`]), e.g. `user/favorite_color`;
    /// `None` for facts that never replace another (most episodes).
    pub slot: Option<String>,
    /// The slot's value, normalized for comparison by [`normalize_value`] when compared.
    pub value: String,
    /// When the fact stops being true, if it is time-bound.
    pub valid_until: Option<DateTime<Utc>>,
}

/// `subject/attribute` in lower case, each part reduced to `[a-z0-9_]` words joined by
/// `_`; `None` when either part is empty after that.
pub fn normalize_slot(subject: &str, attribute: &str) -> Option<String> {
    let subject = slot_part(subject)?;
    let attribute = slot_part(attribute)?;
    Some(format!("{subject}/{attribute}"))
}

/// Accepts an already-joined `subject/attribute` (as an LLM returns it) and normalizes it.
pub fn parse_slot(raw: &str) -> Option<String> {
    let (subject, attribute) = raw.split_once('/')?;
    normalize_slot(subject, attribute)
}

fn slot_part(raw: &str) -> Option<String> {
    let words: Vec<String> = raw
        .split(|character: char| !character.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect();
    (!words.is_empty()).then(|| words.join("_"))
}

/// A value as compared between facts: lower case, words separated by single spaces,
/// surrounding punctuation dropped. "Blue." and "blue" are the same value.
pub fn normalize_value(raw: &str) -> String {
    raw.split(|character: char| !character.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_and_values_normalize() {
        assert_eq!(
            normalize_slot("User", "Favorite color").as_deref(),
            Some("user/favorite_color")
        );
        assert_eq!(
            parse_slot("user / home-city").as_deref(),
            Some("user/home_city")
        );
        assert_eq!(parse_slot("nouser"), None);
        assert_eq!(normalize_slot("user", "  "), None);
        assert_eq!(normalize_value(" Blue. "), "blue");
        assert_eq!(normalize_value("New  York!"), "new york");
    }
}
