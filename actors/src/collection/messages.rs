//! What a collection actor is asked to do. Every variant carries its reply port.

use std::sync::Arc;

use memvault_storage::{CollectionName, CreatedBy, MemoryRecord, RememberedFact, StoredMemory};
use ractor::RpcReplyPort;

use super::remember::IncomingFact;
use crate::error::Result;
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
        reply: RpcReplyPort<Result<Vec<RememberedFact>>>,
    },
    /// Applies a change to one memory.
    Update {
        id: String,
        change: MemoryChange,
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
    /// Deletes the collection and all its memories from the store, then stops.
    Destroy { reply: RpcReplyPort<Result<()>> },
    /// Timer tick: commit pending text-index writes, save vectors when enough changed.
    Maintain,
}
