//! What a collection actor is asked to do. Every variant carries its reply port.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_index::VectorIndex;
use memvault_storage::{
    CollectionName, CollectionRecord, CreatedBy, EmbeddingModel, MemoryRecord, RememberedFact,
    StoredMemory,
};
use ractor::RpcReplyPort;

use super::remember::IncomingFact;
use crate::error::Result;
use crate::memory::MemoryChange;
use memvault_curation::dedup::DedupReport;

pub enum CollectionMessage {
    /// Persists new memories (already embedded by `model` and stamped) and publishes
    /// them.
    Insert {
        memories: Vec<StoredMemory>,
        model: EmbeddingModel,
        reply: RpcReplyPort<Result<Vec<Arc<MemoryRecord>>>>,
    },
    /// Takes in extracted facts with supersession (see `remember.rs`); replies with one
    /// entry per fact, in order.
    Remember {
        facts: Vec<IncomingFact>,
        /// What embedded the facts.
        model: EmbeddingModel,
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
        /// What embedded a changed text.
        model: EmbeddingModel,
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
        /// What embedded the memory.
        model: EmbeddingModel,
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
    /// Switches the collection to the vectors its re-embedding staged: every memory's
    /// staged vector and `record` (naming the new model) are stored in one write, and
    /// `vectors` (built from them) replaces the vector index. When a memory has no staged
    /// vector yet (written since), nothing changes and the index comes back.
    SwitchEmbeddings {
        record: CollectionRecord,
        vectors: Box<VectorIndex>,
        reply: RpcReplyPort<Result<Switch>>,
    },
    /// Timer tick: commit pending text-index writes, save vectors when enough changed.
    Maintain,
}

/// How a [`CollectionMessage::SwitchEmbeddings`] ended.
pub enum Switch {
    /// The collection now answers from the new vectors.
    Done,
    /// `missing` memories have no staged vector yet; stage them and ask again.
    Behind {
        missing: usize,
        vectors: Box<VectorIndex>,
    },
}
