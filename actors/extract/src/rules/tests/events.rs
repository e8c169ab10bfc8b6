//! Scheduled events: the event's name is its slot, its date the value; moved, postponed
//! and cancelled events keep their slot.

use super::*;

#[test]
fn scheduled_events_are_dated_values_of_their_name() {
    let dentist = |value| [(Fact, Some("user/dentist_appointment"), value, None)];
    let cases: &[(&str, &str)] = &[
        ("My dentist appointment is on March 3.", "2027-03-03"),
        ("My dentist appointment is March 3.", "2027-03-03"),
        ("My dentist appointment is now on March 10.", "2027-03-10"),
        (
            "My dentist appointment is scheduled for March 10.",
            "2027-03-10",
        ),
        ("I have a dentist appointment on March 3.", "2027-03-03"),
        ("I've got a dentist appointment on March 3.", "2027-03-03"),
        ("On Friday I have a dentist appointment.", "2026-11-27"),
        ("My dentist's appointment is on Friday.", "2026-11-27"),
        ("My dentist appointment moved to March 10.", "2027-03-10"),
        (
            "My dentist appointment was moved to March 10.",
            "2027-03-10",
        ),
        (
            "My dentist appointment has been moved to Monday.",
            "2026-11-30",
        ),
        (
            "My dentist appointment was rescheduled to March 10.",
            "2027-03-10",
        ),
        (
            "My dentist appointment was rescheduled for the 15th.",
            "2026-12-15",
        ),
        (
            "My dentist appointment got pushed back to March 10.",
            "2027-03-10",
        ),
        (
            "My dentist appointment was postponed until March 10.",
            "2027-03-10",
        ),
        (
            "My dentist appointment was brought forward to Wednesday.",
            "2026-11-25",
        ),
        (
            "My dentist appointment moved from March 3 to March 10.",
            "2027-03-10",
        ),
        (
            "I rescheduled my dentist appointment to March 10.",
            "2027-03-10",
        ),
        (
            "I moved my dentist appointment to next Friday.",
            "2026-11-27",
        ),
        (
            "I've postponed my dentist appointment until next week.",
            "2026-11-29",
        ),
        (
            "They moved my dentist appointment to March 10.",
            "2027-03-10",
        ),
        (
            "The clinic rescheduled my dentist appointment for March 10.",
            "2027-03-10",
        ),
        ("My dentist appointment was cancelled.", "cancelled"),
        ("I cancelled my dentist appointment.", "cancelled"),
        ("My dentist appointment was called off.", "cancelled"),
    ];
    for (input, value) in cases {
        check(input, &dentist(*value));
    }
    let others: &[(&str, &[Expected])] = &[
        (
            "Tomorrow I have a job interview.",
            &[(Fact, Some("user/job_interview"), "2026-11-24", None)],
        ),
        (
            "My flight is on Friday.",
            &[(Fact, Some("user/flight"), "2026-11-27", None)],
        ),
        (
            "My flight was moved to Saturday at 9am.",
            &[(Fact, Some("user/flight"), "2026-11-28 09:00", None)],
        ),
        (
            "I have a meeting with Bob on Friday.",
            &[(Fact, Some("user/meeting_with_bob"), "2026-11-27", None)],
        ),
        (
            "My meeting with Bob was moved to Monday.",
            &[(Fact, Some("user/meeting_with_bob"), "2026-11-30", None)],
        ),
        (
            "We moved the team meeting to Thursday.",
            &[(Fact, Some("user/team_meeting"), "2026-11-26", None)],
        ),
        (
            "Our dinner party is on Saturday.",
            &[(Fact, Some("user/dinner_party"), "2026-11-28", None)],
        ),
        (
            "My boss moved my review to Friday.",
            &[(Fact, Some("user/review"), "2026-11-27", None)],
        ),
        (
            "My haircut is now on Monday instead.",
            &[(Fact, Some("user/haircut"), "2026-11-30", None)],
        ),
    ];
    for (input, expected) in others {
        check(input, expected);
    }
}

#[test]
fn past_hypothetical_and_extra_events_get_no_slot() {
    let cases: &[(&str, &[Expected])] = &[
        // A past event is an episode: it is not the next one.
        (
            "On Monday I had a dentist appointment.",
            &[(
                Episode,
                None,
                "On Monday (2026-11-16) I had a dentist appointment.",
                None,
            )],
        ),
        // "another" is a second appointment, not the same one moved.
        (
            "I have another dentist appointment on March 10.",
            &[(
                Episode,
                None,
                "I have another dentist appointment on March 10 (2027-03-10).",
                None,
            )],
        ),
        // A request or a denial moves nothing.
        (
            "Please move my dentist appointment to March 10.",
            &[(
                Episode,
                None,
                "Please move my dentist appointment to March 10 (2027-03-10).",
                None,
            )],
        ),
        (
            "My dentist appointment wasn't moved.",
            &[(Fact, None, "My dentist appointment wasn't moved.", None)],
        ),
        // Someone else's event.
        (
            "My sister moved her wedding to June.",
            &[(
                Episode,
                None,
                "My sister moved her wedding to June (June 2027).",
                None,
            )],
        ),
        // Not an event: a favorite show, a birthday, a pet.
        (
            "My favorite show is Friends.",
            &[(Preference, Some("user/favorite_show"), "Friends", None)],
        ),
        (
            "My birthday is March 3.",
            &[(Fact, Some("user/birthday"), "March 3", None)],
        ),
        (
            "I have a dog named Rex.",
            &[(Fact, None, "I have a dog named Rex.", None)],
        ),
    ];
    for (input, expected) in cases {
        check(input, expected);
    }
    assert!(extract("Was my dentist appointment moved to March 10?", now()).is_empty());
}
