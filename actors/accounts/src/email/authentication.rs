//! Whether the receiving relay authenticated the sender. `From` is trivially forged, so
//! the allowlist is only honoured for a sender whose domain a verdict of the relay vouches
//! for (research note "files and email", 4.1, point 4):
//!
//! - the topmost `Authentication-Results` (RFC 8601), the one the relay that handed the
//!   message over added (those further down came with the message and prove nothing):
//!   `dmarc=pass` with `header.from` the sender's domain, or `dkim=pass` with `header.d`
//!   (or the domain of `header.i`) aligned with it, or `spf=pass` with `smtp.mailfrom`
//!   aligned with it;
//! - or the topmost `Received-SPF: pass` whose `envelope-from` is aligned with it.
//!
//! `ARC-Authentication-Results` is not trusted: it is a verdict an intermediary forwarded,
//! believable only once the ARC chain's seals are verified, which needs DNS; memvault
//! does not verify them. "Aligned" is [`super::aligned`].

use super::{aligned, domain_of};

/// The headers a verdict is read from: the topmost of each, raw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuthenticationHeaders {
    pub authentication_results: Option<String>,
    pub received_spf: Option<String>,
}

/// Whether a verdict vouches for `sender`'s domain.
pub fn authenticated(headers: &AuthenticationHeaders, sender: &str) -> bool {
    let Some(domain) = domain_of(sender) else {
        return false;
    };
    let by_results = headers
        .authentication_results
        .as_deref()
        .is_some_and(|value| results_vouch(value, &domain));
    let by_spf = headers
        .received_spf
        .as_deref()
        .is_some_and(|value| received_spf_vouches(value, &domain));
    by_results || by_spf
}

/// `Authentication-Results: authserv-id; method=result prop=value ...; ...`
fn results_vouch(value: &str, domain: &str) -> bool {
    let value = without_comments(value);
    let mut statements = value.split(';');
    let _authserv_id = statements.next();
    statements.any(|statement| {
        let mut tokens = statement.split_whitespace();
        let Some((method, result)) = tokens.next().and_then(|token| token.split_once('=')) else {
            return false;
        };
        let method = method
            .split('/')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if !result.eq_ignore_ascii_case("pass") {
            return false;
        }
        let properties: Vec<(String, String)> = tokens
            .filter_map(|token| token.split_once('='))
            .map(|(name, value)| (name.to_ascii_lowercase(), unquote(value)))
            .collect();
        let property = |name: &'static str| {
            properties
                .iter()
                .filter(move |(key, _)| key == name)
                .map(|(_, value)| value.as_str())
        };
        match method.as_str() {
            "dmarc" => property("header.from").any(|from| from.eq_ignore_ascii_case(domain)),
            "dkim" => {
                property("header.d").any(|d| aligned(domain, d))
                    || property("header.i")
                        .filter_map(domain_of)
                        .any(|i| aligned(domain, &i))
            }
            "spf" => property("smtp.mailfrom")
                .map(|mailfrom| domain_of(mailfrom).unwrap_or_else(|| mailfrom.to_owned()))
                .any(|mailfrom| aligned(domain, &mailfrom)),
            _ => false,
        }
    })
}

/// `Received-SPF: pass (comment) key=value; key=value ...` (RFC 7208 9.1).
fn received_spf_vouches(value: &str, domain: &str) -> bool {
    let value = without_comments(value);
    let mut words = value.split_whitespace();
    if !words
        .next()
        .is_some_and(|result| result.eq_ignore_ascii_case("pass"))
    {
        return false;
    }
    value
        .split([';', ' ', '\t'])
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(key, _)| key.trim().eq_ignore_ascii_case("envelope-from"))
        .filter_map(|(_, from)| domain_of(&unquote(from)))
        .any(|from| aligned(domain, &from))
}

/// The header value with `(comments)` removed (nested ones too) and folds unfolded.
fn without_comments(value: &str) -> String {
    let mut depth = 0usize;
    let mut kept = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            _ if depth == 0 => kept.push(if c.is_whitespace() { ' ' } else { c }),
            _ => {}
        }
    }
    kept
}

fn unquote(value: &str) -> String {
    value
        .trim()
        .trim_matches('"')
        .trim_start_matches('<')
        .trim_end_matches('>')
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(value: &str) -> AuthenticationHeaders {
        AuthenticationHeaders {
            authentication_results: Some(value.to_owned()),
            received_spf: None,
        }
    }

    #[test]
    fn dmarc_dkim_or_spf_pass_for_the_senders_domain_authenticates() {
        let sender = "me@example.org";
        for value in [
            "mx.in.test; dmarc=pass header.from=example.org",
            "mx.in.test; dkim=pass (2048-bit key) header.d=example.org header.s=sel",
            "mx.in.test; dkim=pass header.i=@mail.example.org",
            "mx.in.test;\r\n spf=pass smtp.mailfrom=bounces@example.org",
            "mx.in.test; spf=pass smtp.mailfrom=example.org",
            "mx.in.test; spf=fail smtp.mailfrom=x@evil.test; dkim=pass header.d=example.org",
        ] {
            assert!(authenticated(&results(value), sender), "{value}");
        }
    }

    #[test]
    fn a_failed_or_unaligned_verdict_or_none_does_not() {
        let sender = "me@example.org";
        for value in [
            "mx.in.test; dmarc=fail header.from=example.org",
            "mx.in.test; dkim=pass header.d=evil.test",
            "mx.in.test; dkim=pass header.d=evil-example.org",
            "mx.in.test; spf=pass smtp.mailfrom=me@evil.test",
            "mx.in.test; spf=softfail smtp.mailfrom=me@example.org",
            "mx.in.test; dkim=pass (header.d=example.org) header.d=evil.test",
            "mx.in.test; none",
            "garbage",
            "",
        ] {
            assert!(!authenticated(&results(value), sender), "{value}");
        }
        assert!(!authenticated(&AuthenticationHeaders::default(), sender));
        assert!(!authenticated(
            &results("mx; dkim=pass header.d=example.org"),
            "no-domain"
        ));
    }

    #[test]
    fn received_spf_pass_with_an_aligned_envelope_sender_authenticates() {
        let spf = |value: &str| AuthenticationHeaders {
            authentication_results: None,
            received_spf: Some(value.to_owned()),
        };
        let sender = "me@example.org";
        assert!(authenticated(
            &spf("pass (mx: domain of example.org designates 192.0.2.1 as permitted sender) client-ip=192.0.2.1; envelope-from=\"me@example.org\"; helo=mail.example.org;"),
            sender
        ));
        assert!(!authenticated(
            &spf("fail envelope-from=me@example.org"),
            sender
        ));
        assert!(!authenticated(
            &spf("pass envelope-from=me@evil.test"),
            sender
        ));
    }
}
