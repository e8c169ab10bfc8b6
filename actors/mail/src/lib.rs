//! memvault-mail: outgoing mail.
//!
//! One [`Mailer`] per server, built from `[mail]`: with `smtp_url` it sends over SMTP
//! (lettre; `smtp://` plain or STARTTLS when asked with `?tls=required`, `smtps://`
//! implicit TLS, both with rustls; credentials in the URL's user info); without it, each
//! message is written as one `.eml` file to an outbox directory, which the operator reads
//! with `memvault mail outbox` ([`outbox::read`]).
//!
//! The crate only sends. Queueing, retries and back-off belong to the job system: a
//! [`SendError`] says whether trying again can help ([`SendError::is_permanent`]).
//!
//! Every message has a plain-text body and, when given, an HTML alternative.

pub mod outbox;

use std::path::{Path, PathBuf};
use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

/// One message to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Letter {
    /// One recipient address.
    pub to: String,
    pub subject: String,
    /// The plain-text body (always sent).
    pub text: String,
    /// An HTML alternative of the same content.
    pub html: Option<String>,
}

/// The mailer could not be built from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("mail.from '{0}' is not a mail address")]
    From(String),
    #[error("mail.smtp_url is not a usable SMTP URL: {0}")]
    SmtpUrl(String),
}

/// One send failed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The message cannot be sent as it is (a malformed recipient, a permanent SMTP
    /// refusal); trying again will not help.
    #[error("{0}")]
    Permanent(String),
    /// The server or the outbox failed this time (connection refused, timeout, 4xx SMTP
    /// answer, a full disk); a later attempt may succeed.
    #[error("{0}")]
    Transient(String),
}

impl SendError {
    pub fn is_permanent(&self) -> bool {
        matches!(self, Self::Permanent(_))
    }
}

enum Transport {
    Smtp {
        transport: AsyncSmtpTransport<Tokio1Executor>,
        /// The URL without its credentials, for logs.
        shown: String,
    },
    Outbox(PathBuf),
}

/// Sends [`Letter`]s from one sender address, over SMTP or to the outbox.
pub struct Mailer {
    from: Mailbox,
    transport: Transport,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Mailer")
            .field("from", &self.from.to_string())
            .field("transport", &self.describe())
            .finish()
    }
}

impl Mailer {
    /// A mailer that sends over SMTP at `smtp_url`, each exchange bounded by `timeout`.
    pub fn smtp(smtp_url: &str, from: &str, timeout: Duration) -> Result<Self, ConfigError> {
        let from = parse_from(from)?;
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp_url)
            .map_err(|error| ConfigError::SmtpUrl(error.to_string()))?
            .timeout(Some(timeout))
            .build();
        Ok(Self {
            from,
            transport: Transport::Smtp {
                transport,
                shown: without_credentials(smtp_url),
            },
        })
    }

    /// A mailer that writes each message to `directory` (created when missing).
    pub fn outbox(directory: impl Into<PathBuf>, from: &str) -> Result<Self, ConfigError> {
        Ok(Self {
            from: parse_from(from)?,
            transport: Transport::Outbox(directory.into()),
        })
    }

    /// Where mail goes, for the start-up log: the SMTP URL without credentials, or the
    /// outbox directory.
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Smtp { shown, .. } => shown.clone(),
            Transport::Outbox(directory) => format!("outbox {}", directory.display()),
        }
    }

    /// The outbox directory, when mail goes there.
    pub fn outbox_dir(&self) -> Option<&Path> {
        match &self.transport {
            Transport::Outbox(directory) => Some(directory),
            Transport::Smtp { .. } => None,
        }
    }

    /// The RFC 5322 message for `letter`; `id` becomes its Message-ID (the same on every
    /// attempt, so a receiver that got it twice can tell).
    pub fn message(&self, letter: &Letter, id: &str) -> Result<Message, SendError> {
        let to: Mailbox = letter.to.parse().map_err(|error| {
            SendError::Permanent(format!(
                "recipient '{}' is not an address: {error}",
                letter.to
            ))
        })?;
        let domain = self.from.email.domain().to_owned();
        let builder = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(letter.subject.clone())
            .message_id(Some(format!("<{id}@{domain}>")))
            .date_now();
        let text = SinglePart::builder()
            .header(ContentType::TEXT_PLAIN)
            .body(letter.text.clone());
        let message = match &letter.html {
            Some(html) => builder.multipart(
                MultiPart::alternative().singlepart(text).singlepart(
                    SinglePart::builder()
                        .header(ContentType::TEXT_HTML)
                        .body(html.clone()),
                ),
            ),
            None => builder.singlepart(text),
        };
        message
            .map_err(|error| SendError::Permanent(format!("the message cannot be built: {error}")))
    }

    /// Sends one letter: one SMTP exchange, or one file in the outbox.
    pub async fn send(&self, letter: &Letter, id: &str) -> Result<(), SendError> {
        let message = self.message(letter, id)?;
        match &self.transport {
            Transport::Smtp { transport, .. } => match transport.send(message).await {
                Ok(_) => Ok(()),
                Err(error) if error.is_permanent() => Err(SendError::Permanent(format!(
                    "the SMTP server refused the message: {error}"
                ))),
                Err(error) => Err(SendError::Transient(format!("SMTP: {error}"))),
            },
            Transport::Outbox(directory) => outbox::write(directory, id, &message.formatted())
                .map_err(|error| {
                    SendError::Transient(format!(
                        "the outbox {} cannot be written: {error}",
                        directory.display()
                    ))
                }),
        }
    }
}

/// Whether `address` is a mail address a message can be sent to (`local@domain`, as
/// RFC 5321 allows it; no display name).
pub fn is_address(address: &str) -> bool {
    address.parse::<lettre::Address>().is_ok()
}

fn parse_from(from: &str) -> Result<Mailbox, ConfigError> {
    from.parse().map_err(|_| ConfigError::From(from.to_owned()))
}

/// `smtps://user:secret@host:465` → `smtps://host:465`.
fn without_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
            format!("{scheme}://{rest}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn letter() -> Letter {
        Letter {
            to: "ada@example.com".to_owned(),
            subject: "Your memvault key".to_owned(),
            text: "Open https://memvault.example/v1/memory/reveal/abc to see it.".to_owned(),
            html: Some("<p>Open <a href=\"https://memvault.example/v1/memory/reveal/abc\">the link</a>.</p>".to_owned()),
        }
    }

    #[test]
    fn a_message_has_both_bodies_a_stable_id_and_the_sender() {
        let mailer = Mailer::outbox("/nonexistent", "memvault <noreply@memvault.example>").unwrap();
        let raw = String::from_utf8(mailer.message(&letter(), "m1").unwrap().formatted()).unwrap();
        assert!(raw.contains("Message-ID: <m1@memvault.example>"), "{raw}");
        assert!(
            raw.contains("From: memvault <noreply@memvault.example>"),
            "{raw}"
        );
        assert!(raw.contains("To: ada@example.com"), "{raw}");
        assert!(raw.contains("multipart/alternative"), "{raw}");
        assert!(
            raw.contains("text/plain") && raw.contains("text/html"),
            "{raw}"
        );
    }

    #[tokio::test]
    async fn a_bad_recipient_is_permanent_and_a_bad_sender_is_a_config_error() {
        let mailer = Mailer::outbox("/nonexistent", "noreply@memvault.example").unwrap();
        let bad = Letter {
            to: "not an address".to_owned(),
            ..letter()
        };
        assert!(mailer.message(&bad, "m2").unwrap_err().is_permanent());
        assert!(matches!(
            Mailer::outbox("/x", "nobody"),
            Err(ConfigError::From(_))
        ));
        assert!(matches!(
            Mailer::smtp("ftp://host", "a@b.example", Duration::from_secs(1)),
            Err(ConfigError::SmtpUrl(_))
        ));
    }

    // The SMTP pool needs a runtime, as in the server.
    #[tokio::test]
    async fn credentials_never_reach_the_log() {
        assert_eq!(
            without_credentials("smtps://user:s3cret@mail.example:465"),
            "smtps://mail.example:465"
        );
        let mailer = Mailer::smtp(
            "smtp://user:s3cret@127.0.0.1:2525",
            "a@b.example",
            Duration::from_secs(1),
        )
        .unwrap();
        assert!(!format!("{mailer:?}").contains("s3cret"));
    }

    #[tokio::test]
    async fn the_outbox_keeps_each_message_and_reads_them_back() {
        let directory = tempfile::tempdir().unwrap();
        let outbox = directory.path().join("outbox");
        let mailer = Mailer::outbox(&outbox, "noreply@memvault.example").unwrap();
        mailer.send(&letter(), "first").await.unwrap();
        let second = Letter {
            to: "grace@example.com".to_owned(),
            subject: "Another".to_owned(),
            html: None,
            ..letter()
        };
        mailer.send(&second, "second").await.unwrap();
        // The same id again replaces its file: a retried send is one message.
        mailer.send(&second, "second").await.unwrap();
        let read = outbox::read(&outbox).unwrap();
        assert_eq!(read.len(), 2, "{read:?}");
        assert_eq!(read[0].to, "ada@example.com");
        assert_eq!(read[0].subject, "Your memvault key");
        assert!(
            read[0].text.contains("/v1/memory/reveal/abc"),
            "{:?}",
            read[0]
        );
        assert_eq!(read[1].to, "grace@example.com");
        assert!(outbox::read(&directory.path().join("none"))
            .unwrap()
            .is_empty());
    }

    #[tokio::test]
    async fn an_unreachable_smtp_server_is_transient() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mailer = Mailer::smtp(
            &format!("smtp://127.0.0.1:{port}"),
            "noreply@memvault.example",
            Duration::from_secs(2),
        )
        .unwrap();
        let error = mailer.send(&letter(), "m3").await.unwrap_err();
        assert!(!error.is_permanent(), "{error}");
    }
}
