//! `GET /v1/stations/{id}/characteristics` and
//! `GET /v1/stations/{id}/characteristics/{characteristicId}`.

use crate::api::Ctx;
use crate::api::context::catalog_list;
use crate::api::params::shorten;
use crate::api::request::{CharacteristicRequest, CharacteristicsRequest};
use crate::http::error::ApiError;
use crate::render::encode::catalog::{Data, Document};
use crate::render::reply::{Reply, built};
use crate::render::resources::{characteristic_json, project};
use http::HeaderMap;
use hydro_engine::CharacteristicId;

pub fn characteristics(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    ctx.admit::<CharacteristicsRequest>()?;
    let s = ctx.station(id)?;
    let CharacteristicsRequest {
        types,
        parameter_ids,
        sort,
        fields,
        paging,
        format,
    } = ctx.parse::<CharacteristicsRequest>()?;
    let mut tf = ctx.time();
    let items = ctx
        .version
        .dataset
        .catalog
        .characteristics(&s.id)
        .iter()
        .filter(|c| types.as_ref().is_none_or(|t| t.contains(&c.kind)))
        .filter(|c| {
            parameter_ids
                .as_ref()
                .is_none_or(|p| p.contains(&c.parameter))
        })
        .map(|c| characteristic_json(c, &mut tf))
        .collect();
    let links = vec![
        ("self", ctx.paging_url().this()),
        ("station", ctx.url(&format!("/stations/{}", s.id))),
    ];
    catalog_list(
        ctx,
        items,
        &sort,
        fields,
        paging,
        format,
        "characteristics",
        "characteristic",
        links,
        &format!("characteristics-{}", s.id),
    )
}

pub fn characteristic(ctx: &Ctx<'_>, id: &str, cid: &str) -> Result<Reply, ApiError> {
    ctx.admit::<CharacteristicRequest>()?;
    let s = ctx.station(id)?;
    let not_found = || {
        ApiError::NotFound(format!(
            "station '{}' has no characteristic '{}'",
            s.id,
            shorten(cid)
        ))
    };
    let cid: CharacteristicId = cid.parse().map_err(|_| not_found())?;
    let c = ctx
        .version
        .dataset
        .catalog
        .characteristic(&s.id, &cid)
        .ok_or_else(not_found)?;
    let CharacteristicRequest { fields, format } = ctx.parse::<CharacteristicRequest>()?;
    let mut item = characteristic_json(c, &mut ctx.time());
    if let Some(f) = &fields {
        item = project(&item, f);
    }
    let base = format!("/stations/{}", s.id);
    let links = ctx.links(
        vec![
            ("self", ctx.paging_url().this()),
            ("station", ctx.url(&base)),
            (
                "characteristics",
                ctx.url(&format!("{base}/characteristics")),
            ),
        ],
        None,
    );
    let doc = Document {
        meta: ctx.meta("characteristic", None),
        links,
        data: Data::One(&item),
        item_name: "characteristic",
        csv_columns: None,
    };
    Ok(built(format.document(&doc)?, format, HeaderMap::new()))
}
