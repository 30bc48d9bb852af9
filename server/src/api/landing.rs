//! `GET /v1/`: the landing page, with links to every resource and the dataset's counts.

use crate::api::Ctx;
use crate::api::request::LandingRequest;
use crate::http::error::ApiError;
use crate::http::negotiate::Format;
use crate::render::html::pages;
use crate::render::reply::{Reply, json_reply};
use serde_json::json;

pub fn landing(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let LandingRequest(format) = ctx.request()?;
    if format == Format::Html {
        return Ok(pages::landing(&ctx.site(), &ctx.version.dataset.manifest));
    }
    let mut links = vec![
        ("self", ctx.url("/")),
        ("stations", ctx.url("/stations")),
        ("station", ctx.url("/stations/{stationId}")),
        ("parameters", ctx.url("/stations/{stationId}/parameters")),
        (
            "values",
            ctx.url("/stations/{stationId}/parameters/{parameterId}/values"),
        ),
        ("health", ctx.url("/health")),
        ("service-desc", ctx.url("/openapi.json")),
    ];
    if !ctx.basic() {
        links.insert(
            5,
            (
                "characteristics",
                ctx.url("/stations/{stationId}/characteristics"),
            ),
        );
        // Many series in one answer, and the newest value of each: both need `parameters`
        // (or `observedProperties`), so their links are templates with it, as the others are
        // with the ids they need; a crawler following a link never meets a 400.
        links.insert(
            6,
            ("series-values", ctx.url("/values?parameters={parameterId}")),
        );
        links.insert(7, ("latest", ctx.url("/latest?parameters={parameterId}")));
    }
    // One real station, the first of the list, to follow without filling in a template.
    if let Some(first) = ctx.version.dataset.catalog.stations().first() {
        links.push(("example", ctx.url(&format!("/stations/{}", first.id))));
    }
    let ds = &ctx.version.dataset.manifest;
    let mut body = json!({"meta": ctx.state.meta.value("landing", None)});
    if let Some(l) = ctx.links(links, None) {
        body["links"] = l;
    }
    body["data"] = json!({
        "datasetVersion": ds.version,
        "datasetCreated": ds.created,
        "counts": {"stations": ds.counts.stations, "parameters": ds.counts.parameters,
                   "characteristics": ds.counts.characteristics, "values": ds.counts.values},
    });
    Ok(json_reply(body))
}
