//! A tenant's own bucket (`GET/PUT/DELETE /v1/memory/storage/config`): a memvault server
//! storing files locally, and a real S3-compatible server (s3s over a temporary directory,
//! SigV4 verified) that one tenant configures as its own. The PUT saves only after a live
//! self-test; the tenant's new files land in its bucket and download through S3's own
//! URLs; another tenant is unaffected; DELETE reverts to the platform's storage and the
//! files left in the bucket are listed without a URL until the bucket is configured again.

use std::sync::OnceLock;
use std::time::Duration;

use memvault_s3_test_server::Bucket;
use memvault_s3_test_server::S3TestServer;
use reqwest::blocking::Client as HttpClient;
use reqwest::Url;
use serde_json::{json, Value};

use crate::support::{
    expect_error, expect_status, memories_path, shared, start_in_process, tenant_on, unique,
    Client, TestServer,
};

const CONFIG: &str = "/v1/memory/storage/config";

struct Setup {
    s3: S3TestServer,
    memvault: TestServer,
}

/// One S3 server, and one memvault server on local storage that lets a tenant's bucket
/// be on loopback (the S3 server's address).
fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let s3 = S3TestServer::start();
        let memvault = start_in_process(|config| {
            config.blobs.allow_private_targets = true;
        });
        Setup { s3, memvault }
    })
}

fn anonymous() -> HttpClient {
    HttpClient::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

fn body_for(bucket: &Bucket) -> Value {
    json!({
        "backend": "s3",
        "endpoint_url": bucket.endpoint_url,
        "bucket": bucket.bucket,
        "region": bucket.region,
        "access_key": bucket.access_key,
        "secret_key": bucket.secret_key,
        "force_path_style": true,
    })
}

/// Drops one text file; the memory made from it.
fn drop_text(client: &Client, collection: &str, name: &str, text: &str) -> Value {
    let boundary = "memvault-storage-test-boundary";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n\
         Content-Type: text/plain\r\n\r\n{text}\r\n--{boundary}--\r\n"
    );
    let result = expect_status(
        client.post_raw(
            &format!("/v1/memory/collections/{collection}/drop"),
            body.as_bytes(),
            &format!("multipart/form-data; boundary={boundary}"),
        ),
        201,
    );
    assert_eq!(result["results"][0]["status"], "done", "{result}");
    let id = result["results"][0]["memory_ids"][0].as_str().unwrap();
    expect_status(
        client.get(&format!("{}/{id}", memories_path(collection))),
        200,
    )
}

fn file_url(memory: &Value) -> Url {
    Url::parse(
        memory["images"][0]["url"]
            .as_str()
            .unwrap_or_else(|| panic!("a file URL: {memory}")),
    )
    .unwrap()
}

fn download(url: &Url) -> Vec<u8> {
    let response = anonymous().get(url.clone()).send().unwrap();
    assert_eq!(response.status(), 200, "GET {url}");
    response.bytes().unwrap().to_vec()
}

/// The files of the bucket under the tenant's prefix (s3s-fs keeps objects as files).
fn objects(bucket: &str, tenant_prefix: &str) -> Vec<String> {
    let root = setup().s3.root().join(bucket).join(tenant_prefix);
    let mut found = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if !path.to_string_lossy().contains(".s3s") {
                found.push(path.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    found
}

/// The tenant id in an S3 path-style URL `/{bucket}/{tenant}/...`.
fn tenant_of(url: &Url, bucket: &str) -> String {
    url.path()
        .strip_prefix(&format!("/{bucket}/"))
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("{url} is not in bucket {bucket}"))
        .to_owned()
}

#[test]
fn a_tenants_own_bucket_takes_its_new_files_after_a_live_self_test() {
    let setup = setup();
    let client = tenant_on(&setup.memvault);
    let other = tenant_on(&setup.memvault);
    let bucket_name = unique("own").to_lowercase();
    let bucket = setup.s3.bucket(&bucket_name);

    let unset = expect_status(client.get(CONFIG), 200);
    assert_eq!(unset["configured"], false, "{unset}");
    assert_eq!(unset["backend"], "platform", "{unset}");

    // A wrong secret fails the self-test and nothing is saved.
    let mut wrong = body_for(&bucket);
    wrong["secret_key"] = json!("not-the-secret-key");
    let detail = expect_error(client.put(CONFIG, &wrong), 422);
    assert!(detail.contains("self-test"), "{detail}");
    let response = client.put(CONFIG, &wrong);
    let body: Value = response.json().unwrap();
    assert_eq!(body["code"], "storage_self_test_failed", "{body}");
    assert_eq!(expect_status(client.get(CONFIG), 200)["configured"], false);

    // The right credentials: saved, shown without the secret.
    let saved = expect_status(client.put(CONFIG, &body_for(&bucket)), 200);
    assert_eq!(saved["configured"], true, "{saved}");
    assert_eq!(saved["backend"], "s3");
    assert_eq!(saved["bucket"], bucket_name.as_str());
    assert_eq!(saved["endpoint_url"], setup.s3.endpoint());
    assert_eq!(saved["has_secret_key"], true);
    assert!(saved.get("secret_key").is_none(), "{saved}");
    let shown = expect_status(client.get(CONFIG), 200);
    assert_eq!(shown, saved);
    let text = shown.to_string();
    assert!(
        !text.contains(&bucket.secret_key),
        "the secret leaked: {text}"
    );
    assert!(
        !text.contains(&bucket.access_key),
        "the whole access key: {text}"
    );
    let tail: String = bucket
        .access_key
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert_eq!(shown["access_key_hint"], format!("…{tail}"));

    // The tenant's new file lands in its bucket; the URL is S3's own and needs no key.
    let collection = unique("own-bucket");
    let words = "the heron keeps its ledger in the tenant's own bucket";
    let memory = drop_text(&client, &collection, "ledger.txt", words);
    let url = file_url(&memory);
    assert_eq!(
        url.origin(),
        Url::parse(setup.s3.endpoint()).unwrap().origin(),
        "{url}"
    );
    assert!(
        url.query_pairs().any(|(name, _)| name == "X-Amz-Signature"),
        "{url}"
    );
    assert_eq!(download(&url), words.as_bytes());
    let tenant = tenant_of(&url, &bucket_name);
    let stored = objects(&bucket_name, &tenant);
    assert_eq!(stored.len(), 1, "one object, the probe gone: {stored:?}");
    assert!(stored[0].starts_with("files/"), "{stored:?}");

    // Another tenant still stores on the platform (memvault's own URLs).
    let theirs = drop_text(
        &other,
        &unique("platform"),
        "note.txt",
        "stays on the platform",
    );
    let theirs_url = file_url(&theirs);
    assert_eq!(
        theirs_url.origin(),
        Url::parse(&setup.memvault.base_url).unwrap().origin(),
        "{theirs_url}"
    );
    assert_eq!(download(&theirs_url), b"stays on the platform");

    // Deleting the memory deletes the object from the tenant's bucket.
    let id = memory["id"].as_str().unwrap();
    expect_status(
        client.delete(&format!("{}/{id}", memories_path(&collection))),
        204,
    );
    assert!(
        objects(&bucket_name, &tenant).is_empty(),
        "the object outlived its memory"
    );

    // A file kept there, then the configuration deleted: new files go to the platform,
    // the kept one is listed without a URL, and comes back when the bucket does.
    let kept = drop_text(
        &client,
        &collection,
        "kept.txt",
        "kept in the tenant's bucket",
    );
    let kept_id = kept["id"].as_str().unwrap().to_owned();
    expect_status(client.delete(CONFIG), 204);
    assert_eq!(expect_status(client.get(CONFIG), 200)["configured"], false);
    let after = expect_status(
        client.get(&format!("{}/{kept_id}", memories_path(&collection))),
        200,
    );
    let entry = &after["images"][0];
    assert_eq!(entry["url"], Value::Null, "{after}");
    assert!(
        entry["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("no longer configured"),
        "{after}"
    );
    assert_eq!(entry["filename"], "kept.txt");
    let local = drop_text(&client, &collection, "local.txt", "back on the platform");
    assert_eq!(
        file_url(&local).origin(),
        Url::parse(&setup.memvault.base_url).unwrap().origin()
    );
    assert_eq!(
        objects(&bucket_name, &tenant).len(),
        1,
        "the kept file stays in the bucket"
    );

    // The same bucket again (its keys may differ): the kept file is reachable again.
    expect_status(client.put(CONFIG, &body_for(&bucket)), 200);
    let again = expect_status(
        client.get(&format!("{}/{kept_id}", memories_path(&collection))),
        200,
    );
    assert_eq!(download(&file_url(&again)), b"kept in the tenant's bucket");
    // And the platform file is still served by memvault.
    let local_again = expect_status(
        client.get(&format!(
            "{}/{}",
            memories_path(&collection),
            local["id"].as_str().unwrap()
        )),
        200,
    );
    assert_eq!(download(&file_url(&local_again)), b"back on the platform");
}

#[test]
fn storage_config_bodies_are_validated_and_private_endpoints_refused() {
    // The shared server keeps the SSRF guard on.
    let client = tenant_on(shared());
    let good = json!({
        "backend": "s3",
        "endpoint_url": "https://s3.example.com",
        "bucket": "my-files",
        "region": "eu-west-1",
        "access_key": "AKIAEXAMPLE",
        "secret_key": "secret",
    });
    let cases = [
        ("backend", json!("gcs"), "validation_failed"),
        ("bucket", json!("Bad_Bucket"), "validation_failed"),
        ("bucket", json!("ab"), "validation_failed"),
        (
            "endpoint_url",
            json!("ftp://s3.example.com"),
            "validation_failed",
        ),
        (
            "endpoint_url",
            json!("https://s3.example.com/path"),
            "validation_failed",
        ),
        ("endpoint_url", json!("not a url"), "validation_failed"),
        ("access_key", json!(""), "validation_failed"),
        // Found by schemathesis: a control character reached the S3 signer, which panicked.
        ("access_key", json!("x\u{0}b"), "validation_failed"),
        ("region", json!("eu\nwest"), "validation_failed"),
        // Found by schemathesis: without an endpoint the region makes AWS's host name, and
        // one that makes no URL panicked the S3 client.
        ("region", json!("n%P/8"), "validation_failed"),
        ("secret_key", json!(" "), "validation_failed"),
        (
            "endpoint_url",
            json!("http://127.0.0.1:9000"),
            "storage_target_rejected",
        ),
        (
            "endpoint_url",
            json!("http://169.254.169.254"),
            "storage_target_rejected",
        ),
        (
            "endpoint_url",
            json!("http://10.0.0.8:9000"),
            "storage_target_rejected",
        ),
        (
            "endpoint_url",
            json!("http://localhost:9000"),
            "storage_target_rejected",
        ),
    ];
    for (field, value, code) in cases {
        let mut body = good.clone();
        body[field] = value.clone();
        let response = client.put(CONFIG, &body);
        assert_eq!(response.status(), 422, "{field}={value}");
        let error: Value = response.json().unwrap();
        assert_eq!(error["code"], code, "{field}={value}: {error}");
    }
    let mut unknown = good.clone();
    unknown["colour"] = json!("blue");
    let error: Value = client.put(CONFIG, &unknown).json().unwrap();
    assert_eq!(error["code"], "invalid_body", "{error}");
    assert_eq!(expect_status(client.get(CONFIG), 200)["configured"], false);
    // DELETE with nothing configured is still a 204 (idempotent).
    expect_status(client.delete(CONFIG), 204);

    // Only the owner key configures storage; any key of the tenant may read it.
    let created = expect_status(
        client.post(
            "/v1/memory/keys",
            &json!({"label": "agent", "read_only": false}),
        ),
        201,
    );
    let agent = Client::new(
        &shared().base_url,
        Some(created["key"].as_str().expect("key")),
    );
    for response in [agent.put(CONFIG, &good), agent.delete(CONFIG)] {
        let error: Value = response.json().unwrap();
        assert_eq!(error["code"], "owner_key_required", "{error}");
    }
    expect_status(agent.get(CONFIG), 200);
    let error: Value = Client::anonymous().put(CONFIG, &good).json().unwrap();
    assert_eq!(error["code"], "missing_api_key", "{error}");
}
