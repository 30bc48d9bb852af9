//! The third stage: what is asked. The path's segments under `/v1` (404 beyond them) and the
//! parameters, from the query string and, for a POST, from the body, read only now: after
//! access was checked, and for the paths that take one.

use crate::api::params::RawQuery;
use crate::api::query_parameters::json_form;
use crate::http::body::BoxError;
use crate::http::error::ApiError;
use bytes::Bytes;
use http::{HeaderMap, header};
use http_body_util::BodyExt;
use percent_encoding::percent_decode_str;

/// The largest request body read (`POST /v1/values` or `/v1/statistics`, a selection too long
/// for a URL).
const MAX_REQUEST_BODY: usize = 1 << 20;

/// How much of a body beyond [`MAX_REQUEST_BODY`] is read and dropped before the 413 goes
/// out: a balancer that sends a body whole before it reads the answer (nginx, up to its
/// `client_max_body_size`) sees its connection closed under it otherwise, and answers 502
/// instead of passing the 413 on. Larger bodies are not read.
const MAX_DRAINED: u64 = 4 << 20;

/// How a request that passed the limits asks: for the body or only its headers, and whether
/// its parameters come in a body.
#[derive(Clone, Copy)]
pub(super) struct Admitted {
    pub head: bool,
    pub post: bool,
}

/// Which API a path is of.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Surface {
    /// The Hydrological Data API, under `/v1`.
    V1,
    /// OGC API – Features, under `/ogc`.
    Ogc,
}

/// A request to the API, read.
pub(super) struct Asked<'r> {
    pub path: &'r str,
    pub surface: Surface,
    /// The decoded path segments after `/v1` or `/ogc`.
    pub segments: Vec<String>,
    pub query: RawQuery,
    pub head: bool,
    pub post: bool,
}

/// The request's path and parameters, its body read for a POST.
pub(super) async fn read<'r, B>(
    req: &'r http::request::Parts,
    body: B,
    admitted: Admitted,
) -> Result<Asked<'r>, ApiError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let path = req.uri.path();
    let (surface, segments) = match ogc_segments(path) {
        Some(segments) => (Surface::Ogc, Some(segments)),
        None => (Surface::V1, api_segments(path)),
    };
    let segments = segments.ok_or_else(|| {
        ApiError::NotFound(format!(
            "no resource at {}",
            crate::api::params::shorten(path)
        ))
    })?;
    let mut query = if segments == ["sql"] {
        RawQuery::parse_form(req.uri.query())?
    } else {
        RawQuery::parse(req.uri.query())?
    };
    if admitted.post {
        let headers = &req.headers;
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
    Ok(Asked {
        path,
        surface,
        segments,
        query,
        head: admitted.head,
        post: admitted.post,
    })
}

/// The decoded path segments after `/v1`, or None for paths outside the API.
pub(super) fn api_segments(path: &str) -> Option<Vec<String>> {
    segments_under(path, "/v1")
}

/// The decoded path segments after `/ogc`, or None for paths outside it.
fn ogc_segments(path: &str) -> Option<Vec<String>> {
    segments_under(path, "/ogc")
}

fn segments_under(path: &str, prefix: &str) -> Option<Vec<String>> {
    let rest = path.strip_prefix(prefix)?;
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
