//! What an evaluation set is once loaded, whatever its format: collections of documents,
//! each with the queries asked of it and their judged document ids.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{beir, locomo, EvalError};

/// The public sets `memvault eval` scores when given a data root, by folder.
pub const PUBLIC_BEIR_SETS: [&str; 2] = ["beir-msmarco-5k", "beir-business-reports"];
/// The LoCoMo conversations under a data root.
pub const PUBLIC_LOCOMO_FILE: &str = "locomo-dev/locomo-dev.json";

/// How a set is judged, which decides its headline measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    /// Graded passage relevance: the headline is nDCG@10.
    Beir,
    /// Evidence turns of a conversation: the headline is evidence Recall@10.
    Conversations,
}

/// One loaded set.
#[derive(Debug)]
pub struct EvalSet {
    /// How the table names it (the folder or file stem).
    pub name: String,
    pub kind: SetKind,
    /// The metadata field each memory carries its document id in, so that a hit maps back
    /// to a judgement (`doc_id` for BEIR, `dia_id` for LoCoMo turns).
    pub id_field: &'static str,
    pub collections: Vec<EvalCollection>,
}

/// Documents stored as memories of one collection, and the queries asked of it.
#[derive(Debug)]
pub struct EvalCollection {
    /// A valid collection name, unique within its set.
    pub name: String,
    pub documents: Vec<EvalDocument>,
    pub queries: Vec<EvalQuery>,
}

#[derive(Debug)]
pub struct EvalDocument {
    /// The id judgements refer to; stored in the memory's metadata.
    pub id: String,
    pub text: String,
}

#[derive(Debug)]
pub struct EvalQuery {
    pub text: String,
    /// Document id → graded relevance (LoCoMo evidence turns are all 1).
    pub judged: HashMap<String, u32>,
}

impl EvalSet {
    pub fn query_count(&self) -> usize {
        self.collections
            .iter()
            .map(|collection| collection.queries.len())
            .sum()
    }

    /// A smaller set of the same shape, for a floor that must run in CI: a BEIR set keeps
    /// its first `documents` documents in corpus order, the judgements of those, and the
    /// queries that still have a relevant one; a conversations set keeps its first
    /// `conversations` conversations whole.
    pub fn sample(mut self, documents: usize, conversations: usize) -> Self {
        match self.kind {
            SetKind::Beir => {
                for collection in &mut self.collections {
                    collection.documents.truncate(documents);
                    let kept: std::collections::HashSet<&str> = collection
                        .documents
                        .iter()
                        .map(|document| document.id.as_str())
                        .collect();
                    for query in &mut collection.queries {
                        query.judged.retain(|id, _| kept.contains(id.as_str()));
                    }
                    collection
                        .queries
                        .retain(|query| query.judged.values().any(|grade| *grade > 0));
                }
            }
            SetKind::Conversations => self.collections.truncate(conversations),
        }
        self
    }

    pub fn document_count(&self) -> usize {
        self.collections
            .iter()
            .map(|collection| collection.documents.len())
            .sum()
    }
}

/// The sets under `path`: the three public sets of a data root (`../shared/data`), or one
/// BEIR folder (it holds `corpus.jsonl`), or one LoCoMo JSON file.
pub fn load_sets(path: &Path) -> Result<Vec<EvalSet>, EvalError> {
    if path.join("corpus.jsonl").is_file() {
        return Ok(vec![beir::load(path)?]);
    }
    if path.is_file() {
        return Ok(vec![locomo::load(path)?]);
    }
    let mut sets = Vec::new();
    for folder in PUBLIC_BEIR_SETS {
        sets.push(beir::load(&path.join(folder))?);
    }
    sets.push(locomo::load(&path.join(PUBLIC_LOCOMO_FILE))?);
    Ok(sets)
}

/// A set's name in the table: its folder name, or its file stem.
pub fn set_name(path: &Path) -> String {
    let name = if path.is_file() {
        path.file_stem()
    } else {
        path.file_name()
    };
    name.map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// Reads a file of a set, naming the file in the error.
pub fn read(path: PathBuf) -> Result<String, EvalError> {
    std::fs::read_to_string(&path)
        .map_err(|error| EvalError::Data(format!("{}: {error}", path.display())))
}
