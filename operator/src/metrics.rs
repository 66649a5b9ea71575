//! The operator's Prometheus metrics, in the text exposition format.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::api_writes::ApiWriteCounter;

/// Upper bounds (seconds) of the reconcile duration histogram.
const BUCKETS: [f64; 9] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

/// Counters the controller updates and `/metrics` renders.
#[derive(Debug, Default)]
pub struct Metrics {
    reconciles: AtomicU64,
    errors: Mutex<BTreeMap<&'static str, u64>>,
    bucket_counts: [AtomicU64; BUCKETS.len()],
    duration_sum_micros: AtomicU64,
    managed_clusters: AtomicU64,
    api_writes: ApiWriteCounter,
}

impl Metrics {
    /// Metrics that report `api_writes` as the API write count.
    pub fn new(api_writes: ApiWriteCounter) -> Self {
        Metrics {
            api_writes,
            ..Default::default()
        }
    }

    /// Records one reconcile and, if it failed, its reason.
    pub fn observe_reconcile(&self, took: Duration, error_reason: Option<&'static str>) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        self.duration_sum_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
        let seconds = took.as_secs_f64();
        for (bound, count) in BUCKETS.iter().zip(&self.bucket_counts) {
            if seconds <= *bound {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(reason) = error_reason
            && let Ok(mut errors) = self.errors.lock()
        {
            *errors.entry(reason).or_default() += 1;
        }
    }

    /// Sets how many RedisClusters the operator manages.
    pub fn set_managed_clusters(&self, count: u64) {
        self.managed_clusters.store(count, Ordering::Relaxed);
    }

    /// Reconciles so far.
    pub fn reconciles(&self) -> u64 {
        self.reconciles.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let reconciles = self.reconciles();
        let _ = writeln!(
            out,
            "# HELP redis_operator_reconciles_total Reconciles run.\n# TYPE redis_operator_reconciles_total counter\nredis_operator_reconciles_total {reconciles}"
        );
        let _ = writeln!(
            out,
            "# HELP redis_operator_reconcile_errors_total Failed reconciles by reason.\n# TYPE redis_operator_reconcile_errors_total counter"
        );
        if let Ok(errors) = self.errors.lock() {
            for (reason, count) in errors.iter() {
                let _ = writeln!(
                    out,
                    "redis_operator_reconcile_errors_total{{reason=\"{reason}\"}} {count}"
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP redis_operator_reconcile_duration_seconds Time per reconcile.\n# TYPE redis_operator_reconcile_duration_seconds histogram"
        );
        for (bound, count) in BUCKETS.iter().zip(&self.bucket_counts) {
            let _ = writeln!(
                out,
                "redis_operator_reconcile_duration_seconds_bucket{{le=\"{bound}\"}} {}",
                count.load(Ordering::Relaxed)
            );
        }
        let sum = self.duration_sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(
            out,
            "redis_operator_reconcile_duration_seconds_bucket{{le=\"+Inf\"}} {reconciles}\nredis_operator_reconcile_duration_seconds_sum {sum}\nredis_operator_reconcile_duration_seconds_count {reconciles}"
        );
        let _ = writeln!(
            out,
            "# HELP redis_operator_managed_clusters RedisClusters managed.\n# TYPE redis_operator_managed_clusters gauge\nredis_operator_managed_clusters {}",
            self.managed_clusters.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP redis_operator_api_writes_total Kubernetes API requests that changed something.\n# TYPE redis_operator_api_writes_total counter\nredis_operator_api_writes_total {}",
            self.api_writes.get()
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_histogram_and_errors() {
        let metrics = Metrics::default();
        metrics.observe_reconcile(Duration::from_millis(20), None);
        metrics.observe_reconcile(Duration::from_millis(300), Some("Forbidden"));
        let text = metrics.render();
        assert!(text.contains("redis_operator_reconciles_total 2"));
        assert!(text.contains("redis_operator_reconcile_errors_total{reason=\"Forbidden\"} 1"));
        assert!(text.contains("redis_operator_reconcile_duration_seconds_bucket{le=\"0.025\"} 1"));
        assert!(text.contains("redis_operator_reconcile_duration_seconds_bucket{le=\"0.5\"} 2"));
        assert!(text.contains("redis_operator_reconcile_duration_seconds_count 2"));
    }
}
