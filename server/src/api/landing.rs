//! `GET /v1/`: the landing page, with links to every resource and the dataset's counts.

use crate::api::Ctx;
use crate::api::request::LandingRequest;
use crate::http::error::ApiError;
use crate::render::format::Format;
use crate::render::html::pages;
use crate::render::reply::{Reply, json_reply};
use crate::versions::published_text;
use serde_json::json;

/// A line a paper can quote: who publishes what, the version, when it was published, and the
/// URL that answers as that version did (`asOf`).
pub fn citation(ctx: &Ctx<'_>) -> String {
    let config = &ctx.state.config;
    let m = &ctx.version.dataset.manifest;
    let publisher = config
        .publisher_name
        .as_deref()
        .map(|p| format!("{p}: "))
        .unwrap_or_default();
    let published = published_text(m).unwrap_or_else(|| m.created.clone());
    let date = published.get(..10).unwrap_or(&published);
    format!(
        "{publisher}{}, dataset version {} ({date}). {}/?asOf={}",
        config.title, m.version, ctx.state.base_url, m.version
    )
}

pub fn landing(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let LandingRequest(format) = ctx.request()?;
    if format == Format::HTML {
        return Ok(pages::landing(
            &ctx.site(),
            &ctx.version.dataset.manifest,
            &citation(ctx),
        ));
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
        links.insert(8, ("versions", ctx.url("/versions")));
    }
    // One real station, the first of the list, to follow without filling in a template.
    if let Some(first) = ctx.version.dataset.catalog.stations().first() {
        links.push(("example", ctx.url(&format!("/stations/{}", first.id))));
    }
    let ds = &ctx.version.dataset.manifest;
    let mut body = json!({"meta": ctx.meta("landing", None)});
    if let Some(l) = ctx.links(links, None) {
        body["links"] = l;
    }
    body["data"] = json!({
        "datasetVersion": ds.version,
        "datasetCreated": ds.created,
        "citation": citation(ctx),
        "counts": {"stations": ds.counts.stations, "parameters": ds.counts.parameters,
                   "characteristics": ds.counts.characteristics, "values": ds.counts.values},
    });
    Ok(json_reply(body))
}
