//! Where the user lives and works.

use super::*;

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
