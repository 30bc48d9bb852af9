//! Statistics of a series over a reference period (`…/statistics`, `/v1/statistics`):
//! - **`dayOfYear`** and **`monthOfYear`** (normals): each calendar day's (month's) means in
//!   the zone, one per year, summarised across the years by the statistics asked for; a row
//!   per calendar day (Jan 1 first, Feb 29 included) or month that has a mean, with `years`,
//!   how many means it summarises;
//! - **`annual`**: each (hydrological) year's extremes with their times, mean, count and
//!   coverage, and the year's name (the calendar year it ends in);
//! - **`duration`**: the flow-duration curve: for each exceedance probability, the value
//!   exceeded that share of the time, over the raw values or the means of buckets
//!   (`interval=P1D`: daily means).
//!
//! Normals of a series of amounts (precipitation) are of daily or monthly sums: the monthly
//! normals of rain are of each month's total.
//!
//! Normals and annual values come from the aggregator's buckets ([`crate::query::aggregate`]):
//! daily or monthly means and years, so `minCoverage` drops the thin days, months or years as
//! it nulls their statistics there. A duration curve ranks every value of the period: memory is
//! one series' values (a 20-year 15-minute series is 700 000 numbers, 5.6 MB), as a percentile
//! of one bucket holds that bucket's. Many series are computed a few at a time, in order, as the
//! answer reaches them.

use crate::dataset::Dataset;
use crate::error::{EngineError, Result};
use crate::model::Micros;
use crate::model::ids::Series;
use crate::model::zone::Zone;
use crate::query::aggregate::calendar::Interval;
use crate::query::aggregate::statistic::{Accumulator, Cell, Kind, Statistic};
use crate::query::aggregate::{AggregateSpec, BucketColumn, Buckets, SeriesToAggregate, constant};
use crate::query::many_series::{COL_PARAMETER_ID, COL_STATION_ID};
use crate::query::spec::{ReadAhead, ValueColumn, ValuesQuery, Window};
use chrono::{Datelike, NaiveDate};
use datafusion::arrow::array::{
    ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Schema, SchemaRef, TimeUnit};
use futures::StreamExt;
use futures::stream::BoxStream;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// What statistics are asked for (`type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatisticsType {
    DayOfYear,
    MonthOfYear,
    Annual,
    Duration,
}

/// What `type` takes, as a 400 lists it.
pub const STATISTICS_TYPES: &str = "dayOfYear, monthOfYear, annual, duration";

impl FromStr for StatisticsType {
    type Err = ();
    fn from_str(s: &str) -> std::result::Result<Self, ()> {
        Ok(match s {
            "dayOfYear" => Self::DayOfYear,
            "monthOfYear" => Self::MonthOfYear,
            "annual" => Self::Annual,
            "duration" => Self::Duration,
            _ => return Err(()),
        })
    }
}

impl fmt::Display for StatisticsType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::DayOfYear => "dayOfYear",
            Self::MonthOfYear => "monthOfYear",
            Self::Annual => "annual",
            Self::Duration => "duration",
        })
    }
}

/// Series whose statistics are computed at once.
const SERIES_AT_ONCE: usize = 4;

/// The exceedance probabilities of a duration curve when none are asked for.
pub const DEFAULT_EXCEEDANCE: [f64; 13] = [
    0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99,
];

/// The statistics of an `annual` row after `timestamp` and `year`, in order; `count` and
/// `coverage` follow them. `sum` is a year's total (precipitation), null where coverage is
/// below `minCoverage` like the others.
const ANNUAL: [Statistic; 6] = [
    Statistic::Min,
    Statistic::MinTime,
    Statistic::Max,
    Statistic::MaxTime,
    Statistic::Mean,
    Statistic::Sum,
];

/// How a series is summarised.
#[derive(Debug, Clone, PartialEq)]
pub struct StatisticsSpec {
    pub kind: StatisticsType,
    /// Of the normals across years (`dayOfYear`, `monthOfYear`), as asked; at least one.
    pub statistics: Vec<Statistic>,
    /// The calendar of days, months and years, and the offset of output times.
    pub zone: Zone,
    /// The month years start in (`annual`).
    pub year_start: u32,
    /// Days, months or years with less coverage count for nothing (normals) or have null
    /// statistics (`annual`).
    pub min_coverage: f64,
    /// Only values of these qualities count.
    pub qualities: Option<Arc<[String]>>,
    /// Exceedance probabilities (`duration`), each in 0..=1.
    pub exceedance: Vec<f64>,
    /// The buckets whose means a duration curve ranks (`interval=P1D`: daily means); None:
    /// the raw values.
    pub duration_of: Option<Interval>,
}

impl StatisticsSpec {
    /// The daily (`dayOfYear`) or monthly means whose normals are asked for; sums for a
    /// series of amounts (`total`: the normals of monthly precipitation are of monthly sums).
    pub fn means(&self, total: bool) -> AggregateSpec {
        let interval = match self.kind {
            StatisticsType::DayOfYear => Interval::Day,
            _ => Interval::Months(1),
        };
        let statistic = if total {
            Statistic::Sum
        } else {
            Statistic::Mean
        };
        AggregateSpec {
            statistics: vec![statistic],
            interval: Some(interval),
            zone: self.zone,
            year_start: 1,
            min_coverage: self.min_coverage,
            qualities: self.qualities.clone(),
        }
    }
}

/// Statistics of one or many series over a reference period.
#[derive(Debug, Clone)]
pub struct StatisticsQuery {
    pub series: Vec<SeriesToAggregate>,
    /// The reference period.
    pub window: Window,
    pub spec: StatisticsSpec,
    /// Whether rows start with `stationId` and `parameterId` (many series).
    pub ids: bool,
}

pub struct StatisticsPlan {
    pub schema: SchemaRef,
    /// A batch a series, in the order asked; series without values give none.
    pub batches: BoxStream<'static, Result<RecordBatch>>,
}

/// The columns of an answer, with their types.
pub(crate) fn statistics_columns(spec: &StatisticsSpec) -> Vec<(String, DataType)> {
    let int = || DataType::Int64;
    let time = DataType::Timestamp(TimeUnit::Microsecond, Some(spec.zone.to_string().into()));
    let stat = |s: Statistic| {
        (
            s.to_string(),
            BucketColumn::Statistic(s).data_type(&spec.zone),
        )
    };
    match spec.kind {
        StatisticsType::DayOfYear | StatisticsType::MonthOfYear => {
            let mut out = vec![("month".to_owned(), int())];
            if spec.kind == StatisticsType::DayOfYear {
                out.push(("day".to_owned(), int()));
            }
            out.extend(spec.statistics.iter().map(|s| stat(*s)));
            out.push(("years".to_owned(), int()));
            out
        }
        StatisticsType::Annual => {
            let mut out = vec![("timestamp".to_owned(), time), ("year".to_owned(), int())];
            out.extend(ANNUAL.iter().map(|s| stat(*s)));
            out.push(("count".to_owned(), int()));
            out.push(("coverage".to_owned(), DataType::Float64));
            out
        }
        StatisticsType::Duration => vec![
            ("exceedance".to_owned(), DataType::Float64),
            ("value".to_owned(), DataType::Float64),
        ],
    }
}

fn statistics_schema(spec: &StatisticsSpec, ids: bool) -> SchemaRef {
    let text = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let mut fields = Vec::new();
    if ids {
        fields.push(Field::new(COL_STATION_ID, text.clone(), false));
        fields.push(Field::new(COL_PARAMETER_ID, text, false));
    }
    for (name, data_type) in statistics_columns(spec) {
        let keys = [
            "month",
            "day",
            "years",
            "timestamp",
            "year",
            "count",
            "exceedance",
        ];
        fields.push(Field::new(&name, data_type, !keys.contains(&name.as_str())));
    }
    Arc::new(Schema::new(fields))
}

/// A column of cells of one kind.
fn cells(kind: Kind, tz: &Arc<str>, cells: impl Iterator<Item = Option<Cell>>) -> ArrayRef {
    match kind {
        Kind::Time => Arc::new(
            TimestampMicrosecondArray::from_iter(cells.map(|c| match c {
                Some(Cell::Time(t)) => Some(t),
                _ => None,
            }))
            .with_timezone(Arc::clone(tz)),
        ),
        Kind::Count => Arc::new(Int64Array::from_iter(cells.map(|c| match c {
            Some(Cell::Count(n)) => Some(n),
            _ => None,
        }))),
        Kind::Number => Arc::new(Float64Array::from_iter(cells.map(|c| match c {
            Some(Cell::Number(v)) => Some(v),
            _ => None,
        }))),
    }
}

impl Dataset {
    /// Plans the statistics of `q`'s series; each is computed as the answer reaches it.
    pub fn statistics(self: &Arc<Self>, q: StatisticsQuery) -> Result<StatisticsPlan> {
        if !matches!(q.window, Window::Between { .. }) {
            return Err(EngineError::InvalidQuery(
                "the reference period is from/to".into(),
            ));
        }
        let schema = statistics_schema(&q.spec, q.ids);
        let dataset = Arc::clone(self);
        let out = Arc::clone(&schema);
        let (window, spec, ids) = (q.window, Arc::new(q.spec), q.ids);
        let batches = futures::stream::iter(q.series)
            .map(move |s| {
                let (dataset, out, spec) =
                    (Arc::clone(&dataset), Arc::clone(&out), Arc::clone(&spec));
                async move {
                    dataset
                        .series_statistics(&s, window, &spec, &out, ids)
                        .await
                }
            })
            // A few series at once, in order: reads of one overlap another's work (a series'
            // answer is a few hundred rows at most, but a duration curve holds its values).
            .buffered(SERIES_AT_ONCE)
            .filter(|b| std::future::ready(!matches!(b, Ok(b) if b.num_rows() == 0)))
            .boxed();
        Ok(StatisticsPlan { schema, batches })
    }

    async fn series_statistics(
        &self,
        s: &SeriesToAggregate,
        window: Window,
        spec: &StatisticsSpec,
        schema: &SchemaRef,
        ids: bool,
    ) -> Result<RecordBatch> {
        let mut columns = match spec.kind {
            StatisticsType::DayOfYear | StatisticsType::MonthOfYear => {
                self.normals(s, window, spec).await?
            }
            StatisticsType::Annual => self.annual(s, window, spec).await?,
            StatisticsType::Duration => self.duration(s, window, spec).await?,
        };
        let rows = columns.first().map_or(0, |c| c.len());
        if ids {
            let (station, parameter) = &s.series;
            columns.insert(0, constant(parameter.as_ref(), rows)?);
            columns.insert(0, constant(station.as_ref(), rows)?);
        }
        Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
    }

    /// Daily or monthly means, then each calendar day's (month's) across the years.
    async fn normals(
        &self,
        s: &SeriesToAggregate,
        window: Window,
        spec: &StatisticsSpec,
    ) -> Result<Vec<ArrayRef>> {
        let day = spec.kind == StatisticsType::DayOfYear;
        let buckets = self.buckets(s, window, &spec.means(s.total)).await?;
        // Calendar days as days of a leap year (Feb 29 is day 59), or months.
        let slots = if day { 366 } else { 12 };
        let mut across: Vec<Accumulator> = (0..slots)
            .map(|_| Accumulator::new(&spec.statistics))
            .collect();
        for (i, &start) in buckets.starts.iter().enumerate() {
            let Some(Cell::Number(mean)) = buckets.cells[0][i] else {
                continue;
            };
            let date = spec.zone.local_date(start);
            let slot = if day {
                NaiveDate::from_ymd_opt(2000, date.month(), date.day())
                    .map_or(0, |d| d.ordinal0() as usize)
            } else {
                date.month0() as usize
            };
            across[slot].push(start, mean);
        }
        let kept: Vec<usize> = (0..slots).filter(|&k| across[k].count() > 0).collect();
        let date_of = |k: usize| NaiveDate::from_yo_opt(2000, k as u32 + 1).unwrap_or_default();
        let mut columns: Vec<ArrayRef> = Vec::new();
        if day {
            columns.push(Arc::new(Int64Array::from_iter_values(
                kept.iter().map(|&k| i64::from(date_of(k).month())),
            )));
            columns.push(Arc::new(Int64Array::from_iter_values(
                kept.iter().map(|&k| i64::from(date_of(k).day())),
            )));
        } else {
            columns.push(Arc::new(Int64Array::from_iter_values(
                kept.iter().map(|&k| k as i64 + 1),
            )));
        }
        let tz: Arc<str> = spec.zone.to_string().into();
        for st in &spec.statistics {
            let values: Vec<Option<Cell>> =
                kept.iter().map(|&k| Some(across[k].get(*st))).collect();
            columns.push(cells(st.kind(), &tz, values.into_iter()));
        }
        columns.push(Arc::new(Int64Array::from_iter_values(
            kept.iter().map(|&k| across[k].count() as i64),
        )));
        Ok(columns)
    }

    /// A row per (hydrological) year with values.
    async fn annual(
        &self,
        s: &SeriesToAggregate,
        window: Window,
        spec: &StatisticsSpec,
    ) -> Result<Vec<ArrayRef>> {
        let years = AggregateSpec {
            statistics: ANNUAL.to_vec(),
            interval: Some(Interval::Months(12)),
            zone: spec.zone,
            year_start: spec.year_start,
            min_coverage: spec.min_coverage,
            qualities: spec.qualities.clone(),
        };
        let Buckets {
            starts,
            cells: statistics,
            counts,
            coverage,
        } = self.buckets(s, window, &years).await?;
        let tz: Arc<str> = spec.zone.to_string().into();
        // A year is named after the calendar year it ends in.
        let later = i32::from(spec.year_start != 1);
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(
                TimestampMicrosecondArray::from(starts.clone()).with_timezone(Arc::clone(&tz)),
            ),
            Arc::new(Int64Array::from_iter_values(starts.iter().map(
                |&t: &Micros| i64::from(spec.zone.local_date(t).year() + later),
            ))),
        ];
        for (st, column) in ANNUAL.iter().zip(statistics) {
            columns.push(cells(st.kind(), &tz, column.into_iter()));
        }
        // The year's count whatever its coverage: `minCoverage` nulls the statistics only.
        columns.push(Arc::new(Int64Array::from(counts)));
        columns.push(Arc::new(Float64Array::from(coverage)));
        Ok(columns)
    }

    /// The flow-duration curve over the raw values of the period, or over the means of its
    /// buckets of `spec.duration_of` (daily means: what German and USGS practice ranks).
    async fn duration(
        &self,
        s: &SeriesToAggregate,
        window: Window,
        spec: &StatisticsSpec,
    ) -> Result<Vec<ArrayRef>> {
        let mut all = Accumulator::new(&[Statistic::Median]);
        match spec.duration_of {
            Some(interval) => {
                let means = AggregateSpec {
                    statistics: vec![Statistic::Mean],
                    interval: Some(interval),
                    zone: spec.zone,
                    year_start: 1,
                    min_coverage: spec.min_coverage,
                    qualities: spec.qualities.clone(),
                };
                let buckets = self.buckets(s, window, &means).await?;
                for cell in &buckets.cells[0] {
                    if let Some(Cell::Number(mean)) = cell {
                        all.push(0, *mean);
                    }
                }
            }
            None => self.push_values(&s.series, window, spec, &mut all).await?,
        }
        if all.count() == 0 {
            let empty = || Arc::new(Float64Array::from(Vec::<f64>::new())) as ArrayRef;
            return Ok(vec![empty(), empty()]);
        }
        let values: Vec<f64> = spec
            .exceedance
            .iter()
            .map(|p| all.quantile(1.0 - p))
            .collect();
        Ok(vec![
            Arc::new(Float64Array::from(spec.exceedance.clone())),
            Arc::new(Float64Array::from(values)),
        ])
    }

    /// Every value of the series in the window into `all`.
    async fn push_values(
        &self,
        series: &Series,
        window: Window,
        spec: &StatisticsSpec,
        all: &mut Accumulator,
    ) -> Result<()> {
        let query = ValuesQuery {
            station: series.0.clone(),
            parameter: series.1.clone(),
            window,
            sort: Vec::new(),
            offset: 0,
            limit: None,
            columns: vec![ValueColumn::Value],
            need_total: false,
            qualities: spec.qualities.clone(),
        };
        let mut stream = self.plan_values(&query, ReadAhead::Monthly).await?.stream;
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            for v in batch
                .column(0)
                .as_primitive::<Float64Type>()
                .iter()
                .flatten()
            {
                all.push(0, v);
            }
        }
        Ok(())
    }
}
