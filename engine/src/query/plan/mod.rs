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
//!
//! A query is planned in two steps: its access plan (`access`: the months, their counts where
//! needed, the rows that answer and their order), made before any row is read, then carried
//! out by the reader for that order: `ascending`, `descending` or `sorted` (DataFusion);
//! `scans` records what was read.

mod access;
mod ascending;
mod descending;
mod scans;
mod sorted;

use crate::dataset::layout::{values_schema, values_schema_with_gaps};
use crate::dataset::{Dataset, MonthFile, StationFiles};
use crate::error::{EngineError, Result};
use crate::model::Micros;
use crate::model::month::Month;
use crate::query::months::AnswerPart;
use crate::query::spec::{ReadAhead, ValueColumn, ValuesQuery, Window, column_indices};
use access::{Access, Order};
use ascending::Ascending;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::DataFusionError;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;
use futures::stream::BoxStream;
pub(crate) use scans::ScanLog;
#[cfg(test)]
pub(crate) use scans::ScanMetrics;
use std::ops::Range;
use std::sync::Arc;

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

pub(crate) type PartStream = BoxStream<'static, Result<AnswerPart>>;

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

impl Dataset {
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
    /// Plans `q` like [`Self::plan_all`], over `months`, its station's files: its access plan
    /// made first, then carried out.
    pub(super) async fn plan_all_in(
        &self,
        months: &StationFiles,
        q: &ValuesQuery,
        stored: bool,
        read_ahead: ReadAhead,
    ) -> Result<PartsPlan> {
        let access = self.access_plan(months, q).await?;
        self.execute(access, q, stored, read_ahead)
    }

    /// The answer's stream as `access` says to read it.
    fn execute(
        &self,
        access: Access<'_>,
        q: &ValuesQuery,
        stored: bool,
        read_ahead: ReadAhead,
    ) -> Result<PartsPlan> {
        let scans = ScanLog::default();
        let Access {
            columns,
            schema,
            parts,
            window,
            total,
            order,
        } = access;
        let (stream, reads) = match order {
            Order::Nothing => {
                return Ok(PartsPlan {
                    total,
                    schema,
                    parts: futures::stream::empty().boxed(),
                    reads: Reads::default(),
                    scans,
                });
            }
            Order::Ascending { rows, whole_window } => {
                let ascending = Ascending {
                    window,
                    columns: &columns,
                    rows,
                    stored: stored && whole_window,
                    read_ahead,
                };
                let (parts, reads) = self.ascending(&parts, ascending, &scans)?;
                return Ok(PartsPlan {
                    total,
                    schema,
                    parts,
                    reads,
                    scans,
                });
            }
            Order::Descending { rows: (a, b) } => self.descending(
                parts,
                window,
                columns.clone(),
                Arc::clone(&schema),
                a,
                b,
                scans.clone(),
            )?,
            Order::Sorted { rows } => {
                self.sorted(&parts, q, window, &columns, rows, &schema, &scans)?
            }
        };
        let parts = stream
            .map(|b| b.map(AnswerPart::Rows).map_err(EngineError::from))
            .boxed();
        Ok(PartsPlan {
            total,
            schema,
            parts,
            reads,
            scans,
        })
    }
}
