//! A raw RFC 822 message, parsed with mail-parser into what the intake needs. Each part
//! that carries content becomes one item of the ingest batch, so each is its own memory
//! (or memories) and each attachment stays a downloadable file:
//!
//! - the body: the text bodies (`message.txt`, the subject, sender and date on top so a
//!   search finds them too), or, for an HTML-only message, the HTML bodies
//!   (`message.html`, converted to text by the file pipeline);
//! - each attachment under its own file name;
//! - each forwarded message (`message/rfc822` part) as `{subject}.eml`, which the file
//!   pipeline reads as a mail of its own (its body and attachments).

use mail_parser::{Address, Message, MessageParser, MimeHeaders, PartType};

use super::authentication::AuthenticationHeaders;

/// Parts one message turns into at most (the body and attachments); more are skipped.
pub const MAX_PARTS: usize = 50;

/// Header fields of which a message has at least one.
const MESSAGE_FIELDS: [&str; 12] = [
    "from",
    "to",
    "cc",
    "subject",
    "date",
    "message-id",
    "return-path",
    "delivered-to",
    "received",
    "mime-version",
    "content-type",
    "sender",
];

/// What the intake reads from a message.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundMessage {
    /// `Message-ID` without angle brackets.
    pub message_id: Option<String>,
    /// The author: the first `From` address, else the `Return-Path`, lower-cased.
    pub sender: Option<String>,
    /// `From` as written (display name and address), for metadata.
    pub from_display: Option<String>,
    pub subject: Option<String>,
    /// `Date` as RFC 3339.
    pub date: Option<String>,
    /// Every recipient the message names, in the order the intake tries them:
    /// `Delivered-To` (each, topmost first), then `To`, then `Cc`.
    pub recipients: Vec<String>,
    pub authentication: AuthenticationHeaders,
    /// The body, the attachments and the forwarded messages, in that order.
    pub parts: Vec<MailPart>,
    /// Parts left out because the message had more than [`MAX_PARTS`].
    pub skipped_parts: usize,
}

/// One part to store as a file.
#[derive(Debug, Clone, PartialEq)]
pub struct MailPart {
    pub filename: String,
    /// The part's declared `Content-Type` (the pipeline sniffs the bytes anyway).
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

/// Parses `raw`; `Err` when it is no message at all (no header could be read).
pub fn parse_message(raw: &[u8]) -> Result<InboundMessage, String> {
    let message = MessageParser::default()
        .parse(raw)
        .ok_or_else(|| "no header block could be read".to_owned())?;
    // mail-parser reads a header out of almost anything; a message names at least one of
    // the fields every MTA or author writes.
    let known = message.headers_raw().any(|(name, _)| {
        MESSAGE_FIELDS
            .iter()
            .any(|field| name.eq_ignore_ascii_case(field))
    });
    if !known {
        return Err(
            "no header block could be read (none of From, To, Subject, Date, Message-ID, ...)"
                .to_owned(),
        );
    }
    let sender = first_address(message.from())
        .or_else(|| message.return_address().map(str::to_owned))
        .map(|address| address.trim().trim_matches(['<', '>']).to_ascii_lowercase())
        .filter(|address| address.contains('@'));
    let mut recipients: Vec<String> = message
        .headers_raw()
        .filter(|(name, _)| name.eq_ignore_ascii_case("delivered-to"))
        .map(|(_, value)| value.trim().to_owned())
        .collect();
    for address in message.all_to().chain(message.all_cc()) {
        recipients.extend(
            address
                .iter()
                .filter_map(|addr| addr.address().map(str::to_owned)),
        );
    }
    let topmost = |wanted: &str| {
        message
            .headers_raw()
            .find(|(name, _)| name.eq_ignore_ascii_case(wanted))
            .map(|(_, value)| value.trim().to_owned())
    };
    let authentication = AuthenticationHeaders {
        authentication_results: topmost("authentication-results"),
        received_spf: topmost("received-spf"),
    };
    let subject = message.subject().map(|subject| subject.trim().to_owned());
    let from_display = message.from().map(display_addresses);
    let date = message.date().map(|date| date.to_rfc3339());
    let message_id = message
        .message_id()
        .map(|id| id.trim().trim_matches(['<', '>']).to_owned())
        .filter(|id| !id.is_empty() && id.len() <= 998);
    let mut parts = Vec::new();
    if let Some(body) = body_part(
        &message,
        subject.as_deref(),
        from_display.as_deref(),
        date.as_deref(),
    ) {
        parts.push(body);
    }
    parts.extend(attachment_parts(&message));
    let skipped_parts = parts.len().saturating_sub(MAX_PARTS);
    parts.truncate(MAX_PARTS);
    Ok(InboundMessage {
        message_id,
        sender,
        from_display,
        subject,
        date,
        recipients,
        authentication,
        parts,
        skipped_parts,
    })
}

fn first_address(address: Option<&Address<'_>>) -> Option<String> {
    address?
        .iter()
        .find_map(|addr| addr.address().map(str::to_owned))
}

fn display_addresses(address: &Address<'_>) -> String {
    address
        .iter()
        .map(|addr| match (addr.name(), addr.address()) {
            (Some(name), Some(email)) => format!("{name} <{email}>"),
            (None, Some(email)) => email.to_owned(),
            (Some(name), None) => name.to_owned(),
            (None, None) => String::new(),
        })
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The body as one file: the plain text bodies, else the HTML ones; `None` when the
/// message has no body text.
fn body_part(
    message: &Message<'_>,
    subject: Option<&str>,
    from: Option<&str>,
    date: Option<&str>,
) -> Option<MailPart> {
    let texts: Vec<&str> = message
        .text_bodies()
        .filter_map(|part| match &part.body {
            PartType::Text(text) => Some(text.as_ref()),
            _ => None,
        })
        .filter(|text| !text.trim().is_empty())
        .collect();
    let heading: Vec<String> = [("Subject", subject), ("From", from), ("Date", date)]
        .into_iter()
        .filter_map(|(name, value)| {
            value
                .filter(|v| !v.is_empty())
                .map(|v| format!("{name}: {v}"))
        })
        .collect();
    if !texts.is_empty() {
        let mut text = heading.join("\n");
        for body in texts {
            text.push_str("\n\n");
            text.push_str(&body.replace("\r\n", "\n"));
        }
        return Some(MailPart {
            filename: "message.txt".to_owned(),
            content_type: Some("text/plain; charset=utf-8".to_owned()),
            bytes: text.trim().as_bytes().to_vec(),
        });
    }
    let htmls: Vec<&str> = message
        .html_bodies()
        .filter_map(|part| match &part.body {
            PartType::Html(html) => Some(html.as_ref()),
            _ => None,
        })
        .filter(|html| !html.trim().is_empty())
        .collect();
    if htmls.is_empty() {
        return None;
    }
    let mut html = String::new();
    if !heading.is_empty() {
        html.push_str("<p>");
        html.push_str(
            &heading
                .iter()
                .map(|line| escape_html(line))
                .collect::<Vec<_>>()
                .join("<br>"),
        );
        html.push_str("</p>\n");
    }
    for body in htmls {
        html.push_str(body);
        html.push('\n');
    }
    Some(MailPart {
        filename: "message.html".to_owned(),
        content_type: Some("text/html; charset=utf-8".to_owned()),
        bytes: html.into_bytes(),
    })
}

/// Each attachment with content; a forwarded message as its raw `.eml`.
fn attachment_parts(message: &Message<'_>) -> Vec<MailPart> {
    let mut parts = Vec::new();
    for (index, part) in message.attachments().enumerate() {
        let content_type = part.content_type().map(|ct| match ct.subtype() {
            Some(subtype) => format!("{}/{}", ct.ctype(), subtype),
            None => ct.ctype().to_owned(),
        });
        let (filename, bytes) = match &part.body {
            PartType::Message(nested) => {
                let name = nested
                    .subject()
                    .map(file_stem)
                    .filter(|stem| !stem.is_empty())
                    .unwrap_or_else(|| format!("forwarded-{}", index + 1));
                (format!("{name}.eml"), nested.raw_message().to_vec())
            }
            PartType::Multipart(_) => continue,
            _ => {
                let name = part
                    .attachment_name()
                    .map(str::trim)
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned)
                    .unwrap_or_else(|| unnamed(index, content_type.as_deref()));
                (name, part.contents().to_vec())
            }
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        parts.push(MailPart {
            filename,
            content_type,
            bytes,
        });
    }
    parts
}

/// A name for an attachment that has none, with the extension its type suggests.
fn unnamed(index: usize, content_type: Option<&str>) -> String {
    let extension = match content_type
        .unwrap_or_default()
        .to_ascii_lowercase()
        .as_str()
    {
        "text/plain" => ".txt",
        "text/html" => ".html",
        "text/markdown" => ".md",
        "text/csv" => ".csv",
        "application/pdf" => ".pdf",
        "image/png" => ".png",
        "image/jpeg" => ".jpg",
        "message/rfc822" => ".eml",
        _ => "",
    };
    format!("attachment-{}{extension}", index + 1)
}

/// A subject as a file name stem: letters, digits, spaces, dashes and dots; 80 chars.
fn file_stem(subject: &str) -> String {
    subject
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || " -_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect::<String>()
        .trim()
        .trim_matches('.')
        .to_owned()
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str = "Return-Path: <me@example.org>\r\n\
Delivered-To: mv-abc@in.test\r\n\
Authentication-Results: mx.in.test; dkim=pass header.d=example.org\r\n\
Authentication-Results: forged.test; dkim=pass header.d=evil.test\r\n\
From: Me <Me@Example.org>\r\n\
To: team@lists.test, Drop <mv-def@in.test>\r\n\
Cc: mv-ghi@in.test\r\n\
Subject: Regatta\r\n\
Date: Tue, 24 Nov 2026 10:00:00 +0000\r\n\
Message-ID: <abc.123@example.org>\r\n\
\r\n\
The regatta moved to Saturday.\r\n";

    #[test]
    fn a_plain_message_gives_its_headers_and_one_body_part() {
        let message = parse_message(PLAIN.as_bytes()).unwrap();
        assert_eq!(message.sender.as_deref(), Some("me@example.org"));
        assert_eq!(message.message_id.as_deref(), Some("abc.123@example.org"));
        assert_eq!(message.subject.as_deref(), Some("Regatta"));
        assert_eq!(
            message.recipients,
            vec![
                "mv-abc@in.test",
                "team@lists.test",
                "mv-def@in.test",
                "mv-ghi@in.test"
            ]
        );
        assert_eq!(
            message.authentication.authentication_results.as_deref(),
            Some("mx.in.test; dkim=pass header.d=example.org"),
            "the topmost one"
        );
        assert_eq!(message.parts.len(), 1);
        let body = String::from_utf8(message.parts[0].bytes.clone()).unwrap();
        assert!(
            body.starts_with("Subject: Regatta\nFrom: Me <Me@Example.org>"),
            "{body}"
        );
        assert!(body.ends_with("The regatta moved to Saturday."), "{body}");
    }

    #[test]
    fn html_only_attachments_and_forwards_become_parts() {
        let raw = "From: me@example.org\r\n\
To: mv-abc@in.test\r\n\
Subject: Fwd: Lease\r\n\
MIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=\"b1\"\r\n\
\r\n\
--b1\r\n\
Content-Type: text/html; charset=utf-8\r\n\
\r\n\
<p>Quartermaster <b>counted</b> kayaks.</p>\r\n\
--b1\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
Content-Disposition: attachment; filename=\"minutes.txt\"\r\n\
\r\n\
The committee approved the racks.\r\n\
--b1\r\n\
Content-Type: message/rfc822\r\n\
\r\n\
From: original@elsewhere.test\r\n\
Subject: Orchard lease\r\n\
\r\n\
The orchard lease runs until March.\r\n\
--b1--\r\n";
        let message = parse_message(raw.as_bytes()).unwrap();
        let names: Vec<&str> = message
            .parts
            .iter()
            .map(|part| part.filename.as_str())
            .collect();
        assert_eq!(
            names,
            vec!["message.html", "minutes.txt", "Orchard lease.eml"]
        );
        let html = String::from_utf8(message.parts[0].bytes.clone()).unwrap();
        assert!(html.contains("<b>counted</b>") && html.contains("Subject: Fwd: Lease"));
        assert_eq!(message.parts[1].bytes, b"The committee approved the racks.");
        let forwarded = String::from_utf8(message.parts[2].bytes.clone()).unwrap();
        assert!(forwarded.contains("Subject: Orchard lease") && forwarded.contains("until March"));
    }

    #[test]
    fn deeply_nested_messages_and_multiparts_neither_overflow_nor_panic() {
        let depth = 5_000;
        let mut forwarded = String::from("From: a@example.org\r\nTo: mv-abc@in.test\r\n");
        for _ in 0..depth {
            forwarded.push_str("Content-Type: message/rfc822\r\n\r\nFrom: a@example.org\r\n");
        }
        forwarded.push_str("\r\nthe innermost text\r\n");
        let mut multipart = String::from("From: a@example.org\r\n");
        for level in 0..depth {
            multipart.push_str(&format!(
                "Content-Type: multipart/mixed; boundary=\"b{level}\"\r\n\r\n--b{level}\r\n"
            ));
        }
        multipart.push_str("Content-Type: text/plain\r\n\r\ndeep\r\n");
        for raw in [forwarded, multipart] {
            // On a thread with a 2 MiB stack, as tokio's blocking pool gives.
            let outcome = std::thread::Builder::new()
                .stack_size(2 * 1024 * 1024)
                .spawn(move || parse_message(raw.as_bytes()).map(|message| message.parts.len()))
                .unwrap()
                .join();
            assert!(outcome.is_ok(), "parsing panicked or overflowed");
        }
    }

    #[test]
    fn garbage_is_no_message_and_never_panics() {
        assert!(parse_message(b"").is_err());
        assert!(parse_message(b"\x00\xff this is not an RFC 822 message \x00").is_err());
        assert!(parse_message(b"just: a header\r\n\r\nand a body").is_err());
        for raw in [
            &b"\x00\xff this is not an RFC 822 message \x00"[..],
            b"Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\n--x\r\n--x--",
            b"From: <<<@@@>>>\r\nTo: ,,,\r\nContent-Type: message/rfc822\r\n\r\nContent-Type: message/rfc822\r\n\r\n",
        ] {
            let _ = parse_message(raw);
        }
    }
}
