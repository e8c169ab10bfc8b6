//! CSV and TSV. The first row is the header; every later row becomes one line of
//! `header: value` pairs joined by `; `, empty cells left out. A chunk of such lines keeps
//! each value next to its column name, which a Markdown table loses once it is split.

use crate::decode;
use crate::error::IngestError;
use crate::extracted::{Extracted, TextBuilder};
use crate::kind::Kind;
use crate::limits::Limits;

pub(super) fn extract(
    kind: Kind,
    delimiter: u8,
    bytes: &[u8],
    limits: &Limits,
) -> Result<Extracted, IngestError> {
    let text = decode::decode_text(bytes);
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(false)
        .flexible(true)
        .quoting(delimiter == b',')
        .from_reader(text.as_bytes());
    let mut builder = TextBuilder::new(limits.max_chars);
    let mut header: Option<Vec<String>> = None;
    let mut malformed_rows = 0usize;
    for record in reader.records() {
        if builder.is_full() {
            break;
        }
        let record = match record {
            Ok(record) => record,
            Err(_) => {
                malformed_rows += 1;
                continue;
            }
        };
        let cells: Vec<String> = record.iter().map(|cell| cell.trim().to_owned()).collect();
        if cells.iter().all(String::is_empty) {
            continue;
        }
        let Some(names) = &header else {
            builder.block(&cells.join("; "));
            builder.push("\n");
            header = Some(cells);
            continue;
        };
        let pairs: Vec<String> = cells
            .iter()
            .enumerate()
            .filter(|(_, value)| !value.is_empty())
            .map(|(column, value)| match names.get(column) {
                Some(name) if !name.is_empty() => format!("{name}: {value}"),
                _ => value.clone(),
            })
            .collect();
        builder.push(&pairs.join("; "));
        builder.push("\n");
    }
    if malformed_rows > 0 {
        builder.note(format!("{malformed_rows} malformed rows skipped"));
    }
    if header.is_none() {
        return Err(IngestError::invalid(kind, "no rows"));
    }
    Ok(builder.finish(kind, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_header_value_lines() {
        let csv =
            b"name,source,note\nVerdigris,\"copper plates, vinegar\",\nBone black,bones,cool\n";
        let extracted = extract(Kind::Csv, b',', csv, &Limits::default()).unwrap();
        assert_eq!(
            extracted.text,
            "name; source; note\nname: Verdigris; source: copper plates, vinegar\nname: Bone black; source: bones; note: cool"
        );
    }

    #[test]
    fn tsv_ignores_quotes_and_ragged_rows() {
        let tsv = b"a\tb\n\"1\t2\t3\n";
        let extracted = extract(Kind::Tsv, b'\t', tsv, &Limits::default()).unwrap();
        assert_eq!(extracted.text, "a; b\na: \"1; b: 2; 3");
    }
}
