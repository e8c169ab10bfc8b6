//! Managed connectors, black-box: the same scenarios against every provider's fake (first
//! sync, incremental sync, edit, deletion, auth failure, five failures then pause, resume),
//! the OAuth round trip with the token renewed before a sync and a revoked grant that says
//! "reconnect", the refusals (postgres, bad bodies, other tenants, read-only keys, OAuth
//! without an app), and a sync cut by kill -9 that resumes from its checkpoint.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use memvault_connectors::ProviderKind;
use memvault_fake_providers::{self as fakes, oauth::OAuthServer, FakeServer};
use memvault_server::config::Config;
use serde_json::{json, Value};

use crate::support::{
    expect_error, expect_status, memories_path, start_in_process, temp_data_dir, tenant_on, unique,
    Client, ServerProcess, TestServer, ADMIN_KEY,
};

const CONNECTIONS: &str = "/v1/memory/connections";

/// The fakes of every provider, served by a runtime of their own.
struct Fakes {
    runtime: tokio::runtime::Runtime,
    servers: BTreeMap<ProviderKind, FakeServer>,
}

impl Fakes {
    fn start(records: usize) -> Fakes {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let servers = runtime.block_on(async {
            let mut servers = BTreeMap::new();
            for kind in ProviderKind::ALL {
                servers.insert(kind, start_fake(kind, records).await);
            }
            servers
        });
        Fakes { runtime, servers }
    }

    fn get(&self, kind: ProviderKind) -> &FakeServer {
        &self.servers[&kind]
    }

    /// Points `[connectors.<provider>] base_url` of `config` at the fakes.
    fn configure(&self, config: &mut Config) {
        for (kind, server) in &self.servers {
            let section = provider_section(config, *kind);
            section.base_url = Some(server.base_url.clone());
            // The fakes take any pace: a sync here waits on nothing but the fake (Slack's
            // production pace alone, 50 calls a minute, made this file two minutes longer).
            section.requests_per_second = Some(500.0);
            section.burst = Some(50.0);
        }
        config.connectors.allow_private_targets = true;
        // Reconcile on every sync; the scheduler stays out of the way.
        config.connectors.reconcile_minutes = 0;
        config.connectors.tick_secs = 3600;
    }
}

async fn start_fake(kind: ProviderKind, records: usize) -> FakeServer {
    match kind {
        ProviderKind::Slack => fakes::slack::start(records).await,
        ProviderKind::Notion => fakes::notion::start(records).await,
        ProviderKind::Gdrive => fakes::gdrive::start(records).await,
        ProviderKind::Gmail => fakes::gmail::start(records).await,
        ProviderKind::Linear => fakes::linear::start(records).await,
        ProviderKind::Confluence => fakes::confluence::start(records).await,
        ProviderKind::Hubspot => fakes::hubspot::start(records).await,
    }
}

fn provider_section(
    config: &mut Config,
    kind: ProviderKind,
) -> &mut memvault_server::config::ConnectorProviderConfig {
    let connectors = &mut config.connectors;
    match kind {
        ProviderKind::Slack => &mut connectors.slack,
        ProviderKind::Notion => &mut connectors.notion,
        ProviderKind::Gdrive => &mut connectors.gdrive,
        ProviderKind::Gmail => &mut connectors.gmail,
        ProviderKind::Linear => &mut connectors.linear,
        ProviderKind::Confluence => &mut connectors.confluence,
        ProviderKind::Hubspot => &mut connectors.hubspot,
    }
}

fn body_for(fake: &FakeServer, collection: &str, tag: &str) -> Value {
    json!({
        "provider": fake.kind.as_str(),
        "name": format!("{} test", fake.kind),
        "collection": collection,
        "container_tag": tag,
        "config": fake.config,
        "credentials": fake.credentials,
    })
}

fn connect(client: &Client, fake: &FakeServer) -> (String, String, String) {
    let (collection, tag) = (unique("conn"), unique("tag"));
    let created = expect_status(
        client.post(CONNECTIONS, &body_for(fake, &collection, &tag)),
        201,
    );
    assert_eq!(created["status"], "active", "{created:#}");
    assert!(created.get("credentials").is_none(), "{created:#}");
    (
        created["id"].as_str().expect("id").to_owned(),
        collection,
        tag,
    )
}

fn sync(client: &Client, id: &str) -> Value {
    expect_status(
        client.post(&format!("{CONNECTIONS}/{id}/sync"), &json!({})),
        200,
    )
}

fn memories(client: &Client, collection: &str) -> Vec<Value> {
    let response = client.get(&format!(
        "{}?limit=200&include_archived=true",
        memories_path(collection)
    ));
    if response.status() == 404 {
        return Vec::new();
    }
    expect_status(response, 200)
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// One memory per live record, holding its word, with the provider as source, the tag and
/// the record id in metadata; nothing else.
fn assert_mirrored(client: &Client, fake: &FakeServer, collection: &str, tag: &str, what: &str) {
    let stored = memories(client, collection);
    let live = fake.fake.live();
    for record in &live {
        let holding: Vec<&Value> = stored
            .iter()
            .filter(|memory| {
                memory["text"]
                    .as_str()
                    .unwrap_or_default()
                    .contains(&record.word)
            })
            .collect();
        assert_eq!(
            holding.len(),
            1,
            "{what} ({}): record {} is in {} memories",
            fake.kind,
            record.id,
            holding.len()
        );
        let memory = holding[0];
        assert_eq!(memory["source"], fake.kind.as_str(), "{what}: {memory:#}");
        assert_eq!(memory["container_tag"], tag, "{what}: {memory:#}");
        assert_eq!(
            memory["metadata"]["record_id"],
            record.id.as_str(),
            "{what}: {memory:#}"
        );
        assert!(
            memory["metadata"]["connection_id"].is_string(),
            "{what}: {memory:#}"
        );
    }
    assert_eq!(
        stored.len(),
        live.len(),
        "{what} ({}): {} memories for {} records",
        fake.kind,
        stored.len(),
        live.len()
    );
}

fn connection(client: &Client, id: &str) -> Value {
    expect_status(client.get(&format!("{CONNECTIONS}/{id}")), 200)
}

fn runs(client: &Client, id: &str, query: &str) -> Vec<Value> {
    expect_status(client.get(&format!("{CONNECTIONS}/{id}/runs{query}")), 200)
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn server_with(fakes: &Fakes) -> TestServer {
    start_in_process(|config| fakes.configure(config))
}

#[test]
fn every_provider_keeps_a_collection_in_step_with_its_source() {
    let fakes = Fakes::start(5);
    let server = server_with(&fakes);
    let client = tenant_on(&server);
    for kind in ProviderKind::ALL {
        let fake = fakes.get(kind);
        let (id, collection, tag) = connect(&client, fake);

        let first = sync(&client, &id);
        assert_eq!(first["status"], "active", "{kind}: {first:#}");
        assert_eq!(first["synced"], 5, "{kind}: {first:#}");
        assert!(first["cursor"].is_string(), "{kind}: {first:#}");
        assert_mirrored(&client, fake, &collection, &tag, "first sync");

        std::thread::sleep(Duration::from_millis(20));
        let added = fake.add();
        let second = sync(&client, &id);
        assert_eq!(
            second["synced"], 1,
            "{kind}: only the new record is stored: {second:#}"
        );
        assert_mirrored(&client, fake, &collection, &tag, "incremental sync");
        assert!(memories(&client, &collection)
            .iter()
            .any(|m| m["text"].as_str().unwrap().contains(&added.word)));

        let quiet = sync(&client, &id);
        assert_eq!(
            quiet["synced"], 0,
            "{kind}: nothing new is stored again: {quiet:#}"
        );

        if kind != ProviderKind::Gmail {
            // Gmail messages cannot be edited.
            let target = fake.fake.live()[2].clone();
            std::thread::sleep(Duration::from_millis(20));
            let edited = fake.fake.edit(&target.id);
            let after = sync(&client, &id);
            assert!(after["synced"].as_u64().unwrap() >= 1, "{kind}: {after:#}");
            assert_mirrored(&client, fake, &collection, &tag, "after an edit");
            let texts: Vec<String> = memories(&client, &collection)
                .iter()
                .map(|m| m["text"].as_str().unwrap().to_owned())
                .collect();
            assert!(
                texts.iter().any(|t| t.contains(&edited.word)),
                "{kind}: the new text"
            );
            assert!(
                !texts.iter().any(|t| t.contains(&target.word)),
                "{kind}: the old text is gone"
            );
        }

        let gone = fake.fake.live()[1].clone();
        fake.fake.delete(&gone.id);
        let after = sync(&client, &id);
        assert!(
            after["deleted"].as_u64().unwrap() >= 1,
            "{kind}: the deletion reached the memory: {after:#}"
        );
        assert_mirrored(&client, fake, &collection, &tag, "after a deletion");

        // Auth failures: error, then paused after five in a row; the scheduler forgets it.
        fake.fake.revoke();
        for attempt in 1..=5 {
            let failed = sync(&client, &id);
            let expected = if attempt == 5 { "paused" } else { "error" };
            assert_eq!(
                failed["status"], expected,
                "{kind} failure #{attempt}: {failed:#}"
            );
            let error = failed["error"].as_str().unwrap_or_default();
            assert!(!error.is_empty(), "{kind}: {failed:#}");
            for secret in fake.credentials.values().filter_map(Value::as_str) {
                assert!(
                    !error.contains(secret),
                    "{kind}: the error holds the credential"
                );
            }
        }
        let paused = connection(&client, &id);
        assert_eq!(paused["status"], "paused");
        assert!(paused["next_sync_at"].is_null(), "{paused:#}");
        assert!(paused["last_error"].as_str().is_some_and(|e| !e.is_empty()));
        fake.fake.restore();
        let resumed = sync(&client, &id);
        assert_eq!(
            resumed["status"], "active",
            "{kind}: a manual success resumes: {resumed:#}"
        );
        let view = connection(&client, &id);
        assert!(
            view["last_error"].is_null() && view["consecutive_failures"] == 0,
            "{view:#}"
        );
        assert_mirrored(&client, fake, &collection, &tag, "after the resume");

        let listed = runs(&client, &id, "");
        // first, added, quiet, (edit), deletion, five failures, resume
        let syncs = if kind == ProviderKind::Gmail { 10 } else { 11 };
        assert_eq!(listed.len(), syncs, "{kind}: one run per sync");
        assert_eq!(listed[0]["status"], "ok");
        assert_eq!(listed[1]["status"], "error");
        let times: Vec<&str> = listed
            .iter()
            .map(|run| run["created_at"].as_str().unwrap())
            .collect();
        let mut sorted = times.clone();
        sorted.sort_by(|a, b| b.cmp(a));
        assert_eq!(times, sorted, "newest first");
        assert_eq!(runs(&client, &id, "?limit=2").len(), 2);
        expect_error(client.get(&format!("{CONNECTIONS}/{id}/runs?limit=0")), 422);
        println!("{kind}: {} runs, the scenarios pass", listed.len());
    }
    let admin = Client::new(&server.base_url, Some(&server.admin_key));
    let figures = expect_status(admin.get("/v1/memory/admin/connectors"), 200);
    let providers = figures["providers"].as_array().unwrap();
    assert_eq!(providers.len(), 7, "{figures:#}");
    for entry in providers {
        assert!(
            entry["runs"].as_u64().unwrap() >= 10 && entry["errors"] == 5,
            "{entry:#}"
        );
        assert!(entry["last_run"].is_string());
    }
    let statuses = expect_status(admin.get("/v1/memory/admin/connectors/status"), 200);
    assert_eq!(
        statuses,
        json!([{"status": "active", "n": 7}, {"status": "error", "n": 0}, {"status": "paused", "n": 0}])
    );
    drop(fakes.runtime);
}

#[test]
fn refusals_are_clear_and_touch_nothing() {
    let fakes = Fakes::start(2);
    let server = server_with(&fakes);
    let client = tenant_on(&server);
    let linear = fakes.get(ProviderKind::Linear);
    let good = body_for(linear, &unique("conn"), "t");
    let bad = |spoil: &dyn Fn(&mut Value)| {
        let mut body = good.clone();
        spoil(&mut body);
        body
    };
    let postgres = json!({"provider": "postgres", "collection": "db", "config": {},
        "credentials": {"connection_string": "postgres://user:hunter2@127.0.0.1/app"}});
    let response = client.post(CONNECTIONS, &postgres);
    assert_eq!(response.status(), 422);
    let text = response.text().unwrap();
    assert!(
        text.contains("provider_not_supported") && !text.contains("hunter2"),
        "{text}"
    );
    for (what, body, status) in [
        (
            "unknown provider",
            bad(&|b| b["provider"] = json!("dropbox")),
            422,
        ),
        (
            "no collection",
            bad(&|b| {
                b.as_object_mut().unwrap().remove("collection");
            }),
            422,
        ),
        (
            "no token",
            bad(&|b| {
                b["credentials"] = json!({});
            }),
            422,
        ),
        (
            "bad interval",
            bad(&|b| b["config"] = json!({"sync_interval_minutes": 0})),
            422,
        ),
        ("extra field", bad(&|b| b["surprise"] = json!(1)), 422),
        (
            "bad collection",
            bad(&|b| b["collection"] = json!("no spaces allowed!")),
            422,
        ),
    ] {
        expect_error(client.post(CONNECTIONS, &body), status);
        println!("{what}: {status}");
    }
    let slack = fakes.get(ProviderKind::Slack);
    let mut no_channel = body_for(slack, "c", "t");
    no_channel["config"] = json!({});
    assert!(expect_error(client.post(CONNECTIONS, &no_channel), 422).contains("channel_id"));
    let confluence = fakes.get(ProviderKind::Confluence);
    let mut metadata_host = body_for(confluence, "c", "t");
    metadata_host["config"]["base_url"] = json!("ftp://wiki.example.org");
    expect_error(client.post(CONNECTIONS, &metadata_host), 422);
    assert!(
        expect_status(client.get(CONNECTIONS), 200)
            .as_array()
            .unwrap()
            .is_empty(),
        "nothing was created"
    );

    let (id, _, _) = connect(&client, linear);
    let stranger = tenant_on(&server);
    expect_error(stranger.get(&format!("{CONNECTIONS}/{id}")), 404);
    expect_error(
        stranger.post(&format!("{CONNECTIONS}/{id}/sync"), &json!({})),
        404,
    );
    expect_error(stranger.delete(&format!("{CONNECTIONS}/{id}")), 404);
    assert!(expect_status(stranger.get(CONNECTIONS), 200)
        .as_array()
        .unwrap()
        .is_empty());
    let reader_key = expect_status(
        client.post(
            "/v1/memory/keys",
            &json!({"label": "reader", "read_only": true}),
        ),
        201,
    );
    let reader = Client::new(
        &server.base_url,
        reader_key["key"]
            .as_str()
            .or(reader_key["api_key"].as_str()),
    );
    expect_error(
        reader.post(&format!("{CONNECTIONS}/{id}/sync"), &json!({})),
        403,
    );
    expect_error(reader.post(CONNECTIONS, &good), 403);
    expect_error(reader.delete(&format!("{CONNECTIONS}/{id}")), 403);
    assert_eq!(connection(&reader, &id)["provider"], "linear");
    let anonymous = Client::new(&server.base_url, None);
    expect_error(anonymous.get(CONNECTIONS), 401);
    expect_error(anonymous.post(CONNECTIONS, &good), 401);
    expect_error(anonymous.get(&format!("{CONNECTIONS}/{id}")), 401);
    expect_error(
        anonymous.post(&format!("{CONNECTIONS}/{id}/sync"), &json!({})),
        401,
    );
    expect_error(anonymous.get(&format!("{CONNECTIONS}/{id}/runs")), 401);
    expect_error(anonymous.delete(&format!("{CONNECTIONS}/{id}")), 401);
    expect_error(
        anonymous.get(&format!("{CONNECTIONS}/oauth/notion/start?collection=docs")),
        401,
    );
    expect_error(stranger.get(&format!("{CONNECTIONS}/{id}/runs")), 404);
    expect_error(
        reader.get(&format!("{CONNECTIONS}/oauth/notion/start?collection=docs")),
        403,
    );
    assert!(
        runs(&reader, &id, "").is_empty(),
        "a read-only key reads the runs"
    );
    expect_error(
        client.get(&format!("{CONNECTIONS}/no-such-connection")),
        404,
    );
    assert!(
        linear.fake.calls().is_empty(),
        "no refused request reached the provider"
    );

    let start = |provider: &str| {
        client.get(&format!(
            "{CONNECTIONS}/oauth/{provider}/start?collection=docs"
        ))
    };
    assert!(
        expect_error(start("gmail"), 503).contains("client_id"),
        "no OAuth app for gmail"
    );
    expect_error(start("linear"), 422);
    expect_error(start("postgres"), 422);
    expect_error(start("dropbox"), 422);
    let callback = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!(
            "{}{CONNECTIONS}/oauth/notion/callback?code=x&state=made-up-state",
            server.base_url
        ))
        .send()
        .unwrap();
    assert_eq!(callback.status(), 400);
    assert!(callback.text().unwrap().contains("oauth_state_invalid"));

    expect_status(client.delete(&format!("{CONNECTIONS}/{id}")), 204);
    expect_error(client.get(&format!("{CONNECTIONS}/{id}")), 404);
    expect_error(client.delete(&format!("{CONNECTIONS}/{id}")), 404);
    drop(fakes.runtime);
}

/// start -> the provider's consent page -> the callback; returns the new connection.
fn oauth_connect(server: &TestServer, client: &Client, provider: &str, collection: &str) -> Value {
    let started = expect_status(
        client.get(&format!(
            "{CONNECTIONS}/oauth/{provider}/start?collection={collection}&name=via%20oauth"
        )),
        200,
    );
    let authorize_url = started["authorize_url"]
        .as_str()
        .expect("authorize_url")
        .to_owned();
    assert!(
        authorize_url.contains(&format!(
            "redirect_uri={}",
            url_encode(&format!(
                "{}{CONNECTIONS}/oauth/{provider}/callback",
                server.base_url
            ))
        )),
        "{authorize_url}"
    );
    let browser = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let consent = browser.get(&authorize_url).send().unwrap();
    assert_eq!(
        consent.status(),
        302,
        "{}",
        consent.text().unwrap_or_default()
    );
    let landing = consent.headers()["location"].to_str().unwrap().to_owned();
    let callback = browser.get(&landing).send().unwrap();
    assert_eq!(
        callback.status(),
        303,
        "{}",
        callback.text().unwrap_or_default()
    );
    let location = callback.headers()["location"].to_str().unwrap().to_owned();
    let dashboard_page = format!("{}/dashboard/connectors/", server.base_url);
    assert!(location.starts_with(&dashboard_page), "{location}");
    assert!(
        location.ends_with(&format!("?connected={provider}")),
        "{location}"
    );
    // The landing page without the dashboard stays for API-only clients.
    let id = location[dashboard_page.len()..]
        .split('?')
        .next()
        .unwrap()
        .to_owned();
    let page = browser
        .get(format!(
            "{}{CONNECTIONS}/oauth/{provider}/connected?connection={id}",
            server.base_url
        ))
        .send()
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().unwrap().contains("now connected"));
    // Only the providers with an OAuth flow have a landing page.
    let elsewhere = browser
        .get(format!(
            "{}{CONNECTIONS}/oauth/linear/connected?connection=x",
            server.base_url
        ))
        .send()
        .unwrap();
    assert_eq!(elsewhere.status(), 422);
    let replay = browser.get(&landing).send().unwrap();
    assert_eq!(replay.status(), 400, "a state is used once");
    connection(client, &id)
}

fn url_encode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[test]
fn oauth_connects_renews_the_token_before_a_sync_and_asks_to_reconnect_when_revoked() {
    let fakes = Fakes::start(3);
    let (drive, notion) = (
        fakes.get(ProviderKind::Gdrive),
        fakes.get(ProviderKind::Notion),
    );
    let (drive_app, notion_app) = fakes.runtime.block_on(async {
        (
            OAuthServer::start(ProviderKind::Gdrive, drive.fake.clone(), Some(2)).await,
            OAuthServer::start(ProviderKind::Notion, notion.fake.clone(), None).await,
        )
    });
    let server = start_in_process(|config| {
        fakes.configure(config);
        for (kind, app) in [
            (ProviderKind::Gdrive, &drive_app),
            (ProviderKind::Notion, &notion_app),
        ] {
            let section = provider_section(config, kind);
            section.client_id = Some(app.client_id.clone());
            section.client_secret = Some(app.client_secret.clone());
            section.authorize_url = Some(app.authorize_url.clone());
            section.token_url = Some(app.token_url.clone());
        }
    });
    let client = tenant_on(&server);
    // The connection's own token must not be what opens the fakes from here on.
    drive.fake.lock().token = "not-the-oauth-token".into();
    notion.fake.lock().token = "not-the-oauth-token".into();

    let made = oauth_connect(&server, &client, "notion", "notion-oauth");
    assert_eq!(made["provider"], "notion");
    assert_eq!(made["name"], "via oauth");
    assert!(made.get("credentials").is_none());
    let exchange = &notion_app.requests()[0];
    assert!(
        exchange.client_ok && exchange.grant_type == "authorization_code",
        "{exchange:?}"
    );
    let synced = sync(&client, made["id"].as_str().unwrap());
    assert_eq!(synced["synced"], 3, "{synced:#}");
    let issued = notion_app.access_tokens();
    assert!(notion
        .fake
        .calls()
        .iter()
        .all(|call| call.credential.as_ref().is_some_and(|c| issued.contains(c))));

    let drive_connection = oauth_connect(&server, &client, "gdrive", "drive-oauth");
    let id = drive_connection["id"].as_str().unwrap().to_owned();
    assert_eq!(sync(&client, &id)["synced"], 3);
    let first_token = drive_app.access_tokens()[0].clone();
    std::thread::sleep(Duration::from_millis(2500));
    let before = drive.fake.calls().len();
    let renewed = sync(&client, &id);
    assert_eq!(renewed["status"], "active", "{renewed:#}");
    let refreshes: Vec<_> = drive_app
        .requests()
        .into_iter()
        .filter(|r| r.grant_type == "refresh_token")
        .collect();
    assert!(
        !refreshes.is_empty() && refreshes[0].client_ok,
        "the token was renewed: {refreshes:?}"
    );
    assert_eq!(
        refreshes[0].refresh_token.as_deref(),
        Some(drive_app.refresh_tokens()[0].as_str())
    );
    let later = &drive.fake.calls()[before..];
    assert!(
        !later.is_empty()
            && later
                .iter()
                .all(|call| call.credential.as_deref() != Some(first_token.as_str())),
        "no call with the expired token"
    );

    std::thread::sleep(Duration::from_millis(2500));
    drive_app.revoke_refresh_tokens();
    let refused = sync(&client, &id);
    assert_eq!(refused["status"], "error", "{refused:#}");
    let error = refused["error"].as_str().unwrap();
    assert!(error.contains("reconnect"), "{error}");
    for secret in drive_app
        .refresh_tokens()
        .iter()
        .chain(drive_app.access_tokens().iter())
    {
        assert!(!error.contains(secret.as_str()));
    }
    let listed = expect_status(client.get(CONNECTIONS), 200).to_string();
    for secret in drive_app
        .refresh_tokens()
        .iter()
        .chain(drive_app.access_tokens().iter())
        .chain([&drive_app.client_secret])
    {
        assert!(!listed.contains(secret.as_str()), "a credential came back");
    }
    drop(fakes.runtime);
}

#[test]
fn a_sync_killed_with_kill_9_resumes_from_its_checkpoint_without_duplicates() {
    // Notion paced at 8 requests a second (its production pace is 3) with one block call
    // per page: 40 pages take about 10 s, so the kill lands mid-walk.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fake = runtime.block_on(fakes::notion::start(40));
    let (_guard, data_dir) = temp_data_dir();
    let base = fake.base_url.clone();
    let environment = [
        ("MEMVAULT__CONNECTORS__NOTION__BASE_URL", base.as_str()),
        ("MEMVAULT__CONNECTORS__NOTION__REQUESTS_PER_SECOND", "8"),
        ("MEMVAULT__CONNECTORS__TICK_SECS", "1"),
    ];
    let mut first = environment.to_vec();
    first.push(("MEMVAULT_BOOTSTRAP_KEY", ADMIN_KEY));
    let mut server = ServerProcess::start(&data_dir, &first).expect("server starts");
    let admin = server.client(ADMIN_KEY);
    let name = unique("kill");
    let created = expect_status(
        admin.post(
            "/v1/memory/admin/tenants",
            &json!({"name": name, "email": format!("{name}@example.com")}),
        ),
        201,
    );
    let key = created["api_key"].as_str().unwrap().to_owned();
    let client = server.client(&key);
    let made = expect_status(
        client.post(CONNECTIONS, &body_for(&fake, "pages", "kill")),
        201,
    );
    let id = made["id"].as_str().unwrap().to_owned();
    // The sync runs in the server; this request is cut by the kill.
    let base_url = server.base_url.clone();
    let (key_for_sync, id_for_sync) = (key.clone(), id.clone());
    std::thread::spawn(move || {
        // Cut by the kill: its error is expected.
        let _ = reqwest::blocking::Client::new()
            .post(format!("{base_url}{CONNECTIONS}/{id_for_sync}/sync"))
            .bearer_auth(key_for_sync)
            .timeout(Duration::from_secs(120))
            .send();
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let stored = memories(&client, "pages").len();
        if stored >= 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the sync stored nothing in a minute"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server.kill_hard();
    let calls_before = fake.fake.calls().len();
    let stored_at_kill = memories_of_store(&data_dir);

    let mut server = ServerProcess::start(&data_dir, &environment).expect("server restarts");
    let client = server.client(&key);
    let deadline = Instant::now() + Duration::from_secs(120);
    let resumed = loop {
        let listed = runs(&client, &id, "");
        if let Some(run) = listed.first() {
            break run.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the scheduler did not resume the run"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(resumed["status"], "ok", "{resumed:#}");
    assert_eq!(resumed["trigger"], "schedule", "{resumed:#}");
    // The counts carry over from the checkpoint: the run is the one the kill cut. A page
    // stored after the last checkpoint and before the kill is read again and found
    // unchanged (the same allowance of 2 as the pages read again below); one stored
    // twice would count as synced twice and make the sum exceed 40.
    let (synced, unchanged) = (
        resumed["synced_count"].as_u64().unwrap(),
        resumed["unchanged_count"].as_u64().unwrap(),
    );
    assert_eq!(synced + unchanged, 40, "{resumed:#}");
    assert!(
        unchanged <= 2,
        "the resumed run read pages before its checkpoint again: {resumed:#}"
    );
    // Pages whose blocks were read after the restart: a run started over reads all 40.
    let pages: std::collections::HashSet<String> = fake
        .fake
        .live()
        .into_iter()
        .map(|record| record.id)
        .collect();
    let read_again: std::collections::HashSet<String> = fake.fake.calls()[calls_before..]
        .iter()
        .filter(|call| call.kind == fakes::CallKind::Content)
        .filter_map(|call| {
            pages
                .iter()
                .find(|page| call.path.contains(page.as_str()))
                .cloned()
        })
        .collect();
    let content_calls = read_again.len();
    assert!(
        content_calls <= 40 - stored_at_kill + 2,
        "after the restart {content_calls} pages were read again, with {stored_at_kill} of 40 stored at the kill"
    );
    let stored = memories(&client, "pages");
    assert_eq!(stored.len(), 40, "one memory per page");
    for record in fake.fake.live() {
        let holding = stored
            .iter()
            .filter(|m| m["text"].as_str().unwrap().contains(&record.word))
            .count();
        assert_eq!(holding, 1, "record {} is stored {holding} times", record.id);
    }
    println!(
        "killed with {stored_at_kill} of 40 pages stored after {calls_before} provider calls; the resumed run read {content_calls} pages' blocks"
    );
    server.stop_gracefully();
    drop(runtime);
}

/// Pages of the "kill" tenant's connection stored, read from the store the killed server
/// left (the count at the moment of the kill).
fn memories_of_store(data_dir: &std::path::Path) -> usize {
    use memvault_storage::{ConnectorStore, MetaStore, SledStore};
    let store = SledStore::open(&data_dir.join("store")).expect("the store opens after the kill");
    let mut stored = 0;
    for tenant in store.tenants().unwrap() {
        for connection in store.connections(&tenant.id).unwrap() {
            stored += store
                .synced_record_ids(&tenant.id, &connection.id)
                .unwrap()
                .len();
        }
    }
    stored
}
