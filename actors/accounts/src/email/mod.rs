//! Mail-in: each tenant's drop address, its sender allowlist, and the relay's handoff.
//!
//! - `inbox.rs`: [`Email`], the use cases (address, rotate, collection, allowlist,
//!   inbound); an accepted message becomes an ingest batch of `memvault-intake`.
//!
//! The rest is the domain, pure:
//!
//! - `address.rs`: drop addresses: the random local part, its hash (the only form the
//!   lookup index holds), and which of a message's recipients are drop addresses.
//! - `senders.rs`: the sender allowlist: its validation and whether a sender is on it.
//! - `authentication.rs`: whether the receiving relay authenticated the sender
//!   (`Authentication-Results`: DMARC, aligned DKIM or SPF; `Received-SPF`), never the
//!   bare `From` header.
//! - `message.rs`: the raw RFC 822 message parsed (mail-parser) into what the intake
//!   needs: recipients, sender, ids, and the parts that become batch items (the body,
//!   each attachment, each forwarded message as an `.eml`).

mod address;
mod authentication;
pub mod inbox;
mod message;
mod senders;

pub use address::{hash_local_part, new_local_part, recipient_local_parts, LOCAL_PART_PREFIX};
pub use authentication::{authenticated, AuthenticationHeaders};
pub use inbox::{DropAddress, Email, Inbound, DEFAULT_COLLECTION};
pub use message::{parse_message, InboundMessage, MailPart, MAX_PARTS};
pub use senders::{allowlist, is_allowed, MAX_SENDERS};

/// Mail-in settings the binary configures (`[email]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailSettings {
    /// The domain of every drop address.
    pub domain: String,
}

impl Default for EmailSettings {
    fn default() -> Self {
        Self {
            domain: "in.localhost".to_owned(),
        }
    }
}

/// The domain part of an address (after the last `@`), lower-cased; `None` without one.
pub(crate) fn domain_of(address: &str) -> Option<String> {
    let (_, domain) = address.rsplit_once('@')?;
    let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    (!domain.is_empty()).then_some(domain)
}

/// Whether two domains align: equal, or one a subdomain of the other (relaxed alignment,
/// as DMARC does it, without the public-suffix list: label boundaries only, so a verdict
/// for `example.com` never vouches for `evil-example.com`, and both need two labels or
/// more, so a bare `com` vouches for nothing).
pub(crate) fn aligned(domain: &str, candidate: &str) -> bool {
    let (domain, candidate) = (domain.to_ascii_lowercase(), candidate.to_ascii_lowercase());
    domain.contains('.')
        && candidate.contains('.')
        && (domain == candidate
            || domain.ends_with(&format!(".{candidate}"))
            || candidate.ends_with(&format!(".{domain}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_is_same_domain_or_subdomain_never_a_suffix_match() {
        assert!(aligned("example.com", "example.com"));
        assert!(aligned("mail.example.com", "example.com"));
        assert!(aligned("example.com", "mail.example.com"));
        assert!(aligned("Example.COM", "example.com"));
        assert!(!aligned("evil-example.com", "example.com"));
        assert!(!aligned("example.com", "example.org"));
        assert!(!aligned("", "example.com"));
        assert!(!aligned("example.com", "com"));
        assert_eq!(domain_of("A@Example.org").as_deref(), Some("example.org"));
        assert_eq!(domain_of("nobody"), None);
    }
}
