//! The first stage: what the server reads at all. The request URI's and headers' sizes, and the
//! method the path takes (a CORS preflight is answered here); the rate limit runs before it,
//! in [`super::handle`], so that a client over its rate costs nothing more.

use super::request::{Admitted, api_segments};
use crate::http::body::{Body, empty};
use crate::http::error::ApiError;
use crate::state::AppState;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode};
use std::net::IpAddr;

/// Longest request URI we read.
const MAX_URI: usize = 8 * 1024;
/// Most request header bytes we read (431 beyond).
const MAX_HEADER_BYTES: usize = 64 * 1024;

/// The request within the limits, with a method its path takes: how it asks, or `None` for a
/// preflight, which [`preflight`] answers.
pub(super) fn admit(req: &http::request::Parts) -> Result<Option<Admitted>, ApiError> {
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
        Method::OPTIONS => return Ok(None),
        _ => {
            return Err(ApiError::MethodNotAllowed {
                allow: methods(path),
            });
        }
    };
    Ok(Some(Admitted { head, post }))
}

/// The answer to a CORS preflight (`OPTIONS`): no content; CORS adds its headers on the way
/// out.
pub(super) fn preflight() -> Response<Body> {
    let mut r = Response::new(empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r
}

/// The methods a path takes: GET, HEAD and OPTIONS everywhere, and POST where a request may
/// carry its parameters in the body (`/v1/values` and `/v1/statistics`: selections too long
/// for a URL; `/v1/sql`: a statement).
pub(super) fn methods(path: &str) -> &'static str {
    if takes_post(path) {
        "GET, HEAD, POST, OPTIONS"
    } else {
        "GET, HEAD, OPTIONS"
    }
}

fn takes_post(path: &str) -> bool {
    api_segments(path).is_some_and(|s| s == ["values"] || s == ["statistics"] || s == ["sql"])
}

/// The rate limit: headers for the response, or the 429 itself (boxed: a response is large
/// next to the headers of the common case).
pub(super) fn limit_rate(
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
