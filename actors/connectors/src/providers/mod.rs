//! One small file per provider; [`provider`] picks it by kind.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::provider::{Provider, ProviderKind};

pub mod confluence;
pub mod gdrive;
pub mod gmail;
mod google;
pub mod hubspot;
pub mod linear;
pub mod notion;
pub mod slack;

/// The provider implementation of `kind`.
pub fn provider(kind: ProviderKind) -> &'static dyn Provider {
    match kind {
        ProviderKind::Gdrive => &gdrive::Gdrive,
        ProviderKind::Gmail => &gmail::Gmail,
        ProviderKind::Linear => &linear::Linear,
        ProviderKind::Slack => &slack::Slack,
        ProviderKind::Hubspot => &hubspot::Hubspot,
        ProviderKind::Notion => &notion::Notion,
        ProviderKind::Confluence => &confluence::Confluence,
    }
}

/// A JSON time: an RFC 3339 string, or epoch milliseconds (a number or a numeric string).
pub fn parse_time(value: &Value) -> Option<DateTime<Utc>> {
    match value {
        Value::String(text) => DateTime::parse_from_rfc3339(text.trim())
            .map(|time| time.with_timezone(&Utc))
            .ok()
            .or_else(|| {
                text.trim()
                    .parse::<i64>()
                    .ok()
                    .and_then(DateTime::from_timestamp_millis)
            }),
        Value::Number(number) => number.as_i64().and_then(DateTime::from_timestamp_millis),
        _ => None,
    }
}

/// A non-empty trimmed string.
pub fn text_of(value: &Value) -> Option<String> {
    value
        .as_str()
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

/// A short title from a text: its first non-blank line, at most `max` characters (an
/// ellipsis marks a cut); None when the text is blank.
pub fn first_line(text: &str, max: usize) -> Option<String> {
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    if line.chars().count() <= max {
        return Some(line.to_owned());
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    Some(format!("{}…", cut.trim_end()))
}

/// A provider's free-form error text made safe to keep: at most 200 characters, with every
/// secret of the connection's credentials replaced.
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut clean = text.to_owned();
    for secret in secrets {
        if !secret.is_empty() {
            clean = clean.replace(secret.as_str(), "<redacted>");
        }
    }
    clean.chars().take(200).collect()
}

/// A provider's error code (Slack's `error`, HubSpot's `category`) kept to the characters
/// such codes use, so nothing else from an answer reaches an error text.
pub fn code_of(value: &Value) -> Option<String> {
    let code: String = value
        .as_str()?
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .take(64)
        .collect();
    (!code.is_empty()).then_some(code)
}

/// The readable text of an HTML or XHTML fragment (Confluence's storage format, an HTML
/// mail part): tags dropped, block elements and `<br>` as line breaks, list items on their
/// own lines, entities decoded, CDATA kept (code macros), comments, scripts, styles and
/// Confluence macro parameters dropped, whitespace collapsed. Never fails: malformed markup
/// is read as well as it can be.
pub fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find(['<', '&']) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if rest.starts_with('&') {
            let (decoded, used) = entity(rest);
            out.push_str(&decoded);
            rest = &rest[used..];
            continue;
        }
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        if let Some(after) = rest.strip_prefix("<![CDATA[") {
            let end = after.find("]]>").unwrap_or(after.len());
            out.push_str(&after[..end]);
            rest = after.get(end + 3..).unwrap_or("");
            continue;
        }
        let Some(close) = tag_end(rest) else {
            // A lone `<` that opens no tag is text.
            out.push('<');
            rest = &rest[1..];
            continue;
        };
        let tag = &rest[1..close];
        rest = &rest[close + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '-' | '_'))
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() {
            // `<!DOCTYPE ...>`, `<?xml ...?>`: nothing to read.
            continue;
        }
        let self_closing = tag.trim_end().ends_with('/');
        if !closing && !self_closing && matches!(name.as_str(), "script" | "style" | "ac:parameter")
        {
            let end = format!("</{name}");
            rest = find_ascii_ci(rest, &end).map_or("", |at| {
                rest[at..].find('>').map_or("", |gt| &rest[at + gt + 1..])
            });
            continue;
        }
        match name.as_str() {
            "br" | "hr" => out.push('\n'),
            "td" | "th" if !closing => out.push_str(" | "),
            "p"
            | "div"
            | "ul"
            | "ol"
            | "li"
            | "tr"
            | "table"
            | "thead"
            | "tbody"
            | "pre"
            | "blockquote"
            | "section"
            | "article"
            | "header"
            | "footer"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "dl"
            | "dt"
            | "dd"
            | "ac:structured-macro"
            | "ac:rich-text-body"
            | "ac:plain-text-body"
            | "ac:task" => out.push('\n'),
            _ => {}
        }
    }
    out.push_str(rest);
    tidy(&out)
}

/// The index of the `>` closing the tag `text` starts with (quotes respected), or None when
/// `text` does not start a tag.
fn tag_end(text: &str) -> Option<usize> {
    let second = text[1..].chars().next()?;
    if !(second.is_ascii_alphabetic() || matches!(second, '/' | '!' | '?')) {
        return None;
    }
    let mut quote: Option<char> = None;
    for (index, c) in text.char_indices().skip(1) {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '>' => return Some(index),
            None => {}
        }
    }
    None
}

fn find_ascii_ci(haystack: &str, needle: &str) -> Option<usize> {
    let needle = needle.as_bytes();
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
}

/// The character an entity at the start of `text` stands for, and how many bytes it took
/// (an unknown or broken entity is the `&` itself).
fn entity(text: &str) -> (String, usize) {
    let Some(end) = text
        .char_indices()
        .take(12)
        .find(|(_, c)| *c == ';')
        .map(|(at, _)| at)
    else {
        return ("&".to_owned(), 1);
    };
    let name = &text[1..end];
    let decoded = match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some(' '),
        "ndash" => Some('\u{2013}'),
        "mdash" => Some('\u{2014}'),
        "hellip" => Some('\u{2026}'),
        "lsquo" => Some('\u{2018}'),
        "rsquo" => Some('\u{2019}'),
        "ldquo" => Some('\u{201c}'),
        "rdquo" => Some('\u{201d}'),
        "copy" => Some('\u{a9}'),
        _ => name
            .strip_prefix("#x")
            .or_else(|| name.strip_prefix("#X"))
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .or_else(|| name.strip_prefix('#').and_then(|dec| dec.parse().ok()))
            .and_then(char::from_u32),
    };
    match decoded {
        Some(c) => (c.to_string(), end + 1),
        None => ("&".to_owned(), 1),
    }
}

/// Spaces collapsed within lines, lines trimmed, blank lines dropped.
fn tidy(text: &str) -> String {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty() && line != "|")
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_line_is_short_and_cut_on_a_character() {
        assert_eq!(
            first_line("\n  hello there \nmore", 80).as_deref(),
            Some("hello there")
        );
        assert_eq!(first_line("   \n ", 80), None);
        assert_eq!(first_line("ééééé", 3).as_deref(), Some("éé…"));
    }

    #[test]
    fn scrub_removes_secrets() {
        let text = scrub("bad token xoxb-123 here", &["xoxb-123".to_owned()]);
        assert_eq!(text, "bad token <redacted> here");
    }

    #[test]
    fn codes_keep_only_code_characters() {
        assert_eq!(
            code_of(&serde_json::json!("invalid_auth")).as_deref(),
            Some("invalid_auth")
        );
        assert_eq!(
            code_of(&serde_json::json!("a b<c>")).as_deref(),
            Some("abc")
        );
        assert_eq!(code_of(&serde_json::json!(3)), None);
    }

    #[test]
    fn html_to_text_reads_confluence_storage() {
        let storage = "<p>The <strong>ferry</strong> leaves at nine.</p><ul><li><p>Tickets &amp; \
                       passes</p></li><li>Bring a&nbsp;coat</li></ul><ac:structured-macro \
                       ac:name=\"code\"><ac:parameter ac:name=\"language\">rust</ac:parameter>\
                       <ac:plain-text-body><![CDATA[let a = 1 < 2;]]></ac:plain-text-body>\
                       </ac:structured-macro><!-- a comment --><p>x &lt; y &#38; &#x41;</p>";
        assert_eq!(
            html_to_text(storage),
            "The ferry leaves at nine.\nTickets & passes\nBring a coat\nlet a = 1 < 2;\nx < y & A"
        );
    }

    #[test]
    fn html_to_text_survives_broken_markup() {
        assert_eq!(html_to_text("a < b and c > d"), "a < b and c > d");
        assert_eq!(html_to_text("<p>open <b>bold"), "open bold");
        assert_eq!(html_to_text("<p title=\"a>b\">quoted</p>"), "quoted");
        assert_eq!(
            html_to_text("fish &chips; &unknown; &"),
            "fish &chips; &unknown; &"
        );
        assert_eq!(
            html_to_text("<script>alert(1)</script>after<style>p{}</STYLE>"),
            "after"
        );
        assert_eq!(html_to_text("<![CDATA[unterminated"), "unterminated");
        assert_eq!(html_to_text("<!-- unterminated"), "");
        assert_eq!(html_to_text("<"), "<");
        assert_eq!(
            html_to_text("caf\u{e9} <br/>na\u{ef}ve"),
            "caf\u{e9}\nna\u{ef}ve"
        );
        assert_eq!(html_to_text("&#xD800;&#99999999;"), "&#xD800;&#99999999;");
    }
}
