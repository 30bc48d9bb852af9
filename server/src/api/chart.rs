//! `format=svg` and `format=png` on the values endpoints: the query of a chart, planned here
//! and drawn by `render::chart::answer`. A chart shows the answer's rows (the window, or the
//! page of it asked for) in time order whatever `sort` says (its time axis orders them), with
//! every column (quality marks the line).

use crate::api::Ctx;
use crate::api::context::fault;
use crate::api::request::StatisticsRequest;
use crate::http::error::ApiError;
use crate::render::chart::answer::ChartFormat;
use crate::render::chart::curve::{Curve, CurveSpec};
use crate::render::chart::{self, Band, ChartSpec, Level, answer};
use crate::render::format::{Encoder, Format};
use crate::render::reply::{Reply, built};
use chrono::Datelike;
use datafusion::arrow::array::{
    ArrayRef, AsArray, Float64Array, RecordBatch, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::{sort_to_indices, take_record_batch};
use datafusion::arrow::datatypes::{Float64Type, Int64Type, TimestampMicrosecondType};
use datafusion::arrow::error::ArrowError;
use futures::TryStreamExt;
use http::HeaderMap;
use hydro_engine::Interval;
use hydro_engine::Series;
use hydro_engine::Statistic;
use hydro_engine::StatisticKind;
use hydro_engine::Zone;
use hydro_engine::{
    AggregatePlan, AggregateQuery, BucketColumn, ManyAggregateQuery, SeriesToAggregate,
};
use hydro_engine::{ManyQuery, ReadAhead, ValueColumn, ValuesQuery, Window};
use hydro_engine::{Parameter, Station};
use hydro_engine::{StatisticsQuery, StatisticsType};
use std::sync::Arc;

/// What draws `format`, a chart format.
fn drawing(format: Format) -> Result<&'static dyn ChartFormat, ApiError> {
    match format.encoder() {
        Encoder::Chart(chart) => Ok(chart),
        _ => Err(ApiError::Internal(format!(
            "{} is not a chart format",
            format.short()
        ))),
    }
}

/// A chart drawn in `format`, as the reply.
fn chart_reply(bytes: Vec<u8>, format: Format) -> Reply {
    built(bytes, format, HeaderMap::new())
}

pub async fn values_chart(
    ctx: &Ctx<'_>,
    (station, parameter): (&Station, &Parameter),
    mut query: ValuesQuery,
    (zone, size): (Zone, (u32, u32)),
    format: Format,
) -> Result<Reply, ApiError> {
    query.sort.clear();
    query.columns = ValueColumn::ALL.to_vec();
    let _permit = ctx.heavy_permit()?;
    let plan = ctx
        .version
        .dataset
        .plan_values(&query, ReadAhead::Grouped)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let (from, to) = bounds(query.window);
    let catalog = &ctx.version.dataset.catalog;
    let levels = catalog
        .characteristics(&station.id)
        .iter()
        .filter(|c| c.parameter == parameter.id)
        .map(|c| Level {
            label: format!("{} {} {}", c.name, c.value, c.unit),
            value: c.value,
        })
        .collect();
    let spec = ChartSpec {
        levels,
        ..chart_spec(
            zone,
            format!("{}: {}", station.name, parameter.name),
            format!("{} ({})", parameter.name, parameter.unit),
            size,
            (from, to),
        )
    };
    answer::series(plan, parameter, &spec, drawing(format)?)
        .await
        .map(|bytes| chart_reply(bytes, format))
        .map_err(|e| fault(ctx.state, e))
}

/// `format=svg` and `format=png` of an aggregate of one series (`aggregate=mean,min,max`): a
/// line a numeric statistic over the buckets, in time order whatever `sort` said.
pub async fn aggregate_chart(
    ctx: &Ctx<'_>,
    (station, parameter): (&Station, &Parameter),
    query: &AggregateQuery,
    plan: AggregatePlan,
    size: (u32, u32),
    format: Format,
) -> Result<Reply, ApiError> {
    // A chart runs in time: buckets sorted by a statistic (`sort=-max&limit=10`) are drawn
    // where they lie.
    let batch = in_time_order(plan.batch).map_err(|e| fault(ctx.state, e.into()))?;
    let (from, to) = bounds(query.window);
    let every = query
        .spec
        .interval
        .map(|i| i.to_string())
        .unwrap_or_default();
    let spec = chart_spec(
        query.spec.zone,
        format!("{}: {} {every}", station.name, parameter.name),
        format!("{} ({})", parameter.name, parameter.unit),
        size,
        (from, to),
    );
    let numeric: Vec<String> = numeric_statistics(&query.columns);
    let lines: Vec<(String, &RecordBatch, &str)> = numeric
        .iter()
        .map(|name| (name.clone(), &batch, name.as_str()))
        .collect();
    let length = query.spec.interval.map(|i| i.shortest());
    answer::buckets(&lines, length, &spec, drawing(format)?)
        .map(|bytes| chart_reply(bytes, format))
        .map_err(|e| fault(ctx.state, e))
}

/// `columns` with the buckets' times, which a chart draws the statistics over whatever
/// `fields` chose.
pub(crate) fn with_time(columns: &mut Vec<BucketColumn>) {
    if !columns.contains(&BucketColumn::Timestamp) {
        columns.insert(0, BucketColumn::Timestamp);
    }
}

/// A time chart's spec: its times in `zone` (the request's `timeZone`, else the output
/// zone), over `from`/`to` where the request gave them, with no levels and no band.
fn chart_spec(
    zone: Zone,
    title: String,
    quantity: String,
    size: (u32, u32),
    (from, to): (Option<i64>, Option<i64>),
) -> ChartSpec {
    ChartSpec {
        title,
        quantity,
        size,
        zone,
        from,
        to,
        levels: Vec::new(),
        band: None,
    }
}

/// `batch` sorted by its `timestamp` column (as it is without one).
fn in_time_order(batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
    let Some(times) = batch.column_by_name("timestamp") else {
        return Ok(batch);
    };
    let order = sort_to_indices(times, None, None)?;
    take_record_batch(&batch, &order)
}

/// The statistics a chart can draw: those that are numbers.
fn numeric_statistics(columns: &[BucketColumn]) -> Vec<String> {
    columns
        .iter()
        .filter(|c| matches!(c, BucketColumn::Statistic(s) if s.kind() == StatisticKind::Number))
        .map(|c| c.name())
        .collect()
}

/// `format=svg` and `format=png` of many series' aggregates: a line a series (at most
/// [`chart::MOST_LINES`]), of the first numeric statistic asked for.
pub async fn many_aggregate_chart(
    ctx: &Ctx<'_>,
    mut query: ManyAggregateQuery,
    size: (u32, u32),
    format: Format,
) -> Result<Reply, ApiError> {
    let series: Vec<Series> = query.series.iter().map(|s| s.series.clone()).collect();
    let zone = query.spec.zone;
    let lines = labelled(ctx, &series)?;
    let Some(statistic) = numeric_statistics(&query.columns).into_iter().next() else {
        return Err(ApiError::param(
            "aggregate",
            "a chart draws a statistic that is a number (mean, min, max, sum, first, last, \
             median, p1 … p99); ask for one, or for the aggregates as data",
        ));
    };
    (query.offset, query.limit, query.need_total) = (0, None, false);
    with_time(&mut query.columns);
    let window = query.window;
    let every = query
        .spec
        .interval
        .map(|i| i.to_string())
        .unwrap_or_default();
    let length = query.spec.interval.map(|i| i.shortest());
    let _permit = ctx.heavy_permit()?;
    let plan = ctx
        .version
        .dataset
        .aggregate_many(query)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let batches: Vec<RecordBatch> = plan
        .batches
        .try_collect()
        .await
        .map_err(|e| fault(ctx.state, e))?;
    // Each batch is one series' buckets, in the order of the selection.
    let mut drawn: Vec<(String, &RecordBatch, &str)> = Vec::new();
    let mut at = 0;
    for batch in &batches {
        let ids = answer::series_of(batch).map_err(|e| fault(ctx.state, e))?;
        while at < lines.len() && (lines[at].0.0.as_str(), lines[at].0.1.as_str()) != ids {
            at += 1;
        }
        let Some((_, label, _)) = lines.get(at) else {
            return Err(ApiError::Internal(
                "chart: buckets of a series not asked for".into(),
            ));
        };
        drawn.push((label.clone(), batch, statistic.as_str()));
    }
    let (name, unit) = common_name_and_unit(&lines);
    let (from, to) = bounds(window);
    let spec = chart_spec(
        zone,
        format!("{name} {statistic} {every}: {} series", lines.len()),
        format!("{name} ({unit})"),
        size,
        (from, to),
    );
    answer::buckets(&drawn, length, &spec, drawing(format)?)
        .map(|bytes| chart_reply(bytes, format))
        .map_err(|e| fault(ctx.state, e))
}

/// `format=svg` and `format=png` on `/v1/values`: a line a series (at most
/// [`chart::MOST_LINES`]).
pub async fn many_chart(
    ctx: &Ctx<'_>,
    series: Vec<Series>,
    (window, zone): (Window, Zone),
    qualities: Option<Arc<[String]>>,
    size: (u32, u32),
    format: Format,
) -> Result<Reply, ApiError> {
    let lines = labelled(ctx, &series)?;
    let query = ManyQuery {
        series,
        window,
        columns: ValueColumn::ALL.to_vec(),
        offset: 0,
        limit: None,
        need_total: false,
        stored: false,
        qualities,
    };
    let _permit = ctx.heavy_permit()?;
    let plan = ctx
        .version
        .dataset
        .plan_many(query, ReadAhead::Grouped)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let (from, to) = bounds(window);
    let (name, unit) = common_name_and_unit(&lines);
    let spec = chart_spec(
        zone,
        format!("{name}: {} series", lines.len()),
        format!("{name} ({unit})"),
        size,
        (from, to),
    );
    answer::many(plan, &lines, &spec, drawing(format)?)
        .await
        .map(|bytes| chart_reply(bytes, format))
        .map_err(|e| fault(ctx.state, e))
}

/// The selected series with their lines' labels and parameters; a 400 when there are more
/// than a chart draws.
fn labelled<'a>(
    ctx: &'a Ctx<'_>,
    series: &[Series],
) -> Result<Vec<(Series, String, &'a Parameter)>, ApiError> {
    if series.len() > chart::MOST_LINES {
        return Err(ApiError::param(
            "parameters",
            format!(
                "a chart draws at most {} series and this request selects {}; narrow it with \
                 station filters or fewer parameters",
                chart::MOST_LINES,
                series.len()
            ),
        ));
    }
    let catalog = &ctx.version.dataset.catalog;
    let mut lines = Vec::with_capacity(series.len());
    for (sid, pid) in series {
        let (Some(s), Some(p)) = (catalog.station(sid), catalog.parameter(sid, pid)) else {
            return Err(ApiError::Internal("a selected series vanished".into()));
        };
        let label = format!("{}: {}", s.name, p.name);
        lines.push(((sid.clone(), pid.clone()), label, p));
    }
    Ok(lines)
}

/// The parameters' common name and unit, or words that say they differ.
fn common_name_and_unit(lines: &[(Series, String, &Parameter)]) -> (String, String) {
    let parameters: Vec<&Parameter> = lines.iter().map(|(_, _, p)| *p).collect();
    let same = |f: fn(&Parameter) -> &str| parameters.windows(2).all(|w| f(w[0]) == f(w[1]));
    let first = parameters.first();
    let unit = first
        .filter(|_| same(|p| &p.unit))
        .map_or("mixed units".to_owned(), |p| p.unit.to_string());
    let name = first
        .filter(|_| same(|p| &p.name))
        .map_or("value".to_owned(), |p| p.name.to_string());
    (name, unit)
}

/// The window's ends where the request gave them: the chart's time axis spans them even where
/// there are no values.
fn bounds(window: Window) -> (Option<i64>, Option<i64>) {
    match window {
        Window::Between { from, to } => (from, to),
        _ => (None, None),
    }
}

/// Days (months) of a normals chart: the series' newest, drawn over the band of the normals.
const RECENT_DAYS: u64 = 30;
const RECENT_MONTHS: u64 = 12;

/// `format=svg` and `format=png` of statistics: a duration curve (a line a series), the
/// annual minimum, mean and maximum over the years (one series; many: each series' maxima),
/// or normals as the series' newest 30 daily (12 monthly) means over the band of the normals'
/// 10th to 90th percentile, with their mean (one series).
pub async fn statistics_chart(
    ctx: &Ctx<'_>,
    series: Vec<SeriesToAggregate>,
    request: StatisticsRequest,
    size: (u32, u32),
    format: Format,
) -> Result<Reply, ApiError> {
    let ids: Vec<Series> = series.iter().map(|s| s.series.clone()).collect();
    let lines = labelled(ctx, &ids)?;
    let (name, unit) = common_name_and_unit(&lines);
    let one = match lines.as_slice() {
        [(_, _, p)] => Some(*p),
        _ => None,
    };
    let title = match one {
        Some(p) => ctx
            .version
            .dataset
            .catalog
            .station(&p.station)
            .map_or_else(|| p.name.to_string(), |s| format!("{}: {}", s.name, p.name)),
        None => format!("{name}: {} series", lines.len()),
    };
    let quantity = format!("{name} ({unit})");
    let (kind, zone) = (request.spec.kind, request.spec.zone);
    let _permit = ctx.heavy_permit()?;
    match kind {
        StatisticsType::Duration => {
            let batches = statistics_rows(ctx, series, request).await?;
            let mut curves = Vec::new();
            for ((_, label, _), batch) in lines.iter().zip(&batches) {
                let column = |name: &str| {
                    batch
                        .column_by_name(name)
                        .and_then(|c| c.as_primitive_opt::<Float64Type>())
                        .ok_or_else(|| ApiError::Internal(format!("duration rows without {name}")))
                };
                let (p, v) = (column("exceedance")?, column("value")?);
                curves.push(Curve {
                    label: label.clone(),
                    points: p
                        .values()
                        .iter()
                        .copied()
                        .zip(v.values().iter().copied())
                        .collect(),
                });
            }
            let spec = CurveSpec {
                title: format!("{title}: duration curve"),
                quantity,
                size,
            };
            answer::curves(&curves, &spec, drawing(format)?)
                .map(|bytes| chart_reply(bytes, format))
                .map_err(|e| fault(ctx.state, e))
        }
        StatisticsType::Annual => {
            let (from, to) = bounds(request.window);
            let batches = statistics_rows(ctx, series, request).await?;
            let drawn: Vec<(String, &RecordBatch, &str)> = match one {
                Some(_) => ["min", "mean", "max"]
                    .iter()
                    .filter_map(|c| Some(((*c).to_owned(), batches.first()?, *c)))
                    .collect(),
                None => lines
                    .iter()
                    .zip(&batches)
                    .map(|((_, label, _), b)| (label.clone(), b, "max"))
                    .collect(),
            };
            let title = format!("{title}: annual values");
            let spec = chart_spec(zone, title, quantity, size, (from, to));
            let year = Interval::Months(12).shortest();
            answer::buckets(&drawn, Some(year), &spec, drawing(format)?)
                .map(|bytes| chart_reply(bytes, format))
                .map_err(|e| fault(ctx.state, e))
        }
        StatisticsType::DayOfYear | StatisticsType::MonthOfYear => {
            let Ok([series]) = <[SeriesToAggregate; 1]>::try_from(series) else {
                return Err(ApiError::param(
                    "format",
                    "a chart of normals shows one series over its normals' band; ask for one \
                     series, or for the normals as data",
                ));
            };
            normals_chart(ctx, series, request, (title, quantity), size, format).await
        }
    }
}

/// The statistics' rows, a batch a series, in the order of `series` (series without rows
/// have an empty batch).
async fn statistics_rows(
    ctx: &Ctx<'_>,
    series: Vec<SeriesToAggregate>,
    request: StatisticsRequest,
) -> Result<Vec<RecordBatch>, ApiError> {
    let mut out = Vec::with_capacity(series.len());
    for s in series {
        let query = StatisticsQuery {
            series: vec![s],
            window: request.window,
            spec: request.spec.clone(),
            ids: false,
        };
        let plan = ctx
            .version
            .dataset
            .statistics(query)
            .map_err(|e| fault(ctx.state, e))?;
        let schema = Arc::clone(&plan.schema);
        let batches: Vec<RecordBatch> = plan
            .batches
            .try_collect()
            .await
            .map_err(|e| fault(ctx.state, e))?;
        out.push(
            datafusion::arrow::compute::concat_batches(&schema, &batches)
                .map_err(|e| fault(ctx.state, e.into()))?,
        );
    }
    Ok(out)
}

/// The newest 30 daily (12 monthly) means over the band of the normals of their days
/// (months): their 10th to 90th percentile over the reference period, and their mean.
async fn normals_chart(
    ctx: &Ctx<'_>,
    series: SeriesToAggregate,
    request: StatisticsRequest,
    (title, quantity): (String, String),
    size: (u32, u32),
    format: Format,
) -> Result<Reply, ApiError> {
    let spec = &request.spec;
    let day = spec.kind == StatisticsType::DayOfYear;
    let means = spec.means(series.total);
    let recent = AggregateQuery {
        series: series.clone(),
        window: Window::Recent(if day { RECENT_DAYS } else { RECENT_MONTHS }),
        columns: vec![
            BucketColumn::Timestamp,
            BucketColumn::Statistic(means.statistics[0]),
        ],
        spec: means,
        sort: Vec::new(),
        offset: 0,
        limit: None,
    };
    let recent = ctx
        .version
        .dataset
        .aggregate(&recent)
        .await
        .map_err(|e| fault(ctx.state, e))?
        .batch;
    let mut band_request = request.clone();
    band_request.spec.statistics = vec![
        Statistic::Percentile(10),
        Statistic::Mean,
        Statistic::Percentile(90),
    ];
    let normals = statistics_rows(ctx, vec![series], band_request).await?;
    let normals = normals
        .first()
        .ok_or_else(|| ApiError::Internal("no normals".into()))?;
    let bad = || ApiError::Internal("normals chart: unexpected columns".into());
    let int = |name: &str| {
        normals
            .column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
    };
    let number = |name: &str| {
        normals
            .column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<Float64Type>())
    };
    let months = int("month").ok_or_else(bad)?;
    let days = if day {
        Some(int("day").ok_or_else(bad)?)
    } else {
        None
    };
    let (p10, mean, p90) = (
        number("p10").ok_or_else(bad)?,
        number("mean").ok_or_else(bad)?,
        number("p90").ok_or_else(bad)?,
    );
    // Each normal's row by its calendar day (month).
    let mut by_key = std::collections::HashMap::new();
    for i in 0..normals.num_rows() {
        let key = (months.value(i), days.map_or(1, |d| d.value(i)));
        by_key.insert(key, (p10.value(i), mean.value(i), p90.value(i)));
    }
    let times = recent
        .column(0)
        .as_primitive_opt::<TimestampMicrosecondType>()
        .ok_or_else(bad)?;
    let mut band = Vec::new();
    let mut normal = Vec::with_capacity(times.len());
    for t in times.values().iter().copied() {
        let date = spec.zone.local_date(t);
        let key = (
            i64::from(date.month()),
            if day { i64::from(date.day()) } else { 1 },
        );
        let found = by_key.get(&key);
        if let Some((lo, _, hi)) = found {
            band.push((t, *lo, *hi));
        }
        normal.push(found.map(|n| n.1));
    }
    let tz: Arc<str> = spec.zone.to_string().into();
    let drawn = RecordBatch::try_from_iter([
        (
            "timestamp",
            Arc::new(TimestampMicrosecondArray::from(times.values().to_vec()).with_timezone(tz))
                as ArrayRef,
        ),
        ("mean", Arc::clone(recent.column(1))),
        ("normal", Arc::new(Float64Array::from(normal)) as ArrayRef),
    ])
    .map_err(|e| fault(ctx.state, e.into()))?;
    let every = if day { "daily" } else { "monthly" };
    let title = format!("{title}: newest {every} means and normals");
    let chart = ChartSpec {
        band: Some(Band {
            label: "normal, 10th to 90th percentile".into(),
            points: band,
        }),
        ..chart_spec(spec.zone, title, quantity, size, (None, None))
    };
    let lines = [
        (format!("{every} mean"), &drawn, "mean"),
        ("normal (mean)".to_owned(), &drawn, "normal"),
    ];
    let length = if day {
        Interval::Day
    } else {
        Interval::Months(1)
    }
    .shortest();
    answer::buckets(&lines, Some(length), &chart, drawing(format)?)
        .map(|bytes| chart_reply(bytes, format))
        .map_err(|e| fault(ctx.state, e))
}
