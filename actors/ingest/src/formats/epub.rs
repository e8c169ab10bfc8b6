//! EPUB: the package document named by `META-INF/container.xml`, its spine read in
//! order, each XHTML chapter converted to Markdown as a section of its own. Books whose
//! chapters are DRM-encrypted (listed in `META-INF/encryption.xml`) fail as encrypted;
//! obfuscated fonts, listed there too, do not matter.

use std::collections::HashMap;

use quick_xml::events::Event;

use super::html;
use super::xml;
use crate::archive::{resolve_path, Archive};
use crate::decode;
use crate::error::IngestError;
use crate::extracted::{Extracted, Location, TextBuilder};
use crate::kind::Kind;
use crate::limits::Limits;

pub(super) fn extract(bytes: &[u8], limits: &Limits) -> Result<Extracted, IngestError> {
    let mut archive = Archive::open(bytes, Kind::Epub, limits)?;
    let package_path = package_path(&mut archive)?;
    let package_xml = archive.read_text(&package_path)?.ok_or_else(|| {
        IngestError::invalid(Kind::Epub, format!("no package document {package_path}"))
    })?;
    let package = read_package(&package_xml, &package_path);
    let encrypted_paths = match archive.read_text("META-INF/encryption.xml")? {
        Some(encryption) => encrypted_paths(&encryption),
        None => Vec::new(),
    };
    let chapters: Vec<String> = if package.spine.is_empty() {
        let mut documents: Vec<String> = archive
            .names()
            .into_iter()
            .filter(|name| {
                name.ends_with(".xhtml") || name.ends_with(".html") || name.ends_with(".htm")
            })
            .collect();
        documents.sort();
        documents
    } else {
        package.spine.clone()
    };
    if chapters
        .iter()
        .any(|chapter| encrypted_paths.contains(chapter))
    {
        return Err(IngestError::Encrypted { kind: Kind::Epub });
    }
    let mut builder = TextBuilder::new(limits.max_chars);
    let mut number = 0u32;
    for (index, chapter_path) in chapters.iter().enumerate() {
        if builder.is_full() {
            break;
        }
        if index >= limits.max_parts {
            builder.note(format!(
                "{} chapters after the first {} skipped (limit max_parts)",
                chapters.len() - index,
                limits.max_parts
            ));
            break;
        }
        let Some(chapter_bytes) = archive.read(chapter_path)? else {
            builder.note(format!("chapter {chapter_path} is missing"));
            continue;
        };
        let converted = html::to_markdown(&decode::decode_lossy(&chapter_bytes), limits);
        if let Some(note) = converted.note {
            builder.note(format!("{chapter_path}: {note}"));
        }
        if converted.markdown.trim().is_empty() {
            continue;
        }
        number += 1;
        let chapter_title = first_heading(&converted.markdown).or(converted.title);
        let section = builder.open_section(
            Location::Chapter {
                number,
                path: chapter_path.clone(),
            },
            chapter_title,
        );
        builder.block(&converted.markdown);
        builder.close_section(section);
    }
    Ok(builder.finish(Kind::Epub, package.title))
}

fn package_path(archive: &mut Archive<'_>) -> Result<String, IngestError> {
    if let Some(container) = archive.read_text("META-INF/container.xml")? {
        let mut reader = xml::reader(&container);
        loop {
            match reader.read_event() {
                Ok(Event::Empty(element)) | Ok(Event::Start(element))
                    if element.local_name().as_ref() == "rootfile" =>
                {
                    if let Some(path) = xml::attribute(&element, "full-path") {
                        return Ok(path);
                    }
                }
                Ok(Event::Eof) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }
    archive
        .names()
        .into_iter()
        .find(|name| name.ends_with(".opf"))
        .ok_or_else(|| IngestError::invalid(Kind::Epub, "no package document (.opf)"))
}

struct Package {
    title: Option<String>,
    /// Archive paths of the spine's documents, in reading order.
    spine: Vec<String>,
}

fn read_package(package_xml: &str, package_path: &str) -> Package {
    let mut reader = xml::reader(package_xml);
    let mut manifest: HashMap<String, String> = HashMap::new();
    let mut spine_ids: Vec<String> = Vec::new();
    let mut title = String::new();
    let mut in_title = false;
    let mut title_done = false;
    loop {
        match reader.read_event() {
            Ok(Event::Empty(element)) | Ok(Event::Start(element))
                if element.local_name().as_ref() == "item" =>
            {
                if let (Some(id), Some(href)) = (
                    xml::attribute(&element, "id"),
                    xml::attribute(&element, "href"),
                ) {
                    manifest.insert(id, resolve_path(package_path, &href));
                }
            }
            Ok(Event::Empty(element)) | Ok(Event::Start(element))
                if element.local_name().as_ref() == "itemref" =>
            {
                if let Some(id) = xml::attribute(&element, "idref") {
                    spine_ids.push(id);
                }
            }
            Ok(Event::Start(element))
                if element.local_name().as_ref() == "title" && !title_done =>
            {
                in_title = true;
            }
            Ok(Event::End(element)) if element.local_name().as_ref() == "title" && in_title => {
                in_title = false;
                title_done = true;
            }
            Ok(Event::Text(text)) if in_title => title.push_str(&text.xml10_content()),
            Ok(Event::GeneralRef(reference)) if in_title => {
                title.push_str(&xml::reference_text(&reference))
            }
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
    let spine = spine_ids
        .iter()
        .filter_map(|id| manifest.get(id).cloned())
        .collect();
    let title = title.trim().to_owned();
    Package {
        title: (!title.is_empty()).then_some(title),
        spine,
    }
}

/// Paths whose content `encryption.xml` says is encrypted (`CipherReference URI`s are
/// relative to the archive root).
fn encrypted_paths(encryption: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut reader = xml::reader(encryption);
    loop {
        match reader.read_event() {
            Ok(Event::Empty(element)) | Ok(Event::Start(element))
                if element.local_name().as_ref() == "CipherReference" =>
            {
                if let Some(uri) = xml::attribute(&element, "URI") {
                    paths.push(resolve_path("", &uri));
                }
            }
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
    paths
}

fn first_heading(markdown: &str) -> Option<String> {
    markdown
        .lines()
        .find(|line| line.starts_with('#'))
        .map(|line| line.trim_start_matches('#').trim().to_owned())
        .filter(|heading| !heading.is_empty())
}

#[cfg(test)]
mod tests {
    use super::super::docx::tests::zip_of;
    use super::*;

    fn book(extra: &[(&str, &str)]) -> Vec<u8> {
        let container = r#"<container><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#;
        let opf = r#"<package><metadata><dc:title>The Book &amp; Its Title</dc:title></metadata>
            <manifest><item id="c2" href="text/two.xhtml" media-type="application/xhtml+xml"/>
            <item id="c1" href="text/one%20a.xhtml" media-type="application/xhtml+xml"/></manifest>
            <spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>"#;
        let mut entries = vec![
            ("mimetype", "application/epub+zip"),
            ("META-INF/container.xml", container),
            ("OEBPS/content.opf", opf),
            (
                "OEBPS/text/one a.xhtml",
                "<html><body><h1>First</h1><p>Once upon a time.</p></body></html>",
            ),
            (
                "OEBPS/text/two.xhtml",
                "<html><body><h2>Second</h2><p>The end.</p></body></html>",
            ),
        ];
        entries.extend_from_slice(extra);
        zip_of(&entries)
    }

    #[test]
    fn chapters_follow_the_spine() {
        let extracted = extract(&book(&[]), &Limits::default()).unwrap();
        assert_eq!(extracted.title.as_deref(), Some("The Book & Its Title"));
        assert_eq!(
            extracted.text,
            "# First\n\nOnce upon a time.\n\n## Second\n\nThe end."
        );
        assert_eq!(
            extracted.sections[0].location,
            Location::Chapter {
                number: 1,
                path: "OEBPS/text/one a.xhtml".to_owned()
            }
        );
        assert_eq!(extracted.sections[1].title.as_deref(), Some("Second"));
    }

    #[test]
    fn drm_encrypted_chapters_fail_but_obfuscated_fonts_do_not() {
        let font = r#"<encryption><EncryptedData><CipherData><CipherReference URI="OEBPS/font.otf"/></CipherData></EncryptedData></encryption>"#;
        assert!(extract(
            &book(&[("META-INF/encryption.xml", font)]),
            &Limits::default()
        )
        .is_ok());
        let drm = r#"<encryption><EncryptedData><CipherData><CipherReference URI="OEBPS/text/two.xhtml"/></CipherData></EncryptedData></encryption>"#;
        let error = extract(
            &book(&[("META-INF/encryption.xml", drm)]),
            &Limits::default(),
        )
        .unwrap_err();
        assert_eq!(error, IngestError::Encrypted { kind: Kind::Epub });
    }
}
