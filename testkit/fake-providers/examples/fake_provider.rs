//! One fake provider server, for benchmarks driving a real memvault server against it.
//!
//! usage: `fake_provider <provider> <records> [page_size]`
//!
//! Starts the provider's fake (`memvault_fake_providers::<provider>::start`) with
//! `records` generated records and the given page size (default 100), prints one line of
//! JSON, `{"provider", "base_url", "credentials", "config", "records", "start_secs"}`, and
//! serves until killed. Reading stdin: each line `stats` is answered with one line of JSON,
//! the calls the fake got so far by kind (`{"list", "content", "meta", "faults", "total"}`);
//! end of input leaves the fake serving.

use std::io::{BufRead, Write};
use std::time::Instant;

use memvault_fake_providers::{self as fakes, CallKind, Fake, FakeServer};
use serde_json::json;

const PROVIDERS: &str = "slack, notion, gdrive, gmail, linear, confluence or hubspot";

fn usage(problem: &str) -> ! {
    eprintln!(
        "{problem}\nusage: fake_provider <provider> <records> [page_size]  (provider: {PROVIDERS})"
    );
    std::process::exit(2);
}

async fn start(provider: &str, records: usize) -> FakeServer {
    match provider {
        "slack" => fakes::slack::start(records).await,
        "notion" => fakes::notion::start(records).await,
        "gdrive" => fakes::gdrive::start(records).await,
        "gmail" => fakes::gmail::start(records).await,
        "linear" => fakes::linear::start(records).await,
        "confluence" => fakes::confluence::start(records).await,
        "hubspot" => fakes::hubspot::start(records).await,
        other => usage(&format!("unknown provider {other:?}")),
    }
}

fn stats(fake: &Fake) -> serde_json::Value {
    let state = fake.lock();
    let count = |kind: CallKind| state.log.iter().filter(|call| call.kind == kind).count();
    json!({
        "list": count(CallKind::List),
        "content": count(CallKind::Content),
        "meta": count(CallKind::Meta),
        "faults": state.log.iter().filter(|call| call.fault.is_some()).count(),
        "total": state.log.len(),
    })
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(provider), Some(records)) = (args.first(), args.get(1)) else {
        usage("missing arguments");
    };
    let records: usize = records
        .parse()
        .unwrap_or_else(|_| usage(&format!("records must be a number, not {records:?}")));
    let page_size: usize = match args.get(2) {
        Some(size) => size
            .parse()
            .unwrap_or_else(|_| usage(&format!("page_size must be a number, not {size:?}"))),
        None => 100,
    };
    fakes::set_page_size(page_size);
    let began = Instant::now();
    let server = start(provider, records).await;
    let line = json!({
        "provider": provider,
        "base_url": server.base_url,
        "credentials": server.credentials,
        "config": server.config,
        "records": records,
        "page_size": page_size,
        "start_secs": began.elapsed().as_secs_f64(),
    });
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}").expect("stdout");
        out.flush().expect("stdout");
    }
    let fake = server.fake.clone();
    // Stats on request, from a blocking thread (stdin is blocking).
    tokio::task::spawn_blocking(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line.trim() == "stats" {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", stats(&fake));
                let _ = out.flush();
            }
        }
    });
    // Serve until killed (the server's task lives as long as `server`).
    std::future::pending::<()>().await;
    drop(server);
}
