//! The small helpers: singulars, numbers in words, times of day, slots, texts, dates.

use crate::rules::slot::{singular, user_slot};
use crate::rules::text::{finish_sentence, number_words};
use crate::rules::time::{day_number, iso_date, time_of_day};

#[test]
fn helpers() {
    assert_eq!(singular("colors"), "color");
    assert_eq!(singular("movies"), "movie");
    assert_eq!(singular("dishes"), "dish");
    assert_eq!(singular("cities"), "city");
    assert_eq!(singular("series"), "series");
    assert_eq!(singular("glass"), "glass");
    assert_eq!(number_words(&["thirty", "four"]), Some((34, 2)));
    assert_eq!(number_words(&["thirty-four"]), Some((34, 1)));
    assert_eq!(number_words(&["seven"]), Some((7, 1)));
    assert_eq!(number_words(&["many"]), None);
    assert_eq!(time_of_day(&["5pm"], 0), Some((1, 17, 0)));
    assert_eq!(time_of_day(&["12am"], 0), Some((1, 0, 0)));
    assert_eq!(time_of_day(&["5:30", "pm"], 0), Some((2, 17, 30)));
    assert_eq!(time_of_day(&["25:00"], 0), None);
    assert_eq!(time_of_day(&["5"], 0), None);
    assert_eq!(
        user_slot(&["likes", "café"]).as_deref(),
        Some("user/likes_cafe")
    );
    assert_eq!(user_slot(&["likes", "日本"]), None);
    assert_eq!(finish_sentence("hello,"), "Hello.");
    assert_eq!(finish_sentence("\"quoted.\""), "\"quoted.\"");
    assert_eq!(day_number("31st"), Some(31));
    assert_eq!(day_number("32"), None);
    assert_eq!(iso_date("2026-02-30"), None);
}
