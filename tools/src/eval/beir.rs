//! BEIR folders: `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl` (`_id`, `text`)
//! and `qrels/test.tsv` (query id, document id, graded relevance). One collection; only
//! judged queries are asked.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use super::set::{read, set_name, EvalCollection, EvalDocument, EvalQuery, EvalSet, SetKind};
use super::EvalError;

#[derive(Deserialize)]
struct Document {
    #[serde(rename = "_id")]
    id: String,
    #[serde(default)]
    title: String,
    text: String,
}

#[derive(Deserialize)]
struct Query {
    #[serde(rename = "_id")]
    id: String,
    text: String,
}

pub fn load(dir: &Path) -> Result<EvalSet, EvalError> {
    let documents = read(dir.join("corpus.jsonl"))?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str::<Document>(line)
                .map_err(|error| EvalError::Data(format!("corpus.jsonl: {error}")))
        })
        .map(|document| {
            document.map(|document| EvalDocument {
                text: match document.title.trim() {
                    "" => document.text,
                    title => format!("{title}. {}", document.text),
                },
                id: document.id,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut qrels = parse_qrels(&read(dir.join("qrels/test.tsv"))?);
    let queries = read(dir.join("queries.jsonl"))?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| serde_json::from_str::<Query>(line).ok())
        .filter_map(|query| {
            qrels.remove(&query.id).map(|judged| EvalQuery {
                text: query.text,
                judged,
            })
        })
        .collect();
    Ok(EvalSet {
        name: set_name(dir),
        kind: SetKind::Beir,
        id_field: "doc_id",
        collections: vec![EvalCollection {
            name: "beir".to_owned(),
            documents,
            queries,
        }],
    })
}

/// Query id → document id → graded relevance.
pub fn parse_qrels(tsv: &str) -> HashMap<String, HashMap<String, u32>> {
    let mut qrels: HashMap<String, HashMap<String, u32>> = HashMap::new();
    for line in tsv.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let [query, document, score] = fields[..] else {
            continue;
        };
        // The optional header ("query-id corpus-id score") does not parse as a number.
        let Ok(score) = score.trim().parse::<u32>() else {
            continue;
        };
        qrels
            .entry(query.to_owned())
            .or_default()
            .insert(document.to_owned(), score);
    }
    qrels
}
