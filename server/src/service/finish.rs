//! The last stage: the endpoint's reply as a response. Its content coding (the client's
//! choice, for bodies that compress and are long enough to gain from it), the caching headers
//! every answer of a version gets (tag, `Cache-Control`, `Last-Modified`, `Vary` and the
//! version's `Link`), and a value answer kept in the answer store as it streams.

use crate::answer_store;
use crate::http::body::{Body, empty};
use crate::http::compress;
use crate::render::reply::Reply;
use crate::state::AppState;
use crate::versions::Version;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};

/// A year: how long answers of a version named by `asOf` may be kept (they never change).
const PINNED_MAX_AGE: &str = "max-age=31536000, immutable";

/// The handler's reply as a response: coded, with caching headers, and (for a value answer
/// with a tag, when `may_store`) kept in the answer store as it streams.
pub(super) fn finish(
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

/// The content coding of a reply: the client's choice, for bodies that compress and are
/// long enough to gain from it.
pub(super) fn coding(reply: &Reply, req_headers: &HeaderMap) -> Option<compress::Coding> {
    compress::choose(
        req_headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok()),
    )
    .filter(|_| reply.compressible && reply.len.is_none_or(|n| n >= compress::MIN_SIZE))
}

pub(super) fn coded(body: Body, coding: Option<compress::Coding>) -> Body {
    match coding {
        Some(c) => compress::compress(body, c),
        None => body,
    }
}

/// What a stored copy of a reply keeps besides its bytes.
pub(super) fn stored_head(
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

pub(super) fn content_headers(
    h: &mut HeaderMap,
    content_type: &str,
    coding: Option<compress::Coding>,
) {
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

pub(super) fn caching_headers(state: &AppState, version: &Version, h: &mut HeaderMap, etag: &str) {
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
