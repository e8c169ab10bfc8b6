//! memvault-jobs: every long or background task of the service is a job on this system.
//!
//! A job *kind* (extraction, webhook delivery, and later ingest, email, connector syncs,
//! export, import, erasure) implements [`JobKind`]: where its jobs are persisted, how one
//! attempt runs, and how failures are recorded. The system does the rest, the same way
//! for every kind:
//!
//! - **Persisted before acknowledged.** The caller stores the job, then [`JobQueue::submit`]s
//!   its key; at start-up [`JobQueue::start`] asks the kind for every unfinished job and
//!   resumes them, so a job accepted before a crash runs after it.
//! - **Supervised.** One supervisor actor per kind hands jobs to linked worker actors, one
//!   job each at a time. A worker that panics or is killed mid-job is restarted after a
//!   back-off; its job counts the attempt and is tried again.
//! - **One back-off.** Retries and restarts wait by the kind's [`Backoff`]
//!   ([`RetryPolicy`]); after `max_attempts` a job is given up with its last reason.
//! - **Auto-pause.** A kind may pause a group of jobs (a tenant, a connector) after N
//!   consecutive failures ([`PausePolicy`]); the group's jobs wait, the others run.
//! - **Visible.** Every kind counts queued, running, done, retried, given-up jobs, worker
//!   restarts and pauses in [`JobMetrics`].
//! - **Recurring work** (pruning, syncs on a schedule) runs on the [`Scheduler`]: due
//!   times with jitter, failures counted.
//! - **Resident loops** (the audit writer, the webhook event recorder) run as a
//!   [`Resident`]: restarted after a panic by the one `RestartPolicy`, degraded when they
//!   keep failing.
//!
//! Workers receive only what their kind holds (a store, a client, a writer), never the
//! service facade.
//!
//! # Layout
//!
//! - [`kind`]: the [`JobKind`] trait, [`Outcome`], [`Pending`], the policies.
//! - [`queue`]: [`JobQueue`], the handle, and its supervisor and worker actors.
//! - [`metrics`]: [`JobMetrics`] and the snapshot the operator endpoint shows.
//! - [`scheduler`]: [`Scheduler`] for recurring work.
//! - [`resident`]: [`Resident`], a long-lived loop under supervision.
//! - [`blocking`](mod@blocking): a job's store work off the async threads, failing as a
//!   [`Failure`].

pub mod blocking;
pub mod kind;
pub mod metrics;
pub mod queue;
pub mod resident;
pub mod scheduler;

pub use blocking::blocking;
pub use kind::{JobKind, Outcome, PausePolicy, Pending, RetryPolicy};
pub use memvault_types::{Backoff, Failure};
pub use metrics::{JobMetrics, JobMetricsSnapshot};
pub use queue::{JobError, JobQueue};
pub use resident::Resident;
pub use scheduler::{Recurring, RecurringSnapshot, Scheduler, WorkGate};
