//! A blob store in memory, for tests: object_store's `InMemory` with memvault's own
//! presigned URLs, run through the same suite as the real backends.

use std::sync::Arc;

use object_store::memory::InMemory;

use crate::objects::{MetadataPlacement, ObjectBlobStore, Presigner};
use crate::presign::UrlSigner;

impl ObjectBlobStore {
    /// Blobs in a map, gone with the value; presigned URLs as the local backend mints
    /// them, so the edge can serve them in tests.
    pub fn in_memory(signer: UrlSigner) -> Self {
        Self::new(
            Arc::new(InMemory::new()),
            MetadataPlacement::Attributes,
            Presigner::Memvault(signer),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob_suite::test_signer;

    crate::blob_suite!(in_memory, || (
        ObjectBlobStore::in_memory(test_signer()),
        ()
    ));
}
