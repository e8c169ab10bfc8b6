//! Clauses: splitting a sentence into the parts matched on their own, and the
//! [`ClauseView`] patterns see (time phrases and fillers removed), with a [`Cursor`] over
//! its words and the helpers that cut values and write texts.

use super::lexicon::{
    ADVERBS, COMMA_FILLERS, CONTINUING_VERBS, FIXED_PAIRS, FUNCTION_WORDS, LEADING_FILLERS,
    SMALL_TALK, SUBJECTS,
};
use super::sentence::Sentence;
use super::slot::strip_possessive;
use super::text::{finish_sentence, is_lower_i, trim_value};
use super::time::{phrases_between, Phrase};

/// A part of a sentence matched on its own: words `start..end`; `implicit_i` when the
/// clause continues the previous one's "I" ("I live in Lisbon and work at Acme").
#[derive(Debug, Clone, Copy)]
pub(super) struct Clause {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) implicit_i: bool,
}

/// Number of leading filler words in `words[start..end]`.
fn leading_fillers(sentence: &Sentence, norms: &[&str], start: usize, end: usize) -> usize {
    let mut index = start;
    'outer: while index < end {
        if !norms[index].chars().any(char::is_alphanumeric) {
            index += 1;
            continue;
        }
        for filler in LEADING_FILLERS {
            let stop = index + filler.len();
            if stop <= end && norms[index..stop] == **filler {
                index = stop;
                continue 'outer;
            }
        }
        if COMMA_FILLERS.contains(&norms[index]) && sentence.ends_with_comma(index) {
            index += 1;
            continue;
        }
        break;
    }
    index - start
}

/// Splits a sentence into clauses at "and"/"but" or a comma followed by "I", "my" or "we",
/// when the clause before also starts with one of them ("I'm 34, I live in Lisbon"), and at
/// "and"/"but" followed by a verb continuing an "I" clause ("... and work at Acme").
pub(super) fn split_clauses(
    sentence: &Sentence,
    norms: &[&str],
    in_phrase: &[bool],
) -> Vec<Clause> {
    let mut clauses = Vec::new();
    let mut start = 0;
    let mut implicit_i = false;
    let mut subject = clause_opener(sentence, norms, in_phrase, 0);
    for index in 1..norms.len() {
        if implicit_i {
            subject = "i";
        }
        if !matches!(subject, "i" | "my" | "we") || in_phrase[index] || index <= start {
            continue;
        }
        let starter = matches!(norms[index], "i" | "my" | "we");
        let conjunction = matches!(norms[index - 1], "and" | "but") && index - 1 > start;
        let continuing = || {
            subject == "i"
                && norms[index..]
                    .iter()
                    .take(4)
                    .find(|word| !ADVERBS.contains(word))
                    .is_some_and(|verb| CONTINUING_VERBS.contains(verb))
        };
        let comma = sentence.ends_with_comma(index - 1) && index - start >= 2;
        if conjunction && (starter || continuing()) {
            clauses.push(Clause {
                start,
                end: index - 1,
                implicit_i,
            });
            implicit_i = !starter;
        } else if comma && starter {
            clauses.push(Clause {
                start,
                end: index,
                implicit_i,
            });
            implicit_i = false;
        } else {
            continue;
        }
        start = index;
        subject = clause_opener(sentence, norms, in_phrase, index);
    }
    clauses.push(Clause {
        start,
        end: norms.len(),
        implicit_i,
    });
    clauses
}

/// The first word of the clause starting at `start` that is neither a filler nor part of
/// a time phrase.
fn clause_opener<'n>(
    sentence: &Sentence,
    norms: &[&'n str],
    in_phrase: &[bool],
    start: usize,
) -> &'n str {
    let first = start + leading_fillers(sentence, norms, start, norms.len());
    (first..norms.len())
        .find(|&index| !in_phrase[index])
        .map_or("", |index| norms[index])
}

/// One word a pattern sees: its norm and its index in the sentence (`None` for the implied
/// "I" of a continuing clause).
#[derive(Clone, Copy)]
pub(super) struct CoreWord<'s> {
    pub(super) norm: &'s str,
    pub(super) word: Option<usize>,
}

/// A clause as patterns see it: time phrases and leading fillers removed.
pub(super) struct ClauseView<'s, 'a> {
    pub(super) sentence: &'s Sentence<'a>,
    pub(super) norms: &'s [&'s str],
    pub(super) phrases: &'s [Phrase],
    pub(super) phrase_of: &'s [Option<usize>],
    pub(super) clause: Clause,
    /// First word of the clause's text (after leading fillers).
    pub(super) text_start: usize,
    pub(super) core: Vec<CoreWord<'s>>,
}

/// A cursor over a clause's core words.
#[derive(Clone)]
pub(super) struct Cursor<'c> {
    words: &'c [&'c str],
    pub(super) pos: usize,
}

impl<'c> Cursor<'c> {
    pub(super) fn new(words: &'c [&'c str]) -> Self {
        Self { words, pos: 0 }
    }

    pub(super) fn peek(&self) -> &'c str {
        self.peek_at(0)
    }

    pub(super) fn peek_at(&self, offset: usize) -> &'c str {
        self.words.get(self.pos + offset).copied().unwrap_or("")
    }

    pub(super) fn next(&mut self) -> &'c str {
        let word = self.peek();
        if self.pos < self.words.len() {
            self.pos += 1;
        }
        word
    }

    pub(super) fn eat(&mut self, word: &str) -> bool {
        let found = self.peek() == word && self.pos < self.words.len();
        if found {
            self.pos += 1;
        }
        found
    }

    pub(super) fn eat_seq(&mut self, sequence: &[&str]) -> bool {
        let stop = self.pos + sequence.len();
        let found = stop <= self.words.len() && self.words[self.pos..stop] == *sequence;
        if found {
            self.pos = stop;
        }
        found
    }

    pub(super) fn eat_any(&mut self, options: &[&'static str]) -> Option<&'c str> {
        let word = self.peek();
        (self.pos < self.words.len() && options.contains(&word)).then(|| self.next())
    }

    pub(super) fn skip(&mut self, set: &[&str]) {
        while self.pos < self.words.len() && set.iter().any(|word| *word == self.peek()) {
            self.pos += 1;
        }
    }

    /// "not", "no longer", "never".
    pub(super) fn eat_negation(&mut self) -> bool {
        self.eat("not") || self.eat_seq(&["no", "longer"]) || self.eat("never")
    }

    pub(super) fn rest_len(&self) -> usize {
        self.words.len().saturating_sub(self.pos)
    }
}

impl<'s, 'a> ClauseView<'s, 'a> {
    pub(super) fn new(
        sentence: &'s Sentence<'a>,
        norms: &'s [&'s str],
        phrases: &'s [Phrase],
        phrase_of: &'s [Option<usize>],
        clause: Clause,
    ) -> Self {
        let text_start = clause.start + leading_fillers(sentence, norms, clause.start, clause.end);
        let mut core: Vec<CoreWord<'s>> = Vec::new();
        if clause.implicit_i {
            core.push(CoreWord {
                norm: "i",
                word: None,
            });
        }
        core.extend(
            (text_start..clause.end)
                .filter(|&index| phrase_of[index].is_none())
                .filter(|&index| norms[index].chars().any(char::is_alphanumeric))
                .map(|index| CoreWord {
                    norm: norms[index],
                    word: Some(index),
                }),
        );
        // Fillers after a leading time phrase ("Yesterday, actually, I ...").
        let core_norms: Vec<&str> = core.iter().map(|word| word.norm).collect();
        let mut skip = 0;
        'outer: while skip < core_norms.len() {
            for filler in LEADING_FILLERS {
                let stop = skip + filler.len();
                if stop <= core_norms.len() && core_norms[skip..stop] == **filler {
                    skip = stop;
                    continue 'outer;
                }
            }
            break;
        }
        core.drain(..skip);
        Self {
            sentence,
            norms,
            phrases,
            phrase_of,
            clause,
            text_start,
            core,
        }
    }

    /// Whether the clause says anything beyond fillers, time words, small talk and bare
    /// function words ("I'm.", "I like.").
    pub(super) fn has_content(&self) -> bool {
        self.core.iter().any(|word| {
            word.word.is_some()
                && !SMALL_TALK.contains(&word.norm)
                && !FUNCTION_WORDS.contains(&word.norm)
        })
    }

    /// The clause's text from its first non-filler word, with `note` written after each
    /// time phrase ("Yesterday (2026-11-22) I ran 10 km.").
    pub(super) fn text(&self, note: impl Fn(&Phrase) -> Option<String>) -> String {
        let end = self.clause.end;
        if self.text_start >= end {
            return String::new();
        }
        let mut notes: Vec<(usize, String)> = Vec::new();
        for phrase in phrases_between(self.phrases, self.text_start, end) {
            if let Some(text) = note(phrase) {
                notes.push((self.sentence.words[phrase.end - 1].token, text));
            }
        }
        let first_token = self.sentence.words[self.text_start].token;
        let last_token = self.sentence.words[end - 1].token;
        let mut text = String::new();
        if self.clause.implicit_i {
            text.push('I');
        }
        for token_index in first_token..=last_token {
            let token = &self.sentence.tokens[token_index];
            if !text.is_empty() {
                text.push(' ');
            }
            let mut written = token.text.to_string();
            if is_lower_i(&written) {
                // "i'm" -> "I'm"
                written.replace_range(0..1, "I");
            }
            match notes.iter().find(|(token, _)| *token == token_index) {
                Some((_, note)) => {
                    let split = token.core_len.min(written.len());
                    let (core, rest) = written.split_at(split);
                    text.push_str(core);
                    text.push_str(" (");
                    text.push_str(note);
                    text.push(')');
                    text.push_str(rest);
                }
                None => text.push_str(&written),
            }
        }
        finish_sentence(&text)
    }

    /// The original text of core words `range`, trimmed of surrounding punctuation.
    pub(super) fn value(&self, range: std::ops::Range<usize>) -> String {
        let mut tokens: Vec<usize> = Vec::new();
        for word in &self.core[range] {
            if let Some(index) = word.word {
                let token = self.sentence.words[index].token;
                if tokens.last() != Some(&token) {
                    tokens.push(token);
                }
            }
        }
        let joined = tokens
            .iter()
            .map(|&token| self.sentence.tokens[token].text)
            .collect::<Vec<_>>()
            .join(" ");
        trim_value(&joined).to_string()
    }

    /// The end of a value starting at core word `start`: the first tail word, or a comma
    /// followed by a lower-case word ("Lisbon, which ..."), or the clause end.
    pub(super) fn value_end(&self, start: usize, tails: &[&str]) -> usize {
        self.value_end_at(start, tails, true)
    }

    /// [`Self::value_end`], optionally keeping commas (in lists: "tea, coffee and juice").
    pub(super) fn value_end_at(&self, start: usize, tails: &[&str], cut_at_comma: bool) -> usize {
        for index in start..self.core.len() {
            if index > start {
                if tails.contains(&self.core[index].norm) {
                    return index;
                }
                // "John and he works at IBM": a new clause about someone else.
                let next = self.core.get(index + 1).map_or("", |word| word.norm);
                if matches!(self.core[index].norm, "and" | "but" | "or") && SUBJECTS.contains(&next)
                {
                    return index;
                }
                if !cut_at_comma {
                    continue;
                }
                let previous = self.core[index - 1].word;
                if let (Some(previous), Some(current)) = (previous, self.core[index].word) {
                    if self.sentence.ends_with_comma(previous)
                        && !self.sentence.is_capitalized(current)
                    {
                        return index;
                    }
                }
            }
        }
        self.core.len()
    }

    /// A value starting at core word `start`, cut at `tails`: `None` when empty.
    pub(super) fn value_from(&self, start: usize, tails: &[&str]) -> Option<String> {
        let end = self.value_end(start, tails);
        let value = self.value(start..end);
        (!value.is_empty() && value.chars().any(char::is_alphanumeric)).then_some(value)
    }

    pub(super) fn norms_of(&self) -> Vec<&'s str> {
        self.core.iter().map(|word| word.norm).collect()
    }

    pub(super) fn capitalized_at(&self, core_index: usize) -> bool {
        self.core
            .get(core_index)
            .and_then(|word| word.word)
            .is_some_and(|word| self.sentence.is_capitalized(word))
    }

    /// Splits core words `start..end` into list items at commas, "and", "or", "&"
    /// ("tea, coffee and juice"), unless an item would be long (prose) or the whole is a
    /// fixed expression ("fish and chips").
    pub(super) fn list_items(&self, start: usize, end: usize) -> Vec<(usize, usize)> {
        let whole = vec![(start, end)];
        if end <= start {
            return whole;
        }
        let norms = self.norms_of();
        let joined = norms[start..end].join(" ");
        if FIXED_PAIRS.iter().any(|pair| joined.contains(pair)) {
            return whole;
        }
        let mut items = Vec::new();
        let mut item_start = start;
        for (index, word) in self.core.iter().enumerate().take(end).skip(start) {
            let separator = matches!(word.norm, "and" | "or" | "&" | "nor");
            let comma = word
                .word
                .is_some_and(|word| self.sentence.ends_with_comma(word));
            if separator {
                if index > item_start {
                    items.push((item_start, index));
                }
                item_start = index + 1;
            } else if comma {
                items.push((item_start, index + 1));
                item_start = index + 1;
            }
        }
        if item_start < end {
            items.push((item_start, end));
        }
        let prose = items.iter().any(|(a, b)| b - a > 4) || items.len() > 8;
        if items.len() < 2 || prose {
            return whole;
        }
        items
    }

    /// The text of one list item: the clause up to the list, then the item ("I really
    /// love tea." from "I really love tea and coffee.").
    pub(super) fn item_text(
        &self,
        list_start: usize,
        item_start: usize,
        item_end: usize,
    ) -> String {
        let prefix = self.tokens_before(list_start);
        let item = self.value(item_start..item_end);
        finish_sentence(&format!("{prefix} {item}"))
    }

    /// The clause's text up to core word `stop` ("I work for Acme" from "I work for Acme
    /// as an engineer").
    pub(super) fn text_before(&self, stop: usize) -> String {
        finish_sentence(&self.tokens_before(stop))
    }

    /// The clause's tokens from its text start up to (not including) core word `stop`.
    fn tokens_before(&self, stop: usize) -> String {
        let mut text = String::new();
        if self.clause.implicit_i {
            text.push('I');
        }
        let Some(first) = self
            .sentence
            .words
            .get(self.text_start)
            .map(|word| word.token)
        else {
            return text;
        };
        let stop_token = self
            .core
            .get(stop)
            .and_then(|word| word.word)
            .map_or(self.sentence.tokens.len(), |word| {
                self.sentence.words[word].token
            });
        for token in first..stop_token {
            if !text.is_empty() {
                text.push(' ');
            }
            let mut written = self.sentence.tokens[token].text.to_string();
            if is_lower_i(&written) {
                written.replace_range(0..1, "I");
            }
            text.push_str(&written);
        }
        text
    }

    /// Core words `start..end` as slot words: lower case, articles ("a", "an", "the"),
    /// possessive endings and a leading "some"/"my" dropped.
    pub(super) fn slot_words(&self, start: usize, end: usize) -> Vec<String> {
        let end = end.min(self.core.len());
        if start >= end {
            return Vec::new();
        }
        let mut words: Vec<String> = self.core[start..end]
            .iter()
            .map(|word| strip_possessive(word.norm).to_string())
            .filter(|word| !word.is_empty() && !matches!(word.as_str(), "a" | "an" | "the"))
            .collect();
        while words
            .first()
            .is_some_and(|word| matches!(word.as_str(), "some" | "my"))
        {
            words.remove(0);
        }
        words
    }
}
