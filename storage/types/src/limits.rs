//! Limits from SPEC.md "Limits", in one place: validation and `GET /v1/memory/admin/me`
//! both read them.

/// Memory text, in characters (not bytes).
pub const MEMORY_TEXT_MAX_CHARS: usize = 10_000;
pub const MEMORY_TEXT_MIN_CHARS: usize = 1;
/// Items in one bulk create.
pub const BULK_MAX_ITEMS: usize = 100;
/// Memory listing page size.
pub const LIST_LIMIT_DEFAULT: usize = 50;
pub const LIST_LIMIT_MAX: usize = 200;
/// Search result count.
pub const SEARCH_LIMIT_DEFAULT: usize = 5;
pub const SEARCH_LIMIT_MAX: usize = 50;
/// Chat proxy: messages per request, and memories injected (0 = no search).
pub const PROXY_MESSAGES_MAX: usize = 200;
pub const PROXY_MEMORY_LIMIT_DEFAULT: usize = 5;
pub const PROXY_MEMORY_LIMIT_MAX: usize = 50;
/// Short free-text fields (category, source, container tag, labels).
pub const SHORT_FIELD_MAX_CHARS: usize = 200;
/// Collection descriptions.
pub const DESCRIPTION_MAX_CHARS: usize = 2_000;
/// Serialized metadata object, in bytes.
pub const METADATA_MAX_BYTES: usize = 16 * 1024;
/// Default importance of a memory created without one.
pub const DEFAULT_IMPORTANCE: f64 = 0.5;

pub const SEARCH_MIN_SCORE_DEFAULT: f64 = 0.3;
pub const RELATED_LIMIT_DEFAULT: usize = 5;
pub const RELATED_MIN_SCORE_DEFAULT: f64 = 0.0;
pub const FORGET_MIN_SCORE_DEFAULT: f64 = 0.5;
pub const FORGET_LIMIT_DEFAULT: usize = 10;
pub const FORGET_LIMIT_MAX: usize = 100;

/// What one remember may carry, in characters (a memory's text limit).
pub const REMEMBER_CONTENT_MAX_CHARS: usize = MEMORY_TEXT_MAX_CHARS;
/// Contradiction pairs returned at most (and by default).
pub const CONTRADICTIONS_LIMIT_MAX: usize = 100;
/// Facts and preferences a profile is built from at most (newest first).
pub const PROFILE_MAX_FACTS: usize = 200;
/// How many times an extraction job is started before it is failed for good.
pub const EXTRACT_JOB_MAX_ATTEMPTS: u32 = 3;

/// Dedup compares this many of the most recent memories.
pub const DEDUP_WINDOW: usize = 500;
/// Cosine similarity at which two memories are duplicates, by default.
pub const DEDUP_THRESHOLD_DEFAULT: f64 = 0.95;
/// Days without an update after which a memory is stale, by default; and the most a
/// window may be.
pub const STALE_DAYS_DEFAULT: u32 = 90;
pub const STALE_DAYS_MAX: u32 = 36_500;
/// Memories a collection summary is based on, by default and at most.
pub const SUMMARY_LIMIT_DEFAULT: usize = 50;
pub const SUMMARY_LIMIT_MAX: usize = 200;

/// The per-file upload limit (SPEC: 10 MB; read as 10 MiB, the more lenient).
pub const FILE_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// Files in one folder upload.
pub const FOLDER_MAX_FILES: usize = 50;
