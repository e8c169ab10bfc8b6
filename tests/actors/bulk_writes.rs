//! Bulk writes without HTTP: `Memories::create_batches`, the pipelined path of imports,
//! connector syncs and a file's chunks, stores its batches in order with their ids, counts
//! the batch still being stored against the tier, and on a refusal keeps the batches
//! before it and stores none after it.

use std::collections::BTreeMap;

use memvault_core::memory::NewMemory;
use memvault_core::service::{Read, Write};
use memvault_core::{Agent, Error, ListPage, Memvault, ServiceConfig};
use memvault_storage::{CollectionName, SledStore};
use memvault_types::tiers::{TierLimits, Tiers};

use crate::support::new_memory;

/// A service on sled whose tenant (tier "free") may hold `limit` memories.
async fn start(directory: &std::path::Path, limit: Option<u64>) -> (Memvault, Agent) {
    let config = ServiceConfig {
        tiers: Tiers::new(BTreeMap::from([(
            "free".to_owned(),
            TierLimits {
                memories: limit,
                ..TierLimits::default()
            },
        )])),
        ..ServiceConfig::default()
    };
    let store = std::sync::Arc::new(SledStore::open(directory).unwrap());
    let service = Memvault::start(store, crate::support::length_embedders(), config)
        .await
        .unwrap();
    let (_, key) = service
        .tenants()
        .create(crate::support::tenant())
        .await
        .unwrap();
    let agent = service.authorizer().authenticate(&key).unwrap();
    (service, agent)
}

/// Batches of `sizes`, each memory's text and id naming its batch and place.
fn batches(sizes: &[usize]) -> Vec<(Vec<NewMemory>, Option<Vec<String>>)> {
    sizes
        .iter()
        .enumerate()
        .map(|(batch, &size)| {
            let texts: Vec<String> = (0..size)
                .map(|n| format!("batch {batch} item {n}"))
                .collect();
            let ids = (0..size).map(|n| format!("b{batch}-{n}")).collect();
            (
                texts.iter().map(|text| new_memory(text)).collect(),
                Some(ids),
            )
        })
        .collect()
}

fn stored_ids(service: &Memvault, agent: &Agent, name: &CollectionName) -> Vec<String> {
    let read = service
        .authorizer()
        .authorize::<Read>(agent, name.clone())
        .unwrap();
    let mut ids: Vec<String> = service
        .memories()
        .list(
            &read,
            ListPage {
                offset: 0,
                limit: 1_000,
                include_archived: true,
            },
        )
        .map(|page| page.iter().map(|memory| memory.id.clone()).collect())
        .unwrap_or_default();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_are_stored_in_order_with_their_ids() {
    let directory = tempfile::tempdir().unwrap();
    let (service, agent) = start(directory.path(), None).await;
    let name = CollectionName::parse("bulk").unwrap();
    let write = service
        .authorizer()
        .authorize::<Write>(&agent, name.clone())
        .unwrap();
    let created = service
        .memories()
        .create_batches(&write, batches(&[3, 1, 4, 2]))
        .await
        .expect("four batches");
    let sizes: Vec<usize> = created.iter().map(Vec::len).collect();
    assert_eq!(sizes, [3, 1, 4, 2], "the records of every batch, in order");
    for (batch, records) in created.iter().enumerate() {
        for (n, record) in records.iter().enumerate() {
            assert_eq!(record.id, format!("b{batch}-{n}"));
            assert_eq!(record.text, format!("batch {batch} item {n}"));
        }
    }
    assert_eq!(stored_ids(&service, &agent, &name).len(), 10);
}

/// Batches of `sizes` written by a tenant that may hold 10 memories: the error (a tier
/// refusal) and the ids stored.
async fn refused_at_ten(sizes: &[usize]) -> Vec<String> {
    let directory = tempfile::tempdir().unwrap();
    let (service, agent) = start(directory.path(), Some(10)).await;
    let name = CollectionName::parse("bulk").unwrap();
    let write = service
        .authorizer()
        .authorize::<Write>(&agent, name.clone())
        .unwrap();
    let error = service
        .memories()
        .create_batches(&write, batches(sizes))
        .await
        .expect_err("a batch passes the tier");
    assert!(matches!(error, Error::TierLimitReached { .. }), "{error:?}");
    stored_ids(&service, &agent, &name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_batch_keeps_the_ones_before_it_and_stores_none_after_it() {
    // 4 + 4 fit; the third batch of 4 would pass the 10 the tier allows.
    let mut expected: Vec<String> = (0..2)
        .flat_map(|batch| (0..4).map(move |n| format!("b{batch}-{n}")))
        .collect();
    expected.sort();
    assert_eq!(refused_at_ten(&[4, 4, 4, 1]).await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batch_being_stored_counts_against_the_tier() {
    // 6 + 5 would pass 10: the second batch is refused although, when it is admitted, the
    // first may not be stored yet.
    assert_eq!(refused_at_ten(&[6, 5]).await.len(), 6);
}
