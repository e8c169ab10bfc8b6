//! Small helpers over quick-xml shared by the zip-based formats: a tolerant reader,
//! attributes by local name, entity references as text.

use quick_xml::events::{BytesRef, BytesStart, Event};
use quick_xml::Reader;

use crate::extracted::TextBuilder;

/// A reader that does not insist on matching end tags (real files have stray ones) and
/// keeps whitespace (it separates words in runs).
pub(super) fn reader(xml: &str) -> Reader<&[u8]> {
    let mut reader = Reader::from_str(xml);
    let config = reader.config_mut();
    config.check_end_names = false;
    config.trim_text(false);
    reader
}

/// The next event of a walk that writes into `builder`: `None` once the builder is full,
/// at the end of the document, or at an XML error, which is noted (the rest of `part` is
/// missing).
pub(super) fn next_event<'x>(
    reader: &mut Reader<&'x [u8]>,
    builder: &mut TextBuilder,
    part: &str,
) -> Option<Event<'x>> {
    if builder.is_full() {
        return None;
    }
    match reader.read_event() {
        Ok(Event::Eof) => None,
        Ok(event) => Some(event),
        Err(error) => {
            builder.note(format!(
                "xml error in {part} at byte {}: {error}; the rest is missing",
                reader.buffer_position()
            ));
            None
        }
    }
}

/// The value of the attribute whose local name (prefix ignored) is `local_name`.
pub(super) fn attribute(element: &BytesStart<'_>, local_name: &str) -> Option<String> {
    element
        .attributes()
        .flatten()
        .find(|attribute| attribute.key.local_name().as_ref() == local_name)
        .and_then(|attribute| {
            attribute
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(|value| value.into_owned())
        })
}

/// The text an entity or character reference stands for (`&amp;`, `&#233;`); unknown
/// named entities give nothing.
pub(super) fn reference_text(reference: &BytesRef<'_>) -> String {
    if let Ok(Some(character)) = reference.resolve_char_ref() {
        return character.to_string();
    }
    let name = reference.xml10_content();
    quick_xml::escape::resolve_xml_entity(&name)
        .unwrap_or_default()
        .to_owned()
}
