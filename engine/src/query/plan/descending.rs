//! Rows newest first: month by month from the newest, each reversed in memory (a month of one
//! series is at most a few thousand rows), so memory stays bounded.

use super::access::MonthPart;
use super::ascending::PREFETCH_MONTHS_REMOTE;
use super::scans::ScanLog;
use super::{HowRead, PlannedMonth, Reads, into_datafusion, with_time};
use crate::dataset::Dataset;
use crate::error::{EngineError, Result};
use crate::model::Micros;
use crate::query::months::{MonthRead, rows_of};
use crate::query::spec::{ValueColumn, column_indices};
use crate::storage::ReadCost;
use datafusion::arrow::array::UInt32Array;
use datafusion::arrow::compute::take_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::{StreamExt, TryStreamExt};
use std::sync::Arc;

/// How a month of a descending answer is read.
enum DescendingMonth {
    /// Every row is in the window.
    Whole(MonthRead),
    /// Cut by the window: read with its timestamps, to cut by.
    Cut(MonthRead),
}

impl Dataset {
    /// Descending rows: ascending rows [a, b) of the window, emitted newest first, a month at
    /// a time (from a bucket, the next ones read meanwhile).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn descending(
        &self,
        parts: Vec<MonthPart<'_>>,
        (lo, hi): (Micros, Micros),
        columns: Vec<ValueColumn>,
        schema: SchemaRef,
        a: u64,
        b: u64,
        scans: ScanLog,
    ) -> Result<(SendableRecordBatchStream, Reads)> {
        // (how to read the month, rows of it to keep counted from its first window row)
        let file_columns: Arc<[usize]> = column_indices(&columns)?.into();
        let mut months = Vec::new();
        let mut start = 0u64;
        for part in &parts {
            let n = part.rows.unwrap_or(0);
            let (s, e) = (start.max(a), (start + n).min(b));
            if s < e {
                let read = if part.inside(lo, hi) {
                    DescendingMonth::Whole(self.month_read(part, file_columns.clone()))
                } else {
                    DescendingMonth::Cut(self.month_read(part, with_time(&file_columns)?.into()))
                };
                months.push((read, s - start, e - start));
            }
            start += n;
        }
        months.reverse();
        let reads = Reads(
            months
                .iter()
                .map(|(read, from, to)| match read {
                    DescendingMonth::Whole(m) => PlannedMonth {
                        month: m.file().file.month,
                        how: HowRead::Decoded(Some(*from as usize..*to as usize)),
                    },
                    DescendingMonth::Cut(m) => PlannedMonth {
                        month: m.file().file.month,
                        how: HowRead::Cut,
                    },
                })
                .collect(),
        );
        // Newest first: a station-year file is read when its newest month is.
        self.read_objects_at_once(months.iter_mut().map(|(m, _, _)| match m {
            DescendingMonth::Whole(m) | DescendingMonth::Cut(m) => (m, false),
        }));
        let schema_for_stream = Arc::clone(&schema);
        // From a bucket, the next months' reads (the next year's) wait while these are sent;
        // a local directory reads in place, one month after another.
        let ahead = match self.store.read_cost() {
            ReadCost::InPlace => 1,
            ReadCost::RoundTrip => PREFETCH_MONTHS_REMOTE,
        };
        let stream = futures::stream::iter(months)
            .map(move |(read, from, to)| {
                let scans = scans.clone();
                let schema = Arc::clone(&schema_for_stream);
                async move {
                    let (from, to) = (from as usize, to as usize);
                    // The rows wanted, oldest first.
                    let rows = match read {
                        DescendingMonth::Whole(month) => {
                            scans.count_month();
                            month.decoded(Arc::clone(&schema), Some(from..to)).await?
                        }
                        DescendingMonth::Cut(month) => {
                            scans.count_month();
                            let month = month.within(Arc::clone(&schema), (lo, hi)).await?;
                            rows_of(&month, from..to)
                        }
                    };
                    let idx: UInt32Array = (0..rows.num_rows() as u32).rev().collect();
                    Ok(take_record_batch(&rows, &idx)?)
                }
            })
            .buffered(ahead)
            .map_err(|e: EngineError| into_datafusion(e));
        Ok((
            Box::pin(RecordBatchStreamAdapter::new(schema, stream)),
            reads,
        ))
    }
}
