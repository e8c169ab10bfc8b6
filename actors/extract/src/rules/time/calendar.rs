//! Calendar arithmetic and date words: month and weekday names, day and year numbers,
//! resolving dates without a year, counts and units of durations.

use chrono::{DateTime, Datelike, Days, Months, NaiveDate, TimeDelta, Timelike, Utc, Weekday};

use super::{Direction, Period, TimeContext};

pub(super) const MONTHS: &[[&str; 2]] = &[
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

pub(super) fn iso(day: NaiveDate) -> String {
    format!("{:04}-{:02}-{:02}", day.year(), day.month(), day.day())
}

pub(in crate::rules) fn end_of_day(day: NaiveDate) -> Option<DateTime<Utc>> {
    day.and_hms_opt(23, 59, 59).map(|time| time.and_utc())
}

pub(super) fn last_day_of_month(year: i32, month: u32) -> Option<NaiveDate> {
    let (next_year, next_month) = if month == 12 {
        (year.checked_add(1)?, 1)
    } else {
        (year, month + 1)
    };
    NaiveDate::from_ymd_opt(next_year, next_month, 1)?.pred_opt()
}

pub(super) fn monday_of(day: NaiveDate) -> Option<NaiveDate> {
    day.checked_sub_days(Days::new(u64::from(day.weekday().num_days_from_monday())))
}

pub(super) fn weekday_of(word: &str) -> Option<Weekday> {
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

pub(super) fn weekday_date(
    today: NaiveDate,
    weekday: Weekday,
    direction: Direction,
) -> Option<NaiveDate> {
    let target = i64::from(weekday.num_days_from_monday());
    let current = i64::from(today.weekday().num_days_from_monday());
    let ahead = (target - current).rem_euclid(7);
    let offset = match direction {
        Direction::Upcoming => ahead,
        Direction::Future if ahead == 0 => 7,
        Direction::Future => ahead,
        Direction::Past => {
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
pub(super) fn month_of(word: &str, abbreviation_ok: bool) -> Option<u32> {
    MONTHS
        .iter()
        .position(|names| word == names[0] || (abbreviation_ok && word == names[1]))
        .map(|index| index as u32 + 1)
}

/// "3", "03", "3rd", "21st" -> day of month.
pub(in crate::rules) fn day_number(word: &str) -> Option<u32> {
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

pub(super) fn year_number(word: &str) -> Option<i32> {
    if word.len() != 4 || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let year: i32 = word.parse().ok()?;
    (1900..=2100).contains(&year).then_some(year)
}

/// "2026-03-03" or "2026/03/03".
pub(in crate::rules) fn iso_date(word: &str) -> Option<NaiveDate> {
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
pub(super) fn resolve_day_month(
    today: NaiveDate,
    month: u32,
    day: u32,
    direction: Direction,
) -> Option<NaiveDate> {
    let this_year = NaiveDate::from_ymd_opt(today.year(), month, day);
    let other = |delta: i32| NaiveDate::from_ymd_opt(today.year().checked_add(delta)?, month, day);
    match direction {
        Direction::Past => match this_year {
            Some(date) if date <= today => Some(date),
            _ => other(-1),
        },
        Direction::Future | Direction::Upcoming => match this_year {
            Some(date) if date >= today => Some(date),
            _ => other(1),
        },
    }
}

/// Resolves a month name without a year: `inclusive` lets the current month count.
pub(super) fn resolve_month(
    today: NaiveDate,
    month: u32,
    direction: Direction,
    inclusive: bool,
) -> Period {
    let current = today.month();
    let year = today.year();
    let year = match direction {
        Direction::Past if month < current || (inclusive && month == current) => year,
        Direction::Past => year - 1,
        _ if month > current || (inclusive && month == current) => year,
        _ => year + 1,
    };
    Period::Month(year, month)
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Unit {
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

pub(super) fn unit_of(word: &str) -> Option<Unit> {
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
pub(super) fn count_at(norms: &[&str], index: usize) -> Option<(usize, u32)> {
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

pub(super) fn add_units(now: DateTime<Utc>, count: u32, unit: Unit) -> Option<DateTime<Utc>> {
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
pub(super) fn until_note(at: DateTime<Utc>, unit: Unit) -> String {
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

/// "3 days ago" -> the period it falls in.
pub(super) fn ago(context: &TimeContext, count: u32, unit: Unit) -> Option<Period> {
    let count_i64 = i64::from(count);
    Some(match unit {
        Unit::Minute | Unit::Hour => Period::Day(
            context
                .now
                .checked_sub_signed(match unit {
                    Unit::Minute => TimeDelta::try_minutes(count_i64)?,
                    _ => TimeDelta::try_hours(count_i64)?,
                })?
                .date_naive(),
        ),
        Unit::Day => Period::Day(context.days_from_today(-count_i64)?),
        Unit::Week => Period::Day(context.days_from_today(-count_i64.checked_mul(7)?)?),
        Unit::Month => {
            let day = context.today.checked_sub_months(Months::new(count))?;
            Period::Month(day.year(), day.month())
        }
        Unit::Year => Period::Year(
            context
                .today
                .year()
                .checked_sub(i32::try_from(count).ok()?)?,
        ),
    })
}
