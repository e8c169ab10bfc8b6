//! One sync run, the same for every provider:
//!
//! 1. The window starts `overlap` before the stored high-water mark (or covers everything on
//!    a first sync), so records sharing the boundary time are read again.
//! 2. Pages are walked newest first. Each page's records are hashed; a record whose stored
//!    hash is the same is skipped (nothing is embedded again); the others are upserted by
//!    (connection, record id), so an edit replaces its memory instead of adding one.
//!    Deletions the provider reports are applied.
//! 3. After every page a checkpoint (the window, the next page token, the newest time seen,
//!    the count) is saved, so a killed or capped run resumes where it stopped. The next
//!    page is fetched while one is stored (never past the cap), so the provider's answer
//!    time overlaps the embedding.
//! 4. Only when the walk is complete does the cursor move: to the newest modification time
//!    actually seen (never "now"), and to the provider's new change token. A failed run
//!    leaves it where it was.
//!
//! Reconciliation lists every id in scope and removes the memories whose record is gone,
//! only after the listing completed.

use std::collections::HashSet;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memvault_types::Failure;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::provider::{Change, Context, Provider, ProviderError, Record, Window};

/// Where a connection's incremental sync stands; moved only by a complete run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// The newest modification time a complete run saw.
    pub high_water: Option<DateTime<Utc>>,
    /// The provider's change token, when it keeps one.
    pub token: Option<String>,
}

impl Cursor {
    /// The cursor as clients see it: the high-water mark, else the token.
    pub fn display(&self) -> Option<String> {
        self.high_water
            .map(|time| time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .or_else(|| self.token.clone())
    }
}

/// A run in progress, saved after every page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The window the run walks (fixed for the run).
    pub window: Window,
    /// The page token to continue from; None: from the first page.
    pub page: Option<String>,
    /// The newest modification time seen so far.
    pub seen: Option<DateTime<Utc>>,
    /// The change token the walk reported so far.
    pub token: Option<String>,
    /// Records stored (new or changed) so far.
    pub synced: u64,
    /// Records skipped as unchanged so far.
    pub unchanged: u64,
    /// Deletions applied so far.
    pub deleted: u64,
}

/// Where the records go: memvault's side of a connection.
#[async_trait]
pub trait Sink: Send + Sync {
    /// The stored content hash of each record id (None: not stored).
    async fn hashes(&self, ids: &[String]) -> Result<Vec<Option<String>>, Failure>;
    /// Stores (or replaces) these records' memories with their hashes.
    async fn upsert(&self, records: Vec<(Record, String)>) -> Result<(), Failure>;
    /// Removes these records' memories; returns how many there were.
    async fn delete(&self, ids: &[String]) -> Result<u64, Failure>;
    /// Every record id stored for the connection.
    async fn stored_ids(&self) -> Result<Vec<String>, Failure>;
    /// Saves the run's progress (None: clears it, the run is over).
    async fn checkpoint(&self, checkpoint: Option<&Checkpoint>) -> Result<(), Failure>;
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("storing the records failed: {0}")]
    Sink(Failure),
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Records stored (new or changed).
    pub synced: u64,
    pub unchanged: u64,
    pub deleted: u64,
    /// Whether the walk completed (false: capped; the checkpoint holds the rest).
    pub complete: bool,
    /// The cursor after the run (unchanged unless complete).
    pub cursor: Cursor,
}

/// Limits of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLimits {
    /// Stop after this many pages (the checkpoint resumes the rest); None: no cap.
    pub max_pages: Option<u64>,
}

/// The content hash that decides whether a record changed.
pub fn content_hash(record: &Record) -> String {
    let mut hasher = Sha256::new();
    for part in [
        record.title.as_str(),
        record.text.as_str(),
        record.url.as_deref().unwrap_or(""),
        record.author.as_deref().unwrap_or(""),
    ] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// Runs one sync of the connection: from `resume` when a checkpoint was saved, else a new
/// window from `cursor`.
pub async fn sync(
    provider: &dyn Provider,
    cx: &Context<'_>,
    cursor: &Cursor,
    resume: Option<Checkpoint>,
    sink: &dyn Sink,
    limits: RunLimits,
) -> Result<Report, SyncError> {
    let mut checkpoint = resume.unwrap_or_else(|| Checkpoint {
        window: Window {
            since: cursor.high_water.map(|high| {
                high - chrono::Duration::from_std(provider.overlap()).unwrap_or_default()
            }),
            token: cursor.token.clone(),
        },
        ..Checkpoint::default()
    });
    let mut pages = 0u64;
    let mut page = provider
        .changes(cx, &checkpoint.window, checkpoint.page.as_deref())
        .await?;
    loop {
        // The next page is fetched while this one is stored, unless this one is the last
        // the cap allows.
        let capped = limits.max_pages.is_some_and(|max| pages + 1 >= max);
        let ahead = page.next.clone().filter(|_| !capped);
        let window = checkpoint.window.clone();
        let fetch = async {
            match &ahead {
                Some(token) => Some(provider.changes(cx, &window, Some(token)).await),
                None => None,
            }
        };
        // The page is stored and its checkpoint saved as soon as it is stored, whether or
        // not the next page has arrived.
        let store = async {
            apply(page.changes, sink, &mut checkpoint).await?;
            if page.token.is_some() {
                checkpoint.token = page.token;
            }
            checkpoint.page = page.next;
            if checkpoint.page.is_some() {
                sink.checkpoint(Some(&checkpoint))
                    .await
                    .map_err(SyncError::Sink)?;
            }
            Ok::<(), SyncError>(())
        };
        let (stored, fetched) = tokio::join!(store, fetch);
        stored?;
        pages += 1;
        if checkpoint.page.is_none() {
            break;
        }
        if limits.max_pages.is_some_and(|max| pages >= max) {
            return Ok(Report {
                synced: checkpoint.synced,
                unchanged: checkpoint.unchanged,
                deleted: checkpoint.deleted,
                complete: false,
                cursor: cursor.clone(),
            });
        }
        // A failed fetch of the next page fails the run after this page's checkpoint.
        page = match fetched {
            Some(fetched) => fetched?,
            None => {
                provider
                    .changes(cx, &checkpoint.window, checkpoint.page.as_deref())
                    .await?
            }
        };
    }
    let next = Cursor {
        high_water: match (cursor.high_water, checkpoint.seen) {
            (Some(old), Some(seen)) => Some(old.max(seen)),
            (old, seen) => seen.or(old),
        },
        token: checkpoint.token.clone().or_else(|| cursor.token.clone()),
    };
    sink.checkpoint(None).await.map_err(SyncError::Sink)?;
    Ok(Report {
        synced: checkpoint.synced,
        unchanged: checkpoint.unchanged,
        deleted: checkpoint.deleted,
        complete: true,
        cursor: next,
    })
}

async fn apply(
    changes: Vec<Change>,
    sink: &dyn Sink,
    checkpoint: &mut Checkpoint,
) -> Result<(), SyncError> {
    let mut upserts: Vec<Record> = Vec::new();
    let mut deletes: Vec<String> = Vec::new();
    for change in changes {
        match change {
            Change::Upsert(record) => {
                checkpoint.seen = Some(
                    checkpoint
                        .seen
                        .map_or(record.modified, |seen| seen.max(record.modified)),
                );
                // A record listed twice in one page keeps its last version.
                upserts.retain(|earlier| earlier.id != record.id);
                deletes.retain(|id| *id != record.id);
                upserts.push(record);
            }
            Change::Delete(id) => {
                upserts.retain(|earlier| earlier.id != id);
                if !deletes.contains(&id) {
                    deletes.push(id);
                }
            }
        }
    }
    if !upserts.is_empty() {
        let ids: Vec<String> = upserts.iter().map(|record| record.id.clone()).collect();
        let stored = sink.hashes(&ids).await.map_err(SyncError::Sink)?;
        let mut fresh = Vec::new();
        for (record, stored) in upserts.into_iter().zip(stored) {
            let hash = content_hash(&record);
            if stored.as_deref() == Some(hash.as_str()) {
                checkpoint.unchanged += 1;
            } else {
                fresh.push((record, hash));
            }
        }
        checkpoint.synced += fresh.len() as u64;
        if !fresh.is_empty() {
            sink.upsert(fresh).await.map_err(SyncError::Sink)?;
        }
    }
    if !deletes.is_empty() {
        checkpoint.deleted += sink.delete(&deletes).await.map_err(SyncError::Sink)?;
    }
    Ok(())
}

/// Lists every id in scope and removes the stored records that are not among them. Nothing
/// is removed unless the listing completed; returns how many were removed.
pub async fn reconcile(
    provider: &dyn Provider,
    cx: &Context<'_>,
    sink: &dyn Sink,
) -> Result<u64, SyncError> {
    let mut live = HashSet::new();
    let mut page: Option<String> = None;
    loop {
        let listed = provider.ids(cx, page.as_deref()).await?;
        live.extend(listed.ids);
        match listed.next {
            Some(next) => page = Some(next),
            None => break,
        }
    }
    let gone: Vec<String> = sink
        .stored_ids()
        .await
        .map_err(SyncError::Sink)?
        .into_iter()
        .filter(|id| !live.contains(id))
        .collect();
    if gone.is_empty() {
        return Ok(0);
    }
    sink.delete(&gone).await.map_err(SyncError::Sink)
}
