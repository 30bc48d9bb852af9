//! The second stage: who may ask. The root redirects to the API; every path but health takes
//! the API's credentials, the metrics included (Prometheus sends a bearer token or Basic auth:
//! request counts and versions are the operator's), which are answered here.

use crate::api;
use crate::http::body::{Body, empty, full};
use crate::http::error::ApiError;
use crate::state::AppState;
use http::{HeaderValue, Response, StatusCode, header};

/// The answer for the paths outside the API (`/`, `/metrics`), or `None` for a request that
/// goes on; an error when the credentials are missing or wrong.
pub(super) fn check(
    state: &AppState,
    req: &http::request::Parts,
) -> Result<Option<Response<Body>>, ApiError> {
    let path = req.uri.path();
    if path == "/" {
        return Ok(Some(redirect("/v1/")));
    }
    if path != "/v1/health" {
        state.gate.check(&req.headers)?;
    }
    if path == "/metrics" {
        return Ok(Some(plain(
            api::health::metrics(state),
            "text/plain; version=0.0.4; charset=utf-8",
        )));
    }
    Ok(None)
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
