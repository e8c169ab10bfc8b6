//! Accounts that run themselves: signup, key recovery and the one-time reveal.
//!
//! - **Signup** creates a `free` tenant named after the email (one tenant per email) and
//!   mails a reveal link. The tenant's first key is made and thrown away unseen: the
//!   owner's key is the one the link reveals.
//! - **Recovery** mails a reveal link to a known email; to an unknown one nothing is
//!   sent, and the caller's answer is the same either way.
//! - **Reveal** takes the link's token out of the store (once: of two concurrent reveals
//!   one wins) and issues a new owner key; the previous owner key stops working at that
//!   moment, not before. Looking at a link ([`Accounts::inspect`]) burns nothing.
//!
//! Reveal mails to one address are capped per minute (`mails_per_address_per_minute`);
//! over the cap the mail is dropped silently, so the answer never tells.

use std::sync::Arc;

use chrono::Utc;
use memvault_core::service::NewTenant;
use memvault_core::{blocking, Agent, Error, Keys, Placement, Result, Tenants};
use memvault_jobs::JobQueue;
use memvault_portability::AccountErasures;
use memvault_storage::{RevealPurpose, RevealRecord, Store, TenantId, TenantRecord};
use memvault_types::rate_limit::{FixedWindowLimiter, RateLimiter};

use crate::outbox::{self, MailDeliveries};
use crate::reveal;
use crate::settings::AccountSettings;

/// A reveal link that may still be used: what the confirmation page shows.
#[derive(Debug, Clone, PartialEq)]
pub struct RevealView {
    pub purpose: RevealPurpose,
    pub tenant_name: String,
    pub expires_at: chrono::DateTime<Utc>,
}

/// A revealed key: shown once.
#[derive(Debug, Clone, PartialEq)]
pub struct RevealedKey {
    pub api_key: String,
    pub key_id: String,
    pub tenant_id: TenantId,
    pub tenant_name: String,
    pub email: String,
}

/// An erasure that has begun: the account's keys are dead, the rest goes in the
/// background.
#[derive(Debug, Clone, PartialEq)]
pub struct ErasureStarted {
    pub tenant_id: TenantId,
    pub name: String,
    pub since: chrono::DateTime<Utc>,
}

/// Signup, recovery, reveal, erasure.
#[derive(Clone)]
pub struct Accounts {
    store: Arc<dyn Store>,
    tenants: Tenants,
    keys: Keys,
    /// Where the tenants' files are (erasure empties them).
    placement: Placement,
    erasure: JobQueue<AccountErasures>,
    /// `None` when the server sends no mail.
    mail: Option<JobQueue<MailDeliveries>>,
    settings: AccountSettings,
    /// Serializes signups, so one email never gets two tenants.
    signups: Arc<tokio::sync::Mutex<()>>,
    /// Reveal mails per address per minute.
    mail_limiter: Arc<FixedWindowLimiter>,
}

/// What [`Accounts`] is built from (the queues are opened by [`crate::start`]).
pub(crate) struct AccountParts {
    pub store: Arc<dyn Store>,
    pub tenants: Tenants,
    pub keys: Keys,
    pub placement: Placement,
    pub erasure: JobQueue<AccountErasures>,
    pub mail: Option<JobQueue<MailDeliveries>>,
    pub settings: AccountSettings,
}

impl Accounts {
    pub(crate) fn new(parts: AccountParts) -> Self {
        Self {
            store: parts.store,
            tenants: parts.tenants,
            keys: parts.keys,
            placement: parts.placement,
            erasure: parts.erasure,
            mail: parts.mail,
            settings: parts.settings,
            signups: Arc::new(tokio::sync::Mutex::new(())),
            mail_limiter: Arc::new(FixedWindowLimiter::new(100_000)),
        }
    }

    /// Signs `email` up: a new `free` tenant and a mailed reveal link, or nothing at all
    /// when the email has a tenant already (one per email; the answer does not say).
    pub async fn signup(&self, email: &str) -> Result<()> {
        let queue = self.mail_queue()?;
        let created = {
            // One signup at a time: two concurrent signups of one email make one tenant.
            let _serial = self.signups.lock().await;
            if self.tenants.by_email(email).is_some() {
                tracing::info!("signup for an email that has a tenant; nothing sent");
                return Ok(());
            }
            let new = NewTenant {
                name: email.to_owned(),
                email: email.to_owned(),
                tier: "free".to_owned(),
                admin: false,
            };
            match self.tenants.create(new).await {
                Ok((record, _unseen_key)) => record,
                // Several nodes: a tenant this node does not serve has the email.
                Err(Error::TenantExists { .. }) => {
                    tracing::info!("signup for an email that has a tenant; nothing sent");
                    return Ok(());
                }
                Err(error) => return Err(error),
            }
        };
        tracing::info!(tenant = %created.id, "tenant signed up");
        self.send_link(queue, &created, RevealPurpose::Signup).await
    }

    /// Mails a reveal link for a new owner key to `email` when it has a tenant; otherwise
    /// does nothing. Either way the caller answers the same.
    pub async fn recover(&self, email: &str) -> Result<()> {
        let queue = self.mail_queue()?;
        match self.tenants.by_email(email) {
            Some(tenant) => self.send_link(queue, &tenant, RevealPurpose::Recover).await,
            None => Ok(()),
        }
    }

    /// Erases the agent's account (the caller checked it holds the owner key): `confirm`
    /// must be the account's name. The record is marked first, so a crash from here on
    /// resumes the erasure; then the tenant leaves the service (its keys stop at once)
    /// and the rest is the erasure job's.
    pub async fn delete_account(&self, agent: &Agent, confirm: &str) -> Result<ErasureStarted> {
        let record = self.tenants.get(&agent.tenant_id)?;
        if confirm != record.name {
            return Err(Error::ConfirmMismatch {
                expected: record.name.clone(),
            });
        }
        if record.admin {
            return Err(Error::AdminAccountProtected);
        }
        let since = Utc::now();
        let mark = Box::new(move |current: &TenantRecord| {
            Ok(TenantRecord {
                erasing_since: Some(since),
                ..current.clone()
            })
        });
        self.tenants.update_record(&record.id, mark).await?;
        self.tenants.detach(&record.id).await;
        if self.erasure.submit(record.id.clone()).is_err() {
            // Stopping: the marked record makes the next start resume it.
            tracing::warn!(tenant = %record.id, "erasure queue stopped; the erasure resumes at the next start");
        }
        tracing::info!(tenant = %record.id, "account erasure started");
        Ok(ErasureStarted {
            tenant_id: record.id.clone(),
            name: record.name.clone(),
            since,
        })
    }

    /// The link behind `token` when it may still be used; nothing is burnt.
    pub async fn inspect(&self, token: &str) -> Result<RevealView> {
        let (record, tenant) = self.link(token, false).await?;
        Ok(RevealView {
            purpose: record.purpose,
            tenant_name: tenant.name.clone(),
            expires_at: record.expires_at,
        })
    }

    /// Uses the link behind `token`: a new owner key, returned once; the previous owner
    /// key is revoked in the same step. A used, expired or unknown link reveals nothing.
    pub async fn reveal(&self, token: &str) -> Result<RevealedKey> {
        let (record, tenant) = self.link(token, true).await?;
        let label = match record.purpose {
            RevealPurpose::Signup => "signup",
            RevealPurpose::Recover => "recovered",
        };
        let (key, api_key) = self.keys.issue_owner_key(&tenant.id, label).await?;
        tracing::info!(tenant = %tenant.id, key = %key.id, purpose = ?record.purpose, "key revealed");
        Ok(RevealedKey {
            api_key,
            key_id: key.id.clone(),
            tenant_id: tenant.id.clone(),
            tenant_name: tenant.name.clone(),
            email: tenant.email.clone(),
        })
    }

    /// The unexpired link behind `token` and its tenant; `take` removes it from the store
    /// (once: of two concurrent takes one gets it).
    async fn link(&self, token: &str, take: bool) -> Result<(RevealRecord, Arc<TenantRecord>)> {
        if !reveal::plausible_token(token) {
            return Err(Error::RevealLinkInvalid);
        }
        let (store, hash) = (self.store.clone(), reveal::token_hash(token));
        let record = blocking(move || {
            if take {
                store.take_reveal(&hash)
            } else {
                store.reveal(&hash)
            }
        })
        .await?
        .filter(|record| record.expires_at > Utc::now())
        .ok_or(Error::RevealLinkInvalid)?;
        let tenant = self
            .tenants
            .get(&record.tenant_id)
            .map_err(|_| Error::RevealLinkInvalid)?;
        Ok((record, tenant))
    }

    async fn send_link(
        &self,
        queue: &JobQueue<MailDeliveries>,
        tenant: &TenantRecord,
        purpose: RevealPurpose,
    ) -> Result<()> {
        let settings = &self.settings;
        let now_secs = Utc::now().timestamp().max(0) as u64;
        let address = format!("reveal-mail:{}", tenant.email.to_lowercase());
        let allowed = self
            .mail_limiter
            .check(&address, settings.mails_per_address_per_minute, now_secs)
            .map(|decision| decision.allowed)
            .unwrap_or(true);
        if !allowed {
            tracing::warn!(tenant = %tenant.id, "reveal mail dropped: too many for this address this minute");
            return Ok(());
        }
        let token = reveal::new_token();
        let ttl =
            chrono::Duration::from_std(settings.reveal_ttl).unwrap_or(chrono::Duration::hours(1));
        let now = Utc::now();
        let record = RevealRecord {
            token_hash: reveal::token_hash(&token),
            tenant_id: tenant.id.clone(),
            purpose,
            created_at: now,
            expires_at: now + ttl,
        };
        let store = self.store.clone();
        blocking(move || store.put_reveal(&record)).await?;
        let letter = reveal::letter(
            &tenant.email,
            purpose,
            &reveal::link(&settings.public_url, &token),
            settings.reveal_ttl.as_secs() / 60,
            &tenant.name,
        );
        outbox::queue(&self.store, queue, Some(&tenant.id), letter)
            .await
            .map_err(|failure| Error::TaskFailed {
                task: "mail queue",
                reason: failure.detail,
            })?;
        Ok(())
    }

    fn mail_queue(&self) -> Result<&JobQueue<MailDeliveries>> {
        self.mail.as_ref().ok_or(Error::MailNotConfigured)
    }
}

/// What erasure jobs run: taking the tenant out of the running service and deleting its
/// files.
#[async_trait::async_trait]
impl memvault_portability::ErasureSteps for Accounts {
    async fn detach(&self, tenant: &TenantId) {
        self.tenants.detach(tenant).await;
    }

    async fn erase_files(
        &self,
        tenant: &TenantId,
        settings: &memvault_storage::TenantSettings,
    ) -> std::result::Result<usize, memvault_types::Failure> {
        self.placement
            .erase_tenant(tenant, settings.storage.as_ref())
            .await
            .map_err(memvault_types::Failure::from)
    }
}
