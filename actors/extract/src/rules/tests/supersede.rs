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

    let slots = remember_all(&["I work at Acme as an engineer.", "I work at Globex."]);
    assert_eq!(slots["user/employer"], "globex");
    assert_eq!(slots["user/occupation"], "engineer");
}
