//! `GET /v1/versions` and `GET /v1/versions/{id}`: the versions of the dataset the store still
//! holds, newest first, so that a result can name the version it was computed from and get
//! its bytes again (`asOf`). Listed from the store's version records (`crate::versions`), so a
//! server lists the versions published after it started, and those vacuum removed are gone.

use crate::api::Ctx;
use crate::api::context::catalog_list;
use crate::api::request::{VersionRequest, VersionsRequest};
use crate::http::error::ApiError;
use crate::render::encode::catalog::{Data, Document};
use crate::render::reply::{Reply, built};
use crate::versions::{AsOf, published_text};
use http::HeaderMap;
use hydro_engine::Manifest;
use serde_json::{Value, json};

pub async fn versions(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let VersionsRequest { paging, format } = ctx.request()?;
    let current = ctx.state.version();
    let served = current.dataset.manifest.generation;
    let store = current.dataset.store();
    let generations = ctx.state.versions.generations(store, served).await?;
    let records = ctx.state.versions.records(store, &generations).await?;
    let items: Vec<Value> = records.iter().rev().map(|m| item(ctx, m, served)).collect();
    catalog_list(
        ctx,
        items,
        &[],
        None,
        paging,
        format,
        "versions",
        "version",
        vec![("self", ctx.paging_url().this())],
        "versions",
    )
}

pub async fn version(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let VersionRequest(format) = ctx.request()?;
    let current = ctx.state.version();
    let as_of = AsOf::parse(id).map_err(|_| {
        ApiError::NotFound(format!(
            "no version {}: /v1/versions lists those there are",
            crate::api::params::shorten(id)
        ))
    })?;
    let record = ctx.state.versions.record_of(&current, &as_of).await?;
    let item = item(ctx, &record, current.dataset.manifest.generation);
    let doc = Document {
        meta: ctx.meta("version", None),
        links: ctx.links(
            vec![
                ("self", ctx.url(&format!("/versions/{}", record.version))),
                ("collection", ctx.url("/versions")),
                ("data", ctx.url(&format!("/?asOf={}", record.version))),
            ],
            None,
        ),
        data: Data::One(&item),
        item_name: "version",
        csv_columns: None,
    };
    Ok(built(format.document(&doc)?, format, HeaderMap::new()))
}

/// A version as the list shows it.
fn item(ctx: &Ctx<'_>, m: &Manifest, served: u64) -> Value {
    let publish = m.publish.map(
        |p| json!({"kind": p.kind.as_str(), "series": p.series, "stationMonths": p.station_months}),
    );
    json!({
        "id": m.version,
        "generation": m.generation,
        "published": published_text(m),
        "current": m.generation == served,
        "counts": {"stations": m.counts.stations, "parameters": m.counts.parameters,
                   "characteristics": m.counts.characteristics, "values": m.counts.values},
        "publish": publish,
        "url": ctx.url(&format!("/versions/{}", m.version)),
    })
}
