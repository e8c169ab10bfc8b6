//! ODT and ODP: `content.xml` walked in order. Headings (`text:h`) keep their outline
//! level, list items become `- ` lines, tables Markdown tables; in a presentation each
//! `draw:page` is a slide section with its notes. An encrypted package (its manifest
//! lists encryption data) fails as encrypted.

use quick_xml::events::Event;

use super::markdown;
use super::xml;
use crate::archive::Archive;
use crate::error::IngestError;
use crate::extracted::{Extracted, Location, TextBuilder};
use crate::kind::Kind;
use crate::limits::Limits;

pub(super) fn extract(kind: Kind, bytes: &[u8], limits: &Limits) -> Result<Extracted, IngestError> {
    let mut archive = Archive::open(bytes, kind, limits)?;
    check_not_encrypted(&mut archive, kind)?;
    let content = archive
        .read_text("content.xml")?
        .ok_or_else(|| IngestError::invalid(kind, "no content.xml"))?;
    let title = match archive.read_text("meta.xml")? {
        Some(meta) => meta_title(&meta),
        None => None,
    };
    let mut builder = TextBuilder::new(limits.max_chars);
    walk_content(&content, &mut builder, limits);
    Ok(builder.finish(kind, title))
}

pub(super) fn check_not_encrypted(
    archive: &mut Archive<'_>,
    kind: Kind,
) -> Result<(), IngestError> {
    if let Some(manifest) = archive.read_text("META-INF/manifest.xml")? {
        if manifest.contains("encryption-data") {
            return Err(IngestError::Encrypted { kind });
        }
    }
    Ok(())
}

fn meta_title(meta: &str) -> Option<String> {
    let mut reader = xml::reader(meta);
    let mut in_title = false;
    let mut title = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(element)) if element.name().as_ref() == "dc:title" => in_title = true,
            Ok(Event::End(element)) if element.name().as_ref() == "dc:title" => break,
            Ok(Event::Text(text)) if in_title => title.push_str(&text.xml10_content()),
            Ok(Event::GeneralRef(reference)) if in_title => {
                title.push_str(&xml::reference_text(&reference))
            }
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
    let title = title.trim();
    (!title.is_empty()).then(|| title.to_owned())
}

struct Paragraph {
    text: String,
    heading_level: Option<usize>,
    in_list: bool,
}

fn walk_content(content: &str, builder: &mut TextBuilder, limits: &Limits) {
    let mut reader = xml::reader(content);
    let mut paragraphs: Vec<Paragraph> = Vec::new();
    let mut tables: Vec<Vec<Vec<String>>> = Vec::new();
    let mut list_depth = 0usize;
    let mut skip_from_depth: Option<usize> = None;
    let mut depth = 0usize;
    // Presentation state: the open slide section, its number, and whether we are in notes.
    let mut slide: Option<usize> = None;
    let mut slide_count = 0usize;
    let mut in_notes = false;
    let mut notes_started = false;
    let mut frame_is_title = false;
    while let Some(event) = xml::next_event(&mut reader, builder, "content.xml") {
        match event {
            Event::Start(element) => {
                depth += 1;
                if skip_from_depth.is_some() {
                    continue;
                }
                match element.name().as_ref() {
                    "text:tracked-changes"
                    | "text:note-citation"
                    | "office:annotation"
                    | "svg:title"
                    | "svg:desc"
                    | "office:forms"
                    | "text:sequence-decls" => {
                        skip_from_depth = Some(depth);
                    }
                    "text:p" | "text:h" => {
                        let heading_level = (element.name().as_ref() == "text:h").then(|| {
                            xml::attribute(&element, "outline-level")
                                .and_then(|level| level.parse::<usize>().ok())
                                .unwrap_or(1)
                        });
                        paragraphs.push(Paragraph {
                            text: String::new(),
                            heading_level,
                            in_list: list_depth > 0,
                        });
                    }
                    "text:list" => list_depth += 1,
                    "table:table" => tables.push(Vec::new()),
                    "table:table-row" => {
                        if let Some(rows) = tables.last_mut() {
                            rows.push(Vec::new());
                        }
                    }
                    "table:table-cell" => {
                        if let Some(row) = tables.last_mut().and_then(|rows| rows.last_mut()) {
                            row.push(String::new());
                        }
                    }
                    "draw:page" => {
                        if slide_count >= limits.max_parts {
                            builder.note(format!(
                                "slides after the first {} skipped (limit max_parts)",
                                limits.max_parts
                            ));
                            break;
                        }
                        slide_count += 1;
                        let number = slide_count as u32;
                        let section = builder.open_section(Location::Slide { number }, None);
                        builder.block(&format!("## Slide {number}"));
                        slide = Some(section);
                        notes_started = false;
                    }
                    "presentation:notes" => in_notes = true,
                    "draw:frame" => {
                        frame_is_title =
                            xml::attribute(&element, "class").as_deref() == Some("title");
                    }
                    _ => {}
                }
            }
            Event::Empty(element) => {
                if skip_from_depth.is_some() {
                    continue;
                }
                let Some(paragraph) = paragraphs.last_mut() else {
                    continue;
                };
                match element.name().as_ref() {
                    "text:s" => {
                        let count = xml::attribute(&element, "c")
                            .and_then(|count| count.parse::<usize>().ok())
                            .unwrap_or(1)
                            .min(100);
                        paragraph.text.push_str(&" ".repeat(count));
                    }
                    "text:tab" => paragraph.text.push('\t'),
                    "text:line-break" => paragraph.text.push('\n'),
                    _ => {}
                }
            }
            Event::Text(text) if skip_from_depth.is_none() => {
                if let Some(paragraph) = paragraphs.last_mut() {
                    paragraph.text.push_str(&text.xml10_content());
                }
            }
            Event::GeneralRef(reference) if skip_from_depth.is_none() => {
                if let Some(paragraph) = paragraphs.last_mut() {
                    paragraph.text.push_str(&xml::reference_text(&reference));
                }
            }
            Event::End(element) => {
                let ending_depth = depth;
                depth = depth.saturating_sub(1);
                if let Some(skip_depth) = skip_from_depth {
                    if ending_depth <= skip_depth {
                        skip_from_depth = None;
                    }
                    continue;
                }
                match element.name().as_ref() {
                    "text:p" | "text:h" => {
                        let Some(paragraph) = paragraphs.pop() else {
                            continue;
                        };
                        let text = paragraph.text.trim();
                        if text.is_empty() {
                            continue;
                        }
                        if let Some(cell) = tables
                            .last_mut()
                            .and_then(|rows| rows.last_mut())
                            .and_then(|row| row.last_mut())
                        {
                            if !cell.is_empty() {
                                cell.push(' ');
                            }
                            cell.push_str(text);
                            continue;
                        }
                        // A paragraph inside another (a footnote body) goes out on its own.
                        if in_notes && !notes_started {
                            builder.block("Notes:");
                            notes_started = true;
                        }
                        let rendered =
                            match (paragraph.heading_level, frame_is_title && slide.is_some()) {
                                (_, true) => markdown::heading(3, text),
                                (Some(level), false) => markdown::heading(level, text),
                                (None, false) if paragraph.in_list => format!("- {text}"),
                                (None, false) => text.to_owned(),
                            };
                        builder.block(&rendered);
                    }
                    "text:list" => list_depth = list_depth.saturating_sub(1),
                    "table:table" => {
                        let Some(rows) = tables.pop() else {
                            continue;
                        };
                        match tables
                            .last_mut()
                            .and_then(|outer| outer.last_mut())
                            .and_then(|row| row.last_mut())
                        {
                            Some(outer_cell) => {
                                if !outer_cell.is_empty() {
                                    outer_cell.push(' ');
                                }
                                outer_cell.push_str(&markdown::inline_table(&rows));
                            }
                            None => builder.block(&markdown::table(&rows)),
                        }
                    }
                    "draw:frame" => frame_is_title = false,
                    "presentation:notes" => in_notes = false,
                    "draw:page" => {
                        if let Some(section) = slide.take() {
                            builder.close_section(section);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if let Some(section) = slide {
        builder.close_section(section);
    }
}

#[cfg(test)]
mod tests {
    use super::super::docx::tests::zip_of;
    use super::*;

    const NS: &str =
        r#"xmlns:office="o" xmlns:text="t" xmlns:table="tb" xmlns:draw="d" xmlns:presentation="p""#;

    #[test]
    fn odt_headings_lists_spaces_and_tables() {
        let content = format!(
            r#"<office:document-content {NS}><office:body><office:text>
            <text:h text:outline-level="2">Survey</text:h>
            <text:p>consetetur<text:s/>sadipscing<text:s text:c="2"/>elitr<text:note><text:note-citation>1</text:note-citation><text:note-body><text:p>a footnote</text:p></text:note-body></text:note></text:p>
            <text:list><text:list-item><text:p>first &amp; item</text:p></text:list-item></text:list>
            <table:table><table:table-row><table:table-cell><text:p>A1</text:p></table:table-cell><table:table-cell><text:p>B1</text:p></table:table-cell></table:table-row></table:table>
            </office:text></office:body></office:document-content>"#
        );
        let odt = zip_of(&[
            ("mimetype", "application/vnd.oasis.opendocument.text"),
            ("content.xml", &content),
            ("meta.xml", "<office:document-meta><office:meta><dc:title>Peat</dc:title></office:meta></office:document-meta>"),
        ]);
        let extracted = extract(Kind::Odt, &odt, &Limits::default()).unwrap();
        assert_eq!(extracted.title.as_deref(), Some("Peat"));
        assert_eq!(
            extracted.text,
            "## Survey\n\na footnote\n\nconsetetur sadipscing  elitr\n\n- first & item\n\n| A1 | B1 |\n| --- | --- |"
        );
    }

    #[test]
    fn odp_pages_are_slides_with_notes() {
        let content = format!(
            r#"<office:document-content {NS}><office:body><office:presentation>
            <draw:page draw:name="one"><draw:frame presentation:class="title"><draw:text-box><text:p>Welcome</text:p></draw:text-box></draw:frame>
              <draw:frame><draw:text-box><text:p>Body</text:p></draw:text-box></draw:frame>
              <presentation:notes><draw:frame><draw:text-box><text:p>Speak slowly</text:p></draw:text-box></draw:frame></presentation:notes></draw:page>
            <draw:page><draw:frame><draw:text-box><text:p>Two</text:p></draw:text-box></draw:frame></draw:page>
            </office:presentation></office:body></office:document-content>"#
        );
        let odp = zip_of(&[("content.xml", &content)]);
        let extracted = extract(Kind::Odp, &odp, &Limits::default()).unwrap();
        assert_eq!(
            extracted.text,
            "## Slide 1\n\n### Welcome\n\nBody\n\nNotes:\n\nSpeak slowly\n\n## Slide 2\n\nTwo"
        );
        assert_eq!(extracted.sections.len(), 2);
        assert_eq!(
            &extracted.text[extracted.sections[1].range.clone()],
            "## Slide 2\n\nTwo"
        );
    }

    #[test]
    fn encrypted_packages_say_so() {
        let odt = zip_of(&[
            (
                "META-INF/manifest.xml",
                "<manifest:file-entry><manifest:encryption-data/></manifest:file-entry>",
            ),
            ("content.xml", "binary"),
        ]);
        let error = extract(Kind::Odt, &odt, &Limits::default()).unwrap_err();
        assert_eq!(error, IngestError::Encrypted { kind: Kind::Odt });
    }
}
