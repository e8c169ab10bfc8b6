//! How long reading every memory record of a data dir takes, collection by collection (the
//! first step of opening a collection at start): `cargo run --release -p memvault-storage
//! --example scan_records -- DATA_DIR`. Run it on a stopped server's data dir
//! (`memvault bench --precomputed --keep-data` keeps one).

use std::time::Instant;

use memvault_storage::{MemoryStore, MetaStore, SledStore};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let directory = std::env::args()
        .nth(1)
        .ok_or("usage: scan_records DATA_DIR")?;
    let started = Instant::now();
    let store = SledStore::open(&std::path::Path::new(&directory).join("store"))?;
    println!("opened in {:.2} s", started.elapsed().as_secs_f64());
    for tenant in store.tenants()? {
        for collection in store.collections(&tenant.id)? {
            let started = Instant::now();
            let records = store.memory_records(&tenant.id, &collection.name)?;
            let elapsed = started.elapsed().as_secs_f64();
            if !records.is_empty() {
                println!(
                    "{}/{}: {} records in {:.2} s ({:.1} µs each)",
                    tenant.id,
                    collection.name,
                    records.len(),
                    elapsed,
                    elapsed * 1e6 / records.len() as f64
                );
            }
        }
    }
    Ok(())
}
