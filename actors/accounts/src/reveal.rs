//! One-time reveal links: a random token (256 bits, URL-safe base64) goes into the mail;
//! the store keeps only its SHA-256, so a copy of the store reveals nothing. The letters
//! carry the link, never a key: the key exists only once the link is used (a POST from
//! the confirmation page; a GET, which mail scanners make, shows the page and burns
//! nothing).

use base64::Engine as _;
use memvault_mail::Letter;
use memvault_storage::RevealPurpose;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// Where a reveal link points: `{public_url}/v1/memory/reveal/{token}`.
pub const REVEAL_PATH: &str = "/v1/memory/reveal";

/// A new token: 32 random bytes, URL-safe base64 without padding (43 characters).
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// What the store keeps of a token: hex SHA-256.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Whether a path segment could be a token at all (anything else is refused before the
/// store is asked).
pub fn plausible_token(token: &str) -> bool {
    (16..=128).contains(&token.len())
        && token
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// The link to reveal with `token`.
pub fn link(public_url: &str, token: &str) -> String {
    format!("{}{REVEAL_PATH}/{token}", public_url.trim_end_matches('/'))
}

/// The mail that carries a reveal link.
pub fn letter(
    to: &str,
    purpose: RevealPurpose,
    link: &str,
    valid_minutes: u64,
    tenant_name: &str,
) -> Letter {
    let (subject, opening) = match purpose {
        RevealPurpose::Signup => (
            "Your memvault account is ready",
            "Welcome to memvault. Your account has been created.".to_owned(),
        ),
        RevealPurpose::Recover => (
            "Your new memvault API key",
            format!("Someone (we hope you) asked for a new API key for the memvault account {tenant_name}."),
        ),
    };
    let closing = match purpose {
        RevealPurpose::Signup => "If you did not sign up, ignore this mail: nothing happens until the link is opened.",
        RevealPurpose::Recover => "Your current key keeps working until the new one is revealed; then it stops. If you did not ask for this, ignore this mail.",
    };
    let text = format!(
        "{opening}\n\nOpen this link and press the button to see your API key. The key is shown once, the link works once, for {valid_minutes} minutes:\n\n{link}\n\n{closing}\n"
    );
    let escaped_link = escape_html(link);
    let html = format!(
        "<!doctype html><html><body style=\"font-family: sans-serif\"><p>{}</p>\
         <p>Open this link and press the button to see your API key. The key is shown once, the link works once, for {valid_minutes} minutes:</p>\
         <p><a href=\"{escaped_link}\">{escaped_link}</a></p><p>{}</p></body></html>",
        escape_html(&opening),
        escape_html(closing),
    );
    Letter {
        to: to.to_owned(),
        subject: subject.to_owned(),
        text,
        html: Some(html),
    }
}

/// Escapes text for HTML element content and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_url_safe_and_stored_only_as_their_hash() {
        let (first, second) = (new_token(), new_token());
        assert_ne!(first, second);
        assert_eq!(first.len(), 43);
        assert!(plausible_token(&first));
        assert_eq!(token_hash(&first).len(), 64);
        assert!(!token_hash(&first).contains(&first));
        assert!(!plausible_token("short"));
        assert!(!plausible_token("../../etc/passwd/and/more/characters"));
    }

    #[test]
    fn the_letter_carries_the_link_and_no_key() {
        let link = link("https://mv.example/", "tok_en-123456789012345");
        assert_eq!(
            link,
            "https://mv.example/v1/memory/reveal/tok_en-123456789012345"
        );
        for purpose in [RevealPurpose::Signup, RevealPurpose::Recover] {
            let letter = letter("ada@example.com", purpose, &link, 60, "acme <b>");
            assert!(letter.text.contains(&link));
            let html = letter.html.unwrap();
            assert!(html.contains(&format!("href=\"{link}\"")));
            assert!(!letter.text.contains("mv_") && !html.contains("mv_"));
            assert!(!html.contains("<b>"), "the tenant name is escaped");
        }
    }
}
