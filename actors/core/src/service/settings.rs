//! Per-tenant settings: the bring-your-own extraction LLM and the monthly spend cap.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use memvault_files::TenantStores;
use memvault_llm::self_test;
use memvault_storage::{ExtractionLlmRecord, Store, TenantId, TenantSettings, UsageRow};
use memvault_webhooks::WebhookSettings;

use super::intelligence::{month_of, Purpose};
use super::tree::Tree;
use super::{ExtractionQueue, Llms};
use crate::error::{Error, Result};
use crate::tenant::TenantMessage;

/// A tenant's own extraction LLM as shown to it: never the key.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractionLlmView {
    pub provider: String,
    pub base_url: String,
    pub model: String,
    pub updated_at: DateTime<Utc>,
}

/// What `PUT /v1/memory/extraction/config` carries, validated.
#[derive(Debug, Clone)]
pub struct ExtractionLlmInput {
    pub provider: String,
    pub base_url: String,
    pub model: String,
    pub api_key: String,
}

/// The cap and this month's spend.
#[derive(Debug, Clone)]
pub struct SpendView {
    pub monthly_usd: Option<f64>,
    pub month: String,
    /// Platform LLM spend this month (what the cap limits).
    pub spent_usd: f64,
    pub usage: Vec<UsageRow>,
}

impl From<&ExtractionLlmRecord> for ExtractionLlmView {
    fn from(record: &ExtractionLlmRecord) -> Self {
        Self {
            provider: record.provider.clone(),
            base_url: record.base_url.clone(),
            model: record.model.clone(),
            updated_at: record.updated_at,
        }
    }
}

/// The tenant's settings: the extraction LLM, the spend cap, the webhook.
#[derive(Clone)]
pub struct Settings {
    pub(super) tree: Tree,
    pub(super) store: Arc<dyn Store>,
    pub(super) llms: Llms,
    /// Resumed when a tenant's LLM settings change (the cause of its failures may be gone).
    pub(super) extraction: ExtractionQueue,
    pub(super) webhooks: WebhookSettings,
    /// Recent webhook delivery attempts, as the delivery job kind notes them.
    pub(super) delivery_log: memvault_webhooks::DeliveryLog,
    pub(super) stores: Arc<TenantStores>,
    /// Let a tenant's own bucket be on a private address (off by default: SSRF).
    pub(super) allow_private_buckets: bool,
    /// Tenants' own databases; `None` when the server does not offer them.
    pub(super) databases: Option<super::database::TenantDatabases>,
    /// Where switches to and from them run.
    pub(super) database_queue: Option<super::database::DatabaseQueue>,
}

impl Settings {
    /// Fails with `tenant_not_found` when the tenant is unknown (or being erased).
    pub fn check_tenant(&self, tenant: &TenantId) -> Result<()> {
        self.tree.tenant_handle(tenant).map(drop)
    }

    /// Who may send mail to the tenant's drop address: its list, or the account email
    /// when it never set one.
    pub fn email_senders(&self, tenant: &TenantId) -> Result<Vec<String>> {
        let snapshot = self.tree.tenant_handle(tenant)?.snapshot();
        Ok(match &snapshot.settings.email_senders {
            Some(senders) => senders.clone(),
            None => vec![snapshot.record.email.trim().to_ascii_lowercase()],
        })
    }

    pub fn extraction_llm(&self, tenant: &TenantId) -> Result<Option<ExtractionLlmView>> {
        let settings = self.tree.tenant_handle(tenant)?.snapshot().settings.clone();
        Ok(settings
            .extraction_llm
            .as_ref()
            .map(ExtractionLlmView::from))
    }

    /// Calls the LLM once (a live self-test) and saves it only when that works.
    pub async fn set_extraction_llm(
        &self,
        tenant: &TenantId,
        input: ExtractionLlmInput,
    ) -> Result<ExtractionLlmView> {
        let intelligence = self.llms.intelligence();
        let sealed = intelligence.secrets()?.seal(input.api_key.as_bytes());
        let client = intelligence.own_client(&input.base_url, &input.model, &input.api_key)?;
        let usage = self_test(&client)
            .await
            .map_err(|error| Error::LlmSelfTestFailed(error.to_string()))?;
        self.llms
            .record_usage(tenant, Purpose::Extract, &input.model, true, usage)
            .await;
        let record = ExtractionLlmRecord {
            provider: input.provider,
            base_url: input.base_url,
            model: input.model,
            api_key_sealed: sealed,
            updated_at: Utc::now(),
        };
        let view = ExtractionLlmView::from(&record);
        self.update_settings(tenant, move |settings| TenantSettings {
            extraction_llm: Some(record),
            ..settings.clone()
        })
        .await?;
        let _ = self.extraction.resume(tenant.as_str());
        Ok(view)
    }

    /// Reverts to the platform default; false when nothing was configured.
    pub async fn clear_extraction_llm(&self, tenant: &TenantId) -> Result<bool> {
        let had = self.extraction_llm(tenant)?.is_some();
        self.update_settings(tenant, |settings| TenantSettings {
            extraction_llm: None,
            ..settings.clone()
        })
        .await?;
        self.llms.intelligence().forget_own(tenant);
        let _ = self.extraction.resume(tenant.as_str());
        Ok(had)
    }

    pub async fn spend(&self, tenant: &TenantId) -> Result<SpendView> {
        let settings = self.tree.tenant_handle(tenant)?.snapshot().settings.clone();
        let usage = self.llms.usage_this_month(tenant).await?;
        Ok(SpendView {
            monthly_usd: settings.spend_cap_usd,
            month: month_of(self.tree.now()),
            spent_usd: usage
                .iter()
                .filter(|row| !row.own_llm)
                .map(|row| row.cost_usd)
                .sum(),
            usage,
        })
    }

    /// The tenant's LLM usage rows of each of the last `days` days (today included),
    /// oldest first.
    pub async fn usage_by_day(
        &self,
        tenant: &TenantId,
        days: u32,
    ) -> Result<Vec<(chrono::NaiveDate, Vec<memvault_storage::UsageRow>)>> {
        self.tree.tenant_handle(tenant)?;
        self.llms.usage_by_day(tenant, days).await
    }

    pub async fn set_spend_cap(
        &self,
        tenant: &TenantId,
        monthly_usd: Option<f64>,
    ) -> Result<SpendView> {
        if let Some(cap) = monthly_usd {
            if !cap.is_finite() || cap < 0.0 {
                return Err(Error::Invalid(
                    "monthly_usd must be a non-negative number or null".to_owned(),
                ));
            }
        }
        self.update_settings(tenant, move |settings| TenantSettings {
            spend_cap_usd: monthly_usd,
            ..settings.clone()
        })
        .await?;
        self.spend(tenant).await
    }

    pub async fn update_settings(
        &self,
        tenant: &TenantId,
        change: impl FnOnce(&TenantSettings) -> TenantSettings + Send + 'static,
    ) -> Result<()> {
        self.tree
            .call_tenant(tenant, |reply| TenantMessage::UpdateSettings {
                change: Box::new(move |settings| Ok(change(settings))),
                reply,
            })
            .await
            .map(drop)
    }
}
