//! `GET /v1/values`: the values of many series in one streamed answer. The series are those
//! of the stations the station filters select (`stations`, `states`, `types`, `waterBodyIds`,
//! `bbox`, `near`) whose parameters match `parameters` and `observedProperties` (at least one
//! of them given, so that an answer is never the whole archive by accident); each series'
//! window is the single-series endpoint's (`from`/`to`, `recent`, `last`). Rows are
//! `stationId, parameterId, timestamp, value, quality`, by station id, parameter id, time.
//!
//! The engine plans one series at a time as the answer reaches it (the engine's `query::many_series`),
//! so memory does not grow with the number of series and the first bytes go out at once.

use crate::api::changes::{Changes, changes};
use crate::api::context::fault;
use crate::api::params::shorten;
use crate::api::request::{ManyValuesRequest, Paging, SeriesSelection};
use crate::api::rows::{Planned, send_rows};
use crate::api::swapped::{Alternate, swapped_coordinates};
use crate::api::values::series_to_aggregate;
use crate::api::{Ctx, chart};
use crate::http::error::ApiError;
use crate::render::envelope::Pagination;
use crate::render::format::Format;
use crate::render::reply::Reply;
use futures::StreamExt;
use hydro_engine::Catalog;
use hydro_engine::ManyAggregateQuery;
use hydro_engine::Series;
use hydro_engine::Station;
use hydro_engine::{AnswerPart, ManyQuery};

pub async fn many_values(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let request: ManyValuesRequest = ctx.request()?;
    let series = select(ctx, &request.selection)?;
    let alternate = swapped_coordinates(ctx, &request.selection.filter);
    let ManyValuesRequest {
        window,
        columns,
        qualities,
        aggregate,
        zone,
        paging: Paging {
            limit,
            offset,
            given: paging,
        },
        format,
        size,
        changed_since,
        ..
    } = request;
    if let Some(base) = &changed_since {
        let asked = Changes {
            base,
            series,
            window,
            columns,
            format,
            zone,
            station: None,
            file_name: "changes".into(),
        };
        return changes(ctx, asked).await;
    }
    if let Some(aggregate) = aggregate {
        let catalog = &ctx.version.dataset.catalog;
        let series = series
            .iter()
            .map(|(sid, pid)| {
                let p = catalog
                    .parameter(sid, pid)
                    .ok_or_else(|| ApiError::Internal("a selected series vanished".into()))?;
                series_to_aggregate(p, &aggregate.spec)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let query = ManyAggregateQuery {
            series,
            window,
            spec: aggregate.spec,
            columns: aggregate.columns,
            offset,
            limit,
            need_total: paging,
        };
        if format.is_chart() {
            return chart::many_aggregate_chart(ctx, query, size, format).await;
        }
        return many_aggregates(ctx, query, paging, format, alternate).await;
    }
    if format.is_chart() {
        return chart::many_chart(ctx, series, (window, zone), qualities, size, format).await;
    }
    let permit = ctx.heavy_permit()?;
    let query = ManyQuery {
        series,
        window,
        columns: columns.clone(),
        offset,
        limit,
        need_total: paging,
        stored: format.takes_stored_row_groups(),
        qualities,
    };
    let plan = ctx
        .version
        .dataset
        .plan_many(query, format.read_ahead())
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let mut names = vec!["stationId".to_owned(), "parameterId".to_owned()];
    names.extend(columns.iter().map(|c| c.name().to_owned()));
    let planned = Planned {
        format,
        schema: plan.schema,
        columns: names,
        meta_schema: "seriesValues",
        zone,
        page: paging
            .then_some(plan.total)
            .flatten()
            .map(|total| Pagination::new(total, limit, offset)),
        file_name: "values".into(),
        station: None,
        alternate,
    };
    send_rows(ctx, permit, planned, plan.parts).await
}

/// Aggregates of many series, each series' buckets computed as the answer reaches it;
/// `alternate` as in [`Planned`].
async fn many_aggregates(
    ctx: &Ctx<'_>,
    query: ManyAggregateQuery,
    paging: bool,
    format: Format,
    alternate: Option<Alternate>,
) -> Result<Reply, ApiError> {
    let permit = ctx.heavy_permit()?;
    let (limit, offset, zone) = (query.limit, query.offset, query.spec.zone);
    let mut names = vec!["stationId".to_owned(), "parameterId".to_owned()];
    names.extend(query.columns.iter().map(|c| c.name()));
    let plan = ctx
        .version
        .dataset
        .aggregate_many(query)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let planned = Planned {
        format,
        schema: plan.schema,
        columns: names,
        meta_schema: "seriesAggregates",
        zone,
        page: paging
            .then_some(plan.total)
            .flatten()
            .map(|total| Pagination::new(total, limit, offset)),
        file_name: "aggregates".into(),
        station: None,
        alternate,
    };
    let parts = plan.batches.map(|b| b.map(AnswerPart::Rows)).boxed();
    send_rows(ctx, permit, planned, parts).await
}

/// The series the request selects, by station id and parameter id. A station or parameter
/// named that does not exist is a 404, as on the single-series endpoint; more series than a
/// request may hold (`max_series_per_request`) a 400; a selection that matches nothing is
/// an empty answer.
pub(crate) fn select(ctx: &Ctx<'_>, r: &SeriesSelection) -> Result<Vec<Series>, ApiError> {
    let catalog = &ctx.version.dataset.catalog;
    let (_, hits) = catalog.find_stations(&r.filter, 0..usize::MAX);
    let mut stations: Vec<&Station> = hits.iter().map(|h| h.station).collect();
    if let Some(ids) = &r.stations {
        for id in ids {
            let known = id
                .parse()
                .ok()
                .and_then(|id| catalog.station(&id))
                .is_some();
            if !known {
                return Err(ApiError::NotFound(format!("no station '{}'", shorten(id))));
            }
        }
        stations.retain(|s| ids.iter().any(|id| **id == *s.id.as_str()));
    }
    if let Some(ids) = &r.parameters {
        for id in ids {
            if !any_parameter(catalog, |p| *p.id.as_str() == **id) {
                return Err(ApiError::NotFound(format!(
                    "no station has parameter '{}'",
                    shorten(id)
                )));
            }
        }
    }
    if let Some(properties) = &r.observed_properties {
        for property in properties {
            if !any_parameter(catalog, |p| *p.observed_property == **property) {
                return Err(unknown_property(catalog, property));
            }
        }
    }
    stations.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
    let wanted = |p: &hydro_engine::Parameter| {
        r.parameters
            .as_ref()
            .is_none_or(|ids| ids.iter().any(|id| **id == *p.id.as_str()))
            && r.observed_properties
                .as_ref()
                .is_none_or(|o| o.iter().any(|o| **o == *p.observed_property))
    };
    let most = ctx.state.config.max_series_per_request;
    let mut series = Vec::new();
    for s in stations {
        let mut chosen: Vec<_> = catalog
            .parameters(&s.id)
            .iter()
            .filter(|p| wanted(p))
            .collect();
        chosen.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
        for p in chosen {
            if series.len() == most {
                return Err(ApiError::param(
                    "parameters",
                    format!(
                        "the request selects more than {most} series (max_series_per_request); \
                         narrow it with station filters or fewer parameters"
                    ),
                ));
            }
            series.push((s.id.clone(), p.id.clone()));
        }
    }
    Ok(series)
}

/// The 400 of an `observedProperties` value no parameter has: it lists the ones there are.
fn unknown_property(catalog: &Catalog, property: &str) -> ApiError {
    let known: std::collections::BTreeSet<&str> = catalog
        .stations()
        .iter()
        .flat_map(|s| catalog.parameters(&s.id).iter())
        .map(|p| &*p.observed_property)
        .collect();
    ApiError::param(
        "observedProperties",
        format!(
            "'{}' is not an observed property of any station; the archive has {}",
            shorten(property),
            known.into_iter().collect::<Vec<_>>().join(", ")
        ),
    )
}

fn any_parameter(catalog: &Catalog, test: impl Fn(&hydro_engine::Parameter) -> bool) -> bool {
    catalog
        .stations()
        .iter()
        .any(|s| catalog.parameters(&s.id).iter().any(&test))
}
