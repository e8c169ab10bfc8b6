//! memvault's own presigned URLs, for the backends that have no URL signing of their own
//! (the local directory, the in-memory test store). memvault serves them itself:
//! `{public_url}/v1/blobs/{key}?expires=<unix seconds>&sig=<hex HMAC-SHA256>`, where the
//! MAC covers the method, the full key and the expiry, so a URL can be used neither for
//! another blob, nor for the other method, nor after it expires. Each tenant's URLs are
//! signed with a key derived for that tenant from the server secret.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use url::Url;

use crate::blob_store::MAX_PRESIGN_EXPIRY;
use crate::error::{BlobError, Result};
use crate::key::BlobKey;

/// The path under `public_url` that memvault serves presigned blobs from.
pub const PRESIGNED_PATH: &str = "/v1/blobs/";

/// The shortest signing secret accepted: 128 bits.
pub const MIN_SECRET_LEN: usize = 16;

/// What a presigned URL allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresignMethod {
    Get,
    Put,
}

impl PresignMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Put => "PUT",
        }
    }
}

/// Signs and verifies memvault's presigned URLs.
#[derive(Clone)]
pub struct UrlSigner {
    /// `server.public_url`: the base of every link memvault hands out.
    public_url: Url,
    /// The HMAC key; whoever holds it can mint URLs, so it never leaves the server.
    secret: Vec<u8>,
}

impl fmt::Debug for UrlSigner {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("UrlSigner")
            .field("public_url", &self.public_url.as_str())
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl UrlSigner {
    /// A signer for URLs under `public_url` (e.g. `http://127.0.0.1:8420`), with a secret
    /// of at least [`MIN_SECRET_LEN`] bytes.
    pub fn new(public_url: &str, secret: impl Into<Vec<u8>>) -> Result<Self> {
        let public_url = Url::parse(public_url)
            .map_err(|error| BlobError::Backend(format!("invalid public_url: {error}")))?;
        if public_url.cannot_be_a_base() {
            return Err(BlobError::Backend(
                "public_url cannot be a base URL".to_owned(),
            ));
        }
        let secret = secret.into();
        if secret.len() < MIN_SECRET_LEN {
            return Err(BlobError::Backend(format!(
                "presign secret must be at least {MIN_SECRET_LEN} bytes"
            )));
        }
        Ok(Self { public_url, secret })
    }

    /// The URL that allows `method` on `key` until `now + expires_in`.
    pub fn sign(
        &self,
        method: PresignMethod,
        key: &BlobKey,
        expires_in: Duration,
        now: DateTime<Utc>,
    ) -> Result<Url> {
        check_expiry(expires_in)?;
        let expires = now.timestamp() + expires_in.as_secs() as i64;
        let signature = hex::encode(self.mac(method, key, expires).finalize().into_bytes());
        let mut url = self.public_url.clone();
        {
            let mut segments = url
                .path_segments_mut()
                .map_err(|()| BlobError::Backend("public_url cannot be a base URL".to_owned()))?;
            segments.pop_if_empty();
            segments.extend(PRESIGNED_PATH.split('/').filter(|part| !part.is_empty()));
            segments.push(key.tenant().as_str());
            segments.extend(key.path().split('/'));
        }
        url.query_pairs_mut()
            .clear()
            .append_pair("expires", &expires.to_string())
            .append_pair("sig", &signature);
        Ok(url)
    }

    /// Checks a presigned request: `sig` must be this server's MAC of `method`, `key` and
    /// `expires` (compared in constant time), else [`BlobError::BadSignature`]; then `now`
    /// must be before `expires`, else [`BlobError::Expired`].
    pub fn verify_presigned(
        &self,
        method: PresignMethod,
        key: &BlobKey,
        expires: i64,
        sig: &str,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let claimed = hex::decode(sig).map_err(|_| BlobError::BadSignature)?;
        self.mac(method, key, expires)
            .verify_slice(&claimed)
            .map_err(|_| BlobError::BadSignature)?;
        if now.timestamp() >= expires {
            return Err(BlobError::Expired);
        }
        Ok(())
    }

    /// The MAC of a URL, keyed by a key derived for the key's tenant (HMAC of the tenant id
    /// under the server secret), so no two tenants' URLs share a signing key.
    fn mac(&self, method: PresignMethod, key: &BlobKey, expires: i64) -> Hmac<Sha256> {
        let mut derive =
            Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC takes a key of any length");
        derive.update(format!("memvault blob URLs\n{}", key.tenant()).as_bytes());
        let tenant_key = derive.finalize().into_bytes();
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&tenant_key).expect("HMAC takes a key of any length");
        // Keys hold no control characters, so '\n' separates the fields unambiguously.
        mac.update(format!("{}\n{}\n{}", method.as_str(), key, expires).as_bytes());
        mac
    }
}

/// Refuses a lifetime of zero or beyond [`MAX_PRESIGN_EXPIRY`].
pub(crate) fn check_expiry(expires_in: Duration) -> Result<()> {
    if expires_in.as_secs() == 0 || expires_in > MAX_PRESIGN_EXPIRY {
        return Err(BlobError::InvalidExpiry {
            max_secs: MAX_PRESIGN_EXPIRY.as_secs(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use memvault_storage::TenantId;

    fn signer() -> UrlSigner {
        UrlSigner::new(
            "https://memvault.example/base/",
            b"0123456789abcdef".to_vec(),
        )
        .unwrap()
    }

    fn key() -> BlobKey {
        BlobKey::new(&TenantId::from_stored("ten_a"), "dir/a b#1.txt").unwrap()
    }

    fn query(url: &Url, name: &str) -> String {
        url.query_pairs()
            .find(|(each, _)| each == name)
            .map(|(_, value)| value.into_owned())
            .unwrap()
    }

    #[test]
    fn the_url_has_the_documented_shape() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let url = signer()
            .sign(PresignMethod::Get, &key(), Duration::from_secs(60), now)
            .unwrap();
        assert_eq!(url.path(), "/base/v1/blobs/ten_a/dir/a%20b%231.txt");
        assert_eq!(query(&url, "expires"), "1800000060");
        assert_eq!(query(&url, "sig").len(), 64);
    }

    #[test]
    fn a_short_secret_or_a_non_base_url_is_refused() {
        assert!(UrlSigner::new("https://memvault.example", b"short".to_vec()).is_err());
        assert!(UrlSigner::new("mailto:a@b", b"0123456789abcdef".to_vec()).is_err());
    }

    #[test]
    fn a_signature_from_another_secret_is_refused() {
        let now = Utc::now();
        let url = signer()
            .sign(PresignMethod::Get, &key(), Duration::from_secs(60), now)
            .unwrap();
        let other =
            UrlSigner::new("https://memvault.example", b"fedcba9876543210".to_vec()).unwrap();
        let expires: i64 = query(&url, "expires").parse().unwrap();
        assert!(matches!(
            other.verify_presigned(
                PresignMethod::Get,
                &key(),
                expires,
                &query(&url, "sig"),
                now
            ),
            Err(BlobError::BadSignature)
        ));
        assert!(matches!(
            signer().verify_presigned(PresignMethod::Get, &key(), expires, "not hex", now),
            Err(BlobError::BadSignature)
        ));
    }
}
