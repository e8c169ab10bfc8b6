//! Percentiles and a progress line for the benchmark.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Latencies {
    samples: Vec<Duration>,
}

impl Latencies {
    pub fn record(&mut self, sample: Duration) {
        self.samples.push(sample);
    }

    /// The `quantile` (0..=1) by the nearest-rank method.
    pub fn quantile(&self, quantile: f64) -> Duration {
        if self.samples.is_empty() {
            return Duration::ZERO;
        }
        let mut sorted = self.samples.clone();
        sorted.sort_unstable();
        let rank = (quantile * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    }

    pub fn summary(&self) -> String {
        let ms = |duration: Duration| duration.as_secs_f64() * 1000.0;
        format!(
            "p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms",
            ms(self.quantile(0.50)),
            ms(self.quantile(0.95)),
            ms(self.quantile(0.99))
        )
    }
}

/// `bulk [#########...........] 4500/10000  1234/s` on stderr, redrawn at most 10 times a
/// second on a terminal; piped to a file, only the final line is written.
pub struct Progress {
    label: &'static str,
    total: usize,
    done: usize,
    started: Instant,
    drawn: Instant,
    /// Redraws are for a person watching: a file or a pipe gets the last line only.
    on_terminal: bool,
}

impl Progress {
    pub fn new(label: &'static str, total: usize) -> Self {
        let now = Instant::now();
        Self {
            label,
            total,
            done: 0,
            started: now,
            drawn: now,
            on_terminal: std::io::stderr().is_terminal(),
        }
    }

    pub fn advance(&mut self, count: usize) {
        self.done += count;
        if !self.on_terminal {
            return;
        }
        if self.drawn.elapsed() >= Duration::from_millis(100) || self.done >= self.total {
            self.draw();
            self.drawn = Instant::now();
        }
    }

    pub fn finish(&mut self) {
        self.draw();
        eprintln!();
    }

    fn draw(&self) {
        const WIDTH: usize = 30;
        let start = if self.on_terminal { "\r" } else { "" };
        let filled = (self.done * WIDTH).checked_div(self.total).unwrap_or(WIDTH);
        let rate = self.done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        eprint!(
            "{start}{} [{}{}] {}/{} {:.0}/s ",
            self.label,
            "#".repeat(filled.min(WIDTH)),
            ".".repeat(WIDTH - filled.min(WIDTH)),
            self.done,
            self.total,
            rate
        );
        let _ = std::io::stderr().flush();
    }
}
