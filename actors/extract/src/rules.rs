//! The built-in rule-based English fact extractor, used when no LLM is configured.
//!
//! [`extract`] splits what the user said into sentences and each sentence into clauses
//! ("I live in Lisbon and I work at Acme" is two), then matches a small set of hand-written
//! patterns on lower-cased words (contractions expanded, typographic apostrophes folded).
//! No regular expressions: every pattern is a few lines of word matching on a [`Cursor`].
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

use std::collections::HashSet;

use chrono::{DateTime, Datelike, Days, Months, NaiveDate, TimeDelta, Timelike, Utc, Weekday};

use super::{normalize_slot, normalize_value, ExtractedFact, FactType};

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

// ---------------------------------------------------------------------------------------
// Sentences
// ---------------------------------------------------------------------------------------

/// Words that end with a dot without ending a sentence ("Dr. Smith", "e.g. tea").
const ABBREVIATIONS: &[&str] = &[
    "dr", "mr", "mrs", "ms", "mx", "prof", "st", "jr", "sr", "vs", "e.g", "i.e", "eg", "ie",
    "approx", "a.m", "p.m", "fig", "mt", "ft",
];

/// Splits on `. ! ? ;`, newlines (and their CJK forms), keeping the terminator with its
/// sentence. A dot inside a number ("3.5"), a word ("example.com", "e.g.") or after a
/// common abbreviation ("Dr.") does not end a sentence.
fn split_sentences(content: &str) -> Vec<&str> {
    let mut sentences = Vec::new();
    let mut start = 0;
    let mut chars = content.char_indices().peekable();
    while let Some((position, character)) = chars.next() {
        let ends = match character {
            '!' | '?' | ';' | '\n' | '\r' | '。' | '！' | '？' | '；' | '…' => true,
            '.' => dot_ends_sentence(content, start, position),
            _ => false,
        };
        if !ends {
            continue;
        }
        let mut end = position + character.len_utf8();
        if !matches!(character, '\n' | '\r') {
            // Keep "?!", "..." and closing quotes or brackets with the sentence.
            while let Some(&(next_position, next)) = chars.peek() {
                if !matches!(
                    next,
                    '.' | '!' | '?' | '…' | '"' | '\'' | ')' | ']' | '”' | '’' | '»'
                ) {
                    break;
                }
                end = next_position + next.len_utf8();
                chars.next();
            }
        }
        sentences.push(&content[start..end]);
        start = end;
    }
    if start < content.len() {
        sentences.push(&content[start..]);
    }
    sentences
}

/// Whether the dot at byte `position` (a one-byte character) ends the sentence that
/// started at byte `start`.
fn dot_ends_sentence(content: &str, start: usize, position: usize) -> bool {
    let after = content[position + 1..].chars().next();
    if after.is_some_and(char::is_alphanumeric) {
        return false; // "3.5", "e.g", "example.com"
    }
    // The word before the dot, if short enough to be an abbreviation.
    let mut word = String::new();
    for character in content[start..position].chars().rev() {
        if character.is_whitespace() || character == '(' || character == '"' {
            break;
        }
        if word.chars().count() >= 8 {
            return true;
        }
        word.insert(0, character);
    }
    let lower = word.to_lowercase();
    if ABBREVIATIONS.contains(&lower.as_str()) {
        return false;
    }
    // A single capital letter is an initial ("J. K. Rowling").
    let mut letters = word.chars();
    !matches!((letters.next(), letters.next()), (Some(initial), None) if initial.is_uppercase())
}

/// The terminator at the end of a trimmed sentence contains a question mark.
fn is_question(sentence: &str) -> bool {
    sentence
        .chars()
        .rev()
        .take_while(|character| {
            matches!(
                character,
                '?' | '？' | '!' | '.' | '…' | '"' | '\'' | ')' | ']' | '”' | '’' | '»'
            )
        })
        .any(|character| matches!(character, '?' | '？'))
}

// ---------------------------------------------------------------------------------------
// Tokens and words
// ---------------------------------------------------------------------------------------

/// A whitespace-separated piece of the sentence, in its original casing.
struct Token<'a> {
    text: &'a str,
    /// Length of `text` without its trailing punctuation ("Lisbon," -> 6).
    core_len: usize,
}

/// A normalized word; contractions become several words of the same token.
struct Word {
    norm: String,
    token: usize,
}

struct Sentence<'a> {
    tokens: Vec<Token<'a>>,
    words: Vec<Word>,
}

impl<'a> Sentence<'a> {
    fn new(text: &'a str) -> Self {
        let tokens: Vec<Token<'a>> = text
            .split_whitespace()
            .map(|token| Token {
                text: token,
                core_len: token.trim_end_matches(|c: char| !c.is_alphanumeric()).len(),
            })
            .collect();
        let mut words = Vec::new();
        for (index, token) in tokens.iter().enumerate() {
            let norm = normalize_word(token.text);
            match expand_contraction(&norm) {
                Some(parts) => words.extend(parts.iter().map(|part| Word {
                    norm: (*part).to_string(),
                    token: index,
                })),
                None => words.push(Word { norm, token: index }),
            }
        }
        Self { tokens, words }
    }

    fn token_of(&self, word: usize) -> &Token<'a> {
        &self.tokens[self.words[word].token]
    }

    /// The word's token starts with an upper-case letter in the original text.
    fn is_capitalized(&self, word: usize) -> bool {
        self.token_of(word)
            .text
            .trim_start_matches(|c: char| !c.is_alphanumeric())
            .chars()
            .next()
            .is_some_and(char::is_uppercase)
    }

    /// The word's token is followed by a comma ("Lisbon,").
    fn ends_with_comma(&self, word: usize) -> bool {
        let token = self.words[word].token;
        let last_of_token = self
            .words
            .get(word + 1)
            .is_none_or(|next| next.token != token);
        last_of_token && self.tokens[token].text.ends_with(',')
    }
}

/// Lower case, typographic apostrophes folded to `'`, surrounding punctuation dropped
/// ("I’m" -> "i'm", "Lisbon." -> "lisbon"). A token of punctuation only stays as it is.
fn normalize_word(raw: &str) -> String {
    let folded: String = raw
        .chars()
        .map(|character| match character {
            '’' | '‘' | 'ʼ' | '`' | '´' | '′' => '\'',
            other => other,
        })
        .flat_map(char::to_lowercase)
        .collect();
    let trimmed = folded.trim_matches(|c: char| !c.is_alphanumeric());
    if trimmed.is_empty() {
        folded
    } else {
        trimmed.to_string()
    }
}

fn expand_contraction(norm: &str) -> Option<&'static [&'static str]> {
    Some(match norm {
        "i'm" | "im" => &["i", "am"],
        "i've" | "ive" => &["i", "have"],
        "i'd" => &["i", "would"],
        "i'll" => &["i", "will"],
        "we're" => &["we", "are"],
        "we've" => &["we", "have"],
        "we'll" => &["we", "will"],
        "don't" | "dont" => &["do", "not"],
        "doesn't" | "doesnt" => &["does", "not"],
        "didn't" | "didnt" => &["did", "not"],
        "can't" | "cant" | "cannot" => &["can", "not"],
        "won't" | "wont" => &["will", "not"],
        "isn't" | "isnt" => &["is", "not"],
        "aren't" | "arent" => &["are", "not"],
        "wasn't" | "wasnt" => &["was", "not"],
        "weren't" => &["were", "not"],
        "haven't" | "havent" => &["have", "not"],
        "hasn't" => &["has", "not"],
        "hadn't" => &["had", "not"],
        "wouldn't" => &["would", "not"],
        "shouldn't" => &["should", "not"],
        "couldn't" => &["could", "not"],
        "ain't" => &["am", "not"],
        "it's" => &["it", "is"],
        "that's" => &["that", "is"],
        "there's" => &["there", "is"],
        "gonna" => &["going", "to"],
        "wanna" => &["want", "to"],
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------
// Time phrases
// ---------------------------------------------------------------------------------------

/// A calendar period a time phrase refers to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Period {
    Day(NaiveDate),
    /// The ISO week starting on this Monday.
    Week(NaiveDate),
    /// The weekend starting on this Saturday.
    Weekend(NaiveDate),
    Month(i32, u32),
    Year(i32),
}

impl Period {
    fn first_day(self) -> Option<NaiveDate> {
        match self {
            Self::Day(day) | Self::Week(day) | Self::Weekend(day) => Some(day),
            Self::Month(year, month) => NaiveDate::from_ymd_opt(year, month, 1),
            Self::Year(year) => NaiveDate::from_ymd_opt(year, 1, 1),
        }
    }

    fn last_day(self) -> Option<NaiveDate> {
        match self {
            Self::Day(day) => Some(day),
            Self::Week(monday) => monday.checked_add_days(Days::new(6)),
            Self::Weekend(saturday) => saturday.checked_add_days(Days::new(1)),
            Self::Month(year, month) => last_day_of_month(year, month),
            Self::Year(year) => NaiveDate::from_ymd_opt(year, 12, 31),
        }
    }

    /// How the period is written into a memory's text: "2026-11-22", "week of 2026-11-16",
    /// "October 2026", "2025".
    fn label(self) -> String {
        match self {
            Self::Day(day) => iso(day),
            Self::Week(monday) => format!("week of {}", iso(monday)),
            Self::Weekend(saturday) => format!("weekend of {}", iso(saturday)),
            Self::Month(year, month) => {
                let name = MONTHS.get(month as usize - 1).map_or("", |names| names[0]);
                let mut name = name.to_string();
                if let Some(first) = name.get_mut(0..1) {
                    first.make_ascii_uppercase();
                }
                format!("{name} {year}")
            }
            Self::Year(year) => year.to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum When {
    /// When something happened or will happen ("yesterday", "on Monday", "next week").
    Event(Period),
    /// The current day, week, month or year ("today", "this week"): the validity of a
    /// temporary state ("I'm in Paris today"), otherwise the time of an event.
    Current(Period),
    /// The end of a statement's validity ("until Friday", "for the next 3 days"), with the
    /// note written into the text ("2026-11-27", "until 2026-11-26").
    Until { at: DateTime<Utc>, note: String },
    /// Words dropped from values but not meaning a time of their own ("now", "anymore",
    /// "since 2019", "for 5 years" in "I've lived here for 5 years").
    Filler,
}

#[derive(Debug, Clone)]
struct Phrase {
    /// Word range.
    start: usize,
    end: usize,
    when: When,
    /// Fully explicit (has a year): no resolved date is added to the text.
    explicit: bool,
}

impl Phrase {
    /// The resolved date written after the phrase in a memory's text, if any.
    fn note(&self, as_validity: bool) -> Option<String> {
        if self.explicit {
            return None;
        }
        match &self.when {
            When::Event(period) => Some(period.label()),
            When::Current(period @ Period::Day(_)) => Some(period.label()),
            When::Current(period) if as_validity => {
                period.last_day().map(|day| format!("until {}", iso(day)))
            }
            When::Current(period) => Some(period.label()),
            When::Until { note, .. } => Some(note.clone()),
            When::Filler => None,
        }
    }
}

/// What a sentence's tense says about bare dates ("on Monday": the past or next Monday).
struct Ctx {
    now: DateTime<Utc>,
    today: NaiveDate,
    /// The sentence talks about the future or the present tense ("will", "next", "I'm
    /// flying", "I have a ...", "my flight is on Friday") and no past tense.
    future: bool,
    /// The sentence is in a perfect tense ("I've lived here for 5 years"): a bare duration
    /// is how long something has lasted, not a validity.
    perfect: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Dir {
    /// Strictly before today.
    Past,
    /// Strictly after today.
    Future,
    /// Today or later.
    Upcoming,
}

const MONTHS: &[[&str; 2]] = &[
    ["january", "jan"],
    ["february", "feb"],
    ["march", "mar"],
    ["april", "apr"],
    ["may", "may"],
    ["june", "jun"],
    ["july", "jul"],
    ["august", "aug"],
    ["september", "sep"],
    ["october", "oct"],
    ["november", "nov"],
    ["december", "dec"],
];

const IRREGULAR_PAST: &[&str] = &[
    "was", "were", "had", "did", "went", "ran", "saw", "met", "ate", "drank", "bought", "got",
    "took", "made", "came", "left", "gave", "found", "told", "said", "felt", "flew", "drove",
    "won", "lost", "wrote", "began", "spent", "sent", "paid", "built", "caught", "thought",
    "brought", "sold", "slept", "swam", "sang", "wore", "rode", "fell", "forgot", "heard", "kept",
    "knew", "sat", "spoke", "stood", "taught", "threw", "woke", "broke", "chose", "grew", "became",
    "led", "held", "fought", "sought", "dug", "hung", "lit",
];

const PAST_PARTICIPLES: &[&str] = &[
    "been",
    "known",
    "had",
    "gone",
    "done",
    "seen",
    "taken",
    "eaten",
    "gotten",
    "got",
    "made",
    "grown",
    "kept",
    "run",
    "taught",
    "felt",
    "held",
    "left",
    "lost",
    "met",
    "paid",
    "slept",
    "spent",
    "stood",
    "thought",
    "understood",
    "won",
    "written",
    "become",
];

/// Words ending in "ed" that are not past tenses.
const NOT_PAST_ED: &[&str] = &[
    "need", "feed", "seed", "speed", "bed", "red", "shed", "breed", "bleed", "proceed", "succeed",
    "exceed", "indeed", "weed", "greed", "embed", "wed", "ted", "ned", "fred",
];

impl Ctx {
    fn new(now: DateTime<Utc>, norms: &[&str]) -> Self {
        let mut future = false;
        let mut past = false;
        let mut perfect = false;
        for (index, &word) in norms.iter().enumerate() {
            let previous = if index > 0 { norms[index - 1] } else { "" };
            let next = norms.get(index + 1).copied().unwrap_or("");
            match word {
                "will" | "shall" | "tomorrow" | "next" | "plan" | "plans" | "planning"
                | "scheduled" | "upcoming" | "soon" => future = true,
                "going" if next == "to" => future = true,
                "have" | "has" if matches!(next, "a" | "an" | "to") => future = true,
                // "My flight is on Friday": the present tense of a dated thing is ahead.
                "is" | "are" | "am" => future = true,
                _ => {}
            }
            if matches!(previous, "am" | "are" | "is") && word.len() > 4 && word.ends_with("ing") {
                future = true; // "I'm flying to Paris on Friday"
            }
            if IRREGULAR_PAST.contains(&word)
                || (word.len() >= 4
                    && word.ends_with("ed")
                    && !NOT_PAST_ED.contains(&word)
                    && !matches!(
                        previous,
                        "am" | "is"
                            | "are"
                            | "be"
                            | "been"
                            | "being"
                            | "get"
                            | "getting"
                            | "feel"
                            | "feeling"
                            | "so"
                            | "very"
                            | "really"
                            | "not"
                            | "a"
                            | "an"
                            | "the"
                            | "my"
                    ))
            {
                past = true;
            }
            if word == "been" {
                perfect = true;
            }
            if matches!(word, "have" | "has" | "had") {
                let participle = norms[index + 1..]
                    .iter()
                    .take(4)
                    .find(|&&next| !ADVERBS.contains(&next))
                    .copied()
                    .unwrap_or("");
                if participle.ends_with("ed") || PAST_PARTICIPLES.contains(&participle) {
                    perfect = true;
                }
            }
        }
        Self {
            now,
            today: now.date_naive(),
            future: future && !past,
            perfect,
        }
    }

    fn dir(&self) -> Dir {
        if self.future {
            Dir::Future
        } else {
            Dir::Past
        }
    }

    fn days_from_today(&self, days: i64) -> Option<NaiveDate> {
        if days >= 0 {
            self.today.checked_add_days(Days::new(days.unsigned_abs()))
        } else {
            self.today.checked_sub_days(Days::new(days.unsigned_abs()))
        }
    }
}

fn iso(day: NaiveDate) -> String {
    format!("{:04}-{:02}-{:02}", day.year(), day.month(), day.day())
}

fn end_of_day(day: NaiveDate) -> Option<DateTime<Utc>> {
    day.and_hms_opt(23, 59, 59).map(|time| time.and_utc())
}

fn last_day_of_month(year: i32, month: u32) -> Option<NaiveDate> {
    let (next_year, next_month) = if month == 12 {
        (year.checked_add(1)?, 1)
    } else {
        (year, month + 1)
    };
    NaiveDate::from_ymd_opt(next_year, next_month, 1)?.pred_opt()
}

fn monday_of(day: NaiveDate) -> Option<NaiveDate> {
    day.checked_sub_days(Days::new(u64::from(day.weekday().num_days_from_monday())))
}

fn weekday_of(word: &str) -> Option<Weekday> {
    Some(match word {
        "monday" => Weekday::Mon,
        "tuesday" => Weekday::Tue,
        "wednesday" => Weekday::Wed,
        "thursday" => Weekday::Thu,
        "friday" => Weekday::Fri,
        "saturday" => Weekday::Sat,
        "sunday" => Weekday::Sun,
        _ => return None,
    })
}

fn weekday_date(today: NaiveDate, weekday: Weekday, dir: Dir) -> Option<NaiveDate> {
    let target = i64::from(weekday.num_days_from_monday());
    let current = i64::from(today.weekday().num_days_from_monday());
    let ahead = (target - current).rem_euclid(7);
    let offset = match dir {
        Dir::Upcoming => ahead,
        Dir::Future if ahead == 0 => 7,
        Dir::Future => ahead,
        Dir::Past => {
            let back = (current - target).rem_euclid(7);
            -(if back == 0 { 7 } else { back })
        }
    };
    if offset >= 0 {
        today.checked_add_days(Days::new(offset.unsigned_abs()))
    } else {
        today.checked_sub_days(Days::new(offset.unsigned_abs()))
    }
}

/// "march" / "mar" -> 3. Abbreviations and the ambiguous "may" and "march" only when
/// `dated` (next to a day number) or, for full names, capitalized.
fn month_of(word: &str, abbreviation_ok: bool) -> Option<u32> {
    MONTHS
        .iter()
        .position(|names| word == names[0] || (abbreviation_ok && word == names[1]))
        .map(|index| index as u32 + 1)
}

/// "3", "03", "3rd", "21st" -> day of month.
fn day_number(word: &str) -> Option<u32> {
    let digits = word
        .strip_suffix("st")
        .or_else(|| word.strip_suffix("nd"))
        .or_else(|| word.strip_suffix("rd"))
        .or_else(|| word.strip_suffix("th"))
        .unwrap_or(word);
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let day: u32 = digits.parse().ok()?;
    (1..=31).contains(&day).then_some(day)
}

fn year_number(word: &str) -> Option<i32> {
    if word.len() != 4 || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let year: i32 = word.parse().ok()?;
    (1900..=2100).contains(&year).then_some(year)
}

/// "2026-03-03" or "2026/03/03".
fn iso_date(word: &str) -> Option<NaiveDate> {
    let mut parts = word.split(['-', '/']);
    let year = year_number(parts.next()?)?;
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    NaiveDate::from_ymd_opt(year, month, day)
}

/// Resolves a month and day without a year relative to today.
fn resolve_day_month(today: NaiveDate, month: u32, day: u32, dir: Dir) -> Option<NaiveDate> {
    let this_year = NaiveDate::from_ymd_opt(today.year(), month, day);
    let other = |delta: i32| NaiveDate::from_ymd_opt(today.year().checked_add(delta)?, month, day);
    match dir {
        Dir::Past => match this_year {
            Some(date) if date <= today => Some(date),
            _ => other(-1),
        },
        Dir::Future | Dir::Upcoming => match this_year {
            Some(date) if date >= today => Some(date),
            _ => other(1),
        },
    }
}

/// Resolves a month name without a year: `inclusive` lets the current month count.
fn resolve_month(today: NaiveDate, month: u32, dir: Dir, inclusive: bool) -> Period {
    let current = today.month();
    let year = today.year();
    let year = match dir {
        Dir::Past if month < current || (inclusive && month == current) => year,
        Dir::Past => year - 1,
        _ if month > current || (inclusive && month == current) => year,
        _ => year + 1,
    };
    Period::Month(year, month)
}

#[derive(Clone, Copy, PartialEq)]
enum Unit {
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

fn unit_of(word: &str) -> Option<Unit> {
    Some(match word {
        "minute" | "minutes" | "min" | "mins" => Unit::Minute,
        "hour" | "hours" | "hr" | "hrs" => Unit::Hour,
        "day" | "days" | "night" | "nights" => Unit::Day,
        "week" | "weeks" => Unit::Week,
        "fortnight" => return None,
        "month" | "months" => Unit::Month,
        "year" | "years" => Unit::Year,
        _ => return None,
    })
}

/// A small count at `index`: digits, "one" to "twelve", "a"/"an", "a couple of", "a few",
/// "several". Returns (words used, count).
fn count_at(norms: &[&str], index: usize) -> Option<(usize, u32)> {
    let word = *norms.get(index)?;
    let next = norms.get(index + 1).copied().unwrap_or("");
    let after = norms.get(index + 2).copied().unwrap_or("");
    let words = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    if let Some(count) = words.iter().position(|&name| name == word) {
        return Some((1, count as u32));
    }
    if !word.is_empty() && word.len() <= 5 && word.bytes().all(|b| b.is_ascii_digit()) {
        return Some((1, word.parse().ok()?));
    }
    match (word, next, after) {
        ("a", "couple", "of") => Some((3, 2)),
        ("a", "couple", _) | ("couple", "of", _) => Some((2, 2)),
        ("a", "few", _) => Some((2, 3)),
        ("few" | "several", _, _) => Some((1, 3)),
        ("a" | "an", _, _) => Some((1, 1)),
        _ => None,
    }
}

fn add_units(now: DateTime<Utc>, count: u32, unit: Unit) -> Option<DateTime<Utc>> {
    let count_i64 = i64::from(count);
    match unit {
        Unit::Minute => now.checked_add_signed(TimeDelta::try_minutes(count_i64)?),
        Unit::Hour => now.checked_add_signed(TimeDelta::try_hours(count_i64)?),
        Unit::Day => now.checked_add_signed(TimeDelta::try_days(count_i64)?),
        Unit::Week => now.checked_add_signed(TimeDelta::try_weeks(count_i64)?),
        Unit::Month => now.checked_add_months(Months::new(count)),
        Unit::Year => now.checked_add_months(Months::new(count.checked_mul(12)?)),
    }
}

/// A duration validity note: a date, or a date and time for durations under a day.
fn until_note(at: DateTime<Utc>, unit: Unit) -> String {
    if matches!(unit, Unit::Minute | Unit::Hour) {
        format!(
            "until {} {:02}:{:02} UTC",
            iso(at.date_naive()),
            at.hour(),
            at.minute()
        )
    } else {
        format!("until {}", iso(at.date_naive()))
    }
}

/// Finds the time phrases of a sentence, left to right, without overlaps.
fn find_phrases(sentence: &Sentence, norms: &[&str], ctx: &Ctx) -> Vec<Phrase> {
    let mut phrases = Vec::new();
    let mut index = 0;
    while index < norms.len() {
        match phrase_at(sentence, norms, index, ctx) {
            Some((len, when, explicit)) if len > 0 => {
                // A validity already over ("until yesterday") bounds nothing.
                let when = match when {
                    When::Until { at, .. } if at <= ctx.now => When::Filler,
                    other => other,
                };
                phrases.push(Phrase {
                    start: index,
                    end: index + len,
                    when,
                    explicit,
                });
                index += len;
            }
            _ => index += 1,
        }
    }
    phrases
}

/// A time phrase starting at word `index`: (words, meaning, explicit).
fn phrase_at(
    sentence: &Sentence,
    norms: &[&str],
    index: usize,
    ctx: &Ctx,
) -> Option<(usize, When, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    let today = ctx.today;
    match at(0) {
        "until" | "till" if at(1) == "further" && at(2) == "notice" => {
            Some((3, When::Filler, false))
        }
        "until" | "till" | "til" | "untill" | "through" | "thru" => {
            until_at(sentence, norms, index + 1, ctx)
                .map(|(len, when, explicit)| (len + 1, when, explicit))
        }
        "up" if matches!(at(1), "until" | "till") => until_at(sentence, norms, index + 2, ctx)
            .map(|(len, when, explicit)| (len + 2, when, explicit)),
        "for" | "over" | "during" => duration_at(norms, index, ctx),
        "since" => point_at(sentence, norms, index + 1, ctx, Dir::Past)
            .map(|(len, _, _)| (len + 1, When::Filler, false)),
        "as" if at(1) == "of" => {
            if at(2) == "now" {
                return Some((3, When::Filler, false));
            }
            point_at(sentence, norms, index + 2, ctx, Dir::Past)
                .map(|(len, _, _)| (len + 2, When::Filler, false))
        }
        "now" | "currently" | "actually" | "nowadays" | "anymore" | "presently" => {
            Some((1, When::Filler, false))
        }
        "right" if at(1) == "now" => Some((2, When::Filler, false)),
        "any" if at(1) == "more" => Some((2, When::Filler, false)),
        "these" if at(1) == "days" => Some((2, When::Filler, false)),
        "at" if at(1) == "present" => Some((2, When::Filler, false)),
        "at" if at(1) == "the" && at(2) == "moment" => Some((3, When::Filler, false)),
        "today" | "tonight" => Some((1, When::Current(Period::Day(today)), false)),
        "this" => match at(1) {
            "morning" | "afternoon" | "evening" => {
                Some((2, When::Current(Period::Day(today)), false))
            }
            "week" => Some((2, When::Current(Period::Week(monday_of(today)?)), false)),
            "weekend" => match today.weekday() {
                // During the weekend it is the current period; before it, a plan.
                Weekday::Sat => Some((2, When::Current(Period::Weekend(today)), false)),
                Weekday::Sun => Some((2, When::Current(Period::Weekend(today.pred_opt()?)), false)),
                _ => {
                    let saturday = weekday_date(today, Weekday::Sat, Dir::Upcoming)?;
                    Some((2, When::Event(Period::Weekend(saturday)), false))
                }
            },
            "month" => Some((
                2,
                When::Current(Period::Month(today.year(), today.month())),
                false,
            )),
            "year" => Some((2, When::Current(Period::Year(today.year())), false)),
            _ => point_at(sentence, norms, index, ctx, Dir::Upcoming)
                .map(|(len, period, explicit)| (len, When::Event(period), explicit)),
        },
        "last" if at(1) == "night" => {
            Some((2, When::Event(Period::Day(ctx.days_from_today(-1)?)), false))
        }
        "on" => {
            let (len, period, explicit) = point_at(sentence, norms, index + 1, ctx, ctx.dir())?;
            Some((len + 1, When::Event(period), explicit))
        }
        "in" => {
            // "in 2 weeks" (from now), "in March", "in 2020".
            if let Some((count_len, count)) = count_at(norms, index + 1) {
                if let Some(unit) = unit_of(at(1 + count_len)) {
                    let day = add_units(ctx.now, count, unit)?.date_naive();
                    return Some((2 + count_len, When::Event(Period::Day(day)), false));
                }
            }
            if let Some(year) = year_number(at(1)) {
                return Some((2, When::Event(Period::Year(year)), true));
            }
            let (len, period, explicit) = month_point(sentence, norms, index + 1, ctx, ctx.dir())?;
            Some((len + 1, When::Event(period), explicit))
        }
        _ => {
            // "3 days ago", "a week ago".
            if let Some((count_len, count)) = count_at(norms, index) {
                if let Some(unit) = unit_of(at(count_len)) {
                    if at(count_len + 1) == "ago" {
                        let period = ago(ctx, count, unit)?;
                        return Some((count_len + 2, When::Event(period), false));
                    }
                }
            }
            // Relative days, "last week", "next Monday", bare dates ("3 March 2026"); not a
            // bare "Monday", "March", "2020" or "the weekend" ("I love the weekend").
            let relative = matches!(at(0), "yesterday" | "tomorrow" | "last" | "next" | "past")
                || (at(0) == "the" && at(1) == "day" && matches!(at(2), "before" | "after"));
            let (len, period, explicit) = if relative {
                point_at(sentence, norms, index, ctx, ctx.dir())?
            } else {
                date_at(norms, index, ctx, ctx.dir())?
            };
            Some((len, When::Event(period), explicit))
        }
    }
}

/// The target of "until" / "till": the end of the named day or period.
fn until_at(
    sentence: &Sentence,
    norms: &[&str],
    index: usize,
    ctx: &Ctx,
) -> Option<(usize, When, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    let today = ctx.today;
    // "until 5pm", "until 17:30", "until noon": today, or tomorrow if already past.
    if let Some((len, hour, minute)) = time_of_day(norms, index) {
        let mut until = today.and_hms_opt(hour, minute, 0)?.and_utc();
        if until <= ctx.now {
            until = until.checked_add_signed(TimeDelta::try_days(1)?)?;
        }
        let note = until_note(until, Unit::Hour);
        let note = note.strip_prefix("until ").unwrap_or(&note).to_string();
        return Some((len, When::Until { at: until, note }, false));
    }
    // "until next week": until that period starts, i.e. the end of the current one.
    if at(0) == "next" {
        let current = match at(1) {
            "week" => Some(Period::Week(monday_of(today)?)),
            "month" => Some(Period::Month(today.year(), today.month())),
            "year" => Some(Period::Year(today.year())),
            _ => None,
        };
        if let Some(period) = current {
            let last = period.last_day()?;
            let until = When::Until {
                at: end_of_day(last)?,
                note: iso(last),
            };
            return Some((2, until, false));
        }
    }
    let (len, period, explicit) = point_at(sentence, norms, index, ctx, Dir::Upcoming)?;
    let last = period.last_day()?;
    let until = When::Until {
        at: end_of_day(last)?,
        note: iso(last),
    };
    Some((len, until, explicit))
}

/// A time of day: "5pm", "5 pm", "5:30pm", "17:00", "noon", "midnight" (23:59). Returns
/// (words, hour, minute).
fn time_of_day(norms: &[&str], index: usize) -> Option<(usize, u32, u32)> {
    let word = *norms.get(index)?;
    let next = norms.get(index + 1).copied().unwrap_or("");
    match word {
        "noon" | "midday" => return Some((1, 12, 0)),
        "midnight" => return Some((1, 23, 59)),
        _ => {}
    }
    let (clock, suffix, len) = if let Some(clock) = word.strip_suffix("pm") {
        (clock, "pm", 1)
    } else if let Some(clock) = word.strip_suffix("am") {
        (clock, "am", 1)
    } else if matches!(next, "pm" | "p.m" | "am" | "a.m") {
        (word, if next.starts_with('p') { "pm" } else { "am" }, 2)
    } else {
        (word, "", 1)
    };
    let (hour, minute) = match clock.split_once(':') {
        Some((hour, minute)) if minute.len() == 2 => (hour, minute),
        Some(_) => return None,
        None if !suffix.is_empty() => (clock, "00"),
        None => return None, // a bare number is not a time
    };
    if hour.is_empty() || hour.len() > 2 || !hour.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !minute.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hour: u32 = hour.parse().ok()?;
    let minute: u32 = minute.parse().ok()?;
    let hour = match suffix {
        "pm" if (1..12).contains(&hour) => hour + 12,
        "am" if hour == 12 => 0,
        "pm" | "am" if !(1..=12).contains(&hour) => return None,
        _ => hour,
    };
    (hour < 24 && minute < 60).then_some((len, hour, minute))
}

/// "for the next 3 days", "for 2 weeks", "for the next hour", "for the week", "for now".
fn duration_at(norms: &[&str], index: usize, ctx: &Ctx) -> Option<(usize, When, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    let today = ctx.today;
    let filler = |len: usize| Some((len, When::Filler, false));
    let until_end_of = |len: usize, period: Period| {
        let last = period.last_day()?;
        let until = When::Until {
            at: end_of_day(last)?,
            note: format!("until {}", iso(last)),
        };
        Some((len, until, false))
    };
    let mut offset = 1;
    let mut forward = false;
    match (at(1), at(2)) {
        ("now", _) if at(0) == "for" => return filler(2),
        ("the", "time") if at(3) == "being" => return filler(4),
        ("the", "day" | "night" | "evening") => return until_end_of(3, Period::Day(today)),
        ("the", "week") => return until_end_of(3, Period::Week(monday_of(today)?)),
        ("the", "weekend") => {
            let sunday = weekday_date(today, Weekday::Sun, Dir::Upcoming)?;
            return until_end_of(3, Period::Day(sunday));
        }
        ("the", "month") => return until_end_of(3, Period::Month(today.year(), today.month())),
        ("the", "year") => return until_end_of(3, Period::Year(today.year())),
        ("the", "rest") if at(3) == "of" && at(4) == "the" => {
            let period = match at(5) {
                "day" => Period::Day(today),
                "week" => Period::Week(monday_of(today)?),
                "month" => Period::Month(today.year(), today.month()),
                "year" => Period::Year(today.year()),
                _ => return None,
            };
            return until_end_of(6, period);
        }
        ("the", "next" | "coming" | "following") => {
            offset = 3;
            forward = true;
        }
        ("next" | "another", _) => {
            offset = 2;
            forward = true;
        }
        ("a", "while" | "bit") | ("ages" | "years" | "months" | "weeks" | "days" | "life", _)
            if at(0) == "for" =>
        {
            return filler(if at(1) == "a" { 3 } else { 2 });
        }
        ("a", "long") if matches!(at(3), "time" | "while") && at(0) == "for" => return filler(4),
        ("some", "time") if at(0) == "for" => return filler(3),
        _ => {}
    }
    if at(0) != "for" && !forward {
        return None; // "over" and "during" only as "over the next ..."
    }
    let (count_len, count) = match count_at(norms, index + offset) {
        Some(found) => found,
        // "for the next hour"
        None if forward => (0, 1),
        None => return None,
    };
    let unit = unit_of(at(offset + count_len))?;
    let len = offset + count_len + 1;
    if !forward && ctx.perfect {
        return filler(len);
    }
    let until = add_units(ctx.now, count, unit)?;
    Some((
        len,
        When::Until {
            at: until,
            note: until_note(until, unit),
        },
        false,
    ))
}

/// "3 days ago" -> the period it falls in.
fn ago(ctx: &Ctx, count: u32, unit: Unit) -> Option<Period> {
    let count_i64 = i64::from(count);
    Some(match unit {
        Unit::Minute | Unit::Hour => Period::Day(
            ctx.now
                .checked_sub_signed(match unit {
                    Unit::Minute => TimeDelta::try_minutes(count_i64)?,
                    _ => TimeDelta::try_hours(count_i64)?,
                })?
                .date_naive(),
        ),
        Unit::Day => Period::Day(ctx.days_from_today(-count_i64)?),
        Unit::Week => Period::Day(ctx.days_from_today(-count_i64.checked_mul(7)?)?),
        Unit::Month => {
            let day = ctx.today.checked_sub_months(Months::new(count))?;
            Period::Month(day.year(), day.month())
        }
        Unit::Year => Period::Year(ctx.today.year().checked_sub(i32::try_from(count).ok()?)?),
    })
}

/// A point in time: relative day words, "last/next/this ...", weekdays, dates, months,
/// years. `dir` resolves the ones without a year.
fn point_at(
    sentence: &Sentence,
    norms: &[&str],
    index: usize,
    ctx: &Ctx,
    dir: Dir,
) -> Option<(usize, Period, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    let today = ctx.today;
    let day = |offset: i64| ctx.days_from_today(offset).map(Period::Day);
    match at(0) {
        "today" | "tonight" => return Some((1, Period::Day(today), false)),
        "tomorrow" => return Some((1, day(1)?, false)),
        "yesterday" => return Some((1, day(-1)?, false)),
        "the" if at(1) == "day" && at(2) == "after" && at(3) == "tomorrow" => {
            return Some((4, day(2)?, false))
        }
        "the" if at(1) == "day" && at(2) == "before" && at(3) == "yesterday" => {
            return Some((4, day(-2)?, false))
        }
        "the" | "end" => {
            // "the end of the month", "end of (the) week"
            let skip = usize::from(at(0) == "the");
            if at(skip) == "end" && at(skip + 1) == "of" {
                let skip = skip + 2 + usize::from(matches!(at(skip + 2), "the" | "this"));
                let period = match at(skip) {
                    "day" => Period::Day(today),
                    "week" => Period::Week(monday_of(today)?),
                    "month" => Period::Month(today.year(), today.month()),
                    "year" => Period::Year(today.year()),
                    _ => return None,
                };
                return Some((skip + 1, Period::Day(period.last_day()?), false));
            }
            if at(0) == "the" && at(1) == "weekend" {
                let saturday = weekday_date(today, Weekday::Sat, Dir::Upcoming)?;
                return Some((2, Period::Weekend(saturday), false));
            }
            if at(0) == "the" {
                // "the 3rd of March", or "the 15th" of this month or the next.
                if let Some((len, period, explicit)) = date_at(norms, index + 1, ctx, dir) {
                    return Some((len + 1, period, explicit));
                }
                let day = day_number(at(1)).filter(|_| at(1).len() > 2 || at(1).ends_with("st"))?;
                let this_month = NaiveDate::from_ymd_opt(today.year(), today.month(), day);
                let next_month = || {
                    let first = NaiveDate::from_ymd_opt(today.year(), today.month(), 1)?;
                    let next = first.checked_add_months(Months::new(1))?;
                    NaiveDate::from_ymd_opt(next.year(), next.month(), day)
                };
                let previous_month = || {
                    let first = NaiveDate::from_ymd_opt(today.year(), today.month(), 1)?;
                    let previous = first.checked_sub_months(Months::new(1))?;
                    NaiveDate::from_ymd_opt(previous.year(), previous.month(), day)
                };
                let date = match (dir, this_month) {
                    (Dir::Past, Some(date)) if date < today => date,
                    (Dir::Past, _) => previous_month()?,
                    (_, Some(date)) if date >= today => date,
                    _ => next_month()?,
                };
                return Some((2, Period::Day(date), false));
            }
            return None;
        }
        "weekend" => {
            let saturday = weekday_date(today, Weekday::Sat, Dir::Upcoming)?;
            return Some((1, Period::Weekend(saturday), false));
        }
        "last" | "next" | "this" | "past" => {
            let step = if matches!(at(0), "last" | "past") {
                -1
            } else if at(0) == "next" {
                1
            } else {
                0
            };
            let this_monday = monday_of(today)?;
            let period = match at(1) {
                "week" => Period::Week(match step {
                    -1 => this_monday.checked_sub_days(Days::new(7))?,
                    1 => this_monday.checked_add_days(Days::new(7))?,
                    _ => this_monday,
                }),
                "weekend" => {
                    let saturday = this_monday.checked_add_days(Days::new(5))?;
                    Period::Weekend(match step {
                        -1 => saturday.checked_sub_days(Days::new(7))?,
                        1 => saturday.checked_add_days(Days::new(7))?,
                        _ => saturday,
                    })
                }
                "month" => {
                    let first = NaiveDate::from_ymd_opt(today.year(), today.month(), 1)?;
                    let month = match step {
                        -1 => first.checked_sub_months(Months::new(1))?,
                        1 => first.checked_add_months(Months::new(1))?,
                        _ => first,
                    };
                    Period::Month(month.year(), month.month())
                }
                "year" => Period::Year(today.year().checked_add(step)?),
                word => {
                    if let Some(weekday) = weekday_of(word) {
                        let dir = match step {
                            -1 => Dir::Past,
                            1 => Dir::Future,
                            _ => Dir::Upcoming,
                        };
                        Period::Day(weekday_date(today, weekday, dir)?)
                    } else if let Some(month) = month_of(word, false) {
                        match step {
                            -1 => resolve_month(today, month, Dir::Past, false),
                            1 => resolve_month(today, month, Dir::Future, false),
                            _ => resolve_month(today, month, Dir::Upcoming, true),
                        }
                    } else {
                        return None;
                    }
                }
            };
            return Some((2, period, false));
        }
        _ => {}
    }
    if let Some(weekday) = weekday_of(at(0)) {
        // "until Monday" said on a Monday means next Monday.
        let dir = if dir == Dir::Upcoming {
            Dir::Future
        } else {
            dir
        };
        return Some((1, Period::Day(weekday_date(today, weekday, dir)?), false));
    }
    if let Some(found) = date_at(norms, index, ctx, dir) {
        return Some(found);
    }
    if let Some(year) = year_number(at(0)) {
        return Some((1, Period::Year(year), true));
    }
    month_point(sentence, norms, index, ctx, dir)
}

/// A month name alone or with a year ("March", "March 2026"). "May" and "March" must be
/// capitalized to count (they are also a verb).
fn month_point(
    sentence: &Sentence,
    norms: &[&str],
    index: usize,
    ctx: &Ctx,
    dir: Dir,
) -> Option<(usize, Period, bool)> {
    let word = *norms.get(index)?;
    let month = month_of(word, false)?;
    if matches!(word, "may" | "march") && !sentence.is_capitalized(index) {
        return None;
    }
    if norms
        .get(index + 1)
        .is_some_and(|next| day_number(next).is_some())
    {
        return None; // a day that does not exist ("February 30"), not a month
    }
    if let Some(year) = norms.get(index + 1).and_then(|next| year_number(next)) {
        return Some((2, Period::Month(year, month), true));
    }
    let dir = if dir == Dir::Past {
        Dir::Past
    } else {
        Dir::Upcoming
    };
    Some((1, resolve_month(ctx.today, month, dir, true), false))
}

/// "2026-03-03", "3 March (2026)", "3rd of March", "March 3(rd)(, 2026)".
fn date_at(norms: &[&str], index: usize, ctx: &Ctx, dir: Dir) -> Option<(usize, Period, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    if let Some(date) = iso_date(at(0)) {
        return Some((1, Period::Day(date), true));
    }
    let (day, month, mut len) = if let Some(day) = day_number(at(0)) {
        let of = usize::from(at(1) == "of");
        (day, month_of(at(1 + of), true)?, 2 + of)
    } else {
        let month = month_of(at(0), true)?;
        (day_number(at(1))?, month, 2)
    };
    if let Some(year) = year_number(at(len)) {
        len += 1;
        return Some((
            len,
            Period::Day(NaiveDate::from_ymd_opt(year, month, day)?),
            true,
        ));
    }
    let date = resolve_day_month(ctx.today, month, day, dir)?;
    Some((len, Period::Day(date), false))
}

// ---------------------------------------------------------------------------------------
// Clauses
// ---------------------------------------------------------------------------------------

/// A part of a sentence matched on its own: words `start..end`; `implicit_i` when the
/// clause continues the previous one's "I" ("I live in Lisbon and work at Acme").
#[derive(Debug, Clone, Copy)]
struct Clause {
    start: usize,
    end: usize,
    implicit_i: bool,
}

/// Verbs that continue an "I ..." clause after "and"/"but" without repeating "I".
const CONTINUING_VERBS: &[&str] = &[
    "live",
    "work",
    "like",
    "love",
    "enjoy",
    "adore",
    "prefer",
    "hate",
    "dislike",
    "moved",
    "relocated",
    "do",
    "am",
];

/// Adverbs skipped between the subject and the verb ("I really like", "I just moved").
const ADVERBS: &[&str] = &[
    "really",
    "also",
    "just",
    "recently",
    "still",
    "truly",
    "definitely",
    "absolutely",
    "totally",
    "honestly",
    "genuinely",
    "personally",
    "usually",
    "generally",
    "mostly",
    "finally",
    "literally",
    "seriously",
    "especially",
    "particularly",
    "kinda",
    "kind",
    "sort",
    "of",
    "always",
    "officially",
    "already",
    "now",
    "currently",
    "actually",
    "so",
    "very",
    "quite",
    "pretty",
    "too",
];

/// Leading words dropped from a clause and its text ("Actually, ...", "By the way, ...").
const LEADING_FILLERS: &[&[&str]] = &[
    &["by", "the", "way"],
    &["just", "so", "you", "know"],
    &["for", "the", "record"],
    &["please", "remember", "that"],
    &["please", "remember"],
    &["remember", "that"],
    &["remember"],
    &["please", "note", "that"],
    &["note", "that"],
    &["fyi"],
    &["btw"],
    &["actually"],
    &["also"],
    &["and"],
    &["but"],
    &["so"],
    &["well"],
    &["oh"],
    &["anyway"],
    &["anyways"],
    &["honestly"],
    &["basically"],
    &["however"],
    &["plus"],
    &["then"],
    &["um"],
    &["uh"],
    &["hmm"],
];

/// Leading words dropped only when followed by a comma ("No, I live in Porto").
const COMMA_FILLERS: &[&str] = &[
    "no", "yes", "yeah", "yep", "ok", "okay", "hey", "hi", "hello", "right", "sure", "great",
    "cool", "alright",
];

/// Sentences made only of these are small talk, not memories.
const SMALL_TALK: &[&str] = &[
    "ok", "okay", "thanks", "thank", "you", "thx", "hi", "hello", "hey", "yes", "yeah", "yep",
    "no", "nope", "sure", "cool", "great", "nice", "bye", "goodbye", "lol", "hmm", "ah", "oh",
    "wow", "good", "fine", "alright", "right", "please", "sorry", "welcome", "morning", "night",
    "cheers", "awesome", "perfect", "got", "it", "indeed",
];

/// Words that say nothing on their own.
const FUNCTION_WORDS: &[&str] = &[
    "i", "am", "is", "are", "be", "you", "it", "me", "my", "we", "he", "she", "they", "like",
    "love", "have", "has", "do", "does", "not", "the", "a", "an", "and", "or", "to", "of", "in",
    "on", "at", "so", "too", "also", "just", "that", "this", "was", "were",
];

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
fn split_clauses(sentence: &Sentence, norms: &[&str], in_phrase: &[bool]) -> Vec<Clause> {
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

// ---------------------------------------------------------------------------------------
// Sentence driver
// ---------------------------------------------------------------------------------------

/// A fact found by a pattern in one clause.
struct Found {
    kind: FactType,
    slot: Option<String>,
    value: String,
    /// Replaces the clause's text (one item of a list: "I like tea." from "I like tea and
    /// coffee.").
    text: Option<String>,
    /// A state that "today" / "this week" can bound ("I'm in Paris today").
    temporary: bool,
    /// The value itself holds a date ("My birthday is on March 3"): dates are kept as said.
    value_has_dates: bool,
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
    let ctx = Ctx::new(now, &norms);
    let phrases = find_phrases(&sentence, &norms, &ctx);
    let mut phrase_of: Vec<Option<usize>> = vec![None; norms.len()];
    for (number, phrase) in phrases.iter().enumerate() {
        for slot in &mut phrase_of[phrase.start..phrase.end] {
            *slot = Some(number);
        }
    }
    let in_phrase: Vec<bool> = phrase_of.iter().map(Option::is_some).collect();
    let clauses = split_clauses(&sentence, &norms, &in_phrase);

    // A validity stated anywhere in the sentence applies to all of its facts.
    let sentence_until = phrases.iter().find_map(|phrase| match &phrase.when {
        When::Until { at, .. } => Some(*at),
        _ => None,
    });

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
        let plans_ahead = clause_phrases.iter().any(|phrase| match phrase.when {
            When::Event(period) => period.first_day().is_some_and(|day| day > ctx.today),
            _ => false,
        });
        if plans_ahead && !found.iter().all(|found| found.value_has_dates) {
            // "I'm in Paris tomorrow": a plan, not a current fact.
            unmatched_content = true;
            continue;
        }
        if clauses.len() > 1 && found.iter().any(|found| found.slot.is_none()) {
            // "... and I love it": without a slot, a part needs its whole sentence.
            unmatched_content = true;
            continue;
        }
        matched_any = true;
        for found in found {
            let current = clause_phrases.iter().find_map(|phrase| match phrase.when {
                When::Current(period) if found.temporary => period.last_day().and_then(end_of_day),
                _ => None,
            });
            let clause_until = clause_phrases.iter().find_map(|phrase| match &phrase.when {
                When::Until { at, .. } => Some(*at),
                _ => None,
            });
            let valid_until = clause_until.or(sentence_until).or(current);
            let text = match found.text {
                Some(text) => text,
                None => view.text(|phrase| match phrase.when {
                    // "My birthday is March 3" keeps its date as said; "... is tomorrow"
                    // still gets the day it means.
                    When::Event(_) if found.value_has_dates => {
                        let relative = matches!(
                            norms[phrase.start],
                            "yesterday"
                                | "tomorrow"
                                | "today"
                                | "tonight"
                                | "next"
                                | "last"
                                | "this"
                        );
                        relative.then(|| phrase.note(false)).flatten()
                    }
                    When::Current(_) => phrase.note(found.temporary),
                    _ => phrase.note(false),
                }),
            };
            // An unslotted fact's value is its text.
            let value = if found.value.is_empty() || found.slot.is_none() {
                text.clone()
            } else {
                found.value
            };
            out.push(ExtractedFact {
                kind: found.kind,
                text,
                slot: found.slot,
                value,
                valid_until,
            });
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
    if !view.has_content() {
        return;
    }
    let text = view.text(|phrase| phrase.note(false));
    if text.chars().count() < 3 || !text.chars().any(char::is_alphabetic) {
        return;
    }
    let dated = phrases
        .iter()
        .any(|phrase| matches!(phrase.when, When::Event(_) | When::Current(_)));
    let (kind, valid_until) = if dated {
        (FactType::Episode, None)
    } else {
        (FactType::Fact, sentence_until)
    };
    out.push(ExtractedFact {
        kind,
        value: text.clone(),
        text,
        slot: None,
        valid_until,
    });
}

/// The phrases (sorted, not overlapping) that start in words `start..end`.
fn phrases_between(phrases: &[Phrase], start: usize, end: usize) -> &[Phrase] {
    let low = phrases.partition_point(|phrase| phrase.start < start);
    let high = phrases.partition_point(|phrase| phrase.start < end);
    &phrases[low..high.max(low)]
}

// ---------------------------------------------------------------------------------------
// Matching a clause
// ---------------------------------------------------------------------------------------

/// One word a pattern sees: its norm and its index in the sentence (`None` for the implied
/// "I" of a continuing clause).
#[derive(Clone, Copy)]
struct CoreWord<'s> {
    norm: &'s str,
    word: Option<usize>,
}

/// A clause as patterns see it: time phrases and leading fillers removed.
struct ClauseView<'s, 'a> {
    sentence: &'s Sentence<'a>,
    norms: &'s [&'s str],
    phrases: &'s [Phrase],
    phrase_of: &'s [Option<usize>],
    clause: Clause,
    /// First word of the clause's text (after leading fillers).
    text_start: usize,
    core: Vec<CoreWord<'s>>,
}

/// A cursor over a clause's core words.
struct Cursor<'c> {
    words: &'c [&'c str],
    pos: usize,
}

impl<'c> Cursor<'c> {
    fn new(words: &'c [&'c str]) -> Self {
        Self { words, pos: 0 }
    }

    fn peek(&self) -> &'c str {
        self.peek_at(0)
    }

    fn peek_at(&self, offset: usize) -> &'c str {
        self.words.get(self.pos + offset).copied().unwrap_or("")
    }

    fn next(&mut self) -> &'c str {
        let word = self.peek();
        if self.pos < self.words.len() {
            self.pos += 1;
        }
        word
    }

    fn eat(&mut self, word: &str) -> bool {
        let found = self.peek() == word && self.pos < self.words.len();
        if found {
            self.pos += 1;
        }
        found
    }

    fn eat_seq(&mut self, sequence: &[&str]) -> bool {
        let stop = self.pos + sequence.len();
        let found = stop <= self.words.len() && self.words[self.pos..stop] == *sequence;
        if found {
            self.pos = stop;
        }
        found
    }

    fn eat_any(&mut self, options: &[&'static str]) -> Option<&'c str> {
        let word = self.peek();
        (self.pos < self.words.len() && options.contains(&word)).then(|| self.next())
    }

    fn skip(&mut self, set: &[&str]) {
        while self.pos < self.words.len() && set.iter().any(|word| *word == self.peek()) {
            self.pos += 1;
        }
    }

    /// "not", "no longer", "never".
    fn eat_negation(&mut self) -> bool {
        self.eat("not") || self.eat_seq(&["no", "longer"]) || self.eat("never")
    }

    fn rest_len(&self) -> usize {
        self.words.len().saturating_sub(self.pos)
    }
}

/// Subjects that start a new clause after "and"/"but" inside a value.
const SUBJECTS: &[&str] = &[
    "i", "he", "she", "they", "we", "it", "you", "my", "his", "her", "their", "our", "your",
    "there", "that", "this",
];

/// Words that end a value ("Lisbon because ..." -> "Lisbon").
const COMMON_TAILS: &[&str] = &[
    "since", "because", "but", "although", "though", "while", "which", "who", "whom", "whose",
    "unless", "whereas", "cause", "cos", "coz",
];
const PLACE_TAILS: &[&str] = &["with", "where", "when", "for", "as", "and", "so"];
const EMPLOYER_TAILS: &[&str] = &["with", "where", "when", "as", "in", "for", "so", "and"];
const OCCUPATION_TAILS: &[&str] = &[
    "at", "for", "in", "with", "where", "when", "by", "from", "so", "and", "on",
];
const OBJECT_TAILS: &[&str] = &[
    "when",
    "so",
    "e.g",
    "i.e",
    "eg",
    "ie",
    "including",
    "especially",
    "particularly",
];

/// Words after which a liked object is really a clause ("I like it when ...").
const PRONOUNS: &[&str] = &[
    "it",
    "that",
    "this",
    "them",
    "him",
    "her",
    "you",
    "me",
    "us",
    "those",
    "these",
    "what",
    "when",
    "how",
    "if",
    "everything",
    "nothing",
    "anything",
    "something",
    "everyone",
    "everybody",
    "nobody",
    "someone",
    "somebody",
    "whatever",
    "here",
    "there",
    "myself",
];

/// Trailing words of a liked object that are not part of it ("tea a lot").
const OBJECT_FILLERS: &[&[&str]] = &[
    &["a", "lot"],
    &["very", "much"],
    &["so", "much"],
    &["too"],
    &["as", "well"],
    &["either"],
    &["also"],
    &["the", "most"],
    &["a", "bit"],
    &["a", "little"],
    &["more"],
    &["best"],
];

/// Fixed expressions that a list split must not break.
const FIXED_PAIRS: &[&str] = &[
    "rock and roll",
    "mac and cheese",
    "fish and chips",
    "salt and pepper",
    "bread and butter",
    "drum and bass",
    "r and b",
    "peanut butter and jelly",
    "pros and cons",
    "black and white",
    "sweet and sour",
    "rhythm and blues",
    "dungeons and dragons",
    "law and order",
    "pride and prejudice",
    "war and peace",
];

/// Head nouns of an occupation ("I'm a software engineer", "I work as a nurse").
const JOBS: &[&str] = &[
    "teacher",
    "professor",
    "lecturer",
    "tutor",
    "engineer",
    "developer",
    "programmer",
    "coder",
    "designer",
    "architect",
    "doctor",
    "physician",
    "surgeon",
    "dentist",
    "nurse",
    "pharmacist",
    "therapist",
    "psychologist",
    "psychiatrist",
    "veterinarian",
    "vet",
    "lawyer",
    "attorney",
    "solicitor",
    "judge",
    "accountant",
    "analyst",
    "consultant",
    "manager",
    "director",
    "executive",
    "ceo",
    "cto",
    "cfo",
    "coo",
    "founder",
    "cofounder",
    "co-founder",
    "entrepreneur",
    "scientist",
    "researcher",
    "biologist",
    "chemist",
    "physicist",
    "mathematician",
    "economist",
    "statistician",
    "writer",
    "author",
    "journalist",
    "editor",
    "reporter",
    "poet",
    "novelist",
    "artist",
    "painter",
    "photographer",
    "illustrator",
    "animator",
    "musician",
    "singer",
    "composer",
    "producer",
    "actor",
    "actress",
    "dancer",
    "chef",
    "cook",
    "baker",
    "barista",
    "bartender",
    "waiter",
    "waitress",
    "cashier",
    "clerk",
    "salesperson",
    "salesman",
    "saleswoman",
    "marketer",
    "recruiter",
    "pilot",
    "driver",
    "mechanic",
    "electrician",
    "plumber",
    "carpenter",
    "builder",
    "farmer",
    "gardener",
    "firefighter",
    "officer",
    "soldier",
    "policeman",
    "policewoman",
    "detective",
    "librarian",
    "pastor",
    "priest",
    "student",
    "intern",
    "apprentice",
    "freelancer",
    "contractor",
    "administrator",
    "secretary",
    "assistant",
    "receptionist",
    "technician",
    "specialist",
    "coordinator",
    "supervisor",
    "banker",
    "trader",
    "broker",
    "investor",
    "realtor",
    "translator",
    "interpreter",
    "coach",
    "trainer",
    "athlete",
    "paramedic",
    "midwife",
    "caregiver",
    "nanny",
    "homemaker",
    "housewife",
    "househusband",
    "retiree",
    "pensioner",
    "retired",
    "unemployed",
    "self-employed",
    "freelance",
    "postdoc",
    "sysadmin",
    "tester",
    "instructor",
    "counselor",
    "counsellor",
    "optician",
    "surveyor",
    "pharmacologist",
    "professional",
    "strategist",
];

/// The last word of "my X is Y" that makes X an attribute with one value at a time.
const ATTRIBUTE_NOUNS: &[&str] = &[
    "name",
    "nickname",
    "age",
    "birthday",
    "birthdate",
    "birth",
    "email",
    "e-mail",
    "phone",
    "number",
    "address",
    "job",
    "occupation",
    "profession",
    "title",
    "role",
    "position",
    "employer",
    "company",
    "workplace",
    "hometown",
    "city",
    "town",
    "country",
    "nationality",
    "citizenship",
    "language",
    "height",
    "weight",
    "timezone",
    "zone",
    "username",
    "handle",
    "goal",
    "hobby",
    "diet",
    "major",
    "school",
    "university",
    "college",
    "team",
    "pronouns",
    "sign",
    "type",
    "size",
    "salary",
    "budget",
    "religion",
    "gender",
    "status",
    "website",
    "birthplace",
    "specialty",
    "speciality",
    "field",
    "degree",
    "anniversary",
    "neighborhood",
    "neighbourhood",
    "street",
    "zip",
    "postcode",
    "code",
    "id",
    "account",
    "manager",
    "boss",
    "doctor",
    "dentist",
    "partner",
    "allergy",
    "allergies",
    "bedtime",
    "commute",
    "shift",
    "schedule",
    "rank",
    "level",
    "grade",
    "instrument",
    "sport",
    "breed",
    "model",
    "brand",
    "color",
    "colour",
];

/// Words dropped from "my ... favorite X" before "favorite" ("my all-time favorite band").
const FAVORITE_MODIFIERS: &[&str] = &[
    "all-time", "all", "time", "absolute", "current", "new", "very", "most", "personal",
    "ultimate", "top", "number", "one", "1", "single", "biggest",
];

const DIETS: &[&str] = &[
    "vegetarian",
    "vegan",
    "pescatarian",
    "pescetarian",
    "flexitarian",
    "omnivore",
    "carnivore",
    "keto",
    "paleo",
    "lacto-vegetarian",
    "ovo-vegetarian",
    "plant-based",
];

const RELATIONSHIP_STATUSES: &[&str] = &[
    "married",
    "single",
    "divorced",
    "engaged",
    "widowed",
    "separated",
];

/// Words after "I'm" that make a statement conversational rather than a fact.
const CONVERSATIONAL: &[&str] = &[
    "sorry",
    "sure",
    "glad",
    "done",
    "back",
    "here",
    "there",
    "ok",
    "okay",
    "fine",
    "good",
    "kidding",
    "joking",
    "just",
    "about",
    "going",
    "trying",
    "afraid",
    "wondering",
    "thinking",
    "so",
    "also",
    "like",
    "able",
    "unable",
    "supposed",
    "curious",
    "not",
    "to",
    "gonna",
    "certain",
    "positive",
    "aware",
    "hoping",
    "looking",
    "still",
    "telling",
    "saying",
    "asking",
    "talking",
    "writing",
    "calling",
    "that",
    "it",
    "this",
    "confused",
    "ready",
    "told",
    "bit",
    "little",
    "lot",
    "kind",
    "sort",
    "big",
    "huge",
    "fan",
];

/// Demonyms and religions that look like names after "I'm" ("I'm Greek" is not a name).
const NOT_NAMES: &[&str] = &[
    "thai",
    "greek",
    "dutch",
    "french",
    "swiss",
    "czech",
    "irish",
    "welsh",
    "scottish",
    "danish",
    "polish",
    "spanish",
    "turkish",
    "finnish",
    "british",
    "english",
    "iraqi",
    "israeli",
    "pakistani",
    "saudi",
    "kuwaiti",
    "qatari",
    "omani",
    "yemeni",
    "nepali",
    "bangladeshi",
    "somali",
    "filipino",
    "filipina",
    "catholic",
    "muslim",
    "buddhist",
    "hindu",
    "christian",
    "jewish",
    "protestant",
    "orthodox",
    "atheist",
    "agnostic",
    "mormon",
    "sikh",
    "jain",
    "gay",
    "lesbian",
    "bi",
    "bisexual",
    "straight",
    "trans",
    "queer",
    "black",
    "white",
    "asian",
    "latino",
    "latina",
    "latinx",
    "deaf",
    "blind",
    "autistic",
    "dyslexic",
    "diabetic",
    "canadian",
    "german",
    "american",
    "mexican",
    "african",
    "european",
    "australian",
    "italian",
    "brazilian",
    "indian",
    "chinese",
    "japanese",
    "korean",
    "portuguese",
    "vietnamese",
    "russian",
    "ukrainian",
];

/// The two halves of a job statement.
#[derive(Clone, Copy)]
enum Role {
    Employer,
    Occupation,
}

impl Role {
    fn slot(self) -> Option<String> {
        match self {
            Self::Employer => user_slot(&["employer"]),
            Self::Occupation => user_slot(&["occupation"]),
        }
    }

    fn tails(self) -> &'static [&'static str] {
        match self {
            Self::Employer => EMPLOYER_TAILS,
            Self::Occupation => OCCUPATION_TAILS,
        }
    }

    /// Words introducing the other half after this one.
    fn links(self) -> &'static [&'static str] {
        match self {
            Self::Employer => &["as"],
            Self::Occupation => &["at", "for"],
        }
    }

    fn other(self) -> Self {
        match self {
            Self::Employer => Self::Occupation,
            Self::Occupation => Self::Employer,
        }
    }
}

impl<'s, 'a> ClauseView<'s, 'a> {
    fn new(
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
    fn has_content(&self) -> bool {
        self.core.iter().any(|word| {
            word.word.is_some()
                && !SMALL_TALK.contains(&word.norm)
                && !FUNCTION_WORDS.contains(&word.norm)
        })
    }

    /// The clause's text from its first non-filler word, with `note` written after each
    /// time phrase ("Yesterday (2026-11-22) I ran 10 km.").
    fn text(&self, note: impl Fn(&Phrase) -> Option<String>) -> String {
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
    fn value(&self, range: std::ops::Range<usize>) -> String {
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
    fn value_end(&self, start: usize, tails: &[&str]) -> usize {
        self.value_end_at(start, tails, true)
    }

    /// [`Self::value_end`], optionally keeping commas (in lists: "tea, coffee and juice").
    fn value_end_at(&self, start: usize, tails: &[&str], cut_at_comma: bool) -> usize {
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
    fn value_from(&self, start: usize, tails: &[&str]) -> Option<String> {
        let end = self.value_end(start, tails);
        let value = self.value(start..end);
        (!value.is_empty() && value.chars().any(char::is_alphanumeric)).then_some(value)
    }

    fn norms_of(&self) -> Vec<&'s str> {
        self.core.iter().map(|word| word.norm).collect()
    }

    fn capitalized_at(&self, core_index: usize) -> bool {
        self.core
            .get(core_index)
            .and_then(|word| word.word)
            .is_some_and(|word| self.sentence.is_capitalized(word))
    }

    // --- patterns -----------------------------------------------------------------------

    fn match_patterns(&self) -> Vec<Found> {
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

    /// "live in X": the user's home. A negation makes the value "not X", which replaces a
    /// stored "X" (and, unavoidably, any other stored home).
    fn place(&self, mut cursor: Cursor, negated: bool) -> Vec<Found> {
        let Some(preposition) = cursor.eat_any(&["in", "at", "near", "on"]) else {
            return Vec::new();
        };
        let Some(value) = self.value_from(cursor.pos, PLACE_TAILS) else {
            return Vec::new();
        };
        let value = if preposition == "near" {
            format!("near {value}")
        } else {
            value
        };
        let value = if negated {
            format!("not {value}")
        } else {
            value
        };
        vec![Found::new(FactType::Fact, user_slot(&["location"]), value)]
    }

    /// "moved (back) (from X) to Y".
    fn moved(&self, mut cursor: Cursor) -> Vec<Found> {
        cursor.skip(&["back", "here", "over", "out", "away"]);
        if cursor.eat("from") {
            while cursor.rest_len() > 0 && cursor.peek() != "to" {
                cursor.next();
            }
        }
        if !cursor.eat("to") {
            return Vec::new();
        }
        match self.value_from(cursor.pos, PLACE_TAILS) {
            Some(value) => vec![Found::new(FactType::Fact, user_slot(&["location"]), value)],
            None => Vec::new(),
        }
    }

    /// "work at/for X (as Y)", "work as Y (at X)".
    fn work(&self, mut cursor: Cursor, negated: bool) -> Vec<Found> {
        if cursor.eat("as") {
            return self.job(Role::Occupation, cursor.pos, negated);
        }
        if cursor.eat_any(&["at", "for"]).is_some() {
            return self.job(Role::Employer, cursor.pos, negated);
        }
        Vec::new()
    }

    /// A job statement's value at core word `start`, and the other half of the job after
    /// "as" or "at"/"for" ("Acme as an engineer", "an engineer at Acme"). The first fact's
    /// text stops before the second half, so that the two facts have different texts.
    fn job(&self, role: Role, start: usize, negated: bool) -> Vec<Found> {
        let end = self.value_end(start, role.tails());
        let Some(value) = self.job_value(role, start, end) else {
            return Vec::new();
        };
        let value = if negated {
            format!("not {value}")
        } else {
            value
        };
        let mut found = vec![Found::new(FactType::Fact, role.slot(), value)];
        let link = self.core.get(end).map_or("", |word| word.norm);
        let other = role.other();
        if !negated && role.links().contains(&link) {
            let other_end = self.value_end(end + 1, other.tails());
            if let Some(other_value) = self.job_value(other, end + 1, other_end) {
                found[0].text = Some(self.text_before(end));
                found.push(Found::new(FactType::Fact, other.slot(), other_value));
            }
        }
        found
    }

    fn job_value(&self, role: Role, start: usize, end: usize) -> Option<String> {
        match role {
            Role::Employer if start < end => {
                let value = self.value(start..end);
                (!value.is_empty()).then_some(value)
            }
            Role::Employer => None,
            Role::Occupation => self.occupation_value(start, end),
        }
    }

    /// An occupation from core words `start..end`, without its article.
    fn occupation_value(&self, start: usize, end: usize) -> Option<String> {
        let start = start
            + usize::from(matches!(
                self.core.get(start).map(|word| word.norm),
                Some("a" | "an" | "the")
            ));
        if start >= end {
            return None;
        }
        let value = self.value(start..end);
        (!value.is_empty()).then_some(value)
    }

    /// "started working at X", "started a new job at X".
    fn started(&self, mut cursor: Cursor) -> Vec<Found> {
        if cursor.eat_any(&["working", "work"]).is_some() {
            return self.work(cursor, false);
        }
        self.new_job(cursor)
    }

    /// "(got|have|started) a (new) job at/with X (as Y)", "... a job as Y (at X)".
    fn new_job(&self, mut cursor: Cursor) -> Vec<Found> {
        cursor.eat_any(&["a", "my"]);
        cursor.skip(&["new", "first", "full-time", "part-time", "permanent"]);
        if !cursor.eat("job") {
            return Vec::new();
        }
        if cursor.eat("as") {
            return self.job(Role::Occupation, cursor.pos, false);
        }
        if cursor.eat_any(&["at", "with", "for"]).is_some() {
            return self.job(Role::Employer, cursor.pos, false);
        }
        Vec::new()
    }

    /// "34", "34 years old" at core word `start`, and nothing after.
    fn age(&self, start: usize, negated: bool) -> Vec<Found> {
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
    fn name(&self, start: usize) -> Vec<Found> {
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

    /// After "I am".
    fn match_am(&self, mut cursor: Cursor) -> Vec<Found> {
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
        let yes_no = if negated { "no" } else { "yes" };
        match (cursor.peek(), cursor.peek_at(1)) {
            ("allergic", "to") => return self.allergies(start + 2, yes_no),
            ("from", _) if !negated => {
                return self
                    .value_from(start + 1, PLACE_TAILS)
                    .map(|value| vec![Found::new(FactType::Fact, user_slot(&["origin"]), value)])
                    .unwrap_or_default();
            }
            ("in", "a") if cursor.peek_at(2) == "relationship" => {
                let value = if negated {
                    "not in a relationship"
                } else {
                    "in a relationship"
                };
                return vec![Found::new(
                    FactType::Fact,
                    user_slot(&["relationship", "status"]),
                    value.to_string(),
                )];
            }
            ("in" | "at", _) if !negated && self.capitalized_at(start + 1) => {
                return self.current_place(start + 1);
            }
            ("staying" | "visiting" | "traveling" | "travelling" | "vacationing", _)
                if !negated =>
            {
                let skip = usize::from(matches!(
                    cursor.peek_at(1),
                    "in" | "at" | "around" | "through" | "with"
                ));
                return self.current_place(start + 1 + skip);
            }
            ("living" | "based", "in" | "at" | "near") => {
                cursor.next();
                return self.place(cursor, negated);
            }
            ("working", _) => {
                cursor.next();
                return self.work(cursor, negated);
            }
            ("employed", "at" | "by") if !negated => {
                return self.job(Role::Employer, start + 2, false);
            }
            ("called" | "named", _) if !negated => return self.name(start + 1),
            ("into", _) => return self.preference_object(start + 1, negated, "likes"),
            ("fond" | "fan", "of") => return self.preference_object(start + 2, negated, "likes"),
            ("obsessed" | "crazy", "with" | "about") => {
                return self.preference_object(start + 2, negated, "loves")
            }
            ("a" | "an", _) => {
                let mut offset = 1;
                while matches!(
                    cursor.peek_at(offset),
                    "big" | "huge" | "great" | "massive" | "real"
                ) {
                    offset += 1;
                }
                if cursor.peek_at(offset) == "fan" && cursor.peek_at(offset + 1) == "of" {
                    return self.preference_object(start + offset + 2, negated, "likes");
                }
            }
            _ => {}
        }
        // Diet, relationship status, occupation, then any short state.
        let article = usize::from(matches!(cursor.peek(), "a" | "an"));
        let strict = usize::from(matches!(
            cursor.peek_at(article),
            "strict" | "full" | "committed"
        ));
        let diet_word = cursor.peek_at(article + strict);
        if DIETS.contains(&diet_word)
            && self.value_end(start, COMMON_TAILS) <= start + article + strict + 1
        {
            let value = if negated {
                format!("not {diet_word}")
            } else {
                diet_word.to_string()
            };
            return vec![Found::new(FactType::Fact, user_slot(&["diet"]), value).temporary()];
        }
        if RELATIONSHIP_STATUSES.contains(&cursor.peek()) {
            let status = cursor.peek();
            let value = if negated {
                format!("not {status}")
            } else {
                status.to_string()
            };
            return vec![Found::new(
                FactType::Fact,
                user_slot(&["relationship", "status"]),
                value,
            )];
        }
        if let Some(found) = self.occupation_after_am(start, negated) {
            return found;
        }
        self.state(start, negated)
    }

    /// "I'm in Paris", "I'm staying at the Ritz": where the user is for now.
    fn current_place(&self, start: usize) -> Vec<Found> {
        self.value_from(start, PLACE_TAILS)
            .map(|value| {
                vec![
                    Found::new(FactType::Fact, user_slot(&["current", "location"]), value)
                        .temporary(),
                ]
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

    /// After "my": "my X is Y".
    fn match_my(&self, start: usize) -> Vec<Found> {
        let norms = self.norms_of();
        let window = norms.len().min(start + 8);
        // The verb: "is"/"are", or a contracted "'s" ("my name's Ana").
        let (verb, contracted) =
            match (start..window).find(|&index| matches!(norms[index], "is" | "are")) {
                Some(index) => (index, false),
                None => match (start..window)
                    .rev()
                    .find(|&index| norms[index].ends_with("'s"))
                {
                    Some(index) => (index, true),
                    None => return Vec::new(),
                },
            };
        let mut attribute: Vec<String> = norms[start..verb]
            .iter()
            .map(|word| (*word).to_string())
            .collect();
        if contracted {
            attribute.push(norms[verb].to_string());
        }
        if attribute.is_empty() {
            return Vec::new();
        }
        let attribute: Vec<String> = attribute
            .iter()
            .map(|word| unify_spelling(strip_possessive(word)))
            .filter(|word| !word.is_empty())
            .collect();
        // The value: the words after the verb, dates included ("my birthday is March 3").
        let Some(verb_word) = self.core[verb].word else {
            return Vec::new();
        };
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
            return Vec::new(); // "my X is not Y" says what it is not: kept as a plain fact
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
        let Some(value) = sub.value_from(0, COMMON_TAILS) else {
            return Vec::new();
        };
        let value_words_count = sub.value_end(0, COMMON_TAILS);

        let favorite = attribute.iter().position(|word| word == "favorite");
        let (kind, slot_words) = match favorite {
            Some(position)
                if attribute[..position]
                    .iter()
                    .all(|word| FAVORITE_MODIFIERS.contains(&word.as_str()) || word == "least") =>
            {
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
                (FactType::Preference, words)
            }
            Some(_) => (FactType::Fact, attribute.clone()),
            None => {
                let head = attribute.last().map_or("", String::as_str);
                let article = usize::from(matches!(
                    sub.core.first().map(|w| w.norm),
                    Some("a" | "an" | "the")
                ));
                let names_something =
                    value_words_count <= 4 + article && sub.capitalized_at(article);
                if !ATTRIBUTE_NOUNS.contains(&head) && !names_something {
                    return Vec::new(); // "my car is broken": a description, not a value
                }
                (FactType::Fact, attribute.clone())
            }
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

    /// "I like X", "I don't like X", "I prefer X over Y", "I can't stand X".
    fn preference(&self, mut cursor: Cursor, verb: &str, negated: bool) -> Vec<Found> {
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
    fn preference_object(&self, start: usize, negated: bool, attitude: &str) -> Vec<Found> {
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

    /// Splits core words `start..end` into list items at commas, "and", "or", "&"
    /// ("tea, coffee and juice"), unless an item would be long (prose) or the whole is a
    /// fixed expression ("fish and chips").
    fn list_items(&self, start: usize, end: usize) -> Vec<(usize, usize)> {
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
    fn item_text(&self, list_start: usize, item_start: usize, item_end: usize) -> String {
        let prefix = self.tokens_before(list_start);
        let item = self.value(item_start..item_end);
        finish_sentence(&format!("{prefix} {item}"))
    }

    /// The clause's text up to core word `stop` ("I work for Acme" from "I work for Acme
    /// as an engineer").
    fn text_before(&self, stop: usize) -> String {
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
    fn slot_words(&self, start: usize, end: usize) -> Vec<String> {
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

// ---------------------------------------------------------------------------------------
// Slots, values, texts
// ---------------------------------------------------------------------------------------

/// `user/<words joined by _>`, ASCII only: accented letters are folded ("café" -> "cafe"),
/// other characters separate words. `None` when nothing is left or the slot is too long.
fn user_slot(words: &[&str]) -> Option<String> {
    let folded: Vec<String> = words.iter().map(|word| ascii_fold(word)).collect();
    // A word in another script would vanish and merge unrelated slots ("I like 日本 food"
    // and "I like food"): no slot rather than a wrong one.
    let vanished = words.iter().zip(&folded).any(|(word, folded)| {
        word.chars().any(char::is_alphanumeric)
            && !folded.chars().any(|c| c.is_ascii_alphanumeric())
    });
    if vanished {
        return None;
    }
    let slot = normalize_slot("user", &folded.join(" "))?;
    let valid = slot.len() <= 100
        && slot
            .split_once('/')
            .is_some_and(|(subject, attribute)| is_slot_part(subject) && is_slot_part(attribute));
    valid.then_some(slot)
}

fn user_slot_prefixed(prefix: &str, words: &[String]) -> Option<String> {
    if words.is_empty() {
        return None;
    }
    let mut all: Vec<&str> = vec![prefix];
    all.extend(words.iter().map(String::as_str));
    let slot = user_slot(&all)?;
    // Nothing but the prefix survived folding ("likes_" + non-Latin script).
    (slot.len() > "user/".len() + prefix.len()).then_some(slot)
}

fn is_slot_part(part: &str) -> bool {
    !part.is_empty()
        && part
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Lower-case ASCII letters and digits; common accented Latin letters folded, anything
/// else replaced by a space.
fn ascii_fold(word: &str) -> String {
    let mut folded = String::with_capacity(word.len());
    for character in word.chars().flat_map(char::to_lowercase) {
        let replacement = match character {
            'a'..='z' | '0'..='9' => {
                folded.push(character);
                continue;
            }
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => "a",
            'ç' | 'ć' | 'č' => "c",
            'ď' | 'đ' => "d",
            'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ė' | 'ę' | 'ě' => "e",
            'ğ' => "g",
            'ì' | 'í' | 'î' | 'ï' | 'ī' | 'ı' => "i",
            'ł' => "l",
            'ñ' | 'ń' | 'ň' => "n",
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' => "o",
            'ř' => "r",
            'ś' | 'š' | 'ş' | 'ș' => "s",
            'ť' | 'ţ' | 'ț' => "t",
            'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' => "u",
            'ý' | 'ÿ' => "y",
            'ź' | 'ż' | 'ž' => "z",
            'ß' => "ss",
            'æ' => "ae",
            'œ' => "oe",
            'þ' => "th",
            _ => " ",
        };
        folded.push_str(replacement);
    }
    folded
}

/// A number in words at the start of `words`: "thirty", "thirty-four", "thirty four",
/// "seven". Returns (number, words used).
fn number_words(words: &[&str]) -> Option<(u32, usize)> {
    const UNITS: &[&str] = &[
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: &[&str] = &[
        "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    let unit = |word: &str| {
        UNITS
            .iter()
            .position(|name| *name == word)
            .map(|n| n as u32)
    };
    let tens = |word: &str| {
        TENS.iter()
            .position(|name| *name == word)
            .map(|n| n as u32 * 10 + 20)
    };
    let first = *words.first()?;
    if let Some((ten, one)) = first.split_once('-') {
        let one = unit(one).filter(|one| (1..10).contains(one))?;
        return Some((tens(ten)? + one, 1));
    }
    if let Some(number) = unit(first) {
        return Some((number, 1));
    }
    let ten = tens(first)?;
    match words.get(1).and_then(|word| unit(word)) {
        Some(one) if (1..10).contains(&one) => Some((ten + one, 2)),
        _ => Some((ten, 1)),
    }
}

/// "sister's" -> "sister", "parents'" -> "parents".
fn strip_possessive(word: &str) -> &str {
    word.strip_suffix("'s")
        .or_else(|| word.strip_suffix('\''))
        .unwrap_or(word)
}

/// British and informal spellings that must share a slot with the American one.
fn unify_spelling(word: &str) -> String {
    match word {
        "favourite" | "fave" | "fav" | "favorit" => "favorite",
        "colour" => "color",
        "colours" => "colors",
        "flavour" => "flavor",
        "flavours" => "flavors",
        "humour" => "humor",
        "neighbourhood" => "neighborhood",
        "theatre" => "theater",
        "centre" => "center",
        other => other,
    }
    .to_string()
}

/// A plural noun's singular, for favorite slots ("my favorite colors are ...").
fn singular(word: &str) -> String {
    const UNCHANGED: &[&str] = &[
        "series",
        "species",
        "news",
        "clothes",
        "glasses",
        "jeans",
        "pants",
        "shorts",
        "trousers",
        "sunglasses",
        "lyrics",
        "physics",
        "mathematics",
        "maths",
        "politics",
        "economics",
        "athletics",
        "gymnastics",
        "olympics",
        "sports",
        "cookies",
        "movies",
    ];
    if UNCHANGED.contains(&word) {
        return match word {
            "cookies" => "cookie",
            "movies" => "movie",
            "sports" => "sport",
            other => other,
        }
        .to_string();
    }
    if word.len() <= 3 || word.ends_with("ss") || word.ends_with("us") || word.ends_with("is") {
        return word.to_string();
    }
    if let Some(stem) = word.strip_suffix("ies") {
        return format!("{stem}y");
    }
    for suffix in ["ches", "shes", "xes", "sses"] {
        if word.ends_with(suffix) {
            return word[..word.len() - 2].to_string();
        }
    }
    match word.strip_suffix('s') {
        Some(stem) => stem.to_string(),
        None => word.to_string(),
    }
}

fn is_lower_i(token: &str) -> bool {
    let folded: String = token
        .chars()
        .map(|c| if matches!(c, '’' | '‘') { '\'' } else { c })
        .collect();
    let word = folded.trim_end_matches(|c: char| !c.is_alphanumeric());
    matches!(word, "i" | "i'm" | "i've" | "i'd" | "i'll" | "im" | "ive") && !token.starts_with('I')
}

/// A value without the punctuation around it: `"Lisbon."` -> `Lisbon`.
fn trim_value(raw: &str) -> &str {
    raw.trim_matches(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '.' | ','
                    | ';'
                    | ':'
                    | '!'
                    | '?'
                    | '…'
                    | '"'
                    | '\''
                    | '“'
                    | '”'
                    | '‘'
                    | '’'
                    | '«'
                    | '»'
                    | '-'
                    | '–'
                    | '—'
            )
    })
}

/// Capitalizes the first letter and ends the text with a period (unless it ends with
/// "." or "!").
fn finish_sentence(raw: &str) -> String {
    let trimmed = raw.trim().trim_end_matches(|c: char| {
        c.is_whitespace() || matches!(c, ',' | ';' | ':' | '-' | '–' | '—')
    });
    let mut text = String::with_capacity(trimmed.len() + 1);
    let mut characters = trimmed.chars();
    if let Some(first) = characters.next() {
        text.extend(first.to_uppercase());
        text.push_str(characters.as_str());
    }
    if text.is_empty() {
        return text;
    }
    let last_meaningful = text
        .chars()
        .rev()
        .find(|c| !matches!(c, '"' | '\'' | ')' | ']' | '”' | '’' | '»'));
    if !matches!(last_meaningful, Some('.' | '!' | '…' | '。' | '！')) {
        text.push('.');
    }
    text
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use chrono::TimeZone;
    use proptest::prelude::*;

    use super::*;

    use FactType::{Episode, Fact, Preference};

    /// Monday 2026-11-23, 10:00 UTC.
    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 23, 10, 0, 0).unwrap()
    }

    fn at(month: u32, day: u32, hour: u32, minute: u32, second: u32) -> Option<DateTime<Utc>> {
        Some(
            Utc.with_ymd_and_hms(2026, month, day, hour, minute, second)
                .unwrap(),
        )
    }

    /// The end of a day of 2026 (23:59:59 UTC).
    fn end_of(month: u32, day: u32) -> Option<DateTime<Utc>> {
        at(month, day, 23, 59, 59)
    }

    type Expected<'e> = (FactType, Option<&'e str>, &'e str, Option<DateTime<Utc>>);

    /// Checks kind, slot, value and validity of every fact, in order.
    fn check(input: &str, expected: &[Expected]) {
        let facts = extract(input, now());
        let got: Vec<Expected> = facts
            .iter()
            .map(|fact| {
                (
                    fact.kind,
                    fact.slot.as_deref(),
                    fact.value.as_str(),
                    fact.valid_until,
                )
            })
            .collect();
        assert_eq!(got, expected, "input: {input:?}\nfacts: {facts:#?}");
        assert_invariants(input, &facts);
    }

    fn texts(input: &str) -> Vec<String> {
        extract(input, now())
            .into_iter()
            .map(|fact| fact.text)
            .collect()
    }

    /// What every extraction must satisfy, whatever the input.
    fn assert_invariants(input: &str, facts: &[ExtractedFact]) {
        let mut seen = HashSet::new();
        for fact in facts {
            assert!(
                !fact.text.trim().is_empty(),
                "empty text for {input:?}: {fact:?}"
            );
            assert!(
                !fact.value.trim().is_empty(),
                "empty value for {input:?}: {fact:?}"
            );
            if let Some(slot) = &fact.slot {
                let (subject, attribute) = slot.split_once('/').expect("slot has a '/'");
                assert!(
                    is_slot_part(subject) && is_slot_part(attribute),
                    "slot {slot:?} is not ^[a-z0-9_]+/[a-z0-9_]+$ for {input:?}"
                );
                assert_eq!(parse_slot_roundtrip(slot), Some(slot.clone()));
            } else {
                assert_eq!(
                    fact.value, fact.text,
                    "an unslotted fact's value is its text"
                );
            }
            if fact.kind == Episode {
                assert_eq!(fact.slot, None, "episodes have no slot");
            }
            if let Some(until) = fact.valid_until {
                assert!(
                    until > now(),
                    "validity in the past for {input:?}: {fact:?}"
                );
            }
            assert!(
                seen.insert(normalize_value(&fact.text)),
                "two facts with the same words for {input:?}: the caller would drop one"
            );
        }
    }

    fn parse_slot_roundtrip(slot: &str) -> Option<String> {
        super::super::parse_slot(slot)
    }

    // --- sentences --------------------------------------------------------------------

    #[test]
    fn sentences_split_on_terminators_but_not_decimals_or_abbreviations() {
        let cases: &[(&str, &[&str])] = &[
            (
                "I live in Lisbon. I work at Acme!",
                &["I live in Lisbon.", " I work at Acme!"],
            ),
            ("One; two\nthree", &["One;", " two\n", "three"]),
            (
                "It costs 3.5 euros. Fine.",
                &["It costs 3.5 euros.", " Fine."],
            ),
            (
                "I saw Dr. Smith. Then e.g. tea.",
                &["I saw Dr. Smith.", " Then e.g. tea."],
            ),
            ("Wait?! Yes...", &["Wait?!", " Yes..."]),
            ("J. K. Rowling wrote it.", &["J. K. Rowling wrote it."]),
            ("See example.com now", &["See example.com now"]),
            (
                "He said \"hi.\" Then left",
                &["He said \"hi.\"", " Then left"],
            ),
            ("", &[]),
        ];
        for (input, expected) in cases {
            assert_eq!(split_sentences(input), *expected, "input: {input:?}");
        }
    }

    #[test]
    fn questions_small_talk_and_fragments_produce_nothing() {
        for input in [
            "",
            "   \n\t ",
            "Where do you live?",
            "What is my favorite color?",
            "Do I like tea?!",
            "ok",
            "Thanks!",
            "Hi, thank you.",
            "?!.;",
            "12 34",
            "a.",
            "Yesterday.",
            "---",
            "I'm",
            "I like.",
        ] {
            assert_eq!(extract(input, now()), Vec::new(), "input: {input:?}");
        }
    }

    // --- my X is Y --------------------------------------------------------------------

    #[test]
    fn my_x_is_y() {
        let cases: &[(&str, &[Expected])] = &[
            (
                "My favorite color is blue.",
                &[(Preference, Some("user/favorite_color"), "blue", None)],
            ),
            (
                "My favourite colour is green",
                &[(Preference, Some("user/favorite_color"), "green", None)],
            ),
            (
                "my fave drink is tea",
                &[(Preference, Some("user/favorite_drink"), "tea", None)],
            ),
            (
                "My favorite food is sushi.",
                &[(Preference, Some("user/favorite_food"), "sushi", None)],
            ),
            (
                "MY FAVORITE DRINK IS TEA.",
                &[(Preference, Some("user/favorite_drink"), "TEA", None)],
            ),
            (
                "My favorite colors are red and blue.",
                &[(
                    Preference,
                    Some("user/favorite_color"),
                    "red and blue",
                    None,
                )],
            ),
            (
                "My favorite kind of music is jazz.",
                &[(Preference, Some("user/favorite_music"), "jazz", None)],
            ),
            (
                "My all-time favorite band is Queen.",
                &[(Preference, Some("user/favorite_band"), "Queen", None)],
            ),
            (
                "My least favourite food is olives.",
                &[(Preference, Some("user/least_favorite_food"), "olives", None)],
            ),
            (
                "Actually, my favorite color is now green.",
                &[(Preference, Some("user/favorite_color"), "green", None)],
            ),
            (
                "My favorite movie is The Godfather, which I love.",
                &[(
                    Preference,
                    Some("user/favorite_movie"),
                    "The Godfather",
                    None,
                )],
            ),
            (
                "My favorite movie is The Godfather, but I rarely watch it.",
                &[
                    (
                        Preference,
                        Some("user/favorite_movie"),
                        "The Godfather",
                        None,
                    ),
                    (
                        Fact,
                        None,
                        "My favorite movie is The Godfather, but I rarely watch it.",
                        None,
                    ),
                ],
            ),
            (
                "My favorite café is Café Nicola.",
                &[(Preference, Some("user/favorite_cafe"), "Café Nicola", None)],
            ),
            // Someone else's favorite is a fact about them.
            (
                "My sister's favorite color is red.",
                &[(Fact, Some("user/sister_favorite_color"), "red", None)],
            ),
            (
                "My sister's name is Ana.",
                &[(Fact, Some("user/sister_name"), "Ana", None)],
            ),
            (
                "My sister’s name is Ana.",
                &[(Fact, Some("user/sister_name"), "Ana", None)],
            ),
            ("My name's Bob", &[(Fact, Some("user/name"), "Bob", None)]),
            (
                "My name is Ana Silva.",
                &[(Fact, Some("user/name"), "Ana Silva", None)],
            ),
            ("My age is 34.", &[(Fact, Some("user/age"), "34", None)]),
            (
                "My phone number is 555-1234.",
                &[(Fact, Some("user/phone_number"), "555-1234", None)],
            ),
            (
                "My email is bob@example.com.",
                &[(Fact, Some("user/email"), "bob@example.com", None)],
            ),
            (
                "My birthday is March 3.",
                &[(Fact, Some("user/birthday"), "March 3", None)],
            ),
            (
                "My wife is Maria.",
                &[(Fact, Some("user/wife"), "Maria", None)],
            ),
            (
                "My husband's name is John and he works at IBM.",
                &[(Fact, Some("user/husband_name"), "John", None)],
            ),
            (
                "My kids are Tom and Ana.",
                &[(Fact, Some("user/kids"), "Tom and Ana", None)],
            ),
            // A description, not a value: kept, but on no slot.
            (
                "My car is broken.",
                &[(Fact, None, "My car is broken.", None)],
            ),
            (
                "My sister is a doctor.",
                &[(Fact, None, "My sister is a doctor.", None)],
            ),
            (
                "My name is not Bob.",
                &[(Fact, None, "My name is not Bob.", None)],
            ),
        ];
        for (input, expected) in cases {
            check(input, expected);
        }
    }

    #[test]
    fn my_x_is_y_keeps_the_users_sentence() {
        assert_eq!(
            texts("My favorite color is blue."),
            ["My favorite color is blue."]
        );
        assert_eq!(
            texts("  my favorite color is blue  "),
            ["My favorite color is blue."]
        );
        assert_eq!(
            texts("My favorite color is blue!"),
            ["My favorite color is blue!"]
        );
        assert_eq!(
            texts("Btw, my favorite movie is Heat"),
            ["My favorite movie is Heat."]
        );
        assert!(texts("My favorite food is sushi.")[0].contains("sushi"));
    }

    // --- I am ---------------------------------------------------------------------------

    #[test]
    fn i_am() {
        let cases: &[(&str, &[Expected])] = &[
            (
                "I am 34 years old.",
                &[(Fact, Some("user/age"), "34", None)],
            ),
            ("I'm 34", &[(Fact, Some("user/age"), "34", None)]),
            ("I’m 34 yo.", &[(Fact, Some("user/age"), "34", None)]),
            (
                "Im thirty-four years old",
                &[(Fact, Some("user/age"), "34", None)],
            ),
            ("I am thirty", &[(Fact, Some("user/age"), "30", None)]),
            (
                "I turned 40 last month.",
                &[(Fact, Some("user/age"), "40", None)],
            ),
            (
                "I'm a teacher.",
                &[(Fact, Some("user/occupation"), "teacher", None)],
            ),
            (
                "I’m an engineer",
                &[(Fact, Some("user/occupation"), "engineer", None)],
            ),
            (
                "I'm retired.",
                &[(Fact, Some("user/occupation"), "retired", None)],
            ),
            (
                "I'm not a teacher anymore.",
                &[(Fact, Some("user/occupation"), "not teacher", None)],
            ),
            (
                "I'm a senior software engineer at Google.",
                &[
                    (
                        Fact,
                        Some("user/occupation"),
                        "senior software engineer",
                        None,
                    ),
                    (Fact, Some("user/employer"), "Google", None),
                ],
            ),
            (
                "I am a vegetarian.",
                &[(Fact, Some("user/diet"), "vegetarian", None)],
            ),
            (
                "I'm vegan now.",
                &[(Fact, Some("user/diet"), "vegan", None)],
            ),
            (
                "I'm not vegetarian anymore.",
                &[(Fact, Some("user/diet"), "not vegetarian", None)],
            ),
            (
                "I am allergic to peanuts.",
                &[(Fact, Some("user/allergy_peanuts"), "yes", None)],
            ),
            (
                "I'm allergic to peanuts and shellfish.",
                &[
                    (Fact, Some("user/allergy_peanuts"), "yes", None),
                    (Fact, Some("user/allergy_shellfish"), "yes", None),
                ],
            ),
            (
                "I'm not allergic to peanuts.",
                &[(Fact, Some("user/allergy_peanuts"), "no", None)],
            ),
            (
                "I am allergic to penicillin until further notice.",
                &[(Fact, Some("user/allergy_penicillin"), "yes", None)],
            ),
            (
                "I'm married.",
                &[(Fact, Some("user/relationship_status"), "married", None)],
            ),
            (
                "I'm no longer married.",
                &[(Fact, Some("user/relationship_status"), "not married", None)],
            ),
            (
                "I'm in a relationship.",
                &[(
                    Fact,
                    Some("user/relationship_status"),
                    "in a relationship",
                    None,
                )],
            ),
            (
                "I'm from Brazil.",
                &[(Fact, Some("user/origin"), "Brazil", None)],
            ),
            ("Hi, I'm Ana.", &[(Fact, Some("user/name"), "Ana", None)]),
            (
                "I am called Bob.",
                &[(Fact, Some("user/name"), "Bob", None)],
            ),
            ("Call me Bob.", &[(Fact, Some("user/name"), "Bob", None)]),
            // Any other short state: its own yes/no slot.
            ("I'm tired.", &[(Fact, Some("user/is_tired"), "yes", None)]),
            ("I'm Greek.", &[(Fact, Some("user/is_greek"), "yes", None)]),
            (
                "I'm a night owl.",
                &[(Fact, Some("user/is_night_owl"), "yes", None)],
            ),
            (
                "I'm not a morning person.",
                &[(Fact, Some("user/is_morning_person"), "no", None)],
            ),
            (
                "I'm interested in photography.",
                &[(Fact, Some("user/is_interested_in_photography"), "yes", None)],
            ),
            // Activities and conversational phrases: kept, on no slot.
            (
                "I'm reading a book.",
                &[(Fact, None, "I'm reading a book.", None)],
            ),
            (
                "I'm sorry about that.",
                &[(Fact, None, "I'm sorry about that.", None)],
            ),
        ];
        for (input, expected) in cases {
            check(input, expected);
        }
    }

    // --- where the user lives and works -------------------------------------------------

    #[test]
    fn location_and_work() {
        let cases: &[(&str, &[Expected])] = &[
            (
                "I live in Lisbon.",
                &[(Fact, Some("user/location"), "Lisbon", None)],
            ),
            (
                "i live in lisbon",
                &[(Fact, Some("user/location"), "lisbon", None)],
            ),
            (
                "I LIVE IN LISBON.",
                &[(Fact, Some("user/location"), "LISBON", None)],
            ),
            (
                "I currently live in Lisbon.",
                &[(Fact, Some("user/location"), "Lisbon", None)],
            ),
            (
                "I live in Lisbon now.",
                &[(Fact, Some("user/location"), "Lisbon", None)],
            ),
            (
                "I live in Lisbon, Portugal.",
                &[(Fact, Some("user/location"), "Lisbon, Portugal", None)],
            ),
            (
                "I live in Lisbon, which I love.",
                &[(Fact, Some("user/location"), "Lisbon", None)],
            ),
            (
                "I moved to Porto.",
                &[(Fact, Some("user/location"), "Porto", None)],
            ),
            (
                "I've moved to Berlin.",
                &[(Fact, Some("user/location"), "Berlin", None)],
            ),
            (
                "I’ve moved to Berlin.",
                &[(Fact, Some("user/location"), "Berlin", None)],
            ),
            (
                "I have moved to Berlin.",
                &[(Fact, Some("user/location"), "Berlin", None)],
            ),
            (
                "I just moved to New York City with my family.",
                &[(Fact, Some("user/location"), "New York City", None)],
            ),
            (
                "I moved from Lisbon to Porto in March.",
                &[(Fact, Some("user/location"), "Porto", None)],
            ),
            (
                "I moved to Porto last week.",
                &[(Fact, Some("user/location"), "Porto", None)],
            ),
            (
                "I've lived in Lisbon for 5 years.",
                &[(Fact, Some("user/location"), "Lisbon", None)],
            ),
            (
                "We live in Amsterdam.",
                &[(Fact, Some("user/location"), "Amsterdam", None)],
            ),
            (
                "I'm based in Lisbon.",
                &[(Fact, Some("user/location"), "Lisbon", None)],
            ),
            (
                "I no longer live in Lisbon.",
                &[(Fact, Some("user/location"), "not Lisbon", None)],
            ),
            (
                "I don't live in Lisbon anymore.",
                &[(Fact, Some("user/location"), "not Lisbon", None)],
            ),
            (
                "I work at Acme.",
                &[(Fact, Some("user/employer"), "Acme", None)],
            ),
            (
                "I work for Acme Corp.",
                &[(Fact, Some("user/employer"), "Acme Corp", None)],
            ),
            (
                "I work at Acme in Lisbon.",
                &[(Fact, Some("user/employer"), "Acme", None)],
            ),
            (
                "I work as a nurse.",
                &[(Fact, Some("user/occupation"), "nurse", None)],
            ),
            (
                "I work for Acme Corp as a data scientist.",
                &[
                    (Fact, Some("user/employer"), "Acme Corp", None),
                    (Fact, Some("user/occupation"), "data scientist", None),
                ],
            ),
            (
                "I work as a nurse at St. Mary's hospital.",
                &[
                    (Fact, Some("user/occupation"), "nurse", None),
                    (Fact, Some("user/employer"), "St. Mary's hospital", None),
                ],
            ),
            (
                "I started working at Globex last month.",
                &[(Fact, Some("user/employer"), "Globex", None)],
            ),
            (
                "I got a new job at Initech as a product manager.",
                &[
                    (Fact, Some("user/employer"), "Initech", None),
                    (Fact, Some("user/occupation"), "product manager", None),
                ],
            ),
            (
                "I have a new job at Initech.",
                &[(Fact, Some("user/employer"), "Initech", None)],
            ),
            (
                "Since 2019 I have worked at Initech.",
                &[(Fact, Some("user/employer"), "Initech", None)],
            ),
            (
                "I don't work at Acme anymore.",
                &[(Fact, Some("user/employer"), "not Acme", None)],
            ),
            (
                "I no longer work at Acme.",
                &[(Fact, Some("user/employer"), "not Acme", None)],
            ),
            // Not understood: kept on no slot.
            ("I live here.", &[(Fact, None, "I live here.", None)]),
            (
                "I work from home.",
                &[(Fact, None, "I work from home.", None)],
            ),
        ];
        for (input, expected) in cases {
            check(input, expected);
        }
    }

    #[test]
    fn two_facts_of_one_clause_get_different_texts() {
        assert_eq!(
            texts("I work for Acme Corp as a data scientist."),
            [
                "I work for Acme Corp.",
                "I work for Acme Corp as a data scientist."
            ]
        );
        assert_eq!(
            texts("I'm a student at MIT."),
            ["I'm a student.", "I'm a student at MIT."]
        );
    }

    // --- preferences --------------------------------------------------------------------

    #[test]
    fn likes_and_dislikes() {
        let cases: &[(&str, &[Expected])] = &[
            (
                "I like tea.",
                &[(Preference, Some("user/likes_tea"), "likes", None)],
            ),
            (
                "I really like tea",
                &[(Preference, Some("user/likes_tea"), "likes", None)],
            ),
            (
                "I love tea.",
                &[(Preference, Some("user/likes_tea"), "loves", None)],
            ),
            (
                "I enjoy hiking.",
                &[(Preference, Some("user/likes_hiking"), "likes", None)],
            ),
            (
                "I adore cats.",
                &[(Preference, Some("user/likes_cats"), "loves", None)],
            ),
            (
                "I prefer tea.",
                &[(Preference, Some("user/likes_tea"), "prefers", None)],
            ),
            (
                "I hate coffee.",
                &[(Preference, Some("user/likes_coffee"), "hates", None)],
            ),
            (
                "I dislike coffee.",
                &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
            ),
            (
                "I don't like coffee.",
                &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
            ),
            (
                "I don’t like coffee.",
                &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
            ),
            (
                "I dont like coffee",
                &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
            ),
            (
                "I do not like coffee.",
                &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
            ),
            (
                "I DON'T LIKE COFFEE.",
                &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
            ),
            (
                "I don't like coffee anymore.",
                &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
            ),
            (
                "I no longer like coffee.",
                &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
            ),
            (
                "I can't stand jazz.",
                &[(Preference, Some("user/likes_jazz"), "hates", None)],
            ),
            (
                "I can’t stand jazz.",
                &[(Preference, Some("user/likes_jazz"), "hates", None)],
            ),
            (
                "I cannot stand jazz.",
                &[(Preference, Some("user/likes_jazz"), "hates", None)],
            ),
            (
                "I like tea a lot.",
                &[(Preference, Some("user/likes_tea"), "likes", None)],
            ),
            (
                "I like the Beatles.",
                &[(Preference, Some("user/likes_beatles"), "likes", None)],
            ),
            (
                "I like to run.",
                &[(Preference, Some("user/likes_run"), "likes", None)],
            ),
            (
                "I'm a big fan of jazz.",
                &[(Preference, Some("user/likes_jazz"), "likes", None)],
            ),
            (
                "I'm into climbing.",
                &[(Preference, Some("user/likes_climbing"), "likes", None)],
            ),
            (
                "I'm not into horror movies.",
                &[(
                    Preference,
                    Some("user/likes_horror_movies"),
                    "dislikes",
                    None,
                )],
            ),
            (
                "I love hiking, skiing and swimming.",
                &[
                    (Preference, Some("user/likes_hiking"), "loves", None),
                    (Preference, Some("user/likes_skiing"), "loves", None),
                    (Preference, Some("user/likes_swimming"), "loves", None),
                ],
            ),
            (
                "I really enjoy fish and chips.",
                &[(Preference, Some("user/likes_fish_and_chips"), "likes", None)],
            ),
            (
                "I like cats, e.g. Siamese ones.",
                &[(Preference, Some("user/likes_cats"), "likes", None)],
            ),
            (
                "I prefer tea over coffee.",
                &[(Preference, Some("user/prefers_coffee_or_tea"), "tea", None)],
            ),
            (
                "I prefer coffee to tea.",
                &[(
                    Preference,
                    Some("user/prefers_coffee_or_tea"),
                    "coffee",
                    None,
                )],
            ),
            (
                "I prefer walking rather than driving.",
                &[(
                    Preference,
                    Some("user/prefers_driving_or_walking"),
                    "walking",
                    None,
                )],
            ),
            (
                "I prefer going to the beach.",
                &[(
                    Preference,
                    Some("user/likes_going_to_beach"),
                    "prefers",
                    None,
                )],
            ),
            // A preference about nothing nameable: on no slot.
            (
                "I hate it when people are late.",
                &[(Preference, None, "I hate it when people are late.", None)],
            ),
            // Requests and wishes are not preferences.
            (
                "I'd like a coffee.",
                &[(Fact, None, "I'd like a coffee.", None)],
            ),
            // Words in other scripts never collapse into another slot.
            (
                "I like 日本 food.",
                &[(Preference, None, "I like 日本 food.", None)],
            ),
            ("I love 寿司.", &[(Preference, None, "I love 寿司.", None)]),
        ];
        for (input, expected) in cases {
            check(input, expected);
        }
    }

    #[test]
    fn list_items_become_sentences_of_their_own() {
        assert_eq!(
            texts("I really love hiking, skiing and swimming."),
            [
                "I really love hiking.",
                "I really love skiing.",
                "I really love swimming."
            ]
        );
        assert_eq!(
            texts("I'm allergic to peanuts and shellfish"),
            ["I'm allergic to peanuts.", "I'm allergic to shellfish."]
        );
    }

    // --- several statements in one content ----------------------------------------------

    #[test]
    fn several_sentences_and_clauses() {
        let cases: &[(&str, &[Expected])] = &[
            (
                "I live in Lisbon. I work at Acme as an engineer? I like tea; I hate coffee!",
                &[
                    (Fact, Some("user/location"), "Lisbon", None),
                    (Preference, Some("user/likes_tea"), "likes", None),
                    (Preference, Some("user/likes_coffee"), "hates", None),
                ],
            ),
            (
                "I live in Lisbon and work at Acme.",
                &[
                    (Fact, Some("user/location"), "Lisbon", None),
                    (Fact, Some("user/employer"), "Acme", None),
                ],
            ),
            (
                "I’m 34 years old and I live in Lisbon.",
                &[
                    (Fact, Some("user/age"), "34", None),
                    (Fact, Some("user/location"), "Lisbon", None),
                ],
            ),
            (
                "I like tea and I love coffee but I hate juice.",
                &[
                    (Preference, Some("user/likes_tea"), "likes", None),
                    (Preference, Some("user/likes_coffee"), "loves", None),
                    (Preference, Some("user/likes_juice"), "hates", None),
                ],
            ),
            (
                "My name is Ana\nI live in Porto\n\nMy favorite drink is tea",
                &[
                    (Fact, Some("user/name"), "Ana", None),
                    (Fact, Some("user/location"), "Porto", None),
                    (Preference, Some("user/favorite_drink"), "tea", None),
                ],
            ),
            // A part not understood keeps the whole sentence too.
            (
                "I'm 34, I live in Lisbon and I love it.",
                &[
                    (Fact, Some("user/age"), "34", None),
                    (Fact, Some("user/location"), "Lisbon", None),
                    (Fact, None, "I'm 34, I live in Lisbon and I love it.", None),
                ],
            ),
            // Repeats within one content are dropped.
            (
                "I like tea. I like tea!",
                &[(Preference, Some("user/likes_tea"), "likes", None)],
            ),
        ];
        for (input, expected) in cases {
            check(input, expected);
        }
        assert_eq!(
            texts("I live in Lisbon and work at Acme."),
            ["I live in Lisbon.", "I work at Acme."]
        );
    }

    // --- dated events -------------------------------------------------------------------

    #[test]
    fn dated_events_become_episodes_with_resolved_dates() {
        let cases: &[(&str, &str)] = &[
            (
                "Yesterday I ran 10 km.",
                "Yesterday (2026-11-22) I ran 10 km.",
            ),
            (
                "I ran 10 km yesterday.",
                "I ran 10 km yesterday (2026-11-22).",
            ),
            (
                "yesterday, I ran 10 km",
                "Yesterday (2026-11-22), I ran 10 km.",
            ),
            ("Today I ran 10 km.", "Today (2026-11-23) I ran 10 km."),
            (
                "Last night I slept badly.",
                "Last night (2026-11-22) I slept badly.",
            ),
            (
                "The day before yesterday I saw a movie.",
                "The day before yesterday (2026-11-21) I saw a movie.",
            ),
            (
                "Last week I went to Paris.",
                "Last week (week of 2026-11-16) I went to Paris.",
            ),
            (
                "Last month I went to Paris.",
                "Last month (October 2026) I went to Paris.",
            ),
            (
                "Last year I went to Paris.",
                "Last year (2025) I went to Paris.",
            ),
            (
                "Last weekend I went hiking.",
                "Last weekend (weekend of 2026-11-21) I went hiking.",
            ),
            (
                "This week I ran three times.",
                "This week (week of 2026-11-23) I ran three times.",
            ),
            (
                "On Monday I had a dentist appointment.",
                "On Monday (2026-11-16) I had a dentist appointment.",
            ),
            (
                "On Sunday I went hiking.",
                "On Sunday (2026-11-22) I went hiking.",
            ),
            (
                "Last Monday I visited my mom.",
                "Last Monday (2026-11-16) I visited my mom.",
            ),
            (
                "On Friday I have a dentist appointment.",
                "On Friday (2026-11-27) I have a dentist appointment.",
            ),
            (
                "Next Friday I'm flying to Rome.",
                "Next Friday (2026-11-27) I'm flying to Rome.",
            ),
            (
                "Tomorrow I have a job interview.",
                "Tomorrow (2026-11-24) I have a job interview.",
            ),
            (
                "Next week I will fly to Rome.",
                "Next week (week of 2026-11-30) I will fly to Rome.",
            ),
            (
                "3 days ago I fell off my bike.",
                "3 days ago (2026-11-20) I fell off my bike.",
            ),
            (
                "Two weeks ago I fell off my bike.",
                "Two weeks ago (2026-11-09) I fell off my bike.",
            ),
            (
                "On March 3 I ran a marathon.",
                "On March 3 (2026-03-03) I ran a marathon.",
            ),
            (
                "On 3rd of March I ran a marathon.",
                "On 3rd of March (2026-03-03) I ran a marathon.",
            ),
            (
                "On 3 March 2026 I started a diet.",
                "On 3 March 2026 I started a diet.",
            ),
            (
                "I got married on 2026-03-03.",
                "I got married on 2026-03-03.",
            ),
            ("In 2020 I visited Japan.", "In 2020 I visited Japan."),
            (
                "In March I visited Japan.",
                "In March (March 2026) I visited Japan.",
            ),
            (
                "Today is my birthday.",
                "Today (2026-11-23) is my birthday.",
            ),
            // The present tense of a dated thing looks ahead.
            (
                "My flight is on Friday.",
                "My flight is on Friday (2026-11-27).",
            ),
            (
                "On the 3rd I went hiking.",
                "On the 3rd (2026-11-03) I went hiking.",
            ),
        ];
        for (input, text) in cases {
            check(input, &[(Episode, None, text, None)]);
            assert_eq!(texts(input), [*text]);
        }
        // A month still to come this year, said of the past, is last year's.
        check(
            "On December 24 I visited my parents.",
            &[(
                Episode,
                None,
                "On December 24 (2025-12-24) I visited my parents.",
                None,
            )],
        );
    }

    #[test]
    fn a_dated_statement_of_a_pattern_stays_a_fact_with_the_date_in_its_text() {
        check(
            "I moved to Lisbon last week.",
            &[(Fact, Some("user/location"), "Lisbon", None)],
        );
        assert_eq!(
            texts("I moved to Lisbon last week."),
            ["I moved to Lisbon last week (week of 2026-11-16)."]
        );
        assert_eq!(
            texts("Yesterday I moved to Lisbon"),
            ["Yesterday (2026-11-22) I moved to Lisbon."]
        );
        // A plan is not a current fact: "I'm in Paris tomorrow" is an episode.
        check(
            "I'm in Paris tomorrow.",
            &[(Episode, None, "I'm in Paris tomorrow (2026-11-24).", None)],
        );
        check(
            "I'm in Paris on Friday.",
            &[(Episode, None, "I'm in Paris on Friday (2026-11-27).", None)],
        );
        // A relative day inside a value is resolved in the text, not in the value.
        check(
            "My birthday is tomorrow.",
            &[(Fact, Some("user/birthday"), "tomorrow", None)],
        );
        assert_eq!(
            texts("My birthday is tomorrow."),
            ["My birthday is tomorrow (2026-11-24)."]
        );
        check(
            "I'm in Lisbon this weekend.",
            &[(
                Episode,
                None,
                "I'm in Lisbon this weekend (weekend of 2026-11-28).",
                None,
            )],
        );
    }

    // --- validity -----------------------------------------------------------------------

    #[test]
    fn validity_phrases_set_valid_until_and_leave_the_value() {
        let paris = |until| [(Fact, Some("user/current_location"), "Paris", until)];
        let cases: &[(&str, Option<DateTime<Utc>>)] = &[
            ("I'm staying in Paris until Friday.", end_of(11, 27)),
            ("Until Friday I'm in Paris.", end_of(11, 27)),
            ("I'm in Paris until Monday.", end_of(11, 30)),
            ("I'm in Paris until tomorrow.", end_of(11, 24)),
            ("I'm in Paris till 5 December.", end_of(12, 5)),
            ("I'm in Paris until December 5th.", end_of(12, 5)),
            ("I'm in Paris until 2026-12-05.", end_of(12, 5)),
            ("I'm in Paris until December.", end_of(12, 31)),
            ("I'm in Paris until next week.", end_of(11, 29)),
            ("I'm in Paris until the end of the month.", end_of(11, 30)),
            ("I'm in Paris until the 15th.", end_of(12, 15)),
            ("I'm in Paris until the 30th.", end_of(11, 30)),
            ("I'm in Paris up until the weekend.", end_of(11, 29)),
            ("I'm in Paris until 5pm.", at(11, 23, 17, 0, 0)),
            ("I'm in Paris until 17:30.", at(11, 23, 17, 30, 0)),
            ("I'm in Paris until 9 am.", at(11, 24, 9, 0, 0)),
            ("I'm in Paris for the next 3 days.", at(11, 26, 10, 0, 0)),
            ("I'm in Paris for 2 weeks.", at(12, 7, 10, 0, 0)),
            ("I'm in Paris for the next hour.", at(11, 23, 11, 0, 0)),
            ("I'm in Paris for a couple of hours.", at(11, 23, 12, 0, 0)),
            ("I'm in Paris for a month.", at(12, 23, 10, 0, 0)),
            ("For the next 2 days I'm in Paris.", at(11, 25, 10, 0, 0)),
            ("I'm in Paris for the week.", end_of(11, 29)),
            ("I'm in Paris this week.", end_of(11, 29)),
            ("I'm in Paris this month.", end_of(11, 30)),
            ("I'm in Paris today.", end_of(11, 23)),
            ("I'm in Paris tonight.", end_of(11, 23)),
            ("I'm currently in Paris.", None),
            ("I'm visiting Paris until Friday.", end_of(11, 27)),
            ("I'm staying at Paris for now.", None),
        ];
        for (input, until) in cases {
            check(input, &paris(*until));
        }
        let others: &[(&str, &[Expected])] = &[
            (
                "I'm vegetarian for the next 3 days.",
                &[(Fact, Some("user/diet"), "vegetarian", at(11, 26, 10, 0, 0))],
            ),
            (
                "I'm busy this week.",
                &[(Fact, Some("user/is_busy"), "yes", end_of(11, 29))],
            ),
            (
                "I'm off work for 2 weeks.",
                &[(Fact, Some("user/is_off_work"), "yes", at(12, 7, 10, 0, 0))],
            ),
            (
                "I'm in a meeting until 17:30.",
                &[(
                    Fact,
                    Some("user/is_in_meeting"),
                    "yes",
                    at(11, 23, 17, 30, 0),
                )],
            ),
            (
                "The office is closed until 5 December.",
                &[(
                    Fact,
                    None,
                    "The office is closed until 5 December (2026-12-05).",
                    end_of(12, 5),
                )],
            ),
            // "today" bounds a state, but not a move.
            (
                "I moved to Lisbon today.",
                &[(Fact, Some("user/location"), "Lisbon", None)],
            ),
            // A duration in a perfect tense is how long, not until when.
            (
                "I've been vegetarian for 2 years.",
                &[(Fact, None, "I've been vegetarian for 2 years.", None)],
            ),
            // A validity already over bounds nothing.
            (
                "I'm in Paris until 2020-01-01.",
                &[(Fact, Some("user/current_location"), "Paris", None)],
            ),
        ];
        for (input, expected) in others {
            check(input, expected);
        }
    }

    #[test]
    fn validity_is_written_into_the_text() {
        assert_eq!(
            texts("I'm staying in Paris until Friday."),
            ["I'm staying in Paris until Friday (2026-11-27)."]
        );
        assert_eq!(
            texts("I'm vegetarian for the next 3 days"),
            ["I'm vegetarian for the next 3 days (until 2026-11-26)."]
        );
        assert_eq!(
            texts("I'm in Paris today."),
            ["I'm in Paris today (2026-11-23)."]
        );
        assert_eq!(
            texts("I'm busy this week."),
            ["I'm busy this week (until 2026-11-29)."]
        );
        assert_eq!(
            texts("I'm in Paris until 5pm."),
            ["I'm in Paris until 5pm (2026-11-23 17:00 UTC)."]
        );
        assert_eq!(
            texts("I'm away until 2026-12-05."),
            ["I'm away until 2026-12-05."]
        );
    }

    // --- anything else ------------------------------------------------------------------

    #[test]
    fn other_statements_are_kept_on_no_slot() {
        let cases = [
            "Paris is the capital of France.",
            "I have 2 kids.",
            "I’ve been to Japan twice.",
            "I'd love to visit Japan someday.",
            "Я люблю чай.",
            "Mr. Smith is my dentist.",
            "Memo: dentist 3/3/2026.",
        ];
        for input in cases {
            check(input, &[(Fact, None, input, None)]);
        }
        check(
            "remember that the wifi password is hunter2",
            &[(Fact, None, "The wifi password is hunter2.", None)],
        );
    }

    // --- what supersedes what -----------------------------------------------------------

    /// The current value of each slot after remembering `contents` in order, as the
    /// collection keeps them (a newer fact on a slot replaces the older one).
    fn remember_all(contents: &[&str]) -> HashMap<String, String> {
        let mut slots = HashMap::new();
        for content in contents {
            for fact in extract(content, now()) {
                if let Some(slot) = fact.slot {
                    slots.insert(slot, normalize_value(&fact.value));
                }
            }
        }
        slots
    }

    #[test]
    fn newer_statements_replace_only_what_they_replace() {
        let slots = remember_all(&["My favorite color is blue.", "My favorite color is green."]);
        assert_eq!(slots.len(), 1);
        assert_eq!(slots["user/favorite_color"], "green");

        let slots = remember_all(&["My favorite color is blue.", "My favourite colour is red."]);
        assert_eq!(slots["user/favorite_color"], "red");

        let slots = remember_all(&["My favorite color is blue.", "My favorite drink is tea."]);
        assert_eq!(slots.len(), 2);

        let slots = remember_all(&["I like tea.", "I don't like tea."]);
        assert_eq!(slots["user/likes_tea"], "dislikes");

        let slots = remember_all(&["I like tea.", "I like coffee."]);
        assert_eq!(slots.len(), 2);

        let slots = remember_all(&["I prefer tea over coffee.", "I prefer coffee to tea."]);
        assert_eq!(slots["user/prefers_coffee_or_tea"], "coffee");

        let slots = remember_all(&["I live in Lisbon.", "I moved to Porto."]);
        assert_eq!(slots["user/location"], "porto");

        let slots = remember_all(&["I'm tired.", "I'm a night owl.", "I'm 34."]);
        assert_eq!(
            slots.len(),
            3,
            "unrelated 'I am' statements never replace each other"
        );

        let slots = remember_all(&["I'm a morning person.", "I'm not a morning person."]);
        assert_eq!(slots["user/is_morning_person"], "no");

        let slots = remember_all(&["I'm vegetarian.", "I'm vegan."]);
        assert_eq!(slots["user/diet"], "vegan");

        let slots = remember_all(&["I work at Acme as an engineer.", "I work at Globex."]);
        assert_eq!(slots["user/employer"], "globex");
        assert_eq!(slots["user/occupation"], "engineer");
    }

    // --- helpers ------------------------------------------------------------------------

    #[test]
    fn helpers() {
        assert_eq!(singular("colors"), "color");
        assert_eq!(singular("movies"), "movie");
        assert_eq!(singular("dishes"), "dish");
        assert_eq!(singular("cities"), "city");
        assert_eq!(singular("series"), "series");
        assert_eq!(singular("glass"), "glass");
        assert_eq!(number_words(&["thirty", "four"]), Some((34, 2)));
        assert_eq!(number_words(&["thirty-four"]), Some((34, 1)));
        assert_eq!(number_words(&["seven"]), Some((7, 1)));
        assert_eq!(number_words(&["many"]), None);
        assert_eq!(time_of_day(&["5pm"], 0), Some((1, 17, 0)));
        assert_eq!(time_of_day(&["12am"], 0), Some((1, 0, 0)));
        assert_eq!(time_of_day(&["5:30", "pm"], 0), Some((2, 17, 30)));
        assert_eq!(time_of_day(&["25:00"], 0), None);
        assert_eq!(time_of_day(&["5"], 0), None);
        assert_eq!(
            user_slot(&["likes", "café"]).as_deref(),
            Some("user/likes_cafe")
        );
        assert_eq!(user_slot(&["likes", "日本"]), None);
        assert_eq!(finish_sentence("hello,"), "Hello.");
        assert_eq!(finish_sentence("\"quoted.\""), "\"quoted.\"");
        assert_eq!(day_number("31st"), Some(31));
        assert_eq!(day_number("32"), None);
        assert_eq!(iso_date("2026-02-30"), None);
    }

    #[test]
    fn dates_resolve_around_the_edges_of_the_calendar() {
        // Sunday 2026-11-29: "this week" ends today, "this weekend" is current.
        let sunday = Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap();
        let facts = extract("I'm busy this weekend.", sunday);
        assert_eq!(facts[0].valid_until, end_of(11, 29));
        // New Year's Eve: "next month" and "until tomorrow" cross the year.
        let eve = Utc.with_ymd_and_hms(2026, 12, 31, 8, 0, 0).unwrap();
        let facts = extract("I'm in Paris until tomorrow.", eve);
        assert_eq!(
            facts[0].valid_until,
            Some(Utc.with_ymd_and_hms(2027, 1, 1, 23, 59, 59).unwrap())
        );
        let facts = extract("Last month I went to Rome.", eve);
        assert_eq!(facts[0].text, "Last month (November 2026) I went to Rome.");
        // February 29 only exists in leap years.
        let facts = extract("On February 29 I ran.", eve);
        assert_eq!(facts[0].text, "On February 29 I ran.");
        // Extreme "now" values never panic.
        for now in [DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC] {
            let facts = extract(
                "Yesterday I ran. I'm in Paris until tomorrow. Next year I fly. I'm busy for 3 years.",
                now,
            );
            assert!(!facts.is_empty());
        }
    }

    #[test]
    fn large_and_pathological_inputs_finish() {
        let inputs = [
            "I like tea and ".repeat(20_000),
            "really ".repeat(50_000),
            ".,".repeat(50_000),
            "I'm in Paris until Friday, I live in Lisbon, ".repeat(5_000),
            "a".repeat(200_000),
            "x.".repeat(50_000),
            "my my my my is is ".repeat(10_000),
        ];
        for input in &inputs {
            let started = std::time::Instant::now();
            let facts = extract(input, now());
            assert!(
                started.elapsed().as_secs() < 20,
                "too slow on {:?}...",
                &input[..20]
            );
            for fact in &facts {
                assert!(!fact.text.is_empty());
            }
        }
    }

    // --- never panics -------------------------------------------------------------------

    const VOCABULARY: &[&str] = &[
        "I",
        "i'm",
        "I’m",
        "Im",
        "I've",
        "my",
        "My",
        "favorite",
        "favourite",
        "is",
        "are",
        "'s",
        "name's",
        "sister's",
        "live",
        "in",
        "Lisbon",
        "moved",
        "to",
        "until",
        "till",
        "Friday",
        "for",
        "the",
        "next",
        "3",
        "days",
        "hour",
        "weeks",
        "yesterday",
        "today",
        "tonight",
        "tomorrow",
        "on",
        "Monday",
        "March",
        "May",
        "3rd",
        "2026-03-03",
        "2020",
        "like",
        "don't",
        "can’t",
        "stand",
        "and",
        "but",
        ",",
        ".",
        "?",
        "!",
        ";",
        "\n",
        "work",
        "at",
        "as",
        "a",
        "an",
        "teacher",
        "am",
        "not",
        "no",
        "longer",
        "allergic",
        "prefer",
        "over",
        "than",
        "rather",
        "ago",
        "last",
        "week",
        "this",
        "month",
        "weekend",
        "5pm",
        "17:30",
        "e.g.",
        "Dr.",
        "3.5",
        "é",
        "日本",
        "we",
        "call",
        "me",
        "since",
        "thirty-four",
        "years",
        "old",
        "fan",
        "of",
        "into",
        "job",
        "got",
        "new",
        "started",
        "working",
        "x",
        "end",
        "rest",
        "a couple of",
        "few",
        "in",
        "have",
        "been",
        "it",
        "“",
        "”",
        "’",
        "-",
        "vegetarian",
        "married",
        "from",
        "staying",
        "until further notice",
        "anymore",
        "now",
    ];

    fn sentence_like() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(VOCABULARY), 0..40)
            .prop_map(|words| words.join(" "))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn never_panics_on_any_text(content in any::<String>()) {
            let facts = extract(&content, now());
            assert_invariants(&content, &facts);
        }

        #[test]
        fn never_panics_on_printable_text(content in "\\PC{0,300}") {
            let facts = extract(&content, now());
            assert_invariants(&content, &facts);
        }

        #[test]
        fn never_panics_on_pattern_like_text(content in sentence_like()) {
            let facts = extract(&content, now());
            assert_invariants(&content, &facts);
        }

        #[test]
        fn never_panics_glued_without_spaces(words in prop::collection::vec(prop::sample::select(VOCABULARY), 0..20)) {
            let content = words.concat();
            let facts = extract(&content, now());
            assert_invariants(&content, &facts);
        }
    }
}
