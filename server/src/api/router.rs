//! Which endpoint answers a path under `/v1`: the one table of routes.

use crate::api::params::shorten;
use crate::api::request::{DocumentRequest, NoParameters};
use crate::api::{
    Ctx, assets, characteristics, health, landing, latest, many_series, parameters, sql, stations,
    statistics, values, versions,
};
use crate::http::error::ApiError;
use crate::render::format::Format;
use crate::render::html::reference;
use crate::render::reply::{Reply, built};
use http::HeaderMap;

/// The endpoint's reply to `segments` (the decoded path after `/v1`).
pub async fn route(ctx: &Ctx<'_>, segments: &[String]) -> Result<Reply, ApiError> {
    let seg: Vec<&str> = segments.iter().map(String::as_str).collect();
    let extended_only = |r: Result<Reply, ApiError>| {
        if ctx.basic() {
            Err(ApiError::NotFound(
                "not available in the basic variant of this API".into(),
            ))
        } else {
            r
        }
    };
    match seg.as_slice() {
        [] => landing::landing(ctx),
        ["health"] => health::health(ctx).await,
        ["openapi.json"] => openapi(ctx),
        ["assets", name] => {
            let NoParameters = ctx.request()?;
            assets::asset(name)
        }
        ["schemas", name] => match crate::render::schemas::schema(name) {
            Some(text) => static_json(ctx, text),
            None => Err(ApiError::NotFound(format!("no schema '{}'", shorten(name)))),
        },
        ["stations"] => stations::stations(ctx),
        ["values"] => extended_only(many_series::many_values(ctx).await),
        ["latest"] => extended_only(latest::latest(ctx).await),
        ["statistics"] => extended_only(statistics::many_statistics(ctx).await),
        ["versions"] => extended_only(versions::versions(ctx).await),
        ["sql"] => extended_only(sql::sql(ctx).await),
        ["versions", id] => extended_only(versions::version(ctx, id).await),
        ["stations", id] => extended_only(stations::station(ctx, id)),
        ["stations", id, "parameters"] => parameters::parameters(ctx, id),
        ["stations", id, "parameters", pid] => extended_only(parameters::parameter(ctx, id, pid)),
        ["stations", id, "parameters", pid, "values"] => values::values(ctx, id, pid).await,
        ["stations", id, "parameters", pid, "statistics"] => {
            extended_only(statistics::statistics(ctx, id, pid).await)
        }
        ["stations", id, "characteristics"] => {
            extended_only(characteristics::characteristics(ctx, id))
        }
        ["stations", id, "characteristics", cid] => {
            extended_only(characteristics::characteristic(ctx, id, cid))
        }
        _ => Err(ApiError::NotFound(format!(
            "no resource at {}",
            shorten(ctx.path)
        ))),
    }
}

/// The OpenAPI document (with the query parameters filled in): as it is, or as a page for a
/// browser.
fn openapi(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let DocumentRequest(format) = ctx.request()?;
    let text = crate::api::query_parameters::openapi::document().map_err(ApiError::Internal)?;
    if format != Format::HTML {
        return Ok(built(text.as_bytes().to_vec(), format, HeaderMap::new()));
    }
    let document: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| ApiError::Internal(format!("the OpenAPI document: {e}")))?;
    let json = ctx
        .paging_url()
        .rewritten(&["format"], &[("format", "json")]);
    Ok(reference::page(&ctx.site(), &document, json))
}

fn static_json(ctx: &Ctx<'_>, text: &'static str) -> Result<Reply, ApiError> {
    let NoParameters = ctx.request()?;
    Ok(built(
        text.as_bytes().to_vec(),
        Format::JSON,
        HeaderMap::new(),
    ))
}
