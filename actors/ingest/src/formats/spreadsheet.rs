//! XLSX, XLS and ODS through calamine: one section per worksheet (hidden ones included,
//! chart and macro sheets skipped), its non-empty cells as rows. A sheet no wider than
//! `MAX_TABLE_COLUMNS` becomes a Markdown table; a wider one lists each row's non-empty
//! cells joined by ` | `, so a hostile sparse sheet cannot blow up into empty cells.
//!
//! calamine decompresses zip entries itself, so XLSX and ODS archives are first read once
//! through our capped reader. XLSX cells are streamed (`worksheet_cells_reader`); XLS and
//! ODS go through calamine's dense ranges, whose size a hostile file controls: the worker
//! process's memory limit is what bounds those.

use std::io::Cursor;

use calamine::{Data, Ods, Reader, SheetType, Xls, XlsError, Xlsx};

use super::markdown;
use super::opendocument;
use crate::archive::Archive;
use crate::error::IngestError;
use crate::extracted::{Extracted, Location, TextBuilder};
use crate::kind::Kind;
use crate::limits::Limits;

/// Widest sheet rendered as a table; wider sheets list their non-empty cells per row.
const MAX_TABLE_COLUMNS: u32 = 64;

/// One non-empty cell: row, column, text.
type SparseCell = (u32, u32, String);

pub(super) fn extract(kind: Kind, bytes: &[u8], limits: &Limits) -> Result<Extracted, IngestError> {
    if matches!(kind, Kind::Xlsx | Kind::Ods) {
        let mut archive = Archive::open(bytes, kind, limits)?;
        if kind == Kind::Ods {
            opendocument::check_not_encrypted(&mut archive, kind)?;
        }
        archive.check_every_entry()?;
    }
    let mut builder = TextBuilder::new(limits.max_chars);
    let mut cells_left = limits.max_cells;
    match kind {
        Kind::Xlsx => {
            let mut workbook = Xlsx::new(Cursor::new(bytes))
                .map_err(|error| IngestError::invalid(kind, error.to_string()))?;
            let sheets = workbook.sheets_metadata().to_vec();
            for_each_sheet(&sheets, &mut builder, limits, |name| {
                let mut reader = workbook
                    .worksheet_cells_reader(name)
                    .map_err(|error| error.to_string())?;
                let mut cells = Vec::new();
                while let Some(cell) = reader.next_cell().map_err(|error| error.to_string())? {
                    if cells.len() >= cells_left {
                        break;
                    }
                    let (row, column) = cell.get_position();
                    let text = Data::from(cell.get_value().clone()).to_string();
                    if !text.trim().is_empty() {
                        cells.push((row, column, text));
                    }
                }
                cells_left -= cells.len();
                Ok(cells)
            })?;
        }
        Kind::Xls => {
            let mut workbook = Xls::new(Cursor::new(bytes)).map_err(|error| match error {
                XlsError::Password => IngestError::Encrypted { kind },
                other => IngestError::invalid(kind, other.to_string()),
            })?;
            read_dense(&mut workbook, &mut builder, limits, &mut cells_left)?;
        }
        _ => {
            let mut workbook = Ods::new(Cursor::new(bytes))
                .map_err(|error| IngestError::invalid(kind, error.to_string()))?;
            read_dense(&mut workbook, &mut builder, limits, &mut cells_left)?;
        }
    }
    if cells_left == 0 {
        builder.note(format!(
            "cells after the first {} skipped (limit max_cells)",
            limits.max_cells
        ));
    }
    Ok(builder.finish(kind, None))
}

fn dense_to_sparse(range: &calamine::Range<Data>, cells_left: usize) -> Vec<SparseCell> {
    range
        .used_cells()
        .filter_map(|(row, column, value)| {
            let text = value.to_string();
            if text.trim().is_empty() {
                return None;
            }
            let (start_row, start_column) = range.start().unwrap_or((0, 0));
            Some((start_row + row as u32, start_column + column as u32, text))
        })
        .take(cells_left)
        .collect()
}

/// Every sheet of a workbook that calamine reads as a dense range (XLS, ODS), at most
/// `cells_left` cells in all.
fn read_dense<'bytes, R>(
    workbook: &mut R,
    builder: &mut TextBuilder,
    limits: &Limits,
    cells_left: &mut usize,
) -> Result<(), IngestError>
where
    R: Reader<Cursor<&'bytes [u8]>>,
    R::Error: std::fmt::Display,
{
    let sheets = workbook.sheets_metadata().to_vec();
    for_each_sheet(&sheets, builder, limits, |name| {
        let range = workbook
            .worksheet_range(name)
            .map_err(|error| error.to_string())?;
        let cells = dense_to_sparse(&range, *cells_left);
        *cells_left -= cells.len();
        Ok(cells)
    })
}

/// Renders each worksheet through `read_cells`, under the sheet cap.
fn for_each_sheet(
    sheets: &[calamine::Sheet],
    builder: &mut TextBuilder,
    limits: &Limits,
    mut read_cells: impl FnMut(&str) -> Result<Vec<SparseCell>, String>,
) -> Result<(), IngestError> {
    let mut number = 0u32;
    for sheet in sheets {
        if builder.is_full() {
            break;
        }
        number += 1;
        if sheet.typ != SheetType::WorkSheet {
            builder.note(format!(
                "sheet '{}' is not a worksheet: skipped",
                sheet.name
            ));
            continue;
        }
        if number as usize > limits.max_parts {
            builder.note(format!(
                "sheets after the first {} skipped (limit max_parts)",
                limits.max_parts
            ));
            break;
        }
        let mut cells = match read_cells(&sheet.name) {
            Ok(cells) => cells,
            Err(error) => {
                builder.note(format!("sheet '{}' could not be read: {error}", sheet.name));
                continue;
            }
        };
        if cells.is_empty() {
            continue;
        }
        cells.sort_by_key(|(row, column, _)| (*row, *column));
        let section = builder.open_section(
            Location::Sheet {
                number,
                name: sheet.name.clone(),
            },
            Some(sheet.name.clone()),
        );
        builder.block(&markdown::heading(2, &format!("Sheet: {}", sheet.name)));
        builder.block(&render_cells(&cells));
        builder.close_section(section);
    }
    Ok(())
}

fn render_cells(cells: &[SparseCell]) -> String {
    let first_column = cells
        .iter()
        .map(|(_, column, _)| *column)
        .min()
        .unwrap_or(0);
    let last_column = cells
        .iter()
        .map(|(_, column, _)| *column)
        .max()
        .unwrap_or(0);
    let is_narrow = last_column - first_column < MAX_TABLE_COLUMNS;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut current_row: Option<u32> = None;
    for (row, column, text) in cells {
        if current_row != Some(*row) {
            rows.push(Vec::new());
            current_row = Some(*row);
        }
        let Some(cells_of_row) = rows.last_mut() else {
            continue;
        };
        if is_narrow {
            let index = (column - first_column) as usize;
            if cells_of_row.len() <= index {
                cells_of_row.resize(index + 1, String::new());
            }
            if let Some(slot) = cells_of_row.get_mut(index) {
                *slot = text.clone();
            }
        } else {
            cells_of_row.push(text.clone());
        }
    }
    if is_narrow {
        markdown::table(&rows)
    } else {
        rows.iter()
            .map(|row| row.join(" | "))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_sheets_are_tables_wide_ones_are_lists() {
        let cells = vec![
            (0, 0, "name".to_owned()),
            (0, 2, "note".to_owned()),
            (1, 0, "Ultramarine".to_owned()),
        ];
        assert_eq!(
            render_cells(&cells),
            "| name |  | note |\n| --- | --- | --- |\n| Ultramarine |  |  |\n"
        );
        let wide = vec![
            (0, 0, "a".to_owned()),
            (0, 16_000, "b".to_owned()),
            (5, 3, "c".to_owned()),
        ];
        assert_eq!(render_cells(&wide), "a | b\nc");
    }

    #[test]
    fn ods_sheets_become_sections() {
        let content = r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2"><office:body><office:spreadsheet>
<table:table table:name="Pigments"><table:table-row><table:table-cell office:value-type="string"><text:p>name</text:p></table:table-cell><table:table-cell office:value-type="string"><text:p>price</text:p></table:table-cell></table:table-row>
<table:table-row><table:table-cell office:value-type="string"><text:p>Verdigris</text:p></table:table-cell><table:table-cell office:value-type="float" office:value="12.5"><text:p>12.5</text:p></table:table-cell></table:table-row></table:table>
</office:spreadsheet></office:body></office:document-content>"#;
        let ods = super::super::docx::tests::zip_of(&[
            ("mimetype", "application/vnd.oasis.opendocument.spreadsheet"),
            ("META-INF/manifest.xml", "<manifest:manifest/>"),
            ("content.xml", content),
        ]);
        let extracted = extract(Kind::Ods, &ods, &Limits::default()).unwrap();
        assert_eq!(
            extracted.text,
            "## Sheet: Pigments\n\n| name | price |\n| --- | --- |\n| Verdigris | 12.5 |"
        );
        assert_eq!(
            extracted.sections[0].location,
            Location::Sheet {
                number: 1,
                name: "Pigments".to_owned()
            }
        );
    }

    #[test]
    fn a_broken_workbook_is_invalid() {
        let error = extract(
            Kind::Xls,
            b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1 truncated",
            &Limits::default(),
        )
        .unwrap_err();
        assert!(error.to_string().starts_with("not a valid XLS"), "{error}");
    }
}
