//! Words and texts: numbers written in words, a capital "I", values trimmed of
//! punctuation, and texts finished as sentences.

/// A number in words at the start of `words`: "thirty", "thirty-four", "thirty four",
/// "seven". Returns (number, words used).
pub(super) fn number_words(words: &[&str]) -> Option<(u32, usize)> {
    const UNITS: &[&str] = &[
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: &[&str] = &[
        "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    let unit = |word: &str| {
        UNITS
            .iter()
            .position(|name| *name == word)
            .map(|n| n as u32)
    };
    let tens = |word: &str| {
        TENS.iter()
            .position(|name| *name == word)
            .map(|n| n as u32 * 10 + 20)
    };
    let first = *words.first()?;
    if let Some((ten, one)) = first.split_once('-') {
        let one = unit(one).filter(|one| (1..10).contains(one))?;
        return Some((tens(ten)? + one, 1));
    }
    if let Some(number) = unit(first) {
        return Some((number, 1));
    }
    let ten = tens(first)?;
    match words.get(1).and_then(|word| unit(word)) {
        Some(one) if (1..10).contains(&one) => Some((ten + one, 2)),
        _ => Some((ten, 1)),
    }
}

pub(super) fn is_lower_i(token: &str) -> bool {
    let folded: String = token
        .chars()
        .map(|c| if matches!(c, '’' | '‘') { '\'' } else { c })
        .collect();
    let word = folded.trim_end_matches(|c: char| !c.is_alphanumeric());
    matches!(word, "i" | "i'm" | "i've" | "i'd" | "i'll" | "im" | "ive") && !token.starts_with('I')
}

/// A value without the punctuation around it: `"Lisbon."` -> `Lisbon`.
pub(super) fn trim_value(raw: &str) -> &str {
    raw.trim_matches(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '.' | ','
                    | ';'
                    | ':'
                    | '!'
                    | '?'
                    | '…'
                    | '"'
                    | '\''
                    | '“'
                    | '”'
                    | '‘'
                    | '’'
                    | '«'
                    | '»'
                    | '-'
                    | '–'
                    | '—'
            )
    })
}

/// Capitalizes the first letter and ends the text with a period (unless it ends with
/// "." or "!").
pub(super) fn finish_sentence(raw: &str) -> String {
    let trimmed = raw.trim().trim_end_matches(|c: char| {
        c.is_whitespace() || matches!(c, ',' | ';' | ':' | '-' | '–' | '—')
    });
    let mut text = String::with_capacity(trimmed.len() + 1);
    let mut characters = trimmed.chars();
    if let Some(first) = characters.next() {
        text.extend(first.to_uppercase());
        text.push_str(characters.as_str());
    }
    if text.is_empty() {
        return text;
    }
    let last_meaningful = text
        .chars()
        .rev()
        .find(|c| !matches!(c, '"' | '\'' | ')' | ']' | '”' | '’' | '»'));
    if !matches!(last_meaningful, Some('.' | '!' | '…' | '。' | '！')) {
        text.push('.');
    }
    text
}
