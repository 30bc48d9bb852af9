//! A request's way through the server: size limits, rate limit, access, conditional
//! requests, the response store, the endpoint, and what every response gets on the way out
//! (CORS, caching headers, content coding).

use crate::api::params::RawQuery;
use crate::api::{self, Reply};
use crate::cache;
use crate::http::body::{Body, empty, full};
use crate::http::compress;
use crate::http::conditional::{self, Condition};
use crate::http::cors;
use crate::http::error::ApiError;
use crate::http::range;
use crate::state::{AppState, Version};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
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

pub async fn handle<B>(state: Arc<AppState>, peer: IpAddr, req: Request<B>) -> Response<Body> {
    state.metrics.requests.fetch_add(1, Ordering::Relaxed);
    let path = req.uri().path().to_owned();
    let client = state.trusted.client(peer, req.headers());
    let mut response = match limit_rate(&state, client, &path) {
        Ok(headers) => {
            let mut r = respond(&state, &req)
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
    cors::add(allowed, req.headers(), response.headers_mut());
    let class = match response.status().as_u16() {
        200..=299 => &state.metrics.status_2xx,
        300..=399 => &state.metrics.status_3xx,
        400..=499 => &state.metrics.status_4xx,
        _ => &state.metrics.status_5xx,
    };
    class.fetch_add(1, Ordering::Relaxed);
    response
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

async fn respond<B>(state: &Arc<AppState>, req: &Request<B>) -> Result<Response<Body>, ApiError> {
    let uri = req.uri();
    if uri.path_and_query().map_or(0, |p| p.as_str().len()) > MAX_URI {
        return Err(ApiError::UriTooLong);
    }
    let header_bytes: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum();
    if header_bytes > MAX_HEADER_BYTES {
        return Err(ApiError::HeadersTooLarge);
    }
    let path = uri.path();
    let head = match *req.method() {
        Method::GET => false,
        Method::HEAD => true,
        Method::OPTIONS => return Ok(preflight()),
        _ => return Err(ApiError::MethodNotAllowed),
    };
    if path == "/" {
        return Ok(redirect("/v1/"));
    }
    if path == "/metrics" {
        return Ok(plain(
            api::health::metrics(state),
            "text/plain; version=0.0.4; charset=utf-8",
        ));
    }
    if path != "/v1/health" {
        state.gate.check(req.headers())?;
    }
    let segments = api_segments(path).ok_or_else(|| {
        ApiError::NotFound(format!(
            "no resource at {}",
            crate::api::params::shorten(path)
        ))
    })?;
    let query = RawQuery::parse(uri.query())?;
    let headers = req.headers();
    // The version this request answers from, to its end (see `state::Version`).
    let current = state.version();
    let version: &Version = &current;
    let etag = etag(state, version, path, &query, headers);
    let condition = conditional::evaluate(headers, etag.as_deref(), version.modified);
    if let (Some(tag), Condition::TagMatches) = (&etag, condition) {
        return Ok(not_modified(state, version, tag));
    }
    let reuse = reuse_allowed(headers);
    // Ranges are cut from the store: none when it is off or the client asks for fresh bytes.
    let ranges = etag
        .as_deref()
        .filter(|_| !head && reuse && state.responses.enabled())
        .and_then(|tag| range::requested(headers, tag));
    let hit = match (&etag, &ranges) {
        (Some(tag), None) if reuse => state.responses.get(tag),
        (Some(tag), Some(_)) => state.responses.get_settled(tag).await,
        _ => None,
    };
    if let (Some(tag), Some(hit)) = (&etag, hit) {
        if condition == Condition::NotModifiedIfFound {
            return Ok(not_modified(state, version, tag));
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
    };
    let reply = api::route(&ctx, &segments).await?;
    let found = reply.status == StatusCode::OK && reply.cacheable;
    if let (Some(tag), true, Condition::NotModifiedIfFound) = (&etag, found, condition) {
        return Ok(not_modified(state, version, tag));
    }
    // A range, or the length of a HEAD where ranges are offered, needs the whole answer: it is
    // made and stored first (clients that read Parquet by ranges ask HEAD for the length).
    let whole_first = ranges.is_some() || (head && state.responses.enabled());
    if let (true, Some(tag)) = (whole_first, &etag)
        && reply.keep
        && reply.status == StatusCode::OK
    {
        let coding = coding(&reply, headers);
        let kept = kept_head(&reply.content_type, &reply.headers, coding);
        if let Some(hit) = state
            .responses
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

/// `304 Not Modified` with the headers the full answer would have had for caches.
fn not_modified(state: &AppState, version: &Version, etag: &str) -> Response<Body> {
    let mut r = Response::new(empty());
    *r.status_mut() = StatusCode::NOT_MODIFIED;
    caching_headers(state, version, r.headers_mut(), etag);
    r
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
    hit: cache::Hit,
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
    hit: cache::Hit,
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
    kept: &cache::Head,
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
fn kept_head(
    content_type: &str,
    headers: &HeaderMap,
    coding: Option<compress::Coding>,
) -> cache::Head {
    cache::Head {
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
    if path.ends_with("/health") {
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

fn caching_headers(state: &AppState, version: &Version, h: &mut HeaderMap, etag: &str) {
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    let cache_control = if state.gate.restricted() {
        "private, max-age=60"
    } else {
        state.config.cache_control.as_str()
    };
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
    let value_answer = reply.keep && reply.status == StatusCode::OK;
    let body = match etag {
        Some(tag) if may_store && value_answer => {
            let kept = || kept_head(&reply.content_type, &reply.headers, coding);
            state.responses.store(tag, kept, coded(reply.body, coding))
        }
        _ => coded(reply.body, coding),
    };
    let mut r = Response::new(if head { empty() } else { body });
    *r.status_mut() = reply.status;
    let h = r.headers_mut();
    h.extend(reply.headers);
    content_headers(h, &reply.content_type, coding);
    if value_answer && state.responses.enabled() && etag.is_some() {
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
