//! `format=svg` and `format=png` on the values endpoints: the query of a chart, planned here
//! and drawn by `render::chart::answer`. A chart shows the answer's rows (the window, or the
//! page of it asked for) in time order whatever `sort` says (its time axis orders them), with
//! every column (quality marks the line).

use crate::api::Ctx;
use crate::api::context::fault;
use crate::api::values::with_time;
use crate::http::error::ApiError;
use crate::http::negotiate::Format;
use crate::render::chart::{self, ChartSpec, Level, answer};
use crate::render::reply::Reply;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::{sort_to_indices, take_record_batch};
use datafusion::arrow::error::ArrowError;
use futures::TryStreamExt;
use hydro_engine::model::ids::Series;
use hydro_engine::model::{Parameter, Station};
use hydro_engine::query::aggregate::statistic::Kind;
use hydro_engine::query::aggregate::{
    AggregatePlan, AggregateQuery, BucketColumn, ManyAggregateQuery,
};
use hydro_engine::query::{ManyQuery, ReadAhead, ValueColumn, ValuesQuery, Window};
use std::sync::Arc;

pub async fn values_chart(
    ctx: &Ctx<'_>,
    station: &Station,
    parameter: &Parameter,
    mut query: ValuesQuery,
    size: (u32, u32),
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
        title: format!("{}: {}", station.name, parameter.name),
        quantity: format!("{} ({})", parameter.name, parameter.unit),
        size,
        offset: ctx.state.offset,
        from,
        to,
        levels,
    };
    answer::series(plan, parameter, &spec, format)
        .await
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
    let spec = ChartSpec {
        title: format!("{}: {} {every}", station.name, parameter.name),
        quantity: format!("{} ({})", parameter.name, parameter.unit),
        size,
        offset: ctx.state.offset,
        from,
        to,
        levels: Vec::new(),
    };
    let numeric: Vec<String> = numeric_statistics(&query.columns);
    let lines: Vec<(String, &RecordBatch, &str)> = numeric
        .iter()
        .map(|name| (name.clone(), &batch, name.as_str()))
        .collect();
    let length = query.spec.interval.map(|i| i.shortest());
    answer::buckets(&lines, length, &spec, format).map_err(|e| fault(ctx.state, e))
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
        .filter(|c| matches!(c, BucketColumn::Statistic(s) if s.kind() == Kind::Number))
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
    let spec = ChartSpec {
        title: format!("{name} {statistic} {every}: {} series", lines.len()),
        quantity: format!("{name} ({unit})"),
        size,
        offset: ctx.state.offset,
        from,
        to,
        levels: Vec::new(),
    };
    answer::buckets(&drawn, length, &spec, format).map_err(|e| fault(ctx.state, e))
}

/// `format=svg` and `format=png` on `/v1/values`: a line a series (at most
/// [`chart::MOST_LINES`]).
pub async fn many_chart(
    ctx: &Ctx<'_>,
    series: Vec<Series>,
    window: Window,
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
    let spec = ChartSpec {
        title: format!("{name}: {} series", lines.len()),
        quantity: format!("{name} ({unit})"),
        size,
        offset: ctx.state.offset,
        from,
        to,
        levels: Vec::new(),
    };
    answer::many(plan, &lines, &spec, format)
        .await
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
