//! Sentence splitting, what produces nothing, several statements in one content, and
//! statements kept whole.

use super::*;
use crate::rules::sentence::split_sentences;

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
