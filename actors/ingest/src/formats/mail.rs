//! EML (RFC 822 / MIME) through mail-parser: `Subject`, `From`, `To`, `Cc` and `Date` as
//! header lines, the text body (an HTML-only body converted to Markdown), then each
//! attachment in a section of its own: sniffed by content, extracted through the same
//! dispatch (a forwarded `message/rfc822` is a nested mail), up to `max_mail_depth` deep
//! and `max_attachments` many. Attachments that need a worker (PDF, images, audio) are
//! handed back in `Extracted::deferred`; one that fails leaves a note, not an error.

use mail_parser::{Address, Message, MessageParser, MimeHeaders, PartType};

use super::html;
use crate::error::IngestError;
use crate::extracted::{Deferred, Extracted, Location, TextBuilder};
use crate::kind::{Kind, Route};
use crate::limits::Limits;
use crate::sniff::sniff;

pub(super) fn extract(
    bytes: &[u8],
    limits: &Limits,
    depth: usize,
) -> Result<Extracted, IngestError> {
    let message = MessageParser::default()
        .parse(bytes)
        .ok_or_else(|| IngestError::invalid(Kind::Eml, "no message headers"))?;
    if message.headers().is_empty() {
        return Err(IngestError::invalid(Kind::Eml, "no message headers"));
    }
    let mut builder = TextBuilder::new(limits.max_chars);
    render_message(&message, &mut builder, limits, depth);
    if builder.is_empty() {
        return Err(IngestError::invalid(
            Kind::Eml,
            "no headers, body or attachments with text",
        ));
    }
    let subject = message.subject().map(str::to_owned);
    Ok(builder.finish(Kind::Eml, subject))
}

fn render_message(message: &Message<'_>, builder: &mut TextBuilder, limits: &Limits, depth: usize) {
    let mut header_lines = Vec::new();
    if let Some(subject) = message.subject() {
        header_lines.push(format!("Subject: {subject}"));
    }
    for (name, address) in [
        ("From", message.from()),
        ("To", message.to()),
        ("Cc", message.cc()),
    ] {
        if let Some(address) = address.map(address_text).filter(|text| !text.is_empty()) {
            header_lines.push(format!("{name}: {address}"));
        }
    }
    if let Some(date) = message.date() {
        header_lines.push(format!("Date: {}", date.to_rfc3339()));
    }
    builder.block(&header_lines.join("\n"));
    render_body(message, builder, limits);
    render_attachments(message, builder, limits, depth);
}

fn address_text(address: &Address<'_>) -> String {
    address
        .iter()
        .map(|addr| match (addr.name(), addr.address()) {
            (Some(name), Some(email)) => format!("{name} <{email}>"),
            (Some(name), None) => name.to_owned(),
            (None, Some(email)) => email.to_owned(),
            (None, None) => String::new(),
        })
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text bodies; a body that exists only as HTML is converted to Markdown.
fn render_body(message: &Message<'_>, builder: &mut TextBuilder, limits: &Limits) {
    for part in message.text_bodies() {
        match &part.body {
            PartType::Text(text) => builder.block(&text.replace("\r\n", "\n")),
            PartType::Html(markup) => {
                let converted = html::to_markdown(markup, limits);
                if let Some(note) = converted.note {
                    builder.note(format!("mail body: {note}"));
                }
                builder.block(&converted.markdown);
            }
            PartType::Binary(_)
            | PartType::InlineBinary(_)
            | PartType::Message(_)
            | PartType::Multipart(_) => {}
        }
    }
}

fn render_attachments(
    message: &Message<'_>,
    builder: &mut TextBuilder,
    limits: &Limits,
    depth: usize,
) {
    let attachment_count = message.attachment_count();
    for (index, part) in message.attachments().enumerate() {
        if builder.is_full() {
            return;
        }
        if index >= limits.max_attachments {
            builder.note(format!(
                "{} attachments after the first {} skipped (limit max_attachments)",
                attachment_count - index,
                limits.max_attachments
            ));
            return;
        }
        let name = part.attachment_name().map(str::to_owned);
        let label = name
            .clone()
            .unwrap_or_else(|| format!("attachment {}", index + 1));
        if depth + 1 > limits.max_mail_depth {
            builder.note(format!(
                "{label}: nested deeper than {} levels: skipped (limit max_mail_depth)",
                limits.max_mail_depth
            ));
            continue;
        }
        if let PartType::Message(nested) = &part.body {
            let mut nested_builder = TextBuilder::new(builder.remaining_chars());
            render_message(nested, &mut nested_builder, limits, depth + 1);
            let nested_extracted =
                nested_builder.finish(Kind::Eml, nested.subject().map(str::to_owned));
            let location = Location::Attachment {
                name: name.unwrap_or_else(|| "forwarded message".to_owned()),
                kind: Kind::Eml,
            };
            builder.append_nested(location, nested_extracted);
            continue;
        }
        let contents = part.contents();
        let kind = sniff(contents, name.as_deref());
        match kind.route() {
            Route::Extract => {
                let nested_limits = Limits {
                    max_chars: builder.remaining_chars(),
                    ..limits.clone()
                };
                match super::extract_at_depth(kind, contents, &nested_limits, depth + 1) {
                    Ok(extracted) => {
                        let location = Location::Attachment { name: label, kind };
                        builder.append_nested(location, extracted);
                    }
                    Err(error) => builder.note(format!("{label}: {error}")),
                }
            }
            Route::PdfWorker | Route::ImageWorker | Route::AudioWorker => {
                builder.note(format!("{label}: {kind} handed to a worker"));
                builder.defer(Deferred {
                    name,
                    kind,
                    bytes: contents.to_vec(),
                });
            }
            Route::Unsupported => {
                builder.note(format!("{label}: {kind}: not extracted"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HTML_ONLY: &str = "From: Ann <ann@example.com>\r\nTo: bob@example.com\r\nSubject: Menu\r\n\
        Date: Wed, 17 May 2000 19:38:28 -0400\r\nMIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n\
        <html><body><h1>Lunch</h1><p>Soup &amp; bread</p><script>x()</script></body></html>\r\n";

    #[test]
    fn html_only_bodies_become_markdown() {
        let extracted = extract(HTML_ONLY.as_bytes(), &Limits::default(), 0).unwrap();
        assert_eq!(extracted.title.as_deref(), Some("Menu"));
        assert_eq!(
            extracted.text,
            "Subject: Menu\nFrom: Ann <ann@example.com>\nTo: bob@example.com\nDate: 2000-05-17T19:38:28-04:00\n\n# Lunch\n\nSoup & bread"
        );
    }

    fn mail_with_attachments() -> String {
        let forwarded = "From: carol@example.com\r\nSubject: Original\r\nContent-Type: text/plain\r\n\r\nForwarded words\r\n";
        [
            "From: ann@example.com\r\nSubject: Files\r\nMIME-Version: 1.0\r\n",
            "Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n",
            "--b1\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n",
            "Caf=E9 so=\r\nft break\r\n",
            "--b1\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"data.csv\"\r\n\r\n",
            "a,b\r\n1,2\r\n",
            "--b1\r\nContent-Type: message/rfc822\r\n\r\n",
            forwarded,
            "--b1\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"scan.pdf\"\r\n\r\n",
            "%PDF-1.4 fake\r\n",
            "--b1--\r\n",
        ]
        .concat()
    }

    #[test]
    fn attachments_and_forwards_are_extracted_in_sections() {
        let extracted = extract(mail_with_attachments().as_bytes(), &Limits::default(), 0).unwrap();
        let text = &extracted.text;
        assert!(text.contains("Café soft break"), "{text}");
        assert!(text.contains("a: 1; b: 2"), "{text}");
        assert!(
            text.contains("Subject: Original") && text.contains("Forwarded words"),
            "{text}"
        );
        let locations: Vec<&Location> = extracted
            .sections
            .iter()
            .map(|section| &section.location)
            .collect();
        assert_eq!(
            locations,
            vec![
                &Location::Attachment {
                    name: "data.csv".to_owned(),
                    kind: Kind::Csv
                },
                &Location::Attachment {
                    name: "forwarded message".to_owned(),
                    kind: Kind::Eml
                },
            ]
        );
        assert!(extracted.text[extracted.sections[1].range.clone()].contains("Forwarded words"));
        assert_eq!(extracted.deferred.len(), 1);
        assert_eq!(extracted.deferred[0].kind, Kind::Pdf);
        assert_eq!(extracted.deferred[0].name.as_deref(), Some("scan.pdf"));
    }

    #[test]
    fn depth_limit_skips_nested_parts_with_a_note() {
        let limits = Limits {
            max_mail_depth: 0,
            ..Limits::default()
        };
        let extracted = extract(mail_with_attachments().as_bytes(), &limits, 0).unwrap();
        assert!(!extracted.text.contains("Forwarded words"));
        assert!(extracted.sections.is_empty());
        assert_eq!(extracted.notes.len(), 3, "{:?}", extracted.notes);
    }
}
