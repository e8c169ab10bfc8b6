//! The process's request and stage metrics, read by the operator metrics endpoint.
//!
//! - Per route (the matched route template with its method, never the raw path): count,
//!   4xx and 5xx counts, and latency (sum for the average; p50 and p95 from a ring of the
//!   latest [`RESERVOIR_SAMPLES`] samples).
//! - Per [`Stage`] of a request (embedding, cache lookup, index search, LLM extraction):
//!   the same latency figures.
//! - [`Counter`]s: cache hits and misses, texts embedded, failed extractions.
//!
//! Everything counts since the window's start ([`MetricsSnapshot::since`]);
//! [`Metrics::snapshot_and_reset`] reads the window and starts a new one. Recording takes a
//! read lock on the route table and one short per-entry mutex, and allocates only the
//! first time a route is seen; percentiles are computed on read.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};

/// Latency samples kept per route or stage for its percentiles (the latest ones).
pub const RESERVOIR_SAMPLES: usize = 2048;

/// Distinct routes tracked; routes are templates, so a server has about a hundred. Beyond
/// the bound a request is recorded under [`OVERFLOW_ROUTE`].
pub const MAX_ROUTES: usize = 256;

/// Where requests that matched no route are recorded (the raw path is never a key: it
/// would let any client grow the table).
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// Where requests of routes beyond [`MAX_ROUTES`] are recorded.
pub const OVERFLOW_ROUTE: &str = "other";

/// A timed part of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The embedding thread computing vectors for a request's texts (queueing included).
    Embed,
    /// The search result-cache lookup.
    CacheGet,
    /// The index search of a search request (off the async threads).
    Search,
    /// The LLM call that extracts facts for remember.
    LlmExtract,
}

impl Stage {
    pub const ALL: [Stage; 4] = [
        Stage::Embed,
        Stage::CacheGet,
        Stage::Search,
        Stage::LlmExtract,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Embed => "embed",
            Self::CacheGet => "cache_get",
            Self::Search => "search",
            Self::LlmExtract => "llm_extract",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// An event counted, not timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// A search answered from the result cache.
    SearchCacheHit,
    /// A search that had to run.
    SearchCacheMiss,
    /// A search query whose embedding was cached.
    QueryEmbeddingCacheHit,
    /// A search query that had to be embedded.
    QueryEmbeddingCacheMiss,
    /// Texts sent to the embedding thread.
    EmbedTexts,
    /// LLM extractions that failed (after the extractor's own retry).
    LlmExtractFailed,
}

impl Counter {
    pub const ALL: [Counter; 6] = [
        Counter::SearchCacheHit,
        Counter::SearchCacheMiss,
        Counter::QueryEmbeddingCacheHit,
        Counter::QueryEmbeddingCacheMiss,
        Counter::EmbedTexts,
        Counter::LlmExtractFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::SearchCacheHit => "search_cache_hit",
            Self::SearchCacheMiss => "search_cache_miss",
            Self::QueryEmbeddingCacheHit => "query_embedding_cache_hit",
            Self::QueryEmbeddingCacheMiss => "query_embedding_cache_miss",
            Self::EmbedTexts => "embed_texts",
            Self::LlmExtractFailed => "llm_extract_failed",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Count, average and percentiles of one route's or stage's latencies, in milliseconds.
/// The percentiles cover the latest [`RESERVOIR_SAMPLES`] samples; count and average the
/// whole window.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LatencySummary {
    pub count: u64,
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

/// One route's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteMetrics {
    /// `METHOD /template`, [`UNMATCHED_ROUTE`] or [`OVERFLOW_ROUTE`].
    pub route: String,
    pub errors_4xx: u64,
    pub errors_5xx: u64,
    pub latency: LatencySummary,
}

/// Every figure of the window, read at once.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsSnapshot {
    /// When the window started: the process start or the last reset.
    pub since: DateTime<Utc>,
    /// Routes requested in the window, most requested first.
    pub routes: Vec<RouteMetrics>,
    /// One per [`Stage`], in [`Stage::ALL`] order.
    pub stages: Vec<(Stage, LatencySummary)>,
    /// One per [`Counter`], in [`Counter::ALL`] order.
    pub counters: Vec<(Counter, u64)>,
}

impl MetricsSnapshot {
    pub fn stage(&self, stage: Stage) -> LatencySummary {
        self.stages
            .iter()
            .find(|(candidate, _)| *candidate == stage)
            .map(|(_, summary)| *summary)
            .unwrap_or_default()
    }

    pub fn counter(&self, counter: Counter) -> u64 {
        self.counters
            .iter()
            .find(|(candidate, _)| *candidate == counter)
            .map_or(0, |(_, value)| *value)
    }
}

/// The process-wide registry; the service owns one (`memvault_core::Operator::metrics`).
pub struct Metrics {
    /// Start of the current window.
    since: Mutex<DateTime<Utc>>,
    /// Route template → the entries of its methods (a template has a handful), so a
    /// lookup borrows the request's strings instead of building a key.
    routes: RwLock<RouteTable>,
    /// Requests that matched no route.
    unmatched: Mutex<LatencyWindow>,
    /// Requests of routes seen after the table was full.
    overflow: Mutex<LatencyWindow>,
    /// Indexed by [`Stage::index`].
    stages: [Mutex<LatencyWindow>; Stage::ALL.len()],
    /// Indexed by [`Counter::index`].
    counters: [AtomicU64; Counter::ALL.len()],
}

/// One route template's entries: a method and its window each.
type MethodWindows = Vec<(Box<str>, Mutex<LatencyWindow>)>;

#[derive(Default)]
struct RouteTable {
    by_template: HashMap<Box<str>, MethodWindows>,
    /// Entries over every template, checked against [`MAX_ROUTES`].
    entries: usize,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        Self {
            since: Mutex::new(Utc::now()),
            routes: RwLock::new(RouteTable::default()),
            unmatched: Mutex::new(LatencyWindow::new()),
            overflow: Mutex::new(LatencyWindow::new()),
            stages: std::array::from_fn(|_| Mutex::new(LatencyWindow::new())),
            counters: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Records one answered request: `template` is the matched route template (`None`
    /// when no route matched), `status` the response's status code.
    pub fn record_request(
        &self,
        method: &str,
        template: Option<&str>,
        status: u16,
        elapsed: Duration,
    ) {
        let Some(template) = template else {
            lock(&self.unmatched).record(elapsed, status);
            return;
        };
        {
            let table = self.routes.read().unwrap_or_else(|p| p.into_inner());
            if let Some(entry) = table.entry(method, template) {
                lock(entry).record(elapsed, status);
                return;
            }
        }
        let mut table = self.routes.write().unwrap_or_else(|p| p.into_inner());
        if table.entry(method, template).is_none() {
            if table.entries >= MAX_ROUTES {
                drop(table);
                lock(&self.overflow).record(elapsed, status);
                return;
            }
            table.entries += 1;
            table
                .by_template
                .entry(template.into())
                .or_default()
                .push((method.into(), Mutex::new(LatencyWindow::new())));
        }
        if let Some(entry) = table.entry(method, template) {
            lock(entry).record(elapsed, status);
        }
    }

    /// Records one run of a stage.
    pub fn record_stage(&self, stage: Stage, elapsed: Duration) {
        lock(&self.stages[stage.index()]).record(elapsed, 200);
    }

    pub fn increment(&self, counter: Counter) {
        self.add(counter, 1);
    }

    pub fn add(&self, counter: Counter, amount: u64) {
        self.counters[counter.index()].fetch_add(amount, Ordering::Relaxed);
    }

    /// The window so far.
    pub fn snapshot(&self) -> MetricsSnapshot {
        self.read(false)
    }

    /// The window so far; a new window starts now.
    pub fn snapshot_and_reset(&self) -> MetricsSnapshot {
        self.read(true)
    }

    fn read(&self, reset: bool) -> MetricsSnapshot {
        let since = {
            let mut since = lock(&self.since);
            let read = *since;
            if reset {
                *since = Utc::now();
            }
            read
        };
        let mut routes = Vec::new();
        {
            let table = self.routes.read().unwrap_or_else(|p| p.into_inner());
            for (template, methods) in &table.by_template {
                for (method, window) in methods {
                    routes.extend(lock(window).read(reset, || format!("{method} {template}")));
                }
            }
        }
        routes.extend(lock(&self.unmatched).read(reset, || UNMATCHED_ROUTE.to_owned()));
        routes.extend(lock(&self.overflow).read(reset, || OVERFLOW_ROUTE.to_owned()));
        routes.sort_by(|a, b| {
            b.latency
                .count
                .cmp(&a.latency.count)
                .then_with(|| a.route.cmp(&b.route))
        });
        let stages = Stage::ALL
            .iter()
            .map(|stage| {
                let mut window = lock(&self.stages[stage.index()]);
                let summary = window.summary();
                if reset {
                    window.clear();
                }
                (*stage, summary)
            })
            .collect();
        let counters = Counter::ALL
            .iter()
            .map(|counter| {
                let cell = &self.counters[counter.index()];
                let value = if reset {
                    cell.swap(0, Ordering::Relaxed)
                } else {
                    cell.load(Ordering::Relaxed)
                };
                (*counter, value)
            })
            .collect();
        MetricsSnapshot {
            since,
            routes,
            stages,
            counters,
        }
    }
}

impl RouteTable {
    fn entry(&self, method: &str, template: &str) -> Option<&Mutex<LatencyWindow>> {
        self.by_template
            .get(template)?
            .iter()
            .find(|(candidate, _)| &**candidate == method)
            .map(|(_, window)| window)
    }
}

/// A poisoned metrics lock only means a panic elsewhere mid-record: the figures are still
/// usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The latencies and error counts of one route or stage in the current window.
struct LatencyWindow {
    count: u64,
    errors_4xx: u64,
    errors_5xx: u64,
    total_ms: f64,
    /// The latest samples in milliseconds: a ring once full, overwritten at `next`.
    samples: Vec<f32>,
    next: usize,
}

impl LatencyWindow {
    fn new() -> Self {
        Self {
            count: 0,
            errors_4xx: 0,
            errors_5xx: 0,
            total_ms: 0.0,
            // Allocated once, when the route is first seen; recording never allocates.
            samples: Vec::with_capacity(RESERVOIR_SAMPLES),
            next: 0,
        }
    }

    fn record(&mut self, elapsed: Duration, status: u16) {
        let millis = elapsed.as_secs_f64() * 1000.0;
        self.count += 1;
        self.errors_4xx += u64::from((400..500).contains(&status));
        self.errors_5xx += u64::from((500..600).contains(&status));
        self.total_ms += millis;
        if self.samples.len() < RESERVOIR_SAMPLES {
            self.samples.push(millis as f32);
        } else {
            self.samples[self.next] = millis as f32;
        }
        self.next = (self.next + 1) % RESERVOIR_SAMPLES;
    }

    fn summary(&self) -> LatencySummary {
        if self.count == 0 {
            return LatencySummary::default();
        }
        let mut sorted = self.samples.clone();
        sorted.sort_unstable_by(f32::total_cmp);
        LatencySummary {
            count: self.count,
            avg_ms: self.total_ms / self.count as f64,
            p50_ms: f64::from(nearest_rank(&sorted, 50)),
            p95_ms: f64::from(nearest_rank(&sorted, 95)),
        }
    }

    /// The route's figures (none when nothing was recorded), then a fresh window when
    /// `reset`.
    fn read(&mut self, reset: bool, route: impl FnOnce() -> String) -> Option<RouteMetrics> {
        let metrics = (self.count > 0).then(|| RouteMetrics {
            route: route(),
            errors_4xx: self.errors_4xx,
            errors_5xx: self.errors_5xx,
            latency: self.summary(),
        });
        if reset {
            self.clear();
        }
        metrics
    }

    fn clear(&mut self) {
        self.count = 0;
        self.errors_4xx = 0;
        self.errors_5xx = 0;
        self.total_ms = 0.0;
        // Keeps the capacity, so recording after a reset does not allocate either.
        self.samples.clear();
        self.next = 0;
    }
}

/// The nearest-rank percentile of sorted, non-empty samples: the smallest sample that at
/// least `percent`% of the samples do not exceed.
fn nearest_rank(sorted: &[f32], percent: usize) -> f32 {
    debug_assert!(!sorted.is_empty());
    let rank = (percent * sorted.len()).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    fn route<'a>(snapshot: &'a MetricsSnapshot, name: &str) -> Option<&'a RouteMetrics> {
        snapshot.routes.iter().find(|route| route.route == name)
    }

    #[test]
    fn percentiles_are_nearest_rank_over_the_samples() {
        let metrics = Metrics::new();
        // Recorded out of order: 1..=100 ms.
        for value in (1..=100).rev() {
            metrics.record_stage(Stage::Search, millis(value));
        }
        let search = metrics.snapshot().stage(Stage::Search);
        assert_eq!(search.count, 100);
        assert!((search.avg_ms - 50.5).abs() < 1e-9);
        assert!((search.p50_ms - 50.0).abs() < 1e-3);
        assert!((search.p95_ms - 95.0).abs() < 1e-3);

        metrics.record_stage(Stage::Embed, millis(7));
        let embed = metrics.snapshot().stage(Stage::Embed);
        assert_eq!((embed.count, embed.p50_ms, embed.p95_ms), (1, 7.0, 7.0));
        assert_eq!(
            metrics.snapshot().stage(Stage::LlmExtract),
            LatencySummary::default()
        );
    }

    #[test]
    fn percentiles_cover_the_latest_samples_and_the_average_the_whole_window() {
        let metrics = Metrics::new();
        for _ in 0..RESERVOIR_SAMPLES {
            metrics.record_stage(Stage::Embed, millis(1000));
        }
        for _ in 0..RESERVOIR_SAMPLES {
            metrics.record_stage(Stage::Embed, millis(10));
        }
        let embed = metrics.snapshot().stage(Stage::Embed);
        assert_eq!(embed.count, 2 * RESERVOIR_SAMPLES as u64);
        assert!((embed.p95_ms - 10.0).abs() < 1e-3);
        assert!((embed.avg_ms - 505.0).abs() < 1e-6);
    }

    #[test]
    fn routes_count_status_classes_under_method_and_template() {
        let metrics = Metrics::new();
        let template = Some("/v1/memory/collections/{collection}");
        metrics.record_request("GET", template, 200, millis(2));
        metrics.record_request("GET", template, 404, millis(4));
        metrics.record_request("GET", template, 503, millis(6));
        metrics.record_request("DELETE", template, 204, millis(1));
        metrics.record_request("GET", None, 404, millis(1));
        metrics.record_request("POST", None, 404, millis(1));
        let snapshot = metrics.snapshot();
        let get = route(&snapshot, "GET /v1/memory/collections/{collection}").unwrap();
        assert_eq!(
            (get.latency.count, get.errors_4xx, get.errors_5xx),
            (3, 1, 1)
        );
        assert!((get.latency.avg_ms - 4.0).abs() < 1e-9);
        let delete = route(&snapshot, "DELETE /v1/memory/collections/{collection}").unwrap();
        assert_eq!(delete.latency.count, 1);
        assert_eq!(route(&snapshot, UNMATCHED_ROUTE).unwrap().latency.count, 2);
        assert_eq!(snapshot.routes[0].route, get.route, "most requested first");
    }

    #[test]
    fn reset_returns_the_window_and_starts_an_empty_one() {
        let metrics = Metrics::new();
        metrics.record_request("GET", Some("/a"), 200, millis(3));
        metrics.record_stage(Stage::CacheGet, millis(1));
        metrics.increment(Counter::SearchCacheMiss);
        metrics.add(Counter::EmbedTexts, 5);
        let before = metrics.snapshot_and_reset();
        assert_eq!(before.routes.len(), 1);
        assert_eq!(before.stage(Stage::CacheGet).count, 1);
        assert_eq!(before.counter(Counter::SearchCacheMiss), 1);
        assert_eq!(before.counter(Counter::EmbedTexts), 5);

        let after = metrics.snapshot();
        assert!(after.since >= before.since);
        assert!(after.routes.is_empty());
        assert_eq!(after.stage(Stage::CacheGet), LatencySummary::default());
        assert!(after.counters.iter().all(|(_, value)| *value == 0));
        assert_eq!(after.counters.len(), Counter::ALL.len());

        metrics.record_request("GET", Some("/a"), 500, millis(9));
        let again = metrics.snapshot();
        let route_a = route(&again, "GET /a").unwrap();
        assert_eq!((route_a.latency.count, route_a.errors_5xx), (1, 1));
        assert!((route_a.latency.p50_ms - 9.0).abs() < 1e-3);
    }

    #[test]
    fn routes_beyond_the_bound_share_one_entry() {
        let metrics = Metrics::new();
        for index in 0..MAX_ROUTES + 10 {
            metrics.record_request("GET", Some(&format!("/route/{index}")), 200, millis(1));
        }
        // A route already tracked keeps its own entry.
        metrics.record_request("GET", Some("/route/0"), 200, millis(1));
        let snapshot = metrics.snapshot();
        assert_eq!(snapshot.routes.len(), MAX_ROUTES + 1);
        assert_eq!(route(&snapshot, OVERFLOW_ROUTE).unwrap().latency.count, 10);
        assert_eq!(route(&snapshot, "GET /route/0").unwrap().latency.count, 2);
        assert!(route(&snapshot, &format!("GET /route/{MAX_ROUTES}")).is_none());
    }

    #[test]
    fn nearest_rank_edges() {
        assert_eq!(nearest_rank(&[5.0], 50), 5.0);
        assert_eq!(nearest_rank(&[1.0, 2.0], 50), 1.0);
        assert_eq!(nearest_rank(&[1.0, 2.0], 95), 2.0);
        assert_eq!(nearest_rank(&[1.0, 2.0, 3.0], 0), 1.0);
    }
}
