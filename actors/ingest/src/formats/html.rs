//! HTML to Markdown with htmd, boilerplate (scripts, styles, navigation, headers,
//! footers, asides, forms) dropped and the `<title>` kept. Also used for EPUB chapters and
//! HTML mail bodies.

use crate::decode;
use crate::extracted::{Extracted, TextBuilder};
use crate::kind::Kind;
use crate::limits::Limits;

/// Elements whose content is never the document's text.
const SKIPPED_ELEMENTS: [&str; 14] = [
    "head", "title", "script", "style", "noscript", "template", "nav", "header", "footer", "aside",
    "form", "iframe", "svg", "canvas",
];

pub(super) fn extract(bytes: &[u8], limits: &Limits) -> Extracted {
    let html = decode::decode_text(bytes);
    let mut builder = TextBuilder::new(limits.max_chars);
    let converted = to_markdown(&html, limits);
    if let Some(note) = converted.note {
        builder.note(note);
    }
    if let Some(title) = &converted.title {
        if !converted.markdown.contains(title.as_str()) {
            builder.block(&format!("# {title}"));
        }
    }
    builder.block(&converted.markdown);
    builder.finish(Kind::Html, converted.title)
}

pub(super) struct Converted {
    pub(super) markdown: String,
    pub(super) title: Option<String>,
    /// Set when the page was reduced to plain text instead of converted.
    pub(super) note: Option<String>,
}

pub(super) fn to_markdown(html: &str, limits: &Limits) -> Converted {
    let title = title_of(html);
    let depth = approximate_depth(html);
    if depth > limits.max_html_depth {
        return Converted {
            markdown: strip_tags(html),
            title,
            note: Some(format!(
                "html nested {depth} levels deep (limit max_html_depth {}): converted as plain text",
                limits.max_html_depth
            )),
        };
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED_ELEMENTS.to_vec())
        .build();
    match converter.convert(html) {
        Ok(markdown) => Converted {
            markdown: tidy(&markdown),
            title,
            note: None,
        },
        Err(error) => Converted {
            markdown: strip_tags(html),
            title,
            note: Some(format!(
                "html conversion failed ({error}): converted as plain text"
            )),
        },
    }
}

/// Blank-line runs collapsed to one, trailing spaces gone.
fn tidy(markdown: &str) -> String {
    let mut tidied = String::with_capacity(markdown.len());
    let mut blank_lines = 0;
    for line in markdown.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_lines += 1;
            continue;
        }
        if !tidied.is_empty() {
            tidied.push_str(if blank_lines > 0 { "\n\n" } else { "\n" });
        }
        blank_lines = 0;
        tidied.push_str(line);
    }
    tidied
}

/// The text of the first `<title>` element, entities decoded, whitespace collapsed.
pub(super) fn title_of(html: &str) -> Option<String> {
    let lowercase = html.to_ascii_lowercase();
    let open = lowercase.find("<title")?;
    let content_start = open + lowercase.get(open..)?.find('>')? + 1;
    let content_end = content_start + lowercase.get(content_start..)?.find("</title")?;
    let raw = html.get(content_start..content_end)?;
    let title = collapse_whitespace(&decode_entities(raw));
    (!title.is_empty()).then_some(title)
}

/// The deepest element nesting, counted from tags alone (void elements and `/>` do not
/// open). It overcounts unclosed `<p>` and `<li>`, which only makes the fallback earlier.
fn approximate_depth(html: &str) -> usize {
    const VOID: [&str; 14] = [
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr",
    ];
    let bytes = html.as_bytes();
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut index = 0;
    while let Some(offset) = bytes
        .get(index..)
        .and_then(|rest| rest.iter().position(|&byte| byte == b'<'))
    {
        let tag_start = index + offset + 1;
        let tag_end = bytes
            .get(tag_start..)
            .and_then(|rest| rest.iter().position(|&byte| byte == b'>'))
            .map(|end| tag_start + end)
            .unwrap_or(bytes.len());
        let tag = bytes.get(tag_start..tag_end).unwrap_or_default();
        index = tag_end;
        match tag.first() {
            Some(b'/') => depth = depth.saturating_sub(1),
            Some(first) if first.is_ascii_alphabetic() => {
                let name: String = tag
                    .iter()
                    .take_while(|byte| byte.is_ascii_alphanumeric())
                    .map(|&byte| (byte as char).to_ascii_lowercase())
                    .collect();
                if !tag.ends_with(b"/") && !VOID.contains(&name.as_str()) {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
            }
            _ => {}
        }
    }
    deepest
}

/// Plain text: tags removed (with the content of script and style), block ends become
/// line breaks, entities decoded.
pub(super) fn strip_tags(html: &str) -> String {
    let mut text = String::with_capacity(html.len() / 2);
    let lowercase = html.to_ascii_lowercase();
    let mut index = 0;
    while let Some(offset) = html.get(index..).and_then(|rest| rest.find('<')) {
        text.push_str(html.get(index..index + offset).unwrap_or_default());
        let tag_start = index + offset;
        let tag_end = html
            .get(tag_start..)
            .and_then(|rest| rest.find('>'))
            .map(|end| tag_start + end + 1)
            .unwrap_or(html.len());
        let tag = lowercase.get(tag_start..tag_end).unwrap_or_default();
        index = tag_end;
        for raw_text_element in ["script", "style"] {
            if tag.starts_with(&format!("<{raw_text_element}")) {
                let closing = format!("</{raw_text_element}");
                index = lowercase
                    .get(index..)
                    .and_then(|rest| rest.find(&closing))
                    .map(|found| index + found)
                    .unwrap_or(html.len());
            }
        }
        if tag.starts_with("</p")
            || tag.starts_with("<br")
            || tag.starts_with("</div")
            || tag.starts_with("</li")
            || tag.starts_with("</h")
            || tag.starts_with("</tr")
        {
            text.push('\n');
        } else {
            text.push(' ');
        }
    }
    text.push_str(html.get(index..).unwrap_or_default());
    let decoded = decode_entities(&text);
    decoded
        .lines()
        .map(collapse_whitespace)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The common named entities and every numeric one.
fn decode_entities(text: &str) -> String {
    let mut decoded = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(ampersand) = rest.find('&') {
        decoded.push_str(rest.get(..ampersand).unwrap_or_default());
        let after = rest.get(ampersand + 1..).unwrap_or_default();
        let entity_end = after.find(';').filter(|&end| end <= 10);
        let replacement = entity_end.and_then(|end| {
            let entity = after.get(..end)?;
            let character = match entity {
                "amp" => '&',
                "lt" => '<',
                "gt" => '>',
                "quot" => '"',
                "apos" => '\'',
                "nbsp" => ' ',
                _ => {
                    let numeric = entity.strip_prefix('#')?;
                    let code = match numeric.strip_prefix(['x', 'X']) {
                        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                        None => numeric.parse().ok()?,
                    };
                    char::from_u32(code)?
                }
            };
            Some((character, end))
        });
        match replacement {
            Some((character, end)) => {
                decoded.push(character);
                rest = after.get(end + 1..).unwrap_or_default();
            }
            None => {
                decoded.push('&');
                rest = after;
            }
        }
    }
    decoded.push_str(rest);
    decoded
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "<!DOCTYPE html><html><head><title>Keeper&#39;s log</title>\
        <style>body{}</style><script>var x = 'SCRIPT';</script></head><body>\
        <nav><a href='/'>Home NAV</a></nav><header>HEADER</header><main>\
        <h1>Log</h1><p>caf&eacute; cr&egrave;me</p><ul><li>Paraffin</li></ul>\
        <table><tr><th>Date</th></tr><tr><td>3 March</td></tr></table></main>\
        <aside>ASIDE</aside><footer>FOOTER</footer></body></html>";

    #[test]
    fn html_becomes_markdown_without_boilerplate() {
        let extracted = extract(PAGE.as_bytes(), &Limits::default());
        assert_eq!(extracted.title.as_deref(), Some("Keeper's log"));
        let text = &extracted.text;
        assert!(text.starts_with("# Keeper's log"), "{text}");
        assert!(text.contains("# Log"), "{text}");
        assert!(text.contains("café crème"), "{text}");
        assert!(text.contains("Paraffin"), "{text}");
        assert!(text.contains("3 March"), "{text}");
        for boilerplate in ["SCRIPT", "body{}", "NAV", "HEADER", "ASIDE", "FOOTER"] {
            assert!(!text.contains(boilerplate), "{boilerplate} in {text}");
        }
    }

    #[test]
    fn deep_nesting_falls_back_to_plain_text() {
        let deep = format!(
            "{}deep words{}",
            "<div>".repeat(5000),
            "</div>".repeat(5000)
        );
        let extracted = extract(deep.as_bytes(), &Limits::default());
        assert_eq!(extracted.text, "deep words");
        assert_eq!(extracted.notes.len(), 1);
    }

    #[test]
    fn nesting_just_under_the_limit_is_converted_on_a_test_thread_stack() {
        let depth = Limits::default().max_html_depth - 4;
        let nested = format!(
            "<html><body>{}<b>deep</b>{}</body></html>",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        let extracted = extract(nested.as_bytes(), &Limits::default());
        assert_eq!(extracted.text, "**deep**");
        assert!(extracted.notes.is_empty());
    }

    #[test]
    fn strip_tags_drops_scripts_and_decodes_entities() {
        let text = strip_tags("<p>a &amp; b</p><script>x<y</script><p>c&#x41;</p>");
        assert_eq!(text, "a & b\ncA");
    }
}
