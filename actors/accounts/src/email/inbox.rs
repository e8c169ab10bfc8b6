//! Mail-in: each tenant's private drop address, its sender allowlist, and the relay's
//! handoff of one raw message (`inbound`), which becomes an asynchronous ingest batch.
//!
//! - **Address.** Created on first use: `mv-` and 26 random base32 characters at the
//!   configured domain; the store's lookup index holds only the SHA-256 of the local
//!   part, the tenant's own record the local part sealed with the service's secret box
//!   (so GET can show it). Rotating swaps both in one store transaction: the old address
//!   stops resolving in the same write the new one starts. Accepted mail goes to the
//!   address's collection (`email` unless the owner chose another).
//! - **Allowlist.** Unset, the account email alone; else the owner's list of addresses
//!   and `@domain`s. A sender counts only when the relay authenticated it
//!   ([`super::authenticated`]).
//! - **Inbound.** Dropped on purpose (no retry wanted): an unknown or rotated address,
//!   a sender not on the allowlist or not authenticated, a message already taken (the
//!   same `Message-ID` for the same tenant, or without one the same bytes), a message with
//!   nothing to store. Accepted: the body, attachments and forwarded messages staged as
//!   the files of one batch (through `memvault-intake`'s `Files`, which the ingest job
//!   works through), whose memories carry `source: "email"` and the sender, subject,
//!   date and message id.

use bytes::Bytes;
use memvault_storage::{
    CollectionName, EmailAddressRecord, StorageError, TenantId, TenantSettings,
};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use std::sync::Arc;

use memvault_core::service::access::{CollectionAccess, Write};
use memvault_core::{blocking, Error, Memvault, Result, Settings};
use memvault_storage::crypto::SecretBox;
use memvault_storage::Store;
use memvault_types::clock::Clock;

use memvault_intake::{Files, Incoming};

use super::{
    allowlist, authenticated, hash_local_part, is_allowed, new_local_part, parse_message,
    recipient_local_parts, EmailSettings, InboundMessage,
};

/// Where accepted mail goes until the owner picks another collection.
pub const DEFAULT_COLLECTION: &str = "email";
/// Tries of an address change that lost a race with a concurrent one.
const CHANGE_ATTEMPTS: usize = 5;

/// A tenant's drop address as shown to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropAddress {
    pub address: String,
    pub collection: CollectionName,
}

/// What became of a handed-off message.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// Stored for ingest as this batch.
    Accepted {
        tenant: TenantId,
        batch_id: String,
        collection: CollectionName,
    },
    /// Dropped on purpose; `reason` is a stable snake_case word
    /// (`unknown_recipient`, `sender_not_allowed`, `sender_not_authenticated`,
    /// `duplicate`, `empty_message`).
    Dropped {
        tenant: Option<TenantId>,
        reason: &'static str,
    },
}

/// Mail-in: see the module docs.
#[derive(Clone)]
pub struct Email {
    store: Arc<dyn Store>,
    files: Files,
    /// The tenants' settings: the allowlist is one of them.
    settings: Settings,
    secrets: Option<Arc<SecretBox>>,
    clock: Arc<dyn Clock>,
    domain: Arc<str>,
}

impl Email {
    pub(crate) fn new(service: &Memvault, files: Files, settings: EmailSettings) -> Self {
        Self {
            store: service.store().clone(),
            files,
            settings: service.settings(),
            secrets: service.secret_box(),
            clock: service.clock(),
            domain: settings.domain.into(),
        }
    }

    fn domain(&self) -> &str {
        &self.domain
    }

    fn secrets(&self) -> Result<&SecretBox> {
        self.secrets.as_deref().ok_or(Error::EncryptionKeyMissing)
    }

    /// The tenant's drop address, created on first use.
    pub async fn address(&self, tenant: &TenantId) -> Result<DropAddress> {
        let record = self.current_or_new(tenant).await?;
        self.view(&record)
    }

    /// Sends the tenant's accepted mail to `collection` from now on (same address).
    pub async fn set_collection(
        &self,
        tenant: &TenantId,
        collection: CollectionName,
    ) -> Result<DropAddress> {
        let record = self
            .change(tenant, move |current| EmailAddressRecord {
                collection: collection.clone(),
                ..current.clone()
            })
            .await?;
        self.view(&record)
    }

    /// A new address (same domain and collection); the old one stops working at once.
    pub async fn rotate(&self, tenant: &TenantId) -> Result<DropAddress> {
        let secrets = self.secrets()?.clone();
        let record = self
            .change(tenant, move |current| {
                let local = new_local_part();
                EmailAddressRecord {
                    local_hash: hash_local_part(&local),
                    local_sealed: secrets.seal_str(&local),
                    ..current.clone()
                }
            })
            .await?;
        self.view(&record)
    }

    /// Who may send: the owner's list, or the account email when it never set one.
    pub fn senders(&self, tenant: &TenantId) -> Result<Vec<String>> {
        self.settings.email_senders(tenant)
    }

    /// Replaces the allowlist (addresses and `@domain`s, at most 100).
    pub async fn set_senders(
        &self,
        tenant: &TenantId,
        senders: Vec<String>,
    ) -> Result<Vec<String>> {
        let senders = allowlist(senders).map_err(Error::Invalid)?;
        let saved = senders.clone();
        self.settings
            .update_settings(tenant, move |settings| TenantSettings {
                email_senders: Some(saved),
                ..settings.clone()
            })
            .await?;
        Ok(senders)
    }

    /// One message from the relay. `envelope_recipient` (the relay's
    /// `X-Memvault-Recipient`) is the only recipient tried when given; else the message's
    /// `Delivered-To`, `To` and `Cc`, the first drop address that resolves.
    pub async fn inbound(&self, raw: Bytes, envelope_recipient: Option<&str>) -> Result<Inbound> {
        let parsing = raw.clone();
        let message = tokio::task::spawn_blocking(move || parse_message(&parsing))
            .await
            .map_err(|_| Error::MessageUnreadable("the message could not be parsed".to_owned()))?
            .map_err(Error::MessageUnreadable)?;
        let Some(address) = self.recipient(&message, envelope_recipient).await? else {
            return Ok(dropped(None, "unknown_recipient"));
        };
        let tenant = address.tenant_id.clone();
        if self.settings.check_tenant(&tenant).is_err() {
            return Ok(dropped(None, "unknown_recipient"));
        }
        let Some(sender) = message.sender.clone() else {
            return Ok(dropped(Some(tenant), "sender_not_allowed"));
        };
        if !is_allowed(&self.senders(&tenant)?, &sender) {
            return Ok(dropped(Some(tenant), "sender_not_allowed"));
        }
        if !authenticated(&message.authentication, &sender) {
            return Ok(dropped(Some(tenant), "sender_not_authenticated"));
        }
        if message.parts.is_empty() {
            return Ok(dropped(Some(tenant), "empty_message"));
        }
        let event_source = format!("email:{tenant}");
        let event_id = message
            .message_id
            .clone()
            .unwrap_or_else(|| format!("sha256:{}", hex::encode(Sha256::digest(&raw))));
        let (store, source, id, now) = (
            self.store.clone(),
            event_source.clone(),
            event_id.clone(),
            self.clock.now(),
        );
        if !blocking(move || store.record_event_once(&source, &id, now)).await? {
            return Ok(dropped(Some(tenant), "duplicate"));
        }
        match self.accept(&address, &message).await {
            Ok(batch_id) => Ok(Inbound::Accepted {
                tenant,
                batch_id,
                collection: address.collection,
            }),
            Err(error) => {
                // Not taken after all: the relay's retry must find the message new.
                let store = self.store.clone();
                let _ = blocking(move || store.forget_event(&event_source, &event_id)).await;
                Err(error)
            }
        }
    }

    /// Stages the message's parts and starts their batch; the batch id.
    async fn accept(
        &self,
        address: &EmailAddressRecord,
        message: &InboundMessage,
    ) -> Result<String> {
        let files = &self.files;
        let tenant = &address.tenant_id;
        let mut incoming = Vec::with_capacity(message.parts.len());
        for part in &message.parts {
            let file = if part.bytes.len() as u64 > files.max_file_bytes() {
                files.refuse_oversize(&part.filename, part.bytes.len() as u64)
            } else {
                match files
                    .stage(
                        tenant,
                        &part.filename,
                        part.content_type.clone(),
                        Bytes::from(part.bytes.clone()),
                    )
                    .await
                {
                    Ok(file) => file,
                    Err(error) => {
                        let staged: Vec<_> = incoming
                            .iter()
                            .filter_map(|file| match file {
                                Incoming::Staged(staged) => Some(staged.clone()),
                                Incoming::Refused { .. } => None,
                            })
                            .collect();
                        files.discard(tenant, &staged).await;
                        return Err(error);
                    }
                }
            };
            incoming.push(file);
        }
        let access = CollectionAccess::<Write>::mail_intake(tenant, address.collection.clone());
        let batch = files
            .drop_later_from(&access, incoming, "email", "email", metadata_of(message))
            .await?;
        Ok(batch.id)
    }

    /// The drop address the message is for: the envelope recipient alone when the relay
    /// named one, else the first of the message's recipients that resolves.
    async fn recipient(
        &self,
        message: &InboundMessage,
        envelope_recipient: Option<&str>,
    ) -> Result<Option<EmailAddressRecord>> {
        let candidates: Vec<&str> = match envelope_recipient {
            Some(recipient) => recipient.split(',').collect(),
            None => message.recipients.iter().map(String::as_str).collect(),
        };
        for local in recipient_local_parts(candidates, self.domain()) {
            let (store, hash) = (self.store.clone(), hash_local_part(&local));
            if let Some(record) = blocking(move || store.email_address_by_hash(&hash)).await? {
                return Ok(Some(record));
            }
        }
        Ok(None)
    }

    async fn current(&self, tenant: &TenantId) -> Result<Option<EmailAddressRecord>> {
        self.settings.check_tenant(tenant)?;
        let (store, owner) = (self.store.clone(), tenant.clone());
        blocking(move || store.email_address_of(&owner)).await
    }

    async fn current_or_new(&self, tenant: &TenantId) -> Result<EmailAddressRecord> {
        for _ in 0..CHANGE_ATTEMPTS {
            if let Some(record) = self.current(tenant).await? {
                return Ok(record);
            }
            let record = self.new_record(tenant)?;
            if self.replace(&record, None).await? {
                return Ok(record);
            }
        }
        Err(contended())
    }

    /// Applies `change` to the tenant's current address (made first when it has none),
    /// retried when a concurrent change won.
    async fn change(
        &self,
        tenant: &TenantId,
        change: impl Fn(&EmailAddressRecord) -> EmailAddressRecord,
    ) -> Result<EmailAddressRecord> {
        for _ in 0..CHANGE_ATTEMPTS {
            let current = self.current_or_new(tenant).await?;
            let changed = change(&current);
            if self.replace(&changed, Some(&current.local_hash)).await? {
                return Ok(changed);
            }
        }
        Err(contended())
    }

    async fn replace(&self, record: &EmailAddressRecord, expected: Option<&str>) -> Result<bool> {
        let (store, record, expected) = (
            self.store.clone(),
            record.clone(),
            expected.map(str::to_owned),
        );
        blocking(move || store.replace_email_address(&record, expected.as_deref())).await
    }

    fn new_record(&self, tenant: &TenantId) -> Result<EmailAddressRecord> {
        let secrets = self.secrets()?;
        let local = new_local_part();
        Ok(EmailAddressRecord {
            tenant_id: tenant.clone(),
            local_hash: hash_local_part(&local),
            local_sealed: secrets.seal_str(&local),
            collection: CollectionName::parse(DEFAULT_COLLECTION).map_err(Error::Invalid)?,
            created_at: self.clock.now(),
        })
    }

    fn view(&self, record: &EmailAddressRecord) -> Result<DropAddress> {
        let local = self
            .secrets()?
            .open_string(&record.local_sealed)
            .map_err(|error| {
                Error::Storage(StorageError::Corrupt {
                    key: format!("email address of {}", record.tenant_id),
                    reason: format!("the sealed local part cannot be opened: {error}"),
                })
            })?;
        Ok(DropAddress {
            address: format!("{local}@{}", self.domain()),
            collection: record.collection.clone(),
        })
    }
}

fn dropped(tenant: Option<TenantId>, reason: &'static str) -> Inbound {
    Inbound::Dropped { tenant, reason }
}

fn contended() -> Error {
    Error::TaskFailed {
        task: "drop address change",
        reason: "concurrent changes kept winning".to_owned(),
    }
}

/// What every memory of the message carries: who sent it, its subject, date and id.
fn metadata_of(message: &InboundMessage) -> Map<String, Value> {
    let mut metadata = Map::new();
    let mut put = |name: &str, value: Option<&String>, max: usize| {
        if let Some(value) = value.filter(|value| !value.is_empty()) {
            metadata.insert(
                name.to_owned(),
                json!(memvault_files::cap_chars(value, max)),
            );
        }
    };
    put(
        "from",
        message.from_display.as_ref().or(message.sender.as_ref()),
        320,
    );
    put("subject", message.subject.as_ref(), 300);
    put("date", message.date.as_ref(), 40);
    put("message_id", message.message_id.as_ref(), 300);
    if message.skipped_parts > 0 {
        metadata.insert("skipped_parts".to_owned(), json!(message.skipped_parts));
    }
    metadata
}
