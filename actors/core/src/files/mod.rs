//! Asynchronous file batches as a job kind: [`IngestJobs`] persists every item with its
//! state, resumes after a crash, and fails an item by a deadline when it hangs. The
//! pipeline's parts (reading, chunking, blob placement, attachments) are `memvault-files`;
//! the use cases are `crate::service::Files`.

mod jobs;

pub use jobs::{IngestBatchKey, IngestItem, IngestJobs, ItemOutcome, Prepared, ITEM_MAX_ATTEMPTS};
