//! A request's way through the server, as stages in the order they run, one file each:
//!
//! 1. `limits`: the URI's and headers' sizes, the method (a CORS preflight ends here); the
//!    rate limit before it.
//! 2. `access`: the root's redirect, the credentials, the metrics.
//! 3. `request`: the path's segments and the parameters, a POST's body read.
//! 4. `version`: the version that answers, `asOf`'s or the one served.
//! 5. `conditional`: the answer's tag; `If-None-Match` answered before any query.
//! 6. `stored`: the answer sent again from the answer store, whole or by ranges.
//! 7. the endpoint ([`crate::api::route`], or [`crate::ogc::route`] under `/ogc`), which makes
//!    the reply.
//! 8. `finish`: the reply coded, with its caching headers, kept in the store as it streams.
//!
//! Around them, [`handle`] counts the request, adds CORS to whatever went out, and writes the
//! request log's line once it has.

mod access;
mod conditional;
mod finish;
mod limits;
mod request;
mod stored;
mod version;

use crate::api;
use crate::http::body::{Body, BoxError};
use crate::http::cors;
use crate::http::error::ApiError;
use crate::http::request_log::Arrived;
use crate::render::reply::Reply;
use crate::state::AppState;
use bytes::Bytes;
use conditional::{Validators, not_modified};
use http::{Request, Response, header};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use stored::Lookup;

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
    let mut response = match limits::limit_rate(&state, client, &path) {
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
        limits::methods(&path),
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

/// The stages, in order; each either answers or hands on what the next one needs.
async fn respond<B>(
    state: &Arc<AppState>,
    req: &http::request::Parts,
    body: B,
) -> Result<Response<Body>, ApiError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let Some(admitted) = limits::admit(req)? else {
        return Ok(limits::preflight());
    };
    if let Some(answer) = access::check(state, req)? {
        return Ok(answer);
    }
    let asked = request::read(req, body, admitted).await?;
    let version = version::answered(state, &asked).await?;
    let headers = &req.headers;
    let validators = Validators::of(state, &version, headers, &asked);
    if let Some(tag) = validators.matched() {
        return not_modified(state, &version, tag, asked.post);
    }
    let ranges = match stored::lookup(state, &version, &validators, headers, &asked).await? {
        Lookup::Answered(answer) => return Ok(answer),
        Lookup::Missed { ranges } => ranges,
    };
    let ctx = api::Ctx {
        state,
        version: &version,
        query: &asked.query,
        headers,
        path: asked.path,
        posted: asked.post,
    };
    let reply = route(&ctx, &asked).await?;
    if let Some(tag) = validators.unmodified_reply(&reply) {
        return not_modified(state, &version, tag, asked.post);
    }
    let etag = validators.etag.as_deref();
    if let Some(tag) = etag
        && stored::whole_first(state, &reply, ranges.as_ref(), asked.head)
    {
        let kept = stored::keep_whole(
            state,
            &version,
            tag,
            reply,
            headers,
            ranges.as_ref(),
            asked.head,
        );
        if let Some(answer) = kept.await? {
            return Ok(answer);
        }
        // Larger than the store, or failed while made: the whole answer, made again, and no
        // ranges offered for it.
        let reply = route(&ctx, &asked).await?;
        let mut r = finish::finish(state, &version, reply, headers, etag, asked.head, false);
        r.headers_mut().remove(header::ACCEPT_RANGES);
        return Ok(r);
    }
    let may_store = validators.reuse && !asked.head;
    Ok(finish::finish(
        state, &version, reply, headers, etag, asked.head, may_store,
    ))
}

/// The endpoint's reply, on the surface the path is of.
async fn route(ctx: &api::Ctx<'_>, asked: &request::Asked<'_>) -> Result<Reply, ApiError> {
    match asked.surface {
        request::Surface::V1 => api::route(ctx, &asked.segments).await,
        request::Surface::Ogc => crate::ogc::route(ctx, &asked.segments).await,
    }
}
