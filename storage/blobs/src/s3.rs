//! The S3 backend (feature `s3`): object_store's `AmazonS3` for the bytes, its SigV4
//! [`Signer`] for presigned URLs, so those point at the bucket, not at memvault.

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::signer::{Method, SignedUrlOptions, Signer};
use object_store::{BackoffConfig, ClientOptions, RetryConfig};
use url::Url;

use crate::config::S3Config;
use crate::error::{BlobError, Result};
use crate::key::BlobKey;
use crate::objects::{MetadataPlacement, ObjectBlobStore, Presigner};
use crate::presign::{check_expiry, PresignMethod};

impl ObjectBlobStore {
    /// Blobs as objects in one bucket, at `{tenant}/{path}`; content type and digest as
    /// the object's `Content-Type` and `x-amz-meta-sha256`; presigned URLs are the
    /// bucket's own (SigV4). A client only: nothing is sent until the first call.
    pub fn s3(config: &S3Config) -> Result<Self> {
        Self::s3_builder(config, AmazonS3Builder::new())
    }

    /// As [`ObjectBlobStore::s3`], for a bucket someone else runs (a tenant's own): each
    /// request, connection included, gives up after `timeout` and is retried at most once,
    /// so an unreachable endpoint fails fast instead of after object_store's minutes of
    /// back-off.
    pub fn s3_with_timeout(config: &S3Config, timeout: Duration) -> Result<Self> {
        let builder = AmazonS3Builder::new()
            .with_client_options(
                ClientOptions::new()
                    .with_timeout(timeout)
                    .with_connect_timeout(timeout),
            )
            .with_retry(RetryConfig {
                backoff: BackoffConfig::default(),
                max_retries: 1,
                retry_timeout: timeout,
            });
        Self::s3_builder(config, builder)
    }

    fn s3_builder(config: &S3Config, builder: AmazonS3Builder) -> Result<Self> {
        // object_store's client is reqwest with rustls and no crypto provider chosen at
        // build time: ring, the one every TLS client in memvault uses, is installed as the
        // process default (once; a later call finds it there and changes nothing).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = builder
            .with_bucket_name(&config.bucket)
            .with_region(&config.region)
            .with_access_key_id(&config.access_key)
            .with_secret_access_key(&config.secret_key)
            .with_virtual_hosted_style_request(!config.force_path_style);
        if let Some(endpoint) = &config.endpoint_url {
            builder = builder
                .with_endpoint(endpoint)
                // A local test server speaks plain HTTP; only an explicit http:// allows it.
                .with_allow_http(endpoint.starts_with("http://"));
        }
        let client = Arc::new(
            builder
                .build()
                .map_err(|error| BlobError::Backend(error.to_string()))?,
        );
        Ok(Self::new(
            client.clone(),
            MetadataPlacement::Attributes,
            Presigner::S3(client),
        ))
    }
}

/// A SigV4 URL for `key` (the lifetime checked against S3's limits first).
pub(crate) async fn presign(
    client: &AmazonS3,
    method: PresignMethod,
    key: &BlobKey,
    expires_in: Duration,
) -> Result<Url> {
    check_expiry(expires_in)?;
    let (method, options) = match method {
        // Downloads as attachments, as memvault's own URLs are: S3 answers with
        // `Content-Disposition: attachment` when the (signed) query asks for it, so an
        // uploaded HTML file is never rendered inline.
        PresignMethod::Get => (
            Method::GET,
            SignedUrlOptions::new().with_query([("response-content-disposition", "attachment")]),
        ),
        PresignMethod::Put => (Method::PUT, SignedUrlOptions::new()),
    };
    client
        .signed_url_opts(method, &key.object_path(), expires_in, &options)
        .await
        .map_err(|error| BlobError::Backend(error.to_string()))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use memvault_s3_test_server::{Bucket, S3TestServer};
    use memvault_storage::TenantId;

    use super::*;
    use crate::blob_store::BlobStore;

    fn config(bucket: Bucket) -> S3Config {
        S3Config {
            endpoint_url: Some(bucket.endpoint_url),
            bucket: bucket.bucket,
            region: bucket.region,
            access_key: bucket.access_key,
            secret_key: bucket.secret_key,
            force_path_style: true,
        }
    }

    /// A store on a server of its own (kept alive with it).
    fn store() -> (ObjectBlobStore, S3TestServer) {
        let server = S3TestServer::start();
        let store = ObjectBlobStore::s3(&config(server.bucket("memvault"))).unwrap();
        (store, server)
    }

    crate::blob_suite!(s3, store);

    fn key(path: &str) -> BlobKey {
        BlobKey::new(&TenantId::generate(), path).unwrap()
    }

    /// A client with no credentials of any kind: only the URL's signature opens the door.
    fn anonymous() -> reqwest::Client {
        reqwest::Client::new()
    }

    fn with_query(url: &Url, name: &str, value: &str) -> Url {
        let mut changed = url.clone();
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(each, old)| {
                let new = if each == name {
                    value.to_owned()
                } else {
                    old.into_owned()
                };
                (each.into_owned(), new)
            })
            .collect();
        changed.query_pairs_mut().clear().extend_pairs(pairs);
        changed
    }

    #[tokio::test]
    async fn presigned_put_and_get_round_trip_without_credentials() {
        let (store, server) = store();
        let key = key("uploads/report v2 (final).pdf");
        let put = store
            .presign_put(&key, Duration::from_secs(300))
            .await
            .unwrap();
        assert!(
            put.as_str()
                .starts_with(&format!("{}/memvault/", server.endpoint())),
            "a path-style URL on the S3 server: {put}"
        );
        let body = Bytes::from_static(b"%PDF-1.4 bytes put straight into the bucket");
        let response = anonymous()
            .put(put.clone())
            .header("content-type", "application/pdf")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
        // The store sees the bytes; it did not compute their digest.
        assert_eq!(store.get(&key).await.unwrap(), body);
        let meta = store.head(&key).await.unwrap();
        assert_eq!(meta.size, body.len() as u64);
        assert_eq!(meta.content_type, "application/pdf");
        assert_eq!(meta.sha256, None);

        let get = store
            .presign_get(&key, Duration::from_secs(300))
            .await
            .unwrap();
        assert!(
            get.query_pairs().any(
                |(name, value)| name == "response-content-disposition" && value == "attachment"
            ),
            "a download URL asks for an attachment: {get}"
        );
        let response = anonymous().get(get).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.bytes().await.unwrap(), body);
    }

    #[tokio::test]
    async fn a_put_blob_downloads_through_its_presigned_url() {
        let (store, _server) = store();
        let key = key("images/photo.bin");
        let bytes: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
        store
            .put(&key, Bytes::from(bytes.clone()), "image/png")
            .await
            .unwrap();
        let url = store
            .presign_get(&key, Duration::from_secs(60))
            .await
            .unwrap();
        let response = anonymous().get(url).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "image/png");
        assert!(response.bytes().await.unwrap() == bytes);
    }

    #[tokio::test]
    async fn tampered_presigned_urls_are_refused() {
        let (store, _server) = store();
        let key = key("secret.txt");
        let other = BlobKey::new(key.tenant(), "other.txt").unwrap();
        for each in [&key, &other] {
            store
                .put(each, Bytes::from_static(b"secret"), "text/plain")
                .await
                .unwrap();
        }
        let get = store
            .presign_get(&key, Duration::from_secs(300))
            .await
            .unwrap();
        let signature = get
            .query_pairs()
            .find(|(name, _)| name == "X-Amz-Signature")
            .unwrap()
            .1
            .into_owned();
        let flipped: String = signature
            .chars()
            .enumerate()
            .map(|(index, char)| match (index, char) {
                (0, '0') => '1',
                (0, _) => '0',
                (_, char) => char,
            })
            .collect();
        let mut other_path = get.clone();
        other_path.set_path(&get.path().replace("secret.txt", "other.txt"));
        let variants = [
            ("signature", with_query(&get, "X-Amz-Signature", &flipped)),
            ("lifetime", with_query(&get, "X-Amz-Expires", "604800")),
            ("key", other_path),
        ];
        for (what, url) in variants {
            let response = anonymous().get(url.clone()).send().await.unwrap();
            let status = response.status();
            assert!(
                status.is_client_error(),
                "the URL with its {what} changed -> {status}: {url}"
            );
            assert_ne!(response.bytes().await.unwrap().as_ref(), b"secret");
        }
        // A GET URL does not allow a PUT.
        let response = anonymous()
            .put(get.clone())
            .body("overwritten")
            .send()
            .await
            .unwrap();
        assert!(response.status().is_client_error(), "{}", response.status());
        assert_eq!(
            store.get(&key).await.unwrap(),
            Bytes::from_static(b"secret")
        );
        let response = anonymous().get(get).send().await.unwrap();
        assert_eq!(response.status(), 200, "the untouched URL still works");
    }

    #[tokio::test]
    async fn expired_presigned_urls_are_refused() {
        let (store, _server) = store();
        let key = key("soon-gone.txt");
        store
            .put(&key, Bytes::from_static(b"brief"), "text/plain")
            .await
            .unwrap();
        let get = store
            .presign_get(&key, Duration::from_secs(1))
            .await
            .unwrap();
        let put = store
            .presign_put(&key, Duration::from_secs(1))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(2_100)).await;
        let response = anonymous().get(get).send().await.unwrap();
        assert_eq!(response.status(), 403, "an expired GET URL");
        let response = anonymous().put(put).body("late").send().await.unwrap();
        assert_eq!(response.status(), 403, "an expired PUT URL");
        assert_eq!(store.get(&key).await.unwrap(), Bytes::from_static(b"brief"));
    }

    #[tokio::test]
    async fn a_wrong_secret_is_refused_by_the_server() {
        let server = S3TestServer::start();
        server.bucket("memvault");
        let store =
            ObjectBlobStore::s3(&config(server.config("memvault", "not-the-secret"))).unwrap();
        let key = key("denied.txt");
        assert!(matches!(
            store
                .put(&key, Bytes::from_static(b"x"), "text/plain")
                .await,
            Err(BlobError::Backend(_))
        ));
        let url = store
            .presign_get(&key, Duration::from_secs(60))
            .await
            .unwrap();
        let response = anonymous().get(url).send().await.unwrap();
        assert!(response.status().is_client_error(), "{}", response.status());
    }

    #[tokio::test]
    async fn objects_live_in_the_bucket_at_tenant_slash_path() {
        let (store, server) = store();
        let key = key("docs/a.txt");
        store
            .put(&key, Bytes::from_static(b"on disk"), "text/plain")
            .await
            .unwrap();
        let file = server
            .root()
            .join("memvault")
            .join(key.tenant().as_str())
            .join("docs/a.txt");
        assert_eq!(std::fs::read(&file).unwrap(), b"on disk");
        store.delete(&key).await.unwrap();
        assert!(!file.exists(), "the object outlived its delete");
    }
}
