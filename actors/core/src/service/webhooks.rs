//! A tenant's outbound webhook: where memory events are POSTed, and the secret they are
//! signed with (generated here, shown once, stored sealed).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use dashmap::DashMap;
use memvault_storage::{OutboxDelivery, TenantId, TenantSettings, WebhookRecord};
use memvault_webhooks::guard::{check_target, parse_target};
use memvault_webhooks::{AttemptRecord, WebhookDirectory};
use rand::RngCore;

use super::Settings;
use crate::call::blocking;
use crate::error::{Error, Result};
use crate::tenant::{TenantHandle, TenantMessage};

/// The webhooks as the tenant actors last published them, for webhook delivery.
pub(crate) struct PublishedWebhooks {
    pub tenants: Arc<DashMap<TenantId, Arc<TenantHandle>>>,
    /// Several nodes: which tenants this node serves (their deliveries are sent here).
    pub ownership: Option<Arc<dyn crate::cluster::TenantOwnership>>,
}

impl WebhookDirectory for PublishedWebhooks {
    fn serves(&self, tenant: &TenantId) -> bool {
        self.ownership
            .as_ref()
            .is_none_or(|ownership| ownership.holds(tenant) && self.tenants.contains_key(tenant))
    }

    fn webhook(&self, tenant: &TenantId) -> Option<WebhookRecord> {
        self.tenants
            .get(tenant)
            .and_then(|handle| handle.snapshot().settings.webhook.clone())
    }
}

/// The prefix of every signing secret, so a leaked one is recognisable.
pub const SECRET_PREFIX: &str = "whsec_";
/// Random bytes in a signing secret (hex-encoded after the prefix).
const SECRET_BYTES: usize = 32;

/// A webhook as shown to its tenant: never the secret.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookView {
    pub url: String,
    pub created_at: DateTime<Utc>,
}

/// A webhook just configured, with its signing secret (shown this once).
#[derive(Debug, Clone)]
pub struct NewWebhook {
    pub view: WebhookView,
    /// `whsec_` + 64 hex characters. The HMAC key is this whole text, prefix included.
    pub secret: String,
}

impl From<&WebhookRecord> for WebhookView {
    fn from(record: &WebhookRecord) -> Self {
        Self {
            url: record.url.clone(),
            created_at: record.created_at,
        }
    }
}

/// What became of a tenant's webhook events: attempts, and what is still to be sent.
#[derive(Debug, Clone)]
pub struct WebhookDeliveriesView {
    /// The last attempts on this node, newest first (at most
    /// [`memvault_webhooks::RECENT_ATTEMPTS`]).
    pub recent: Vec<AttemptRecord>,
    /// Deliveries waiting for their first or next attempt, oldest first.
    pub pending: Vec<OutboxDelivery>,
}

impl Settings {
    pub fn webhook_config(&self, tenant: &TenantId) -> Result<Option<WebhookView>> {
        let settings = self.tree.tenant_handle(tenant)?.snapshot().settings.clone();
        Ok(settings.webhook.as_ref().map(WebhookView::from))
    }

    /// Sets (or replaces) the tenant's webhook with a fresh signing secret. The URL must
    /// be http(s) with a host and, unless private targets are allowed, must not be or
    /// resolve to a loopback, private, link-local or metadata address (`WebhookTargetRejected`, 422).
    /// Deliveries already queued go to the new URL, signed with the new secret.
    pub async fn set_webhook(&self, tenant: &TenantId, url: &str) -> Result<NewWebhook> {
        let target = parse_target(url).map_err(Error::WebhookTargetRejected)?;
        check_target(&target, self.webhooks.allow_private_targets)
            .await
            .map_err(Error::WebhookTargetRejected)?;
        let secrets = self.llms.intelligence().secrets()?;
        let mut random = [0_u8; SECRET_BYTES];
        rand::thread_rng().fill_bytes(&mut random);
        let secret = format!("{SECRET_PREFIX}{}", hex::encode(random));
        let record = WebhookRecord {
            url: target.to_string(),
            secret_sealed: secrets.seal_str(&secret),
            created_at: self.tree.now(),
        };
        let view = WebhookView::from(&record);
        self.change_webhook(tenant, Some(record)).await?;
        Ok(NewWebhook { view, secret })
    }

    /// Removes the tenant's webhook and drops its pending deliveries; false when none
    /// was configured.
    pub async fn delete_webhook(&self, tenant: &TenantId) -> Result<bool> {
        let had = self.webhook_config(tenant)?.is_some();
        if had {
            self.change_webhook(tenant, None).await?;
        }
        let (store, owner) = (self.store.clone(), tenant.clone());
        let dropped = blocking(move || store.delete_deliveries_of(&owner)).await?;
        self.delivery_log.forget(tenant);
        if dropped > 0 {
            tracing::info!(%tenant, deliveries = dropped, "webhook deleted; pending deliveries dropped");
        }
        Ok(had)
    }

    /// The tenant's recent delivery attempts on this node, newest first, and the
    /// deliveries still in its outbox, oldest first.
    pub async fn webhook_deliveries(&self, tenant: &TenantId) -> Result<WebhookDeliveriesView> {
        self.check_tenant(tenant)?;
        let (store, owner) = (self.store.clone(), tenant.clone());
        let mut pending: Vec<OutboxDelivery> = blocking(move || store.pending_deliveries())
            .await?
            .into_iter()
            .filter(|delivery| delivery.tenant_id == owner)
            .collect();
        pending.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(WebhookDeliveriesView {
            recent: self.delivery_log.recent(tenant),
            pending,
        })
    }

    /// Stores and publishes the tenant's webhook through its actor, leaving every other
    /// setting as it is then.
    async fn change_webhook(
        &self,
        tenant: &TenantId,
        webhook: Option<WebhookRecord>,
    ) -> Result<()> {
        self.tree
            .call_tenant(tenant, |reply| TenantMessage::UpdateSettings {
                change: Box::new(move |settings| {
                    Ok(TenantSettings {
                        webhook,
                        ..settings.clone()
                    })
                }),
                reply,
            })
            .await
            .map(drop)
    }
}
