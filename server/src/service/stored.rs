//! The sixth stage: the answer store. A value answer made before is sent again from it, whole
//! or the parts a `Range` asks for (ranges are cut from the store: none when it is off or the
//! client asks for fresh bytes, and for GET alone, RFC 9110 14.2); after the endpoint, an
//! answer a range or a HEAD needs whole is kept first ([`keep_whole`]).

use super::conditional::{Validators, not_modified};
use super::finish::{caching_headers, coded, coding, content_headers, stored_head};
use super::request::Asked;
use crate::answer_store;
use crate::http::body::{Body, empty};
use crate::http::error::ApiError;
use crate::http::range;
use crate::render::reply::Reply;
use crate::state::AppState;
use crate::versions::Version;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_range_header::ParsedRanges;
use std::sync::Arc;

/// What the answer store had for a request.
pub(super) enum Lookup {
    /// The answer, sent from the store (or 304, or 416).
    Answered(Response<Body>),
    /// Not there: the endpoint makes it; the ranges asked for, if the store may cut them.
    Missed { ranges: Option<ParsedRanges> },
}

/// The request answered from the store, if it holds the answer and the client lets it.
pub(super) async fn lookup(
    state: &AppState,
    version: &Version,
    validators: &Validators,
    headers: &HeaderMap,
    asked: &Asked<'_>,
) -> Result<Lookup, ApiError> {
    let etag = validators.etag.as_deref();
    let reuse = validators.reuse;
    let ranges = etag
        .filter(|_| !asked.head && !asked.post && reuse && state.answer_store.enabled())
        .and_then(|tag| range::requested(headers, tag));
    let hit = match (etag, &ranges) {
        (Some(tag), None) if reuse => state.answer_store.get(tag),
        (Some(tag), Some(_)) => state.answer_store.get_settled(tag).await,
        _ => None,
    };
    let (Some(tag), Some(hit)) = (etag, hit) else {
        return Ok(Lookup::Missed { ranges });
    };
    if let Some(tag) = validators.unmodified(true) {
        return not_modified(state, version, tag, asked.post).map(Lookup::Answered);
    }
    Ok(Lookup::Answered(match &ranges {
        Some(r) => partial(state, version, hit, tag, r)?,
        None => stored(state, version, hit, tag, asked.head),
    }))
}

/// Whether a reply must be kept whole before it is sent: a range, or the length of a HEAD
/// where ranges are offered, needs the whole answer (clients that read Parquet by ranges ask
/// HEAD for the length).
pub(super) fn whole_first(
    state: &AppState,
    reply: &Reply,
    ranges: Option<&ParsedRanges>,
    head: bool,
) -> bool {
    (ranges.is_some() || (head && state.answer_store.enabled()))
        && reply.storable
        && reply.status == StatusCode::OK
}

/// The reply kept whole in the store, then sent from it as [`lookup`] would; `None` when it
/// is larger than the store or failed while made.
pub(super) async fn keep_whole(
    state: &AppState,
    version: &Version,
    tag: &str,
    reply: Reply,
    headers: &HeaderMap,
    ranges: Option<&ParsedRanges>,
    head: bool,
) -> Result<Option<Response<Body>>, ApiError> {
    let coding = coding(&reply, headers);
    let kept = stored_head(&reply.content_type, &reply.headers, coding);
    let Some(hit) = state
        .answer_store
        .make(tag, kept, coded(reply.body, coding))
        .await
    else {
        return Ok(None);
    };
    Ok(Some(match ranges {
        Some(r) => partial(state, version, hit, tag, r)?,
        None => stored(state, version, hit, tag, head),
    }))
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
