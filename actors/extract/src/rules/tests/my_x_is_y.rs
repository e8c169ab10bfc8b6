//! "My X is Y".

use super::*;

#[test]
fn my_x_is_y() {
    let cases: &[(&str, &[Expected])] = &[
        (
            "My favorite color is blue.",
            &[(Preference, Some("user/favorite_color"), "blue", None)],
        ),
        (
            "My favourite colour is green",
            &[(Preference, Some("user/favorite_color"), "green", None)],
        ),
        (
            "my fave drink is tea",
            &[(Preference, Some("user/favorite_drink"), "tea", None)],
        ),
        (
            "My favorite food is sushi.",
            &[(Preference, Some("user/favorite_food"), "sushi", None)],
        ),
        (
            "MY FAVORITE DRINK IS TEA.",
            &[(Preference, Some("user/favorite_drink"), "TEA", None)],
        ),
        (
            "My favorite colors are red and blue.",
            &[(
                Preference,
                Some("user/favorite_color"),
                "red and blue",
                None,
            )],
        ),
        (
            "My favorite kind of music is jazz.",
            &[(Preference, Some("user/favorite_music"), "jazz", None)],
        ),
        (
            "My all-time favorite band is Queen.",
            &[(Preference, Some("user/favorite_band"), "Queen", None)],
        ),
        (
            "My least favourite food is olives.",
            &[(Preference, Some("user/least_favorite_food"), "olives", None)],
        ),
        (
            "Actually, my favorite color is now green.",
            &[(Preference, Some("user/favorite_color"), "green", None)],
        ),
        (
            "My favorite movie is The Godfather, which I love.",
            &[(
                Preference,
                Some("user/favorite_movie"),
                "The Godfather",
                None,
            )],
        ),
        (
            "My favorite movie is The Godfather, but I rarely watch it.",
            &[
                (
                    Preference,
                    Some("user/favorite_movie"),
                    "The Godfather",
                    None,
                ),
                (
                    Fact,
                    None,
                    "My favorite movie is The Godfather, but I rarely watch it.",
                    None,
                ),
            ],
        ),
        (
            "My favorite café is Café Nicola.",
            &[(Preference, Some("user/favorite_cafe"), "Café Nicola", None)],
        ),
        // Someone else's favorite is a fact about them.
        (
            "My sister's favorite color is red.",
            &[(Fact, Some("user/sister_favorite_color"), "red", None)],
        ),
        (
            "My sister's name is Ana.",
            &[(Fact, Some("user/sister_name"), "Ana", None)],
        ),
        (
            "My sister’s name is Ana.",
            &[(Fact, Some("user/sister_name"), "Ana", None)],
        ),
        ("My name's Bob", &[(Fact, Some("user/name"), "Bob", None)]),
        (
            "My name is Ana Silva.",
            &[(Fact, Some("user/name"), "Ana Silva", None)],
        ),
        ("My age is 34.", &[(Fact, Some("user/age"), "34", None)]),
        (
            "My phone number is 555-1234.",
            &[(Fact, Some("user/phone_number"), "555-1234", None)],
        ),
        (
            "My email is bob@example.com.",
            &[(Fact, Some("user/email"), "bob@example.com", None)],
        ),
        (
            "My birthday is March 3.",
            &[(Fact, Some("user/birthday"), "March 3", None)],
        ),
        (
            "My wife is Maria.",
            &[(Fact, Some("user/wife"), "Maria", None)],
        ),
        (
            "My husband's name is John and he works at IBM.",
            &[(Fact, Some("user/husband_name"), "John", None)],
        ),
        (
            "My kids are Tom and Ana.",
            &[(Fact, Some("user/kids"), "Tom and Ana", None)],
        ),
        // A description, not a value: kept, but on no slot.
        // A number or a code is a value, as a capitalized name is.
        ("My room is 414.", &[(Fact, Some("user/room"), "414", None)]),
        ("My desk is 4B.", &[(Fact, Some("user/desk"), "4B", None)]),
        (
            "My locker is the 12.",
            &[(Fact, Some("user/locker"), "the 12", None)],
        ),
        (
            "My room is 415 for the next 3 days.",
            &[(Fact, Some("user/room"), "415", at(11, 26, 10, 0, 0))],
        ),
        (
            "My car is 10 years old.",
            &[(Fact, None, "My car is 10 years old.", None)],
        ),
        (
            "My car is broken.",
            &[(Fact, None, "My car is broken.", None)],
        ),
        (
            "My sister is a doctor.",
            &[(Fact, None, "My sister is a doctor.", None)],
        ),
        (
            "My name is not Bob.",
            &[(Fact, None, "My name is not Bob.", None)],
        ),
    ];
    for (input, expected) in cases {
        check(input, expected);
    }
}

#[test]
fn my_x_is_y_keeps_the_users_sentence() {
    assert_eq!(
        texts("My favorite color is blue."),
        ["My favorite color is blue."]
    );
    assert_eq!(
        texts("  my favorite color is blue  "),
        ["My favorite color is blue."]
    );
    assert_eq!(
        texts("My favorite color is blue!"),
        ["My favorite color is blue!"]
    );
    assert_eq!(
        texts("Btw, my favorite movie is Heat"),
        ["My favorite movie is Heat."]
    );
    assert!(texts("My favorite food is sushi.")[0].contains("sushi"));
}
