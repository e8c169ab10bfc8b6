use memvault_server::pageviews::*;

#[test]
fn counts_path_and_referrer_host_only() {
    let pageviews = Pageviews::default();
    pageviews.record(
        br#"{"path": "/pricing?email=a@b.c", "referrer": "https://user:pw@example.com/x?q=1"}"#,
    );
    pageviews.record(br#"{"path": "/pricing"}"#);
    pageviews.record(b"\x00\xff garbage");
    let rows = pageviews.rows();
    let find = |path: &str, host: &str| {
        rows.iter()
            .find(|(key, _)| key.path == path && key.referrer_host == host)
            .map(|(_, count)| *count)
    };
    assert_eq!(find("/pricing", "example.com"), Some(1));
    assert_eq!(find("/pricing", ""), Some(1));
    assert_eq!(find("unknown", ""), Some(1));
    assert!(rows.iter().all(|(key, _)| !key.path.contains('@')));
}

#[test]
fn summary_counts_the_window_by_day_path_and_referrer() {
    let pageviews = Pageviews::default();
    pageviews.record(br#"{"path": "/", "referrer": "https://news.example/item"}"#);
    pageviews.record(br#"{"path": "/"}"#);
    pageviews.record(br#"{"path": "/pricing"}"#);
    // The day the rows were recorded on (not "now", which may be past midnight).
    let today = pageviews.rows()[0].0.day;
    let summary = pageviews.summary_until(today, 7);
    assert_eq!(summary.total, 3);
    assert_eq!(summary.by_day.len(), 7);
    assert_eq!(summary.by_day.last(), Some(&(today, 3)));
    assert_eq!(
        summary.by_path,
        vec![("/".to_owned(), 2), ("/pricing".to_owned(), 1)]
    );
    assert_eq!(
        summary.by_referrer,
        vec![
            (DIRECT_REFERRER.to_owned(), 2),
            ("news.example".to_owned(), 1)
        ]
    );
    // A window that ended before today sees nothing of it.
    let earlier = pageviews.summary_until(today - chrono::Duration::days(1), 7);
    assert_eq!(earlier.total, 0);
    assert!(earlier.by_path.is_empty());
    assert!(earlier.by_day.iter().all(|(_, count)| *count == 0));
}

#[test]
fn counts_are_saved_and_loaded_and_a_damaged_file_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edge").join("pageviews.json");
    let pageviews = Pageviews::load(&path);
    pageviews.record(br#"{"path": "/pricing", "referrer": "https://a.example/x"}"#);
    pageviews.record(br#"{"path": "/pricing"}"#);
    pageviews.save().unwrap();
    let loaded = Pageviews::load(&path);
    assert_eq!(loaded.rows(), pageviews.rows());
    assert_eq!(loaded.summary(1).total, 2);
    // Nothing new: nothing written (the file stays as it is).
    std::fs::write(&path, b"[]").unwrap();
    pageviews.save().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"[]");
    // A damaged file: counting starts from zero, the file is kept aside.
    std::fs::write(&path, b"{not json").unwrap();
    let fresh = Pageviews::load(&path);
    assert_eq!(fresh.summary(1).total, 0);
    assert!(path.with_extension("json.damaged").exists());
}
