use std::path::Path;

use memvault_server::config::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

#[test]
fn defaults_need_no_file() {
    let config = Config::load(None, Path::new("/nonexistent/config.toml"), env(&[])).unwrap();
    assert_eq!(config, Config::default());
    assert_eq!(config.server.bind, "127.0.0.1:8420");
    config.validate().unwrap();
}

#[test]
fn file_then_environment_override() {
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("config.toml");
    std::fs::write(
        &file,
        "[server]\nbind = \"0.0.0.0:1\"\n[embedding]\nmax_batch = 8\n",
    )
    .unwrap();
    let config = Config::load(
        Some(&file),
        Path::new("unused"),
        env(&[
            ("MEMVAULT__SERVER__BIND", "127.0.0.1:9999"),
            ("MEMVAULT__ACTORS__CALL_TIMEOUT_MS", "1500"),
            ("UNRELATED", "x"),
        ]),
    )
    .unwrap();
    assert_eq!(config.server.bind, "127.0.0.1:9999");
    assert_eq!(config.embedding.max_batch, 8);
    assert_eq!(config.actors.call_timeout_ms, 1500);
}

#[test]
fn a_subsection_comes_from_the_environment() {
    let config = Config::load(
        None,
        Path::new("/nonexistent/config.toml"),
        env(&[
            (
                "MEMVAULT__CONNECTORS__SLACK__BASE_URL",
                "http://127.0.0.1:9/slack",
            ),
            ("MEMVAULT__CONNECTORS__GDRIVE__CLIENT_ID", "drive-client"),
            ("MEMVAULT__CONNECTORS__TICK_SECS", "5"),
        ]),
    )
    .unwrap();
    assert_eq!(
        config.connectors.slack.base_url.as_deref(),
        Some("http://127.0.0.1:9/slack")
    );
    assert_eq!(
        config.connectors.gdrive.client_id.as_deref(),
        Some("drive-client")
    );
    assert_eq!(config.connectors.tick_secs, 5);
    let four = Config::load(
        None,
        Path::new("/nonexistent/config.toml"),
        env(&[("MEMVAULT__A__B__C__D", "1")]),
    );
    assert!(four.is_err(), "four parts are refused");
    let unknown = Config::load(
        None,
        Path::new("/nonexistent/config.toml"),
        env(&[("MEMVAULT__CONNECTORS__DROPBOX__BASE_URL", "x")]),
    );
    assert!(unknown.is_err(), "an unknown provider section is refused");
}

#[test]
fn a_provider_s_pace_is_configurable_and_checked() {
    let config = Config::load(
        None,
        Path::new("none"),
        env(&[
            ("MEMVAULT__CONNECTORS__SLACK__REQUESTS_PER_SECOND", "0.5"),
            ("MEMVAULT__CONNECTORS__SLACK__BURST", "3"),
        ]),
    )
    .unwrap();
    assert_eq!(config.connectors.slack.requests_per_second, Some(0.5));
    assert_eq!(config.connectors.slack.burst, Some(3.0));
    config.validate().unwrap();
    for (key, value) in [
        ("MEMVAULT__CONNECTORS__NOTION__REQUESTS_PER_SECOND", "0"),
        ("MEMVAULT__CONNECTORS__NOTION__REQUESTS_PER_SECOND", "-1"),
        ("MEMVAULT__CONNECTORS__HUBSPOT__BURST", "0.5"),
    ] {
        let config = Config::load(None, Path::new("none"), env(&[(key, value)])).unwrap();
        let refused = config.validate().unwrap_err().to_string();
        assert!(
            refused.contains("requests_per_second"),
            "{key}={value}: {refused}"
        );
    }
}

#[test]
fn email_domain_and_secret_come_from_the_environment_and_the_domain_is_checked() {
    let config = Config::load(None, Path::new("none"), env(&[])).unwrap();
    assert_eq!(config.email.domain, "in.localhost");
    assert_eq!(config.email.inbound_secret, None);
    let config = Config::load(
        None,
        Path::new("none"),
        env(&[
            ("MEMVAULT__EMAIL__DOMAIN", "in.example.org"),
            ("MEMVAULT__EMAIL__INBOUND_SECRET", "s3cret"),
        ]),
    )
    .unwrap();
    assert_eq!(config.email.domain, "in.example.org");
    assert_eq!(config.email.inbound_secret.as_deref(), Some("s3cret"));
    config.validate().unwrap();
    for domain in ["", "a..b", "-a.b", "a b.c", "user@in.example.org"] {
        let mut config = Config::default();
        config.email.domain = domain.to_owned();
        assert!(config.validate().is_err(), "{domain:?}");
    }
}

#[test]
fn unknown_keys_are_refused() {
    let outcome = Config::load(
        None,
        Path::new("none"),
        env(&[("MEMVAULT__SERVER__BINDD", "x")]),
    );
    assert!(matches!(outcome, Err(ConfigError::Invalid(_))));
    let outcome = Config::load(
        None,
        Path::new("none"),
        env(&[("MEMVAULT__TOO__MANY__PARTS", "x")]),
    );
    assert!(matches!(outcome, Err(ConfigError::Invalid(_))));
}

#[test]
fn explicit_missing_file_is_an_error() {
    let outcome = Config::load(
        Some(Path::new("/nonexistent/memvault.toml")),
        Path::new("x"),
        env(&[]),
    );
    assert!(matches!(outcome, Err(ConfigError::Read { .. })));
}

#[test]
fn webhook_settings_come_from_the_environment() {
    let config = Config::load(
        None,
        Path::new("none"),
        env(&[
            ("MEMVAULT__WEBHOOKS__ALLOW_PRIVATE_TARGETS", "true"),
            ("MEMVAULT__WEBHOOKS__MAX_ATTEMPTS", "100"),
            ("MEMVAULT__WEBHOOKS__INITIAL_BACKOFF_MS", "60000"),
        ]),
    )
    .unwrap();
    assert!(config.webhooks.allow_private_targets);
    assert_eq!(config.webhooks.max_attempts, 100);
    assert_eq!(config.webhooks.initial_backoff_ms, 60_000);
    assert_eq!(config.webhooks.timeout_secs, 5);
    config.validate().unwrap();
    let mut zero = config;
    zero.webhooks.max_attempts = 0;
    assert!(zero.validate().is_err());
}

#[test]
fn validation_catches_bad_values() {
    let mut config = Config::default();
    config.server.bind = "not an address".to_owned();
    assert!(config.validate().is_err());
}

#[test]
fn rate_limit_tiers_come_from_an_inline_table_and_zero_is_refused() {
    let config = Config::load(
        None,
        Path::new("/nonexistent/config.toml"),
        env(&[
            ("MEMVAULT__RATE_LIMIT__TIERS", "{free = 5, team = 50}"),
            ("MEMVAULT__RATE_LIMIT__PER_MINUTE", "7"),
        ]),
    )
    .unwrap();
    assert_eq!(config.rate_limit.tiers.get("free"), Some(&5));
    assert_eq!(config.rate_limit.tiers.get("team"), Some(&50));
    assert_eq!(config.rate_limit.per_minute, 7);
    let mut zero = Config::default();
    zero.rate_limit.per_minute = 0;
    assert!(zero.validate().is_err());
}

#[test]
fn the_documented_config_toml_is_the_defaults() {
    let documented: Config = toml::from_str(include_str!("../../../config.toml")).unwrap();
    assert_eq!(documented, Config::default());
}

#[test]
fn the_store_is_sled_unless_postgres_is_chosen_with_a_url() {
    let load = |pairs: &[(&str, &str)]| {
        Config::load(None, Path::new("/nonexistent/config.toml"), env(pairs)).unwrap()
    };
    assert_eq!(load(&[]).store.backend, StoreBackend::Sled);
    let without_url = load(&[("MEMVAULT__STORE__BACKEND", "postgres")]);
    let refusal = without_url.validate().unwrap_err().to_string();
    assert!(refusal.contains("store.url"), "{refusal}");
    let postgres = load(&[
        ("MEMVAULT__STORE__BACKEND", "postgres"),
        (
            "MEMVAULT__STORE__URL",
            "postgresql://memvault@127.0.0.1:5432/memvault",
        ),
    ]);
    postgres.validate().unwrap();
    assert_eq!(postgres.store.backend, StoreBackend::Postgres);
    let unknown = Config::load(
        None,
        Path::new("/nonexistent/config.toml"),
        env(&[("MEMVAULT__STORE__BACKEND", "mysql")]),
    );
    assert!(unknown.is_err(), "an unknown backend is refused");
}

#[test]
fn the_local_model_and_its_runtime_are_chosen_by_name() {
    let defaults = Config::default();
    assert_eq!(defaults.embedding.local_model, LocalModel::MiniLmInt8);
    assert_eq!(defaults.embedding.runtime, LocalRuntime::Auto);
    let config = Config::load(
        None,
        Path::new("/nonexistent/config.toml"),
        env(&[
            ("MEMVAULT__EMBEDDING__LOCAL_MODEL", "all-MiniLM-L6-v2"),
            ("MEMVAULT__EMBEDDING__RUNTIME", "candle"),
            (
                "MEMVAULT__EMBEDDING__ONNXRUNTIME_LIBRARY",
                "/opt/ort/libonnxruntime.so",
            ),
        ]),
    )
    .unwrap();
    assert_eq!(config.embedding.local_model, LocalModel::MiniLm);
    assert_eq!(config.embedding.runtime, LocalRuntime::Candle);
    assert_eq!(
        config.embedding.onnxruntime_library.as_deref(),
        Some(Path::new("/opt/ort/libonnxruntime.so"))
    );
    for (name, value) in [
        ("MEMVAULT__EMBEDDING__LOCAL_MODEL", "all-MiniLM-L6-v2-int4"),
        ("MEMVAULT__EMBEDDING__RUNTIME", "tensorflow"),
    ] {
        let refused = Config::load(
            None,
            Path::new("/nonexistent/config.toml"),
            env(&[(name, value)]),
        );
        assert!(refused.is_err(), "{name}={value} is refused");
    }
}
