//! The sender allowlist: addresses (`friend@example.org`) and whole domains
//! (`@example.org`, that domain exactly, not its subdomains), lower-cased. Unset, the
//! account email alone is allowed.

/// Entries one allowlist holds.
pub const MAX_SENDERS: usize = 100;

/// The allowlist a `PUT` sends, validated and normalised (trimmed, lower-cased, without
/// repeats, in the given order); the error names the first bad entry.
pub fn allowlist(entries: Vec<String>) -> Result<Vec<String>, String> {
    if entries.len() > MAX_SENDERS {
        return Err(format!(
            "senders holds at most {MAX_SENDERS} entries, got {}",
            entries.len()
        ));
    }
    let mut normalised: Vec<String> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.into_iter().enumerate() {
        let entry = entry
            .trim_matches([' ', '\t', '\r', '\n'])
            .to_ascii_lowercase();
        if !valid_entry(&entry) {
            return Err(format!(
                "senders[{index}] '{entry}' is neither an email address (name@example.org) \
                 nor a domain (@example.org)"
            ));
        }
        if !normalised.contains(&entry) {
            normalised.push(entry);
        }
    }
    Ok(normalised)
}

/// Whether `sender` (an address) is on the allowlist.
pub fn is_allowed(allowlist: &[String], sender: &str) -> bool {
    let sender = sender.trim().to_ascii_lowercase();
    let Some((_, domain)) = sender.rsplit_once('@') else {
        return false;
    };
    allowlist.iter().any(|entry| match entry.strip_prefix('@') {
        Some(allowed_domain) => allowed_domain == domain,
        None => *entry == sender,
    })
}

fn valid_entry(entry: &str) -> bool {
    let Some((local, domain)) = entry.rsplit_once('@') else {
        return false;
    };
    // No length limits beyond the labels': the entry is compared, never sent to.
    let local_ok = local.is_empty()
        || (!local.starts_with('.')
            && !local.ends_with('.')
            && !local.contains("..")
            && local
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~.-".contains(c)));
    let domain_ok = domain.contains('.')
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    local_ok && domain_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_addresses_or_domains_normalised_and_capped() {
        let list = allowlist(vec![
            " Me@Example.org ".to_owned(),
            "@Partner.example.com".to_owned(),
            "me@example.org".to_owned(),
        ])
        .unwrap();
        assert_eq!(list, vec!["me@example.org", "@partner.example.com"]);
        for bad in [
            "",
            "me",
            "me@",
            "@",
            "a b@example.org",
            "me@localhost",
            "me@-x.org",
            "<me@example.org>",
        ] {
            assert!(allowlist(vec![bad.to_owned()]).is_err(), "{bad:?}");
        }
        assert!(allowlist(vec!["a@example.org".to_owned(); MAX_SENDERS + 1]).is_err());
        assert!(allowlist(Vec::new()).unwrap().is_empty());
    }

    #[test]
    fn a_sender_matches_its_address_or_its_exact_domain() {
        let list = vec!["me@example.org".to_owned(), "@partner.com".to_owned()];
        assert!(is_allowed(&list, "ME@example.org"));
        assert!(is_allowed(&list, "anyone@partner.com"));
        assert!(!is_allowed(&list, "anyone@sub.partner.com"));
        assert!(!is_allowed(&list, "you@example.org"));
        assert!(!is_allowed(&list, "partner.com"));
    }
}
