//! Reading one time phrase at a word: validities ("until ...", "for the next ..."),
//! current periods ("today", "this week"), events and fillers.

use chrono::{Datelike, TimeDelta, Weekday};

use super::calendar::{
    add_units, ago, count_at, end_of_day, iso, monday_of, unit_of, until_note, weekday_date,
    year_number, Unit,
};
use super::point::{date_at, month_point, point_at};
use super::{Direction, Period, TimeContext, When};
use crate::rules::sentence::Sentence;

/// A time phrase starting at word `index`: (words, meaning, explicit).
pub(super) fn phrase_at(
    sentence: &Sentence,
    norms: &[&str],
    index: usize,
    context: &TimeContext,
) -> Option<(usize, When, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    let today = context.today;
    match at(0) {
        "until" | "till" if at(1) == "further" && at(2) == "notice" => {
            Some((3, When::Filler, false))
        }
        "until" | "till" | "til" | "untill" | "through" | "thru" => {
            until_at(sentence, norms, index + 1, context)
                .map(|(len, when, explicit)| (len + 1, when, explicit))
        }
        "up" if matches!(at(1), "until" | "till") => until_at(sentence, norms, index + 2, context)
            .map(|(len, when, explicit)| (len + 2, when, explicit)),
        "for" | "over" | "during" => duration_at(norms, index, context)
            .or_else(|| new_date_at(sentence, norms, index, context)),
        _ if index > 0 && matches!(norms[index - 1], "spend" | "spending") => {
            spent_duration_at(norms, index, context)
        }
        "to" | "into" | "onto" => new_date_at(sentence, norms, index, context),
        "since" => point_at(sentence, norms, index + 1, context, Direction::Past)
            .map(|(len, _, _)| (len + 1, When::Filler, false)),
        "as" if at(1) == "of" => {
            if at(2) == "now" {
                return Some((3, When::Filler, false));
            }
            point_at(sentence, norms, index + 2, context, Direction::Past)
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
        "this" => this_phrase(sentence, norms, index, context),
        "last" if at(1) == "night" => Some((
            2,
            When::Event(Period::Day(context.days_from_today(-1)?)),
            false,
        )),
        "on" => {
            let (len, period, explicit) =
                point_at(sentence, norms, index + 1, context, context.direction())?;
            Some((len + 1, When::Event(period), explicit))
        }
        "in" => in_period_phrase(sentence, norms, index, context),
        _ => ago_or_date_phrase(sentence, norms, index, context),
    }
}

/// The time a stay is spent: "(spending) the next two weeks", "(spending) three days":
/// a validity from now, like "for the next two weeks".
fn spent_duration_at(
    norms: &[&str],
    index: usize,
    context: &TimeContext,
) -> Option<(usize, When, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    let offset = match (at(0), at(1)) {
        ("the", "next" | "coming" | "following") => 2,
        ("the", _) => return None,
        _ => 0,
    };
    let (count_len, count) = match count_at(norms, index + offset) {
        Some(found) => found,
        None if offset > 0 => (0, 1), // "the next week"
        None => return None,
    };
    let unit = unit_of(at(offset + count_len))?;
    let until = add_units(context.now, count, unit)?;
    Some((
        offset + count_len + 1,
        When::Until {
            at: until,
            note: until_note(until, unit),
        },
        false,
    ))
}

/// The new date of a rescheduled event: "(moved) to Monday", "(rescheduled) for the
/// 15th"; nothing outside a sentence that moves an event ("I moved to Berlin").
fn new_date_at(
    sentence: &Sentence,
    norms: &[&str],
    index: usize,
    context: &TimeContext,
) -> Option<(usize, When, bool)> {
    if !context.rescheduled || !matches!(norms[index], "to" | "into" | "onto" | "for") {
        return None;
    }
    let (len, period, explicit) =
        point_at(sentence, norms, index + 1, context, Direction::Upcoming)?;
    Some((len + 1, When::Event(period), explicit))
}

/// "this morning", "this week", "this weekend", "this month", "this year", "this Friday".
fn this_phrase(
    sentence: &Sentence,
    norms: &[&str],
    index: usize,
    context: &TimeContext,
) -> Option<(usize, When, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    let today = context.today;
    match at(1) {
        "morning" | "afternoon" | "evening" => Some((2, When::Current(Period::Day(today)), false)),
        "week" => Some((2, When::Current(Period::Week(monday_of(today)?)), false)),
        "weekend" => match today.weekday() {
            // During the weekend it is the current period; before it, a plan.
            Weekday::Sat => Some((2, When::Current(Period::Weekend(today)), false)),
            Weekday::Sun => Some((2, When::Current(Period::Weekend(today.pred_opt()?)), false)),
            _ => {
                let saturday = weekday_date(today, Weekday::Sat, Direction::Upcoming)?;
                Some((2, When::Event(Period::Weekend(saturday)), false))
            }
        },
        "month" => Some((
            2,
            When::Current(Period::Month(today.year(), today.month())),
            false,
        )),
        "year" => Some((2, When::Current(Period::Year(today.year())), false)),
        _ => point_at(sentence, norms, index, context, Direction::Upcoming)
            .map(|(len, period, explicit)| (len, When::Event(period), explicit)),
    }
}

/// "in 2 weeks" (from now), "in 2020", "in March".
fn in_period_phrase(
    sentence: &Sentence,
    norms: &[&str],
    index: usize,
    context: &TimeContext,
) -> Option<(usize, When, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    // "in 2 weeks" (from now), "in March", "in 2020".
    if let Some((count_len, count)) = count_at(norms, index + 1) {
        if let Some(unit) = unit_of(at(1 + count_len)) {
            let day = add_units(context.now, count, unit)?.date_naive();
            return Some((2 + count_len, When::Event(Period::Day(day)), false));
        }
    }
    if let Some(year) = year_number(at(1)) {
        return Some((2, When::Event(Period::Year(year)), true));
    }
    let (len, period, explicit) =
        month_point(sentence, norms, index + 1, context, context.direction())?;
    Some((len + 1, When::Event(period), explicit))
}

/// "3 days ago", "a week ago", relative days ("yesterday", "last week", "next Monday")
/// and bare dates ("3 March 2026").
fn ago_or_date_phrase(
    sentence: &Sentence,
    norms: &[&str],
    index: usize,
    context: &TimeContext,
) -> Option<(usize, When, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    // "3 days ago", "a week ago".
    if let Some((count_len, count)) = count_at(norms, index) {
        if let Some(unit) = unit_of(at(count_len)) {
            if at(count_len + 1) == "ago" {
                let period = ago(context, count, unit)?;
                return Some((count_len + 2, When::Event(period), false));
            }
        }
    }
    // Relative days, "last week", "next Monday", bare dates ("3 March 2026"); not a
    // bare "Monday", "March", "2020" or "the weekend" ("I love the weekend").
    let relative = matches!(at(0), "yesterday" | "tomorrow" | "last" | "next" | "past")
        || (at(0) == "the" && at(1) == "day" && matches!(at(2), "before" | "after"));
    let (len, period, explicit) = if relative {
        point_at(sentence, norms, index, context, context.direction())?
    } else {
        date_at(norms, index, context, context.direction())?
    };
    Some((len, When::Event(period), explicit))
}

/// The target of "until" / "till": the end of the named day or period.
fn until_at(
    sentence: &Sentence,
    norms: &[&str],
    index: usize,
    context: &TimeContext,
) -> Option<(usize, When, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    let today = context.today;
    // "until 5pm", "until 17:30", "until noon": today, or tomorrow if already past.
    if let Some((len, hour, minute)) = time_of_day(norms, index) {
        let mut until = today.and_hms_opt(hour, minute, 0)?.and_utc();
        if until <= context.now {
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
    let (len, period, explicit) = point_at(sentence, norms, index, context, Direction::Upcoming)?;
    let last = period.last_day()?;
    let until = When::Until {
        at: end_of_day(last)?,
        note: iso(last),
    };
    Some((len, until, explicit))
}

/// A time of day: "5pm", "5 pm", "5:30pm", "17:00", "noon", "midnight" (23:59). Returns
/// (words, hour, minute).
pub(in crate::rules) fn time_of_day(norms: &[&str], index: usize) -> Option<(usize, u32, u32)> {
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
fn duration_at(norms: &[&str], index: usize, context: &TimeContext) -> Option<(usize, When, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    let today = context.today;
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
            let sunday = weekday_date(today, Weekday::Sun, Direction::Upcoming)?;
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
    if !forward && context.perfect {
        return filler(len);
    }
    let until = add_units(context.now, count, unit)?;
    Some((
        len,
        When::Until {
            at: until,
            note: until_note(until, unit),
        },
        false,
    ))
}
