//! Sending a values-shaped answer (values or buckets, of one series or many, changes,
//! statistics) once planned: its first part read before the status line, the rest streamed in
//! the chosen format with the envelope's links and the paging headers.

use crate::api::Ctx;
use crate::api::context::fault;
use crate::api::swapped::Alternate;
use crate::http::error::ApiError;
use crate::render::envelope::Pagination;
use crate::render::format::Format;
use crate::render::reply::{Reply, attachment};
use crate::render::stream::{self, DownloadGuard};
use crate::render::timefmt::TimeFormatter;
use crate::render::values::{ValuesBody, values_body};
use datafusion::arrow::datatypes::SchemaRef;
use hydro_engine::StationId;
use hydro_engine::Zone;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::OwnedSemaphorePermit;

/// The `links` of a values answer. Only JSON and XML answers print them, so only those build
/// them: whatever a handler does goes before the answer's first byte.
fn values_links(ctx: &Ctx<'_>, station: &StationId, page: Option<&Pagination>) -> Option<Value> {
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

/// A values-shaped answer (values or buckets, of one series or many) once planned: what its
/// body and headers are made of besides its rows.
pub(crate) struct Planned<'a> {
    pub format: Format,
    pub schema: SchemaRef,
    /// Column names, in order.
    pub columns: Vec<String>,
    /// The JSON Schema a JSON answer's `meta` names.
    pub meta_schema: &'static str,
    /// The offset of output times.
    pub zone: Zone,
    /// When a page was asked for and its total is known.
    pub page: Option<Pagination>,
    /// The attachment's name, without extension.
    pub file_name: String,
    /// The series' station, whose links the envelope gives (one series only).
    pub station: Option<&'a StationId>,
    /// The query with `near` or `bbox` swapped, when they were most likely typed lat,lon.
    pub alternate: Option<Alternate>,
}

/// Sends a planned answer: its first part is read before the status line (so that a failing
/// read is an error status, not a cut body), the rest streams while `permit` is held.
pub(crate) async fn send_rows(
    ctx: &Ctx<'_>,
    permit: OwnedSemaphorePermit,
    planned: Planned<'_>,
    parts: stream::Parts,
) -> Result<Reply, ApiError> {
    let parts = stream::first_checked(parts)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let Planned {
        format,
        schema,
        columns,
        meta_schema,
        zone,
        page,
        file_name,
        station,
        alternate,
    } = planned;
    let held = DownloadGuard {
        watch: Arc::clone(ctx.state) as _,
        permit,
    };
    let answer = ValuesBody {
        format,
        schema,
        columns,
        meta: &ctx.state.meta,
        meta_schema,
        dataset_version: &ctx.version.dataset.manifest.version,
        page: page.as_ref(),
        time: TimeFormatter::zoned(zone),
    };
    let links = || match station {
        Some(station) => values_links(ctx, station, page.as_ref()),
        None => {
            let mut listed = vec![("self", ctx.paging_url().this())];
            listed.extend(alternate.as_ref().map(|a| ("alternate", a.href.clone())));
            ctx.links(listed, page.as_ref())
        }
    };
    let alternate_header = alternate.as_ref().and_then(Alternate::header);
    let body = values_body(answer, parts, &links, held)?;
    let mut headers = ctx.paging_headers(page.as_ref());
    attachment(&mut headers, format, &file_name);
    if let Some(v) = alternate_header {
        headers.append(http::header::LINK, v);
    }
    Ok(Reply::values(format, body, headers))
}
