//! Billing on Stripe's wire format: checkout and billing-portal sessions (form-encoded
//! calls to `stripe_api_base`), and the signed webhook events that move a tenant between
//! `free` and `pro`.
//!
//! # Layout
//!
//! - [`signature`]: the `Stripe-Signature` header (`t=...,v1=...`, HMAC-SHA256 of
//!   `"{t}.{body}"`, a 5-minute tolerance), checked in constant time.
//! - [`stripe`]: the client (sessions) and the event shapes memvault reads.
//! - [`service`]: [`Billing`], the use cases: checkout, portal, and the events applied
//!   to the tenant's billing record and tier (through core's `Tenants`).

pub mod service;
pub mod signature;
pub mod stripe;

pub use service::{Billing, EventOutcome, ReturnUrls};

use std::time::Duration;

/// Stripe's API root.
pub const STRIPE_API_BASE: &str = "https://api.stripe.com";

/// How billing is set up (config section `[billing]`).
#[derive(Clone)]
pub struct BillingSettings {
    /// Stripe's API root (tests point it at a fake).
    pub api_base: String,
    /// The secret API key (`sk_...`); `None` turns checkout and the portal off (503).
    pub secret_key: Option<String>,
    /// The webhook endpoint's signing secret (`whsec_...`); `None` turns the webhook off
    /// (503).
    pub webhook_secret: Option<String>,
    /// The price a checkout subscribes to (`price_...`).
    pub price_pro: Option<String>,
    /// The tier a paid subscription gives, and the one its end returns to.
    pub paid_tier: String,
    pub free_tier: String,
    /// Where Stripe sends the customer after a checkout, and from the portal.
    pub success_url: String,
    pub cancel_url: String,
    pub return_url: String,
    /// One call to Stripe.
    pub timeout: Duration,
}

impl std::fmt::Debug for BillingSettings {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("BillingSettings")
            .field("api_base", &self.api_base)
            .field(
                "secret_key",
                &self.secret_key.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "webhook_secret",
                &self.webhook_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("price_pro", &self.price_pro)
            .finish_non_exhaustive()
    }
}

impl Default for BillingSettings {
    fn default() -> Self {
        Self {
            api_base: STRIPE_API_BASE.to_owned(),
            secret_key: None,
            webhook_secret: None,
            price_pro: None,
            paid_tier: "pro".to_owned(),
            free_tier: "free".to_owned(),
            success_url: "http://127.0.0.1:8420/".to_owned(),
            cancel_url: "http://127.0.0.1:8420/".to_owned(),
            return_url: "http://127.0.0.1:8420/".to_owned(),
            timeout: Duration::from_secs(20),
        }
    }
}
