//! A chart answer (`format=svg`, `png`) made of a planned query: its rows reduced as they
//! arrive ([`downsample`](super::downsample)), so that a 10-year chart holds a few thousand
//! points, never the series, then drawn. The handler plans; this reads the plan and draws.

use crate::render::chart::curve::{Curve, CurveSpec};
use crate::render::chart::downsample::Downsampler;
use crate::render::chart::{self, ChartError, ChartSpec, Line};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int32Type, TimestampMicrosecondType};
use futures::StreamExt;
use hydro_engine::EngineError;
use hydro_engine::IsoDuration;
use hydro_engine::Parameter;
use hydro_engine::Series;
use hydro_engine::{AnswerPart, ManyPlan, ValuesPlan};

/// A format charts are drawn in (SVG, PNG; each `render::format`'s): lines of values or
/// statistics, and duration curves.
pub trait ChartFormat: Sync {
    fn lines(&self, spec: &ChartSpec, lines: &[Line]) -> Result<Vec<u8>, ChartError>;
    fn curves(&self, spec: &CurveSpec, curves: &[Curve]) -> Result<Vec<u8>, ChartError>;
}

/// Whether `parameter`'s values are drawn as bars: amounts per interval (precipitation), which
/// a line between them would show as a level that never was.
fn as_bars(parameter: &Parameter) -> bool {
    hydro_engine::observed_property(&parameter.observed_property).is_some_and(|p| p.total)
}

/// A step this many times the parameter's interval breaks the chart's line.
const GAP_INTERVALS: i64 = 3;

/// The chart of one series' planned rows, its line labelled `label`.
pub async fn series(
    mut plan: ValuesPlan,
    parameter: &Parameter,
    spec: &ChartSpec,
    format: &dyn ChartFormat,
) -> Result<Vec<u8>, EngineError> {
    let mut reduced = Downsampler::new(chart::plot_columns(spec.size.0), gap(parameter));
    while let Some(batch) = plan.stream.next().await {
        push(&mut reduced, &batch?, 0)?;
    }
    let lines = [Line {
        label: parameter.name.to_string(),
        buckets: reduced.finish(),
        bars: as_bars(parameter),
    }];
    drawn(spec, &lines, format)
}

/// The chart of many series' planned rows (`series` in the order the plan gives them, each
/// with its line's label and parameter), a line each.
pub async fn many(
    mut plan: ManyPlan,
    series: &[(Series, String, &Parameter)],
    spec: &ChartSpec,
    format: &dyn ChartFormat,
) -> Result<Vec<u8>, EngineError> {
    let mut reduced: Vec<Downsampler> = series
        .iter()
        .map(|(_, _, p)| Downsampler::new(chart::plot_columns(spec.size.0), gap(p)))
        .collect();
    // Series come in the order asked for, each batch of one series.
    let mut at = 0;
    while let Some(part) = plan.parts.next().await {
        let AnswerPart::Rows(batch) = part? else {
            return Err(EngineError::Internal("chart: a stored row group".into()));
        };
        let ids = series_of(&batch)?;
        while at < series.len() && (series[at].0.0.as_str(), series[at].0.1.as_str()) != ids {
            at += 1;
        }
        let reducer = reduced
            .get_mut(at)
            .ok_or_else(|| EngineError::Internal("chart: rows of a series not asked for".into()))?;
        push(reducer, &batch, 2)?;
    }
    let lines: Vec<Line> = series
        .iter()
        .zip(reduced)
        .map(|((_, label, parameter), r)| Line {
            label: label.clone(),
            buckets: r.finish(),
            bars: as_bars(parameter),
        })
        .collect();
    drawn(spec, &lines, format)
}

/// The chart of aggregates: a line for each `(label, buckets, column)`, the buckets of one
/// series in time order and the numeric statistic drawn. A bucket is drawn at its start; the
/// line breaks where buckets are missing or below the coverage asked for (`interval`: the
/// shortest bucket length).
pub fn buckets(
    lines: &[(String, &RecordBatch, &str)],
    interval: Option<i64>,
    spec: &ChartSpec,
    format: &dyn ChartFormat,
) -> Result<Vec<u8>, EngineError> {
    let bad = || EngineError::Internal("chart: unexpected column type".into());
    let gap = interval.map_or(i64::MAX, |i| i.saturating_mul(GAP_INTERVALS / 2 + 1));
    let mut drawn_lines = Vec::with_capacity(lines.len());
    for (label, batch, column) in lines {
        let times = batch
            .column_by_name("timestamp")
            .and_then(|c| c.as_primitive_opt::<TimestampMicrosecondType>())
            .ok_or_else(bad)?;
        let values = batch
            .column_by_name(column)
            .and_then(|c| c.as_primitive_opt::<Float64Type>())
            .ok_or_else(bad)?;
        let mut reduced = Downsampler::new(chart::plot_columns(spec.size.0), gap);
        for i in 0..batch.num_rows() {
            reduced.push(
                times.value(i),
                values.is_valid(i).then(|| values.value(i)),
                false,
            );
        }
        drawn_lines.push(Line {
            label: label.clone(),
            buckets: reduced.finish(),
            bars: false,
        });
    }
    drawn(spec, &drawn_lines, format)
}

/// A duration-curve chart in its format.
pub fn curves(
    curves: &[Curve],
    spec: &CurveSpec,
    format: &dyn ChartFormat,
) -> Result<Vec<u8>, EngineError> {
    format
        .curves(spec, curves)
        .map_err(|e| EngineError::Internal(e.to_string()))
}

/// The chart in its format.
fn drawn(
    spec: &ChartSpec,
    lines: &[Line],
    format: &dyn ChartFormat,
) -> Result<Vec<u8>, EngineError> {
    format
        .lines(spec, lines)
        .map_err(|e| EngineError::Internal(e.to_string()))
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
pub fn series_of(batch: &RecordBatch) -> Result<(&str, &str), EngineError> {
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
