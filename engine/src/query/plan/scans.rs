//! What a plan's scans read, for metrics and for tests that check what a request costs.

use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::MetricValue;
use std::sync::{Arc, Mutex};

/// The scans of one query, and the months read without one (counted when their read starts);
/// shared with the stream, which adds to it as it goes.
#[derive(Clone, Default)]
pub struct ScanLog(
    Arc<Mutex<Vec<Arc<dyn ExecutionPlan>>>>,
    Arc<std::sync::atomic::AtomicUsize>,
);

impl ScanLog {
    pub(super) fn count_month(&self) {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    pub(super) fn push(&self, scan: &Arc<dyn ExecutionPlan>) {
        if let Ok(mut s) = self.0.lock() {
            s.push(Arc::clone(scan));
        }
    }
}

/// Aggregated pruning metrics over all scans of a query.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ScanMetrics {
    pub files_scanned: usize,
    pub row_groups_pruned: usize,
    pub row_groups_matched: usize,
    pub page_rows_pruned: usize,
    pub page_rows_matched: usize,
    pub output_rows: usize,
}

impl ScanLog {
    /// Sums the Parquet metrics of the scans (meaningful once the stream is consumed).
    pub fn metrics(&self) -> ScanMetrics {
        let scans = self.0.lock().map(|s| s.clone()).unwrap_or_default();
        let mut m = ScanMetrics {
            files_scanned: self.1.load(std::sync::atomic::Ordering::Relaxed),
            ..ScanMetrics::default()
        };
        for scan in scans {
            let Some(set) = scan.metrics() else { continue };
            // (pruned, matched) of a pruning metric, summed over partitions.
            let get = |name: &str| {
                set.iter()
                    .filter_map(|x| match x.value() {
                        MetricValue::PruningMetrics {
                            name: n,
                            pruning_metrics,
                        } if n == name => {
                            Some((pruning_metrics.pruned(), pruning_metrics.matched()))
                        }
                        _ => None,
                    })
                    .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
            };
            m.files_scanned += file_count(&scan);
            (m.row_groups_pruned, m.row_groups_matched) = {
                let (p, q) = get("row_groups_pruned_statistics");
                (m.row_groups_pruned + p, m.row_groups_matched + q)
            };
            (m.page_rows_pruned, m.page_rows_matched) = {
                let (p, q) = get("page_index_rows_pruned");
                (m.page_rows_pruned + p, m.page_rows_matched + q)
            };
            m.output_rows += set.output_rows().unwrap_or(0);
        }
        m
    }
}

fn file_count(scan: &Arc<dyn ExecutionPlan>) -> usize {
    (scan.as_ref() as &dyn std::any::Any)
        .downcast_ref::<DataSourceExec>()
        .and_then(|e| {
            (e.data_source().as_ref() as &dyn std::any::Any)
                .downcast_ref::<datafusion::datasource::physical_plan::FileScanConfig>()
                .map(|c| c.file_groups.iter().map(|g| g.len()).sum())
        })
        .unwrap_or(0)
}
