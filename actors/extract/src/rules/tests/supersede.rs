//! What supersedes what: which statements replace which.

use super::*;

/// The current value of each slot after remembering `contents` in order, as the
/// collection keeps them (a newer fact on a slot replaces the older one).
fn remember_all(contents: &[&str]) -> HashMap<String, String> {
    let mut slots = HashMap::new();
    for content in contents {
        for fact in extract(content, now()) {
            if let Some(slot) = fact.slot {
                slots.insert(slot, normalize_value(&fact.value));
            }
        }
    }
    slots
}

#[test]
fn newer_statements_replace_only_what_they_replace() {
    let slots = remember_all(&["My favorite color is blue.", "My favorite color is green."]);
    assert_eq!(slots.len(), 1);
    assert_eq!(slots["user/favorite_color"], "green");

    let slots = remember_all(&["My favorite color is blue.", "My favourite colour is red."]);
    assert_eq!(slots["user/favorite_color"], "red");

    let slots = remember_all(&["My favorite color is blue.", "My favorite drink is tea."]);
    assert_eq!(slots.len(), 2);

    let slots = remember_all(&["I like tea.", "I don't like tea."]);
    assert_eq!(slots["user/likes_tea"], "dislikes");

    let slots = remember_all(&["I like tea.", "I like coffee."]);
    assert_eq!(slots.len(), 2);

    let slots = remember_all(&["I prefer tea over coffee.", "I prefer coffee to tea."]);
    assert_eq!(slots["user/prefers_coffee_or_tea"], "coffee");

    let slots = remember_all(&["I live in Lisbon.", "I moved to Porto."]);
    assert_eq!(slots["user/location"], "porto");

    let slots = remember_all(&["I'm tired.", "I'm a night owl.", "I'm 34."]);
    assert_eq!(
        slots.len(),
        3,
        "unrelated 'I am' statements never replace each other"
    );

    let slots = remember_all(&["I'm a morning person.", "I'm not a morning person."]);
    assert_eq!(slots["user/is_morning_person"], "no");

    let slots = remember_all(&["I'm vegetarian.", "I'm vegan."]);
    assert_eq!(slots["user/diet"], "vegan");

    let slots = remember_all(&["My room is 414.", "My room is 415 until Friday."]);
    assert_eq!(slots["user/room"], "415");

    let slots = remember_all(&["I'm in room 414.", "My room is 415 for the next 3 days."]);
    assert_eq!(slots.len(), 1);
    assert_eq!(slots["user/room"], "415");

    let slots = remember_all(&["My desk is 4B.", "My desk is A-12 for the next 2 weeks."]);
    assert_eq!(slots["user/desk"], "a 12");

    let slots = remember_all(&["I work at Acme as an engineer.", "I work at Globex."]);
    assert_eq!(slots["user/employer"], "globex");
    assert_eq!(slots["user/occupation"], "engineer");
}

#[test]
fn a_newer_bare_preference_a_new_date_or_a_stay_replaces_the_older_one() {
    let slots = remember_all(&["I prefer tea.", "I prefer coffee."]);
    assert_eq!(slots.len(), 1);
    assert_eq!(slots["user/favorite_drink"], "coffee");

    let slots = remember_all(&["I prefer tea.", "I've switched to coffee."]);
    assert_eq!(slots["user/favorite_drink"], "coffee");

    let slots = remember_all(&["My favorite drink is tea.", "I'd rather have coffee."]);
    assert_eq!(slots["user/favorite_drink"], "coffee");

    let slots = remember_all(&[
        "My dentist appointment is on March 3.",
        "My dentist appointment moved to March 10.",
    ]);
    assert_eq!(slots["user/dentist_appointment"], "2027 03 10");

    let slots = remember_all(&[
        "I have a dentist appointment on March 3.",
        "I rescheduled my dentist appointment to March 10.",
        "My dentist appointment was cancelled.",
    ]);
    assert_eq!(slots["user/dentist_appointment"], "cancelled");

    let slots = remember_all(&[
        "I live in Berlin.",
        "For the next two weeks I'm staying in Paris.",
    ]);
    assert_eq!(slots["user/location"], "paris");
}

#[test]
fn controls_never_share_a_slot() {
    for pair in [
        ["I prefer tea.", "I prefer window seats."],
        ["I prefer dark mode.", "I prefer summer."],
        ["I like tea.", "I like coffee."],
        ["I love hiking.", "I enjoy swimming."],
        ["My dog's name is Rex.", "My cat's name is Luna."],
        [
            "I have a dentist appointment on March 3.",
            "I have a job interview on March 10.",
        ],
        [
            "My flight is on Friday.",
            "My dentist appointment is on Friday.",
        ],
        [
            "I have a meeting with Bob on Friday.",
            "I have a meeting with Alice on Friday.",
        ],
        ["Yesterday I ran 10 km.", "Last week I went to Paris."],
    ] {
        let slots = remember_all(&pair);
        let facts: usize = pair
            .iter()
            .map(|content| {
                extract(content, now())
                    .iter()
                    .filter(|fact| fact.slot.is_some())
                    .count()
            })
            .sum();
        assert_eq!(slots.len(), facts, "{pair:?} share a slot: {slots:?}");
    }
}
