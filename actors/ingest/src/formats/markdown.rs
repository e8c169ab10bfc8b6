//! Markdown building blocks shared by the document formats: tables and headings.

/// A Markdown table; the first row is the header. Cells are flattened to one line and
/// their pipes escaped; short rows are padded. Empty rows are dropped.
pub(super) fn table(rows: &[Vec<String>]) -> String {
    let rows: Vec<&Vec<String>> = rows
        .iter()
        .filter(|row| row.iter().any(|cell| !cell.trim().is_empty()))
        .collect();
    let columns = rows.iter().map(|row| row.len()).max().unwrap_or(0);
    if columns == 0 {
        return String::new();
    }
    let mut rendered = String::new();
    for (index, row) in rows.iter().enumerate() {
        rendered.push('|');
        for column in 0..columns {
            let cell = row.get(column).map(String::as_str).unwrap_or_default();
            rendered.push(' ');
            rendered.push_str(&table_cell(cell));
            rendered.push_str(" |");
        }
        rendered.push('\n');
        if index == 0 {
            rendered.push('|');
            rendered.push_str(&" --- |".repeat(columns));
            rendered.push('\n');
        }
    }
    rendered
}

/// A table flattened into one line, for a table nested in another table's cell.
pub(super) fn inline_table(rows: &[Vec<String>]) -> String {
    rows.iter()
        .map(|row| {
            row.iter()
                .map(|cell| cell.trim())
                .filter(|cell| !cell.is_empty())
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .filter(|row| !row.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

fn table_cell(cell: &str) -> String {
    cell.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// `## text` for level 2; levels are clamped to 1..=6.
pub(super) fn heading(level: usize, text: &str) -> String {
    format!("{} {}", "#".repeat(level.clamp(1, 6)), text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_padded_and_escaped() {
        let rows = vec![
            vec!["Col head 1".to_owned(), "b".to_owned()],
            vec!["a|b".to_owned()],
            vec![String::new(), String::new()],
        ];
        assert_eq!(
            table(&rows),
            "| Col head 1 | b |\n| --- | --- |\n| a\\|b |  |\n"
        );
        assert_eq!(inline_table(&rows), "Col head 1 | b; a|b");
    }
}
