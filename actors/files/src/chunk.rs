//! Extracted text into chunks that each become a memory: split on the Markdown structure
//! (headings, paragraphs, sentences, in that order of preference) and sized in the
//! embedding model's own tokens, with an overlap so a phrase cut at a boundary is whole
//! in one of the two chunks.

use memvault_embed::TokenCounter;
use memvault_ingest::{Location, Section};
use memvault_types::limits::MEMORY_TEXT_MAX_CHARS;
use text_splitter::{ChunkConfig, ChunkSizer, MarkdownSplitter};

/// Chunk sizes in tokens: at least this many when the structure allows...
const MIN_TOKENS: usize = 128;
/// ...and at most this many (all-MiniLM-L6-v2 reads 256 word pieces, two of them its
/// own markers).
const MAX_TOKENS: usize = 254;
/// Tokens repeated from the end of a chunk at the start of the next.
const OVERLAP_TOKENS: usize = 32;
/// Without the model's tokenizer (a remote embedder): characters per token, roughly, in
/// English prose.
const CHARS_PER_TOKEN: usize = 4;

/// One chunk of a file's text, and where in the file it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub text: String,
    /// The page, slide, sheet, chapter or attachment the chunk starts in.
    pub location: Option<Location>,
}

/// Splits extracted text into chunks.
#[derive(Clone)]
pub struct Chunker {
    counter: Option<TokenCounter>,
    max_tokens: usize,
}

struct Tokens(TokenCounter);

impl ChunkSizer for Tokens {
    fn size(&self, chunk: &str) -> usize {
        (self.0)(chunk)
    }
}

struct EstimatedTokens;

impl ChunkSizer for EstimatedTokens {
    fn size(&self, chunk: &str) -> usize {
        chunk.chars().count().div_ceil(CHARS_PER_TOKEN)
    }
}

impl Chunker {
    /// A chunker sized by `counter` (the embedder's tokenizer), capped at the model's
    /// `max_tokens`; by an estimate without one.
    pub fn new(counter: Option<TokenCounter>, max_tokens: Option<usize>) -> Self {
        let max_tokens = max_tokens
            .map_or(MAX_TOKENS, |tokens| tokens.saturating_sub(2))
            .clamp(MIN_TOKENS + OVERLAP_TOKENS, MAX_TOKENS);
        Self {
            counter,
            max_tokens,
        }
    }

    /// The chunks of `text`, each with the location of the section it starts in; empty for
    /// a text with nothing but whitespace.
    pub fn chunks(&self, text: &str, sections: &[Section]) -> Vec<Chunk> {
        let capacity = MIN_TOKENS..self.max_tokens;
        let pieces: Vec<(usize, &str)> = match &self.counter {
            Some(counter) => match ChunkConfig::new(capacity.clone())
                .with_sizer(Tokens(counter.clone()))
                .with_overlap(OVERLAP_TOKENS)
            {
                Ok(config) => MarkdownSplitter::new(config).chunk_indices(text).collect(),
                Err(_) => Vec::new(),
            },
            None => match ChunkConfig::new(capacity)
                .with_sizer(EstimatedTokens)
                .with_overlap(OVERLAP_TOKENS)
            {
                Ok(config) => MarkdownSplitter::new(config).chunk_indices(text).collect(),
                Err(_) => Vec::new(),
            },
        };
        pieces
            .into_iter()
            .filter(|(_, piece)| !piece.trim().is_empty())
            .map(|(offset, piece)| Chunk {
                text: cap_chars(piece.trim(), MEMORY_TEXT_MAX_CHARS),
                location: innermost_section(sections, offset),
            })
            .collect()
    }
}

/// The innermost section whose range holds `offset` (nested sections lie inside their
/// parents, so the last match in text order is the innermost).
fn innermost_section(sections: &[Section], offset: usize) -> Option<Location> {
    sections
        .iter()
        .rfind(|section| section.range.contains(&offset))
        .map(|section| section.location.clone())
}

/// `text` cut to at most `max` characters, on a character boundary.
pub fn cap_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_chunk_and_long_text_many_within_the_cap() {
        let chunker = Chunker::new(None, Some(256));
        let short = chunker.chunks("# Title\n\nOne short paragraph.", &[]);
        assert_eq!(short.len(), 1);
        assert!(short[0].text.contains("One short paragraph."));
        let paragraph = "The lighthouse keeper wrote in the log every evening. ".repeat(40);
        let long = format!("# Log\n\n{paragraph}\n\n## Later\n\n{paragraph}");
        let chunks = chunker.chunks(&long, &[]);
        assert!(chunks.len() > 2, "{}", chunks.len());
        for chunk in &chunks {
            assert!(chunk.text.chars().count() <= MAX_TOKENS * CHARS_PER_TOKEN + 8);
        }
        assert!(chunker.chunks("  \n\n ", &[]).is_empty());
    }

    #[test]
    fn chunks_know_their_page() {
        let text = format!("{}\n\n{}", "a ".repeat(600), "b ".repeat(600));
        let split = text.find('b').unwrap();
        let sections = vec![
            Section {
                location: Location::Page { number: 1 },
                title: None,
                range: 0..split,
            },
            Section {
                location: Location::Page { number: 2 },
                title: None,
                range: split..text.len(),
            },
        ];
        let chunks = Chunker::new(None, None).chunks(&text, &sections);
        assert_eq!(
            chunks.first().unwrap().location,
            Some(Location::Page { number: 1 })
        );
        assert_eq!(
            chunks.last().unwrap().location,
            Some(Location::Page { number: 2 })
        );
    }

    #[test]
    fn cap_chars_cuts_on_a_character_boundary() {
        assert_eq!(cap_chars("héllo", 2), "hé");
        assert_eq!(cap_chars("hi", 5), "hi");
    }
}
