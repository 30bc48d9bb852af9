//! Aggregates (`aggregate`, `interval`, `timeZone`, `yearStart`, `minCoverage`, `qualities`):
//! a series' values in a window summarised per bucket of time ([`calendar`]) by the statistics
//! asked for ([`statistic`]), with each bucket's count and coverage.
//!
//! The values come from the month reader in time order (the raw read path, see
//! [`crate::query`]: exactly the window's month files, pruned by the files table), and a
//! bucket is summed up as its values pass, so memory is one bucket's values (for percentiles)
//! plus the answer's buckets, never the raw rows. DESIGN.md names DataFusion plans as the
//! reference path for aggregates; the DataFusion plan of an aggregate is kept as this
//! aggregator's test oracle (`reference`, `engine/tests/aggregate_reference.rs`), and the
//! streaming aggregator serves for the reason the raw reads do (DataFusion's per-file scan
//! setup cost more than reading ~3 000 rows a station-month) and because it holds one bucket's
//! values where a group-by holds every bucket's (`cargo bench --bench engine -- aggregate`:
//! 5.5 ms against DataFusion's 109 ms for the daily mean, min and max of 10 years). Further
//! oracles are pandas `resample` and DuckDB `time_bucket` over the same files
//! (`tests/aggregates.rs`).
//!
//! Where the statistics can be summed and the buckets are whole UTC days but for a few, the
//! buckets are summed from the series' daily rollups instead (`rolled`): the annual maxima
//! of every series of an archive read a file or a few a station (its rollup parts), not
//! twelve a station-year.
//!
//! A series' buckets are held until the series ends (a `P1D` answer over a century is 36 500
//! rows), so that they can be sorted (`sort=-max`) and paged; many series are aggregated one
//! after the other as the answer reaches them.

pub(crate) mod calendar;
mod reference;
mod rolled;
pub(crate) mod statistic;

use crate::dataset::Dataset;
use crate::error::{EngineError, Result};
use crate::model::Micros;
use crate::model::ids::Series;
use crate::model::zone::Zone;
use crate::query::many_series::{COL_PARAMETER_ID, COL_STATION_ID};
use crate::query::spec::{ReadAhead, ValueColumn, ValuesQuery, Window};
use calendar::{Bucket, Grid, Interval};
use chrono::DateTime;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, DictionaryArray, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{
    DataType, Field, Float64Type, Int32Type, Schema, SchemaRef, TimeUnit, TimestampMicrosecondType,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use statistic::{Accumulator, Cell, Kind, Statistic};
use std::sync::Arc;

/// How a series is summarised.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateSpec {
    /// As asked, in order; at least one.
    pub statistics: Vec<Statistic>,
    /// `None`: one bucket over the window.
    pub interval: Option<Interval>,
    /// The calendar of day buckets and longer, and the offset of output times.
    pub zone: Zone,
    /// The month (1-12) that month and year buckets count from.
    pub year_start: u32,
    /// Statistics of buckets with less coverage are null (0..=1).
    pub min_coverage: f64,
    /// Only values of these qualities count.
    pub qualities: Option<Arc<[String]>>,
}

/// A column of an aggregate answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BucketColumn {
    /// The bucket's start.
    Timestamp,
    Statistic(Statistic),
    /// Values in the bucket (also when `count` was not asked for).
    Count,
    /// Values in the bucket over the values its length holds at the series' interval.
    Coverage,
}

impl BucketColumn {
    pub fn name(self) -> String {
        match self {
            Self::Timestamp => "timestamp".into(),
            Self::Statistic(s) => s.to_string(),
            Self::Count => "count".into(),
            Self::Coverage => "coverage".into(),
        }
    }

    /// Every column of an answer to `spec`, in order: `timestamp`, the statistics as asked,
    /// `count` (unless asked), `coverage`.
    pub fn all(spec: &AggregateSpec) -> Vec<Self> {
        let mut out = vec![Self::Timestamp];
        for s in &spec.statistics {
            out.push(if *s == Statistic::Count {
                Self::Count
            } else {
                Self::Statistic(*s)
            });
        }
        if !out.contains(&Self::Count) {
            out.push(Self::Count);
        }
        out.push(Self::Coverage);
        out
    }

    pub(crate) fn data_type(self, zone: &Zone) -> DataType {
        let time = DataType::Timestamp(TimeUnit::Microsecond, Some(zone.to_string().into()));
        match self {
            Self::Timestamp => time,
            Self::Count => DataType::Int64,
            Self::Coverage => DataType::Float64,
            Self::Statistic(s) => match s.kind() {
                Kind::Time => time,
                Kind::Count => DataType::Int64,
                Kind::Number => DataType::Float64,
            },
        }
    }
}

/// The schema of an aggregate answer: with `ids`, `stationId` and `parameterId` first (many
/// series).
pub(crate) fn aggregate_schema(columns: &[BucketColumn], zone: &Zone, ids: bool) -> SchemaRef {
    let text = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let mut fields = Vec::new();
    if ids {
        fields.push(Field::new(COL_STATION_ID, text.clone(), false));
        fields.push(Field::new(COL_PARAMETER_ID, text, false));
    }
    for c in columns {
        let nullable = !matches!(c, BucketColumn::Timestamp | BucketColumn::Count);
        fields.push(Field::new(c.name(), c.data_type(zone), nullable));
    }
    Arc::new(Schema::new(fields))
}

/// One series to aggregate.
#[derive(Debug, Clone)]
pub struct SeriesToAggregate {
    pub series: Series,
    /// The series' own interval in microseconds (the parameter's `interval`), which coverage
    /// is counted in; `None` when it has none of fixed length (coverage is then null).
    pub step: Option<i64>,
    /// Whether its values are amounts per interval (precipitation): its normals are of daily
    /// or monthly sums, not means.
    pub total: bool,
}

/// An aggregate of one series, as its handler asks for it.
#[derive(Debug, Clone)]
pub struct AggregateQuery {
    pub series: SeriesToAggregate,
    pub window: Window,
    pub spec: AggregateSpec,
    /// Output columns, in order.
    pub columns: Vec<BucketColumn>,
    /// Sort keys (`true`: descending); empty: by time. Nulls go last either way.
    pub sort: Vec<(BucketColumn, bool)>,
    pub offset: u64,
    pub limit: Option<u64>,
}

/// The answer to an [`AggregateQuery`]: every bucket was computed before it is returned, so
/// the total is known.
pub struct AggregatePlan {
    pub total: u64,
    pub schema: SchemaRef,
    pub batch: RecordBatch,
}

/// Many series' aggregates, one series after the other.
#[derive(Debug, Clone)]
pub struct ManyAggregateQuery {
    pub series: Vec<SeriesToAggregate>,
    pub window: Window,
    pub spec: AggregateSpec,
    pub columns: Vec<BucketColumn>,
    pub offset: u64,
    pub limit: Option<u64>,
    /// Whether the answer reports its total (every series is then aggregated twice: once to
    /// count its buckets, once as the answer reaches it, to keep memory at one series).
    pub need_total: bool,
}

pub struct ManyAggregatePlan {
    pub total: Option<u64>,
    pub schema: SchemaRef,
    pub batches: BoxStream<'static, Result<RecordBatch>>,
}

/// A series' buckets, column by column.
pub(crate) struct Buckets {
    pub(crate) starts: Vec<Micros>,
    /// One per statistic, in the order of the spec; `None` below the coverage asked for.
    pub(crate) cells: Vec<Vec<Option<Cell>>>,
    pub(crate) counts: Vec<i64>,
    pub(crate) coverage: Vec<Option<f64>>,
}

impl Buckets {
    fn new(statistics: usize) -> Self {
        Self {
            starts: Vec::new(),
            cells: vec![Vec::new(); statistics],
            counts: Vec::new(),
            coverage: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.starts.len()
    }

    /// `self` with every bucket of `grid` between its first and its last that holds no value
    /// (a series wholly in a gap that long) as an empty one: the rows pandas' `resample` gives
    /// over the same values. `expected` gives a bucket's expected values, as for the others.
    fn with_empty(
        self,
        spec: &AggregateSpec,
        grid: &Grid,
        expected: impl Fn(Bucket) -> Option<f64>,
    ) -> Self {
        let whole = self
            .starts
            .windows(2)
            .all(|w| grid.bucket(w[0]).end >= w[1]);
        if whole {
            return self;
        }
        let mut out = Buckets::new(spec.statistics.len());
        let mut none = Accumulator::new(&[]);
        let mut cells: Vec<_> = self.cells.into_iter().map(Vec::into_iter).collect();
        let rows = self.starts.iter().zip(self.counts).zip(self.coverage);
        let mut next: Option<Bucket> = None;
        for ((&start, count), coverage) in rows {
            while let Some(b) = next.filter(|b| b.start < start) {
                out.push(spec, b.start, &mut none, expected(b));
                next = Some(grid.bucket(b.end));
            }
            out.starts.push(start);
            for (column, from) in out.cells.iter_mut().zip(cells.iter_mut()) {
                column.push(from.next().flatten());
            }
            out.counts.push(count);
            out.coverage.push(coverage);
            next = Some(grid.bucket(grid.bucket(start).end));
        }
        out
    }

    /// Adds the bucket that starts at `start`, whose values are in `acc`; `expected` is the
    /// number of values its length holds. A bucket without values has null statistics (but a
    /// `count` of 0) and coverage 0.
    fn push(
        &mut self,
        spec: &AggregateSpec,
        start: Micros,
        acc: &mut Accumulator,
        expected: Option<f64>,
    ) {
        let coverage = expected.map(|e| if e > 0.0 { acc.count() as f64 / e } else { 1.0 });
        let covered = coverage.is_none_or(|c| c >= spec.min_coverage);
        let empty = acc.count() == 0;
        self.starts.push(start);
        for (cells, s) in self.cells.iter_mut().zip(&spec.statistics) {
            cells.push(match (*s, empty) {
                (Statistic::Count, true) => Some(Cell::Count(0)),
                (_, true) => None,
                _ => covered.then(|| acc.get(*s)),
            });
        }
        self.counts
            .push(i64::try_from(acc.count()).unwrap_or(i64::MAX));
        self.coverage.push(coverage);
        acc.clear();
    }

    /// Row order for `sort` (nulls last, ties in time order).
    fn order(&self, spec: &AggregateSpec, sort: &[(BucketColumn, bool)]) -> Vec<usize> {
        let mut rows: Vec<usize> = (0..self.len()).collect();
        if sort.is_empty() {
            return rows;
        }
        let key = |c: BucketColumn, i: usize| -> Option<f64> {
            match c {
                BucketColumn::Timestamp => Some(self.starts[i] as f64),
                BucketColumn::Count => Some(self.counts[i] as f64),
                BucketColumn::Coverage => self.coverage[i],
                BucketColumn::Statistic(s) => {
                    let k = spec.statistics.iter().position(|x| *x == s)?;
                    self.cells[k][i].map(|c| match c {
                        Cell::Number(v) => v,
                        Cell::Time(t) => t as f64,
                        Cell::Count(n) => n as f64,
                    })
                }
            }
        };
        rows.sort_by(|&a, &b| {
            for &(c, descending) in sort {
                let ord = match (key(c, a), key(c, b)) {
                    (Some(x), Some(y)) if descending => y.total_cmp(&x),
                    (Some(x), Some(y)) => x.total_cmp(&y),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                };
                if ord.is_ne() {
                    return ord;
                }
            }
            std::cmp::Ordering::Equal
        });
        rows
    }

    /// The rows `rows` as output columns (`ids`: the series' ids first).
    fn batch(
        &self,
        spec: &AggregateSpec,
        schema: &SchemaRef,
        columns: &[BucketColumn],
        rows: &[usize],
        ids: Option<&Series>,
    ) -> Result<RecordBatch> {
        let tz: Arc<str> = spec.zone.to_string().into();
        let times = |v: Vec<Option<i64>>| -> ArrayRef {
            Arc::new(TimestampMicrosecondArray::from(v).with_timezone(Arc::clone(&tz)))
        };
        let mut out: Vec<ArrayRef> = Vec::new();
        if let Some((station, parameter)) = ids {
            out.push(constant(station.as_ref(), rows.len())?);
            out.push(constant(parameter.as_ref(), rows.len())?);
        }
        for c in columns {
            out.push(match c {
                BucketColumn::Timestamp => {
                    times(rows.iter().map(|&i| Some(self.starts[i])).collect())
                }
                BucketColumn::Count => Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|&i| self.counts[i]),
                )),
                BucketColumn::Coverage => Arc::new(Float64Array::from_iter(
                    rows.iter().map(|&i| self.coverage[i]),
                )),
                BucketColumn::Statistic(s) => {
                    let k = spec.statistics.iter().position(|x| x == s).ok_or_else(|| {
                        EngineError::InvalidQuery(format!(
                            "{s} is not one of the statistics asked for"
                        ))
                    })?;
                    let cells = &self.cells[k];
                    match s.kind() {
                        Kind::Time => times(
                            rows.iter()
                                .map(|&i| match cells[i] {
                                    Some(Cell::Time(t)) => Some(t),
                                    _ => None,
                                })
                                .collect(),
                        ),
                        Kind::Count => Arc::new(Int64Array::from_iter(rows.iter().map(|&i| {
                            match cells[i] {
                                Some(Cell::Count(n)) => Some(n),
                                _ => None,
                            }
                        }))),
                        Kind::Number => Arc::new(Float64Array::from_iter(rows.iter().map(|&i| {
                            match cells[i] {
                                Some(Cell::Number(v)) => Some(v),
                                _ => None,
                            }
                        }))),
                    }
                }
            });
        }
        Ok(RecordBatch::try_new(Arc::clone(schema), out)?)
    }
}

/// A dictionary column of one value.
pub(crate) fn constant(text: &str, rows: usize) -> Result<ArrayRef> {
    let keys = Int32Array::from(vec![0; rows]);
    let values: ArrayRef = Arc::new(StringArray::from(vec![text]));
    Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
        keys, values,
    )?))
}

/// `offset`/`limit` over `n` rows.
fn page(n: usize, offset: u64, limit: Option<u64>) -> std::ops::Range<usize> {
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(n);
    let end = limit.map_or(n, |l| {
        start
            .saturating_add(usize::try_from(l).unwrap_or(usize::MAX))
            .min(n)
    });
    start..end
}

impl Dataset {
    /// Aggregates one series. A request error fails here, before the caller answers.
    pub async fn aggregate(&self, q: &AggregateQuery) -> Result<AggregatePlan> {
        let buckets = self.buckets(&q.series, q.window, &q.spec).await?;
        let schema = aggregate_schema(&q.columns, &q.spec.zone, false);
        let order = buckets.order(&q.spec, &q.sort);
        let rows = &order[page(order.len(), q.offset, q.limit)];
        let batch = buckets.batch(&q.spec, &schema, &q.columns, rows, None)?;
        Ok(AggregatePlan {
            total: buckets.len() as u64,
            schema,
            batch,
        })
    }

    /// Aggregates many series, each as the answer reaches it.
    pub async fn aggregate_many(
        self: &Arc<Self>,
        q: ManyAggregateQuery,
    ) -> Result<ManyAggregatePlan> {
        let schema = aggregate_schema(&q.columns, &q.spec.zone, true);
        // Each series' part of the page: (series, offset, limit).
        let mut pages = Vec::new();
        let total = if q.need_total || q.offset > 0 || q.limit.is_some() {
            let (mut total, mut skip, mut left) = (0u64, q.offset, q.limit);
            for s in &q.series {
                let n = self.buckets(s, q.window, &q.spec).await?.len() as u64;
                total += n;
                if left == Some(0) || skip >= n {
                    skip -= skip.min(n);
                    continue;
                }
                let take = left.map(|l| l.min(n - skip));
                pages.push((s.clone(), skip, take));
                left = left.zip(take).map(|(l, t)| l - t);
                skip = 0;
            }
            Some(total)
        } else {
            pages = q.series.iter().map(|s| (s.clone(), 0, None)).collect();
            None
        };
        let dataset = Arc::clone(self);
        let out = Arc::clone(&schema);
        let (window, spec, columns) = (q.window, Arc::new(q.spec), Arc::new(q.columns));
        let batches = futures::stream::iter(pages)
            .then(move |(s, offset, limit)| {
                let (dataset, out, spec, columns) = (
                    Arc::clone(&dataset),
                    Arc::clone(&out),
                    Arc::clone(&spec),
                    Arc::clone(&columns),
                );
                async move {
                    let buckets = dataset.buckets(&s, window, &spec).await?;
                    let all: Vec<usize> = (0..buckets.len()).collect();
                    let rows = &all[page(all.len(), offset, limit)];
                    buckets.batch(&spec, &out, &columns, rows, Some(&s.series))
                }
            })
            .filter(|b| std::future::ready(!matches!(b, Ok(b) if b.num_rows() == 0)))
            .boxed();
        Ok(ManyAggregatePlan {
            total,
            schema,
            batches,
        })
    }

    /// The buckets of a series in the window, in time order.
    pub(crate) async fn buckets(
        &self,
        s: &SeriesToAggregate,
        window: Window,
        spec: &AggregateSpec,
    ) -> Result<Buckets> {
        let grid = spec.interval.map(|interval| Grid {
            interval,
            zone: spec.zone,
            year_start: spec.year_start,
        });
        let mut out = Buckets::new(spec.statistics.len());
        let expected = |b: Bucket| s.step.map(|step| (b.end - b.start) as f64 / step as f64);
        // With an interval, `recent=N` is the last N buckets: the window starts at the first.
        let window = match (window, grid) {
            (Window::Recent(n), Some(grid)) => {
                let newest = self.latest(std::slice::from_ref(&s.series)).await?;
                let Some(newest) = newest.first().and_then(|l| l.as_ref()).map(|l| l.timestamp)
                else {
                    return Ok(out);
                };
                if n == 0 {
                    return Ok(out);
                }
                let first = grid.back(grid.bucket(newest), n - 1);
                Window::Between {
                    from: Some(first.start),
                    to: None,
                }
            }
            (w, _) => w,
        };
        if let (Some(grid), Window::Between { from, to }) = (grid, window)
            && let Some(parts) = self.rollups.get(&s.series.0)
            && rolled::serves(spec, &grid, self.manifest.rollup_zone())
        {
            let window = (from.unwrap_or(Micros::MIN), to.unwrap_or(Micros::MAX));
            let rolled = self.rolled_buckets(s, window, spec, grid, parts).await?;
            return Ok(rolled.with_empty(spec, &grid, expected));
        }
        let query = ValuesQuery {
            station: s.series.0.clone(),
            parameter: s.series.1.clone(),
            window,
            sort: Vec::new(),
            offset: 0,
            limit: None,
            columns: vec![ValueColumn::Timestamp, ValueColumn::Value],
            need_total: false,
            qualities: spec.qualities.clone(),
        };
        let mut stream = self.plan_values(&query, ReadAhead::Monthly).await?.stream;
        let mut acc = Accumulator::new(&spec.statistics);
        let mut current: Option<Bucket> = None;
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            let times = batch.column(0).as_primitive::<TimestampMicrosecondType>();
            let values = batch.column(1).as_primitive::<Float64Type>();
            for i in 0..batch.num_rows() {
                if values.is_null(i) {
                    continue;
                }
                let t = times.value(i);
                if let Some(grid) = &grid
                    && !current.is_some_and(|b| b.contains(t))
                {
                    if let Some(b) = current.filter(|_| acc.count() > 0) {
                        out.push(spec, b.start, &mut acc, expected(b));
                    }
                    current = Some(grid.bucket(t));
                }
                acc.push(t, values.value(i));
            }
        }
        if acc.count() == 0 {
            return Ok(out);
        }
        match (current, grid) {
            (Some(b), Some(grid)) => {
                out.push(spec, b.start, &mut acc, expected(b));
                out = out.with_empty(spec, &grid, expected);
            }
            _ => {
                // One bucket over the window: its length is the window's, where the window is
                // open, the span of the values.
                let (first, last) = acc.span();
                let (from, to) = match window {
                    Window::Between { from, to } => (from.unwrap_or(first), to.unwrap_or(last)),
                    Window::Last(d) => {
                        let end = DateTime::from_timestamp_micros(last)
                            .ok_or_else(|| EngineError::corrupt("timestamp out of range"))?;
                        // The window excludes its start: its first value is a step later.
                        let start = d.before(end).map_or(first, |t| t.timestamp_micros());
                        (start + s.step.unwrap_or(0), last)
                    }
                    Window::Recent(_) => (first, last),
                };
                let expected = s.step.map(|step| ((to - from).max(0) / step + 1) as f64);
                out.push(spec, from, &mut acc, expected);
            }
        }
        Ok(out)
    }
}
