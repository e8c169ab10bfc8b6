//! "I am ...".

use super::*;

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
            "I'm in room 414.",
            &[(Fact, Some("user/room"), "414", None)],
        ),
        (
            "I'm at gate B12.",
            &[(Fact, Some("user/gate"), "B12", None)],
        ),
        (
            "I'm in Room 415 for the next 3 days.",
            &[(Fact, Some("user/room"), "415", at(11, 26, 10, 0, 0))],
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
