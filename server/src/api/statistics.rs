//! `GET /v1/stations/{id}/parameters/{parameterId}/statistics` and `GET /v1/statistics`
//! (the series `/v1/values` selects): normals by day or month of the year, annual extremes,
//! duration curves over a reference period (the engine's `query::statistics`). Answers are
//! tables in the data formats, sent as values answers are, or charts (`api::chart`).

use crate::api::context::fault;
use crate::api::many_series::select;
use crate::api::request::{ManyStatisticsRequest, StatisticsRequest};
use crate::api::rows::{Planned, send_rows};
use crate::api::swapped::{Alternate, swapped_coordinates};
use crate::api::values::series_of;
use crate::api::{Ctx, chart};
use crate::http::error::ApiError;
use crate::render::envelope::Pagination;
use crate::render::format::Answer;
use crate::render::format::Format;
use crate::render::html::pages::{self, TableOf};
use crate::render::reply::Reply;
use crate::render::timefmt::TimeFormatter;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use futures::StreamExt;
use futures::TryStreamExt;
use hydro_engine::AnswerPart;
use hydro_engine::SeriesToAggregate;
use hydro_engine::StatisticsQuery;
use hydro_engine::{Parameter, Station};

pub async fn statistics(ctx: &Ctx<'_>, id: &str, pid: &str) -> Result<Reply, ApiError> {
    ctx.admit::<StatisticsRequest>()?;
    let s = ctx.station(id)?;
    let pid = ctx.parameter_id(s, pid)?;
    let request: StatisticsRequest = ctx.request()?;
    let parameter = ctx.version.dataset.catalog.parameter(&s.id, &pid);
    let parameter = parameter.ok_or_else(|| ApiError::Internal("parameter vanished".into()))?;
    let file_name = format!("{}_{pid}_{}", s.id, request.spec.kind);
    answer(
        ctx,
        vec![series_of(parameter)],
        request,
        Some((s, parameter)),
        file_name,
        None,
    )
    .await
}

pub async fn many_statistics(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let ManyStatisticsRequest {
        selection,
        statistics: request,
    } = ctx.request()?;
    let catalog = &ctx.version.dataset.catalog;
    let alternate = swapped_coordinates(ctx, &selection.filter);
    let series = select(ctx, &selection)?
        .iter()
        .map(|(sid, pid)| {
            catalog
                .parameter(sid, pid)
                .map(series_of)
                .ok_or_else(|| ApiError::Internal("a selected series vanished".into()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let file_name = format!("statistics_{}", request.spec.kind);
    answer(ctx, series, request, None, file_name, alternate).await
}

/// The statistics of `series`: with `one` (its station and parameter) those of one series,
/// else rows with ids; `alternate` is the selection with `near` or `bbox` swapped, when they
/// were most likely typed lat,lon.
async fn answer(
    ctx: &Ctx<'_>,
    series: Vec<SeriesToAggregate>,
    request: StatisticsRequest,
    one: Option<(&Station, &Parameter)>,
    file_name: String,
    alternate: Option<Alternate>,
) -> Result<Reply, ApiError> {
    if request.format.is_chart() {
        let (size, format) = (request.size, request.format);
        return chart::statistics_chart(ctx, series, request, size, format).await;
    }
    let permit = ctx.heavy_permit()?;
    let StatisticsRequest {
        window,
        spec,
        format,
        size,
    } = request;
    let station = one.map(|(s, _)| &s.id);
    let zone = spec.zone;
    let query = StatisticsQuery {
        series,
        window,
        spec,
        ids: station.is_none(),
    };
    let plan = ctx
        .version
        .dataset
        .statistics(query)
        .map_err(|e| fault(ctx.state, e))?;
    let columns: Vec<String> = plan
        .schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    if format == Format::HTML {
        let Some(one) = one else {
            return Err(ApiError::param(
                "format",
                "a page shows the statistics of one series: ask for one, or for a data format",
            ));
        };
        let batches: Vec<RecordBatch> = plan
            .batches
            .try_collect()
            .await
            .map_err(|e| fault(ctx.state, e))?;
        let batch =
            concat_batches(&plan.schema, &batches).map_err(|e| fault(ctx.state, e.into()))?;
        let page = Pagination::new(batch.num_rows() as u64, None, 0);
        let offered = Format::offered(Answer::Statistics);
        let time = TimeFormatter::zoned(zone);
        return pages::table(
            &ctx.site_in(zone),
            one,
            TableOf::Statistics,
            &batch,
            &columns,
            &page,
            time,
            size,
            &offered,
        )
        .map_err(|e| fault(ctx.state, e));
    }
    let planned = Planned {
        format,
        schema: plan.schema,
        columns,
        meta_schema: match station {
            Some(_) => "statistics",
            None => "seriesStatistics",
        },
        zone,
        page: None,
        file_name,
        station,
        alternate,
    };
    let parts = plan.batches.map(|b| b.map(AnswerPart::Rows)).boxed();
    send_rows(ctx, permit, planned, parts).await
}
