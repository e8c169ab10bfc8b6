//! One delivery attempt: a signed POST of the stored body to the tenant's URL.

use std::error::Error as StdError;

use memvault_storage::OutboxDelivery;
use reqwest::header::{CONTENT_TYPE, USER_AGENT};

use super::guard::{self, GuardedResolver};
use super::sign::signature;
use super::WebhookSettings;

pub const SIGNATURE_HEADER: &str = "X-Service-Signature";
pub const EVENT_HEADER: &str = "X-Service-Event";
pub const DELIVERY_HEADER: &str = "X-Service-Delivery";
pub const WEBHOOK_USER_AGENT: &str = "memvault-webhooks/0.1";

/// The HTTP client every delivery goes through: a total timeout per attempt, no proxy
/// (a proxy would resolve the host itself, past the guard), and, unless private targets
/// are allowed, the guarded resolver and redirect policy.
#[derive(Clone)]
pub struct DeliveryClient {
    http: reqwest::Client,
    /// Mirrors `webhooks.allow_private_targets`: skip the SSRF guard.
    allow_private: bool,
}

impl DeliveryClient {
    pub fn new(settings: &WebhookSettings) -> Result<Self, String> {
        let mut builder = reqwest::Client::builder()
            .timeout(settings.timeout)
            .no_proxy()
            .redirect(guard::redirect_policy(settings.allow_private_targets));
        if !settings.allow_private_targets {
            builder = builder.dns_resolver(std::sync::Arc::new(GuardedResolver));
        }
        let http = builder
            .build()
            .map_err(|error| format!("webhook client could not be built: {error}"))?;
        Ok(Self {
            http,
            allow_private: settings.allow_private_targets,
        })
    }

    /// POSTs `delivery.body` to `url`, signed with `secret`. A 2xx answer is delivered;
    /// any other answer, a transport error or a refusal of the guard is a failure whose
    /// reason is returned.
    pub async fn deliver(
        &self,
        url: &str,
        secret: &str,
        delivery: &OutboxDelivery,
    ) -> Result<(), String> {
        let target = guard::parse_target(url)?;
        if !self.allow_private {
            guard::check_host_literal(&target)?;
        }
        let response = self
            .http
            .post(target)
            .header(CONTENT_TYPE, "application/json")
            .header(USER_AGENT, WEBHOOK_USER_AGENT)
            .header(
                SIGNATURE_HEADER,
                signature(secret.as_bytes(), delivery.body.as_bytes()),
            )
            .header(EVENT_HEADER, &delivery.event)
            .header(DELIVERY_HEADER, &delivery.id)
            .body(delivery.body.clone())
            .send()
            .await
            .map_err(|error| with_causes(&error))?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("the receiver answered {status}"))
        }
    }
}

/// An error and its causes in one line: reqwest's own message alone ("error sending
/// request") does not say what went wrong.
fn with_causes(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}
