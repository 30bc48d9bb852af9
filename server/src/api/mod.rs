//! The endpoints. Each handler checks the endpoint's parameters, resolves the path's ids in
//! the catalog, parses its typed request ([`request`]), plans the query, and only then builds
//! the reply: once the status line is out, an error can only cut the connection.
//!
//! One module per resource ([`landing`], [`health`], [`stations`], [`parameters`],
//! [`characteristics`], [`values`], [`many`], [`latest`], [`assets`]); [`params`] parses single
//! parameters, [`station_list`] and [`download`] make the streamed bodies of long station lists
//! and value answers, [`chart`] the charts (`format=svg`, `png`) and [`pages`] the HTML pages
//! of the resources that have them.

pub mod assets;
pub mod characteristics;
pub mod chart;
pub mod download;
pub mod health;
pub mod landing;
pub mod latest;
pub mod many;
pub mod pages;
pub mod parameters;
pub mod params;
pub mod request;
pub mod station_list;
pub mod stations;
pub mod values;

use crate::api::params::{RawQuery, SortSpec, shorten};
use crate::api::request::{NoParameters, Paging, Query, Request};
use crate::http::body::{Body, full};
use crate::http::error::ApiError;
use crate::http::negotiate::Format;
use crate::render::encode::catalog::{Data, Document, encode};
use crate::render::envelope::{Page, PagingUrl, link};
use crate::render::resources::{project, sort_items};
use crate::render::timefmt::TimeFormatter;
use crate::state::{AppState, Version};
use http::{HeaderMap, HeaderName, HeaderValue, header};
use hydro_engine::error::ErrorKind;
use hydro_engine::model::Station;
use hydro_engine::model::ids::{ParameterId, StationId};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::OwnedSemaphorePermit;

pub struct Ctx<'a> {
    pub state: &'a Arc<AppState>,
    /// The version this request answers from (taken once, when it began).
    pub version: &'a Arc<Version>,
    pub query: &'a RawQuery,
    pub headers: &'a HeaderMap,
    /// The request path (for links).
    pub path: &'a str,
}

/// A successful answer before the common headers are added.
pub struct Reply {
    pub status: http::StatusCode,
    pub body: Body,
    /// Known length (built bodies), None when streamed.
    pub len: Option<usize>,
    pub content_type: String,
    pub headers: HeaderMap,
    pub cacheable: bool,
    /// Whether a content coding may shrink it: Parquet pages are compressed already (LZ4), and
    /// gzip on top saved a tenth of the bytes for five times the time.
    pub compressible: bool,
    /// Whether the finished answer may be kept and sent again (the response store, `cache`): value answers,
    /// which cost the most to make.
    pub keep: bool,
}

impl Reply {
    /// A values answer (one series or many) as it streams: cacheable, kept by the response
    /// store, compressed by `Accept-Encoding` unless it is Parquet.
    pub(crate) fn values(format: Format, body: Body, headers: HeaderMap) -> Self {
        Self {
            status: http::StatusCode::OK,
            body,
            len: None,
            content_type: format.content_type(),
            headers,
            cacheable: true,
            compressible: format != Format::Parquet,
            keep: true,
        }
    }
}

impl Ctx<'_> {
    fn basic(&self) -> bool {
        self.state.basic()
    }

    /// The request's query as the typed requests read it (its pairs, `Accept`, the variant).
    fn typed_query(&self) -> Query<'_> {
        Query {
            raw: self.query,
            accept: self
                .headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok()),
            basic: self.basic(),
        }
    }

    /// The endpoint's request: its parameters checked, then parsed.
    fn request<R: Request>(&self) -> Result<R, ApiError> {
        let query = self.typed_query();
        query.admit::<R>()?;
        R::parse(&query)
    }

    /// Checks that only the endpoint's parameters are present (before path ids are resolved).
    fn admit<R: Request>(&self) -> Result<(), ApiError> {
        self.typed_query().admit::<R>()
    }

    /// A slot among the heavy queries running at once (value downloads, long or sorted station
    /// lists), held until the answer's last byte is produced; none free: 503.
    fn heavy_permit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        Arc::clone(&self.state.heavy)
            .try_acquire_owned()
            .map_err(|_| ApiError::Unavailable {
                retry_after: 1,
                detail: "too many downloads at once; retry shortly".into(),
            })
    }

    fn url(&self, rest: &str) -> String {
        format!("{}{rest}", self.state.base_url)
    }

    fn paging_url(&self) -> PagingUrl {
        let rest = self.path.strip_prefix("/v1").unwrap_or(self.path);
        PagingUrl {
            base: self.url(rest),
            pairs: self.query.pairs.clone(),
        }
    }

    fn time(&self) -> TimeFormatter {
        TimeFormatter::new(self.state.offset)
    }

    fn station(&self, id: &str) -> Result<&Station, ApiError> {
        // Ids are not names: a name typed as an id is pointed to the search.
        let not_found = || {
            let typed = shorten(id);
            let search: String =
                percent_encoding::utf8_percent_encode(id, percent_encoding::NON_ALPHANUMERIC)
                    .to_string();
            ApiError::NotFound(format!(
                "no station '{typed}'; to find stations by name: {}",
                self.url(&format!("/stations?q={search}"))
            ))
        };
        let id: StationId = id.parse().map_err(|_| not_found())?;
        self.version
            .dataset
            .catalog
            .station(&id)
            .ok_or_else(not_found)
    }

    fn parameter_id(&self, station: &Station, id: &str) -> Result<ParameterId, ApiError> {
        let not_found = || {
            ApiError::NotFound(format!(
                "station '{}' has no parameter '{}'",
                station.id,
                shorten(id)
            ))
        };
        let pid: ParameterId = id.parse().map_err(|_| not_found())?;
        self.version
            .dataset
            .catalog
            .parameter(&station.id, &pid)
            .map(|p| p.id.clone())
            .ok_or_else(not_found)
    }

    fn links(&self, items: Vec<(&str, String)>, page: Option<&Page>) -> Option<Value> {
        if self.basic() {
            return None;
        }
        let mut out: Vec<Value> = items.into_iter().map(|(r, h)| link(r, h)).collect();
        if let Some(p) = page {
            out.extend(
                p.links(&self.paging_url())
                    .into_iter()
                    .map(|(r, h)| link(r, h)),
            );
        }
        Some(Value::Array(out))
    }

    /// Link and X-Total-Count headers for a paged answer.
    fn paging_headers(&self, page: Option<&Page>) -> HeaderMap {
        let mut h = HeaderMap::new();
        let Some(p) = page else { return h };
        if !self.basic() {
            let value: Vec<String> = p
                .links(&self.paging_url())
                .into_iter()
                .map(|(rel, href)| format!("<{href}>; rel=\"{rel}\""))
                .collect();
            if let Ok(v) = HeaderValue::from_str(&value.join(", ")) {
                h.insert(header::LINK, v);
            }
        }
        h.insert(
            HeaderName::from_static("x-total-count"),
            HeaderValue::from(p.total),
        );
        h
    }
}

fn built(bytes: Vec<u8>, format: Format, headers: HeaderMap) -> Reply {
    built_as(bytes, &format.content_type(), headers)
}

fn built_as(bytes: Vec<u8>, content_type: &str, headers: HeaderMap) -> Reply {
    Reply {
        status: http::StatusCode::OK,
        len: Some(bytes.len()),
        body: full(bytes),
        content_type: content_type.to_owned(),
        headers,
        cacheable: true,
        compressible: true,
        keep: false,
    }
}

fn json_reply(v: Value) -> Reply {
    built(v.to_string().into_bytes(), Format::Json, HeaderMap::new())
}

fn attachment(h: &mut HeaderMap, format: Format, stem: &str) {
    if let Some(ext) = format.attachment_extension() {
        let name: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}.{ext}\"")) {
            h.insert(header::CONTENT_DISPOSITION, v);
        }
    }
}

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
        ["openapi.json"] => static_json(ctx, crate::render::schemas::OPENAPI),
        ["assets", name] => {
            let NoParameters = ctx.request()?;
            assets::asset(name)
        }
        ["schemas", name] => match crate::render::schemas::schema(name) {
            Some(text) => static_json(ctx, text),
            None => Err(ApiError::NotFound(format!("no schema '{}'", shorten(name)))),
        },
        ["stations"] => stations::stations(ctx),
        ["values"] => extended_only(many::many_values(ctx).await),
        ["latest"] => extended_only(latest::latest(ctx).await),
        ["stations", id] => extended_only(stations::station(ctx, id)),
        ["stations", id, "parameters"] => parameters::parameters(ctx, id),
        ["stations", id, "parameters", pid] => extended_only(parameters::parameter(ctx, id, pid)),
        ["stations", id, "parameters", pid, "values"] => values::values(ctx, id, pid).await,
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

fn static_json(ctx: &Ctx<'_>, text: &'static str) -> Result<Reply, ApiError> {
    let NoParameters = ctx.request()?;
    Ok(built(
        text.as_bytes().to_vec(),
        Format::Json,
        HeaderMap::new(),
    ))
}

/// Sorting, paging and projecting a small list of catalog items, then encoding it.
#[allow(clippy::too_many_arguments)]
fn catalog_list(
    ctx: &Ctx<'_>,
    mut items: Vec<Value>,
    sort: &[SortSpec],
    fields: Option<Vec<String>>,
    Paging {
        limit,
        offset,
        given: paging,
    }: Paging,
    format: Format,
    schema: &str,
    item_name: &str,
    links: Vec<(&str, String)>,
    stem: &str,
) -> Result<Reply, ApiError> {
    sort_items(&mut items, sort);
    let page = Page::new(items.len() as u64, limit, offset);
    let a = offset.min(items.len() as u64) as usize;
    let b = (a as u64 + page.count) as usize;
    let mut items: Vec<Value> = items.drain(a..b).collect();
    if let Some(f) = &fields {
        items = items.iter().map(|v| project(v, f)).collect();
    }
    let page = paging.then_some(page);
    let doc = Document {
        meta: ctx.state.meta.value(schema, page.as_ref()),
        links: ctx.links(links, page.as_ref()),
        data: Data::List(&items),
        item_name,
        csv_columns: None,
    };
    let mut headers = ctx.paging_headers(page.as_ref());
    attachment(&mut headers, format, stem);
    Ok(built(encode(&doc, format)?, format, headers))
}

/// A failed data read: remembered for health when data is damaged or the server failed (the
/// response made of it logs it), then the problem to answer. A store that does not answer is
/// not remembered: health's storage check says so while it lasts, and says `ok` as soon as the
/// store is back, so that a balancer sends requests again at once.
fn fault(state: &AppState, e: hydro_engine::EngineError) -> ApiError {
    if matches!(e.kind(), ErrorKind::Corrupt | ErrorKind::Internal) {
        state.record_fault(&e.to_string());
    }
    e.into()
}
