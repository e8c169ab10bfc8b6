//! Cookieless pageview counts from the public beacon (`POST /v1/pulse`): per day, the
//! path and the referrer's host, nothing about the visitor. Read by the operator
//! analytics; kept in memory (bounded) until that endpoint persists them.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{NaiveDate, Utc};
use serde_json::Value;

/// Distinct (day, path, referrer) rows kept; beyond it new rows are counted as "other".
const MAX_ROWS: usize = 10_000;
const MAX_PATH_CHARS: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageviewKey {
    pub day: NaiveDate,
    pub path: String,
    /// Host of the referrer, or empty.
    pub referrer_host: String,
}

#[derive(Default)]
pub struct Pageviews {
    counts: Mutex<HashMap<PageviewKey, u64>>,
    /// Counted since the last [`Pageviews::save`].
    dirty: std::sync::atomic::AtomicBool,
    /// Where they are saved (none: kept in memory only).
    path: Option<std::path::PathBuf>,
}

/// One saved row (the file is a JSON array of them).
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedRow {
    day: NaiveDate,
    path: String,
    referrer: String,
    n: u64,
}

impl Pageviews {
    /// The counts saved at `path` (none when the file is missing; a damaged file is
    /// logged and set aside as `<path>.damaged`, never fatal).
    pub fn load(path: &std::path::Path) -> Self {
        let pageviews = Self {
            path: Some(path.to_owned()),
            ..Self::default()
        };
        let rows: Vec<SavedRow> = match std::fs::read(path) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(rows) => rows,
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "pageview counts unreadable; starting from zero");
                    let _ = std::fs::rename(path, path.with_extension("json.damaged"));
                    Vec::new()
                }
            },
            Err(_) => Vec::new(),
        };
        {
            let mut counts = pageviews
                .counts
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            for row in rows.into_iter().take(MAX_ROWS) {
                let key = PageviewKey {
                    day: row.day,
                    path: row.path,
                    referrer_host: row.referrer,
                };
                *counts.entry(key).or_insert(0) += row.n;
            }
        }
        pageviews
    }

    /// Writes the counts where they were loaded from (a temporary file renamed over it)
    /// when any were counted since the last save; rows older than [`KEPT_DAYS`] are
    /// dropped.
    pub fn save(&self) -> std::io::Result<()> {
        use std::sync::atomic::Ordering;
        let Some(path) = &self.path else {
            return Ok(());
        };
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let oldest = Utc::now().date_naive() - chrono::Duration::days(KEPT_DAYS);
        let rows: Vec<SavedRow> = self
            .rows()
            .into_iter()
            .filter(|(key, _)| key.day >= oldest)
            .map(|(key, n)| SavedRow {
                day: key.day,
                path: key.path,
                referrer: key.referrer_host,
                n,
            })
            .collect();
        let written = write_atomically(path, &serde_json::to_vec(&rows).unwrap_or_default());
        if written.is_err() {
            self.dirty.store(true, Ordering::Release);
        }
        written
    }
}

/// How long saved pageview counts are kept.
pub const KEPT_DAYS: i64 = 400;

/// Writes `bytes` to `path` through a temporary file beside it, synced, then renamed.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temporary = path.with_extension("tmp");
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)
}

impl Pageviews {
    /// Counts one pageview from a beacon body, whatever it holds: a body that is not the
    /// expected JSON still counts, under the path "unknown".
    pub fn record(&self, body: &[u8]) {
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        let field = |name: &str| {
            parsed
                .as_ref()
                .and_then(|value| value.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let path = field("path")
            .map(|path| clean_path(&path))
            .unwrap_or_else(|| "unknown".to_owned());
        let referrer_host = field("referrer")
            .map(|referrer| host_of(&referrer))
            .unwrap_or_default();
        let mut key = PageviewKey {
            day: Utc::now().date_naive(),
            path,
            referrer_host,
        };
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !counts.contains_key(&key) && counts.len() >= MAX_ROWS {
            key.path = "other".to_owned();
            key.referrer_host = String::new();
        }
        *counts.entry(key).or_insert(0) += 1;
        self.dirty.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Every row with its count, sorted.
    pub fn rows(&self) -> Vec<(PageviewKey, u64)> {
        let counts = self
            .counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut rows: Vec<_> = counts
            .iter()
            .map(|(key, count)| (key.clone(), *count))
            .collect();
        rows.sort();
        rows
    }
}

/// Top paths and referrers listed in a [`PageviewSummary`]; the total counts every row.
pub const SUMMARY_TOP: usize = 50;

/// What [`PageviewSummary::referrers`] calls pageviews without a referrer.
pub const DIRECT_REFERRER: &str = "(direct)";

/// Pageviews over a window of days, for the operator analytics.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PageviewSummary {
    pub total: u64,
    /// Every day of the window, oldest first, zero days included.
    pub by_day: Vec<(NaiveDate, u64)>,
    /// The [`SUMMARY_TOP`] most viewed paths, most viewed first.
    pub by_path: Vec<(String, u64)>,
    /// The [`SUMMARY_TOP`] most frequent referrer hosts ([`DIRECT_REFERRER`] for none),
    /// most frequent first.
    pub by_referrer: Vec<(String, u64)>,
}

impl Pageviews {
    /// The last `days` days (today included, on the clock [`Pageviews::record`] uses).
    pub fn summary(&self, days: u32) -> PageviewSummary {
        self.summary_until(Utc::now().date_naive(), days)
    }

    /// The `days` days up to `today`, included.
    pub fn summary_until(&self, today: NaiveDate, days: u32) -> PageviewSummary {
        let first = today - chrono::Duration::days(i64::from(days.max(1)) - 1);
        let mut by_day: Vec<(NaiveDate, u64)> = first
            .iter_days()
            .take_while(|day| *day <= today)
            .map(|day| (day, 0))
            .collect();
        let mut by_path: HashMap<String, u64> = HashMap::new();
        let mut by_referrer: HashMap<String, u64> = HashMap::new();
        let mut total = 0;
        for (key, count) in self.rows() {
            if key.day < first || key.day > today {
                continue;
            }
            let index = (key.day - first).num_days() as usize;
            if let Some((_, day_count)) = by_day.get_mut(index) {
                *day_count += count;
            }
            total += count;
            *by_path.entry(key.path).or_insert(0) += count;
            let referrer = if key.referrer_host.is_empty() {
                DIRECT_REFERRER.to_owned()
            } else {
                key.referrer_host
            };
            *by_referrer.entry(referrer).or_insert(0) += count;
        }
        PageviewSummary {
            total,
            by_day,
            by_path: top(by_path),
            by_referrer: top(by_referrer),
        }
    }
}

/// Most counted first (ties by name), at most [`SUMMARY_TOP`].
fn top(counts: HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut counts: Vec<(String, u64)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts.truncate(SUMMARY_TOP);
    counts
}

/// The path without query or fragment (they may carry personal data), bounded in length.
fn clean_path(raw: &str) -> String {
    let path = raw.split(['?', '#']).next().unwrap_or_default();
    path.chars().take(MAX_PATH_CHARS).collect()
}

fn host_of(referrer: &str) -> String {
    let without_scheme = referrer
        .split_once("://")
        .map_or(referrer, |(_, rest)| rest);
    let host = without_scheme
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
    host.chars().take(MAX_PATH_CHARS).collect()
}
