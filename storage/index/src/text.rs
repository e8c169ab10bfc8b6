//! The full-text index of one collection: Tantivy BM25 over memory texts.
//!
//! Writes are added to the `IndexWriter` as they happen but committed in batches: a search
//! that finds uncommitted writes commits them first (so every write acknowledged before the
//! search started is visible), and the collection actor commits idle changes on a timer. The
//! commit payload records the highest memory key the index holds, so start-up knows which
//! memories to add after a crash.

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::columnar::Column;
use tantivy::query::{
    BooleanQuery, EmptyQuery, EnableScoring, Occur, Query, QueryParser, TermQuery, Weight,
};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::{
    DocSet, FutureResult, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, SegmentMeta,
    TantivyDocument, Term, TERMINATED,
};

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
    /// The last add, delete or clear (see [`TextIndex::tidy`]).
    written_at: Mutex<Instant>,
    /// The merge [`TextIndex::tidy`] started, until a later call sees it end.
    merging: Mutex<Option<FutureResult<Option<SegmentMeta>>>>,
}

/// How long an index goes without writes before its segments are merged into one.
const MERGE_QUIET: Duration = Duration::from_secs(10);
/// A largest segment with this share of the documents is merged enough.
const MERGED_SHARE: f64 = 0.8;

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
            written_at: Mutex::new(Instant::now()),
            merging: Mutex::new(None),
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
        self.touched();
        Ok(())
    }

    pub fn remove(&self, key: u64) {
        let writer = self.lock_writer();
        writer.delete_term(Term::from_field_u64(self.key, key));
        self.dirty.store(true, Ordering::SeqCst);
        self.touched();
    }

    /// Removes every document (before a rebuild).
    pub fn clear(&self) -> Result<(), IndexError> {
        let writer = self.lock_writer();
        writer.delete_all_documents().map_err(text_error)?;
        self.highest_key.store(0, Ordering::SeqCst);
        self.dirty.store(true, Ordering::SeqCst);
        self.touched();
        Ok(())
    }

    /// Merges every committed segment into one and waits for it; returns how many
    /// segments there were (the `text_scale` example measures both shapes; the service
    /// merges in the background through [`TextIndex::tidy`]).
    pub fn merge_segments(&self) -> Result<usize, IndexError> {
        let ids = self.index.searchable_segment_ids().map_err(text_error)?;
        if ids.len() > 1 {
            let merging = self.lock_writer().merge(&ids);
            merging.wait().map_err(text_error)?;
            self.reader.reload().map_err(text_error)?;
        }
        Ok(ids.len())
    }

    /// Whether [`TextIndex::tidy`] has work: a merge to finish, or one to start because
    /// the index has been quiet for [`MERGE_QUIET`] and is split over segments.
    pub fn wants_tidy(&self) -> bool {
        self.wants_tidy_after(MERGE_QUIET)
    }

    fn wants_tidy_after(&self, quiet: Duration) -> bool {
        self.lock_merging().is_some() || (self.is_quiet(quiet) && self.is_split())
    }

    /// Background upkeep of the segments. A search reads every segment on its own (its
    /// own top documents, its own block-max thresholds), so one large segment answers
    /// much faster than many: at a million memories the 15 segments Tantivy's merge
    /// policy had left took text top-20 from 2.7 ms to 6.0 ms at p95. Once the index has
    /// been quiet for [`MERGE_QUIET`] and its largest segment holds less than
    /// [`MERGED_SHARE`] of its documents, every segment is merged into one on Tantivy's
    /// merge thread; a later call sees the merge finished and shows it to searches.
    /// A merge costs about two seconds of one core at a million memories; the share rule
    /// bounds how often the whole index is rewritten (at most once per fifth grown).
    pub fn tidy(&self) -> Result<(), IndexError> {
        self.tidy_after(MERGE_QUIET)
    }

    fn tidy_after(&self, quiet: Duration) -> Result<(), IndexError> {
        let mut merging = self.lock_merging();
        if let Some(pending) = merging.as_mut() {
            let waker = std::task::Waker::noop();
            let mut context = std::task::Context::from_waker(waker);
            match std::pin::Pin::new(pending).poll(&mut context) {
                std::task::Poll::Pending => return Ok(()),
                std::task::Poll::Ready(outcome) => {
                    *merging = None;
                    if let Err(error) = outcome {
                        // Another merge took some of the segments, or the writer is
                        // closing: the next quiet spell tries again.
                        tracing::debug!(%error, "text segments were not merged");
                        return Ok(());
                    }
                    return self.reader.reload().map_err(text_error);
                }
            }
        }
        if !(self.is_quiet(quiet) && self.is_split()) {
            return Ok(());
        }
        let ids = self.index.searchable_segment_ids().map_err(text_error)?;
        if ids.len() > 1 {
            *merging = Some(self.lock_writer().merge(&ids));
        }
        Ok(())
    }

    fn is_quiet(&self, quiet: Duration) -> bool {
        !self.is_dirty() && self.lock_written_at().elapsed() >= quiet
    }

    /// Whether no segment holds [`MERGED_SHARE`] of the live documents.
    fn is_split(&self) -> bool {
        let searcher = self.reader.searcher();
        let readers = searcher.segment_readers();
        if readers.len() < 2 {
            return false;
        }
        let (total, largest) = readers
            .iter()
            .fold((0u64, 0u64), |(total, largest), reader| {
                let documents = u64::from(reader.num_docs());
                (total + documents, largest.max(documents))
            });
        (largest as f64) < total as f64 * MERGED_SHARE
    }

    fn touched(&self) {
        *self.lock_written_at() = Instant::now();
    }

    fn lock_written_at(&self) -> std::sync::MutexGuard<'_, Instant> {
        self.written_at
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_merging(&self) -> std::sync::MutexGuard<'_, Option<FutureResult<Option<SegmentMeta>>>> {
        self.merging
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
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
    ///
    /// A query with stop words ("the", "of", …; [`STOP_WORDS`]) and other words finds its
    /// candidates by the other words alone, then ranks them by the whole query: the stop
    /// words' postings (most of the collection's documents) were most of what a query
    /// read, yet they still count in the scores. Only a document that matches nothing but
    /// stop words is left out.
    pub fn search(
        &self,
        query: &str,
        count: usize,
        filter: KeyFilter,
    ) -> Result<Vec<TextHit>, IndexError> {
        self.search_above(query, count, filter, None)
    }

    /// [`Self::search`], skipping what cannot reach `floor`: a score that another thread
    /// may set while this search runs ([`Self::floor`] of documents it already knows), so
    /// that block-max WAND prunes from there on. The answer is the same as without it.
    pub fn search_above(
        &self,
        query: &str,
        count: usize,
        filter: KeyFilter,
        floor: Option<&ScoreFloor>,
    ) -> Result<Vec<TextHit>, IndexError> {
        if count == 0 {
            return Ok(Vec::new());
        }
        let Some(words) = Words::of(query) else {
            return Ok(Vec::new());
        };
        if self.is_dirty() {
            self.commit()?;
        }
        let searcher = self.reader.searcher();
        let (parsed, depth) = self.candidate_query(&searcher, &words, count);
        let candidates = self.top(&searcher, parsed.as_ref(), depth, filter, floor)?;
        if words.content.is_none() {
            return Ok(candidates);
        }
        // The candidates by content words, more than asked so that the stop words'
        // share of the score can reorder them, ranked by the whole query.
        let keys: Vec<u64> = candidates.iter().map(|hit| hit.key).collect();
        let all = self.parse_present(&searcher, &words.all);
        let mut hits = self.score_keys(&searcher, all.as_ref(), &keys)?;
        let rank: HashMap<u64, usize> = keys
            .iter()
            .enumerate()
            .map(|(at, key)| (*key, at))
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| rank[&a.key].cmp(&rank[&b.key]))
        });
        hits.truncate(count);
        Ok(hits)
    }

    /// The query a search for `count` results finds its candidates by, and how many it
    /// asks [`Self::top`] for: the content words with a margin when the query has stop
    /// words too, else every word.
    fn candidate_query(
        &self,
        searcher: &Searcher,
        words: &Words,
        count: usize,
    ) -> (Box<dyn Query>, usize) {
        match &words.content {
            Some(content) => (self.parse_present(searcher, content), with_margin(count)),
            None => (self.parse_present(searcher, &words.all), count),
        }
    }

    /// How many documents [`Self::floor`] needs to give a floor for a search of `count`
    /// results, whatever the query: as many as the search reads when it has stop words.
    pub fn floor_keys(count: usize) -> usize {
        fetched(with_margin(count))
    }

    /// A floor for [`Self::search_above`] with the same `query` and `count`: a score that
    /// enough of `keys` reach by the words the search finds its candidates by that the
    /// search's candidates all score at least that much; `None` when too few of them match.
    pub fn floor(
        &self,
        query: &str,
        count: usize,
        keys: &[u64],
    ) -> Result<Option<f32>, IndexError> {
        let Some(words) = Words::of(query) else {
            return Ok(None);
        };
        if count == 0 || keys.is_empty() {
            return Ok(None);
        }
        if self.is_dirty() {
            self.commit()?;
        }
        let searcher = self.reader.searcher();
        let (parsed, depth) = self.candidate_query(&searcher, &words, count);
        let fetch = fetched(depth);
        if keys.len() < fetch {
            return Ok(None);
        }
        let mut scores: Vec<f32> = self
            .score_keys(&searcher, parsed.as_ref(), keys)?
            .into_iter()
            .map(|hit| hit.score)
            .collect();
        if scores.len() < fetch {
            return Ok(None);
        }
        scores.sort_by(|a, b| b.total_cmp(a));
        // Scored term by term here and by the query's union scorer in the search, the sum
        // may differ in its last bits: the floor is kept a little below.
        Ok(Some(scores[fetch - 1] * (1.0 - 1e-4)))
    }

    /// The `count` best matches of a parsed query whose key passes `filter`.
    fn top(
        &self,
        searcher: &Searcher,
        parsed: &dyn Query,
        count: usize,
        filter: KeyFilter,
        floor: Option<&ScoreFloor>,
    ) -> Result<Vec<TextHit>, IndexError> {
        // Fast path: the plain top documents (block-max WAND skips most of the postings),
        // with a small margin for ineligible ones. It is exact when enough of them pass
        // the filter, or when it returned everything that matches. The margin is small
        // because block-max WAND's cost grows with the depth (the k-th score is its
        // threshold): most searches have no ineligible hit at all, and a filter that
        // rejects many top documents needs the exact path below anyway. A margin of
        // `count + 8` instead of `2 * count + 16` took text top-20 at a million memories
        // from 2.7 to 2.2 ms at p95.
        let fetch = fetched(count);
        let mut top = top_documents(searcher, parsed, fetch, floor)?;
        if top.len() < fetch && floor.is_some_and(ScoreFloor::is_set) {
            // The floor was of documents this searcher does not hold (deleted since):
            // short of them, the list cannot say that nothing else matches.
            top = top_documents(searcher, parsed, fetch, None)?;
        }
        let exhausted = top.len() < fetch;
        let mut hits = self.keys_of(searcher, top)?;
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
        let top = searcher.search(parsed, &collector).map_err(text_error)?;
        self.keys_of(searcher, top)
    }

    /// The BM25 score of `query` for each of `keys` that matches it (others are left out),
    /// scored exactly as [`TextIndex::search`] ranks them: hybrid search gives every vector
    /// candidate its BM25 this way instead of reading the text list deep enough to meet it.
    pub fn score(&self, query: &str, keys: &[u64]) -> Result<Vec<TextHit>, IndexError> {
        let Some(words) = Words::of(query) else {
            return Ok(Vec::new());
        };
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        if self.is_dirty() {
            self.commit()?;
        }
        let searcher = self.reader.searcher();
        let parsed = self.parse_present(&searcher, &words.all);
        self.score_keys(&searcher, parsed.as_ref(), keys)
    }

    /// Any input is a query: each word is quoted so none is read as query syntax, and the
    /// words are ORed (BM25 ranks documents with more and rarer matches first).
    fn parse(&self, words: &str) -> Box<dyn Query> {
        let parser = QueryParser::for_index(&self.index, vec![self.text]);
        parser.parse_query_lenient(words).0
    }

    /// [`Self::parse`] without the words no document holds. They add nothing to any
    /// score, but a term without postings has no block maxima, and Tantivy then reads the
    /// whole query as a plain union instead of by block-max WAND: at a million memories a
    /// query with one unknown word (a typo, a number) read every posting of its other
    /// words, the slowest tenth of text searches.
    fn parse_present(&self, searcher: &Searcher, words: &str) -> Box<dyn Query> {
        let parsed = self.parse(words);
        let Some(boolean) = parsed.downcast_ref::<BooleanQuery>() else {
            return parsed;
        };
        let present = |clause: &dyn Query| {
            clause.downcast_ref::<TermQuery>().is_none_or(|term| {
                searcher
                    .doc_freq(term.term())
                    .map_or(true, |count| count > 0)
            })
        };
        let clauses: Vec<(Occur, Box<dyn Query>)> = boolean
            .clauses()
            .iter()
            .filter(|(occur, clause)| *occur != Occur::Should || present(clause.as_ref()))
            .map(|(occur, clause)| (*occur, clause.box_clone()))
            .collect();
        if clauses.len() == boolean.clauses().len() {
            return parsed;
        }
        Box::new(BooleanQuery::new(clauses))
    }

    fn score_keys(
        &self,
        searcher: &Searcher,
        parsed: &dyn Query,
        keys: &[u64],
    ) -> Result<Vec<TextHit>, IndexError> {
        let scoring = EnableScoring::enabled_from_searcher(searcher);
        // A query of words is a sum of term scores. Each term's postings are sought on
        // their own: seeking the whole query's union scorer refilled a window of every
        // term's postings per key, stop words' included (a quarter of a text search's
        // time at a million memories).
        let weights: Vec<Box<dyn Weight>> = match term_clauses(parsed) {
            Some(terms) => terms
                .into_iter()
                .map(|term| {
                    TermQuery::new(term, IndexRecordOption::WithFreqs)
                        .weight(scoring)
                        .map_err(text_error)
                })
                .collect::<Result<_, _>>()?,
            None => vec![parsed.weight(scoring).map_err(text_error)?],
        };
        let mut hits = Vec::new();
        for reader in searcher.segment_readers() {
            // The keys' documents in this segment, in document order (a scorer only seeks
            // forward).
            let postings = reader.inverted_index(self.key).map_err(text_error)?;
            let mut documents = Vec::new();
            for &key in keys {
                let term = Term::from_field_u64(self.key, key);
                let Some(mut found) = postings
                    .read_postings(&term, IndexRecordOption::Basic)
                    .map_err(text_error)?
                else {
                    continue;
                };
                while found.doc() != TERMINATED {
                    if reader
                        .alive_bitset()
                        .is_none_or(|alive| alive.is_alive(found.doc()))
                    {
                        documents.push((found.doc(), key));
                    }
                    found.advance();
                }
            }
            if documents.is_empty() {
                continue;
            }
            documents.sort_unstable();
            let mut scores: Vec<Option<f32>> = vec![None; documents.len()];
            for weight in &weights {
                let mut scorer = weight.scorer(reader, 1.0).map_err(text_error)?;
                for ((document, _), score) in documents.iter().zip(scores.iter_mut()) {
                    if scorer.doc() == TERMINATED {
                        break;
                    }
                    if scorer.doc() < *document && scorer.seek(*document) != *document {
                        continue;
                    }
                    if scorer.doc() == *document {
                        *score.get_or_insert(0.0) += scorer.score();
                    }
                }
            }
            hits.extend(
                documents
                    .iter()
                    .zip(scores)
                    .filter_map(|((_, key), score)| {
                        score.map(|score| TextHit { key: *key, score })
                    }),
            );
        }
        Ok(hits)
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

/// The terms of a query that is a sum of term scores (one term, or terms ORed), in
/// clause order; `None` for any other shape.
fn term_clauses(parsed: &dyn Query) -> Option<Vec<Term>> {
    if let Some(term) = parsed.downcast_ref::<TermQuery>() {
        return Some(vec![term.term().clone()]);
    }
    if parsed.downcast_ref::<EmptyQuery>().is_some() {
        return Some(Vec::new());
    }
    let boolean = parsed.downcast_ref::<BooleanQuery>()?;
    boolean
        .clauses()
        .iter()
        .map(|(occur, clause)| match occur {
            Occur::Should => clause
                .downcast_ref::<TermQuery>()
                .map(|term| term.term().clone()),
            Occur::Must | Occur::MustNot => None,
        })
        .collect()
}

/// Words a query does not look for candidates by when it has others (they still count in
/// the ranking): they occur in most memories, so their postings are most of what a query
/// would read (at a million memories a query of six words took 3.4 times longer at p95
/// with them). Lucene's English list without "no" and "not".
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this",
    "to", "was", "will", "with",
];

/// A query's words, each quoted.
struct Words {
    all: String,
    /// The words that are not stop words, when the query has both kinds.
    content: Option<String>,
}

impl Words {
    /// `None` for a query without a word.
    fn of(query: &str) -> Option<Self> {
        fn quoted<'a>(words: impl Iterator<Item = &'a str>) -> String {
            words
                .map(|word| format!("\"{word}\""))
                .collect::<Vec<_>>()
                .join(" ")
        }
        let words: Vec<&str> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .collect();
        if words.is_empty() {
            return None;
        }
        let is_stop = |word: &str| {
            STOP_WORDS
                .iter()
                .any(|stop| stop.eq_ignore_ascii_case(word))
        };
        let stops = words.iter().filter(|word| is_stop(word)).count();
        let content = (stops > 0 && stops < words.len())
            .then(|| quoted(words.iter().copied().filter(|word| !is_stop(word))));
        Some(Self {
            all: quoted(words.iter().copied()),
            content,
        })
    }
}

/// The `count` best-scoring documents of `parsed`, best first (ties: the earlier
/// document), as Tantivy's `TopDocs` finds them but with an exact threshold.
///
/// Block-max WAND skips every block whose best possible score is not above the current
/// threshold, so its cost falls as soon as the threshold rises. `TopDocs` raises it only
/// each time its buffer of `2 × count` fills (to that buffer's median), so early in the
/// postings it lags far below the `count`th best score seen; this heap raises it with every
/// document that enters once `count` are held.
///
/// With a `floor`, the threshold is at least the floor's score as soon as it is set (a
/// document scoring exactly that is still taken).
fn top_documents(
    searcher: &Searcher,
    parsed: &dyn Query,
    count: usize,
    floor: Option<&ScoreFloor>,
) -> Result<Vec<(f32, tantivy::DocAddress)>, IndexError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let weight = parsed
        .weight(EnableScoring::enabled_from_searcher(searcher))
        .map_err(text_error)?;
    let mut heap: std::collections::BinaryHeap<Ranked> =
        std::collections::BinaryHeap::with_capacity(count + 1);
    // The heap's threshold, or the floor when that is higher.
    let raised = |threshold: f32| floor.map_or(threshold, |floor| floor.below().max(threshold));
    let mut threshold = f32::MIN;
    for (ordinal, reader) in searcher.segment_readers().iter().enumerate() {
        let segment = ordinal as u32;
        let alive = reader.alive_bitset();
        weight
            .for_each_pruning(raised(threshold), reader, &mut |doc, score| {
                if alive.is_some_and(|alive| alive.is_deleted(doc)) {
                    return raised(threshold);
                }
                heap.push(Ranked {
                    score,
                    address: tantivy::DocAddress::new(segment, doc),
                });
                if heap.len() > count {
                    heap.pop();
                }
                if heap.len() == count {
                    threshold = heap.peek().map_or(threshold, |worst| worst.score);
                }
                raised(threshold)
            })
            .map_err(text_error)?;
    }
    let mut ranked = heap.into_vec();
    ranked.sort();
    Ok(ranked
        .into_iter()
        .map(|ranked| (ranked.score, ranked.address))
        .collect())
}

/// How many candidates a query with stop words is read for, for `count` results: a margin
/// of half the count for the documents the stop words lift from further down (rare; and
/// block-max WAND's cost grows with the depth: at a million memories, reading 64 instead
/// of 46 for a hybrid's 20 made its text side half again as slow).
fn with_margin(count: usize) -> usize {
    count + count / 2 + 8
}

/// How many documents [`TextIndex::top`] reads for `count` results: a small margin for
/// ineligible ones (see there).
fn fetched(count: usize) -> usize {
    count + 8
}

/// A BM25 score that a search's candidates are known to reach, set by another thread
/// while the search runs ([`TextIndex::floor`], [`TextIndex::search_above`]). Hybrid search
/// scores its vector candidates' words on one thread while the text list is read on the
/// other: when enough of them match well (a query whose answer is in many memories), the
/// text search skips everything below them instead of finding that out itself.
#[derive(Debug, Default)]
pub struct ScoreFloor(AtomicU32);

impl ScoreFloor {
    /// Raises the floor to `score` (BM25 scores are not negative; a lower one is ignored).
    pub fn raise(&self, score: f32) {
        if score > 0.0 {
            self.0.fetch_max(score.to_bits(), Ordering::Relaxed);
        }
    }

    fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed) != 0
    }

    /// The threshold that still takes a document scoring exactly the floor (WAND takes
    /// only scores above its threshold); `f32::MIN` while unset.
    fn below(&self) -> f32 {
        match self.0.load(Ordering::Relaxed) {
            0 => f32::MIN,
            bits => f32::from_bits(bits).next_down(),
        }
    }
}

/// A document in [`top_documents`]' heap, ordered worst last: a lower score, or the same
/// score and a later document, is greater (so the heap's top is the one to drop).
struct Ranked {
    score: f32,
    address: tantivy::DocAddress,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| self.address.cmp(&other.address))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Ranked {}

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
    fn a_quiet_index_split_over_segments_is_merged_into_one_and_answers_the_same() {
        let directory = tempfile::tempdir().unwrap();
        let index = TextIndex::open(directory.path()).unwrap();
        // Three commits of about the same size: three segments, none with 80%.
        for key in 1..=30u64 {
            let topic = ["harbour", "garden", "river"][key as usize % 3];
            index
                .add(key, &format!("note {key} about the {topic}"))
                .unwrap();
            if key % 10 == 0 {
                index.commit().unwrap();
            }
        }
        index.remove(6);
        index.commit().unwrap();
        let segments = || index.reader.searcher().segment_readers().len();
        assert_eq!(segments(), 3);
        let before = index.search("the harbour", 20, all()).unwrap();
        // Not quiet long enough: nothing starts.
        assert!(!index.wants_tidy_after(Duration::from_secs(3600)));
        index.tidy_after(Duration::from_secs(3600)).unwrap();
        assert!(index.lock_merging().is_none());
        assert!(index.wants_tidy_after(Duration::ZERO));
        let deadline = Instant::now() + Duration::from_secs(30);
        while index.wants_tidy_after(Duration::ZERO) {
            assert!(Instant::now() < deadline, "the merge did not finish");
            index.tidy_after(Duration::ZERO).unwrap();
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(segments(), 1);
        let after = index.search("the harbour", 20, all()).unwrap();
        let keys = |hits: &[TextHit]| {
            let mut keys: Vec<u64> = hits.iter().map(|hit| hit.key).collect();
            keys.sort_unstable();
            keys
        };
        assert_eq!(keys(&after), keys(&before));
        assert!(!keys(&after).contains(&6));
        assert_eq!(after.len(), 9);
        // The commit payload (the highest key) survives the merge.
        assert_eq!(index.committed_key().unwrap(), 30);
        // One segment is merged enough; a write makes it not quiet.
        assert!(!index.wants_tidy_after(Duration::ZERO));
        index.add(31, "one more harbour").unwrap();
        assert!(!index.wants_tidy_after(Duration::ZERO));
    }

    /// Two segments of texts drawn from a few words (long postings, many equal scores),
    /// with some memories deleted.
    fn crowded_index() -> TextIndex {
        let index = TextIndex::in_memory().unwrap();
        let words = [
            "harbour", "lisbon", "river", "garden", "the", "of", "ship", "night", "market",
        ];
        let mut state = 7_u64;
        for key in 1..=3_000u64 {
            let mut text = Vec::new();
            for _ in 0..(3 + key % 5) {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push(words[(state >> 33) as usize % words.len()]);
            }
            index.add(key, &text.join(" ")).unwrap();
            if key == 1_700 {
                index.commit().unwrap();
            }
        }
        for key in (5..3_000).step_by(97) {
            index.remove(key);
        }
        index.commit().unwrap();
        assert_eq!(index.reader.searcher().segment_readers().len(), 2);
        index
    }

    #[test]
    fn the_exact_threshold_finds_what_top_docs_finds() {
        let index = crowded_index();
        let searcher = index.reader.searcher();
        for query in [
            "harbour",
            "harbour lisbon",
            "ship night market river",
            "the of garden",
        ] {
            let parsed = index.parse(&Words::of(query).unwrap().all);
            for count in [1, 10, 46, 200] {
                let theirs = searcher
                    .search(parsed.as_ref(), &TopDocs::with_limit(count))
                    .unwrap();
                let ours = top_documents(&searcher, parsed.as_ref(), count, None).unwrap();
                // Block-max WAND sums a document's term scores in an order that depends on
                // its threshold, so a score may differ in its last bit, and two documents
                // that close may swap places.
                let close = |a: f32, b: f32| (a - b).abs() <= 1e-5 * a.abs().max(1.0);
                assert_eq!(ours.len(), theirs.len(), "{query} top {count}");
                for ((mine, _), (its, _)) in ours.iter().zip(&theirs) {
                    assert!(
                        close(*mine, *its),
                        "{query} top {count}: {mine} against {its}"
                    );
                }
                let last = theirs.last().map_or(0.0, |(score, _)| *score);
                for (score, address) in &theirs {
                    if !close(*score, last) {
                        assert!(
                            ours.iter().any(|(_, ours)| ours == address),
                            "{query} top {count}: {address:?} missing"
                        );
                    }
                }
            }
        }
    }

    /// A floor from documents the search would find anyway, or from more documents than
    /// it reads, or one too high (documents deleted since it was taken), answers the same.
    #[test]
    fn a_floor_changes_no_answer() {
        let index = crowded_index();
        for query in ["harbour lisbon", "the ship of the night", "market"] {
            for count in [5, 20] {
                let plain = index.search(query, count, all()).unwrap();
                let keys: Vec<u64> = (1..=3_000).collect();
                let floor = ScoreFloor::default();
                let score = index.floor(query, count, &keys).unwrap().unwrap();
                floor.raise(score);
                let floored = index
                    .search_above(query, count, all(), Some(&floor))
                    .unwrap();
                assert_eq!(floored, plain, "{query} top {count}");
                // Too few keys for a floor.
                assert_eq!(index.floor(query, count, &keys[..count]).unwrap(), None);
                let wrong = ScoreFloor::default();
                wrong.raise(1_000.0);
                let above = index
                    .search_above(query, count, all(), Some(&wrong))
                    .unwrap();
                assert_eq!(above, plain, "{query} top {count}, floor too high");
            }
        }
        // A floor only rises.
        let floor = ScoreFloor::default();
        assert_eq!(floor.below(), f32::MIN);
        floor.raise(2.0);
        floor.raise(1.0);
        floor.raise(-3.0);
        assert_eq!(floor.below(), 2.0_f32.next_down());
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
    fn stop_words_rank_but_do_not_find() {
        let index = TextIndex::in_memory().unwrap();
        index.add(1, "The cat sat on the mat").unwrap();
        index.add(2, "Harbour of Lisbon").unwrap();
        index.add(3, "Not the right room").unwrap();
        let keys = |query: &str| {
            let mut keys: Vec<u64> = index
                .search(query, 10, all())
                .unwrap()
                .iter()
                .map(|hit| hit.key)
                .collect();
            keys.sort_unstable();
            keys
        };
        assert_eq!(keys("the Lisbon harbour"), vec![2]);
        assert_eq!(keys("THE OF"), vec![1, 2, 3]);
        // "not" is kept: a memory's sense can turn on it.
        assert_eq!(keys("not the cat"), vec![1, 3]);
        // Among the documents the other words find, the stop words still rank.
        index.add(4, "Harbour in Lisbon").unwrap();
        let ranked: Vec<u64> = index
            .search("harbour of Lisbon", 10, all())
            .unwrap()
            .iter()
            .map(|hit| hit.key)
            .collect();
        assert_eq!(ranked, vec![2, 4]);
        let ranked: Vec<u64> = index
            .search("harbour in Lisbon", 10, all())
            .unwrap()
            .iter()
            .map(|hit| hit.key)
            .collect();
        assert_eq!(ranked, vec![4, 2]);
        // And the filter holds.
        let filtered = index
            .search("harbour of Lisbon", 10, Arc::new(|key| key != 2))
            .unwrap();
        assert_eq!(
            filtered.iter().map(|hit| hit.key).collect::<Vec<_>>(),
            vec![4]
        );
    }

    #[test]
    fn scores_given_keys_as_the_ranking_does() {
        let index = TextIndex::in_memory().unwrap();
        index.add(1, "Lisbon harbour at dawn").unwrap();
        index.add(2, "A harbour in Porto").unwrap();
        index.commit().unwrap();
        // A second segment, a deleted key and one that does not match.
        index.add(3, "Lisbon, Lisbon and its harbour").unwrap();
        index.add(4, "Quarterly revenue grew").unwrap();
        index.add(5, "Lisbon again").unwrap();
        index.remove(5);
        // Without stop words: the ranking's scores are Tantivy's top-documents search.
        let query = "Lisbon harbour";
        let ranked = index.search(query, 10, all()).unwrap();
        assert_eq!(ranked.len(), 3);
        let mut scored = index.score(query, &[4, 3, 5, 1, 99, 2]).unwrap();
        scored.sort_by(|a, b| b.score.total_cmp(&a.score));
        assert_eq!(scored, ranked);
        assert!(index.score(query, &[]).unwrap().is_empty());
        assert!(index.score("", &[1]).unwrap().is_empty());
        // Scored term by term, not through the fallback of the query's own scorer.
        let words = Words::of("the Lisbon harbour running").unwrap();
        let terms = term_clauses(index.parse(&words.all).as_ref()).unwrap();
        let texts: Vec<String> = terms
            .iter()
            .filter_map(|term| term.value().as_str().map(str::to_owned))
            .collect();
        assert_eq!(texts, ["the", "lisbon", "harbour", "run"]);
        let one = Words::of("Lisbon").unwrap();
        assert_eq!(
            term_clauses(index.parse(&one.all).as_ref()).unwrap().len(),
            1
        );
    }

    /// A word no memory holds changes no score, so leaving it out of the query (which
    /// keeps block-max WAND) answers exactly as the query with it.
    #[test]
    fn a_word_no_memory_holds_changes_nothing() {
        let index = TextIndex::in_memory().unwrap();
        index.add(1, "Lisbon harbour at dawn").unwrap();
        index.add(2, "A harbour in Porto").unwrap();
        index.add(3, "Lisbon, Lisbon and its harbour").unwrap();
        index.commit().unwrap();
        let known = index.search("Lisbon harbour", 10, all()).unwrap();
        assert_eq!(known.len(), 3);
        for query in ["Lisbon harbour zqxv 8812", "the Lisbon harbour zqxv"] {
            let searcher = index.reader.searcher();
            let words = Words::of(query).unwrap();
            let pruned = index.parse_present(&searcher, &words.all);
            let left = term_clauses(pruned.as_ref()).unwrap();
            assert!(left
                .iter()
                .all(|term| term.value().as_str() != Some("zqxv")));
            let known_words = query.replace(" zqxv", "").replace(" 8812", "");
            let with_unknown = index.search(query, 10, all()).unwrap();
            let without = index.search(&known_words, 10, all()).unwrap();
            assert_eq!(with_unknown, without, "{query}");
            assert_eq!(
                index.score(query, &[1, 2, 3]).unwrap(),
                index.score(&known_words, &[1, 2, 3]).unwrap()
            );
        }
        // Only unknown words: nothing matches, as before.
        assert!(index.search("zqxv 8812", 10, all()).unwrap().is_empty());
        assert!(index.search("the zqxv", 10, all()).unwrap().is_empty());
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
