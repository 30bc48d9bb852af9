//! `format=svg` and `format=png` on the values endpoints: a chart of the answer's rows (the
//! window, or the page of it asked for), in time order whatever `sort` says (a chart's time
//! axis orders them). The rows are read as for any other format and reduced as they arrive
//! (`render::chart::downsample`), so a 10-year chart holds a few thousand points, never the
//! series.

use crate::api::{Ctx, Reply, built, fault};
use crate::http::error::ApiError;
use crate::http::negotiate::Format;
use crate::render::chart::downsample::Downsampler;
use crate::render::chart::{self, ChartSpec, Level, Line};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int32Type, TimestampMicrosecondType};
use futures::StreamExt;
use http::HeaderMap;
use hydro_engine::EngineError;
use hydro_engine::model::duration::IsoDuration;
use hydro_engine::model::{Parameter, Station};
use hydro_engine::query::many::Series;
use hydro_engine::query::{AnswerPart, ManyQuery, ReadAhead, ValueColumn, ValuesQuery, Window};

/// A step this many times the parameter's interval breaks the chart's line.
const GAP_INTERVALS: i64 = 3;

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
    let mut plan = ctx
        .version
        .dataset
        .plan_values(&query, ReadAhead::Grouped)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let mut reduced = Downsampler::new(chart::plot_columns(size.0), gap(parameter));
    while let Some(batch) = plan.stream.next().await {
        let batch = batch.map_err(|e| fault(ctx.state, EngineError::from(e)))?;
        push(&mut reduced, &batch, 0).map_err(|e| fault(ctx.state, e))?;
    }
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
    let lines = [Line {
        label: parameter.name.to_string(),
        buckets: reduced.finish(),
    }];
    drawn(&spec, &lines, format)
}

/// The chart in its format, as the reply.
fn drawn(spec: &ChartSpec, lines: &[Line], format: Format) -> Result<Reply, ApiError> {
    let drawn = match format {
        Format::Png => chart::png(spec, lines).map(|png| (png, false)),
        _ => chart::svg(spec, lines).map(|svg| (svg.into_bytes(), true)),
    };
    let (bytes, compressible) = drawn.map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut reply = built(bytes, format, HeaderMap::new());
    // A PNG is compressed already.
    reply.compressible = compressible;
    Ok(reply)
}

/// `format=svg` and `format=png` on `/v1/values`: a line a series (at most
/// [`chart::MOST_LINES`]), each reduced as it arrives, series after series.
pub async fn many_chart(
    ctx: &Ctx<'_>,
    series: Vec<Series>,
    window: Window,
    size: (u32, u32),
    format: Format,
) -> Result<Reply, ApiError> {
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
    let mut reduced = Vec::with_capacity(series.len());
    let mut parameters = Vec::with_capacity(series.len());
    for (sid, pid) in &series {
        let (Some(s), Some(p)) = (catalog.station(sid), catalog.parameter(sid, pid)) else {
            return Err(ApiError::Internal("a selected series vanished".into()));
        };
        lines.push(Line {
            label: format!("{}: {}", s.name, p.name),
            buckets: Vec::new(),
        });
        reduced.push(Downsampler::new(chart::plot_columns(size.0), gap(p)));
        parameters.push(p);
    }
    let query = ManyQuery {
        series: series.clone(),
        window,
        columns: ValueColumn::ALL.to_vec(),
        offset: 0,
        limit: None,
        need_total: false,
        stored: false,
    };
    let _permit = ctx.heavy_permit()?;
    let mut plan = ctx
        .version
        .dataset
        .plan_many(query, ReadAhead::Grouped)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    // Series come in the order asked for, each batch of one series.
    let mut at = 0;
    while let Some(part) = plan.parts.next().await {
        let AnswerPart::Rows(batch) = part.map_err(|e| fault(ctx.state, e))? else {
            return Err(ApiError::Internal("chart: a stored row group".into()));
        };
        let ids = series_of(&batch).map_err(|e| fault(ctx.state, e))?;
        while at < series.len() && (series[at].0.as_str(), series[at].1.as_str()) != ids {
            at += 1;
        }
        let Some(reducer) = reduced.get_mut(at) else {
            return Err(ApiError::Internal(
                "chart: rows of a series not asked for".into(),
            ));
        };
        push(reducer, &batch, 2).map_err(|e| fault(ctx.state, e))?;
    }
    for (line, r) in lines.iter_mut().zip(reduced) {
        line.buckets = r.finish();
    }
    let (from, to) = bounds(window);
    let same = |f: fn(&Parameter) -> &str| parameters.windows(2).all(|w| f(w[0]) == f(w[1]));
    let first = parameters.first();
    let unit = first
        .filter(|_| same(|p| &p.unit))
        .map_or("mixed units".to_owned(), |p| p.unit.to_string());
    let name = first
        .filter(|_| same(|p| &p.name))
        .map_or("value".to_owned(), |p| p.name.to_string());
    let spec = ChartSpec {
        title: format!("{name}: {} series", series.len()),
        quantity: format!("{name} ({unit})"),
        size,
        offset: ctx.state.offset,
        from,
        to,
        levels: Vec::new(),
    };
    drawn(&spec, &lines, format)
}

/// The window's ends where the request gave them: the chart's time axis spans them even where
/// there are no values.
fn bounds(window: Window) -> (Option<i64>, Option<i64>) {
    match window {
        Window::Between { from, to } => (from, to),
        _ => (None, None),
    }
}

/// A break in the line at a step of [`GAP_INTERVALS`] of the parameter's interval.
fn gap(parameter: &Parameter) -> i64 {
    parameter
        .interval
        .parse::<IsoDuration>()
        .ok()
        .filter(|d| d.months == 0 && d.micros > 0)
        .map_or(i64::MAX, |d| d.micros.saturating_mul(GAP_INTERVALS))
}

/// The station and parameter ids of a many-series batch (one series a batch).
fn series_of(batch: &RecordBatch) -> Result<(&str, &str), EngineError> {
    let id = |i: usize| {
        let texts = batch
            .columns()
            .get(i)
            .and_then(|c| c.as_dictionary_opt::<Int32Type>())
            .and_then(|d| d.values().as_string_opt::<i32>())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| EngineError::Internal("chart: no series ids".into()))?;
        Ok::<_, EngineError>(texts.value(0))
    };
    Ok((id(0)?, id(1)?))
}

/// A batch's rows (timestamp, value, quality: columns `first`, `first + 1`, `first + 2`)
/// into the chart's buckets.
fn push(reduced: &mut Downsampler, batch: &RecordBatch, first: usize) -> Result<(), EngineError> {
    let column = |i: usize| {
        batch
            .columns()
            .get(first + i)
            .ok_or_else(|| EngineError::Internal("chart: a column is missing".into()))
    };
    let bad = || EngineError::Internal("chart: unexpected column type".into());
    let times = column(0)?
        .as_primitive_opt::<TimestampMicrosecondType>()
        .ok_or_else(bad)?;
    let values = column(1)?
        .as_primitive_opt::<Float64Type>()
        .ok_or_else(bad)?;
    let quality = column(2)?
        .as_dictionary_opt::<Int32Type>()
        .ok_or_else(bad)?;
    let texts = quality.values().as_string_opt::<i32>().ok_or_else(bad)?;
    let good: Vec<bool> = (0..texts.len()).map(|i| texts.value(i) == "good").collect();
    for i in 0..batch.num_rows() {
        let value = values.is_valid(i).then(|| values.value(i));
        let key = quality.keys().value(i) as usize;
        let flagged = quality.is_valid(i) && !good.get(key).copied().unwrap_or(true);
        reduced.push(times.value(i), value, flagged);
    }
    Ok(())
}
