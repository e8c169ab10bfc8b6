//! RTF: a small tolerant reader. Groups are tracked for their skip state and Unicode
//! fallback count; destinations that are not body text (font and colour tables, style
//! sheets, pictures, field instructions, `\*` extensions) are skipped; `\'xx` bytes are
//! decoded in the document's code page (`\ansicpg`, Windows-1252 by default) and `\uN`
//! characters replace their fallback. Malformed input never fails: whatever text can be
//! found is the result.

use crate::extracted::{Extracted, TextBuilder};
use crate::kind::Kind;
use crate::limits::Limits;

/// Destinations whose content is not body text.
const SKIPPED_DESTINATIONS: [&str; 24] = [
    "fonttbl",
    "colortbl",
    "stylesheet",
    "info",
    "pict",
    "object",
    "objdata",
    "fldinst",
    "listtable",
    "listoverridetable",
    "rsidtbl",
    "themedata",
    "colorschememapping",
    "datastore",
    "latentstyles",
    "generator",
    "xmlnstbl",
    "mmathPr",
    "filetbl",
    "revtbl",
    "pgdsctbl",
    "header",
    "footer",
    "bkmkstart",
];

/// Deeper groups share their parent's state instead of growing the stack without end.
const MAX_GROUP_DEPTH: usize = 1024;

#[derive(Clone, Copy)]
struct GroupState {
    skip: bool,
    /// Characters to drop after a `\uN` (the ANSI fallback), set by `\ucN`.
    unicode_fallback: usize,
}

pub(super) fn extract(bytes: &[u8], limits: &Limits) -> Extracted {
    let text = rtf_to_text(bytes);
    let mut builder = TextBuilder::new(limits.max_chars);
    let paragraphs: Vec<String> = text
        .split('\n')
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect();
    for paragraph in paragraphs {
        builder.block(&paragraph);
    }
    builder.finish(Kind::Rtf, None)
}

fn rtf_to_text(bytes: &[u8]) -> String {
    let mut text = String::new();
    let mut pending_bytes: Vec<u8> = Vec::new();
    let mut encoding = encoding_rs::WINDOWS_1252;
    let mut stack: Vec<GroupState> = Vec::new();
    let mut overflow_depth = 0usize;
    let mut state = GroupState {
        skip: false,
        unicode_fallback: 1,
    };
    let mut fallback_to_drop = 0usize;
    // True right after `{`: a `\*` or a destination word there starts a skipped group.
    let mut at_group_start = false;
    let mut index = 0;
    let flush =
        |pending: &mut Vec<u8>, text: &mut String, encoding: &'static encoding_rs::Encoding| {
            if !pending.is_empty() {
                text.push_str(&encoding.decode_without_bom_handling(pending).0);
                pending.clear();
            }
        };
    while let Some(&byte) = bytes.get(index) {
        index += 1;
        match byte {
            b'{' => {
                flush(&mut pending_bytes, &mut text, encoding);
                if stack.len() < MAX_GROUP_DEPTH {
                    stack.push(state);
                } else {
                    overflow_depth += 1;
                }
                at_group_start = true;
                continue;
            }
            b'}' => {
                flush(&mut pending_bytes, &mut text, encoding);
                if overflow_depth > 0 {
                    overflow_depth -= 1;
                } else if let Some(parent) = stack.pop() {
                    state = parent;
                }
                at_group_start = false;
                continue;
            }
            b'\\' => {
                let Some(&next) = bytes.get(index) else {
                    break;
                };
                if next.is_ascii_alphabetic() {
                    let word_start = index;
                    while bytes
                        .get(index)
                        .is_some_and(|byte| byte.is_ascii_alphabetic())
                        && index - word_start < 32
                    {
                        index += 1;
                    }
                    let word =
                        String::from_utf8_lossy(bytes.get(word_start..index).unwrap_or_default())
                            .into_owned();
                    let number_start = index;
                    if bytes.get(index) == Some(&b'-') {
                        index += 1;
                    }
                    while bytes.get(index).is_some_and(u8::is_ascii_digit)
                        && index - number_start < 11
                    {
                        index += 1;
                    }
                    let parameter: Option<i64> =
                        std::str::from_utf8(bytes.get(number_start..index).unwrap_or_default())
                            .ok()
                            .and_then(|number| number.parse().ok());
                    if bytes.get(index) == Some(&b' ') {
                        index += 1;
                    }
                    if at_group_start && SKIPPED_DESTINATIONS.contains(&word.as_str()) {
                        state.skip = true;
                    }
                    at_group_start = false;
                    if word == "ansicpg" {
                        if let Some(found) = parameter
                            .and_then(|page| u16::try_from(page).ok())
                            .and_then(codepage::to_encoding)
                        {
                            encoding = found;
                        }
                        continue;
                    }
                    if word == "uc" {
                        state.unicode_fallback = parameter.unwrap_or(1).clamp(0, 16) as usize;
                        continue;
                    }
                    if state.skip {
                        continue;
                    }
                    if word == "u" {
                        flush(&mut pending_bytes, &mut text, encoding);
                        let code =
                            parameter.map(|code| if code < 0 { code + 65_536 } else { code });
                        let character = code
                            .and_then(|code| u32::try_from(code).ok())
                            .and_then(char::from_u32)
                            .filter(|character| !character.is_control());
                        if let Some(character) = character {
                            text.push(character);
                        }
                        fallback_to_drop = state.unicode_fallback;
                        continue;
                    }
                    let replacement = match word.as_str() {
                        "par" | "line" | "row" | "sect" | "page" => Some("\n"),
                        "tab" => Some("\t"),
                        "cell" => Some(" | "),
                        "emdash" => Some("—"),
                        "endash" => Some("–"),
                        "bullet" => Some("•"),
                        "lquote" => Some("‘"),
                        "rquote" => Some("’"),
                        "ldblquote" => Some("“"),
                        "rdblquote" => Some("”"),
                        _ => None,
                    };
                    if let Some(replacement) = replacement {
                        flush(&mut pending_bytes, &mut text, encoding);
                        text.push_str(replacement);
                    }
                    continue;
                }
                index += 1;
                let was_group_start = at_group_start;
                at_group_start = false;
                match next {
                    b'*' if was_group_start => state.skip = true,
                    b'\'' => {
                        let hex = bytes
                            .get(index..index + 2)
                            .and_then(|digits| std::str::from_utf8(digits).ok());
                        if let Some(value) =
                            hex.and_then(|digits| u8::from_str_radix(digits, 16).ok())
                        {
                            index += 2;
                            if fallback_to_drop > 0 {
                                fallback_to_drop -= 1;
                            } else if !state.skip {
                                pending_bytes.push(value);
                            }
                        }
                    }
                    b'\\' | b'{' | b'}' if !state.skip => {
                        flush(&mut pending_bytes, &mut text, encoding);
                        text.push(next as char);
                    }
                    b'~' if !state.skip => text.push(' '),
                    b'_' if !state.skip => text.push('-'),
                    b'\n' | b'\r' if !state.skip => {
                        flush(&mut pending_bytes, &mut text, encoding);
                        text.push('\n');
                    }
                    _ => {}
                }
            }
            b'\r' | b'\n' => {}
            other => {
                at_group_start = false;
                if fallback_to_drop > 0 {
                    fallback_to_drop -= 1;
                    continue;
                }
                if !state.skip {
                    pending_bytes.push(other);
                }
            }
        }
    }
    flush(&mut pending_bytes, &mut text, encoding);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_text_without_tables_of_fonts_or_colours() {
        let rtf = br"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Times New Roman;}}{\colortbl;\red0\green0\blue0;}
{\*\generator Riched20;}\pard Caf\'e9 cr\'e8me\par
{\b bold} and \u8364? euro\par
{\field{\*\fldinst HYPERLINK x}{\fldrslt link text}}\par
braces \{ \} and \\ backslash}";
        let extracted = extract(rtf, &Limits::default());
        assert_eq!(
            extracted.text,
            "Café crème\n\nbold and € euro\n\nlink text\n\nbraces { } and \\ backslash"
        );
    }

    #[test]
    fn malformed_rtf_still_gives_text() {
        let extracted = extract(br"{\rtf1 unclosed {\b group \'zz \u", &Limits::default());
        assert_eq!(extracted.text, "unclosed group zz");
        let deep = format!("{{\\rtf1 {}deep{}", "{".repeat(5000), "}".repeat(10));
        assert_eq!(extract(deep.as_bytes(), &Limits::default()).text, "deep");
    }
}
