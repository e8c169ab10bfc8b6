//! Memory texts for the benchmark: the sentences of a JSON-lines corpus (BEIR layout), since
//! a memory is usually one statement, not a page. Cycled with a copy number when more
//! memories than sentences are asked for, so every text is distinct.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::BenchError;

#[derive(Clone)]
pub struct Corpus {
    passages: Arc<Vec<String>>,
}

#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    title: String,
    text: String,
}

impl Corpus {
    pub fn load(path: &Path) -> Result<Self, BenchError> {
        let content = std::fs::read_to_string(path)
            .map_err(|error| BenchError::Setup(format!("corpus {}: {error}", path.display())))?;
        let passages: Vec<String> = content
            .lines()
            .filter(|line| !line.trim().is_empty())
            .filter_map(|line| serde_json::from_str::<Line>(line).ok())
            .map(|line| match line.title.trim() {
                "" => line.text,
                title => format!("{title}. {}", line.text),
            })
            .flat_map(|text| sentences(&text))
            .collect();
        if passages.is_empty() {
            return Err(BenchError::Setup(format!(
                "corpus {} has no passages",
                path.display()
            )));
        }
        Ok(Self {
            passages: Arc::new(passages),
        })
    }

    /// Queries for latency runs: the first words of sentences spread over the corpus.
    pub fn queries(&self, count: usize) -> Vec<String> {
        let step = (self.passages.len() / count.max(1)).max(1);
        (0..count)
            .map(|index| {
                let sentence = &self.passages[(index * step + 7) % self.passages.len()];
                let words: Vec<&str> = sentence.split_whitespace().take(6).collect();
                format!("{} {index}", words.join(" "))
            })
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.passages.len()
    }

    /// The `index`th text: passage `index % len`, marked with its copy number after the first
    /// round.
    pub fn text(&self, index: usize) -> String {
        let passage = &self.passages[index % self.passages.len()];
        match index / self.passages.len() {
            0 => passage.clone(),
            copy => format!("{passage} (copy {copy})"),
        }
    }
}

/// Splits a passage after `.`, `!` or `?` followed by a space; fragments under 20
/// characters join the next sentence.
pub fn sentences(text: &str) -> Vec<String> {
    let mut sentences = Vec::new();
    let mut current = String::new();
    let mut characters = text.chars().peekable();
    while let Some(character) = characters.next() {
        current.push(character);
        let boundary = matches!(character, '.' | '!' | '?')
            && characters.peek().is_none_or(|next| next.is_whitespace());
        if boundary && current.trim().chars().count() >= 20 {
            sentences.push(current.trim().chars().take(10_000).collect());
            current.clear();
        }
    }
    if !current.trim().is_empty() {
        sentences.push(current.trim().chars().take(10_000).collect());
    }
    sentences
}
