//! The full-text index of one collection: Tantivy BM25 over memory texts.
//!
//! Writes are added to the `IndexWriter` as they happen but committed in batches: a search
//! that finds uncommitted writes commits them first (so every write acknowledged before the
//! search started is visible), and the collection actor commits idle changes on a timer. The
//! commit payload records the highest memory key the index holds, so start-up knows which
//! memories to add after a crash.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::columnar::Column;
use tantivy::query::QueryParser;
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::IndexError;

/// Tantivy's minimum per-thread indexing budget; memories are small.
const WRITER_MEMORY: usize = 15_000_000;
/// English stemming and lower-casing ("running" finds "run"); the tokenizer Tantivy ships.
const TOKENIZER: &str = "en_stem";

pub struct TextIndex {
    index: Index,
    reader: IndexReader,
    writer: Mutex<IndexWriter>,
    key: Field,
    text: Field,
    /// Set by every add or delete, cleared by a commit.
    dirty: AtomicBool,
    /// The highest memory key added so far (committed or not).
    highest_key: AtomicU64,
}

/// A candidate and its BM25 score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextHit {
    pub key: u64,
    pub score: f32,
}

pub type KeyFilter = Arc<dyn Fn(u64) -> bool + Send + Sync>;

impl TextIndex {
    /// Opens the index in `directory`, creating it when absent.
    pub fn open(directory: &Path) -> Result<Self, IndexError> {
        std::fs::create_dir_all(directory).map_err(|error| IndexError::Io(error.to_string()))?;
        let schema = schema();
        let index = match Index::open_in_dir(directory) {
            Ok(index) => {
                if index.schema() != schema {
                    return Err(IndexError::Corrupt(format!(
                        "{} has another schema",
                        directory.display()
                    )));
                }
                index
            }
            Err(tantivy::TantivyError::OpenDirectoryError(_))
            | Err(tantivy::TantivyError::OpenReadError(_)) => {
                Index::create_in_dir(directory, schema.clone()).map_err(text_error)?
            }
            Err(error) => return Err(text_error(error)),
        };
        Self::from_index(index)
    }

    /// An index that lives only in memory (tests).
    pub fn in_memory() -> Result<Self, IndexError> {
        Self::from_index(Index::create_in_ram(schema()))
    }

    fn from_index(index: Index) -> Result<Self, IndexError> {
        let schema = index.schema();
        let key = schema.get_field("key").map_err(text_error)?;
        let text = schema.get_field("text").map_err(text_error)?;
        let writer = index
            .writer_with_num_threads(1, WRITER_MEMORY)
            .map_err(text_error)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(text_error)?;
        let committed = index
            .load_metas()
            .map_err(text_error)?
            .payload
            .and_then(|payload| payload.parse::<u64>().ok())
            .unwrap_or(0);
        Ok(Self {
            index,
            reader,
            writer: Mutex::new(writer),
            key,
            text,
            dirty: AtomicBool::new(false),
            highest_key: AtomicU64::new(committed),
        })
    }

    /// The highest memory key in the last commit (0 for a new index).
    pub fn committed_key(&self) -> Result<u64, IndexError> {
        Ok(self
            .index
            .load_metas()
            .map_err(text_error)?
            .payload
            .and_then(|payload| payload.parse::<u64>().ok())
            .unwrap_or(0))
    }

    pub fn add(&self, key: u64, text: &str) -> Result<(), IndexError> {
        let mut document = TantivyDocument::default();
        document.add_u64(self.key, key);
        document.add_text(self.text, text);
        let writer = self.lock_writer();
        writer.add_document(document).map_err(text_error)?;
        self.highest_key.fetch_max(key, Ordering::SeqCst);
        self.dirty.store(true, Ordering::SeqCst);
        Ok(())
    }

    pub fn remove(&self, key: u64) {
        let writer = self.lock_writer();
        writer.delete_term(Term::from_field_u64(self.key, key));
        self.dirty.store(true, Ordering::SeqCst);
    }

    /// Removes every document (before a rebuild).
    pub fn clear(&self) -> Result<(), IndexError> {
        let writer = self.lock_writer();
        writer.delete_all_documents().map_err(text_error)?;
        self.highest_key.store(0, Ordering::SeqCst);
        self.dirty.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// The highest memory key added (committed or not).
    pub fn highest_key(&self) -> u64 {
        self.highest_key.load(Ordering::SeqCst)
    }

    pub fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::SeqCst)
    }

    /// Commits pending writes (if any) and makes them searchable.
    ///
    /// `dirty` is cleared only once the new reader is live: a search that starts while
    /// another commit is in flight sees `dirty`, waits here for the writer lock, and then
    /// reads the reloaded searcher (read-your-writes). Adds hold the same lock, so none
    /// slips in between the commit and the clearing of the flag.
    pub fn commit(&self) -> Result<(), IndexError> {
        let mut writer = self.lock_writer();
        if !self.dirty.load(Ordering::SeqCst) {
            return Ok(());
        }
        let highest = self.highest_key.load(Ordering::SeqCst).to_string();
        let mut prepared = writer.prepare_commit().map_err(text_error)?;
        prepared.set_payload(&highest);
        prepared.commit().map_err(text_error)?;
        self.reader.reload().map_err(text_error)?;
        self.dirty.store(false, Ordering::SeqCst);
        Ok(())
    }

    /// The `count` best BM25 matches of `query` whose key passes `filter`.
    pub fn search(
        &self,
        query: &str,
        count: usize,
        filter: KeyFilter,
    ) -> Result<Vec<TextHit>, IndexError> {
        if count == 0 || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        if self.is_dirty() {
            self.commit()?;
        }
        // Any input is a query: each word is quoted so none is read as query syntax, and
        // the words are ORed (BM25 ranks documents with more and rarer matches first).
        let words = plain_words(query);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let parser = QueryParser::for_index(&self.index, vec![self.text]);
        let (parsed, _ignored) = parser.parse_query_lenient(&words);
        let searcher = self.reader.searcher();
        // Fast path: the plain top documents (block-max WAND skips most of the postings),
        // with a margin for ineligible ones. It is exact when enough of them pass the
        // filter, or when it returned everything that matches.
        let fetch = count * 2 + 16;
        let top = searcher
            .search(&parsed, &TopDocs::with_limit(fetch))
            .map_err(text_error)?;
        let exhausted = top.len() < fetch;
        let mut hits = self.keys_of(&searcher, top)?;
        hits.retain(|hit| filter(hit.key));
        if hits.len() >= count || exhausted {
            hits.truncate(count);
            return Ok(hits);
        }
        // A filter that rejects most top documents: check every matching document.
        let collector = FilterCollector::new(
            "key".to_owned(),
            move |key: u64| filter(key),
            TopDocs::with_limit(count),
        );
        let top = searcher.search(&parsed, &collector).map_err(text_error)?;
        self.keys_of(&searcher, top)
    }

    fn keys_of(
        &self,
        searcher: &tantivy::Searcher,
        top: Vec<(f32, tantivy::DocAddress)>,
    ) -> Result<Vec<TextHit>, IndexError> {
        // One key column per segment, opened on first use rather than once per hit.
        let mut columns: Vec<Option<Column<u64>>> = vec![None; searcher.segment_readers().len()];
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let slot = address.segment_ord as usize;
            let keys = match columns.get_mut(slot) {
                Some(Some(keys)) => keys,
                Some(column) => column.insert(
                    searcher
                        .segment_reader(address.segment_ord)
                        .fast_fields()
                        .u64("key")
                        .map_err(text_error)?,
                ),
                None => continue,
            };
            if let Some(key) = keys.first(address.doc_id) {
                hits.push(TextHit { key, score });
            }
        }
        Ok(hits)
    }

    fn lock_writer(&self) -> std::sync::MutexGuard<'_, IndexWriter> {
        self.writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn schema() -> Schema {
    let mut builder = Schema::builder();
    builder.add_u64_field("key", NumericOptions::default().set_indexed().set_fast());
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(TOKENIZER)
        .set_index_option(IndexRecordOption::WithFreqsAndPositions);
    builder.add_text_field(
        "text",
        TextOptions::default().set_indexing_options(indexing),
    );
    builder.build()
}

/// The query's words, each quoted.
fn plain_words(query: &str) -> String {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(|word| format!("\"{word}\""))
        .collect::<Vec<_>>()
        .join(" ")
}

fn text_error(error: impl std::fmt::Display) -> IndexError {
    IndexError::Text(error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> KeyFilter {
        Arc::new(|_| true)
    }

    #[test]
    fn finds_stemmed_words_filters_and_sees_uncommitted_writes() {
        let index = TextIndex::in_memory().unwrap();
        index.add(1, "Ana is running the Lisbon marathon").unwrap();
        index.add(2, "Quarterly revenue grew").unwrap();
        index.add(3, "Lisbon trip in May").unwrap();
        // No explicit commit: the search must see the writes.
        // "runs" reaches "running" only through the stemmer.
        let hits = index.search("runs lisbon", 10, all()).unwrap();
        assert_eq!(hits.first().map(|hit| hit.key), Some(1));
        assert_eq!(hits.len(), 2);
        let filtered = index
            .search("lisbon", 10, Arc::new(|key| key != 1))
            .unwrap();
        assert_eq!(
            filtered.iter().map(|hit| hit.key).collect::<Vec<_>>(),
            vec![3]
        );
        index.remove(3);
        let hits = index.search("lisbon", 10, all()).unwrap();
        assert_eq!(hits.iter().map(|hit| hit.key).collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn a_filter_that_rejects_the_top_documents_still_finds_the_rest() {
        let index = TextIndex::in_memory().unwrap();
        for key in 1..=200u64 {
            // Lower keys repeat the word more, so they rank first.
            let repeats = if key <= 100 { 3 } else { 1 };
            index.add(key, &"alpha ".repeat(repeats)).unwrap();
        }
        let hits = index
            .search("alpha", 5, Arc::new(|key| key == 177 || key == 190))
            .unwrap();
        let mut keys: Vec<u64> = hits.iter().map(|hit| hit.key).collect();
        keys.sort_unstable();
        assert_eq!(keys, vec![177, 190]);
    }

    #[test]
    fn query_syntax_is_read_as_words() {
        let index = TextIndex::in_memory().unwrap();
        index.add(7, "title: hello (world) AND more").unwrap();
        for query in ["title:", "(world", "AND", "\"hello", "-more*", "   ", "::"] {
            let result = index.search(query, 5, all());
            assert!(result.is_ok(), "{query}: {result:?}");
        }
        assert_eq!(index.search("hello)", 5, all()).unwrap()[0].key, 7);
    }

    #[test]
    fn the_commit_payload_survives_reopening() {
        let directory = tempfile::tempdir().unwrap();
        {
            let index = TextIndex::open(directory.path()).unwrap();
            index.add(41, "first").unwrap();
            index.add(42, "second").unwrap();
            index.commit().unwrap();
            assert_eq!(index.committed_key().unwrap(), 42);
            index.add(43, "never committed").unwrap();
        }
        let index = TextIndex::open(directory.path()).unwrap();
        assert_eq!(index.committed_key().unwrap(), 42);
        assert_eq!(index.search("second", 5, all()).unwrap()[0].key, 42);
        assert!(index.search("committed", 5, all()).unwrap().is_empty());
    }
}
