//! One behavioural test suite for every [`BlobStore`] implementation (feature `testing`).
//!
//! [`blob_suite!`](crate::blob_suite!) turns it into one `#[test]` per check for a backend,
//! so a failing backend names the failing check:
//!
//! ```ignore
//! memvault_blobs::blob_suite!(local, || {
//!     let directory = tempfile::tempdir().unwrap();
//!     let store = ObjectBlobStore::local(directory.path(), test_signer()).unwrap();
//!     (store, directory) // the second value is kept alive for the test's length
//! });
//! ```
//!
//! Every check makes its own random tenants, so backends that share state between tests
//! (one S3 bucket) can run the suite too. A check panics on the first broken expectation.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use memvault_storage::TenantId;
use percent_encoding::percent_decode_str;
use sha2::{Digest, Sha256};
use url::Url;

use crate::blob_store::{BlobStore, MAX_PRESIGN_EXPIRY};
use crate::error::BlobError;
use crate::key::{BlobKey, BlobPrefix};
use crate::presign::{PresignMethod, UrlSigner, PRESIGNED_PATH};

/// Generates `mod $backend` with one `#[test]` per check of the suite. `$factory` is a
/// closure returning `(store, keep_alive)`: a fresh store, and whatever must outlive it
/// (a temporary directory; `()` when nothing).
#[macro_export]
macro_rules! blob_suite {
    ($backend:ident, $factory:expr) => {
        mod $backend {
            #[allow(unused_imports)]
            use super::*;

            $crate::blob_suite!(@checks $factory;
                round_trip,
                put_reports_size_and_sha256,
                overwrite_replaces_bytes_and_metadata,
                missing_blob_is_not_found,
                delete_removes_and_a_missing_one_is_ok,
                delete_tenant_removes_its_blobs_only,
                list_sees_only_its_tenant_and_prefix,
                odd_names_round_trip_and_escapes_are_refused,
                presigned_urls_verify_and_expire,
                a_few_megabytes_round_trip,
            );
        }
    };
    (@checks $factory:expr; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                let (store, _keep_alive) = ($factory)();
                $crate::blob_suite::block_on($crate::blob_suite::$check(&store));
            }
        )*
    };
}

/// Runs one check on a fresh runtime (the blocking-thread pool included, which the local
/// backend uses).
pub fn block_on<F: Future>(check: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a test runtime")
        .block_on(check)
}

/// The signer the suite verifies memvault-signed URLs with; factories of backends that
/// use memvault's own URLs must build them with it.
pub fn test_signer() -> UrlSigner {
    UrlSigner::new(
        "http://127.0.0.1:8420",
        b"memvault-blob-suite-secret".to_vec(),
    )
    .expect("a valid test signer")
}

fn key(tenant: &TenantId, path: &str) -> BlobKey {
    BlobKey::new(tenant, path).unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn paths_of(entries: &[crate::BlobEntry]) -> Vec<String> {
    entries.iter().map(|entry| entry.key.as_string()).collect()
}

pub async fn round_trip(store: &dyn BlobStore) {
    let key = key(&TenantId::generate(), "notes/hello.txt");
    store
        .put(&key, Bytes::from_static(b"hello, blobs"), "text/plain")
        .await
        .unwrap();
    assert_eq!(
        store.get(&key).await.unwrap(),
        Bytes::from_static(b"hello, blobs")
    );
    let meta = store.head(&key).await.unwrap();
    assert_eq!(meta.key, key);
    assert_eq!(meta.content_type, "text/plain");
    assert_eq!(meta.size, 12);
}

pub async fn put_reports_size_and_sha256(store: &dyn BlobStore) {
    let key = key(&TenantId::generate(), "abc.bin");
    let receipt = store
        .put(&key, Bytes::from_static(b"abc"), "application/octet-stream")
        .await
        .unwrap();
    assert_eq!(receipt.size, 3);
    // The FIPS 180-2 test vector for "abc".
    assert_eq!(
        receipt.sha256,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let meta = store.head(&key).await.unwrap();
    assert_eq!(meta.size, 3);
    assert_eq!(meta.sha256.as_deref(), Some(receipt.sha256.as_str()));

    let empty = crate::key::BlobKey::new(key.tenant(), "empty.bin").unwrap();
    let receipt = store.put(&empty, Bytes::new(), "text/plain").await.unwrap();
    assert_eq!(receipt.size, 0);
    assert_eq!(receipt.sha256, sha256_hex(b""));
    assert_eq!(store.get(&empty).await.unwrap(), Bytes::new());
}

pub async fn overwrite_replaces_bytes_and_metadata(store: &dyn BlobStore) {
    let key = key(&TenantId::generate(), "doc");
    store
        .put(&key, Bytes::from_static(b"first version"), "text/plain")
        .await
        .unwrap();
    let receipt = store
        .put(&key, Bytes::from_static(b"{\"v\":2}"), "application/json")
        .await
        .unwrap();
    assert_eq!(
        store.get(&key).await.unwrap(),
        Bytes::from_static(b"{\"v\":2}")
    );
    let meta = store.head(&key).await.unwrap();
    assert_eq!(meta.content_type, "application/json");
    assert_eq!(meta.size, 7);
    assert_eq!(meta.sha256, Some(receipt.sha256));
    let listed = store
        .list(&BlobPrefix::tenant(key.tenant()).unwrap())
        .await
        .unwrap();
    assert_eq!(listed.len(), 1, "an overwrite left two blobs: {listed:?}");
}

pub async fn missing_blob_is_not_found(store: &dyn BlobStore) {
    let key = key(&TenantId::generate(), "never/written.txt");
    assert!(
        matches!(store.get(&key).await, Err(BlobError::NotFound { .. })),
        "get of a missing blob is not NotFound"
    );
    assert!(
        matches!(store.head(&key).await, Err(BlobError::NotFound { .. })),
        "head of a missing blob is not NotFound"
    );
}

pub async fn delete_removes_and_a_missing_one_is_ok(store: &dyn BlobStore) {
    let tenant = TenantId::generate();
    let doomed = key(&tenant, "a/doomed.txt");
    let kept = key(&tenant, "a/kept.txt");
    for each in [&doomed, &kept] {
        store
            .put(each, Bytes::from_static(b"x"), "text/plain")
            .await
            .unwrap();
    }
    store.delete(&doomed).await.unwrap();
    assert!(matches!(
        store.get(&doomed).await,
        Err(BlobError::NotFound { .. })
    ));
    assert_eq!(store.get(&kept).await.unwrap(), Bytes::from_static(b"x"));
    store.delete(&doomed).await.unwrap();
    store.delete(&key(&tenant, "never/written")).await.unwrap();
    let listed = store
        .list(&BlobPrefix::tenant(&tenant).unwrap())
        .await
        .unwrap();
    assert_eq!(paths_of(&listed), vec![kept.as_string()]);
}

pub async fn list_sees_only_its_tenant_and_prefix(store: &dyn BlobStore) {
    let tenant = TenantId::generate();
    let other = TenantId::generate();
    for (owner, path) in [
        (&tenant, "docs/a.txt"),
        (&tenant, "docs/2026/b.txt"),
        (&tenant, "docs-old/c.txt"),
        (&tenant, "images/d.png"),
        (&other, "docs/a.txt"),
    ] {
        store
            .put(
                &key(owner, path),
                Bytes::from_static(b"12345"),
                "text/plain",
            )
            .await
            .unwrap();
    }
    let docs = store
        .list(&BlobPrefix::new(&tenant, "docs").unwrap())
        .await
        .unwrap();
    assert_eq!(
        paths_of(&docs),
        vec![
            format!("{tenant}/docs/2026/b.txt"),
            format!("{tenant}/docs/a.txt"),
        ],
        "the prefix matches whole segments, of this tenant only"
    );
    assert!(docs.iter().all(|entry| entry.size == 5));
    let everything = store
        .list(&BlobPrefix::tenant(&tenant).unwrap())
        .await
        .unwrap();
    assert_eq!(everything.len(), 4);
    assert!(everything.iter().all(|entry| entry.key.tenant() == &tenant));
    let nothing = store
        .list(&BlobPrefix::tenant(&TenantId::generate()).unwrap())
        .await
        .unwrap();
    assert!(nothing.is_empty());
}

pub async fn odd_names_round_trip_and_escapes_are_refused(store: &dyn BlobStore) {
    let tenant = TenantId::generate();
    for escape in ["../x", "/x", "a//b", "a/./b", "a/\u{1b}b", "a\\..\\b", ""] {
        assert!(
            matches!(
                BlobKey::new(&tenant, escape),
                Err(BlobError::InvalidKey { .. })
            ),
            "{escape:?} was accepted as a key"
        );
    }
    let odd = key(&tenant, "Übersicht 2026/q1 #1 [draft] 100% ?.txt");
    store
        .put(&odd, Bytes::from_static(b"odd"), "text/plain")
        .await
        .unwrap();
    assert_eq!(store.get(&odd).await.unwrap(), Bytes::from_static(b"odd"));
    let listed = store
        .list(&BlobPrefix::tenant(&tenant).unwrap())
        .await
        .unwrap();
    assert_eq!(paths_of(&listed), vec![odd.as_string()]);
    // A name that spells an escape once decoded stays a plain name inside the tenant.
    let encoded = key(&tenant, "%2E%2E");
    store
        .put(&encoded, Bytes::from_static(b"dots"), "text/plain")
        .await
        .unwrap();
    assert_eq!(
        store.get(&encoded).await.unwrap(),
        Bytes::from_static(b"dots")
    );
    assert_eq!(
        store
            .list(&BlobPrefix::tenant(&tenant).unwrap())
            .await
            .unwrap()
            .len(),
        2
    );
}

pub async fn presigned_urls_verify_and_expire(store: &dyn BlobStore) {
    let key = key(&TenantId::generate(), "shared/report v2.pdf");
    for bad in [Duration::ZERO, MAX_PRESIGN_EXPIRY + Duration::from_secs(1)] {
        assert!(
            matches!(
                store.presign_get(&key, bad).await,
                Err(BlobError::InvalidExpiry { .. })
            ),
            "a lifetime of {bad:?} was accepted"
        );
    }
    let get = store
        .presign_get(&key, Duration::from_secs(300))
        .await
        .unwrap();
    let put = store
        .presign_put(&key, Duration::from_secs(300))
        .await
        .unwrap();
    assert_ne!(get, put, "GET and PUT URLs must differ");
    if query(&get, "sig").is_some() {
        check_memvault_url(&get, &key, PresignMethod::Get);
        check_memvault_url(&put, &key, PresignMethod::Put);
    } else {
        for url in [&get, &put] {
            assert!(
                query(url, "X-Amz-Signature").is_some(),
                "unsigned URL {url}"
            );
            assert_eq!(query(url, "X-Amz-Expires").as_deref(), Some("300"));
        }
    }
}

fn query(url: &Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(each, _)| each == name)
        .map(|(_, value)| value.into_owned())
}

/// A memvault URL names its key, verifies for its own method until it expires, and for
/// nothing else.
fn check_memvault_url(url: &Url, key: &BlobKey, method: PresignMethod) {
    let signer = test_signer();
    let encoded = url
        .path()
        .strip_prefix(PRESIGNED_PATH)
        .unwrap_or_else(|| panic!("{url} is not under {PRESIGNED_PATH}"));
    let decoded = percent_decode_str(encoded).decode_utf8().unwrap();
    assert_eq!(&BlobKey::parse(&decoded).unwrap(), key);
    let expires: i64 = query(url, "expires").unwrap().parse().unwrap();
    let sig = query(url, "sig").unwrap();
    let now = Utc::now();
    assert!(
        (expires - now.timestamp() - 300).abs() <= 5,
        "expires is not now + 300 s"
    );
    signer
        .verify_presigned(method, key, expires, &sig, now)
        .unwrap();
    let after = chrono::DateTime::from_timestamp(expires, 0).unwrap();
    assert!(matches!(
        signer.verify_presigned(method, key, expires, &sig, after),
        Err(BlobError::Expired)
    ));
    assert!(matches!(
        signer.verify_presigned(method, key, expires + 3600, &sig, now),
        Err(BlobError::BadSignature)
    ));
    let other_method = match method {
        PresignMethod::Get => PresignMethod::Put,
        PresignMethod::Put => PresignMethod::Get,
    };
    assert!(matches!(
        signer.verify_presigned(other_method, key, expires, &sig, now),
        Err(BlobError::BadSignature)
    ));
    let other_key = BlobKey::new(key.tenant(), "shared/other.pdf").unwrap();
    assert!(matches!(
        signer.verify_presigned(method, &other_key, expires, &sig, now),
        Err(BlobError::BadSignature)
    ));
}

pub async fn a_few_megabytes_round_trip(store: &dyn BlobStore) {
    let key = key(&TenantId::generate(), "big/archive.bin");
    let bytes: Vec<u8> = (0..5 * 1024 * 1024_u32)
        .map(|index| (index.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let expected_sha256 = sha256_hex(&bytes);
    let receipt = store
        .put(&key, Bytes::from(bytes.clone()), "application/zip")
        .await
        .unwrap();
    assert_eq!(receipt.size, bytes.len() as u64);
    assert_eq!(receipt.sha256, expected_sha256);
    let read = store.get(&key).await.unwrap();
    assert_eq!(read.len(), bytes.len());
    assert!(read == bytes, "a large blob came back different");
    assert_eq!(store.head(&key).await.unwrap().size, bytes.len() as u64);
}

pub async fn delete_tenant_removes_its_blobs_only(store: &dyn BlobStore) {
    let (doomed, kept) = (TenantId::generate(), TenantId::generate());
    for tenant in [&doomed, &kept] {
        for path in ["files/a/one.txt", "files/b/two.txt", "images/three.png"] {
            store
                .put(&key(tenant, path), Bytes::from_static(b"x"), "text/plain")
                .await
                .unwrap();
        }
    }
    assert_eq!(store.delete_tenant(&doomed).await.unwrap(), 3);
    let all = |tenant: &TenantId| BlobPrefix::tenant(tenant).unwrap();
    assert!(store.list(&all(&doomed)).await.unwrap().is_empty());
    assert_eq!(store.list(&all(&kept)).await.unwrap().len(), 3);
    assert_eq!(store.delete_tenant(&doomed).await.unwrap(), 0);
}
