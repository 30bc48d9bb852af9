//! A request's way through the server: size limits, rate limit, access, conditional
//! requests, the answer store, the endpoint, and what every response gets on the way out
//! (CORS, caching headers, content coding), and the request log's line once it has gone out.

use crate::answer_store;
use crate::api;
use crate::api::params::RawQuery;
use crate::api::query_parameters::json_form;
use crate::http::body::{Body, BoxError, empty, full};
use crate::http::compress;
use crate::http::conditional::{self, Condition};
use crate::http::cors;
use crate::http::error::ApiError;
use crate::http::range;
use crate::http::request_log::Arrived;
use crate::render::reply::Reply;
use crate::state::AppState;
use crate::versions::{AsOf, Version};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use http_range_header::ParsedRanges;
use percent_encoding::percent_decode_str;
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Longest request URI we read.
pub const MAX_URI: usize = 8 * 1024;
/// Most request header bytes we read (431 beyond).
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// The decoded path segments after `/v1`, or None for paths outside the API.
fn api_segments(path: &str) -> Option<Vec<String>> {
    let rest = path.strip_prefix("/v1")?;
    if !rest.is_empty() && !rest.starts_with('/') {
        return None;
    }
    rest.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_decode_str(s)
                .decode_utf8()
                .ok()
                .map(|c| c.into_owned())
        })
        .collect()
}

/// The methods a path takes: GET, HEAD and OPTIONS everywhere, and POST where a request may
/// carry its parameters in the body (`/v1/values` and `/v1/statistics`: selections too long
/// for a URL; `/v1/sql`: a statement).
fn methods(path: &str) -> &'static str {
    if takes_post(path) {
        "GET, HEAD, POST, OPTIONS"
    } else {
        "GET, HEAD, OPTIONS"
    }
}

fn takes_post(path: &str) -> bool {
    api_segments(path).is_some_and(|s| s == ["values"] || s == ["statistics"] || s == ["sql"])
}

pub async fn handle<B>(state: Arc<AppState>, peer: IpAddr, req: Request<B>) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    state.metrics.requests.fetch_add(1, Ordering::Relaxed);
    let (req, body) = req.into_parts();
    let path = req.uri.path().to_owned();
    let client = state.trusted.client(peer, &req.headers);
    let arrived = Arrived::note(&req.method, &req.uri, client);
    let mut response = match limit_rate(&state, client, &path) {
        Ok(headers) => {
            let mut r = respond(&state, &req, body)
                .await
                .unwrap_or_else(|e| e.into_response(&path));
            r.headers_mut().extend(headers);
            r
        }
        Err(r) => *r,
    };
    let allowed = state
        .gate
        .restricted()
        .then_some(state.config.cors_origins.as_slice());
    cors::add(
        allowed,
        methods(&path),
        &req.headers,
        response.headers_mut(),
    );
    let class = match response.status().as_u16() {
        200..=299 => &state.metrics.status_2xx,
        300..=399 => &state.metrics.status_3xx,
        400..=499 => &state.metrics.status_4xx,
        _ => &state.metrics.status_5xx,
    };
    class.fetch_add(1, Ordering::Relaxed);
    match arrived {
        Some(arrived) => arrived.answered(response),
        None => response,
    }
}

/// The rate limit: headers for the response, or the 429 itself (boxed: a response is large
/// next to the headers of the common case).
fn limit_rate(
    state: &AppState,
    client: IpAddr,
    path: &str,
) -> Result<HeaderMap, Box<Response<Body>>> {
    let mut h = HeaderMap::new();
    let Some(rate) = &state.rate else {
        return Ok(h);
    };
    let d = rate.check(client);
    h.insert("ratelimit-limit", HeaderValue::from(d.limit));
    h.insert("ratelimit-remaining", HeaderValue::from(d.remaining));
    h.insert("ratelimit-reset", HeaderValue::from(d.reset_secs));
    if d.allowed {
        return Ok(h);
    }
    let mut r = ApiError::TooManyRequests {
        retry_after: d.reset_secs,
    }
    .into_response(path);
    r.headers_mut().extend(h);
    Err(Box::new(r))
}

async fn respond<B>(
    state: &Arc<AppState>,
    req: &http::request::Parts,
    body: B,
) -> Result<Response<Body>, ApiError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let uri = &req.uri;
    if uri.path_and_query().map_or(0, |p| p.as_str().len()) > MAX_URI {
        return Err(ApiError::UriTooLong);
    }
    let header_bytes: usize = req
        .headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum();
    if header_bytes > MAX_HEADER_BYTES {
        return Err(ApiError::HeadersTooLarge);
    }
    let path = uri.path();
    let (head, post) = match req.method {
        Method::GET => (false, false),
        Method::HEAD => (true, false),
        Method::POST if takes_post(path) => (false, true),
        Method::OPTIONS => return Ok(preflight()),
        _ => {
            return Err(ApiError::MethodNotAllowed {
                allow: methods(path),
            });
        }
    };
    if path == "/" {
        return Ok(redirect("/v1/"));
    }
    // Health stays open to probes; the metrics take the API's credentials (Prometheus sends
    // a bearer token or Basic auth): request counts and versions are the operator's.
    if path != "/v1/health" {
        state.gate.check(&req.headers)?;
    }
    if path == "/metrics" {
        return Ok(plain(
            api::health::metrics(state),
            "text/plain; version=0.0.4; charset=utf-8",
        ));
    }
    let segments = api_segments(path).ok_or_else(|| {
        ApiError::NotFound(format!(
            "no resource at {}",
            crate::api::params::shorten(path)
        ))
    })?;
    let mut query = if segments == ["sql"] {
        RawQuery::parse_form(uri.query())?
    } else {
        RawQuery::parse(uri.query())?
    };
    let headers = &req.headers;
    if post {
        // Read only now: after access was checked, and for the paths that take a body.
        let bytes = read_limited(headers, body).await?;
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let posted = if segments == ["sql"] {
            RawQuery::from_sql_body(content_type, &bytes, json_form)?
        } else {
            RawQuery::from_body(content_type, &bytes, json_form)?
        };
        query = query.with_body(posted)?;
    }
    // The version this request answers from, to its end (see `versions::Version`).
    let current = answered_version(state, &segments, &query).await?;
    let version: &Version = &current;
    let etag = etag(state, version, path, &query, headers);
    let condition = conditional::evaluate(headers, etag.as_deref(), version.modified);
    if let (Some(tag), Condition::TagMatches) = (&etag, condition) {
        return not_modified(state, version, tag, post);
    }
    let reuse = reuse_allowed(headers);
    // Ranges are cut from the store: none when it is off or the client asks for fresh bytes.
    // Ranges are for GET alone (RFC 9110 14.2).
    let ranges = etag
        .as_deref()
        .filter(|_| !head && !post && reuse && state.answer_store.enabled())
        .and_then(|tag| range::requested(headers, tag));
    let hit = match (&etag, &ranges) {
        (Some(tag), None) if reuse => state.answer_store.get(tag),
        (Some(tag), Some(_)) => state.answer_store.get_settled(tag).await,
        _ => None,
    };
    if let (Some(tag), Some(hit)) = (&etag, hit) {
        if condition == Condition::NotModifiedIfFound {
            return not_modified(state, version, tag, post);
        }
        return match &ranges {
            Some(r) => partial(state, version, hit, tag, r),
            None => Ok(stored(state, version, hit, tag, head)),
        };
    }
    let ctx = api::Ctx {
        state,
        version: &current,
        query: &query,
        headers,
        path,
        posted: post,
    };
    let reply = api::route(&ctx, &segments).await?;
    let found = reply.status == StatusCode::OK && reply.cacheable;
    if let (Some(tag), true, Condition::NotModifiedIfFound) = (&etag, found, condition) {
        return not_modified(state, version, tag, post);
    }
    // A range, or the length of a HEAD where ranges are offered, needs the whole answer: it is
    // made and stored first (clients that read Parquet by ranges ask HEAD for the length).
    let whole_first = ranges.is_some() || (head && state.answer_store.enabled());
    if let (true, Some(tag)) = (whole_first, &etag)
        && reply.storable
        && reply.status == StatusCode::OK
    {
        let coding = coding(&reply, headers);
        let kept = stored_head(&reply.content_type, &reply.headers, coding);
        if let Some(hit) = state
            .answer_store
            .make(tag, kept, coded(reply.body, coding))
            .await
        {
            return match &ranges {
                Some(r) => partial(state, version, hit, tag, r),
                None => Ok(stored(state, version, hit, tag, head)),
            };
        }
        // Larger than the store, or failed while made: the whole answer, made again, and no
        // ranges offered for it.
        let reply = api::route(&ctx, &segments).await?;
        let mut r = finish(state, version, reply, headers, etag.as_deref(), head, false);
        r.headers_mut().remove(header::ACCEPT_RANGES);
        return Ok(r);
    }
    let may_store = reuse && !head;
    Ok(finish(
        state,
        version,
        reply,
        headers,
        etag.as_deref(),
        head,
        may_store,
    ))
}

/// The version a request answers from: the one served now, or the one `asOf` names on the
/// paths that take it (every data path and the landing page, in the extended variant; on the
/// others the endpoint refuses it as any parameter it does not take).
async fn answered_version(
    state: &Arc<AppState>,
    segments: &[String],
    query: &RawQuery,
) -> Result<Arc<Version>, ApiError> {
    let current = state.version();
    let versioned = !state.basic()
        && !matches!(
            segments.first().map(String::as_str),
            Some("versions" | "health" | "openapi.json" | "schemas" | "assets")
        );
    let Some(asked) = query.get("asOf")?.filter(|_| versioned) else {
        return Ok(current);
    };
    let as_of = AsOf::parse(asked)?;
    let version = state.versions.resolve(&current, &as_of).await?;
    Ok(if as_of.pins(&current.dataset.manifest) {
        version.pinned()
    } else {
        version
    })
}

/// `304 Not Modified` with the headers the full answer would have had for caches; for a POST,
/// whose answer a cache does not keep, `412 Precondition Failed` (RFC 9110 13.1.2).
fn not_modified(
    state: &AppState,
    version: &Version,
    etag: &str,
    post: bool,
) -> Result<Response<Body>, ApiError> {
    if post {
        return Err(ApiError::PreconditionFailed);
    }
    let mut r = Response::new(empty());
    *r.status_mut() = StatusCode::NOT_MODIFIED;
    caching_headers(state, version, r.headers_mut(), etag);
    Ok(r)
}

/// Whether the client lets us answer from the answer store: `Cache-Control: no-cache` or
/// `no-store` asks for an answer made afresh (and not kept).
fn reuse_allowed(headers: &HeaderMap) -> bool {
    !headers
        .get_all(header::CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|d| {
            let d = d.trim();
            d.eq_ignore_ascii_case("no-cache") || d.eq_ignore_ascii_case("no-store")
        })
}

/// A stored answer as a response: the headers it had, its length known.
fn stored(
    state: &AppState,
    version: &Version,
    hit: answer_store::Hit,
    etag: &str,
    head: bool,
) -> Response<Body> {
    let (kept, len) = (Arc::clone(&hit.head), hit.len);
    let mut r = Response::new(if head { empty() } else { hit.body() });
    answer_headers(state, version, r.headers_mut(), &kept, etag, len);
    r
}

/// The part of a whole answer that the request's ranges select: 206 with that part, the
/// whole answer when they select several parts, or 416 when they start beyond its end.
fn partial(
    state: &AppState,
    version: &Version,
    hit: answer_store::Hit,
    etag: &str,
    ranges: &ParsedRanges,
) -> Result<Response<Body>, ApiError> {
    let part = match range::select(ranges, hit.len) {
        range::Part::Bytes(part) => part,
        range::Part::Whole => return Ok(stored(state, version, hit, etag, false)),
        range::Part::Unsatisfiable => return Err(ApiError::RangeNotSatisfiable { len: hit.len }),
    };
    let (kept, len) = (Arc::clone(&hit.head), hit.len);
    let mut r = Response::new(hit.part(part.clone()));
    *r.status_mut() = StatusCode::PARTIAL_CONTENT;
    let h = r.headers_mut();
    answer_headers(state, version, h, &kept, etag, part.end - part.start);
    if let Ok(v) = HeaderValue::from_str(&range::content_range(&part, len)) {
        h.insert(header::CONTENT_RANGE, v);
    }
    Ok(r)
}

/// The headers of a whole answer sent again, or of a part of it (`len` bytes).
fn answer_headers(
    state: &AppState,
    version: &Version,
    h: &mut HeaderMap,
    kept: &answer_store::Head,
    etag: &str,
    len: u64,
) {
    h.extend(kept.headers.clone());
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    content_headers(h, &kept.content_type, kept.coding);
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    caching_headers(state, version, h, etag);
}

/// The content coding of a reply: the client's choice, for bodies that compress and are
/// long enough to gain from it.
fn coding(reply: &Reply, req_headers: &HeaderMap) -> Option<compress::Coding> {
    compress::choose(
        req_headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok()),
    )
    .filter(|_| reply.compressible && reply.len.is_none_or(|n| n >= compress::MIN_SIZE))
}

fn coded(body: Body, coding: Option<compress::Coding>) -> Body {
    match coding {
        Some(c) => compress::compress(body, c),
        None => body,
    }
}

/// What a stored copy of a reply keeps besides its bytes.
fn stored_head(
    content_type: &str,
    headers: &HeaderMap,
    coding: Option<compress::Coding>,
) -> answer_store::Head {
    answer_store::Head {
        content_type: content_type.to_owned(),
        coding,
        headers: headers.clone(),
    }
}

fn content_headers(h: &mut HeaderMap, content_type: &str, coding: Option<compress::Coding>) {
    if let Ok(v) = HeaderValue::from_str(content_type) {
        h.insert(header::CONTENT_TYPE, v);
    }
    if let Some(c) = coding {
        h.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(c.token()),
        );
    }
}

/// Strong ETag: dataset version + settings that shape the bytes + path + query + the
/// negotiation headers. Computed before the handler runs, so a matching `If-None-Match` costs
/// no query at all.
fn etag(
    state: &AppState,
    version: &Version,
    path: &str,
    query: &RawQuery,
    headers: &HeaderMap,
) -> Option<String> {
    // Health changes by the second; a SQL statement may ask for `now()` or `random()`.
    if path.ends_with("/health") || path == "/v1/sql" {
        return None;
    }
    let mut pairs = query.pairs.clone();
    pairs.sort();
    let mut h = Sha256::new();
    for part in [
        version.dataset.manifest.version.as_str(),
        state.representation.as_str(),
        path,
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    for (k, v) in &pairs {
        h.update(k.as_bytes());
        h.update([1]);
        h.update(v.as_bytes());
        h.update([0]);
    }
    for name in [header::ACCEPT, header::ACCEPT_ENCODING] {
        h.update(headers.get(&name).map_or(&b""[..], |v| v.as_bytes()));
        h.update([0]);
    }
    Some(format!("\"{}\"", hex::encode(&h.finalize()[..16])))
}

/// A year: how long answers of a version named by `asOf` may be kept (they never change).
const PINNED_MAX_AGE: &str = "max-age=31536000, immutable";

fn caching_headers(state: &AppState, version: &Version, h: &mut HeaderMap, etag: &str) {
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    let pinned;
    let cache_control = match (state.gate.restricted(), version.pinned) {
        (true, false) => "private, max-age=60",
        (false, false) => state.config.cache_control.as_str(),
        (restricted, true) => {
            let scope = if restricted { "private" } else { "public" };
            pinned = format!("{scope}, {PINNED_MAX_AGE}");
            pinned.as_str()
        }
    };
    // Every answer names the version it was read from.
    if let Some(v) = version.link(&state.base_url) {
        h.append(header::LINK, v);
    }
    if let Ok(v) = HeaderValue::from_str(cache_control) {
        h.insert(header::CACHE_CONTROL, v);
    }
    if let Ok(v) = HeaderValue::from_str(&version.last_modified) {
        h.insert(header::LAST_MODIFIED, v);
    }
    h.insert(
        header::VARY,
        HeaderValue::from_static("Accept, Accept-Encoding"),
    );
}

/// The handler's reply as a response: coded, with caching headers, and (for a value answer
/// with a tag, when `may_store`) kept in the answer store as it streams.
fn finish(
    state: &AppState,
    version: &Version,
    reply: Reply,
    req_headers: &HeaderMap,
    etag: Option<&str>,
    head: bool,
    may_store: bool,
) -> Response<Body> {
    let coding = coding(&reply, req_headers);
    let value_answer = reply.storable && reply.status == StatusCode::OK;
    let body = match etag {
        Some(tag) if may_store && value_answer => {
            let kept = || stored_head(&reply.content_type, &reply.headers, coding);
            state
                .answer_store
                .store(tag, kept, coded(reply.body, coding))
        }
        _ => coded(reply.body, coding),
    };
    let mut r = Response::new(if head { empty() } else { body });
    *r.status_mut() = reply.status;
    let h = r.headers_mut();
    h.extend(reply.headers);
    content_headers(h, &reply.content_type, coding);
    if value_answer && state.answer_store.enabled() && etag.is_some() {
        h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    }
    match etag {
        Some(tag) if reply.cacheable => caching_headers(state, version, h, tag),
        _ => {
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            h.insert(
                header::VARY,
                HeaderValue::from_static("Accept, Accept-Encoding"),
            );
        }
    }
    r
}

fn plain(text: String, content_type: &'static str) -> Response<Body> {
    let mut r = Response::new(full(text));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// `308 Permanent Redirect` to `location` (the service lives under `/v1/`).
fn redirect(location: &'static str) -> Response<Body> {
    let mut r = Response::new(empty());
    *r.status_mut() = StatusCode::PERMANENT_REDIRECT;
    r.headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static(location));
    r
}

fn preflight() -> Response<Body> {
    let mut r = Response::new(empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r
}

/// The largest request body read (`POST /v1/values` or `/v1/statistics`, a selection too long
/// for a URL).
const MAX_REQUEST_BODY: usize = 1 << 20;

/// How much of a body beyond [`MAX_REQUEST_BODY`] is read and dropped before the 413 goes
/// out: a balancer that sends a body whole before it reads the answer (nginx, up to its
/// `client_max_body_size`) sees its connection closed under it otherwise, and answers 502
/// instead of passing the 413 on. Larger bodies are not read.
const MAX_DRAINED: u64 = 4 << 20;

/// A request body read whole, refused (413) beyond [`MAX_REQUEST_BODY`] bytes.
async fn read_limited<B>(headers: &HeaderMap, body: B) -> Result<Bytes, ApiError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let too_large = ApiError::PayloadTooLarge {
        limit: MAX_REQUEST_BODY,
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_DRAINED) {
        return Err(too_large);
    }
    let mut body = std::pin::pin!(body);
    let mut read = Vec::new();
    let mut seen = 0u64;
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|_| ApiError::BadRequest("the request body could not be read".into()))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen += data.len() as u64;
        if seen > MAX_DRAINED {
            break;
        }
        if seen <= MAX_REQUEST_BODY as u64 {
            read.extend_from_slice(&data);
        }
    }
    if seen > MAX_REQUEST_BODY as u64 {
        return Err(too_large);
    }
    Ok(Bytes::from(read))
}
