//! memvault-accounts: accounts that run themselves. Signup, key recovery and the one-time
//! reveal, Stripe billing, account erasure, outgoing mail, and mail-in.
//!
//! It sits above `memvault-core`: the flows change tenants through core's public
//! services (`Tenants` for records and settings, `Keys` for the owner key a reveal link
//! issues, `Placement` for the files an erasure deletes; mail-in hands an accepted
//! message to `memvault-intake`'s `Files` as a batch), and core knows nothing of
//! accounts. What each tier may hold is `memvault_types::tiers`, because core's quotas
//! check it on every write. The binary starts this crate after the service ([`start`])
//! and stops it before ([`AccountServices::stop`]).
//!
//! # Layout
//!
//! - [`account`]: [`Accounts`], signup, recovery, reveal and the start of an erasure; it
//!   is also the `ErasureSteps` the erasure jobs (`memvault-portability`) run.
//! - [`billing`]: [`Billing`], checkout and portal sessions and the signed events that
//!   change a tenant's tier, over the Stripe client and the `Stripe-Signature` check.
//! - [`reveal`]: reveal tokens (random, stored only as their SHA-256) and the letters
//!   that carry them.
//! - [`outbox`]: outgoing mail as a job kind ([`outbox::MailDeliveries`]) and
//!   [`outbox::queue`], which persists a letter before queueing it.
//! - [`email`]: mail-in: [`Email`], the use cases (drop address, rotate, allowlist, the
//!   relay's handoff), over a pure domain (drop addresses, the sender allowlist, the
//!   relay's authentication verdicts, a raw message split into batch items).
//! - [`settings`]: [`AccountSettings`], from `[mail]` and `[account]`.
//!
//! Nothing here knows HTTP; the outbox and the erasures run on the job system.

pub mod account;
pub mod billing;
pub mod email;
pub mod outbox;
pub mod reveal;
pub mod settings;

use std::sync::Arc;
use std::time::Duration;

pub use account::{Accounts, ErasureStarted, RevealView, RevealedKey};
pub use billing::{Billing, BillingSettings, EventOutcome, ReturnUrls};
pub use email::{DropAddress, Email, EmailSettings, Inbound};
pub use memvault_storage::RevealPurpose;
pub use settings::AccountSettings;

use memvault_core::service::{open_queue, run_queue};
use memvault_core::{blocking, Error, Memvault, Result};
use memvault_jobs::{JobMetricsSnapshot, JobQueue, Recurring, RetryPolicy, Scheduler};
use memvault_portability::AccountErasures;
use memvault_storage::Store;

use account::AccountParts;
use outbox::MailDeliveries;

/// The running account services and their queues.
#[derive(Clone)]
pub struct AccountServices {
    accounts: Accounts,
    billing: Billing,
    email: Email,
    erasure: JobQueue<AccountErasures>,
    /// `None` when the server sends no mail.
    mail: Option<JobQueue<MailDeliveries>>,
}

/// Starts the account services over `service`: the mail queue (when a mailer is
/// configured) and the erasure queue, each resuming what a previous run left unfinished,
/// the Stripe client, mail-in (whose accepted mail becomes a batch of `files`), and the
/// hourly pruning of expired reveal links and old handled events on the service's
/// scheduler.
pub async fn start(
    service: &Memvault,
    files: memvault_intake::Files,
    settings: AccountSettings,
    billing: BillingSettings,
    email: EmailSettings,
) -> Result<AccountServices> {
    let store = service.store().clone();
    let mail = match &settings.mailer {
        Some(mailer) => {
            let deliveries = MailDeliveries::new(
                store.clone(),
                mailer.clone(),
                RetryPolicy {
                    max_attempts: settings.mail_max_attempts.max(1),
                    backoff: settings.mail_backoff(),
                },
            );
            let queue = open_queue("the mail queue").await?;
            run_queue(
                &queue,
                deliveries,
                outbox::CONCURRENT_SENDS,
                "the mail queue",
            )
            .await?;
            let rescanned = queue.clone();
            service.on_adopt(Box::new(move || {
                let _ = rescanned.rescan();
            }));
            Some(queue)
        }
        None => None,
    };
    let billing = Billing::new(service.tenants(), store.clone(), billing).map_err(|reason| {
        Error::StartFailed {
            what: "the Stripe client".to_owned(),
            reason,
        }
    })?;
    let erasure = open_queue("the erasure queue").await?;
    let erasure_settings = settings.erasure;
    let accounts = Accounts::new(AccountParts {
        store: store.clone(),
        tenants: service.tenants(),
        keys: service.keys(),
        placement: service.placement(),
        erasure: erasure.clone(),
        mail: mail.clone(),
        settings,
    });
    let erasures = AccountErasures::new(
        store.clone(),
        Arc::new(accounts.clone()),
        service.index_dir().map(|dir| dir.to_path_buf()),
        erasure_settings,
    );
    run_queue(&erasure, erasures, 1, "the erasure queue").await?;
    schedule_pruning(service.scheduler(), store);
    Ok(AccountServices {
        accounts,
        billing,
        email: Email::new(service, files, email),
        erasure,
        mail,
    })
}

impl AccountServices {
    /// Signup, key recovery, the one-time reveal, account erasure.
    pub fn accounts(&self) -> Accounts {
        self.accounts.clone()
    }

    /// Stripe checkout, portal and webhook events.
    pub fn billing(&self) -> Billing {
        self.billing.clone()
    }

    /// Mail-in: drop addresses, the sender allowlist, the relay's handoff.
    pub fn email(&self) -> Email {
        self.email.clone()
    }

    /// Stops the erasure and mail workers; what they left resumes at the next start.
    pub async fn stop(&self) {
        self.erasure.stop().await;
        if let Some(mail) = &self.mail {
            mail.stop().await;
        }
    }

    /// The erasure and mail job kinds' figures, for the operator metrics.
    pub fn job_metrics(&self) -> Vec<(&'static str, JobMetricsSnapshot)> {
        let mut kinds = vec![("erasure", self.erasure.metrics())];
        if let Some(mail) = &self.mail {
            kinds.push(("mail", mail.metrics()));
        }
        kinds
    }

    /// The job kinds whose supervisor is down (the operator's watch of them).
    pub fn queues_down(&self) -> Vec<&'static str> {
        let mut down = Vec::new();
        if !self.erasure.is_running() {
            down.push("erasure");
        }
        if self.mail.as_ref().is_some_and(|mail| !mail.is_running()) {
            down.push("mail");
        }
        down
    }
}

/// Every hour: expired reveal links, ended dashboard sessions, and handled-event records older than a month
/// (Stripe retries an event for three days).
fn schedule_pruning(scheduler: &Scheduler, store: Arc<dyn Store>) {
    const HOUR: Duration = Duration::from_secs(3600);
    scheduler.every_cluster_wide(
        Recurring {
            name: "account_pruning",
            period: HOUR,
            jitter: Duration::from_secs(300),
            run_at_start: true,
        },
        move || {
            let store = store.clone();
            async move {
                let (reveals, events) = (store.clone(), store);
                let now = chrono::Utc::now();
                let sessions = reveals.clone();
                let pruned = blocking(move || reveals.prune_reveals(now)).await?;
                if pruned > 0 {
                    tracing::info!(pruned, "expired reveal links pruned");
                }
                let pruned = blocking(move || sessions.prune_sessions(now)).await?;
                if pruned > 0 {
                    tracing::info!(pruned, "ended dashboard sessions pruned");
                }
                let before = now - chrono::Duration::days(30);
                let pruned = blocking(move || events.prune_events(before)).await?;
                if pruned > 0 {
                    tracing::info!(pruned, "old handled-event records pruned");
                }
                Ok(())
            }
        },
    );
}
