//! How much memory a collection's records and its published snapshot hold, per memory,
//! and how long building the snapshot takes: `cargo run --release -p memvault-core
//! --example snapshot_size -- 200000`, built as a collection's opening builds it, or by
//! one insert after another with `--inserted` (as writes grow it). Records are shaped
//! like the bench's (a sentence of about 120 characters, an API key's `created_by`, no
//! metadata).

use std::sync::Arc;
use std::time::Instant;

use memvault_core::collection::{CollectionSnapshot, SnapshotBuilder};
use memvault_storage::{CreatedBy, MemoryRecord};

fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|pages| pages.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|count| count.parse().ok())
        .unwrap_or(200_000);
    let inserted = std::env::args().any(|arg| arg == "--inserted");
    let created_by = CreatedBy {
        id: "key_0193a1b2c3d4e5f6a7b8c9d0e1f2a3b4".to_owned(),
        label: "bootstrap".to_owned(),
    };
    let base = resident_bytes();
    let started = Instant::now();
    let records: Vec<Arc<MemoryRecord>> = (0..count)
        .map(|n| {
            let mut record = MemoryRecord::new(
                format!(
                    "Memory {n}: the quick brown fox jumps over the lazy dog while the \
                     committee reviews the quarterly budget for item {}.",
                    n * 7
                ),
                0.5,
                "other".to_owned(),
                "api".to_owned(),
                created_by.clone(),
                chrono::Utc::now(),
            );
            record.index_key = n as u64 + 1;
            Arc::new(record)
        })
        .collect();
    let after_records = resident_bytes();
    println!(
        "records: {:.0} B each, made in {:.2} s",
        (after_records - base) as f64 / count as f64,
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let snapshot = if inserted {
        let mut snapshot = CollectionSnapshot::default();
        for record in &records {
            snapshot.insert(record.clone());
        }
        snapshot
    } else {
        let mut builder = SnapshotBuilder::new(0);
        for record in &records {
            builder.add(record.clone());
        }
        builder.finish()
    };
    let after_snapshot = resident_bytes();
    println!(
        "snapshot maps: {:.0} B each, built in {:.2} s",
        (after_snapshot - after_records) as f64 / count as f64,
        started.elapsed().as_secs_f64()
    );
    println!(
        "in all: {:.0} B each ({} memories, {:.0} MiB)",
        (after_snapshot - base) as f64 / count as f64,
        snapshot.memories.len(),
        (after_snapshot - base) as f64 / 1048576.0
    );
}
