//! Points in time: relative days, "last/next/this ...", weekdays, dates, months, years.

use chrono::{Datelike, Days, Months, NaiveDate, Weekday};

use super::calendar::{
    day_number, iso_date, monday_of, month_of, resolve_day_month, resolve_month, weekday_date,
    weekday_of, year_number,
};
use super::{Direction, Period, TimeContext};
use crate::rules::sentence::Sentence;

/// A point in time: relative day words, "last/next/this ...", weekdays, dates, months,
/// years. `direction` resolves the ones without a year.
pub(super) fn point_at(
    sentence: &Sentence,
    norms: &[&str],
    index: usize,
    context: &TimeContext,
    direction: Direction,
) -> Option<(usize, Period, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    let today = context.today;
    let day = |offset: i64| context.days_from_today(offset).map(Period::Day);
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
        "the" | "end" => return end_or_day_of_month(norms, index, context, direction),
        "weekend" => {
            let saturday = weekday_date(today, Weekday::Sat, Direction::Upcoming)?;
            return Some((1, Period::Weekend(saturday), false));
        }
        "last" | "next" | "this" | "past" => return relative_point(norms, index, context),
        _ => {}
    }
    if let Some(weekday) = weekday_of(at(0)) {
        // "until Monday" said on a Monday means next Monday.
        let direction = if direction == Direction::Upcoming {
            Direction::Future
        } else {
            direction
        };
        return Some((
            1,
            Period::Day(weekday_date(today, weekday, direction)?),
            false,
        ));
    }
    if let Some(found) = date_at(norms, index, context, direction) {
        return Some(found);
    }
    if let Some(year) = year_number(at(0)) {
        return Some((1, Period::Year(year), true));
    }
    month_point(sentence, norms, index, context, direction)
}

/// "the end of the month", "end of (the) week", "the weekend", "the 3rd of March", or
/// "the 15th" of this month or the next (the previous one in the past).
fn end_or_day_of_month(
    norms: &[&str],
    index: usize,
    context: &TimeContext,
    direction: Direction,
) -> Option<(usize, Period, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    let today = context.today;
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
        let saturday = weekday_date(today, Weekday::Sat, Direction::Upcoming)?;
        return Some((2, Period::Weekend(saturday), false));
    }
    if at(0) == "the" {
        // "the 3rd of March", or "the 15th" of this month or the next.
        if let Some((len, period, explicit)) = date_at(norms, index + 1, context, direction) {
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
        let date = match (direction, this_month) {
            (Direction::Past, Some(date)) if date < today => date,
            (Direction::Past, _) => previous_month()?,
            (_, Some(date)) if date >= today => date,
            _ => next_month()?,
        };
        return Some((2, Period::Day(date), false));
    }
    None
}

/// "last/next/this/past" followed by "week", "weekend", "month", "year", a weekday or a
/// month name.
fn relative_point(
    norms: &[&str],
    index: usize,
    context: &TimeContext,
) -> Option<(usize, Period, bool)> {
    let at = |offset: usize| norms.get(index + offset).copied().unwrap_or("");
    let today = context.today;
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
                let direction = match step {
                    -1 => Direction::Past,
                    1 => Direction::Future,
                    _ => Direction::Upcoming,
                };
                Period::Day(weekday_date(today, weekday, direction)?)
            } else if let Some(month) = month_of(word, false) {
                match step {
                    -1 => resolve_month(today, month, Direction::Past, false),
                    1 => resolve_month(today, month, Direction::Future, false),
                    _ => resolve_month(today, month, Direction::Upcoming, true),
                }
            } else {
                return None;
            }
        }
    };
    Some((2, period, false))
}

/// A month name alone or with a year ("March", "March 2026"). "May" and "March" must be
/// capitalized to count (they are also a verb).
pub(super) fn month_point(
    sentence: &Sentence,
    norms: &[&str],
    index: usize,
    context: &TimeContext,
    direction: Direction,
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
    let direction = if direction == Direction::Past {
        Direction::Past
    } else {
        Direction::Upcoming
    };
    Some((
        1,
        resolve_month(context.today, month, direction, true),
        false,
    ))
}

/// "2026-03-03", "3 March (2026)", "3rd of March", "March 3(rd)(, 2026)".
pub(super) fn date_at(
    norms: &[&str],
    index: usize,
    context: &TimeContext,
    direction: Direction,
) -> Option<(usize, Period, bool)> {
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
    let date = resolve_day_month(context.today, month, day, direction)?;
    Some((len, Period::Day(date), false))
}
