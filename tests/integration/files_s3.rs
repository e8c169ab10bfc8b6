//! Files on S3: a memvault server whose `[blobs]` backend is a real S3-compatible server
//! (s3s over a temporary directory, SigV4 verified, path style). Originals dropped through
//! memvault land in the bucket and download through S3's own presigned URLs with no key;
//! presigned uploads go straight to the bucket and are checked at `drop/complete` by the
//! stored object's real size; deleting a memory deletes its object.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use memvault_blobs::{BlobError, BlobKey, BlobStore, ObjectBlobStore, S3Config};
use memvault_s3_test_server::S3TestServer;
use reqwest::blocking::Client as HttpClient;
use reqwest::Url;
use serde_json::{json, Value};

use crate::support::{
    expect_status, memories_path, start_in_process, tenant_on, unique, Client, TestServer,
};

const BUCKET: &str = "memvault-files";
const PDF: &str = "google-doc-document.pdf";
const PDF_PHRASE: &str = "Beautiful is better than ugly";

struct Setup {
    s3: S3TestServer,
    bucket: S3Config,
    memvault: TestServer,
}

/// One S3 server and one memvault server storing its files there, for this module.
fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let s3 = S3TestServer::start();
        let bucket = s3.bucket(BUCKET);
        let bucket = S3Config {
            endpoint_url: Some(bucket.endpoint_url),
            bucket: bucket.bucket,
            region: bucket.region,
            access_key: bucket.access_key,
            secret_key: bucket.secret_key,
            force_path_style: true,
        };
        let memvault = start_in_process(|config| {
            config.blobs.backend = "s3".into();
            config.blobs.endpoint_url = bucket.endpoint_url.clone();
            config.blobs.bucket = Some(bucket.bucket.clone());
            config.blobs.region = bucket.region.clone();
            config.blobs.access_key = Some(bucket.access_key.clone());
            config.blobs.secret_key = Some(bucket.secret_key.clone());
            config.blobs.force_path_style = true;
        });
        Setup {
            s3,
            bucket,
            memvault,
        }
    })
}

fn corpus(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/files")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A client with no key and no credentials: only a URL's own signature opens the door.
fn anonymous() -> HttpClient {
    HttpClient::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// `POST C/{collection}/drop` with each file as a part named `files`.
fn drop_files(client: &Client, collection: &str, files: &[(&str, &[u8], &str)]) -> Value {
    let boundary = "memvault-s3-test-boundary-7f3a9c";
    let mut body = Vec::new();
    for (name, bytes, mime) in files {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; \
                 filename=\"{name}\"\r\nContent-Type: {mime}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    expect_status(
        client.post_raw(
            &format!("/v1/memory/collections/{collection}/drop"),
            &body,
            &format!("multipart/form-data; boundary={boundary}"),
        ),
        201,
    )
}

/// The collection's memories; none when nothing made it exist (a collection is created
/// by its first memory).
fn memories(client: &Client, collection: &str) -> Vec<Value> {
    let response = client.get(&format!("{}?limit=100", memories_path(collection)));
    if response.status() == 404 {
        let body: Value = response.json().unwrap();
        assert_eq!(body["code"], "collection_not_found", "{body}");
        return Vec::new();
    }
    expect_status(response, 200)
        .as_array()
        .expect("an array of memories")
        .clone()
}

fn search_texts(client: &Client, collection: &str, query: &str) -> Vec<String> {
    let body = expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &json!({"query": query, "mode": "text"}),
        ),
        200,
    );
    body["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|item| squash(item["text"].as_str().unwrap_or_default()))
        .collect()
}

/// Whitespace runs as one space (extracted PDF text breaks lines anywhere).
fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn wait_for_batch(client: &Client, batch_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let batch = expect_status(
            client.get(&format!("/v1/memory/ingest/batch/{batch_id}")),
            200,
        );
        if batch["complete"] == true {
            return batch;
        }
        assert!(Instant::now() < deadline, "batch not complete: {batch}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The blob key an S3 URL of this bucket names (path style: `/{bucket}/{tenant}/{path}`).
fn key_of(url: &Url) -> BlobKey {
    let path = url
        .path()
        .strip_prefix(&format!("/{BUCKET}/"))
        .unwrap_or_else(|| panic!("{url} is not in bucket {BUCKET}"));
    BlobKey::parse(&decode(path)).unwrap()
}

/// Percent-decodes a URL path (the key names here are ASCII).
fn decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match (bytes[index], path.get(index + 1..index + 3)) {
            (b'%', Some(hex)) if u8::from_str_radix(hex, 16).is_ok() => {
                decoded.push(u8::from_str_radix(hex, 16).unwrap());
                index += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8(decoded).unwrap()
}

/// Whether the bucket holds `key`, asked of the S3 server with the bucket's credentials.
fn object_exists(key: &BlobKey) -> bool {
    let store = ObjectBlobStore::s3(&setup().bucket).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    match runtime.block_on(store.head(key)) {
        Ok(_) => true,
        Err(BlobError::NotFound { .. }) => false,
        Err(error) => panic!("HEAD {key}: {error}"),
    }
}

/// An `images` entry's URL: S3's own SigV4 URL on the S3 server, not memvault's.
fn s3_url(image: &Value) -> Url {
    let url = Url::parse(image["url"].as_str().expect("an images entry with a url")).unwrap();
    let s3 = Url::parse(setup().s3.endpoint()).unwrap();
    assert_eq!(
        url.origin(),
        s3.origin(),
        "the file URL points at the S3 server: {url}"
    );
    assert_ne!(
        url.origin(),
        Url::parse(&setup().memvault.base_url).unwrap().origin()
    );
    assert!(
        url.query_pairs().any(|(name, _)| name == "X-Amz-Signature"),
        "a SigV4 presigned URL: {url}"
    );
    url
}

#[test]
fn a_dropped_pdf_is_searchable_and_its_original_downloads_from_s3_without_a_key() {
    let client = tenant_on(&setup().memvault);
    let collection = unique("s3-drop");
    let pdf = corpus(PDF);
    let body = drop_files(&client, &collection, &[(PDF, &pdf, "application/pdf")]);
    assert_eq!(body["results"].as_array().map(Vec::len), Some(1), "{body}");

    let found = search_texts(&client, &collection, PDF_PHRASE);
    assert!(
        found.iter().any(|text| text.contains(PDF_PHRASE)),
        "search did not find {PDF_PHRASE:?}: {found:?}"
    );

    let stored = memories(&client, &collection);
    assert!(!stored.is_empty());
    let url = s3_url(&stored[0]["images"][0]);
    let response = anonymous().get(url.clone()).send().unwrap();
    assert_eq!(response.status(), 200, "GET {url}");
    assert!(
        response.bytes().unwrap().as_ref() == pdf.as_slice(),
        "the original's exact bytes"
    );
    // Every memory made from the file links the same object.
    for memory in &stored {
        assert_eq!(key_of(&s3_url(&memory["images"][0])), key_of(&url));
    }

    // Deleting the memories made from the file deletes the object (the last one frees it).
    let key = key_of(&url);
    assert!(object_exists(&key));
    for memory in &stored {
        let id = memory["id"].as_str().unwrap();
        expect_status(
            client.delete(&format!("{}/{id}", memories_path(&collection))),
            204,
        );
    }
    assert!(!object_exists(&key), "the object outlived its memories");
    let response = anonymous().get(url).send().unwrap();
    assert_eq!(response.status(), 404, "the URL of a deleted file");
}

/// `drop/presign` for these files; their uploads (`key`, `url`).
fn presign(client: &Client, collection: &str, files: &[(&str, u64, &str)]) -> Vec<Value> {
    let specs: Vec<Value> = files
        .iter()
        .map(|(name, size, mime)| json!({"filename": name, "content_type": mime, "size": size}))
        .collect();
    let body = expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/drop/presign"),
            &json!(specs),
        ),
        200,
    );
    let uploads = body["uploads"].as_array().expect("uploads").clone();
    assert_eq!(uploads.len(), files.len(), "{body}");
    uploads
}

fn put_to(url: &str, bytes: Vec<u8>, mime: &str) {
    let response = anonymous()
        .put(url)
        .header("content-type", mime)
        .body(bytes)
        .send()
        .unwrap();
    let status = response.status();
    assert!(
        status.is_success(),
        "PUT {url} -> {status} {}",
        response.text().unwrap_or_default()
    );
}

fn complete(client: &Client, collection: &str, items: Value) -> Value {
    expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/drop/complete"),
            &items,
        ),
        202,
    )
}

#[test]
fn presign_put_to_s3_complete_then_search_and_delete() {
    let client = tenant_on(&setup().memvault);
    let collection = unique("s3-presign");
    let word = unique("quillwort").replace('-', "");
    let text = format!("{word} went straight into the bucket before memvault saw it.");
    let uploads = presign(
        &client,
        &collection,
        &[("direct.txt", text.len() as u64, "text/plain")],
    );
    let (key, url) = (
        uploads[0]["key"].as_str().unwrap().to_owned(),
        uploads[0]["url"].as_str().unwrap().to_owned(),
    );
    let parsed = Url::parse(&url).unwrap();
    assert_eq!(
        parsed.origin(),
        Url::parse(setup().s3.endpoint()).unwrap().origin(),
        "the upload URL points at the S3 server: {url}"
    );
    assert_eq!(key_of(&parsed).as_string(), key);
    put_to(&url, text.clone().into_bytes(), "text/plain");

    let body = complete(
        &client,
        &collection,
        json!([{"key": key, "filename": "direct.txt", "mime": "text/plain", "size": text.len()}]),
    );
    assert_eq!(body["queued"], 1, "{body}");
    assert_eq!(body["rejected"], json!([]), "{body}");
    let batch = wait_for_batch(&client, body["batch_id"].as_str().unwrap());
    assert_eq!(batch["done"], 1, "{batch}");
    assert_eq!(batch["failed"], 0, "{batch}");
    let found = search_texts(&client, &collection, &word);
    assert!(found.iter().any(|each| each.contains(&word)), "{found:?}");

    // The memory's file is the uploaded object; deleting the memory deletes it.
    let stored = memories(&client, &collection);
    assert_eq!(stored.len(), 1, "{stored:?}");
    let object = key_of(&s3_url(&stored[0]["images"][0]));
    assert!(object_exists(&object));
    let id = stored[0]["id"].as_str().unwrap();
    expect_status(
        client.delete(&format!("{}/{id}", memories_path(&collection))),
        204,
    );
    assert!(!object_exists(&object), "the object outlived its memory");
}

#[test]
fn complete_rejects_another_tenants_key() {
    let setup = setup();
    let (mine, theirs) = (tenant_on(&setup.memvault), tenant_on(&setup.memvault));
    let (my_collection, their_collection) = (unique("s3-mine"), unique("s3-theirs"));
    let secret = unique("hornbeam").replace('-', "");
    let text = format!("{secret} belongs to another tenant.");
    let uploads = presign(
        &theirs,
        &their_collection,
        &[("theirs.txt", text.len() as u64, "text/plain")],
    );
    let their_key = uploads[0]["key"].as_str().unwrap().to_owned();
    put_to(
        uploads[0]["url"].as_str().unwrap(),
        text.clone().into_bytes(),
        "text/plain",
    );

    let body = complete(
        &mine,
        &my_collection,
        json!([{"key": their_key, "filename": "theirs.txt", "mime": "text/plain"}]),
    );
    assert_eq!(body["queued"], 0, "{body}");
    assert_eq!(body["rejected"].as_array().map(Vec::len), Some(1), "{body}");
    wait_for_batch(&mine, body["batch_id"].as_str().unwrap());
    assert!(
        !memories(&mine, &my_collection)
            .iter()
            .any(|memory| memory["text"]
                .as_str()
                .unwrap_or_default()
                .contains(&secret)),
        "another tenant's upload was ingested"
    );

    // Untouched: its owner still ingests it.
    let body = complete(
        &theirs,
        &their_collection,
        json!([{"key": their_key, "filename": "theirs.txt", "mime": "text/plain"}]),
    );
    assert_eq!(body["queued"], 1, "{body}");
    let batch = wait_for_batch(&theirs, body["batch_id"].as_str().unwrap());
    assert_eq!(batch["done"], 1, "{batch}");
}

#[test]
fn an_upload_over_10_mib_is_rejected_at_complete_by_its_real_size() {
    let client = tenant_on(&setup().memvault);
    let collection = unique("s3-oversize");
    // Signed for 100 bytes; S3 cannot cap a presigned PUT, so 11 MiB arrive.
    let uploads = presign(&client, &collection, &[("small.txt", 100, "text/plain")]);
    let key = uploads[0]["key"].as_str().unwrap().to_owned();
    let oversize = vec![b'a'; 11 * 1024 * 1024];
    put_to(uploads[0]["url"].as_str().unwrap(), oversize, "text/plain");
    let object = BlobKey::parse(&key).unwrap();
    assert!(object_exists(&object));

    let body = complete(
        &client,
        &collection,
        json!([{"key": key, "filename": "small.txt", "mime": "text/plain", "size": 100}]),
    );
    assert_eq!(body["queued"], 0, "{body}");
    let rejected = body["rejected"].as_array().expect("rejected");
    assert_eq!(rejected.len(), 1, "{body}");
    let reason = rejected[0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&(11 * 1024 * 1024).to_string()),
        "the reason names the real size: {reason}"
    );
    let batch = wait_for_batch(&client, body["batch_id"].as_str().unwrap());
    assert_eq!(batch["done"], 0, "{batch}");
    assert!(memories(&client, &collection).is_empty());
    assert!(
        !object_exists(&object),
        "the oversize object was left in the bucket"
    );
}
