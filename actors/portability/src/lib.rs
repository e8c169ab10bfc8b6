//! memvault-portability: an account's data leaving and arriving, as jobs that survive a
//! crash.
//!
//! # Layout
//!
//! - [`import`]: [`ImportJobs`], the job kind that stores a large import in batches,
//!   resumable after a crash with each item stored once. It writes through an
//!   [`ImportRunner`] (the service's part that authorizes and stores memories).
//! - [`erasure`]: [`AccountErasures`], the job kind that erases an account, every step
//!   safe to repeat. It takes the tenant out of the running service and deletes its files
//!   through [`ErasureSteps`].
//!
//! The export snapshot and the import's validation are the service's
//! (`memvault_core::Portability`); this crate holds what runs in the background. It
//! depends on the store, the job system and the types, never on the service: the
//! service hands each kind its capability.

pub mod erasure;
pub mod import;

pub use erasure::{AccountErasures, ErasureSettings, ErasureSteps};
pub use import::{item_id, ImportJobs, ImportKey, ImportRunner, IMPORT_SYNC_MAX};
