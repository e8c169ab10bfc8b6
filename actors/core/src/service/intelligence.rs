//! Which LLM serves a tenant's call, what it costs, and the monthly spend cap.
//!
//! The platform LLM comes from the service's configuration and is billed against each
//! tenant's cap. A tenant may bring its own extraction LLM: it serves that tenant's
//! extraction, is never capped, and its API key is kept sealed by the service's
//! [`SecretBox`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use dashmap::DashMap;
use memvault_llm::{Llm, LlmConfig, OpenAiClient, TokenUsage};
use memvault_storage::crypto::SecretBox;
use memvault_storage::{ExtractionLlmRecord, Store, TenantId, UsageRow};

use super::tree::Tree;
use crate::call::blocking;
use crate::error::{Error, Result};

/// Dollars per million tokens of one model.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ModelPrice {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl ModelPrice {
    pub fn cost(&self, usage: &TokenUsage) -> f64 {
        (usage.prompt_tokens as f64 * self.input_per_million
            + usage.completion_tokens as f64 * self.output_per_million)
            / 1_000_000.0
    }
}

/// The LLM side of the service configuration.
#[derive(Clone, Default)]
pub struct IntelligenceConfig {
    /// The platform LLM; `None` = the rule-based extractor, extractive profiles, and
    /// search's rewrite and rerank skipped.
    pub platform: Option<LlmConfig>,
    /// Prices by model name; a model without a price costs nothing (and says so).
    pub prices: HashMap<String, ModelPrice>,
    /// Seals tenants' LLM keys; `None` refuses bring-your-own configuration.
    pub secrets: Option<Arc<SecretBox>>,
    /// Timeout of calls to tenants' own LLMs.
    pub own_llm_timeout: Duration,
}

impl std::fmt::Debug for IntelligenceConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("IntelligenceConfig")
            .field("platform_model", &self.platform.as_ref().map(|c| &c.model))
            .field("prices", &self.prices)
            .field("secrets", &self.secrets.is_some())
            .finish()
    }
}

/// What an LLM call is for; usage is accounted per purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Purpose {
    Extract,
    Rewrite,
    Rerank,
    Profile,
    Summary,
    Proxy,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Extract => "extract",
            Self::Rewrite => "rewrite",
            Self::Rerank => "rerank",
            Self::Profile => "profile",
            Self::Summary => "summary",
            Self::Proxy => "proxy",
        }
    }
}

/// The LLM a call goes to, or why there is none.
#[derive(Clone)]
pub enum LlmChoice {
    /// The tenant's own extraction LLM (never capped).
    Own(Arc<dyn Llm>),
    Platform(Arc<dyn Llm>),
    /// The platform LLM exists but the tenant reached its monthly cap.
    OverCap {
        cap_usd: f64,
    },
    /// No LLM is configured.
    Unconfigured,
}

impl LlmChoice {
    pub fn llm(&self) -> Option<&Arc<dyn Llm>> {
        match self {
            Self::Own(llm) | Self::Platform(llm) => Some(llm),
            Self::OverCap { .. } | Self::Unconfigured => None,
        }
    }

    pub fn is_own(&self) -> bool {
        matches!(self, Self::Own(_))
    }

    /// Why no LLM serves the call, for `skipped` notes.
    pub fn absence(&self) -> Option<String> {
        match self {
            Self::Own(_) | Self::Platform(_) => None,
            Self::OverCap { cap_usd } => Some(format!(
                "the monthly LLM spend cap (${cap_usd:.2}) is reached"
            )),
            Self::Unconfigured => Some("no LLM is configured".to_owned()),
        }
    }
}

pub(crate) struct Intelligence {
    config: IntelligenceConfig,
    platform: Option<Arc<dyn Llm>>,
    /// Clients of tenants' own LLMs, rebuilt when the tenant changes its configuration.
    own: DashMap<TenantId, (DateTime<Utc>, Arc<dyn Llm>)>,
}

impl Intelligence {
    pub(crate) fn new(config: IntelligenceConfig) -> Result<Self> {
        let platform = match &config.platform {
            Some(llm) => Some(Arc::new(OpenAiClient::new(llm.clone()).map_err(|error| {
                Error::LlmConfigInvalid {
                    what: "the platform LLM",
                    reason: error.to_string(),
                }
            })?) as Arc<dyn Llm>),
            None => None,
        };
        Ok(Self {
            config,
            platform,
            own: DashMap::new(),
        })
    }

    pub(crate) fn secrets(&self) -> Result<&SecretBox> {
        self.config
            .secrets
            .as_deref()
            .ok_or_else(|| Error::EncryptionKeyMissing)
    }

    pub(crate) fn own_client(
        &self,
        base_url: &str,
        model: &str,
        api_key: &str,
    ) -> Result<OpenAiClient> {
        OpenAiClient::new(LlmConfig {
            timeout: self.config.own_llm_timeout,
            ..LlmConfig::new(base_url, model, Some(api_key.to_owned()))
        })
        .map_err(|error| Error::LlmConfigInvalid {
            what: "the LLM client",
            reason: error.to_string(),
        })
    }

    pub(crate) fn forget_own(&self, tenant: &TenantId) {
        self.own.remove(tenant);
    }

    fn price(&self, model: &str) -> ModelPrice {
        self.config.prices.get(model).copied().unwrap_or_default()
    }

    /// Whether `[llm.prices]` lists the model (so its calls count against spend caps).
    pub(crate) fn has_price(&self, model: &str) -> bool {
        self.config.prices.contains_key(model)
    }
}

pub(crate) fn month_of(at: DateTime<Utc>) -> String {
    at.format("%Y-%m").to_string()
}

/// The usage period of one day: `YYYY-MM-DD`, UTC.
pub(crate) fn day_of(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d").to_string()
}

/// The LLMs a tenant's calls go to, and their usage against its spend cap.
#[derive(Clone)]
pub struct Llms {
    intelligence: Arc<Intelligence>,
    store: Arc<dyn Store>,
    tree: Tree,
}

impl Llms {
    pub(crate) fn new(intelligence: Intelligence, store: Arc<dyn Store>, tree: Tree) -> Self {
        Self {
            intelligence: Arc::new(intelligence),
            store,
            tree,
        }
    }

    /// The configured LLMs, prices and the key that seals tenants' credentials.
    pub(crate) fn intelligence(&self) -> &Intelligence {
        &self.intelligence
    }

    /// Whether a platform LLM is configured.
    pub fn has_platform_llm(&self) -> bool {
        self.intelligence.platform.is_some()
    }

    /// The LLM for a tenant's call: its own extraction LLM for extraction and the chat
    /// proxy, else the platform LLM unless the tenant is over its cap.
    pub(crate) async fn llm_for(&self, tenant: &TenantId, purpose: Purpose) -> Result<LlmChoice> {
        let settings = self.tree.tenant_handle(tenant)?.snapshot().settings.clone();
        if matches!(purpose, Purpose::Extract | Purpose::Proxy) {
            if let Some(own) = &settings.extraction_llm {
                return Ok(LlmChoice::Own(self.own_llm(tenant, own)?));
            }
        }
        let Some(platform) = self.intelligence.platform.clone() else {
            return Ok(LlmChoice::Unconfigured);
        };
        if let Some(cap_usd) = settings.spend_cap_usd {
            if self.platform_spend(tenant).await? >= cap_usd {
                return Ok(LlmChoice::OverCap { cap_usd });
            }
        }
        Ok(LlmChoice::Platform(platform))
    }

    fn own_llm(&self, tenant: &TenantId, record: &ExtractionLlmRecord) -> Result<Arc<dyn Llm>> {
        let intelligence = &self.intelligence;
        if let Some(entry) = intelligence.own.get(tenant) {
            if entry.0 == record.updated_at {
                return Ok(entry.1.clone());
            }
        }
        let key = intelligence
            .secrets()?
            .open(&record.api_key_sealed)
            .map_err(|error| Error::LlmKeyUnreadable {
                reason: format!("cannot be decrypted (was the encryption key changed?): {error}"),
            })?;
        let key = String::from_utf8(key).map_err(|_| Error::LlmKeyUnreadable {
            reason: "is not text".to_owned(),
        })?;
        let client: Arc<dyn Llm> =
            Arc::new(intelligence.own_client(&record.base_url, &record.model, &key)?);
        intelligence
            .own
            .insert(tenant.clone(), (record.updated_at, client.clone()));
        Ok(client)
    }

    /// Accounts one call's tokens (and their estimated cost) to the tenant.
    pub(crate) async fn record_usage(
        &self,
        tenant: &TenantId,
        purpose: Purpose,
        model: &str,
        own_llm: bool,
        usage: TokenUsage,
    ) {
        let now = self.tree.now();
        let row = UsageRow {
            month: month_of(now),
            purpose: purpose.as_str().to_owned(),
            model: model.to_owned(),
            own_llm,
            calls: 1,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cost_usd: self.intelligence.price(model).cost(&usage),
        };
        // The same counts again under the day, for usage by day: the month's rows alone
        // decide the spend cap.
        let day = UsageRow {
            month: day_of(now),
            ..row.clone()
        };
        let (store, tenant) = (self.store.clone(), tenant.clone());
        let outcome = tokio::task::spawn_blocking(move || {
            store.add_usage(&tenant, &row)?;
            store.add_usage(&tenant, &day)
        })
        .await;
        if !matches!(outcome, Ok(Ok(()))) {
            tracing::warn!(
                purpose = purpose.as_str(),
                "LLM usage could not be recorded"
            );
        }
    }

    /// Platform LLM dollars the tenant spent this month.
    pub async fn platform_spend(&self, tenant: &TenantId) -> Result<f64> {
        let rows = self.usage_this_month(tenant).await?;
        Ok(rows
            .iter()
            .filter(|row| !row.own_llm)
            .map(|row| row.cost_usd)
            .sum())
    }

    /// The tenant's LLM usage rows of each of the last `days` days (today included),
    /// oldest first; a day without calls has no rows.
    pub async fn usage_by_day(
        &self,
        tenant: &TenantId,
        days: u32,
    ) -> Result<Vec<(chrono::NaiveDate, Vec<UsageRow>)>> {
        let today = self.tree.now().date_naive();
        let (store, tenant) = (self.store.clone(), tenant.clone());
        blocking(move || {
            (0..days)
                .rev()
                .map(|back| {
                    let day = today - chrono::Duration::days(i64::from(back));
                    let rows = store.usage(&tenant, &day.format("%Y-%m-%d").to_string())?;
                    Ok((day, rows))
                })
                .collect()
        })
        .await
    }

    /// The tenant's LLM usage rows of the current month.
    pub async fn usage_this_month(&self, tenant: &TenantId) -> Result<Vec<UsageRow>> {
        let (store, tenant, month) = (
            self.store.clone(),
            tenant.clone(),
            month_of(self.tree.now()),
        );
        blocking(move || store.usage(&tenant, &month)).await
    }
}
