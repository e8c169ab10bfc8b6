use chrono::{Duration as ChronoDuration, Utc};
use memvault_core::Supervision;
use memvault_server::status::*;

fn check(minutes_ago: i64, ok: bool) -> HealthCheck {
    HealthCheck {
        at: Utc::now() - ChronoDuration::minutes(minutes_ago),
        ok,
        latency_ms: 1.0,
        detail: (!ok).then(|| "store: down".to_owned()),
    }
}

fn monitor() -> StatusMonitor {
    monitor_with(Supervision::default())
}

fn monitor_with(degraded: Supervision) -> StatusMonitor {
    StatusMonitor::new(Box::new(move || degraded.clone()))
}

#[test]
fn a_degraded_part_degrades_the_state_even_when_the_checks_pass() {
    let monitor = monitor_with(Supervision {
        degraded_collections: 1,
        ..Supervision::default()
    });
    monitor.record(check(1, true));
    let report = monitor.report();
    assert_eq!(report.state, "degraded");
    assert_eq!(report.degraded.degraded_collections, 1);
    assert_eq!(report.uptime_24h_percent, 100.0);
}

#[test]
fn uptime_and_incidents_follow_the_checks() {
    let monitor = monitor();
    for (minutes_ago, ok) in [(5, true), (4, false), (3, false), (2, true), (1, false)] {
        monitor.record(check(minutes_ago, ok));
    }
    let report = monitor.report();
    assert_eq!(report.state, "degraded");
    assert_eq!(report.checks_24h, 5);
    assert_eq!(report.uptime_24h_percent, 40.0);
    assert_eq!(report.incidents.len(), 2);
    assert!(
        report.incidents[0].resolved_at.is_none(),
        "newest incident is ongoing"
    );
    assert_eq!(report.incidents[1].failed_checks, 2);
}

#[test]
fn checks_older_than_a_day_are_forgotten() {
    let monitor = monitor();
    monitor.record(check(25 * 60, false));
    monitor.record(check(1, true));
    let report = monitor.report();
    assert_eq!(report.checks_24h, 1);
    assert_eq!(report.uptime_24h_percent, 100.0);
    assert_eq!(report.state, "operational");
}
