//! Drop addresses: `mv-` and 26 random base32 characters (130 bits) at the configured
//! domain. The lookup index holds only the SHA-256 of the lower-cased local part.

use rand::Rng;
use sha2::{Digest, Sha256};

/// What every drop address starts with (so a user recognises one).
pub const LOCAL_PART_PREFIX: &str = "mv-";
/// Random characters after the prefix: 26 of base32, 130 bits.
const RANDOM_CHARS: usize = 26;
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A new random local part: lower case, a dot-atom (RFC 5322) well under 64 octets.
pub fn new_local_part() -> String {
    let mut rng = rand::thread_rng();
    let random: String = (0..RANDOM_CHARS)
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{LOCAL_PART_PREFIX}{random}")
}

/// The lookup key of a local part: hex SHA-256 of it in lower case.
pub fn hash_local_part(local: &str) -> String {
    hex::encode(Sha256::digest(local.to_ascii_lowercase().as_bytes()))
}

/// The local parts of the addresses among `addresses` that are at `domain` (compared
/// without case), in order, lower-cased, with a `+tag` suffix removed (plus addressing:
/// `mv-...+receipts@domain` reaches the same drop). Angle brackets and display names
/// are tolerated (`Name <a@b>`).
pub fn recipient_local_parts<'a>(
    addresses: impl IntoIterator<Item = &'a str>,
    domain: &str,
) -> Vec<String> {
    let mut found = Vec::new();
    for raw in addresses {
        let address = bare_address(raw);
        let Some((local, at)) = address.rsplit_once('@') else {
            continue;
        };
        if !at.trim_end_matches('.').eq_ignore_ascii_case(domain) {
            continue;
        }
        let local = local
            .split('+')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if !local.is_empty() && local.len() <= 64 && !found.contains(&local) {
            found.push(local);
        }
    }
    found
}

/// `a@b` from `a@b`, `<a@b>` or `Name <a@b>`, trimmed.
fn bare_address(raw: &str) -> &str {
    let raw = raw.trim();
    match (raw.rfind('<'), raw.rfind('>')) {
        (Some(start), Some(end)) if start < end => raw[start + 1..end].trim(),
        _ => raw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_parts_are_random_lower_case_dot_atoms() {
        let first = new_local_part();
        let second = new_local_part();
        assert_ne!(first, second);
        assert_eq!(first.len(), LOCAL_PART_PREFIX.len() + RANDOM_CHARS);
        assert!(first.len() <= 64);
        assert!(first
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
        assert_eq!(
            hash_local_part(&first.to_uppercase()),
            hash_local_part(&first)
        );
        assert_ne!(hash_local_part(&first), hash_local_part(&second));
    }

    #[test]
    fn recipients_at_the_domain_are_found_in_order_without_tags_or_case() {
        let found = recipient_local_parts(
            [
                "someone@example.org",
                "Drop <MV-Abc+receipts@IN.example.org>",
                "mv-def@in.example.org.",
                "mv-abc@in.example.org",
                "mv-x@other.in.example.org",
                "not an address",
            ],
            "in.example.org",
        );
        assert_eq!(found, vec!["mv-abc".to_owned(), "mv-def".to_owned()]);
    }
}
