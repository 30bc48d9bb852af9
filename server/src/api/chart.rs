//! `format=svg` and `format=png` on the values endpoint: a chart of the answer's rows (the window, or the page
//! of it asked for), in time order whatever `sort` says (a chart's time axis orders them). The rows are read as for any other format and reduced as
//! they arrive (`render::chart::downsample`), so a 10-year chart holds a few thousand points,
//! never the series.

use crate::api::{Ctx, Reply, built, fault};
use crate::http::error::ApiError;
use crate::http::negotiate::Format;
use crate::render::chart::downsample::Downsampler;
use crate::render::chart::{self, ChartSpec, Level};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int32Type, TimestampMicrosecondType};
use futures::StreamExt;
use http::HeaderMap;
use hydro_engine::EngineError;
use hydro_engine::model::duration::IsoDuration;
use hydro_engine::model::{Parameter, Station};
use hydro_engine::query::{ReadAhead, ValueColumn, ValuesQuery, Window};

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
    query.columns = vec![
        ValueColumn::Timestamp,
        ValueColumn::Value,
        ValueColumn::Quality,
    ];
    let gap = parameter
        .interval
        .parse::<IsoDuration>()
        .ok()
        .filter(|d| d.months == 0 && d.micros > 0)
        .map_or(i64::MAX, |d| d.micros.saturating_mul(GAP_INTERVALS));
    let _permit = ctx.heavy_permit()?;
    let mut plan = ctx
        .version
        .dataset
        .plan_values(&query, ReadAhead::Grouped)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let mut reduced = Downsampler::new(chart::plot_columns(size.0), gap);
    while let Some(batch) = plan.stream.next().await {
        let batch = batch.map_err(|e| fault(ctx.state, EngineError::from(e)))?;
        push(&mut reduced, &batch).map_err(|e| fault(ctx.state, e))?;
    }
    let (from, to) = match query.window {
        Window::Between { from, to } => (from, to),
        _ => (None, None),
    };
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
    let buckets = reduced.finish();
    let drawn = match format {
        Format::Png => chart::png(&spec, &buckets).map(|png| (png, false)),
        _ => chart::svg(&spec, &buckets).map(|svg| (svg.into_bytes(), true)),
    };
    let (bytes, compressible) = drawn.map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut reply = built(bytes, format, HeaderMap::new());
    // A PNG is compressed already.
    reply.compressible = compressible;
    Ok(reply)
}

/// A batch's rows (timestamp, value, quality) into the chart's buckets.
fn push(reduced: &mut Downsampler, batch: &RecordBatch) -> Result<(), EngineError> {
    let column = |i: usize| {
        batch
            .columns()
            .get(i)
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
