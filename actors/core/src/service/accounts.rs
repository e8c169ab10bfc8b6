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
use memvault_accounts::{outbox, reveal};
use memvault_files::TenantStores;
use memvault_storage::crypto::SecretBox;
use memvault_storage::{ApiKeyRecord, RevealPurpose, RevealRecord, Store, TenantId, TenantRecord};
use memvault_types::rate_limit::RateLimiter;

use super::quotas::Quotas;
use super::tree::Tree;
use super::{ErasureQueue, MailQueue, NewTenant, Tenants};
use crate::agent::{generate_key_secret, new_key_record, Agent, KeyRole};
use crate::audit::AuditLog;
use crate::call::blocking;
use crate::error::{Error, Result};
use crate::tenant::TenantMessage;

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
    pub(super) tree: Tree,
    pub(super) store: Arc<dyn Store>,
    pub(super) tenants: Tenants,
    pub(super) quotas: Quotas,
    pub(super) stores: Arc<TenantStores>,
    /// Opens the credentials of tenants' own buckets (erasure empties them).
    pub(super) secrets: Option<Arc<SecretBox>>,
    pub(super) audit: Arc<AuditLog>,
    pub(super) erasure: ErasureQueue,
    pub(super) mail: Option<MailQueue>,
    pub(super) settings: crate::account::AccountSettings,
    /// Serializes signups, so one email never gets two tenants.
    pub(super) signups: Arc<tokio::sync::Mutex<()>>,
    /// Reveal mails per address per minute.
    pub(super) mail_limiter: Arc<memvault_types::rate_limit::FixedWindowLimiter>,
}

impl Accounts {
    /// Signs `email` up: a new `free` tenant and a mailed reveal link, or nothing at all
    /// when the email has a tenant already (one per email; the answer does not say).
    pub async fn signup(&self, email: &str) -> Result<()> {
        let queue = self.mail_queue()?;
        let created = {
            // One signup at a time: two concurrent signups of one email make one tenant.
            let _serial = self.signups.lock().await;
            if self.tree.tenant_by_email(email).is_some() {
                tracing::info!("signup for an email that has a tenant; nothing sent");
                return Ok(());
            }
            let new = NewTenant {
                name: email.to_owned(),
                email: email.to_owned(),
                tier: "free".to_owned(),
                admin: false,
            };
            let (record, _unseen_key) = self.tenants.create(new).await?;
            record
        };
        tracing::info!(tenant = %created.id, "tenant signed up");
        self.send_link(queue, &created, RevealPurpose::Signup).await
    }

    /// Mails a reveal link for a new owner key to `email` when it has a tenant; otherwise
    /// does nothing. Either way the caller answers the same.
    pub async fn recover(&self, email: &str) -> Result<()> {
        let queue = self.mail_queue()?;
        match self.tree.tenant_by_email(email) {
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
        self.tree
            .call_tenant(&record.id, |reply| TenantMessage::UpdateRecord {
                change: Box::new(move |current: &TenantRecord| {
                    Ok(TenantRecord {
                        erasing_since: Some(since),
                        ..current.clone()
                    })
                }),
                reply,
            })
            .await?;
        self.detach_tenant(&record.id).await;
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
        let (key, api_key) = self.new_owner_key(&tenant, record.purpose).await?;
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

    /// A new owner key replacing the active one (rotation: the old one dies as the new
    /// one is stored), or added when the tenant has no active owner key.
    async fn new_owner_key(
        &self,
        tenant: &TenantRecord,
        purpose: RevealPurpose,
    ) -> Result<(Arc<ApiKeyRecord>, String)> {
        let now = Utc::now();
        let current = self
            .tree
            .tenant_handle(&tenant.id)?
            .snapshot()
            .keys
            .values()
            .filter(|key| key.owner && key.is_active(now))
            .min_by_key(|key| key.created_at)
            .cloned();
        let secret = generate_key_secret();
        let label = match purpose {
            RevealPurpose::Signup => "signup",
            RevealPurpose::Recover => "recovered",
        };
        let new = new_key_record(&tenant.id, label, KeyRole::Owner, &secret, None);
        let key = match current {
            Some(current) => {
                let key_id = current.id.clone();
                self.tree
                    .call_tenant(&tenant.id, |reply| TenantMessage::RotateKey {
                        key_id,
                        new: Box::new(new),
                        reply,
                    })
                    .await?
            }
            None => {
                self.tree
                    .call_tenant(&tenant.id, |reply| TenantMessage::AddKey {
                        key: new,
                        reply,
                    })
                    .await?
            }
        };
        Ok((key, secret))
    }

    async fn send_link(
        &self,
        queue: &memvault_jobs::JobQueue<outbox::MailDeliveries>,
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

    fn mail_queue(&self) -> Result<&memvault_jobs::JobQueue<outbox::MailDeliveries>> {
        self.mail.as_ref().ok_or(Error::MailNotConfigured)
    }
}

impl Accounts {
    /// Takes a tenant out of the running service: handle, actors, keys, its opened
    /// buckets and its counted bytes.
    async fn detach_tenant(&self, tenant: &TenantId) {
        self.tree.remove_tenant(tenant).await;
        self.stores.forget(tenant);
        self.quotas.forget(tenant);
        // Entries queued before the detach are written now, so the erasure removes them.
        self.audit.flush().await;
    }
}

/// What erasure jobs run: taking the tenant out of the running service and deleting its
/// files.
#[async_trait::async_trait]
impl memvault_portability::ErasureSteps for Accounts {
    async fn detach(&self, tenant: &TenantId) {
        self.detach_tenant(tenant).await;
    }

    async fn erase_files(
        &self,
        tenant: &TenantId,
        settings: &memvault_storage::TenantSettings,
    ) -> std::result::Result<usize, memvault_types::Failure> {
        let mut erased = self
            .stores
            .platform()
            .delete_tenant(tenant)
            .await
            .map_err(|error| memvault_types::Failure::from(Error::Blobs(error.to_string())))?;
        if let Some(config) = &settings.storage {
            // The tenant's own bucket: its files go too, when it can still be reached; a
            // bucket gone or no longer ours must not hold the erasure up.
            match self
                .stores
                .active(tenant, Some(config), self.secrets.as_deref())
            {
                Ok(placed) => match placed.store.delete_tenant(tenant).await {
                    Ok(count) => erased += count,
                    Err(error) => {
                        tracing::warn!(tenant = %tenant, %error, "the tenant's own bucket could not be emptied")
                    }
                },
                Err(error) => {
                    tracing::warn!(tenant = %tenant, %error, "the tenant's own bucket could not be opened")
                }
            }
            self.stores.forget(tenant);
        }
        Ok(erased)
    }
}
