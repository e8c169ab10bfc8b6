//! Sentences and words: splitting content into sentences, sentences into tokens, and
//! tokens into normalized words (lower case, contractions expanded).

use super::lexicon::ABBREVIATIONS;

/// Splits on `. ! ? ;`, newlines (and their CJK forms), keeping the terminator with its
/// sentence. A dot inside a number ("3.5"), a word ("example.com", "e.g.") or after a
/// common abbreviation ("Dr.") does not end a sentence.
pub(super) fn split_sentences(content: &str) -> Vec<&str> {
    let mut sentences = Vec::new();
    let mut start = 0;
    let mut chars = content.char_indices().peekable();
    while let Some((position, character)) = chars.next() {
        let ends = match character {
            '!' | '?' | ';' | '\n' | '\r' | '。' | '！' | '？' | '；' | '…' => true,
            '.' => dot_ends_sentence(content, start, position),
            _ => false,
        };
        if !ends {
            continue;
        }
        let mut end = position + character.len_utf8();
        if !matches!(character, '\n' | '\r') {
            // Keep "?!", "..." and closing quotes or brackets with the sentence.
            while let Some(&(next_position, next)) = chars.peek() {
                if !matches!(
                    next,
                    '.' | '!' | '?' | '…' | '"' | '\'' | ')' | ']' | '”' | '’' | '»'
                ) {
                    break;
                }
                end = next_position + next.len_utf8();
                chars.next();
            }
        }
        sentences.push(&content[start..end]);
        start = end;
    }
    if start < content.len() {
        sentences.push(&content[start..]);
    }
    sentences
}

/// Whether the dot at byte `position` (a one-byte character) ends the sentence that
/// started at byte `start`.
fn dot_ends_sentence(content: &str, start: usize, position: usize) -> bool {
    let after = content[position + 1..].chars().next();
    if after.is_some_and(char::is_alphanumeric) {
        return false; // "3.5", "e.g", "example.com"
    }
    // The word before the dot, if short enough to be an abbreviation.
    let mut word = String::new();
    for character in content[start..position].chars().rev() {
        if character.is_whitespace() || character == '(' || character == '"' {
            break;
        }
        if word.chars().count() >= 8 {
            return true;
        }
        word.insert(0, character);
    }
    let lower = word.to_lowercase();
    if ABBREVIATIONS.contains(&lower.as_str()) {
        return false;
    }
    // A single capital letter is an initial ("J. K. Rowling").
    let mut letters = word.chars();
    !matches!((letters.next(), letters.next()), (Some(initial), None) if initial.is_uppercase())
}

/// The terminator at the end of a trimmed sentence contains a question mark.
pub(super) fn is_question(sentence: &str) -> bool {
    sentence
        .chars()
        .rev()
        .take_while(|character| {
            matches!(
                character,
                '?' | '？' | '!' | '.' | '…' | '"' | '\'' | ')' | ']' | '”' | '’' | '»'
            )
        })
        .any(|character| matches!(character, '?' | '？'))
}

/// A whitespace-separated piece of the sentence, in its original casing.
pub(super) struct Token<'a> {
    pub(super) text: &'a str,
    /// Length of `text` without its trailing punctuation ("Lisbon," -> 6).
    pub(super) core_len: usize,
}

/// A normalized word; contractions become several words of the same token.
pub(super) struct Word {
    pub(super) norm: String,
    pub(super) token: usize,
}

pub(super) struct Sentence<'a> {
    pub(super) tokens: Vec<Token<'a>>,
    pub(super) words: Vec<Word>,
}

impl<'a> Sentence<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let tokens: Vec<Token<'a>> = text
            .split_whitespace()
            .map(|token| Token {
                text: token,
                core_len: token.trim_end_matches(|c: char| !c.is_alphanumeric()).len(),
            })
            .collect();
        let mut words = Vec::new();
        for (index, token) in tokens.iter().enumerate() {
            let norm = normalize_word(token.text);
            match expand_contraction(&norm) {
                Some(parts) => words.extend(parts.iter().map(|part| Word {
                    norm: (*part).to_string(),
                    token: index,
                })),
                None => words.push(Word { norm, token: index }),
            }
        }
        Self { tokens, words }
    }

    pub(super) fn token_of(&self, word: usize) -> &Token<'a> {
        &self.tokens[self.words[word].token]
    }

    /// The word's token starts with an upper-case letter in the original text.
    pub(super) fn is_capitalized(&self, word: usize) -> bool {
        self.token_of(word)
            .text
            .trim_start_matches(|c: char| !c.is_alphanumeric())
            .chars()
            .next()
            .is_some_and(char::is_uppercase)
    }

    /// The word's token is followed by a comma ("Lisbon,").
    pub(super) fn ends_with_comma(&self, word: usize) -> bool {
        let token = self.words[word].token;
        let last_of_token = self
            .words
            .get(word + 1)
            .is_none_or(|next| next.token != token);
        last_of_token && self.tokens[token].text.ends_with(',')
    }
}

/// Lower case, typographic apostrophes folded to `'`, surrounding punctuation dropped
/// ("I’m" -> "i'm", "Lisbon." -> "lisbon"). A token of punctuation only stays as it is.
fn normalize_word(raw: &str) -> String {
    let folded: String = raw
        .chars()
        .map(|character| match character {
            '’' | '‘' | 'ʼ' | '`' | '´' | '′' => '\'',
            other => other,
        })
        .flat_map(char::to_lowercase)
        .collect();
    let trimmed = folded.trim_matches(|c: char| !c.is_alphanumeric());
    if trimmed.is_empty() {
        folded
    } else {
        trimmed.to_string()
    }
}

fn expand_contraction(norm: &str) -> Option<&'static [&'static str]> {
    Some(match norm {
        "i'm" | "im" => &["i", "am"],
        "i've" | "ive" => &["i", "have"],
        "i'd" => &["i", "would"],
        "i'll" => &["i", "will"],
        "we're" => &["we", "are"],
        "we've" => &["we", "have"],
        "we'll" => &["we", "will"],
        "don't" | "dont" => &["do", "not"],
        "doesn't" | "doesnt" => &["does", "not"],
        "didn't" | "didnt" => &["did", "not"],
        "can't" | "cant" | "cannot" => &["can", "not"],
        "won't" | "wont" => &["will", "not"],
        "isn't" | "isnt" => &["is", "not"],
        "aren't" | "arent" => &["are", "not"],
        "wasn't" | "wasnt" => &["was", "not"],
        "weren't" => &["were", "not"],
        "haven't" | "havent" => &["have", "not"],
        "hasn't" => &["has", "not"],
        "hadn't" => &["had", "not"],
        "wouldn't" => &["would", "not"],
        "shouldn't" => &["should", "not"],
        "couldn't" => &["could", "not"],
        "ain't" => &["am", "not"],
        "it's" => &["it", "is"],
        "that's" => &["that", "is"],
        "there's" => &["there", "is"],
        "gonna" => &["going", "to"],
        "wanna" => &["want", "to"],
        _ => return None,
    })
}
