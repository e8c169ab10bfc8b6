//! The server under measurement: this binary's `serve` in a child process.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::BenchError;

pub struct ServerProcess {
    child: Child,
    pub base_url: String,
    /// From spawn to the first healthy answer.
    pub startup: Duration,
}

impl ServerProcess {
    pub async fn start(data_dir: &Path, key: &str) -> Result<Self, BenchError> {
        Self::start_with(data_dir, key, &[]).await
    }

    /// [`Self::start`] with more environment variables (e.g. another embedding model).
    pub async fn start_with(
        data_dir: &Path,
        key: &str,
        environment: &[(String, String)],
    ) -> Result<Self, BenchError> {
        Self::start_at(data_dir, key, "127.0.0.1:0", environment).await
    }

    /// [`Self::start_with`] listening on `bind`.
    pub async fn start_at(
        data_dir: &Path,
        key: &str,
        bind: &str,
        environment: &[(String, String)],
    ) -> Result<Self, BenchError> {
        let binary = std::env::current_exe()
            .map_err(|error| BenchError::Setup(format!("current exe: {error}")))?;
        let started = Instant::now();
        let mut child = Command::new(binary)
            .args(["serve", "--bind", bind, "--data-dir"])
            .arg(data_dir)
            .env("MEMVAULT_BOOTSTRAP_KEY", key)
            // MEMVAULT_BENCH_LOG (a tracing filter) shows more of the server's log.
            .env(
                "RUST_LOG",
                std::env::var("MEMVAULT_BENCH_LOG").unwrap_or_else(|_| "warn".to_owned()),
            )
            // Every search is measured, never answered from the result cache.
            .env("MEMVAULT__SEARCH__RESULT_CACHE_ENTRIES", "0")
            // The limiter still counts every request (its cost is measured) but never
            // refuses one of the benchmark's.
            .env(
                "MEMVAULT__RATE_LIMIT__TIERS",
                "{admin = 4000000000, pro = 4000000000, free = 4000000000}",
            )
            .envs(environment.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| BenchError::Setup(format!("cannot start the server: {error}")))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| BenchError::Setup("no stdout".to_owned()))?;
        let mut lines = BufReader::new(stdout).lines();
        let base_url = loop {
            let line = lines
                .next_line()
                .await
                .map_err(|error| BenchError::Setup(format!("server stdout: {error}")))?
                .ok_or_else(|| {
                    BenchError::Setup("the server exited before listening".to_owned())
                })?;
            if let Some(url) = line.strip_prefix("memvault listening on ") {
                break url.trim().to_owned();
            }
        };
        // Keep draining stdout so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let client = reqwest::Client::new();
        loop {
            let health = client
                .get(format!("{base_url}/v1/memory/health"))
                .send()
                .await;
            if health.is_ok_and(|response| response.status().is_success()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(Self {
            child,
            base_url,
            startup: started.elapsed(),
        })
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Resident set size from /proc (0 where /proc is absent).
    pub fn rss_bytes(&self) -> u64 {
        let Some(pid) = self.child.id() else { return 0 };
        proc_status_bytes(&pid.to_string(), "VmRSS:")
    }

    /// SIGKILL, as a crash or an OOM kill would end it.
    pub async fn kill_hard(&mut self) -> Result<(), BenchError> {
        self.child
            .kill()
            .await
            .map_err(|error| BenchError::Setup(format!("kill -9: {error}")))
    }

    /// SIGTERM, then wait for the graceful shutdown.
    pub async fn stop(&mut self) -> Result<(), BenchError> {
        if let Some(pid) = self.child.id() {
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .await;
        }
        match tokio::time::timeout(Duration::from_secs(60), self.child.wait()).await {
            Ok(_) => Ok(()),
            Err(_) => {
                let _ = self.child.kill().await;
                Err(BenchError::Setup(
                    "the server did not stop within 60 s".to_owned(),
                ))
            }
        }
    }
}

/// Total size of the files under `directory`.
pub fn directory_bytes(directory: &Path) -> u64 {
    let mut total = 0;
    let mut pending: Vec<PathBuf> = vec![directory.to_owned()];
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.metadata() {
                Ok(metadata) if metadata.is_dir() => pending.push(entry.path()),
                Ok(metadata) => total += metadata.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// A kB field (`VmRSS:`, `VmHWM:`) of `/proc/{pid}/status`, in bytes; 0 where /proc or
/// the field is absent. `pid` may be `self`.
pub fn proc_status_bytes(pid: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kib| kib * 1024)
}
