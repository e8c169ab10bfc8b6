//! PPTX: one section per slide in presentation order (`ppt/presentation.xml` and its
//! relationships; slide file numbers when those are missing), headed `## Slide N: title`.
//! Text boxes, group shapes and tables are read in document order; speaker notes follow
//! under `Notes:`.

use quick_xml::events::Event;

use super::markdown;
use super::xml;
use crate::archive::{resolve_path, Archive};
use crate::error::IngestError;
use crate::extracted::{Extracted, Location, TextBuilder};
use crate::kind::Kind;
use crate::limits::Limits;

pub(super) fn extract(bytes: &[u8], limits: &Limits) -> Result<Extracted, IngestError> {
    let mut archive = Archive::open(bytes, Kind::Pptx, limits)?;
    let slide_paths = slide_paths(&mut archive)?;
    if slide_paths.is_empty() && !archive.contains("ppt/presentation.xml") {
        return Err(IngestError::invalid(Kind::Pptx, "no ppt/presentation.xml"));
    }
    let mut builder = TextBuilder::new(limits.max_chars);
    let mut deck_title = None;
    for (index, slide_path) in slide_paths.iter().enumerate() {
        if builder.is_full() {
            break;
        }
        if index >= limits.max_parts {
            builder.note(format!(
                "{} slides after the first {} skipped (limit max_parts)",
                slide_paths.len() - index,
                limits.max_parts
            ));
            break;
        }
        let number = index as u32 + 1;
        let Some(slide_xml) = archive.read_text(slide_path)? else {
            builder.note(format!("slide {number}: {slide_path} is missing"));
            continue;
        };
        let slide = read_shapes(&slide_xml, false);
        let notes = match notes_path(&mut archive, slide_path)? {
            Some(path) => match archive.read_text(&path)? {
                Some(notes_xml) => read_shapes(&notes_xml, true).blocks,
                None => Vec::new(),
            },
            None => Vec::new(),
        };
        if deck_title.is_none() {
            deck_title = slide.title.clone();
        }
        let section = builder.open_section(Location::Slide { number }, slide.title.clone());
        let heading = match &slide.title {
            Some(title) => format!("## Slide {number}: {title}"),
            None => format!("## Slide {number}"),
        };
        builder.block(&heading);
        for block in &slide.blocks {
            builder.block(block);
        }
        if !notes.is_empty() {
            builder.block("Notes:");
            for block in &notes {
                builder.block(block);
            }
        }
        if let Some(error) = slide.error {
            builder.note(format!(
                "slide {number}: xml error ({error}); the rest of the slide is missing"
            ));
        }
        builder.close_section(section);
    }
    Ok(builder.finish(Kind::Pptx, deck_title))
}

/// Slide paths in presentation order; by file number when the presentation part does not
/// list them.
fn slide_paths(archive: &mut Archive<'_>) -> Result<Vec<String>, IngestError> {
    let mut relationship_ids = Vec::new();
    if let Some(presentation) = archive.read_text("ppt/presentation.xml")? {
        let mut reader = xml::reader(&presentation);
        loop {
            match reader.read_event() {
                Ok(Event::Empty(element)) | Ok(Event::Start(element))
                    if element.local_name().as_ref() == "sldId" =>
                {
                    // `id` is the numeric slide id; the relationship is `r:id`.
                    let relationship = element
                        .attributes()
                        .flatten()
                        .find(|attribute| attribute.key.as_ref().ends_with(":id"))
                        .and_then(|attribute| {
                            attribute
                                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                .ok()
                        })
                        .map(|value| value.into_owned());
                    if let Some(relationship) = relationship {
                        relationship_ids.push(relationship);
                    }
                }
                Ok(Event::Eof) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }
    let relationships = match archive.read_text("ppt/_rels/presentation.xml.rels")? {
        Some(rels) => relationships(&rels),
        None => Vec::new(),
    };
    let ordered: Vec<String> = relationship_ids
        .iter()
        .filter_map(|id| {
            relationships
                .iter()
                .find(|relationship| &relationship.id == id)
                .map(|relationship| resolve_path("ppt/presentation.xml", &relationship.target))
        })
        .filter(|path| archive.contains(path))
        .collect();
    if !ordered.is_empty() {
        return Ok(ordered);
    }
    let mut numbered: Vec<(u32, String)> = archive
        .names()
        .into_iter()
        .filter_map(|name| {
            let number = name
                .strip_prefix("ppt/slides/slide")?
                .strip_suffix(".xml")?
                .parse::<u32>()
                .ok()?;
            Some((number, name))
        })
        .collect();
    numbered.sort();
    Ok(numbered.into_iter().map(|(_, name)| name).collect())
}

/// The notes slide of a slide, from the slide's relationships.
fn notes_path(archive: &mut Archive<'_>, slide_path: &str) -> Result<Option<String>, IngestError> {
    let (directory, file) = slide_path.rsplit_once('/').unwrap_or(("", slide_path));
    let rels_path = format!("{directory}/_rels/{file}.rels");
    let Some(rels) = archive.read_text(&rels_path)? else {
        return Ok(None);
    };
    Ok(relationships(&rels)
        .into_iter()
        .find(|relationship| relationship.kind.ends_with("/notesSlide"))
        .map(|relationship| resolve_path(slide_path, &relationship.target)))
}

pub(super) struct Relationship {
    pub(super) id: String,
    pub(super) kind: String,
    pub(super) target: String,
}

pub(super) fn relationships(rels: &str) -> Vec<Relationship> {
    let mut found = Vec::new();
    let mut reader = xml::reader(rels);
    loop {
        match reader.read_event() {
            Ok(Event::Empty(element)) | Ok(Event::Start(element))
                if element.local_name().as_ref() == "Relationship" =>
            {
                found.push(Relationship {
                    id: xml::attribute(&element, "Id").unwrap_or_default(),
                    kind: xml::attribute(&element, "Type").unwrap_or_default(),
                    target: xml::attribute(&element, "Target").unwrap_or_default(),
                });
            }
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
    found
}

struct Shapes {
    title: Option<String>,
    /// Paragraphs and rendered tables, in document order.
    blocks: Vec<String>,
    error: Option<String>,
}

/// The text of a slide's (or notes slide's) shapes. For notes only body placeholders
/// count: the others repeat the slide image and number.
fn read_shapes(slide_xml: &str, notes_only: bool) -> Shapes {
    let mut reader = xml::reader(slide_xml);
    let mut shapes = Shapes {
        title: None,
        blocks: Vec::new(),
        error: None,
    };
    let mut placeholder: Option<String> = None;
    let mut shape_has_placeholder = false;
    let mut paragraph: Option<String> = None;
    let mut in_text = false;
    let mut table: Option<Vec<Vec<String>>> = None;
    loop {
        let event = match reader.read_event() {
            Ok(Event::Eof) => break,
            Ok(event) => event,
            Err(error) => {
                shapes.error = Some(error.to_string());
                break;
            }
        };
        match event {
            Event::Start(element) => match element.local_name().as_ref() {
                "sp" => {
                    placeholder = None;
                    shape_has_placeholder = false;
                }
                "ph" => {
                    shape_has_placeholder = true;
                    placeholder = xml::attribute(&element, "type");
                }
                "p" => paragraph = Some(String::new()),
                "t" => in_text = true,
                "tbl" => table = Some(Vec::new()),
                "tr" => {
                    if let Some(rows) = table.as_mut() {
                        rows.push(Vec::new());
                    }
                }
                "tc" => {
                    if let Some(row) = table.as_mut().and_then(|rows| rows.last_mut()) {
                        row.push(String::new());
                    }
                }
                _ => {}
            },
            Event::Empty(element) => match element.local_name().as_ref() {
                "ph" => {
                    shape_has_placeholder = true;
                    placeholder = xml::attribute(&element, "type");
                }
                "br" => {
                    if let Some(text) = paragraph.as_mut() {
                        text.push('\n');
                    }
                }
                _ => {}
            },
            Event::Text(text) if in_text => {
                if let Some(paragraph_text) = paragraph.as_mut() {
                    paragraph_text.push_str(&text.xml10_content());
                }
            }
            Event::GeneralRef(reference) if in_text => {
                if let Some(paragraph_text) = paragraph.as_mut() {
                    paragraph_text.push_str(&xml::reference_text(&reference));
                }
            }
            Event::End(element) => match element.local_name().as_ref() {
                "t" => in_text = false,
                "sp" => {
                    placeholder = None;
                    shape_has_placeholder = false;
                }
                "p" => {
                    let Some(text) = paragraph.take() else {
                        continue;
                    };
                    let text = text.trim();
                    if text.is_empty() {
                        continue;
                    }
                    if let Some(cell) = table
                        .as_mut()
                        .and_then(|rows| rows.last_mut())
                        .and_then(|row| row.last_mut())
                    {
                        if !cell.is_empty() {
                            cell.push(' ');
                        }
                        cell.push_str(text);
                        continue;
                    }
                    let placeholder_type = placeholder.as_deref();
                    if notes_only
                        && !(shape_has_placeholder
                            && matches!(placeholder_type, Some("body") | None))
                    {
                        continue;
                    }
                    let is_title = matches!(placeholder_type, Some("title" | "ctrTitle"));
                    if is_title && !notes_only && shapes.title.is_none() {
                        shapes.title = Some(text.split_whitespace().collect::<Vec<_>>().join(" "));
                        continue;
                    }
                    shapes.blocks.push(text.to_owned());
                }
                "tbl" => {
                    if let Some(rows) = table.take() {
                        shapes.blocks.push(markdown::table(&rows));
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    shapes
}

#[cfg(test)]
mod tests {
    use super::super::docx::tests::zip_of;
    use super::*;

    const NS: &str = r#"xmlns:p="p" xmlns:a="a" xmlns:r="r""#;

    fn slide(body: &str) -> String {
        format!(r#"<p:sld {NS}><p:cSld><p:spTree>{body}</p:spTree></p:cSld></p:sld>"#)
    }

    #[test]
    fn slides_in_presentation_order_with_titles_tables_and_notes() {
        let first = slide(
            r#"<p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>Opening</a:t></a:r></a:p></p:txBody></p:sp>
               <p:grpSp><p:sp><p:txBody><a:p><a:r><a:t>Group test text</a:t></a:r></a:p></p:txBody></p:sp></p:grpSp>
               <p:graphicFrame><a:tbl><a:tr><a:tc><a:txBody><a:p><a:r><a:t>Col head 1</a:t></a:r></a:p></a:txBody></a:tc></a:tr>
               <a:tr><a:tc><a:txBody><a:p><a:r><a:t>Cell text 2</a:t></a:r></a:p></a:txBody></a:tc></a:tr></a:tbl></p:graphicFrame>"#,
        );
        let second =
            slide(r#"<p:sp><p:txBody><a:p><a:r><a:t>Second</a:t></a:r></a:p></p:txBody></p:sp>"#);
        let notes = slide(
            r#"<p:sp><p:nvSpPr><p:nvPr><p:ph type="sldNum"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>2</a:t></a:r></a:p></p:txBody></p:sp>
               <p:sp><p:nvSpPr><p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>Say hello</a:t></a:r></a:p></p:txBody></p:sp>"#,
        );
        let presentation = format!(
            r#"<p:presentation {NS}><p:sldIdLst><p:sldId id="256" r:id="rId3"/><p:sldId id="257" r:id="rId2"/></p:sldIdLst></p:presentation>"#
        );
        let rels = r#"<Relationships><Relationship Id="rId2" Type="x/slide" Target="slides/slide1.xml"/><Relationship Id="rId3" Type="x/slide" Target="slides/slide2.xml"/></Relationships>"#;
        let slide_rels = r#"<Relationships><Relationship Id="rId1" Type="http://x/notesSlide" Target="../notesSlides/notesSlide1.xml"/></Relationships>"#;
        let pptx = zip_of(&[
            ("[Content_Types].xml", "<Types/>"),
            ("ppt/presentation.xml", &presentation),
            ("ppt/_rels/presentation.xml.rels", rels),
            ("ppt/slides/slide1.xml", &second),
            ("ppt/slides/slide2.xml", &first),
            ("ppt/slides/_rels/slide2.xml.rels", slide_rels),
            ("ppt/notesSlides/notesSlide1.xml", &notes),
        ]);
        let extracted = extract(&pptx, &Limits::default()).unwrap();
        assert_eq!(
            extracted.text,
            "## Slide 1: Opening\n\nGroup test text\n\n| Col head 1 |\n| --- |\n| Cell text 2 |\n\nNotes:\n\nSay hello\n\n## Slide 2\n\nSecond"
        );
        assert_eq!(extracted.sections.len(), 2);
        assert_eq!(
            extracted.sections[1].location,
            Location::Slide { number: 2 }
        );
        assert_eq!(
            &extracted.text[extracted.sections[1].range.clone()],
            "## Slide 2\n\nSecond"
        );
        assert_eq!(extracted.title.as_deref(), Some("Opening"));
    }

    #[test]
    fn slide_cap_leaves_a_note() {
        let pptx = zip_of(&[
            (
                "ppt/slides/slide1.xml",
                &slide("<a:p><a:r><a:t>one</a:t></a:r></a:p>"),
            ),
            (
                "ppt/slides/slide2.xml",
                &slide("<a:p><a:r><a:t>two</a:t></a:r></a:p>"),
            ),
        ]);
        let limits = Limits {
            max_parts: 1,
            ..Limits::default()
        };
        let extracted = extract(&pptx, &limits).unwrap();
        assert_eq!(extracted.text, "## Slide 1\n\none");
        assert_eq!(
            extracted.notes,
            vec!["1 slides after the first 1 skipped (limit max_parts)"]
        );
    }
}
