//! LoCoMo conversations (Maharana et al., ACL 2024): a JSON list of samples, each with a
//! `conversation` (`session_N` lists of turns `{speaker, dia_id, text}`) and `qa`
//! (`question`, `evidence` turn ids, `category` 1–5). One collection per conversation, one
//! memory per turn (`"{speaker}: {text}"`, its `dia_id` in the metadata); every question
//! but the adversarial category 5 is asked, judged by its evidence turns.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::set::{read, set_name, EvalCollection, EvalDocument, EvalQuery, EvalSet, SetKind};
use super::EvalError;

/// Adversarial questions: their answer is not in the conversation, so no evidence to find.
const ADVERSARIAL: u64 = 5;

#[derive(Deserialize)]
pub struct Sample {
    sample_id: Value,
    conversation: Map<String, Value>,
    qa: Vec<Question>,
}

#[derive(Deserialize)]
struct Turn {
    speaker: String,
    dia_id: String,
    text: String,
}

#[derive(Deserialize)]
struct Question {
    question: String,
    #[serde(default)]
    evidence: Vec<String>,
    #[serde(default)]
    category: Option<u64>,
}

pub fn load(path: &Path) -> Result<EvalSet, EvalError> {
    let samples: Vec<Sample> = serde_json::from_str(&read(path.to_owned())?)
        .map_err(|error| EvalError::Data(format!("{}: {error}", path.display())))?;
    let collections = samples
        .into_iter()
        .map(conversation)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(EvalSet {
        name: set_name(path),
        kind: SetKind::Conversations,
        id_field: "dia_id",
        collections,
    })
}

pub fn conversation(sample: Sample) -> Result<EvalCollection, EvalError> {
    let sample_id = match &sample.sample_id {
        Value::String(id) => id.clone(),
        other => other.to_string(),
    };
    // Sessions in order of their number (the map's own order is alphabetical).
    let mut sessions: BTreeMap<u32, &Vec<Value>> = BTreeMap::new();
    for (key, value) in &sample.conversation {
        let number = key
            .strip_prefix("session_")
            .and_then(|number| number.parse::<u32>().ok());
        if let (Some(number), Value::Array(turns)) = (number, value) {
            sessions.insert(number, turns);
        }
    }
    let mut documents = Vec::new();
    for turn in sessions.into_values().flatten() {
        let turn: Turn = serde_json::from_value(turn.clone()).map_err(|error| {
            EvalError::Data(format!("conversation {sample_id}: a turn: {error}"))
        })?;
        documents.push(EvalDocument {
            id: normalise_turn_id(&turn.dia_id).unwrap_or(turn.dia_id),
            text: format!("{}: {}", turn.speaker, turn.text),
        });
    }
    let turn_ids: HashSet<&str> = documents
        .iter()
        .map(|document| document.id.as_str())
        .collect();
    let queries = sample
        .qa
        .iter()
        .filter(|question| question.category != Some(ADVERSARIAL))
        .filter_map(|question| {
            // Evidence naming a turn the conversation does not have cannot be found by any
            // mode; it is left out rather than counted as a miss.
            let judged: HashMap<String, u32> = question
                .evidence
                .iter()
                .flat_map(|evidence| evidence_turn_ids(evidence))
                .filter(|id| turn_ids.contains(id.as_str()))
                .map(|id| (id, 1))
                .collect();
            (!judged.is_empty()).then(|| EvalQuery {
                text: question.question.clone(),
                judged,
            })
        })
        .collect();
    let name: String = sample_id
        .chars()
        .map(|character| match character {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' => character,
            _ => '-',
        })
        .collect();
    Ok(EvalCollection {
        name: format!("locomo-{name}"),
        documents,
        queries,
    })
}

/// The turn ids in one evidence string, normalised to `D{session}:{turn}`. The dataset has
/// several ids in one string (`"D8:6; D9:17"`, `"D9:1 D4:4"`), a stray colon
/// (`"D:11:26"`), leading zeros (`"D30:05"`) and bare `"D"`.
pub fn evidence_turn_ids(evidence: &str) -> Vec<String> {
    evidence
        .split(|character: char| character == ';' || character == ',' || character.is_whitespace())
        .filter_map(normalise_turn_id)
        .collect()
}

/// `D{session}:{turn}` from one id with optional stray colons and leading zeros.
fn normalise_turn_id(raw: &str) -> Option<String> {
    let rest = raw.trim().strip_prefix('D')?;
    let numbers: Vec<u32> = rest
        .split(':')
        .filter(|part| !part.is_empty())
        .map(|part| part.parse::<u32>().ok())
        .collect::<Option<Vec<u32>>>()?;
    let [session, turn] = numbers[..] else {
        return None;
    };
    Some(format!("D{session}:{turn}"))
}
