//! Likes, dislikes and preferences.

use super::*;

#[test]
fn likes_and_dislikes() {
    let cases: &[(&str, &[Expected])] = &[
        (
            "I like tea.",
            &[(Preference, Some("user/likes_tea"), "likes", None)],
        ),
        (
            "I really like tea",
            &[(Preference, Some("user/likes_tea"), "likes", None)],
        ),
        (
            "I love tea.",
            &[(Preference, Some("user/likes_tea"), "loves", None)],
        ),
        (
            "I enjoy hiking.",
            &[(Preference, Some("user/likes_hiking"), "likes", None)],
        ),
        (
            "I adore cats.",
            &[(Preference, Some("user/likes_cats"), "loves", None)],
        ),
        (
            "I prefer tea.",
            &[(Preference, Some("user/favorite_drink"), "tea", None)],
        ),
        // A preferred thing of no known category keeps a slot of its own.
        (
            "I prefer quiet restaurants.",
            &[(
                Preference,
                Some("user/likes_quiet_restaurants"),
                "prefers",
                None,
            )],
        ),
        (
            "I hate coffee.",
            &[(Preference, Some("user/likes_coffee"), "hates", None)],
        ),
        (
            "I dislike coffee.",
            &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
        ),
        (
            "I don't like coffee.",
            &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
        ),
        (
            "I don’t like coffee.",
            &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
        ),
        (
            "I dont like coffee",
            &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
        ),
        (
            "I do not like coffee.",
            &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
        ),
        (
            "I DON'T LIKE COFFEE.",
            &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
        ),
        (
            "I don't like coffee anymore.",
            &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
        ),
        (
            "I no longer like coffee.",
            &[(Preference, Some("user/likes_coffee"), "dislikes", None)],
        ),
        (
            "I can't stand jazz.",
            &[(Preference, Some("user/likes_jazz"), "hates", None)],
        ),
        (
            "I can’t stand jazz.",
            &[(Preference, Some("user/likes_jazz"), "hates", None)],
        ),
        (
            "I cannot stand jazz.",
            &[(Preference, Some("user/likes_jazz"), "hates", None)],
        ),
        (
            "I like tea a lot.",
            &[(Preference, Some("user/likes_tea"), "likes", None)],
        ),
        (
            "I like the Beatles.",
            &[(Preference, Some("user/likes_beatles"), "likes", None)],
        ),
        (
            "I like to run.",
            &[(Preference, Some("user/likes_run"), "likes", None)],
        ),
        (
            "I'm a big fan of jazz.",
            &[(Preference, Some("user/likes_jazz"), "likes", None)],
        ),
        (
            "I'm into climbing.",
            &[(Preference, Some("user/likes_climbing"), "likes", None)],
        ),
        (
            "I'm not into horror movies.",
            &[(
                Preference,
                Some("user/likes_horror_movies"),
                "dislikes",
                None,
            )],
        ),
        (
            "I love hiking, skiing and swimming.",
            &[
                (Preference, Some("user/likes_hiking"), "loves", None),
                (Preference, Some("user/likes_skiing"), "loves", None),
                (Preference, Some("user/likes_swimming"), "loves", None),
            ],
        ),
        (
            "I really enjoy fish and chips.",
            &[(Preference, Some("user/likes_fish_and_chips"), "likes", None)],
        ),
        (
            "I like cats, e.g. Siamese ones.",
            &[(Preference, Some("user/likes_cats"), "likes", None)],
        ),
        (
            "I prefer tea over coffee.",
            &[(Preference, Some("user/prefers_coffee_or_tea"), "tea", None)],
        ),
        (
            "I prefer coffee to tea.",
            &[(
                Preference,
                Some("user/prefers_coffee_or_tea"),
                "coffee",
                None,
            )],
        ),
        (
            "I prefer walking rather than driving.",
            &[(
                Preference,
                Some("user/prefers_driving_or_walking"),
                "walking",
                None,
            )],
        ),
        (
            "I prefer going to the beach.",
            &[(Preference, Some("user/favorite_holiday"), "beach", None)],
        ),
        // A preference about nothing nameable: on no slot.
        (
            "I hate it when people are late.",
            &[(Preference, None, "I hate it when people are late.", None)],
        ),
        // Requests and wishes are not preferences.
        (
            "I'd like a coffee.",
            &[(Fact, None, "I'd like a coffee.", None)],
        ),
        // Words in other scripts never collapse into another slot.
        (
            "I like 日本 food.",
            &[(Preference, None, "I like 日本 food.", None)],
        ),
        ("I love 寿司.", &[(Preference, None, "I love 寿司.", None)]),
    ];
    for (input, expected) in cases {
        check(input, expected);
    }
}

#[test]
fn list_items_become_sentences_of_their_own() {
    assert_eq!(
        texts("I really love hiking, skiing and swimming."),
        [
            "I really love hiking.",
            "I really love skiing.",
            "I really love swimming."
        ]
    );
    assert_eq!(
        texts("I'm allergic to peanuts and shellfish"),
        ["I'm allergic to peanuts.", "I'm allergic to shellfish."]
    );
}

#[test]
fn a_bare_preference_is_the_favorite_of_its_category() {
    let cases: &[(&str, &[Expected])] = &[
        (
            "I prefer coffee.",
            &[(Preference, Some("user/favorite_drink"), "coffee", None)],
        ),
        (
            "I prefer green tea.",
            &[(Preference, Some("user/favorite_drink"), "green tea", None)],
        ),
        (
            "These days I prefer coffee.",
            &[(Preference, Some("user/favorite_drink"), "coffee", None)],
        ),
        (
            "I prefer to drink tea.",
            &[(Preference, Some("user/favorite_drink"), "tea", None)],
        ),
        (
            "I'd rather have coffee.",
            &[(Preference, Some("user/favorite_drink"), "coffee", None)],
        ),
        (
            "I would prefer tea.",
            &[(Preference, Some("user/favorite_drink"), "tea", None)],
        ),
        (
            "I've switched to coffee.",
            &[(Preference, Some("user/favorite_drink"), "coffee", None)],
        ),
        (
            "I switched from tea to coffee.",
            &[(Preference, Some("user/favorite_drink"), "coffee", None)],
        ),
        (
            "I'm more of a coffee person now.",
            &[(Preference, Some("user/favorite_drink"), "coffee", None)],
        ),
        (
            "My go-to drink is coffee.",
            &[(Preference, Some("user/favorite_drink"), "coffee", None)],
        ),
        (
            "My preferred drink is coffee.",
            &[(Preference, Some("user/favorite_drink"), "coffee", None)],
        ),
        (
            "I prefer window seats.",
            &[(Preference, Some("user/favorite_seat"), "window seats", None)],
        ),
        (
            "I prefer dark mode.",
            &[(
                Preference,
                Some("user/favorite_display_mode"),
                "dark mode",
                None,
            )],
        ),
        (
            "I'd rather go by train.",
            &[(Preference, Some("user/favorite_transport"), "train", None)],
        ),
        (
            "I prefer cats.",
            &[(Preference, Some("user/favorite_animal"), "cats", None)],
        ),
        (
            "I prefer summer.",
            &[(Preference, Some("user/favorite_season"), "summer", None)],
        ),
        (
            "I'd rather have tea than coffee.",
            &[(Preference, Some("user/prefers_coffee_or_tea"), "tea", None)],
        ),
        // "My preferred name" is the name, not a favorite.
        (
            "My preferred name is Sam.",
            &[(Fact, Some("user/preferred_name"), "Sam", None)],
        ),
        // Several things, or a wish not to, are no choice of a favorite.
        (
            "I prefer tea and juice.",
            &[
                (Preference, Some("user/likes_tea"), "prefers", None),
                (Preference, Some("user/likes_juice"), "prefers", None),
            ],
        ),
        (
            "I'd rather not say.",
            &[(Fact, None, "I'd rather not say.", None)],
        ),
        (
            "I switched to Linux.",
            &[(Fact, None, "I switched to Linux.", None)],
        ),
        // Said the other way round.
        (
            "Honestly, coffee is my drink of choice now.",
            &[(Preference, Some("user/favorite_drink"), "coffee", None)],
        ),
        (
            "Paris is my favorite city.",
            &[(Preference, Some("user/favorite_city"), "Paris", None)],
        ),
        (
            "She is my favorite aunt.",
            &[(Fact, None, "She is my favorite aunt.", None)],
        ),
    ];
    for (input, expected) in cases {
        check(input, expected);
    }
}
