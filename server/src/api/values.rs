//! `GET /v1/stations/{id}/parameters/{parameterId}/values`: the request becomes an engine
//! query, planned before the status line; the answer streams through the format's encoder
//! (see `download`).

use crate::api::chart;
use crate::api::request::{Paging, Request, VALUE_FORMATS, ValuesRequest};
use crate::api::{Ctx, Reply, attachment, download, fault, pages};
use crate::http::body::Body;
use crate::http::error::ApiError;
use crate::http::negotiate::Format;
use crate::render::encode::catalog::xml_head;
use crate::render::encode::{binary, text::ValuesText};
use crate::render::envelope::Page;
use datafusion::arrow::datatypes::SchemaRef;
use futures::StreamExt;
use hydro_engine::EngineError;
use hydro_engine::model::ids::StationId;
use hydro_engine::query::{AnswerPart, ReadAhead, ValuesQuery};
use serde_json::Value;
use std::sync::Arc;

/// Arrow IPC sends each batch's columns as they are, on the answer's own task, so decoding is
/// the work and months are read in groups; text encoders hand batches to tasks of their own,
/// which interleave with decoding best a month at a time (see [`ReadAhead`]).
pub(crate) fn read_ahead(format: Format) -> ReadAhead {
    match format {
        Format::Arrow => ReadAhead::Grouped,
        _ => ReadAhead::Monthly,
    }
}

/// The `links` of a values answer. Only JSON and XML answers print them, so only those build
/// them: whatever a handler does goes before the answer's first byte.
fn values_links(ctx: &Ctx<'_>, station: &StationId, page: Option<&Page>) -> Option<Value> {
    let base = format!("/stations/{station}");
    ctx.links(
        vec![
            ("self", ctx.paging_url().this()),
            ("station", ctx.url(&base)),
            ("parameters", ctx.url(&format!("{base}/parameters"))),
        ],
        page,
    )
}

/// What a values answer's body is made of besides its rows.
pub(crate) struct ValuesBody<'a> {
    pub format: Format,
    pub schema: SchemaRef,
    /// Column names, in order.
    pub columns: Vec<String>,
    /// The JSON Schema a JSON answer's `meta` names.
    pub meta_schema: &'a str,
    pub page: Option<&'a Page>,
}

/// The body of a values answer (one series or many): Arrow IPC and Parquet through their
/// stateful encoders, the text formats through [`ValuesText`], JSON and XML inside their
/// envelope, whose `links` (`links`) are built only for them.
pub(crate) fn values_body(
    ctx: &Ctx<'_>,
    answer: ValuesBody<'_>,
    parts: download::Parts,
    links: impl FnOnce() -> Option<Value>,
    held: download::DownloadGuard,
) -> Body {
    let ValuesBody {
        format,
        schema,
        columns,
        meta_schema,
        page,
    } = answer;
    let text = |head: Vec<u8>, tail: &[u8]| {
        ValuesText::new(format, columns, head, tail.to_vec(), ctx.time())
    };
    match format {
        Format::Arrow => download::sequential(parts, Box::new(binary::ArrowIpc::new(schema)), held),
        Format::Parquet => {
            download::sequential(parts, Box::new(binary::Parquet::new(schema)), held)
        }
        Format::Xml => {
            let meta = ctx.state.meta.value(meta_schema, page);
            let head = xml_head(&meta, links().as_ref());
            download::text(parts, text(head, b"</data></response>"), held)
        }
        Format::Json => {
            let mut head = b"{\"meta\":".to_vec();
            head.extend_from_slice(ctx.state.meta.json(meta_schema, page).as_bytes());
            if let Some(l) = links() {
                head.extend_from_slice(b",\"links\":");
                head.extend_from_slice(l.to_string().as_bytes());
            }
            head.extend_from_slice(b",\"data\":[");
            download::text(parts, text(head, b"]}"), held)
        }
        _ => download::text(parts, text(Vec::new(), b""), held),
    }
}

pub async fn values(ctx: &Ctx<'_>, id: &str, pid: &str) -> Result<Reply, ApiError> {
    ctx.admit::<ValuesRequest>()?;
    let s = ctx.station(id)?;
    let pid = ctx.parameter_id(s, pid)?;
    let ValuesRequest {
        window,
        sort,
        columns,
        paging: Paging {
            limit,
            offset,
            given: paging,
        },
        format,
        size,
    } = ValuesRequest::parse(&ctx.typed_query())?;
    let query = ValuesQuery {
        station: s.id.clone(),
        parameter: pid.clone(),
        window,
        sort,
        offset,
        limit,
        columns: columns.clone(),
        need_total: paging,
    };
    if matches!(format, Format::Svg | Format::Png | Format::Html) {
        let parameter = ctx.version.dataset.catalog.parameter(&s.id, &pid);
        let parameter = parameter.ok_or_else(|| ApiError::Internal("parameter vanished".into()))?;
        if format == Format::Html {
            return pages::values(ctx, s, parameter, query, size, VALUE_FORMATS).await;
        }
        return chart::values_chart(ctx, s, parameter, query, size, format).await;
    }
    let permit = ctx.heavy_permit()?;
    let dataset = &ctx.version.dataset;
    let (total, schema, parts) = if format == Format::Parquet {
        // Parquet answers copy stored row groups as they are (see hydro_engine::query).
        let plan = dataset
            .plan_parts(&query)
            .await
            .map_err(|e| fault(ctx.state, e))?;
        (plan.total, plan.schema, plan.parts)
    } else {
        let plan = dataset
            .plan_values(&query, read_ahead(format))
            .await
            .map_err(|e| fault(ctx.state, e))?;
        let parts = plan
            .stream
            .map(|b| b.map(AnswerPart::Rows).map_err(EngineError::from))
            .boxed();
        (plan.total, plan.schema, parts)
    };
    let parts = download::first_checked(parts)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let page = match (paging, total) {
        (true, Some(total)) => Some(Page::new(total, limit, offset)),
        _ => None,
    };
    let held = download::DownloadGuard {
        state: Arc::clone(ctx.state),
        permit,
    };
    let answer = ValuesBody {
        format,
        schema,
        columns: columns.iter().map(|c| c.name().to_owned()).collect(),
        meta_schema: "values",
        page: page.as_ref(),
    };
    let body = values_body(
        ctx,
        answer,
        parts,
        || values_links(ctx, &s.id, page.as_ref()),
        held,
    );
    let mut headers = ctx.paging_headers(page.as_ref());
    attachment(&mut headers, format, &format!("{}_{pid}", s.id));
    Ok(Reply::values(format, body, headers))
}
