//! `GET /v1/stations/{id}/parameters/{parameterId}/values`: the request becomes an engine
//! query, planned before the status line; the answer streams through the format's encoder
//! (see `render::values`).

use crate::api::changes::{Changes, changes};
use crate::api::context::fault;
use crate::api::request::{Aggregate, Paging, ValuesRequest};
use crate::api::rows::{Planned, send_rows};
use crate::api::{Ctx, chart};
use crate::http::error::ApiError;
use crate::render::envelope::Pagination;
use crate::render::format::{Answer, Format};
use crate::render::html::pages;
use crate::render::reply::Reply;
use crate::render::timefmt::TimeFormatter;
use crate::versions::AsOf;
use futures::StreamExt;
use hydro_engine::EngineError;
use hydro_engine::IsoDuration;
use hydro_engine::ParameterId;
use hydro_engine::Zone;
use hydro_engine::observed_property;
use hydro_engine::{AggregateQuery, AggregateSpec, SeriesToAggregate};
use hydro_engine::{AnswerPart, ReadAhead, ValueColumn, ValuesQuery};
use hydro_engine::{Parameter, Station};

/// The values of one series, in the mode the request asks for: the rows changed since a
/// version, buckets, a page for people, a chart, or the rows themselves.
pub async fn values(ctx: &Ctx<'_>, id: &str, pid: &str) -> Result<Reply, ApiError> {
    ctx.admit::<ValuesRequest>()?;
    let station = ctx.station(id)?;
    let pid = ctx.parameter_id(station, pid)?;
    let mut request = ctx.parse::<ValuesRequest>()?;
    if let Some(base) = request.changed_since.take() {
        return changed_since(ctx, station, pid, &base, request).await;
    }
    let parameter = || {
        ctx.version
            .dataset
            .catalog
            .parameter(&station.id, &pid)
            .ok_or_else(|| ApiError::Internal("parameter vanished".into()))
    };
    if let Some(aggregate) = request.aggregate.take() {
        return aggregates(ctx, (station, parameter()?), aggregate, request).await;
    }
    let query = ValuesQuery {
        station: station.id.clone(),
        parameter: pid.clone(),
        window: request.window,
        sort: std::mem::take(&mut request.sort),
        offset: request.paging.offset,
        limit: request.paging.limit,
        columns: request.columns.clone(),
        need_total: request.paging.given,
        qualities: request.qualities.take(),
    };
    let (format, zone, size) = (request.format, request.zone, request.size);
    if format == Format::HTML {
        return values_page(ctx, (station, parameter()?), query, (zone, size)).await;
    }
    if format.is_chart() {
        let series = (station, parameter()?);
        return chart::values_chart(ctx, series, query, (zone, size), format).await;
    }
    rows(ctx, station, query, request).await
}

/// The rows of the window changed since version `base` (`changedSince`).
async fn changed_since(
    ctx: &Ctx<'_>,
    station: &Station,
    pid: ParameterId,
    base: &AsOf,
    request: ValuesRequest,
) -> Result<Reply, ApiError> {
    let file_name = format!("{}_{pid}_changes", station.id);
    let asked = Changes {
        base,
        series: vec![(station.id.clone(), pid)],
        window: request.window,
        columns: request.columns,
        format: request.format,
        zone: request.zone,
        station: Some(&station.id),
        file_name,
    };
    changes(ctx, asked).await
}

/// The rows themselves, planned before the status line and streamed through the format's
/// encoder.
async fn rows(
    ctx: &Ctx<'_>,
    station: &Station,
    query: ValuesQuery,
    request: ValuesRequest,
) -> Result<Reply, ApiError> {
    let format = request.format;
    let permit = ctx.heavy_permit()?;
    let dataset = &ctx.version.dataset;
    let (total, schema, parts) = if format.takes_stored_row_groups() {
        // Parquet answers copy stored row groups as they are (see hydro_engine::query).
        let plan = dataset
            .plan_parts(&query)
            .await
            .map_err(|e| fault(ctx.state, e))?;
        (plan.total, plan.schema, plan.parts)
    } else {
        let plan = dataset
            .plan_values(&query, format.read_ahead())
            .await
            .map_err(|e| fault(ctx.state, e))?;
        let parts = plan
            .stream
            .map(|b| b.map(AnswerPart::Rows).map_err(EngineError::from))
            .boxed();
        (plan.total, plan.schema, parts)
    };
    let Paging {
        limit,
        offset,
        given,
    } = request.paging;
    let planned = Planned {
        format,
        schema,
        columns: request
            .columns
            .iter()
            .map(|c| c.name().to_owned())
            .collect(),
        meta_schema: "values",
        zone: request.zone,
        page: given
            .then_some(total)
            .flatten()
            .map(|total| Pagination::new(total, limit, offset)),
        file_name: format!("{}_{}", station.id, query.parameter),
        station: Some(&station.id),
        alternate: None,
    };
    send_rows(ctx, permit, planned, parts).await
}

/// The values as a page for people: the chart of the window (an image of the SVG answer) and a
/// table of a page of its values (200 when no `limit` is given, 10 000 at most).
async fn values_page(
    ctx: &Ctx<'_>,
    series: (&Station, &Parameter),
    mut query: ValuesQuery,
    (zone, size): (Zone, (u32, u32)),
) -> Result<Reply, ApiError> {
    let limit = query
        .limit
        .unwrap_or(pages::PAGE_ROWS)
        .min(pages::MOST_ROWS);
    query.limit = Some(limit);
    query.need_total = true;
    query.columns = ValueColumn::ALL.to_vec();
    let _permit = ctx.heavy_permit()?;
    let plan = ctx
        .version
        .dataset
        .plan_values(&query, ReadAhead::Monthly)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let offered = Format::offered(Answer::Values);
    let page = (limit, query.offset);
    pages::values(&ctx.site_in(zone), series, plan, page, size, &offered)
        .await
        .map_err(|e| fault(ctx.state, e))
}

/// The series of `parameter` as an aggregate reads it: with its interval, which coverage is
/// counted in.
pub(crate) fn series_of(parameter: &Parameter) -> SeriesToAggregate {
    let step = parameter
        .interval
        .parse::<IsoDuration>()
        .ok()
        .filter(|d| d.months == 0 && d.micros > 0)
        .map(|d| d.micros);
    SeriesToAggregate {
        series: (parameter.station.clone(), parameter.id.clone()),
        step,
        total: observed_property(&parameter.observed_property).is_some_and(|p| p.total),
    }
}

/// [`series_of`] for `spec`, whose buckets may not be finer than the series' interval.
pub(crate) fn series_to_aggregate(
    parameter: &Parameter,
    spec: &AggregateSpec,
) -> Result<SeriesToAggregate, ApiError> {
    let series = series_of(parameter);
    if let (Some(step), Some(interval)) = (series.step, spec.interval)
        && interval.nominal() < step
    {
        return Err(ApiError::param(
            "interval",
            format!(
                "{interval} is finer than the interval of {} ({}); give {} or longer",
                parameter.id, parameter.interval, parameter.interval
            ),
        ));
    }
    Ok(series)
}

/// An aggregate of one series: its buckets computed before the status line (they are few:
/// a century of days is 36 500), then sent in the chosen format.
async fn aggregates(
    ctx: &Ctx<'_>,
    (station, parameter): (&Station, &Parameter),
    aggregate: Aggregate,
    request: ValuesRequest,
) -> Result<Reply, ApiError> {
    let (format, size, paging) = (request.format, request.size, request.paging.given);
    let mut query = AggregateQuery {
        series: series_to_aggregate(parameter, &aggregate.spec)?,
        window: request.window,
        spec: aggregate.spec,
        columns: aggregate.columns,
        sort: aggregate.sort,
        offset: request.paging.offset,
        limit: request.paging.limit,
    };
    if format.is_chart() {
        chart::with_time(&mut query.columns);
    }
    if format == Format::HTML {
        query.limit = Some(
            query
                .limit
                .unwrap_or(pages::PAGE_ROWS)
                .min(pages::MOST_ROWS),
        );
    }
    let permit = ctx.heavy_permit()?;
    let plan = ctx
        .version
        .dataset
        .aggregate(&query)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let zone = query.spec.zone;
    let columns: Vec<String> = query.columns.iter().map(|c| c.name()).collect();
    if format == Format::HTML {
        let page = Pagination::new(plan.total, query.limit, query.offset);
        let offered = Format::offered(Answer::Values);
        let time = TimeFormatter::zoned(zone);
        let series = (station, parameter);
        return pages::table(
            &ctx.site_in(zone),
            series,
            pages::TableOf::Aggregates,
            &plan.batch,
            &columns,
            &page,
            time,
            size,
            &offered,
        )
        .map_err(|e| fault(ctx.state, e));
    }
    if format.is_chart() {
        drop(permit);
        return chart::aggregate_chart(ctx, (station, parameter), &query, plan, size, format).await;
    }
    let planned = Planned {
        format,
        schema: plan.schema,
        columns,
        meta_schema: "aggregates",
        zone,
        page: paging.then(|| Pagination::new(plan.total, query.limit, query.offset)),
        file_name: format!("{}_{}", station.id, parameter.id),
        station: Some(&station.id),
        alternate: None,
    };
    let parts = futures::stream::iter([Ok(AnswerPart::Rows(plan.batch))]).boxed();
    send_rows(ctx, permit, planned, parts).await
}
