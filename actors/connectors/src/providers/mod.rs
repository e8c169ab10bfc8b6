//! One small file per provider; [`provider`] picks it by kind.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::provider::{Provider, ProviderKind};

pub mod gdrive;
pub mod gmail;
mod google;
pub mod linear;

/// The provider implementation of `kind`.
pub fn provider(kind: ProviderKind) -> Option<&'static dyn Provider> {
    match kind {
        ProviderKind::Gdrive => Some(&gdrive::Gdrive),
        ProviderKind::Gmail => Some(&gmail::Gmail),
        ProviderKind::Linear => Some(&linear::Linear),
        _ => None,
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

/// Readable text from HTML: script, style and head contents dropped, tags stripped, block
/// elements and `<br>` turned into line breaks, whitespace collapsed as a browser does, and
/// the common entities (named and numeric) decoded.
pub fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        push_html_text(&mut out, &rest[..open]);
        let tag_and_after = &rest[open..];
        if let Some(comment) = tag_and_after.strip_prefix("<!--") {
            rest = comment.find("-->").map_or("", |end| &comment[end + 3..]);
            continue;
        }
        // A `<` that opens no tag ("a < b") is text.
        let opens_tag = tag_and_after[1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '/' | '!' | '?'));
        let Some(close) = tag_and_after.find('>').filter(|_| opens_tag) else {
            push_html_text(&mut out, "<");
            rest = &tag_and_after[1..];
            continue;
        };
        let tag = &tag_and_after[1..close];
        rest = &tag_and_after[close + 1..];
        let closing = tag.starts_with('/');
        let name = tag
            .trim_start_matches('/')
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if !closing && matches!(name.as_str(), "script" | "style" | "head" | "title") {
            // Their content is not text; skip to the matching end tag (ASCII lowercasing
            // keeps byte offsets).
            let end_tag = format!("</{name}");
            rest = match rest.to_ascii_lowercase().find(&end_tag) {
                Some(at) => rest[at..].find('>').map_or("", |gt| &rest[at + gt + 1..]),
                None => "",
            };
            continue;
        }
        match name.as_str() {
            "br" | "p" | "div" | "li" | "ul" | "ol" | "tr" | "table" | "h1" | "h2" | "h3"
            | "h4" | "h5" | "h6" | "blockquote" | "pre" | "hr" | "section" | "article"
            | "header" | "footer" | "dd" | "dt" => out.push('\n'),
            "td" | "th" => out.push(' '),
            _ => {}
        }
    }
    push_html_text(&mut out, rest);
    out.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Appends HTML character data: source whitespace (newlines included) is a space, entities
/// are decoded (a non-breaking space becomes a plain one).
fn push_html_text(out: &mut String, raw: &str) {
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        push_spaced(out, &rest[..amp]);
        let entity = &rest[amp..];
        let decoded = entity
            .find(';')
            .filter(|&semi| semi <= 10)
            .and_then(|semi| decode_entity(&entity[1..semi]).map(|c| (c, semi)));
        match decoded {
            Some((c, semi)) => {
                out.push(if c == '\u{a0}' { ' ' } else { c });
                rest = &entity[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &entity[1..];
            }
        }
    }
    push_spaced(out, rest);
}

fn push_spaced(out: &mut String, raw: &str) {
    for c in raw.chars() {
        out.push(if c.is_whitespace() { ' ' } else { c });
    }
}

fn decode_entity(name: &str) -> Option<char> {
    if let Some(number) = name.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse().ok()?,
        };
        return char::from_u32(code);
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "ndash" => '\u{2013}',
        "mdash" => '\u{2014}',
        "hellip" => '\u{2026}',
        "lsquo" => '\u{2018}',
        "rsquo" => '\u{2019}',
        "ldquo" => '\u{201c}',
        "rdquo" => '\u{201d}',
        "copy" => '\u{a9}',
        "euro" => '\u{20ac}',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::html_to_text;

    #[test]
    fn html_becomes_lines_of_text() {
        let html = "<html><head><title>T</title><style>p { color: red }</style></head>\
            <body><p>Hello&nbsp;<b>world</b> &amp; friends</p>\r\n<div>second\n   line</div>\
            <script>alert('x')</script><ul><li>one</li><li>two &#8211; &#x41;</li></ul>\
            <!-- hidden -->a &lt; b &unknown; c</body></html>";
        assert_eq!(
            html_to_text(html),
            "Hello world & friends\nsecond line\none\ntwo \u{2013} A\na < b &unknown; c"
        );
    }

    #[test]
    fn broken_html_does_not_panic() {
        for html in [
            "<",
            "<p",
            "&",
            "&#xZZ;",
            "&#99999999;",
            "<script>never closed",
            "<!-- open",
            "a<3 b",
            "é<br>ü",
        ] {
            let _ = html_to_text(html);
        }
        assert_eq!(html_to_text("a<3 b"), "a<3 b");
        assert_eq!(html_to_text("é<br>ü"), "é\nü");
        assert_eq!(
            html_to_text("<p>one</p><p></p><p></p><p>two</p>"),
            "one\ntwo"
        );
    }
}
