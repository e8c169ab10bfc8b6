//! Slots: `user/<words>` names built from words (ASCII-folded, possessives and plurals
//! unified), so that the same attribute always gets the same slot.

use crate::normalize_slot;

/// `user/<words joined by _>`, ASCII only: accented letters are folded ("café" -> "cafe"),
/// other characters separate words. `None` when nothing is left or the slot is too long.
pub(super) fn user_slot(words: &[&str]) -> Option<String> {
    let folded: Vec<String> = words.iter().map(|word| ascii_fold(word)).collect();
    // A word in another script would vanish and merge unrelated slots ("I like 日本 food"
    // and "I like food"): no slot rather than a wrong one.
    let vanished = words.iter().zip(&folded).any(|(word, folded)| {
        word.chars().any(char::is_alphanumeric)
            && !folded.chars().any(|c| c.is_ascii_alphanumeric())
    });
    if vanished {
        return None;
    }
    let slot = normalize_slot("user", &folded.join(" "))?;
    let valid = slot.len() <= 100
        && slot
            .split_once('/')
            .is_some_and(|(subject, attribute)| is_slot_part(subject) && is_slot_part(attribute));
    valid.then_some(slot)
}

pub(super) fn user_slot_prefixed(prefix: &str, words: &[String]) -> Option<String> {
    if words.is_empty() {
        return None;
    }
    let mut all: Vec<&str> = vec![prefix];
    all.extend(words.iter().map(String::as_str));
    let slot = user_slot(&all)?;
    // Nothing but the prefix survived folding ("likes_" + non-Latin script).
    (slot.len() > "user/".len() + prefix.len()).then_some(slot)
}

pub(super) fn is_slot_part(part: &str) -> bool {
    !part.is_empty()
        && part
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Lower-case ASCII letters and digits; common accented Latin letters folded, anything
/// else replaced by a space.
fn ascii_fold(word: &str) -> String {
    let mut folded = String::with_capacity(word.len());
    for character in word.chars().flat_map(char::to_lowercase) {
        let replacement = match character {
            'a'..='z' | '0'..='9' => {
                folded.push(character);
                continue;
            }
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => "a",
            'ç' | 'ć' | 'č' => "c",
            'ď' | 'đ' => "d",
            'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ė' | 'ę' | 'ě' => "e",
            'ğ' => "g",
            'ì' | 'í' | 'î' | 'ï' | 'ī' | 'ı' => "i",
            'ł' => "l",
            'ñ' | 'ń' | 'ň' => "n",
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' => "o",
            'ř' => "r",
            'ś' | 'š' | 'ş' | 'ș' => "s",
            'ť' | 'ţ' | 'ț' => "t",
            'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' => "u",
            'ý' | 'ÿ' => "y",
            'ź' | 'ż' | 'ž' => "z",
            'ß' => "ss",
            'æ' => "ae",
            'œ' => "oe",
            'þ' => "th",
            _ => " ",
        };
        folded.push_str(replacement);
    }
    folded
}

/// "sister's" -> "sister", "parents'" -> "parents".
pub(super) fn strip_possessive(word: &str) -> &str {
    word.strip_suffix("'s")
        .or_else(|| word.strip_suffix('\''))
        .unwrap_or(word)
}

/// British and informal spellings that must share a slot with the American one.
pub(super) fn unify_spelling(word: &str) -> String {
    match word {
        "favourite" | "fave" | "fav" | "favorit" => "favorite",
        "colour" => "color",
        "colours" => "colors",
        "flavour" => "flavor",
        "flavours" => "flavors",
        "humour" => "humor",
        "neighbourhood" => "neighborhood",
        "theatre" => "theater",
        "centre" => "center",
        other => other,
    }
    .to_string()
}

/// A plural noun's singular, for favorite slots ("my favorite colors are ...").
pub(super) fn singular(word: &str) -> String {
    const UNCHANGED: &[&str] = &[
        "series",
        "species",
        "news",
        "clothes",
        "glasses",
        "jeans",
        "pants",
        "shorts",
        "trousers",
        "sunglasses",
        "lyrics",
        "physics",
        "mathematics",
        "maths",
        "politics",
        "economics",
        "athletics",
        "gymnastics",
        "olympics",
        "sports",
        "cookies",
        "movies",
    ];
    if UNCHANGED.contains(&word) {
        return match word {
            "cookies" => "cookie",
            "movies" => "movie",
            "sports" => "sport",
            other => other,
        }
        .to_string();
    }
    if word.len() <= 3 || word.ends_with("ss") || word.ends_with("us") || word.ends_with("is") {
        return word.to_string();
    }
    if let Some(stem) = word.strip_suffix("ies") {
        return format!("{stem}y");
    }
    for suffix in ["ches", "shes", "xes", "sses"] {
        if word.ends_with(suffix) {
            return word[..word.len() - 2].to_string();
        }
    }
    match word.strip_suffix('s') {
        Some(stem) => stem.to_string(),
        None => word.to_string(),
    }
}
