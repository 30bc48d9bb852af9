//! `GET /v1/latest`: the newest value of each series the station filters and parameters
//! select (as `/v1/values` selects them), one row per series with its station's name and
//! coordinates: a map layer of current levels as GeoJSON, a table in the other formats.
//! Series without values are left out. The newest values are kept per version in memory
//! (the engine's `query::latest`), so a whole network costs a lookup per series.

use crate::api::Ctx;
use crate::api::context::{catalog_list, fault};
use crate::api::many_series::select;
use crate::api::request::LatestRequest;
use crate::api::swapped::swapped_coordinates;
use crate::http::error::ApiError;
use crate::render::reply::Reply;
use serde_json::{Value, json};

pub async fn latest(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let LatestRequest {
        selection,
        paging,
        format,
    } = ctx.request()?;
    let series = select(ctx, &selection)?;
    let mut links = vec![("self", ctx.paging_url().this())];
    links.extend(swapped_coordinates(ctx, &selection.filter).map(|a| ("alternate", a.href)));
    let dataset = &ctx.version.dataset;
    let newest = dataset
        .latest(&series)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let mut time = ctx.time();
    let catalog = &dataset.catalog;
    let items: Vec<Value> = series
        .iter()
        .zip(newest)
        .filter_map(|((station, parameter), latest)| {
            let latest = latest?;
            let s = catalog.station(station)?;
            let p = catalog.parameter(station, parameter)?;
            Some(json!({
                "stationId": station.as_str(),
                "stationName": &*s.name,
                "coordinates": {"lat": s.coordinates.lat, "lon": s.coordinates.lon},
                "parameterId": parameter.as_str(),
                "unit": &*p.unit,
                "timestamp": time.format(latest.timestamp),
                "value": latest.value,
                "quality": &*latest.quality,
            }))
        })
        .collect();
    catalog_list(
        ctx,
        items,
        &[],
        None,
        paging,
        format,
        "latest",
        "value",
        links,
        "latest",
    )
}
