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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_path_and_referrer_host_only() {
        let pageviews = Pageviews::default();
        pageviews.record(
            br#"{"path": "/pricing?email=a@b.c", "referrer": "https://user:pw@example.com/x?q=1"}"#,
        );
        pageviews.record(br#"{"path": "/pricing"}"#);
        pageviews.record(b"\x00\xff garbage");
        let rows = pageviews.rows();
        let find = |path: &str, host: &str| {
            rows.iter()
                .find(|(key, _)| key.path == path && key.referrer_host == host)
                .map(|(_, count)| *count)
        };
        assert_eq!(find("/pricing", "example.com"), Some(1));
        assert_eq!(find("/pricing", ""), Some(1));
        assert_eq!(find("unknown", ""), Some(1));
        assert!(rows.iter().all(|(key, _)| !key.path.contains('@')));
    }
}
