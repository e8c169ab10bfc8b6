//! The Stripe calls memvault makes (form-encoded POSTs with the secret key as a bearer
//! token, as Stripe's API takes them) and the event fields it reads.

use serde::Deserialize;
use serde_json::Value;

use super::BillingSettings;

/// A checkout or billing-portal session: where to send the customer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Session {
    pub id: String,
    pub url: String,
}

/// A webhook event: its id (the idempotency key), type and object.
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub data: EventData,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EventData {
    pub object: Value,
}

/// The metadata key that names the tenant on sessions and subscriptions.
pub const TENANT_METADATA: &str = "tenant_id";

/// The fields of an event's object that billing reads (a checkout session or a
/// subscription); absent ones are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectFields {
    /// `client_reference_id`, else `metadata.tenant_id`.
    pub tenant: Option<String>,
    /// `customer` (an id, or an expanded object's id).
    pub customer: Option<String>,
    /// `subscription` of a session, or the `id` of a subscription.
    pub subscription: Option<String>,
    /// `status` of a subscription (`active`, `canceled`, ...), or of a session.
    pub status: Option<String>,
}

impl ObjectFields {
    pub fn of(object: &Value) -> Self {
        let text = |value: &Value| match value {
            Value::String(text) if !text.is_empty() => Some(text.clone()),
            Value::Object(expanded) => expanded
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            _ => None,
        };
        let is_subscription = object.get("object").and_then(Value::as_str) == Some("subscription");
        Self {
            tenant: object
                .get("client_reference_id")
                .and_then(text)
                .or_else(|| {
                    object
                        .get("metadata")
                        .and_then(|metadata| metadata.get(TENANT_METADATA))
                        .and_then(text)
                }),
            customer: object.get("customer").and_then(text),
            subscription: if is_subscription {
                object.get("id").and_then(text)
            } else {
                object.get("subscription").and_then(text)
            },
            status: object.get("status").and_then(text),
        }
    }
}

/// Stripe answered with an error, or not at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StripeError(pub String);

/// Calls Stripe's API with the secret key.
#[derive(Clone)]
pub struct StripeClient {
    http: reqwest::Client,
    base: String,
    secret_key: String,
}

impl StripeClient {
    /// `None` when no secret key is configured.
    pub fn new(settings: &BillingSettings) -> Result<Option<Self>, String> {
        let Some(secret_key) = settings.secret_key.clone().filter(|key| !key.is_empty()) else {
            return Ok(None);
        };
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .build()
            .map_err(|error| error.to_string())?;
        Ok(Some(Self {
            http,
            base: settings.api_base.trim_end_matches('/').to_owned(),
            secret_key,
        }))
    }

    /// `POST /v1/checkout/sessions`.
    pub async fn checkout_session(
        &self,
        form: &[(String, String)],
    ) -> Result<Session, StripeError> {
        self.post("/v1/checkout/sessions", form).await
    }

    /// `POST /v1/billing_portal/sessions`.
    pub async fn portal_session(&self, form: &[(String, String)]) -> Result<Session, StripeError> {
        self.post("/v1/billing_portal/sessions", form).await
    }

    async fn post(&self, path: &str, form: &[(String, String)]) -> Result<Session, StripeError> {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.secret_key)
            .form(form)
            .send()
            .await
            .map_err(|error| StripeError(format!("Stripe could not be reached: {error}")))?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|error| {
            StripeError(format!("Stripe answered {status} with no JSON: {error}"))
        })?;
        if !status.is_success() {
            let message = body
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("no message");
            return Err(StripeError(format!("Stripe answered {status}: {message}")));
        }
        serde_json::from_value(body)
            .map_err(|error| StripeError(format!("Stripe's session has no id or url: {error}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_of_a_completed_session_and_of_a_subscription() {
        let session = json!({
            "id": "cs_1", "object": "checkout.session", "client_reference_id": "ten_1",
            "customer": "cus_1", "subscription": "sub_1", "status": "complete",
            "metadata": {"tenant_id": "ten_other"}
        });
        assert_eq!(
            ObjectFields::of(&session),
            ObjectFields {
                tenant: Some("ten_1".to_owned()),
                customer: Some("cus_1".to_owned()),
                subscription: Some("sub_1".to_owned()),
                status: Some("complete".to_owned()),
            }
        );
        let subscription = json!({
            "id": "sub_2", "object": "subscription", "customer": {"id": "cus_2", "object": "customer"},
            "status": "canceled", "metadata": {"tenant_id": "ten_2"}
        });
        assert_eq!(
            ObjectFields::of(&subscription),
            ObjectFields {
                tenant: Some("ten_2".to_owned()),
                customer: Some("cus_2".to_owned()),
                subscription: Some("sub_2".to_owned()),
                status: Some("canceled".to_owned()),
            }
        );
        assert_eq!(
            ObjectFields::of(&json!({"client_reference_id": null})),
            ObjectFields::default()
        );
    }
}
