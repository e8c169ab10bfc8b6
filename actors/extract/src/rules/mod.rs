//! The built-in rule-based English fact extractor, used when no LLM is configured.
//!
//! [`extract`] splits what the user said into sentences and each sentence into clauses
//! ("I live in Lisbon and I work at Acme" is two), then matches a small set of hand-written
//! patterns on lower-cased words (contractions expanded, typographic apostrophes folded).
//! No regular expressions: every pattern is a few lines of word matching on a
//! [`Cursor`](clause::Cursor).
//!
//! # Pipeline, per sentence
//!
//! 1. Questions (ending in `?`) are skipped.
//! 2. Time phrases are found first ([`Phrase`]): validity ("until Friday", "for the next
//!    3 days"), current periods ("today", "this week"), events ("yesterday", "last
//!    Monday", "on 3 March 2026") and fillers ("now", "currently", "anymore"). They are
//!    removed from the words patterns see, so values never contain them.
//! 3. Each clause is matched against the patterns; a match gives typed facts with slots.
//! 4. A sentence (or a part of it) that matches nothing is still kept, as an unslotted
//!    episode when it carries a time, otherwise as an unslotted fact.
//!
//! The slot policy (which statements replace which) is documented in `docs/extraction.md`;
//! the rule is that two statements share a slot only when the newer one genuinely replaces
//! the older one.
//!
//! # Layout
//!
//! - `sentence`: sentence splitting, tokens, normalized words and contractions.
//! - `time`: time phrases ([`Phrase`], [`Period`](time::Period), [`When`]) and calendar
//!   arithmetic.
//! - `clause`: clause splitting and the [`ClauseView`] patterns match on, with its
//!   [`Cursor`](clause::Cursor).
//! - `patterns`: one file per pattern family ("I am ...", "my X is Y", likes, where the
//!   user lives and works).
//! - `slot`, `text`: building slots, cutting values and writing texts.
//! - `lexicon`: the word lists, apart from the grammar.
//! - `tests`: the case tables, one file per pattern family.

mod clause;
mod lexicon;
mod patterns;
mod sentence;
mod slot;
mod text;
mod time;

#[cfg(test)]
mod tests;

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use crate::{normalize_value, ExtractedFact, FactType};
use clause::{split_clauses, Clause, ClauseView};
use patterns::Found;
use sentence::{is_question, split_sentences, Sentence};
use time::{end_of_day, find_phrases, phrases_between, Phrase, TimeContext, When};

/// Splits `content` into sentences and extracts the facts it understands. `now` anchors
/// relative dates ("yesterday", "until Friday", "for 2 weeks"); all dates are UTC.
pub fn extract(content: &str, now: DateTime<Utc>) -> Vec<ExtractedFact> {
    let mut out = Output::default();
    for sentence in split_sentences(content) {
        extract_sentence(sentence, now, &mut out);
    }
    out.facts
}

/// Collects facts, dropping repeats within one call: a fact whose words (compared as
/// [`normalize_value`] compares them) equal an earlier fact's says the same thing. The
/// extractor gives different facts different texts, so nothing else is dropped.
#[derive(Default)]
struct Output {
    facts: Vec<ExtractedFact>,
    seen: HashSet<String>,
}

impl Output {
    fn push(&mut self, fact: ExtractedFact) {
        if self.seen.insert(normalize_value(&fact.text)) {
            self.facts.push(fact);
        }
    }
}

/// Extracts the facts of one sentence: each clause's from the patterns, then the whole
/// sentence when some of it matched nothing.
fn extract_sentence(raw: &str, now: DateTime<Utc>, out: &mut Output) {
    let trimmed = raw.trim();
    if trimmed.is_empty() || is_question(trimmed) {
        return;
    }
    let sentence = Sentence::new(trimmed);
    if sentence.words.is_empty() {
        return;
    }
    let norms: Vec<&str> = sentence
        .words
        .iter()
        .map(|word| word.norm.as_str())
        .collect();
    let context = TimeContext::new(now, &norms);
    let phrases = find_phrases(&sentence, &norms, &context);
    let phrase_of = phrase_of_words(&phrases, norms.len());
    let in_phrase: Vec<bool> = phrase_of.iter().map(Option::is_some).collect();
    let clauses = split_clauses(&sentence, &norms, &in_phrase);

    // A validity stated anywhere in the sentence applies to all of its facts.
    let sentence_until = validity_of(&phrases);

    let mut matched_any = false;
    let mut unmatched_content = false;
    for clause in &clauses {
        let view = ClauseView::new(&sentence, &norms, &phrases, &phrase_of, *clause);
        let found = view.match_patterns();
        if found.is_empty() {
            unmatched_content |= view.has_content();
            continue;
        }
        let clause_phrases = phrases_between(&phrases, clause.start, clause.end);
        if !stands_alone(&found, clause_phrases, &context, clauses.len()) {
            unmatched_content = true;
            continue;
        }
        matched_any = true;
        for found in found {
            out.push(clause_fact(&view, clause_phrases, found, sentence_until));
        }
    }
    if matched_any && !unmatched_content {
        return;
    }
    // Nothing (or not everything) understood: keep the whole sentence.
    let whole = Clause {
        start: 0,
        end: norms.len(),
        implicit_i: false,
    };
    let view = ClauseView::new(&sentence, &norms, &phrases, &phrase_of, whole);
    if let Some(fact) = whole_sentence_fact(&view, &phrases, sentence_until) {
        out.push(fact);
    }
}

/// For each word, the number of the time phrase it belongs to, if any.
fn phrase_of_words(phrases: &[Phrase], words: usize) -> Vec<Option<usize>> {
    let mut phrase_of: Vec<Option<usize>> = vec![None; words];
    for (number, phrase) in phrases.iter().enumerate() {
        for slot in &mut phrase_of[phrase.start..phrase.end] {
            *slot = Some(number);
        }
    }
    phrase_of
}

/// The end of the first validity ("until Friday") among `phrases`.
fn validity_of(phrases: &[Phrase]) -> Option<DateTime<Utc>> {
    phrases.iter().find_map(|phrase| match &phrase.when {
        When::Until { at, .. } => Some(*at),
        _ => None,
    })
}

/// Whether a clause's matches can be stored as they are; otherwise the whole sentence is
/// kept instead.
fn stands_alone(
    found: &[Found],
    clause_phrases: &[Phrase],
    context: &TimeContext,
    clause_count: usize,
) -> bool {
    let plans_ahead = clause_phrases.iter().any(|phrase| match phrase.when {
        When::Event(period) => period.first_day().is_some_and(|day| day > context.today),
        _ => false,
    });
    if plans_ahead
        && !found
            .iter()
            .all(|found| found.value_has_dates || found.dates_are_value)
    {
        // "I'm in Paris tomorrow": a plan, not a current fact.
        return false;
    }
    if clause_count > 1
        && found
            .iter()
            .any(|found| found.slot.is_none() && found.bounded_slot.is_none())
    {
        // "... and I love it": without a slot, a part needs its whole sentence.
        return false;
    }
    true
}

/// The fact of one pattern match: its text (time phrases resolved), value and validity.
fn clause_fact(
    view: &ClauseView,
    clause_phrases: &[Phrase],
    found: Found,
    sentence_until: Option<DateTime<Utc>>,
) -> ExtractedFact {
    let current = clause_phrases.iter().find_map(|phrase| match phrase.when {
        When::Current(period) if found.temporary => period.last_day().and_then(end_of_day),
        _ => None,
    });
    let clause_until = validity_of(clause_phrases);
    let valid_until = if found.dates_are_value {
        None // "postponed until March 10" says when, not until when
    } else {
        clause_until.or(sentence_until).or(current)
    };
    let slot = found.slot_for(valid_until.is_some());
    let text = match found.text {
        Some(text) => text,
        None => view.text(|phrase| match phrase.when {
            // "My birthday is March 3" keeps its date as said; "... is tomorrow"
            // still gets the day it means.
            When::Event(_) if found.value_has_dates => {
                let relative = matches!(
                    view.norms[phrase.start],
                    "yesterday" | "tomorrow" | "today" | "tonight" | "next" | "last" | "this"
                );
                relative.then(|| phrase.note(false)).flatten()
            }
            When::Current(_) => phrase.note(found.temporary),
            _ => phrase.note(false),
        }),
    };
    // An unslotted fact's value is its text.
    let value = if found.value.is_empty() || slot.is_none() {
        text.clone()
    } else {
        found.value
    };
    ExtractedFact {
        kind: found.kind,
        text,
        slot,
        value,
        valid_until,
    }
}

/// The whole sentence as an unslotted fact: an episode when it is dated, otherwise a fact
/// (valid until the sentence's validity). `None` when it says nothing.
fn whole_sentence_fact(
    view: &ClauseView,
    phrases: &[Phrase],
    sentence_until: Option<DateTime<Utc>>,
) -> Option<ExtractedFact> {
    if !view.has_content() {
        return None;
    }
    let text = view.text(|phrase| phrase.note(false));
    if text.chars().count() < 3 || !text.chars().any(char::is_alphabetic) {
        return None;
    }
    let dated = phrases
        .iter()
        .any(|phrase| matches!(phrase.when, When::Event(_) | When::Current(_)));
    let (kind, valid_until) = if dated {
        (FactType::Episode, None)
    } else {
        (FactType::Fact, sentence_until)
    };
    Some(ExtractedFact {
        kind,
        value: text.clone(),
        text,
        slot: None,
        valid_until,
    })
}
