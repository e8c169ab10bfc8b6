//! Time phrases: what a phrase like "yesterday", "until Friday" or "for 2 weeks" means
//! ([`When`]), the calendar period it names ([`Period`]) and where it sits in a sentence
//! ([`Phrase`]).

mod calendar;
mod phrase;
mod point;

use chrono::{DateTime, Days, NaiveDate, Utc};

use super::lexicon::{
    ADVERBS, EVENT_NOUNS, IRREGULAR_PAST, NOT_PAST_ED, PAST_PARTICIPLES, RESCHEDULE_FORMS,
};
use super::sentence::Sentence;
pub(super) use calendar::end_of_day;
#[cfg(test)]
pub(super) use calendar::{day_number, iso_date};
use calendar::{iso, last_day_of_month, MONTHS};
use phrase::phrase_at;
pub(super) use phrase::time_of_day;

/// A calendar period a time phrase refers to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Period {
    Day(NaiveDate),
    /// The ISO week starting on this Monday.
    Week(NaiveDate),
    /// The weekend starting on this Saturday.
    Weekend(NaiveDate),
    Month(i32, u32),
    Year(i32),
}

impl Period {
    pub(super) fn first_day(self) -> Option<NaiveDate> {
        match self {
            Self::Day(day) | Self::Week(day) | Self::Weekend(day) => Some(day),
            Self::Month(year, month) => NaiveDate::from_ymd_opt(year, month, 1),
            Self::Year(year) => NaiveDate::from_ymd_opt(year, 1, 1),
        }
    }

    pub(super) fn last_day(self) -> Option<NaiveDate> {
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
    pub(super) fn label(self) -> String {
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
pub(super) enum When {
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
pub(super) struct Phrase {
    /// Word range.
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) when: When,
    /// Fully explicit (has a year): no resolved date is added to the text.
    explicit: bool,
}

impl Phrase {
    /// The resolved date written after the phrase in a memory's text, if any.
    pub(super) fn note(&self, as_validity: bool) -> Option<String> {
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

    /// The date the phrase names, as a scheduled event's value: "2026-03-10" for a day (or
    /// the day a validity ends: "postponed until March 10"), "week of 2026-11-30",
    /// "March 2027"; `None` for fillers.
    pub(super) fn date_value(&self) -> Option<String> {
        match &self.when {
            When::Event(period) | When::Current(period) => Some(period.label()),
            When::Until { at, .. } => {
                let day = at.date_naive();
                if end_of_day(day) == Some(*at) {
                    Some(iso(day))
                } else {
                    Some(format!("{} {}", iso(day), at.format("%H:%M")))
                }
            }
            When::Filler => None,
        }
    }

    /// Whether the phrase names a time rather than being a filler.
    pub(super) fn is_dated(&self) -> bool {
        !matches!(self.when, When::Filler)
    }
}

/// The time a sentence is read at, and what its tense says about bare dates ("on Monday":
/// the past or the next Monday).
pub(super) struct TimeContext {
    now: DateTime<Utc>,
    pub(super) today: NaiveDate,
    /// The sentence talks about the future or the present tense ("will", "next", "I'm
    /// flying", "I have a ...", "my flight is on Friday") and no past tense.
    future: bool,
    /// The sentence is in a perfect tense ("I've lived here for 5 years"): a bare duration
    /// is how long something has lasted, not a validity.
    perfect: bool,
    /// The sentence moves a scheduled event ("my flight was moved to Monday"): "to" /
    /// "for" + a day is its new date.
    rescheduled: bool,
}

/// Which way a date without a year (or a bare weekday) is resolved from today.
#[derive(Clone, Copy, PartialEq)]
enum Direction {
    /// Strictly before today.
    Past,
    /// Strictly after today.
    Future,
    /// Today or later.
    Upcoming,
}

impl TimeContext {
    pub(super) fn new(now: DateTime<Utc>, norms: &[&str]) -> Self {
        let mut future = false;
        let mut past = false;
        let mut perfect = false;
        // "My appointment was moved to March 10": the new date of an event lies ahead,
        // whatever the tense of the move.
        let rescheduled = norms.iter().any(|word| RESCHEDULE_FORMS.contains(word))
            && norms.iter().any(|word| EVENT_NOUNS.contains(word));
        for (index, &word) in norms.iter().enumerate() {
            let previous = if index > 0 { norms[index - 1] } else { "" };
            let next = norms.get(index + 1).copied().unwrap_or("");
            match word {
                "will" | "shall" | "tomorrow" | "next" | "plan" | "plans" | "planning"
                | "scheduled" | "upcoming" | "soon" => future = true,
                "going" if next == "to" => future = true,
                "have" | "has" if matches!(next, "a" | "an" | "to" | "another" | "got") => {
                    future = true
                }
                // "My flight is on Friday": the present tense of a dated thing is ahead.
                "is" | "are" | "am" => future = true,
                _ => {}
            }
            if matches!(previous, "am" | "are" | "is") && word.len() > 4 && word.ends_with("ing") {
                future = true; // "I'm flying to Paris on Friday"
            }
            // "I've got a ..." is a present tense.
            let have_got = word == "got" && matches!(previous, "have" | "has");
            if (IRREGULAR_PAST.contains(&word) && !have_got)
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
            future: rescheduled || (future && !past),
            perfect,
            rescheduled,
        }
    }

    fn direction(&self) -> Direction {
        if self.future {
            Direction::Future
        } else {
            Direction::Past
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

/// Finds the time phrases of a sentence, left to right, without overlaps.
pub(super) fn find_phrases(
    sentence: &Sentence,
    norms: &[&str],
    context: &TimeContext,
) -> Vec<Phrase> {
    let mut phrases = Vec::new();
    let mut index = 0;
    while index < norms.len() {
        match phrase_at(sentence, norms, index, context) {
            Some((len, when, explicit)) if len > 0 => {
                // A validity already over ("until yesterday") bounds nothing.
                let when = match when {
                    When::Until { at, .. } if at <= context.now => When::Filler,
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

/// The phrases (sorted, not overlapping) that start in words `start..end`.
pub(super) fn phrases_between(phrases: &[Phrase], start: usize, end: usize) -> &[Phrase] {
    let low = phrases.partition_point(|phrase| phrase.start < start);
    let high = phrases.partition_point(|phrase| phrase.start < end);
    &phrases[low..high.max(low)]
}
