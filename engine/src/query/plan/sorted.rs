//! Rows sorted by other columns than time: a DataFusion scan of exactly the window's months
//! with the window (and qualities) as its typed predicate, then a sort, top-k for a page.

use super::access::{MonthPart, month_parts, select};
use super::scans::ScanLog;
use super::{HowRead, PlannedMonth, Reads};
use crate::dataset::Dataset;
use crate::dataset::layout::{COL_PARAMETER, COL_QUALITY, COL_TIMESTAMP, UTC, values_schema};
use crate::dataset::manifest::ValueFile;
use crate::error::{EngineError, Result};
use crate::model::Micros;
use crate::model::ids::{ParameterId, StationId};
use crate::query::spec::{ValueColumn, ValuesQuery};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::{SortOptions, cast};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, col, in_list, lit};
use datafusion::physical_expr::{LexOrdering, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::limit::GlobalLimitExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use futures::StreamExt;
use std::sync::Arc;

/// A literal of the stored text columns' type (dictionaries).
fn text_scalar(text: &str) -> Arc<dyn PhysicalExpr> {
    lit(ScalarValue::Dictionary(
        Box::new(DataType::Int32),
        Box::new(ScalarValue::Utf8(Some(text.to_owned()))),
    ))
}

fn ts_scalar(v: Micros) -> Arc<dyn PhysicalExpr> {
    lit(ScalarValue::TimestampMicrosecond(Some(v), Some(UTC.into())))
}

pub(super) fn and(a: Arc<dyn PhysicalExpr>, b: Arc<dyn PhysicalExpr>) -> Arc<dyn PhysicalExpr> {
    Arc::new(BinaryExpr::new(a, Operator::And, b))
}

/// `batch` with each dictionary column rebuilt from its rows, values in order of first use.
/// DataFusion's sort (top-k, merges) gives a batch the dictionaries of the batches its rows
/// came from, concatenated, in an order that can vary from run to run; an Arrow IPC answer
/// sends the dictionary as it is, so the same answer, under the same strong ETag, came out in
/// different bytes (and a range resumed across two makings of it would be corrupt).
fn canonical_dictionaries(batch: RecordBatch) -> std::result::Result<RecordBatch, ArrowError> {
    let columns = batch
        .columns()
        .iter()
        .map(|c| match c.data_type() {
            DataType::Dictionary(_, values) => cast(&cast(c, values)?, c.data_type()),
            _ => Ok(Arc::clone(c)),
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    RecordBatch::try_new(batch.schema(), columns)
}

/// Drops sort-only columns so the output has exactly the requested columns.
fn project_stream(
    input: SendableRecordBatchStream,
    columns: &[ValueColumn],
    schema: SchemaRef,
) -> SendableRecordBatchStream {
    let in_schema = input.schema();
    let indices: Vec<usize> = columns
        .iter()
        .filter_map(|c| in_schema.index_of(c.name()).ok())
        .collect();
    let stream = input.map(move |b| b.and_then(|b: RecordBatch| Ok(b.project(&indices)?)));
    Box::pin(RecordBatchStreamAdapter::new(schema, stream))
}

impl Dataset {
    /// The predicate `parameter = P [AND timestamp >= lo] [AND timestamp <= hi]
    /// [AND quality IN (qualities)]`.
    fn predicate(
        &self,
        parameter: &ParameterId,
        lo: Micros,
        hi: Micros,
        qualities: Option<&[String]>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        let schema = values_schema();
        let param = text_scalar(parameter.as_str());
        let mut p: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(
            col(COL_PARAMETER, &schema)?,
            Operator::Eq,
            param,
        ));
        if lo > Micros::MIN {
            p = and(
                p,
                Arc::new(BinaryExpr::new(
                    col(COL_TIMESTAMP, &schema)?,
                    Operator::GtEq,
                    ts_scalar(lo),
                )),
            );
        }
        if hi < Micros::MAX {
            p = and(
                p,
                Arc::new(BinaryExpr::new(
                    col(COL_TIMESTAMP, &schema)?,
                    Operator::LtEq,
                    ts_scalar(hi),
                )),
            );
        }
        if let Some(qualities) = qualities {
            let list = qualities.iter().map(|q| text_scalar(q)).collect();
            p = and(
                p,
                in_list(col(COL_QUALITY, &schema)?, list, &false, &schema)?,
            );
        }
        Ok(p)
    }

    /// A DataFusion scan of the series' rows in the window `[lo, hi]` (of `qualities`), over
    /// exactly the month files that can hold them, in time order.
    pub(crate) async fn window_scan(
        &self,
        station: &StationId,
        parameter: &ParameterId,
        (lo, hi): (Micros, Micros),
        columns: &[ValueColumn],
        qualities: Option<&[String]>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let months = self.station_files_within(station, (lo, hi)).await?;
        let parts = month_parts(&months, parameter);
        let files: Vec<&ValueFile> = parts
            .iter()
            .filter(|p| p.stats.max >= lo && p.stats.min <= hi)
            .map(|p| p.file())
            .collect();
        let predicate = self.predicate(parameter, lo, hi, qualities)?;
        self.scan_source
            .scan(&files, predicate, columns, None, self.has_gaps())
    }

    /// A plan for ascending rows [a, b) of the window (positions relative to the window's
    /// first row), opening only the months that hold them.
    fn ascending_plan(
        &self,
        parts: &[MonthPart<'_>],
        predicate: Arc<dyn PhysicalExpr>,
        columns: &[ValueColumn],
        a: u64,
        b: u64,
        scans: &ScanLog,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let (selected, skip) = select(parts, a, b);
        let files: Vec<&ValueFile> = selected.iter().map(|p| p.file()).collect();
        let take = b.saturating_sub(a);
        let fetch = (take != u64::MAX).then_some(take as usize);
        let scan_limit = fetch.map(|f| f + skip as usize);
        let scan =
            self.scan_source
                .scan(&files, predicate, columns, scan_limit, self.has_gaps())?;
        scans.push(&scan);
        Ok(Arc::new(GlobalLimitExec::new(scan, skip as usize, fetch)))
    }
    /// Rows `[c0, c1)` of the window sorted by other keys than time: the collection through a
    /// DataFusion sort (top-k when a page is asked for), then the page.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sorted(
        &self,
        parts: &[MonthPart<'_>],
        q: &ValuesQuery,
        (lo, hi): (Micros, Micros),
        columns: &[ValueColumn],
        (c0, c1): (u64, u64),
        out_schema: &SchemaRef,
        scans: &ScanLog,
    ) -> Result<(SendableRecordBatchStream, Reads)> {
        let scanned = select(parts, c0, c1)
            .0
            .iter()
            .map(|p| PlannedMonth {
                month: p.file().month,
                how: HowRead::Scanned,
            })
            .collect();
        // The sort keys, and the timestamp that breaks their ties, whatever the answer's
        // columns are.
        let mut needed = columns.to_vec();
        for c in q
            .sort
            .iter()
            .map(|k| k.column)
            .chain([ValueColumn::Timestamp])
        {
            if !needed.contains(&c) {
                needed.push(c);
            }
        }
        let predicate = self.predicate(&q.parameter, lo, hi, q.qualities.as_deref())?;
        let inner = self.ascending_plan(parts, predicate, &needed, c0, c1, scans)?;
        let inner_schema = inner.schema();
        let mut keys = Vec::new();
        for k in &q.sort {
            keys.push(PhysicalSortExpr::new(
                col(k.column.name(), &inner_schema)?,
                SortOptions {
                    descending: k.descending,
                    nulls_first: false,
                },
            ));
        }
        // Timestamps are unique: a last key makes the order total and stable.
        if !q.sort.iter().any(|k| k.column == ValueColumn::Timestamp) {
            keys.push(PhysicalSortExpr::new(
                col(COL_TIMESTAMP, &inner_schema)?,
                SortOptions::default(),
            ));
        }
        let ordering =
            LexOrdering::new(keys).ok_or_else(|| EngineError::InvalidQuery("empty sort".into()))?;
        let fetch = q
            .limit
            .map(|l| q.offset.saturating_add(l).min(usize::MAX as u64) as usize);
        let sorted: Arc<dyn ExecutionPlan> =
            Arc::new(SortExec::new(ordering, inner).with_fetch(fetch));
        let paged: Arc<dyn ExecutionPlan> = Arc::new(GlobalLimitExec::new(
            sorted,
            q.offset as usize,
            q.limit.map(|l| l as usize),
        ));
        let stream = project_stream(
            paged.execute(0, self.task_ctx())?,
            columns,
            Arc::clone(out_schema),
        );
        let schema = stream.schema();
        let stream: SendableRecordBatchStream = Box::pin(RecordBatchStreamAdapter::new(
            schema,
            stream.map(|b| b.and_then(|b| Ok(canonical_dictionaries(b)?))),
        ));
        Ok((stream, Reads(scanned)))
    }
}
