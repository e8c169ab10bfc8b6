//! The `X-Service-Signature` header: lowercase hex of HMAC-SHA256 over the raw request
//! body, keyed by the UTF-8 bytes of the whole signing secret as shown to the tenant
//! (`whsec_...`, prefix included). No `sha256=` prefix, no timestamp.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Hex HMAC-SHA256 of `body` under `secret`.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    // HMAC takes a key of any length, so this never fails.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts any key length");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_rfc_4231_test_case_2() {
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn matches_rfc_4231_test_case_1() {
        assert_eq!(
            signature(&[0x0b; 20], b"Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }

    #[test]
    fn depends_on_every_byte_of_the_body_and_the_secret() {
        let base = signature(b"whsec_a", b"{\"a\":1}");
        assert_ne!(base, signature(b"whsec_b", b"{\"a\":1}"));
        assert_ne!(base, signature(b"whsec_a", b"{\"a\":2}"));
        assert_eq!(base.len(), 64);
    }
}
