//! How accounts behave: [`AccountSettings`] from the `[mail]` and `[account]` sections.

use std::sync::Arc;
use std::time::Duration;

use memvault_mail::Mailer;
use memvault_portability::ErasureSettings;
use memvault_types::Backoff;

/// How accounts behave (config sections `[mail]` and `[account]`).
#[derive(Debug, Clone)]
pub struct AccountSettings {
    /// Where outgoing mail goes; `None` turns signup and recovery off (503).
    pub mailer: Option<Arc<Mailer>>,
    /// The base of every link a mail carries (`server.public_url`).
    pub public_url: String,
    /// How long a reveal link works.
    pub reveal_ttl: Duration,
    /// Attempts per mail, the first included.
    pub mail_max_attempts: u32,
    /// Wait after the first failed attempt; doubled after each further one, at most
    /// [`MAIL_MAX_BACKOFF`].
    pub mail_initial_backoff: Duration,
    /// Reveal mails one address may be sent per minute (signup and recovery together);
    /// more are dropped silently, so the answer never tells.
    pub mails_per_address_per_minute: u32,
    /// How account erasures pace their store writes.
    pub erasure: ErasureSettings,
}

/// The longest wait between two attempts of one mail.
pub const MAIL_MAX_BACKOFF: Duration = Duration::from_secs(3600);

impl AccountSettings {
    pub fn mail_backoff(&self) -> Backoff {
        Backoff::new(self.mail_initial_backoff, MAIL_MAX_BACKOFF)
    }
}

impl Default for AccountSettings {
    fn default() -> Self {
        Self {
            mailer: None,
            public_url: "http://127.0.0.1:8420".to_owned(),
            reveal_ttl: Duration::from_secs(3600),
            mail_max_attempts: 10,
            mail_initial_backoff: Duration::from_secs(5),
            mails_per_address_per_minute: 3,
            erasure: ErasureSettings::default(),
        }
    }
}
