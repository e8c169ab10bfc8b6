//! Stripe's webhook signature: `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=...]`,
//! where each `v1` is HMAC-SHA256 of `"{t}.{raw body}"` under the endpoint's signing
//! secret. An event is taken when one `v1` matches (compared in constant time) and `t`
//! is within the tolerance of now, either way (replays of old events are refused).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How far `t` may be from now.
pub const TOLERANCE_SECS: i64 = 300;

/// Why a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the Stripe-Signature header is missing")]
    Missing,
    #[error("the Stripe-Signature header is not 't=...,v1=...'")]
    Malformed,
    #[error("the Stripe-Signature timestamp is more than {TOLERANCE_SECS} s from now")]
    Stale,
    #[error("no v1 signature of the Stripe-Signature header matches the body")]
    Mismatch,
}

/// Checks `header` for `body` under `secret` at `now` (unix seconds).
pub fn verify(
    header: Option<&str>,
    body: &[u8],
    secret: &str,
    now: i64,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => signatures.push(value),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if (now - timestamp).abs() > TOLERANCE_SECS {
        return Err(SignatureError::Stale);
    }
    let expected = sign(secret, timestamp, body);
    let matches = signatures
        .iter()
        .any(|given| constant_time_eq(given.as_bytes(), expected.as_bytes()));
    if matches {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// Lowercase hex HMAC-SHA256 of `"{timestamp}.{body}"`.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC accepts any key length");
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test";
    const BODY: &[u8] = br#"{"id":"evt_1","type":"checkout.session.completed"}"#;

    #[test]
    fn a_current_matching_signature_passes_and_anything_else_fails() {
        let now = 1_800_000_000;
        let header = format!("t={now},v1={}", sign(SECRET, now, BODY));
        assert_eq!(verify(Some(&header), BODY, SECRET, now + 10), Ok(()));
        // One of several v1 values may match (Stripe rolls secrets that way).
        let rolled = format!("t={now},v1=deadbeef,v1={},v0=xyz", sign(SECRET, now, BODY));
        assert_eq!(verify(Some(&rolled), BODY, SECRET, now), Ok(()));
        assert_eq!(
            verify(None, BODY, SECRET, now),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            verify(Some("not-a-signature"), BODY, SECRET, now),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify(Some(&format!("t={now}")), BODY, SECRET, now),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify(Some(&header), BODY, SECRET, now + 301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify(Some(&header), b"{}", SECRET, now),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(Some(&header), BODY, "whsec_other", now),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn matches_stripes_documented_scheme() {
        // HMAC-SHA256 of "1614556800.{body}" under the secret, as Stripe's libraries compute it.
        let expected = {
            let mut mac = Hmac::<Sha256>::new_from_slice(b"whsec_test").unwrap();
            mac.update(b"1614556800.");
            mac.update(BODY);
            hex::encode(mac.finalize().into_bytes())
        };
        assert_eq!(sign(SECRET, 1_614_556_800, BODY), expected);
    }
}
