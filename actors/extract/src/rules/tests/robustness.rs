//! Large and pathological inputs finish; no input panics or breaks the invariants.

use super::*;

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
    prop::collection::vec(prop::sample::select(VOCABULARY), 0..40).prop_map(|words| words.join(" "))
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

#[test]
fn more_small_talk_is_not_stored() {
    for input in [
        "Thank you so much.",
        "Sounds good!",
        "See you later.",
        "Take care.",
        "No problem.",
        "Have a nice day!",
        "Makes sense.",
    ] {
        assert!(extract(input, now()).is_empty(), "{input:?} was stored");
    }
    assert!(!extract("I will do it tomorrow.", now()).is_empty());
    check(
        "Lately I prefer swimming.",
        &[(Preference, Some("user/favorite_sport"), "swimming", None)],
    );
}
