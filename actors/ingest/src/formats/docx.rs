//! DOCX: `word/document.xml` walked in order. Paragraphs are joined runs (a word split
//! across runs stays one word), headings become Markdown headings (by style name or
//! outline level from `word/styles.xml`), tables become Markdown tables (a nested table is
//! flattened into its cell). Deleted revisions, field codes and the fallback copies of
//! drawings are skipped.

use std::collections::HashMap;

use quick_xml::events::Event;

use super::markdown;
use super::xml;
use crate::archive::Archive;
use crate::error::IngestError;
use crate::extracted::{Extracted, TextBuilder};
use crate::kind::Kind;
use crate::limits::Limits;

const MAIN_DOCUMENT_TYPES: [&str; 4] = [
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
    "application/vnd.ms-word.document.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",
];

pub(super) fn extract(bytes: &[u8], limits: &Limits) -> Result<Extracted, IngestError> {
    let mut archive = Archive::open(bytes, Kind::Docx, limits)?;
    let document_path = main_document_path(&mut archive)?;
    let heading_levels = match archive.read_text("word/styles.xml")? {
        Some(styles) => heading_levels(&styles),
        None => HashMap::new(),
    };
    let document = archive
        .read_text(&document_path)?
        .ok_or_else(|| IngestError::invalid(Kind::Docx, format!("no {document_path}")))?;
    let mut builder = TextBuilder::new(limits.max_chars);
    let title = walk_document(&document, &heading_levels, &mut builder);
    Ok(builder.finish(Kind::Docx, title))
}

/// The main part named in `[Content_Types].xml`, else the usual path.
fn main_document_path(archive: &mut Archive<'_>) -> Result<String, IngestError> {
    let default_path = "word/document.xml".to_owned();
    let Some(content_types) = archive.read_text("[Content_Types].xml")? else {
        return Ok(default_path);
    };
    let mut reader = xml::reader(&content_types);
    loop {
        match reader.read_event() {
            Ok(Event::Empty(element)) | Ok(Event::Start(element))
                if element.local_name().as_ref() == "Override" =>
            {
                let content_type = xml::attribute(&element, "ContentType").unwrap_or_default();
                if MAIN_DOCUMENT_TYPES.contains(&content_type.as_str()) {
                    if let Some(part) = xml::attribute(&element, "PartName") {
                        return Ok(part.trim_start_matches('/').to_owned());
                    }
                }
            }
            Ok(Event::Eof) | Err(_) => return Ok(default_path),
            Ok(_) => {}
        }
    }
}

/// Style id → heading level, from style names ("heading 2", "Title") or outline levels.
fn heading_levels(styles: &str) -> HashMap<String, usize> {
    let mut levels = HashMap::new();
    let mut reader = xml::reader(styles);
    let mut current_style: Option<String> = None;
    loop {
        let event = match reader.read_event() {
            Ok(Event::Eof) | Err(_) => break,
            Ok(event) => event,
        };
        match event {
            Event::Start(element) if element.local_name().as_ref() == "style" => {
                current_style = xml::attribute(&element, "styleId");
            }
            Event::End(element) if element.local_name().as_ref() == "style" => {
                current_style = None;
            }
            Event::Empty(element) | Event::Start(element) => {
                let Some(style_id) = &current_style else {
                    continue;
                };
                let level = match element.local_name().as_ref() {
                    "name" => {
                        xml::attribute(&element, "val").and_then(|name| level_from_name(&name))
                    }
                    "outlineLvl" => xml::attribute(&element, "val")
                        .and_then(|level| level.parse::<usize>().ok())
                        .filter(|&level| level < 9)
                        .map(|level| level + 1),
                    _ => None,
                };
                if let Some(level) = level {
                    levels.entry(style_id.clone()).or_insert(level);
                }
            }
            _ => {}
        }
    }
    levels
}

fn level_from_name(name: &str) -> Option<usize> {
    let lowercase = name.to_ascii_lowercase();
    if lowercase == "title" {
        return Some(1);
    }
    lowercase
        .strip_prefix("heading")
        .and_then(|level| level.trim().parse::<usize>().ok())
        .filter(|level| (1..=9).contains(level))
}

/// The heading level of a paragraph style id when styles.xml did not name it.
fn level_from_style_id(style_id: &str) -> Option<usize> {
    level_from_name(style_id)
}

#[derive(Default)]
struct Paragraph {
    text: String,
    style: Option<String>,
    outline_level: Option<usize>,
}

struct Table {
    rows: Vec<Vec<String>>,
}

/// Walks the document body into `builder`; returns the first Title/Heading 1 text.
fn walk_document(
    document: &str,
    heading_levels: &HashMap<String, usize>,
    builder: &mut TextBuilder,
) -> Option<String> {
    let mut reader = xml::reader(document);
    // A text box holds paragraphs inside a paragraph: a stack, innermost last.
    let mut paragraphs: Vec<Paragraph> = Vec::new();
    let mut tables: Vec<Table> = Vec::new();
    let mut in_text = false;
    // Depth at which a skipped element (deleted text, field code, fallback) started.
    let mut skip_from_depth: Option<usize> = None;
    let mut depth = 0usize;
    let mut title: Option<String> = None;
    while let Some(event) = xml::next_event(&mut reader, builder, "the document") {
        match event {
            Event::Start(element) => {
                depth += 1;
                if skip_from_depth.is_some() {
                    continue;
                }
                match element.local_name().as_ref() {
                    "delText" | "instrText" | "Fallback" | "del" | "footnoteReference" => {
                        skip_from_depth = Some(depth);
                    }
                    "p" => paragraphs.push(Paragraph::default()),
                    "t" => in_text = true,
                    "tbl" => tables.push(Table { rows: Vec::new() }),
                    "tr" => {
                        if let Some(table) = tables.last_mut() {
                            table.rows.push(Vec::new());
                        }
                    }
                    "tc" => {
                        if let Some(row) = tables.last_mut().and_then(|table| table.rows.last_mut())
                        {
                            row.push(String::new());
                        }
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
                match element.local_name().as_ref() {
                    "tab" => paragraph.text.push('\t'),
                    "br" | "cr" => paragraph.text.push('\n'),
                    "noBreakHyphen" => paragraph.text.push('-'),
                    "pStyle" => paragraph.style = xml::attribute(&element, "val"),
                    "outlineLvl" => {
                        paragraph.outline_level = xml::attribute(&element, "val")
                            .and_then(|level| level.parse::<usize>().ok())
                            .filter(|&level| level < 9)
                            .map(|level| level + 1);
                    }
                    _ => {}
                }
            }
            Event::Text(text) if in_text && skip_from_depth.is_none() => {
                if let Some(paragraph) = paragraphs.last_mut() {
                    paragraph.text.push_str(&text.xml10_content());
                }
            }
            Event::GeneralRef(reference) if in_text && skip_from_depth.is_none() => {
                if let Some(paragraph) = paragraphs.last_mut() {
                    paragraph.text.push_str(&xml::reference_text(&reference));
                }
            }
            Event::CData(data) if in_text && skip_from_depth.is_none() => {
                if let Some(paragraph) = paragraphs.last_mut() {
                    paragraph.text.push_str(&data);
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
                match element.local_name().as_ref() {
                    "t" => in_text = false,
                    "p" => {
                        let Some(paragraph) = paragraphs.pop() else {
                            continue;
                        };
                        let level = paragraph.outline_level.or_else(|| {
                            paragraph.style.as_ref().and_then(|style| {
                                heading_levels
                                    .get(style)
                                    .copied()
                                    .or_else(|| level_from_style_id(style))
                            })
                        });
                        let text = paragraph.text.trim();
                        if text.is_empty() {
                            continue;
                        }
                        if let Some(cell) = tables
                            .last_mut()
                            .and_then(|table| table.rows.last_mut())
                            .and_then(|row| row.last_mut())
                        {
                            if !cell.is_empty() {
                                cell.push(' ');
                            }
                            cell.push_str(text);
                            continue;
                        }
                        match level {
                            Some(level) => {
                                if title.is_none() && level == 1 {
                                    title = Some(text.to_owned());
                                }
                                builder.block(&markdown::heading(level, text));
                            }
                            None => builder.block(text),
                        }
                    }
                    "tbl" => {
                        let Some(table) = tables.pop() else {
                            continue;
                        };
                        match tables
                            .last_mut()
                            .and_then(|outer| outer.rows.last_mut())
                            .and_then(|row| row.last_mut())
                        {
                            Some(outer_cell) => {
                                if !outer_cell.is_empty() {
                                    outer_cell.push(' ');
                                }
                                outer_cell.push_str(&markdown::inline_table(&table.rows));
                            }
                            None => builder.block(&markdown::table(&table.rows)),
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    // A truncated document may leave tables open: keep what they hold.
    while let Some(table) = tables.pop() {
        builder.block(&markdown::table(&table.rows));
    }
    title
}

#[cfg(test)]
pub(super) mod tests {
    use std::io::Write;

    use super::*;

    /// A zip of `(name, content)` entries, deflated.
    pub(crate) fn zip_of(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, content) in entries {
            writer.start_file(*name, options).unwrap();
            writer.write_all(content.as_bytes()).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;

    #[test]
    fn paragraphs_headings_and_tables() {
        let document = format!(
            r#"<?xml version="1.0"?><w:document {W}><w:body>
            <w:p><w:pPr><w:pStyle w:val="Titel"/></w:pPr><w:r><w:t>Heading Para</w:t></w:r><w:r><w:t>graph</w:t></w:r></w:p>
            <w:p><w:r><w:t xml:space="preserve">Normal </w:t></w:r><w:r><w:t>paragraph &amp; more</w:t></w:r><w:r><w:delText>deleted</w:delText></w:r></w:p>
            <w:tbl><w:tr><w:tc><w:p><w:r><w:t>Text before</w:t></w:r></w:p>
              <w:tbl><w:tr><w:tc><w:p><w:r><w:t>inner</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
              <w:p><w:r><w:t>Text after</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>B</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
            <w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr><w:r><w:t>Section</w:t></w:r></w:p>
            </w:body></w:document>"#
        );
        let styles = format!(
            r#"<w:styles {W}><w:style w:styleId="Titel"><w:name w:val="Title"/></w:style></w:styles>"#
        );
        let docx = zip_of(&[
            ("[Content_Types].xml", "<Types/>"),
            ("word/document.xml", &document),
            ("word/styles.xml", &styles),
        ]);
        let extracted = extract(&docx, &Limits::default()).unwrap();
        assert_eq!(extracted.title.as_deref(), Some("Heading Paragraph"));
        assert_eq!(
            extracted.text,
            "# Heading Paragraph\n\nNormal paragraph & more\n\n| Text before inner Text after | B |\n| --- | --- |\n\n## Section"
        );
    }

    #[test]
    fn a_zip_without_the_document_is_invalid() {
        let docx = zip_of(&[("word/other.xml", "<x/>")]);
        let error = extract(&docx, &Limits::default()).unwrap_err();
        assert_eq!(error.to_string(), "not a valid DOCX: no word/document.xml");
    }
}
