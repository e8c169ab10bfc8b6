//! Plain text and Markdown: decoded, line endings normalised, otherwise kept as written.

use crate::decode;
use crate::extracted::{Extracted, TextBuilder};
use crate::kind::Kind;
use crate::limits::Limits;

pub(super) fn extract_text(bytes: &[u8], limits: &Limits) -> Extracted {
    let text = normalise_line_endings(&decode::decode_text(bytes));
    let mut builder = TextBuilder::new(limits.max_chars);
    builder.push(text.trim());
    builder.finish(Kind::Text, None)
}

pub(super) fn extract_markdown(bytes: &[u8], limits: &Limits) -> Extracted {
    let text = normalise_line_endings(&decode::decode_text(bytes));
    let title = first_heading(&text);
    let mut builder = TextBuilder::new(limits.max_chars);
    builder.push(text.trim());
    builder.finish(Kind::Markdown, title)
}

pub(super) fn normalise_line_endings(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// The first level-one ATX heading outside fenced code.
fn first_heading(markdown: &str) -> Option<String> {
    let mut in_fence = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if let Some(heading) = trimmed.strip_prefix("# ") {
            let heading = heading.trim().trim_end_matches('#').trim();
            if !heading.is_empty() {
                return Some(heading.to_owned());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_keeps_its_text_and_finds_its_title() {
        let markdown = b"```\n# not a title\n```\n# Peat survey\r\n\r\n- item\r\n";
        let extracted = extract_markdown(markdown, &Limits::default());
        assert_eq!(extracted.title.as_deref(), Some("Peat survey"));
        assert!(extracted.text.contains("# Peat survey\n\n- item"));
    }

    #[test]
    fn text_is_decoded_and_capped() {
        let limits = Limits {
            max_chars: 4,
            ..Limits::default()
        };
        let extracted = extract_text(b"caf\xE9 au lait", &limits);
        assert_eq!(extracted.text, "café");
        assert!(extracted.truncated);
    }
}
