//! Billing: Stripe checkout and portal sessions for a tenant, and the signed webhook
//! events that change its tier.
//!
//! - **Checkout** subscribes the tenant to `price_pro`; the session names the tenant in
//!   `client_reference_id` and in the metadata of the session and of the subscription, so
//!   every later event finds it. A tenant that has a Stripe customer checks out as it.
//! - **Portal** opens Stripe's billing portal for the tenant's customer (known from the
//!   first completed checkout).
//! - **Events** are verified (`Stripe-Signature`), handled once by event id, and applied:
//!   `checkout.session.completed` upgrades to the paid tier;
//!   `customer.subscription.created`/`updated` follow the subscription's status (active,
//!   trialing or past due: paid; canceled, unpaid, expired or paused: free);
//!   `customer.subscription.deleted` downgrades. Other types are acknowledged and
//!   ignored. A tenant on another tier (`admin`, a custom one) keeps it; only the billing
//!   record changes.

use std::sync::Arc;

use chrono::Utc;
use memvault_core::{blocking, Agent, Error, Result, Tenants};
use memvault_storage::{BillingRecord, Store, TenantId, TenantRecord, TenantSettings};

use super::signature;
use super::stripe::{Event, ObjectFields, Session, StripeClient, TENANT_METADATA};
use super::BillingSettings;

/// Where a checkout or portal session sends the customer back; `None`: the configured
/// defaults.
#[derive(Debug, Clone, Default)]
pub struct ReturnUrls {
    pub success_url: Option<String>,
    pub cancel_url: Option<String>,
    pub return_url: Option<String>,
}

/// What a webhook event did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventOutcome {
    /// The tenant's billing record (and maybe tier) now reflects the event.
    Applied { tenant: TenantId, tier: String },
    /// This event id was handled before.
    Duplicate,
    /// Acknowledged, nothing to do (another type, or no tenant to match).
    Ignored(String),
}

/// Checkout, portal, webhook events.
#[derive(Clone)]
pub struct Billing {
    tenants: Tenants,
    store: Arc<dyn Store>,
    /// Calls Stripe; `None` without a secret key.
    stripe: Option<Arc<StripeClient>>,
    settings: BillingSettings,
}

impl Billing {
    /// Billing over `tenants`; a Stripe client when `settings` has a secret key.
    pub fn new(
        tenants: Tenants,
        store: Arc<dyn Store>,
        settings: BillingSettings,
    ) -> std::result::Result<Self, String> {
        let stripe = StripeClient::new(&settings)?.map(Arc::new);
        Ok(Self {
            tenants,
            store,
            stripe,
            settings,
        })
    }

    /// A Stripe checkout session for the caller's tenant to subscribe to the paid price.
    pub async fn checkout(&self, agent: &Agent, urls: ReturnUrls) -> Result<Session> {
        let client = self.client()?;
        let settings = &self.settings;
        let price = settings
            .price_pro
            .clone()
            .filter(|price| !price.is_empty())
            .ok_or_else(|| {
                Error::BillingNotConfigured("no price is configured (billing.price_pro)".to_owned())
            })?;
        let tenant = self.tenants.get(&agent.tenant_id)?;
        let tenant_settings = self.tenants.settings(&agent.tenant_id)?;
        let id = tenant.id.to_string();
        let mut form = vec![
            ("mode".to_owned(), "subscription".to_owned()),
            ("line_items[0][price]".to_owned(), price),
            ("line_items[0][quantity]".to_owned(), "1".to_owned()),
            ("client_reference_id".to_owned(), id.clone()),
            (format!("metadata[{TENANT_METADATA}]"), id.clone()),
            (
                format!("subscription_data[metadata][{TENANT_METADATA}]"),
                id,
            ),
            (
                "success_url".to_owned(),
                urls.success_url
                    .unwrap_or_else(|| settings.success_url.clone()),
            ),
            (
                "cancel_url".to_owned(),
                urls.cancel_url
                    .unwrap_or_else(|| settings.cancel_url.clone()),
            ),
        ];
        match tenant_settings
            .billing
            .as_ref()
            .and_then(|billing| billing.customer_id.clone())
        {
            Some(customer) => form.push(("customer".to_owned(), customer)),
            None => form.push(("customer_email".to_owned(), tenant.email.clone())),
        }
        let session = client
            .checkout_session(&form)
            .await
            .map_err(|error| Error::BillingUpstream(error.0))?;
        tracing::info!(tenant = %agent.tenant_id, session = %session.id, "checkout session created");
        Ok(session)
    }

    /// A Stripe billing-portal session for the caller's tenant's customer.
    pub async fn portal(&self, agent: &Agent, urls: ReturnUrls) -> Result<Session> {
        let client = self.client()?;
        let customer = self
            .tenants
            .settings(&agent.tenant_id)?
            .billing
            .as_ref()
            .and_then(|billing| billing.customer_id.clone())
            .ok_or(Error::BillingNoCustomer)?;
        let form = vec![
            ("customer".to_owned(), customer),
            (
                "return_url".to_owned(),
                urls.return_url
                    .unwrap_or_else(|| self.settings.return_url.clone()),
            ),
        ];
        client
            .portal_session(&form)
            .await
            .map_err(|error| Error::BillingUpstream(error.0))
    }

    /// Verifies and applies one webhook delivery (`body` exactly as received).
    pub async fn handle_event(&self, body: &[u8], signature: Option<&str>) -> Result<EventOutcome> {
        let secret = self
            .settings
            .webhook_secret
            .clone()
            .filter(|secret| !secret.is_empty())
            .ok_or_else(|| {
                Error::BillingNotConfigured(
                    "the Stripe webhook has no signing secret (billing.webhook_secret)".to_owned(),
                )
            })?;
        signature::verify(signature, body, &secret, Utc::now().timestamp())
            .map_err(|error| Error::StripeSignatureInvalid(error.to_string()))?;
        let event: Event = serde_json::from_slice(body)
            .map_err(|error| Error::Invalid(format!("the body is not a Stripe event: {error}")))?;
        let store = self.store.clone();
        let id = event.id.clone();
        if !blocking(move || store.record_event_once("stripe", &id, Utc::now())).await? {
            return Ok(EventOutcome::Duplicate);
        }
        match self.apply(&event).await {
            Ok(outcome) => {
                tracing::info!(event = %event.id, kind = %event.kind, ?outcome, "Stripe event handled");
                Ok(outcome)
            }
            Err(error) => {
                // Not handled after all: Stripe's retry must find it new.
                let store = self.store.clone();
                let id = event.id.clone();
                if let Err(forget) = blocking(move || store.forget_event("stripe", &id)).await {
                    tracing::error!(event = %event.id, %forget, "a failed Stripe event could not be forgotten");
                }
                Err(error)
            }
        }
    }

    async fn apply(&self, event: &Event) -> Result<EventOutcome> {
        let settings = &self.settings;
        let fields = ObjectFields::of(&event.data.object);
        let paid = match event.kind.as_str() {
            "checkout.session.completed" => true,
            "customer.subscription.created" | "customer.subscription.updated" => {
                match fields.status.as_deref() {
                    Some("active" | "trialing" | "past_due") => true,
                    Some("canceled" | "unpaid" | "incomplete_expired" | "paused") => false,
                    other => {
                        return Ok(EventOutcome::Ignored(format!(
                            "subscription status {other:?} changes nothing"
                        )))
                    }
                }
            }
            "customer.subscription.deleted" => false,
            other => return Ok(EventOutcome::Ignored(format!("event type {other}"))),
        };
        let Some(tenant) = self.tenant_of(&fields) else {
            return Ok(EventOutcome::Ignored(
                "no tenant matches the event's client_reference_id, metadata or customer"
                    .to_owned(),
            ));
        };
        let status = match event.kind.as_str() {
            "checkout.session.completed" => "active".to_owned(),
            "customer.subscription.deleted" => "canceled".to_owned(),
            _ => fields.status.clone().unwrap_or_default(),
        };
        let event_id = event.id.clone();
        let update = fields.clone();
        let record_event = Box::new(move |current: &TenantSettings| {
            let previous = current.billing.clone();
            Ok(TenantSettings {
                billing: Some(BillingRecord {
                    customer_id: update
                        .customer
                        .or_else(|| previous.as_ref().and_then(|b| b.customer_id.clone())),
                    subscription_id: update
                        .subscription
                        .or_else(|| previous.as_ref().and_then(|b| b.subscription_id.clone())),
                    status,
                    last_event_id: event_id,
                    updated_at: Utc::now(),
                }),
                ..current.clone()
            })
        });
        self.tenants
            .update_settings(&tenant.id, record_event)
            .await?;
        let target = if paid {
            settings.paid_tier.clone()
        } else {
            settings.free_tier.clone()
        };
        let billed_tiers = [settings.paid_tier.clone(), settings.free_tier.clone()];
        let change_tier = Box::new(move |current: &TenantRecord| {
            let mut record = current.clone();
            if billed_tiers.contains(&record.tier) {
                record.tier = target;
            }
            Ok(record)
        });
        let record = self.tenants.update_record(&tenant.id, change_tier).await?;
        Ok(EventOutcome::Applied {
            tenant: tenant.id.clone(),
            tier: record.tier.clone(),
        })
    }

    /// The tenant an event is about: by the id it carries, else by its Stripe customer.
    fn tenant_of(&self, fields: &ObjectFields) -> Option<TenantRecord> {
        if let Some(id) = &fields.tenant {
            if let Ok(record) = self.tenants.get(&TenantId::from_stored(id)) {
                return Some((*record).clone());
            }
        }
        let customer = fields.customer.as_ref()?;
        self.tenants.find(|_, settings| {
            settings
                .billing
                .as_ref()
                .and_then(|billing| billing.customer_id.as_ref())
                == Some(customer)
        })
    }

    fn client(&self) -> Result<&StripeClient> {
        self.stripe.as_deref().ok_or_else(|| {
            Error::BillingNotConfigured(
                "billing is off on this server (no billing.stripe_secret_key)".to_owned(),
            )
        })
    }
}
