//! What a collection actor is asked to do. Every variant carries its reply port.

use std::sync::Arc;

use memvault_storage::{CollectionName, MemoryRecord, StoredMemory};
use ractor::RpcReplyPort;

use crate::error::Result;
use crate::memory::MemoryChange;

pub enum CollectionMessage {
    /// Persists new memories (already embedded and stamped) and publishes them.
    Insert {
        memories: Vec<StoredMemory>,
        reply: RpcReplyPort<Result<Vec<Arc<MemoryRecord>>>>,
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
        memory: StoredMemory,
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
