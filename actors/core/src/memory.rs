//! Memories as the actors see them: what a create, a patch or a remember carries and
//! what a remember produced, and the rules a valid one follows (SPEC.md
//! "Resources/Memory" and "Limits").

use memvault_storage::RememberedFact;
use serde_json::{Map, Value};

use memvault_types::limits::{
    MEMORY_TEXT_MAX_CHARS, MEMORY_TEXT_MIN_CHARS, METADATA_MAX_BYTES, SHORT_FIELD_MAX_CHARS,
};

/// A validated memory to create; ids, timestamps and `created_by` are added by the service.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    pub text: String,
    pub importance: f64,
    pub category: String,
    pub source: String,
    pub metadata: Map<String, Value>,
    pub container_tag: Option<String>,
    /// Attached files, in their stored form (`memvault_files::Attachment`).
    pub images: Vec<Value>,
}

/// A validated partial update: `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryPatch {
    pub text: Option<String>,
    pub importance: Option<f64>,
    pub category: Option<String>,
    pub metadata: Option<Map<String, Value>>,
}

impl MemoryPatch {
    pub fn is_empty(&self) -> bool {
        self.text.is_none()
            && self.importance.is_none()
            && self.category.is_none()
            && self.metadata.is_none()
    }
}

/// A change the collection actor applies to one memory; a text change arrives with the
/// new embedding, computed before the actor is asked.
#[derive(Debug, Clone, Default)]
pub struct MemoryChange {
    pub text: Option<(String, Vec<f32>)>,
    pub importance: Option<f64>,
    pub category: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    pub pinned: Option<bool>,
    pub archived: Option<bool>,
    /// A file attached or removed.
    pub images: Option<ImageChange>,
}

/// A change to a memory's attached files.
#[derive(Debug, Clone, PartialEq)]
pub enum ImageChange {
    /// Appends one (its stored form).
    Add(Value),
    /// Removes the one at this index; an index past the end is `ImageNotFound`.
    Remove(usize),
}

impl MemoryChange {
    /// Whether the change touches content (and so `updated_at`); pin and archive are
    /// state, not content, and leave staleness alone.
    pub fn touches_content(&self) -> bool {
        self.text.is_some()
            || self.importance.is_some()
            || self.category.is_some()
            || self.metadata.is_some()
            || self.images.is_some()
    }
}

pub fn validate_text(text: &str) -> Result<(), String> {
    let characters = text.chars().count();
    if !(MEMORY_TEXT_MIN_CHARS..=MEMORY_TEXT_MAX_CHARS).contains(&characters) {
        return Err(format!(
            "text must be {MEMORY_TEXT_MIN_CHARS} to {MEMORY_TEXT_MAX_CHARS} characters, got {characters}"
        ));
    }
    if text.trim().is_empty() {
        return Err("text must not be only whitespace".to_owned());
    }
    Ok(())
}

pub fn validate_importance(importance: f64) -> Result<(), String> {
    if !(0.0..=1.0).contains(&importance) {
        return Err(format!(
            "importance must be between 0 and 1, got {importance}"
        ));
    }
    Ok(())
}

/// Category, source, container tag: 1 to 200 characters.
pub fn validate_short_field(field: &str, value: &str) -> Result<(), String> {
    let characters = value.chars().count();
    if characters == 0 || characters > SHORT_FIELD_MAX_CHARS {
        return Err(format!(
            "{field} must be 1 to {SHORT_FIELD_MAX_CHARS} characters, got {characters}"
        ));
    }
    Ok(())
}

pub fn validate_metadata(metadata: &Map<String, Value>) -> Result<(), String> {
    let size = serde_json::to_vec(metadata)
        .map(|bytes| bytes.len())
        .unwrap_or(usize::MAX);
    if size > METADATA_MAX_BYTES {
        return Err(format!(
            "metadata must serialize to at most {METADATA_MAX_BYTES} bytes, got {size}"
        ));
    }
    Ok(())
}

/// What one remember carries, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct RememberInput {
    pub content: String,
    pub importance: Option<f64>,
}

/// Which extractor read the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extractor {
    /// The built-in rule-based extractor (no LLM configured).
    Rules,
    /// An LLM (the platform's or the tenant's own).
    Llm,
    /// None: the content was stored as one raw memory (spend cap reached).
    Skipped,
}

impl Extractor {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rules => "rules",
            Self::Llm => "llm",
            Self::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone)]
pub struct RememberOutcome {
    pub facts: Vec<RememberedFact>,
    pub extractor: Extractor,
    /// Why extraction was skipped, when it was.
    pub detail: Option<String>,
}

impl RememberOutcome {
    /// Memories newly stored (new or updated), not duplicates.
    pub fn created(&self) -> usize {
        self.facts
            .iter()
            .filter(|fact| fact.relation != "duplicate")
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_counted_in_characters() {
        assert!(validate_text("x").is_ok());
        assert!(validate_text(&"é".repeat(10_000)).is_ok());
        assert!(validate_text(&"é".repeat(10_001)).is_err());
        assert!(validate_text("").is_err());
        assert!(validate_text("   ").is_err());
    }

    #[test]
    fn importance_is_a_unit_interval() {
        for accepted in [0.0, 0.5, 1.0] {
            assert!(validate_importance(accepted).is_ok());
        }
        for refused in [-0.1, 1.1, f64::NAN] {
            assert!(validate_importance(refused).is_err());
        }
    }
}
