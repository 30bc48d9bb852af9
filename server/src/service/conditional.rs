//! The fifth stage: whether the client has the answer already. The answer's strong ETag is
//! known before any query runs (the version, the settings that shape the bytes, the path, the
//! parameters and the negotiation headers), so a matching `If-None-Match` costs no query at all;
//! `If-Modified-Since` is settled once the answer is known to exist (see
//! [`crate::http::conditional`]).

use super::finish::caching_headers;
use super::request::Asked;
use crate::api::params::RawQuery;
use crate::http::body::{Body, empty};
use crate::http::conditional::{self, Condition};
use crate::http::error::ApiError;
use crate::render::reply::Reply;
use crate::state::AppState;
use crate::versions::Version;
use http::{HeaderMap, Response, StatusCode, header};
use sha2::{Digest, Sha256};

/// What the request's conditions and cache directives say about its answer.
pub(super) struct Validators {
    /// The answer's strong tag; none for answers that change without a new version.
    pub etag: Option<String>,
    pub condition: Condition,
    /// Whether the client lets us answer from the answer store: `Cache-Control: no-cache` or
    /// `no-store` asks for an answer made afresh (and not kept).
    pub reuse: bool,
}

impl Validators {
    pub(super) fn of(
        state: &AppState,
        version: &Version,
        headers: &HeaderMap,
        asked: &Asked<'_>,
    ) -> Self {
        let etag = etag(state, version, asked.path, &asked.query, headers);
        let condition = conditional::evaluate(headers, etag.as_deref(), version.modified);
        Validators {
            etag,
            condition,
            reuse: reuse_allowed(headers),
        }
    }

    /// The tag, when `If-None-Match` names it: the answer is known unchanged before it is made.
    pub(super) fn matched(&self) -> Option<&str> {
        match (&self.etag, self.condition) {
            (Some(tag), Condition::TagMatches) => Some(tag),
            _ => None,
        }
    }

    /// The tag, when `If-Modified-Since` holds and the answer exists: found in the answer store
    /// (`found`) or made by the endpoint as a cacheable 200.
    pub(super) fn unmodified(&self, found: bool) -> Option<&str> {
        match (&self.etag, found, self.condition) {
            (Some(tag), true, Condition::NotModifiedIfFound) => Some(tag),
            _ => None,
        }
    }

    /// [`Self::unmodified`] for a reply the endpoint made.
    pub(super) fn unmodified_reply(&self, reply: &Reply) -> Option<&str> {
        self.unmodified(reply.status == StatusCode::OK && reply.cacheable)
    }
}

/// `304 Not Modified` with the headers the full answer would have had for caches; for a POST,
/// whose answer a cache does not keep, `412 Precondition Failed` (RFC 9110 13.1.2).
pub(super) fn not_modified(
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

/// Strong ETag: dataset version + settings that shape the bytes + path + query + the
/// negotiation headers.
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
