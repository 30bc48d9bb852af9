//! The values planner: a [`ValuesQuery`] becomes the reads of exactly the station-month files
//! that can hold the answer (see the `query` module for which go through DataFusion).
//!
//! How the work is kept proportional to the answer, not to the archive:
//! - **Partitions.** Files come from the manifest (no LIST). DataFusion cannot know that a
//!   file's month derives from its timestamps, so the planner picks the months itself from the
//!   per-file time ranges in the files table.
//! - **Whole months** (every row of the series-month inside the window, known from the
//!   manifest) are decoded straight from the parameter's row group, page by page, with no
//!   per-row predicate and no DataFusion scan (its per-file setup cost a tenth of a download
//!   with ~3 000 rows per file); Parquet answers copy them without decoding
//!   ([`crate::query::months`]).
//! - **Months cut by the window** are decoded whole the same way, with their timestamps, and
//!   cut in memory: a month is two or three pages, and a DataFusion scan with the window as
//!   its predicate, which skipped the pages outside it, cost more to set up than they do to
//!   decode. Answers sorted by other columns go through DataFusion scans with a predicate on
//!   `parameter` and `timestamp` (typed scalars; row groups and pages outside the window
//!   skipped, `pushdown_filters` row by row).
//! - **Ascending time** reads a few months ahead in parallel tasks and emits them in order, so
//!   file opening and decoding overlap with encoding on the other core.
//! - **Counting and skipping.** Every file's row count per parameter is in the files table, so
//!   totals, `offset` and `recent` are resolved by arithmetic over whole months; only the (at
//!   most two) months cut by the window boundaries are counted from their decoded timestamps.
//!   A deep offset opens only the month it lands in, and `recent=N` reads only the newest
//!   months that hold N values.
//! - **Descending time** streams month by month from the newest, each month reversed in
//!   memory (a month of one series is at most a few thousand rows), so memory stays bounded.

use crate::dataset::layout::{
    COL_PARAMETER, COL_QUALITY, COL_TIMESTAMP, UTC, values_schema, values_schema_with_gaps,
};
use crate::dataset::manifest::{SeriesStats, ValueFile};
use crate::dataset::{Dataset, MonthFile, StationFiles};
use crate::error::{EngineError, Result};
use crate::model::Micros;
use crate::model::ids::{ParameterId, StationId};
use crate::model::month::Month;
use crate::query::months::{AnswerPart, MonthRead, rows_of};
use crate::query::object_read::ObjectRead;
use crate::query::spec::{ReadAhead, ValueColumn, ValuesQuery, Window, column_indices};
use crate::storage::ReadCost;
use chrono::{DateTime, Utc};
use datafusion::arrow::array::{RecordBatch, UInt32Array};
use datafusion::arrow::compute::{SortOptions, cast, take_record_batch};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::common::ScalarValue;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, col, in_list, lit};
use datafusion::physical_expr::{LexOrdering, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::limit::GlobalLimitExec;
use datafusion::physical_plan::metrics::MetricValue;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// A planned query: the total (when asked for or free) and the stream of the answer.
pub struct ValuesPlan {
    pub total: Option<u64>,
    pub schema: SchemaRef,
    pub stream: SendableRecordBatchStream,
    /// What the stream will read, known before it reads anything.
    pub reads: Reads,
    /// Every scan this query ran or will run, for metrics.
    pub scans: ScanLog,
}

/// A planned query whose answer may include stored row groups as they are (Parquet answers):
/// see [`crate::query::months`].
pub struct PartsPlan {
    pub total: Option<u64>,
    pub schema: SchemaRef,
    pub parts: PartStream,
    /// What the parts will read, known before anything is read.
    pub reads: Reads,
    pub scans: ScanLog,
}

/// What a plan will read, in the order it reads it, known before its first read: so that what
/// a request costs can be told (and tested) before it is paid. Counting the rows of a month
/// cut by the window (for a total, an offset or `recent`) happens while planning and is not
/// listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reads(pub Vec<PlannedMonth>);

/// A station-month a plan reads, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedMonth {
    pub month: Month,
    pub how: HowRead,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HowRead {
    /// Its row group copied as stored, not decoded (Parquet answers of whole months).
    Stored,
    /// Decoded: every row, or only the rows at these positions in the month.
    Decoded(Option<Range<usize>>),
    /// Decoded with its timestamps and cut to the window.
    Cut,
    /// Part of a DataFusion scan (answers sorted by another column than time).
    Scanned,
}

impl Reads {
    /// The months, in the order read.
    pub fn months(&self) -> Vec<Month> {
        self.0.iter().map(|m| m.month).collect()
    }
}

pub type PartStream = BoxStream<'static, Result<AnswerPart>>;

/// The scans of one query, and the months read without one (counted when their read starts);
/// shared with the stream, which adds to it as it goes.
#[derive(Clone, Default)]
pub struct ScanLog(
    Arc<Mutex<Vec<Arc<dyn ExecutionPlan>>>>,
    Arc<std::sync::atomic::AtomicUsize>,
);

impl ScanLog {
    fn count_month(&self) {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn push(&self, scan: &Arc<dyn ExecutionPlan>) {
        if let Ok(mut s) = self.0.lock() {
            s.push(Arc::clone(scan));
        }
    }
}

/// One month file that holds the series, with the rows it contributes to the window.
pub(crate) struct MonthPart<'a> {
    pub(crate) month: &'a Arc<MonthFile>,
    stats: &'a SeriesStats,
    /// Rows inside the window; None until counted.
    rows: Option<u64>,
}

impl<'a> MonthPart<'a> {
    pub(crate) fn file(&self) -> &'a ValueFile {
        &self.month.file
    }

    fn inside(&self, lo: Micros, hi: Micros) -> bool {
        lo <= self.stats.min && self.stats.max <= hi
    }

    /// The series' row group in its object: months hold one row group per parameter, in
    /// `series` order.
    pub(crate) fn row_group(&self) -> usize {
        let file = &self.month.file;
        let i = file
            .series
            .iter()
            .position(|s| std::ptr::eq(s, self.stats))
            .unwrap_or(0);
        file.row_group(i)
    }
}

/// What [`Dataset::ascending`] reads.
struct Ascending<'a> {
    /// The window in time, inclusive.
    window: (Micros, Micros),
    columns: &'a [ValueColumn],
    /// Ascending positions [a, b) of the window's rows to answer.
    rows: (u64, u64),
    /// Hand out whole months as stored row groups; only for the whole window.
    stored: bool,
    read_ahead: ReadAhead,
}

/// An engine error inside a DataFusion stream, unwrapped when it came from DataFusion.
pub(crate) fn into_datafusion(e: EngineError) -> DataFusionError {
    match e {
        EngineError::DataFusion(e) => e,
        other => DataFusionError::External(Box::new(other)),
    }
}

/// A piece of a batch answer as its batch; batch answers never hold stored row groups.
pub(super) fn into_batch(piece: Result<AnswerPart>) -> Result<RecordBatch, DataFusionError> {
    match piece {
        Ok(AnswerPart::Rows(batch)) => Ok(batch),
        Ok(AnswerPart::Stored(_)) => Err(DataFusionError::Internal(
            "stored row group in a batch answer".into(),
        )),
        Err(e) => Err(into_datafusion(e)),
    }
}

type MonthFuture = BoxFuture<'static, Result<Vec<AnswerPart>>>;

/// A month of an ascending answer as planned: what to read, not yet a future. The futures
/// are made as the read-ahead pulls their months: made while planning, the 120 boxed futures
/// of a 10-year answer had every answer take fresh allocator pages before its first byte.
enum AscendingMonth {
    /// Handed out as its stored row group (Parquet answers of the whole window).
    Stored(MonthRead),
    /// Decoded, only the rows in the range when there is one.
    Decoded(MonthRead, Option<Range<usize>>),
    /// Decoded and cut by the window.
    Cut(MonthRead),
}

/// What the month reads of one answer share.
#[derive(Clone)]
struct MonthContext {
    scans: ScanLog,
    schema: SchemaRef,
    /// The window in time, inclusive.
    window: (Micros, Micros),
}

impl AscendingMonth {
    /// The month's read, and whether it is copied as stored.
    fn read_of(&mut self) -> (&mut MonthRead, bool) {
        match self {
            Self::Stored(m) => (m, true),
            Self::Decoded(m, _) | Self::Cut(m) => (m, false),
        }
    }

    async fn read(self, cx: &MonthContext) -> Result<AnswerPart> {
        cx.scans.count_month();
        let schema = || Arc::clone(&cx.schema);
        Ok(match self {
            Self::Stored(month) => AnswerPart::Stored(month.stored().await?),
            Self::Decoded(month, rows) => AnswerPart::Rows(month.decoded(schema(), rows).await?),
            Self::Cut(month) => AnswerPart::Rows(month.within(schema(), cx.window).await?),
        })
    }
}

/// Months read one after the other, in order.
/// The months of a read, in order. Their reads are awaited together: from a bucket each one
/// waits a round trip, and a group's wait together (a local directory reads in place, so
/// there it is one after another all the same).
async fn read_months(months: Vec<AscendingMonth>, cx: MonthContext) -> Result<Vec<AnswerPart>> {
    futures::future::try_join_all(months.into_iter().map(|m| m.read(&cx))).await
}

/// A month's read (or a group of months', see [`Group`]), not started yet.
enum PendingRead {
    /// A task of its own, so that decoding or reading runs on another core than the encoder.
    Task(Vec<AscendingMonth>),
    /// On the answer's own task (its first read, see [`PendingRead::inline`]).
    Inline(Vec<AscendingMonth>),
}

impl PendingRead {
    /// Starts the read. Called as the read-ahead pulls the month, so at most
    /// `PREFETCH_MONTHS` (`PREFETCH_MONTHS_REMOTE`) run (or wait, done) at once.
    fn start(self, cx: &MonthContext) -> MonthFuture {
        match self {
            Self::Task(months) => {
                let task = tokio::spawn(read_months(months, cx.clone()));
                Box::pin(async move {
                    // A failed task is an error of the answer.
                    task.await.map_err(|source| EngineError::Task {
                        what: "month read task",
                        source,
                    })?
                })
            }
            Self::Inline(months) => Box::pin(read_months(months, cx.clone())),
        }
    }

    /// The same read on the caller's task. The answer's first month has nothing to overlap
    /// with yet (the read-ahead starts the next ones first), and a task of its own made a
    /// one-month answer (`recent=1`) wait for another core to wake up twice.
    fn inline(self) -> Self {
        match self {
            Self::Task(months) | Self::Inline(months) => Self::Inline(months),
        }
    }
}

/// Months read in groups are grouped by about this many rows, each group on a task of its own:
/// the reads (and decoding) then run on another core than the encoder, and the two
/// thread wake-ups of a task are paid once a group rather than once a ~15 KB month (a task per
/// stored month cost a fifth of the CPU time; every read on the answer's task kept one core
/// idle). Five months of a 15-minute series: a made 10-year Parquet download alone took 15-17 %
/// less time than with every read on the answer's task, for 12-16 % more CPU time, and under
/// load (four connections) as many downloads a second (`benches/ab.py`, groups of 2 to 60
/// months compared). Counted in rows, so that the read-ahead holds about as many bytes
/// whatever the series' interval.
const GROUP_ROWS: u64 = 12 * 1024;

/// Whole months gathered into one task.
#[derive(Default)]
struct Group {
    months: Vec<AscendingMonth>,
    rows: u64,
}

impl Group {
    /// Adds a month of `rows` rows; true once the group is full.
    fn add(&mut self, month: AscendingMonth, rows: u64) -> bool {
        self.months.push(month);
        self.rows += rows;
        self.rows >= GROUP_ROWS
    }

    /// The months so far as one read, in order, on a task of its own; the group starts over.
    fn take(&mut self) -> Option<PendingRead> {
        let months = std::mem::take(self).months;
        (!months.is_empty()).then_some(PendingRead::Task(months))
    }
}

/// Months (or groups of months) read ahead of the one being sent from a local directory. A
/// month of one series is a few thousand rows, so this bounds memory while keeping both cores
/// busy.
const PREFETCH_MONTHS: usize = 4;

/// The same from object storage, where a read waits a round trip: enough reads in flight to
/// hide it (a 10-year download is 120 of them) and still a bounded amount of memory (tens of
/// KB a month; months of one object wait on one read of it, at most `object_read::OBJECT_READ_BYTES`
/// each, so some five of those). 16 and 48 measured against SeaweedFS on loopback (`benches/s3.py`): the
/// 10-year CSV download 113 -> 77 ms, Parquet the same within noise (the store's own time
/// per request is then the bound).
const PREFETCH_MONTHS_REMOTE: usize = 48;

/// `columns` (positions in the value files' schema) and the timestamp, to cut a month by.
fn with_time(columns: &[usize]) -> Result<Vec<usize>> {
    let mut read = columns.to_vec();
    read.extend(column_indices(&[ValueColumn::Timestamp])?);
    read.sort_unstable();
    read.dedup();
    Ok(read)
}

/// The schema of an answer with these columns; `gaps`: the version holds recorded gaps, and
/// `value` is nullable (see `crate::model::gap`).
pub(crate) fn output_schema(columns: &[ValueColumn], gaps: bool) -> Result<SchemaRef> {
    let file = match gaps {
        true => values_schema_with_gaps(),
        false => values_schema(),
    };
    Ok(Arc::new(file.project(&column_indices(columns)?)?))
}

/// The months holding ascending window rows [a, b), and how many rows of the first to skip.
/// Months not counted yet are all kept (the stream stops early instead).
fn select<'p, 'a>(parts: &'p [MonthPart<'a>], a: u64, b: u64) -> (Vec<&'p MonthPart<'a>>, u64) {
    let mut selected = Vec::new();
    let mut skip = a;
    let mut start = 0u64;
    for part in parts {
        match part.rows {
            Some(n) => {
                let end = start + n;
                if end > a && start < b && n > 0 {
                    if selected.is_empty() {
                        skip = a - start;
                    }
                    selected.push(part);
                }
                start = end;
            }
            None => selected.push(part),
        }
    }
    (selected, skip)
}

/// Skips `skip` rows, then passes `take` rows and stops pulling.
fn slice_stream(
    input: SendableRecordBatchStream,
    skip: u64,
    take: u64,
) -> SendableRecordBatchStream {
    let schema = input.schema();
    let stream = futures::stream::unfold(
        (input, skip, take),
        |(mut input, mut skip, mut take)| async move {
            loop {
                if take == 0 {
                    return None;
                }
                let batch = match input.next().await? {
                    Ok(b) => b,
                    Err(e) => return Some((Err(e), (input, skip, 0))),
                };
                let n = batch.num_rows() as u64;
                if skip >= n {
                    skip -= n;
                    continue;
                }
                let len = (n - skip).min(take);
                let out = batch.slice(skip as usize, len as usize);
                take -= len;
                return Some((Ok(out), (input, 0, take)));
            }
        },
    );
    Box::pin(RecordBatchStreamAdapter::new(schema, stream))
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

fn and(a: Arc<dyn PhysicalExpr>, b: Arc<dyn PhysicalExpr>) -> Arc<dyn PhysicalExpr> {
    Arc::new(BinaryExpr::new(a, Operator::And, b))
}

impl Dataset {
    fn month_read(&self, part: &MonthPart<'_>, columns: Arc<[usize]>) -> MonthRead {
        MonthRead::new(self, part.month, part.row_group(), columns)
    }
}

/// The station's month files with rows of `parameter`, ascending.
fn month_parts<'a>(files: &'a StationFiles, parameter: &ParameterId) -> Vec<MonthPart<'a>> {
    files
        .iter()
        .filter_map(|f| {
            let stats = f.file.series.iter().find(|s| s.parameter == *parameter)?;
            (stats.rows > 0).then_some(MonthPart {
                month: f,
                stats,
                rows: None,
            })
        })
        .collect()
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

    /// Rows of `part` inside [lo, hi]: from the manifest when the month lies inside, else from
    /// the month's timestamps.
    async fn count_part(&self, part: &MonthPart<'_>, lo: Micros, hi: Micros) -> Result<u64> {
        if part.inside(lo, hi) {
            return Ok(part.stats.rows);
        }
        if part.stats.max < lo || part.stats.min > hi {
            return Ok(0);
        }
        let times = [ValueColumn::Timestamp];
        let month = self.month_read(part, column_indices(&times)?.into());
        let rows = month
            .within(output_schema(&times, self.has_gaps())?, (lo, hi))
            .await?;
        Ok(rows.num_rows() as u64)
    }

    /// Plans a values query, the answer as record batches. Everything that can fail because of
    /// the request fails here, before the caller sends a status line.
    pub async fn plan_values(&self, q: &ValuesQuery, read_ahead: ReadAhead) -> Result<ValuesPlan> {
        let plan = self.plan(q, false, read_ahead).await?;
        let stream = plan.parts.map(into_batch);
        Ok(ValuesPlan {
            total: plan.total,
            schema: Arc::clone(&plan.schema),
            stream: Box::pin(RecordBatchStreamAdapter::new(plan.schema, stream)),
            reads: plan.reads,
            scans: plan.scans,
        })
    }

    /// The answer with every month that is wholly inside it as its stored row group, when the
    /// answer is the whole window in ascending time (no page); otherwise as rows.
    pub async fn plan_parts(&self, q: &ValuesQuery) -> Result<PartsPlan> {
        // Months decoded here (answers sorted or paged) go to the Parquet writer on the answer's
        // task; grouping them has not been measured, so they keep a task each.
        self.plan(q, true, ReadAhead::Monthly).await
    }

    pub(super) async fn plan(
        &self,
        q: &ValuesQuery,
        stored: bool,
        read_ahead: ReadAhead,
    ) -> Result<PartsPlan> {
        // An answer of a version with recorded gaps has `value` nullable, which the stored
        // pages of months without gaps (`value` required, no levels) cannot be copied into.
        let stored = stored && !self.has_gaps();
        match &q.qualities {
            Some(qualities) => {
                let qualities = Arc::clone(qualities);
                Box::pin(self.plan_of_qualities(q, qualities, read_ahead)).await
            }
            None => self.plan_all(q, stored, read_ahead).await,
        }
    }

    /// Plans `q` as if it kept every quality, except that the qualities of a query sorted by
    /// another column than time go into its scan's predicate (see [`crate::query::qualities`]).
    pub(super) async fn plan_all(
        &self,
        q: &ValuesQuery,
        stored: bool,
        read_ahead: ReadAhead,
    ) -> Result<PartsPlan> {
        if let Some(newest) = self.newest_holds(q).await? {
            return self.plan_all_in(&newest, q, stored, read_ahead).await;
        }
        let months = match q.window {
            // Months outside the window are dropped while planning: only its years are decoded.
            Window::Between { from, to } => {
                self.station_files_within(
                    &q.station,
                    (from.unwrap_or(Micros::MIN), to.unwrap_or(Micros::MAX)),
                )
                .await?
            }
            Window::Recent(_) | Window::Last(_) => self.station_files(&q.station).await?,
        };
        self.plan_all_in(&months, q, stored, read_ahead).await
    }

    /// The series' newest month alone, when it holds every row `q` can answer: `recent=N`
    /// (of every quality) with N at most its rows. The rows before it only count towards
    /// positions that such an answer never reaches, so it is planned over that month alone:
    /// the one kept for the series (see `dataset::station_files::SeriesNewest`), or else
    /// found among the station's last year's months, the only ones decoded; None for a
    /// series without values that year.
    pub(super) async fn newest_holds(&self, q: &ValuesQuery) -> Result<Option<StationFiles>> {
        let Window::Recent(n) = q.window else {
            return Ok(None);
        };
        if q.qualities.is_some() {
            return Ok(None);
        }
        let rows_of = |month: &MonthFile| {
            month
                .file
                .series
                .iter()
                .find(|s| s.parameter == q.parameter && s.rows > 0)
                .map(|s| s.rows)
        };
        let newest = match self.series_newest(&q.station, &q.parameter) {
            Some(newest) => Arc::clone(&newest.month),
            None => {
                // The station's last year is decoded, other years only if a request needed
                // them: the series' newest month is its last in that year, if it has one.
                let months = self.station_files_of_last_year(&q.station).await?;
                let Some(last_year) = months.last().map(|m| m.file.month.year()) else {
                    return Ok(None);
                };
                let newest = months
                    .iter()
                    .rev()
                    .take_while(|m| m.file.month.year() == last_year)
                    .find(|m| rows_of(m).is_some());
                let Some(month) = newest else {
                    return Ok(None);
                };
                Arc::clone(month)
            }
        };
        Ok(rows_of(&newest)
            .is_some_and(|rows| n <= rows)
            .then(|| vec![newest]))
    }

    /// Plans `q` like [`Self::plan_all`], over `months`, its station's files.
    pub(super) async fn plan_all_in(
        &self,
        months: &StationFiles,
        q: &ValuesQuery,
        stored: bool,
        read_ahead: ReadAhead,
    ) -> Result<PartsPlan> {
        let scans = ScanLog::default();
        let columns = if q.columns.is_empty() {
            ValueColumn::ALL.to_vec()
        } else {
            q.columns.clone()
        };
        let out_schema = output_schema(&columns, self.has_gaps())?;
        let mut parts = month_parts(months, &q.parameter);

        // The window in time, inclusive.
        let (lo, hi) = match q.window {
            Window::Between { from, to } => {
                (from.unwrap_or(Micros::MIN), to.unwrap_or(Micros::MAX))
            }
            Window::Recent(_) => (Micros::MIN, Micros::MAX),
            Window::Last(d) => match parts.last() {
                None => (Micros::MIN, Micros::MAX),
                Some(p) => {
                    let end = DateTime::<Utc>::from_timestamp_micros(p.stats.max)
                        .ok_or_else(|| EngineError::corrupt("timestamp out of range"))?;
                    let start = d
                        .before(end)
                        .map_or(Micros::MIN, |s| s.timestamp_micros().saturating_add(1));
                    (start, p.stats.max)
                }
            },
        };
        if lo > hi {
            return Err(EngineError::InvalidQuery("'from' is after 'to'".into()));
        }
        parts.retain(|p| p.stats.max >= lo && p.stats.min <= hi);

        let time_order = match q.sort.first() {
            None => Some(false),
            Some(k) if k.column == ValueColumn::Timestamp => Some(k.descending),
            Some(_) => None,
        };
        let needs_counts = q.need_total
            || q.offset > 0
            || matches!(q.window, Window::Recent(_))
            || time_order != Some(false);
        // Cumulative row positions of each month inside the window.
        let mut total_in_window = None;
        if needs_counts {
            let mut sum = 0u64;
            for part in parts.iter_mut() {
                let n = self.count_part(part, lo, hi).await?;
                part.rows = Some(n);
                sum += n;
            }
            total_in_window = Some(sum);
        }

        // The collection as an ascending index range [c0, c1) of the window's rows.
        let (c0, c1) = match (q.window, total_in_window) {
            (Window::Recent(n), Some(all)) => (all - n.min(all), all),
            (_, Some(all)) => (0, all),
            (_, None) => (0, u64::MAX),
        };
        let total = total_in_window.map(|_| c1 - c0);
        let page_len = q.limit.unwrap_or(u64::MAX);

        if q.limit == Some(0) || c0 >= c1 {
            return Ok(PartsPlan {
                total,
                schema: out_schema,
                parts: futures::stream::empty().boxed(),
                reads: Reads::default(),
                scans,
            });
        }
        let (stream, reads) = match time_order {
            Some(false) => {
                // Ascending rows [a, b) of the window.
                let a = c0.saturating_add(q.offset).min(c1);
                let b = a.saturating_add(page_len).min(c1);
                let whole_window = a == 0 && b == c1;
                let ascending = Ascending {
                    window: (lo, hi),
                    columns: &columns,
                    rows: (a, b),
                    stored: stored && whole_window,
                    read_ahead,
                };
                let (parts, reads) = self.ascending(&parts, ascending, &scans)?;
                return Ok(PartsPlan {
                    total,
                    schema: out_schema,
                    parts,
                    reads,
                    scans,
                });
            }
            Some(true) => {
                // Position p of the descending collection is ascending index c1 - 1 - p.
                let b = c1.saturating_sub(q.offset).max(c0);
                let a = b.saturating_sub(page_len).max(c0);
                self.descending(
                    parts,
                    (lo, hi),
                    columns.clone(),
                    Arc::clone(&out_schema),
                    a,
                    b,
                    scans.clone(),
                )?
            }
            None => {
                let scanned = select(&parts, c0, c1)
                    .0
                    .iter()
                    .map(|p| PlannedMonth {
                        month: p.file().month,
                        how: HowRead::Scanned,
                    })
                    .collect();
                // Sort by other keys: the collection through a DataFusion sort (top-k when a
                // page is asked for), then the page.
                // The sort keys, and the timestamp that breaks their ties, whatever the answer's
                // columns are.
                let mut needed = columns.clone();
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
                let inner = self.ascending_plan(&parts, predicate, &needed, c0, c1, &scans)?;
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
                let ordering = LexOrdering::new(keys)
                    .ok_or_else(|| EngineError::InvalidQuery("empty sort".into()))?;
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
                    &columns,
                    Arc::clone(&out_schema),
                );
                let schema = stream.schema();
                let stream: SendableRecordBatchStream = Box::pin(RecordBatchStreamAdapter::new(
                    schema,
                    stream.map(|b| b.and_then(|b| Ok(canonical_dictionaries(b)?))),
                ));
                (stream, Reads(scanned))
            }
        };
        let parts = stream
            .map(|b| b.map(AnswerPart::Rows).map_err(EngineError::from))
            .boxed();
        Ok(PartsPlan {
            total,
            schema: out_schema,
            parts,
            reads,
            scans,
        })
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

    /// Ascending rows [a, b) of the window: whole months straight from their row group (or
    /// handed out stored, see [`Ascending::stored`]), months cut by the window decoded and
    /// cut ([`MonthRead::within`]), run after run in time order.
    fn ascending(
        &self,
        parts: &[MonthPart<'_>],
        q: Ascending<'_>,
        scans: &ScanLog,
    ) -> Result<(PartStream, Reads)> {
        let (lo, hi) = q.window;
        let (a, b) = q.rows;
        let (selected, mut skip) = select(parts, a, b);
        // Shared by the months' reads, rather than a copy each.
        let file_columns: Arc<[usize]> = column_indices(q.columns)?.into();
        let schema = output_schema(q.columns, self.has_gaps())?;
        // The months to read, whole (true) or cut, with their rows.
        let mut planned: Vec<(AscendingMonth, bool, u64)> = Vec::with_capacity(selected.len());
        // The window position of the month's first row, while every month so far is counted.
        let mut position = Some(a - skip);
        for (k, part) in selected.iter().enumerate() {
            let whole = part.inside(lo, hi);
            // The month's rows in [a, b), so that decoding skips the pages outside them.
            let rows = position.zip(part.rows).map(|(p, n)| {
                let clamp = |x: u64| x.saturating_sub(p).min(n) as usize;
                clamp(a)..clamp(b)
            });
            position = position.zip(part.rows).map(|(p, n)| p + n);
            let month = if !whole {
                AscendingMonth::Cut(self.month_read(part, with_time(&file_columns)?.into()))
            } else if q.stored {
                AscendingMonth::Stored(self.month_read(part, file_columns.clone()))
            } else {
                if k == 0 && rows.is_some() {
                    // The decoding skips the first month's rows before `a`.
                    skip = 0;
                }
                AscendingMonth::Decoded(self.month_read(part, file_columns.clone()), rows)
            };
            planned.push((month, whole, part.stats.rows));
        }
        let reads = Reads(
            planned
                .iter()
                .zip(&selected)
                .map(|((month, _, _), part)| PlannedMonth {
                    month: part.file().month,
                    how: match month {
                        AscendingMonth::Cut(_) => HowRead::Cut,
                        AscendingMonth::Stored(_) => HowRead::Stored,
                        AscendingMonth::Decoded(_, rows) => HowRead::Decoded(rows.clone()),
                    },
                })
                .collect(),
        );
        self.read_objects_at_once(planned.iter_mut().map(|(m, _, _)| m.read_of()));
        // Up to PREFETCH_MONTHS (or _REMOTE) months (or groups of months) read ahead in parallel and
        // emitted in time order: file opening and decoding overlap instead of queueing, and
        // decoding runs on another core than the encoder (see `PendingRead`).
        let mut months: Vec<PendingRead> = Vec::new();
        // Whole months not yet given a read, when they are read in groups.
        let mut group = Group::default();
        let grouped = q.stored || q.read_ahead == ReadAhead::Grouped;
        for (month, whole, rows) in planned {
            if !whole {
                months.extend(group.take());
                months.push(PendingRead::Task(vec![month]));
            } else if !grouped {
                months.push(PendingRead::Task(vec![month]));
            } else if group.add(month, rows) || months.is_empty() {
                // The first month alone, on the answer's task (see `PendingRead::inline`).
                months.extend(group.take());
            }
        }
        months.extend(group.take());
        let mut months = months.into_iter();
        let first = months.next().map(PendingRead::inline);
        let cx = MonthContext {
            scans: scans.clone(),
            schema: Arc::clone(&schema),
            window: (lo, hi),
        };
        let ahead = match self.store.read_cost() {
            ReadCost::InPlace => PREFETCH_MONTHS,
            ReadCost::RoundTrip => PREFETCH_MONTHS_REMOTE,
        };
        let parts = futures::stream::iter(first.into_iter().chain(months))
            .map(move |read| read.start(&cx))
            .buffered(ahead)
            .map_ok(|parts| futures::stream::iter(parts.into_iter().map(Ok)))
            .try_flatten();
        if q.stored {
            // The whole window: nothing to skip or cut.
            return Ok((parts.boxed(), reads));
        }
        let batches = parts.map(into_batch);
        let sliced = slice_stream(
            Box::pin(RecordBatchStreamAdapter::new(schema, batches)),
            skip,
            b.saturating_sub(a),
        );
        Ok((
            sliced
                .map(|b| b.map(AnswerPart::Rows).map_err(EngineError::from))
                .boxed(),
            reads,
        ))
    }

    /// Lets months that lie next to each other in one object (a station-year file) take their
    /// bytes from one read of it (see `query::object_read`), for a store where each request is
    /// a round trip.
    /// `months`: each month's read, and whether it is copied as stored (see
    /// `MonthRead::wanted`), in the order they will be read.
    fn read_objects_at_once<'m>(&self, months: impl Iterator<Item = (&'m mut MonthRead, bool)>) {
        if self.store.read_cost() == ReadCost::InPlace {
            // Nothing to gain.
            return;
        }
        let mut reads: Vec<ObjectRead> = Vec::new();
        let mut places: Vec<(&mut MonthRead, usize, usize)> = Vec::new();
        for (read, stored) in months {
            if !read.file().file.shares_object() {
                continue;
            }
            let offset = read.file().file.offset();
            let wanted = read.wanted(stored);
            if read.holds(&wanted) {
                continue;
            }
            let same = reads
                .last_mut()
                .filter(|r| r.location() == read.file().location());
            let place = same.and_then(|r| r.add(offset, wanted.clone()));
            let place = match place {
                Some(i) => i,
                None => {
                    let mut fresh =
                        ObjectRead::new(self.store.object_store(), read.file().location().clone());
                    let i = fresh.add(offset, wanted).unwrap_or(0);
                    reads.push(fresh);
                    i
                }
            };
            places.push((read, reads.len() - 1, place));
        }
        let reads: Vec<Arc<ObjectRead>> = reads.into_iter().map(Arc::new).collect();
        for (read, r, i) in places {
            // A month alone in its read reads on its own, as any month does.
            if reads[r].len() > 1 {
                read.read_with_others(Arc::clone(&reads[r]), i);
            }
        }
    }

    /// Descending rows: ascending rows [a, b) of the window, emitted newest first, a month at
    /// a time (from a bucket, the next ones read meanwhile).
    #[allow(clippy::too_many_arguments)]
    fn descending(
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

/// How a month of a descending answer is read.
enum DescendingMonth {
    /// Every row is in the window.
    Whole(MonthRead),
    /// Cut by the window: read with its timestamps, to cut by.
    Cut(MonthRead),
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
