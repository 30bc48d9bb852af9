//! One function per endpoint: parse and validate parameters, resolve ids in the catalog, plan
//! the query, and only then build the reply (see STYLE.md "validate and plan before the
//! status line").

use crate::app::AppState;
use crate::body::{Body, full};
use crate::download;
use crate::encode::catalog::{Data, Document, ListEncoder, csv_columns, encode, xml_head};
use crate::encode::{binary, text::ValuesText};
use crate::envelope::{Page, PagingUrl, link, meta, meta_json};
use crate::error::ApiError;
use crate::negotiate::{Format, choose};
use crate::params::{self, RawQuery, SortSpec, shorten};
use crate::resources::*;
use crate::station_list;
use crate::timefmt::TimeFormatter;
use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, header};
use hydro_engine::EngineError;
use hydro_engine::catalog::StationFilter;
use hydro_engine::ids::{CharacteristicId, ParameterId, StationId};
use hydro_engine::model::{CharacteristicType, Station, StationType};
use hydro_engine::planner::{ReadAhead, SortKey, ValueColumn, ValuesQuery, Window};
use hydro_engine::stored::Piece;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::OwnedSemaphorePermit;

pub struct Ctx<'a> {
    pub state: &'a Arc<AppState>,
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
    /// Whether the finished answer may be kept and sent again (`answers`): value answers,
    /// which cost the most to make.
    pub keep: bool,
}

const LIST_PARAMS: &[&str] = &["limit", "offset", "sort", "fields", "format"];
const CATALOG_FORMATS: &[Format] = &[Format::Json, Format::Csv, Format::Xml, Format::NdJson];
const STATION_FORMATS: &[Format] = &[
    Format::Json,
    Format::Csv,
    Format::GeoJson,
    Format::Xml,
    Format::NdJson,
];
const VALUE_FORMATS: &[Format] = &[
    Format::Json,
    Format::Csv,
    Format::Xml,
    Format::NdJson,
    Format::Arrow,
    Format::Parquet,
];

impl Ctx<'_> {
    fn basic(&self) -> bool {
        self.state.basic()
    }

    /// Checks the parameters against those of the endpoint, split by variant.
    fn allow(&self, basic: &[&str], extended: &[&str]) -> Result<(), ApiError> {
        if self.basic() {
            let hint = self
                .query
                .pairs
                .iter()
                .any(|(k, _)| extended.contains(&k.as_str()));
            return self.query.only(basic, hint);
        }
        let all: Vec<&str> = basic.iter().chain(extended).copied().collect();
        self.query.only(&all, false)
    }

    fn format(&self, offered: &[Format]) -> Result<Format, ApiError> {
        let accept = self
            .headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok());
        let offered = if self.basic() {
            &[Format::Json][..]
        } else {
            offered
        };
        choose(self.query.get("format")?, accept, offered)
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

    /// `limit`/`offset` if given: (limit, offset, paging in use).
    fn paging(&self) -> Result<(Option<u64>, u64, bool), ApiError> {
        let limit = self
            .query
            .get("limit")?
            .map(|v| params::uint("limit", v))
            .transpose()?;
        let offset = self
            .query
            .get("offset")?
            .map(|v| params::uint("offset", v))
            .transpose()?;
        Ok((
            limit,
            offset.unwrap_or(0),
            limit.is_some() || offset.is_some(),
        ))
    }

    fn sort(&self, allowed: &[&str], canon: fn(&str) -> String) -> Result<Vec<SortSpec>, ApiError> {
        self.query
            .get("sort")?
            .map(|v| params::sort(v, allowed, canon))
            .transpose()
            .map(Option::unwrap_or_default)
    }

    fn fields(
        &self,
        allowed: &[&str],
        canon: fn(&str) -> String,
    ) -> Result<Option<Vec<String>>, ApiError> {
        self.query
            .get("fields")?
            .map(|v| params::fields(v, allowed, canon))
            .transpose()
    }

    fn station(&self, id: &str) -> Result<&Station, ApiError> {
        let not_found = || ApiError::NotFound(format!("no station '{}'", shorten(id)));
        let id: StationId = id.parse().map_err(|_| not_found())?;
        self.state
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
        self.state
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
    Reply {
        status: http::StatusCode::OK,
        len: Some(bytes.len()),
        body: full(bytes),
        content_type: format.content_type(),
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
        [] => landing(ctx),
        ["health"] => health(ctx).await,
        ["openapi.json"] => static_json(ctx, crate::schemas::OPENAPI),
        ["schemas", name] => match crate::schemas::schema(name) {
            Some(text) => static_json(ctx, text),
            None => Err(ApiError::NotFound(format!("no schema '{}'", shorten(name)))),
        },
        ["stations"] => stations(ctx),
        ["stations", id] => extended_only(station(ctx, id)),
        ["stations", id, "parameters"] => parameters(ctx, id),
        ["stations", id, "parameters", pid] => extended_only(parameter(ctx, id, pid)),
        ["stations", id, "parameters", pid, "values"] => values(ctx, id, pid).await,
        ["stations", id, "characteristics"] => extended_only(characteristics(ctx, id)),
        ["stations", id, "characteristics", cid] => extended_only(characteristic(ctx, id, cid)),
        _ => Err(ApiError::NotFound(format!(
            "no resource at {}",
            shorten(ctx.path)
        ))),
    }
}

fn static_json(ctx: &Ctx<'_>, text: &'static str) -> Result<Reply, ApiError> {
    ctx.query.only(&[], false)?;
    Ok(built(
        text.as_bytes().to_vec(),
        Format::Json,
        HeaderMap::new(),
    ))
}

fn landing(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    ctx.allow(&[], &["format"])?;
    ctx.format(&[Format::Json])?;
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
    }
    let ds = &ctx.state.dataset.manifest;
    let mut body = json!({"meta": meta(ctx.state, "landing", None)});
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

async fn health(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    ctx.query.only(&[], false)?;
    let state = ctx.state;
    let started = std::time::Instant::now();
    let probe = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        state.dataset.check_storage(),
    )
    .await;
    let (storage_status, storage_detail) = match probe {
        Ok(Ok(_)) => ("ok", None),
        Ok(Err(e)) => {
            tracing::warn!("health: storage: {e}");
            ("down", Some("the manifest cannot be read"))
        }
        Err(_) => ("down", Some("the store did not answer within 2 s")),
    };
    // A fault in the last five minutes makes the service degraded; no storage means down.
    let recent_fault = state
        .last_fault
        .lock()
        .ok()
        .and_then(|f| f.clone())
        .filter(|(at, _)| at.elapsed() < std::time::Duration::from_secs(300));
    let status = match (storage_status, &recent_fault) {
        ("ok", None) => "ok",
        ("ok", Some(_)) => "degraded",
        _ => "down",
    };
    let mut storage =
        json!({"status": storage_status, "latencyMs": started.elapsed().as_secs_f64() * 1000.0});
    if let Some(d) = storage_detail {
        storage["detail"] = json!(d);
    }
    let catalog = &state.dataset.catalog;
    let body = json!({
        "status": status,
        "version": state.config.version,
        "uptimeSeconds": state.started.elapsed().as_secs(),
        "checks": {
            "catalog": {"status": "ok", "stations": catalog.stations().len(), "datasetVersion": state.dataset.manifest.version},
            "storage": storage,
        }
    });
    let mut body = body;
    if let Some((at, _)) = recent_fault {
        body["checks"]["data"] = json!({
            "status": "degraded",
            "detail": "a data file could not be read (see the log)",
            "secondsAgo": at.elapsed().as_secs(),
        });
    }
    let mut reply = json_reply(body);
    reply.cacheable = false;
    if status == "down" {
        reply.status = http::StatusCode::SERVICE_UNAVAILABLE;
    }
    Ok(reply)
}

pub fn metrics(state: &AppState) -> String {
    let m = &state.metrics;
    let available = state.heavy.available_permits();
    let stored = state.answers.size();
    format!(
        "# HELP hydro_requests_total HTTP requests by status class.\n# TYPE hydro_requests_total counter\n\
hydro_requests_total{{class=\"2xx\"}} {}\nhydro_requests_total{{class=\"3xx\"}} {}\nhydro_requests_total{{class=\"4xx\"}} {}\nhydro_requests_total{{class=\"5xx\"}} {}\n\
# HELP hydro_value_rows_streamed_total Value rows encoded into answers (not those sent again from the answer store).\n# TYPE hydro_value_rows_streamed_total counter\nhydro_value_rows_streamed_total {}\n\
# HELP hydro_heavy_query_permits_available Free slots for heavy queries (value downloads, long or sorted station lists).\n# TYPE hydro_heavy_query_permits_available gauge\nhydro_heavy_query_permits_available {}\n\
# HELP hydro_answer_store_hits_total Value answers sent again from the answer store.\n# TYPE hydro_answer_store_hits_total counter\nhydro_answer_store_hits_total {}\n\
# HELP hydro_answer_store_answers Value answers in the answer store.\n# TYPE hydro_answer_store_answers gauge\nhydro_answer_store_answers {}\n\
# HELP hydro_answer_store_bytes Bytes in the answer store.\n# TYPE hydro_answer_store_bytes gauge\nhydro_answer_store_bytes {}\n\
# HELP hydro_answer_store_copies_given_up_total Copies of streamed answers not kept: larger than the store allows, or its writer too far behind.\n# TYPE hydro_answer_store_copies_given_up_total counter\nhydro_answer_store_copies_given_up_total {}\n\
# HELP hydro_value_cache_bytes Bytes of value files kept in memory once read.\n# TYPE hydro_value_cache_bytes gauge\nhydro_value_cache_bytes {}\n\
# HELP hydro_uptime_seconds Seconds since start.\n# TYPE hydro_uptime_seconds gauge\nhydro_uptime_seconds {}\n",
        m.status_2xx.load(Ordering::Relaxed),
        m.status_3xx.load(Ordering::Relaxed),
        m.status_4xx.load(Ordering::Relaxed),
        m.status_5xx.load(Ordering::Relaxed),
        m.rows_streamed.load(Ordering::Relaxed),
        available,
        state.answers.hits.load(Ordering::Relaxed),
        stored.0,
        stored.1,
        state.answers.given_up.load(Ordering::Relaxed),
        state.dataset.cached_value_bytes(),
        state.started.elapsed().as_secs(),
    )
}

/// Includes of stations: `parameters`, `characteristics`.
fn includes(ctx: &Ctx<'_>) -> Result<(bool, bool), ApiError> {
    let Some(v) = ctx.query.get("include")? else {
        return Ok((false, false));
    };
    let mut out = (false, false);
    for item in params::list("include", v)? {
        match item {
            "parameters" => out.0 = true,
            "characteristics" => out.1 = true,
            other => {
                return Err(ApiError::param(
                    "include",
                    format!(
                        "cannot include '{}'; use parameters, characteristics",
                        shorten(other)
                    ),
                ));
            }
        }
    }
    Ok(out)
}

fn csv_station_columns(fields: &Option<Vec<String>>, near: bool) -> Option<Vec<String>> {
    if fields.is_some() {
        return None;
    }
    let mut cols: Vec<String> = STATION_CSV.iter().map(|s| s.to_string()).collect();
    if near {
        cols.push("distance".into());
    }
    Some(cols)
}

fn stations(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    ctx.allow(
        &["states", "waterBodyIds"],
        &[
            "types", "bbox", "near", "include", "limit", "offset", "sort", "fields", "format",
        ],
    )?;
    let q = ctx.query;
    let filter = StationFilter {
        states: q.get("states")?.map(params::states).transpose()?,
        water_body_ids: q
            .get("waterBodyIds")?
            .map(|v| {
                params::list("waterBodyIds", v).map(|l| l.into_iter().map(str::to_owned).collect())
            })
            .transpose()?,
        types: q
            .get("types")?
            .map(|v| {
                params::list("types", v)?
                    .into_iter()
                    .map(|t| {
                        t.parse::<StationType>()
                            .map_err(|e| ApiError::param("types", format!("'{}': {e}", shorten(t))))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?,
        bbox: q.get("bbox")?.map(params::bbox).transpose()?,
        near: q.get("near")?.map(params::near).transpose()?,
    };
    let include = includes(ctx)?;
    let sort = ctx.sort(STATION_SORT, canon_station_path)?;
    let fields = ctx.fields(STATION_FIELDS, canon_station_path)?;
    let (limit, offset, paging) = ctx.paging()?;
    let format = ctx.format(STATION_FORMATS)?;

    // The page's positions in the list. Unsorted, only the page's matches are collected;
    // sorted, every match is, and only the page's are ordered.
    let first = usize::try_from(offset).unwrap_or(usize::MAX);
    let page_range = first..limit.map_or(usize::MAX, |l| {
        first.saturating_add(usize::try_from(l).unwrap_or(usize::MAX))
    });
    let (find_keep, order_keep) = if sort.is_empty() {
        (page_range, 0..usize::MAX)
    } else {
        (0..usize::MAX, page_range)
    };
    let (total, hits) = ctx.state.dataset.catalog.find_stations(&filter, find_keep);
    let page = Page::new(total as u64, limit, offset);
    // Streaming a long list, or sorting one, costs as much as a value download.
    let heavy = total > station_list::PER_FRAME
        && (!sort.is_empty() || page.count > station_list::PER_FRAME as u64);
    let permit = heavy.then(|| ctx.heavy_permit()).transpose()?;
    let chosen = station_list::order(&hits, &sort, order_keep);
    let items = station_list::Items {
        state: Arc::clone(ctx.state),
        include,
        fields,
    };
    let page = paging.then_some(page);
    let links = ctx.links(
        vec![
            ("self", ctx.paging_url().this()),
            ("station", ctx.url("/stations/{stationId}")),
        ],
        page.as_ref(),
    );
    let columns = match csv_station_columns(&items.fields, filter.near.is_some()) {
        Some(c) => c,
        // Named fields: the columns the page's items have, known before its first row.
        None if format == Format::Csv => csv_columns(chosen.iter().map(|&c| items.item(c))),
        None => Vec::new(),
    };
    let meta = meta(ctx.state, "stations", page.as_ref());
    let list = ListEncoder::new(format, &meta, links.as_ref(), "station", columns);
    let mut headers = ctx.paging_headers(page.as_ref());
    attachment(&mut headers, format, "stations");
    if chosen.len() <= station_list::PER_FRAME {
        let bytes = station_list::built(&list, &items, &chosen);
        return Ok(built(bytes, format, headers));
    }
    Ok(Reply {
        status: http::StatusCode::OK,
        body: station_list::streamed(list, items, chosen, permit),
        len: None,
        content_type: format.content_type(),
        headers,
        cacheable: true,
        compressible: true,
        keep: false,
    })
}

fn station(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    ctx.query.only(&["include", "fields", "format"], false)?;
    let s = ctx.station(id)?;
    let include = includes(ctx)?;
    let fields = ctx.fields(STATION_FIELDS, canon_station_path)?;
    let format = ctx.format(STATION_FORMATS)?;
    let mut item = station_list::station_item(ctx.state, s, None, include);
    if let Some(f) = &fields {
        item = project(&item, f);
    }
    let base = format!("/stations/{}", s.id);
    let links = ctx.links(
        vec![
            ("self", ctx.paging_url().this()),
            ("parameters", ctx.url(&format!("{base}/parameters"))),
            (
                "characteristics",
                ctx.url(&format!("{base}/characteristics")),
            ),
            (
                "values",
                ctx.url(&format!("{base}/parameters/{{parameterId}}/values")),
            ),
        ],
        None,
    );
    let doc = Document {
        meta: meta(ctx.state, "station", None),
        links,
        data: Data::One(&item),
        item_name: "station",
        csv_columns: csv_station_columns(&fields, false),
    };
    let mut headers = HeaderMap::new();
    attachment(&mut headers, format, &format!("station-{}", s.id));
    Ok(built(encode(&doc, format), format, headers))
}

/// Sorting, paging and projecting a small list of catalog items, then encoding it.
#[allow(clippy::too_many_arguments)]
fn catalog_list(
    ctx: &Ctx<'_>,
    mut items: Vec<Value>,
    sort: &[SortSpec],
    fields: Option<Vec<String>>,
    format: Format,
    schema: &str,
    item_name: &str,
    links: Vec<(&str, String)>,
    stem: &str,
) -> Result<Reply, ApiError> {
    let (limit, offset, paging) = ctx.paging()?;
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
        meta: meta(ctx.state, schema, page.as_ref()),
        links: ctx.links(links, page.as_ref()),
        data: Data::List(&items),
        item_name,
        csv_columns: None,
    };
    let mut headers = ctx.paging_headers(page.as_ref());
    attachment(&mut headers, format, stem);
    Ok(built(encode(&doc, format), format, headers))
}

fn no_alias(p: &str) -> String {
    p.to_owned()
}

fn parameters(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    ctx.allow(&[], LIST_PARAMS)?;
    let s = ctx.station(id)?;
    let sort = ctx.sort(PARAMETER_SORT, no_alias)?;
    let fields = ctx.fields(PARAMETER_FIELDS, no_alias)?;
    ctx.paging()?;
    let format = ctx.format(CATALOG_FORMATS)?;
    let mut tf = ctx.time();
    let items = ctx
        .state
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
        format,
        "parameters",
        "parameter",
        links,
        &format!("parameters-{}", s.id),
    )
}

fn parameter(ctx: &Ctx<'_>, id: &str, pid: &str) -> Result<Reply, ApiError> {
    ctx.query.only(&["fields", "format"], false)?;
    let s = ctx.station(id)?;
    let pid = ctx.parameter_id(s, pid)?;
    let fields = ctx.fields(PARAMETER_FIELDS, no_alias)?;
    let format = ctx.format(CATALOG_FORMATS)?;
    let p = ctx
        .state
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
        meta: meta(ctx.state, "parameter", None),
        links,
        data: Data::One(&item),
        item_name: "parameter",
        csv_columns: None,
    };
    let mut headers = HeaderMap::new();
    attachment(&mut headers, format, &format!("{}-{pid}", s.id));
    Ok(built(encode(&doc, format), format, headers))
}

fn characteristics(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    ctx.query.only(
        &[
            "types",
            "parameterIds",
            "limit",
            "offset",
            "sort",
            "fields",
            "format",
        ],
        false,
    )?;
    let s = ctx.station(id)?;
    let types = ctx
        .query
        .get("types")?
        .map(|v| {
            params::list("types", v)?
                .into_iter()
                .map(|t| {
                    t.parse::<CharacteristicType>()
                        .map_err(|e| ApiError::param("types", format!("'{}': {e}", shorten(t))))
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    let parameter_ids = ctx
        .query
        .get("parameterIds")?
        .map(|v| {
            params::list("parameterIds", v)?
                .into_iter()
                .map(|p| {
                    p.parse::<ParameterId>()
                        .map_err(|e| ApiError::param("parameterIds", e.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    let sort = ctx.sort(CHARACTERISTIC_SORT, no_alias)?;
    let fields = ctx.fields(CHARACTERISTIC_FIELDS, no_alias)?;
    ctx.paging()?;
    let format = ctx.format(CATALOG_FORMATS)?;
    let mut tf = ctx.time();
    let items = ctx
        .state
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
        format,
        "characteristics",
        "characteristic",
        links,
        &format!("characteristics-{}", s.id),
    )
}

fn characteristic(ctx: &Ctx<'_>, id: &str, cid: &str) -> Result<Reply, ApiError> {
    ctx.query.only(&["fields", "format"], false)?;
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
        .state
        .dataset
        .catalog
        .characteristic(&s.id, &cid)
        .ok_or_else(not_found)?;
    let fields = ctx.fields(CHARACTERISTIC_FIELDS, no_alias)?;
    let format = ctx.format(CATALOG_FORMATS)?;
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
        meta: meta(ctx.state, "characteristic", None),
        links,
        data: Data::One(&item),
        item_name: "characteristic",
        csv_columns: None,
    };
    Ok(built(encode(&doc, format), format, HeaderMap::new()))
}

/// The time window of a values request: `from`/`to`, `recent` or `last`, exclusively.
fn window(ctx: &Ctx<'_>) -> Result<Window, ApiError> {
    let q = ctx.query;
    let from = q
        .get("from")?
        .map(|v| params::timestamp("from", v))
        .transpose()?;
    let to = q
        .get("to")?
        .map(|v| params::timestamp("to", v))
        .transpose()?;
    let recent = q
        .get("recent")?
        .map(|v| params::uint("recent", v))
        .transpose()?;
    let last = q
        .get("last")?
        .map(|v| params::duration("last", v))
        .transpose()?;
    let given: Vec<&str> = [
        ("from/to", from.is_some() || to.is_some()),
        ("recent", recent.is_some()),
        ("last", last.is_some()),
    ]
    .into_iter()
    .filter_map(|(n, g)| g.then_some(n))
    .collect();
    if given.len() > 1 {
        return Err(ApiError::param(
            given[1],
            format!("cannot be combined with {}", given[0]),
        ));
    }
    if let (Some(f), Some(t)) = (from, to)
        && f > t
    {
        return Err(ApiError::param("from", "is after 'to'"));
    }
    Ok(match (recent, last) {
        (Some(n), _) => Window::Recent(n),
        (_, Some(d)) => Window::Last(d),
        _ => Window::Between { from, to },
    })
}

/// Arrow IPC sends each batch's columns as they are, on the answer's own task, so decoding is
/// the work and months are read in groups; text encoders hand batches to tasks of their own,
/// which interleave with decoding best a month at a time (see [`ReadAhead`]).
fn read_ahead(format: Format) -> ReadAhead {
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

async fn values(ctx: &Ctx<'_>, id: &str, pid: &str) -> Result<Reply, ApiError> {
    ctx.allow(
        &["from", "to"],
        &[
            "recent", "last", "limit", "offset", "sort", "fields", "format",
        ],
    )?;
    let s = ctx.station(id)?;
    let pid = ctx.parameter_id(s, pid)?;
    let window = window(ctx)?;
    let sort = ctx.sort(VALUE_FIELDS, no_alias)?;
    let fields = ctx.fields(VALUE_FIELDS, no_alias)?;
    let (limit, offset, paging) = ctx.paging()?;
    let format = ctx.format(VALUE_FORMATS)?;
    // The resource's own field order, as `fields` keeps it for every other resource.
    let columns: Vec<ValueColumn> = ValueColumn::ALL
        .into_iter()
        .filter(|c| {
            fields
                .as_ref()
                .is_none_or(|f| f.iter().any(|n| n == c.name()))
        })
        .collect();
    let query = ValuesQuery {
        station: s.id.clone(),
        parameter: pid.clone(),
        window,
        sort: sort
            .iter()
            .filter_map(|k| {
                Some(SortKey {
                    column: ValueColumn::from_name(&k.path)?,
                    descending: k.descending,
                })
            })
            .collect(),
        offset,
        limit,
        columns: columns.clone(),
        need_total: paging,
    };
    let permit = ctx.heavy_permit()?;
    let dataset = &ctx.state.dataset;
    let (total, schema, pieces) = if format == Format::Parquet {
        // Parquet answers copy stored row groups as they are (see hydro_engine::stored).
        let plan = dataset
            .plan_pieces(&query)
            .await
            .map_err(|e| fault(ctx.state, e))?;
        (plan.total, plan.schema, plan.pieces)
    } else {
        let plan = dataset
            .plan_values(&query, read_ahead(format))
            .await
            .map_err(|e| fault(ctx.state, e))?;
        let pieces = plan
            .stream
            .map(|b| b.map(Piece::Rows).map_err(EngineError::from))
            .boxed();
        (plan.total, plan.schema, pieces)
    };
    let pieces = download::first_checked(pieces)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let page = match (paging, total) {
        (true, Some(total)) => Some(Page::new(total, limit, offset)),
        _ => None,
    };
    let names: Vec<String> = columns.iter().map(|c| c.name().to_owned()).collect();
    let held = download::Held {
        state: Arc::clone(ctx.state),
        permit,
    };
    let text = |head: Vec<u8>, tail: &[u8]| {
        ValuesText::new(format, names.clone(), head, tail.to_vec(), ctx.time())
    };
    let body = match format {
        Format::Arrow => {
            download::sequential(pieces, Box::new(binary::ArrowIpc::new(schema)), held)
        }
        Format::Parquet => {
            download::sequential(pieces, Box::new(binary::Parquet::new(schema)), held)
        }
        Format::Xml => {
            let meta = meta(ctx.state, "values", page.as_ref());
            let links = values_links(ctx, &s.id, page.as_ref());
            let head = xml_head(&meta, links.as_ref());
            download::text(pieces, text(head, b"</data></response>"), held)
        }
        Format::Json => {
            let mut head = b"{\"meta\":".to_vec();
            head.extend_from_slice(meta_json(ctx.state, "values", page.as_ref()).as_bytes());
            if let Some(l) = values_links(ctx, &s.id, page.as_ref()) {
                head.extend_from_slice(b",\"links\":");
                head.extend_from_slice(l.to_string().as_bytes());
            }
            head.extend_from_slice(b",\"data\":[");
            download::text(pieces, text(head, b"]}"), held)
        }
        _ => download::text(pieces, text(Vec::new(), b""), held),
    };
    let mut headers = ctx.paging_headers(page.as_ref());
    attachment(&mut headers, format, &format!("{}_{pid}", s.id));
    Ok(Reply {
        status: http::StatusCode::OK,
        body,
        len: None,
        content_type: format.content_type(),
        headers,
        cacheable: true,
        compressible: format != Format::Parquet,
        keep: true,
    })
}

/// A failed data read: logged and remembered for health, then mapped to a problem.
fn fault(state: &AppState, e: hydro_engine::EngineError) -> ApiError {
    match &e {
        hydro_engine::EngineError::NotFound(_) | hydro_engine::EngineError::InvalidQuery(_) => {}
        other => state.record_fault(&other.to_string()),
    }
    e.into()
}
