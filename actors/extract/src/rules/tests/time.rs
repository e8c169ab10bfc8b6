//! Dated events, validities, and dates around the edges of the calendar.

use super::*;

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
            "Next Friday I'm flying to Rome.",
            "Next Friday (2026-11-27) I'm flying to Rome.",
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
    // A stay with a validity is a time-bound value of where the user lives.
    let paris = |until: Option<DateTime<Utc>>| {
        let slot = match until {
            Some(_) => "user/location",
            None => "user/current_location",
        };
        [(Fact, Some(slot), "Paris", until)]
    };
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
        (
            "I'm spending the next two weeks in Paris.",
            at(12, 7, 10, 0, 0),
        ),
        (
            "I'll be spending three days in Paris.",
            at(11, 26, 10, 0, 0),
        ),
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
