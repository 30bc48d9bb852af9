//! `GET /v1/assets/{name}`: the files the HTML pages load, compiled in: Leaflet (vendored from
//! npm, see `server/assets/leaflet/README.md`, with its licence), our map script, and the
//! outline of Germany and its neighbours the map draws without tiles (Natural Earth, public
//! domain, see `server/assets/outline/README.md`).

use crate::api::params::shorten;
use crate::http::error::ApiError;
use crate::render::reply::{Reply, built_as};
use http::HeaderMap;

const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "leaflet.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/leaflet/leaflet.js"),
    ),
    (
        "leaflet.css",
        "text/css; charset=utf-8",
        include_bytes!("../../assets/leaflet/leaflet.css"),
    ),
    (
        "leaflet-LICENSE.txt",
        "text/plain; charset=utf-8",
        include_bytes!("../../assets/leaflet/LICENSE"),
    ),
    (
        "map.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/map.js"),
    ),
    (
        "outline.geojson",
        "application/geo+json",
        include_bytes!("../../assets/outline/outline.geojson"),
    ),
];

pub fn asset(name: &str) -> Result<Reply, ApiError> {
    let (_, content_type, bytes) = ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .ok_or_else(|| ApiError::NotFound(format!("no asset '{}'", shorten(name))))?;
    Ok(built_as(bytes.to_vec(), content_type, HeaderMap::new()))
}
