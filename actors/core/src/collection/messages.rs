//! What a collection actor is asked to do. Every variant carries its reply port.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_storage::{CollectionName, CreatedBy, MemoryRecord, RememberedFact, StoredMemory};
use ractor::RpcReplyPort;

use super::remember::IncomingFact;
use crate::error::Result;
use crate::maintenance::dedup::DedupReport;
use crate::memory::MemoryChange;

pub enum CollectionMessage {
    /// Persists new memories (already embedded and stamped) and publishes them.
    Insert {
        memories: Vec<StoredMemory>,
        reply: RpcReplyPort<Result<Vec<Arc<MemoryRecord>>>>,
    },
    /// Takes in extracted facts with supersession (see `remember.rs`); replies with one
    /// entry per fact, in order.
    Remember {
        facts: Vec<IncomingFact>,
        importance: f64,
        created_by: CreatedBy,
        /// The time decisions are made at (expiry) and stamped on new memories.
        now: DateTime<Utc>,
        reply: RpcReplyPort<Result<Vec<RememberedFact>>>,
    },
    /// Applies a change to one memory; `at` becomes its updated_at when the content changes.
    Update {
        id: String,
        change: MemoryChange,
        at: DateTime<Utc>,
        reply: RpcReplyPort<Result<Arc<MemoryRecord>>>,
    },
    Delete {
        id: String,
        reply: RpcReplyPort<Result<()>>,
    },
    /// Takes in a memory moved from another collection of the tenant: one atomic store
    /// write removes it there and adds it here.
    Adopt {
        memory: Box<StoredMemory>,
        from: CollectionName,
        reply: RpcReplyPort<Result<Arc<MemoryRecord>>>,
    },
    /// Forgets a memory that another collection adopted (the store already moved it).
    Evict {
        id: String,
        reply: RpcReplyPort<Result<()>>,
    },
    /// Finds duplicate clusters among the `window` most recent current memories; unless
    /// `dry_run`, deletes every non-keeper.
    Dedup {
        threshold: f32,
        window: usize,
        dry_run: bool,
        reply: RpcReplyPort<Result<DedupReport>>,
    },
    /// Archives (unless `dry_run`) the memories not updated since `cutoff` that are not
    /// pinned, archived or superseded, at most `max` of them (oldest first); replies with
    /// their ids.
    ArchiveStale {
        cutoff: DateTime<Utc>,
        dry_run: bool,
        max: usize,
        reply: RpcReplyPort<Result<Vec<String>>>,
    },
    /// Deletes the collection and all its memories from the store, then stops. Emits no
    /// webhook event (see the module docs of `collection`).
    Destroy { reply: RpcReplyPort<Result<()>> },
    /// Timer tick: commit pending text-index writes, save vectors when enough changed.
    Maintain,
}
