//! `GET /v1/stations/{id}/parameters` and `GET /v1/stations/{id}/parameters/{parameterId}`.

use crate::api::Ctx;
use crate::api::context::catalog_list;
use crate::api::request::{ParameterRequest, ParametersRequest};
use crate::http::error::ApiError;
use crate::render::encode::catalog::{Data, Document};
use crate::render::reply::{Reply, attachment, built};
use crate::render::resources::{parameter_json, project};
use http::HeaderMap;

pub fn parameters(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    ctx.admit::<ParametersRequest>()?;
    let s = ctx.station(id)?;
    let ParametersRequest {
        sort,
        fields,
        paging,
        format,
    } = ctx.parse::<ParametersRequest>()?;
    let mut tf = ctx.time();
    let items = ctx
        .version
        .dataset
        .catalog
        .parameters(&s.id)
        .iter()
        .map(|p| parameter_json(p, &mut tf))
        .collect();
    let base = format!("/stations/{}", s.id);
    let links = vec![
        ("self", ctx.paging_url().this()),
        ("station", ctx.url(&base)),
        (
            "values",
            ctx.url(&format!("{base}/parameters/{{parameterId}}/values")),
        ),
    ];
    catalog_list(
        ctx,
        items,
        &sort,
        fields,
        paging,
        format,
        "parameters",
        "parameter",
        links,
        &format!("parameters-{}", s.id),
    )
}

pub fn parameter(ctx: &Ctx<'_>, id: &str, pid: &str) -> Result<Reply, ApiError> {
    ctx.admit::<ParameterRequest>()?;
    let s = ctx.station(id)?;
    let pid = ctx.parameter_id(s, pid)?;
    let ParameterRequest { fields, format } = ctx.parse::<ParameterRequest>()?;
    let p = ctx
        .version
        .dataset
        .catalog
        .parameter(&s.id, &pid)
        .ok_or_else(|| ApiError::NotFound("parameter".into()))?;
    let mut item = parameter_json(p, &mut ctx.time());
    if let Some(f) = &fields {
        item = project(&item, f);
    }
    let base = format!("/stations/{}", s.id);
    let links = ctx.links(
        vec![
            ("self", ctx.paging_url().this()),
            ("station", ctx.url(&base)),
            ("parameters", ctx.url(&format!("{base}/parameters"))),
            (
                "values",
                ctx.url(&format!("{base}/parameters/{pid}/values")),
            ),
        ],
        None,
    );
    let doc = Document {
        meta: ctx.meta("parameter", None),
        links,
        data: Data::One(&item),
        item_name: "parameter",
        csv_columns: None,
    };
    let mut headers = HeaderMap::new();
    attachment(&mut headers, format, &format!("{}-{pid}", s.id));
    Ok(built(format.document(&doc)?, format, headers))
}
