//! Rows in time order: whole months straight from their row group (or handed out as stored),
//! months cut by the window decoded and cut, a few months read ahead in parallel tasks and
//! emitted in order.

use super::access::{MonthPart, select};
use super::scans::ScanLog;
use super::{HowRead, PartStream, PlannedMonth, Reads, into_batch, output_schema, with_time};
use crate::dataset::Dataset;
use crate::error::{EngineError, Result};
use crate::model::Micros;
use crate::query::months::{AnswerPart, MonthRead};
use crate::query::object_read::ObjectRead;
use crate::query::spec::{ReadAhead, ValueColumn, column_indices};
use crate::storage::ReadCost;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use std::ops::Range;
use std::sync::Arc;

/// What [`Dataset::ascending`] reads.
pub(super) struct Ascending<'a> {
    /// The window in time, inclusive.
    pub(super) window: (Micros, Micros),
    pub(super) columns: &'a [ValueColumn],
    /// Ascending positions [a, b) of the window's rows to answer.
    pub(super) rows: (u64, u64),
    /// Hand out whole months as stored row groups; only for the whole window.
    pub(super) stored: bool,
    pub(super) read_ahead: ReadAhead,
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
pub(super) const PREFETCH_MONTHS_REMOTE: usize = 48;

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

impl Dataset {
    /// Ascending rows [a, b) of the window: whole months straight from their row group (or
    /// handed out stored, see [`Ascending::stored`]), months cut by the window decoded and
    /// cut ([`MonthRead::within`]), run after run in time order.
    pub(super) fn ascending(
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
    pub(super) fn read_objects_at_once<'m>(
        &self,
        months: impl Iterator<Item = (&'m mut MonthRead, bool)>,
    ) {
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
}
