use std::time::Duration;

use memvault_tools::bench::stats::*;

#[test]
fn nearest_rank_quantiles() {
    let mut latencies = Latencies::default();
    for millis in 1..=100 {
        latencies.record(Duration::from_millis(millis));
    }
    assert_eq!(latencies.quantile(0.5), Duration::from_millis(50));
    assert_eq!(latencies.quantile(0.95), Duration::from_millis(95));
    assert_eq!(latencies.quantile(0.0), Duration::from_millis(1));
    assert_eq!(Latencies::default().quantile(0.5), Duration::ZERO);
}
