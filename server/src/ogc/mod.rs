//! OGC API – Features (Part 1: core, GeoJSON, OpenAPI 3.0; Part 2: coordinate systems) under
//! `/ogc`: the surface GIS clients open (QGIS, GDAL's `OAPIF` driver, OWSLib). The same catalog
//! as `/v1`, as three collections of point features: `stations`, `series` (a station's
//! parameter, with its availability) and `latest` (each series' newest value: a live map
//! layer). The request's way is `/v1`'s (access, versions, conditional requests, caching, CORS,
//! compression); only the routes, the parameters and the documents are OGC's.
//!
//! - `crs`: the coordinate systems features and `bbox` may be in (Part 2).
//! - `collections`: what each collection holds, its features built from the catalog, its
//!   extent and its queryable properties.
//! - `items`: `limit`, `offset`, `bbox`, `datetime` and property filters, and the page.
//! - `openapi`: the OpenAPI 3.0 document at `/ogc/api`.
//! - `html`: every document but the OpenAPI one as a page (`f=html`, or a browser's `Accept`).

mod collections;
mod crs;
mod html;
mod items;
mod openapi;

use crate::api::Ctx;
use crate::api::params::shorten;
use crate::http::error::ApiError;
use crate::render::reply::{Reply, built_as};
use collections::Collection;
use http::HeaderMap;
use serde_json::{Value, json};

/// The conformance classes this surface implements.
const CONFORMANCE: &[&str] = &[
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/html",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30",
    "http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs",
];

const JSON: &str = "application/json";
const GEOJSON: &str = "application/geo+json";
const OPENAPI: &str = "application/vnd.oai.openapi+json;version=3.0";

/// The reply to `segments` (the decoded path after `/ogc`).
pub async fn route(ctx: &Ctx<'_>, segments: &[String]) -> Result<Reply, ApiError> {
    let seg: Vec<&str> = segments.iter().map(String::as_str).collect();
    match seg.as_slice() {
        [] => document(ctx, "Hydro API: OGC API – Features", landing(ctx)),
        ["conformance"] => document(
            ctx,
            "Conformance classes",
            json!({ "conformsTo": CONFORMANCE }),
        ),
        ["api"] => {
            check_parameters(ctx, &[], &[])?;
            match ctx.query.get("f")? {
                None | Some("json") => {}
                Some(other) => return Err(unsupported_f(other, "json")),
            }
            let answer = openapi::document(&base(ctx));
            Ok(built_as(
                answer.to_string().into_bytes(),
                OPENAPI,
                HeaderMap::new(),
            ))
        }
        ["collections"] => {
            let list: Vec<Value> = Collection::ALL
                .iter()
                .map(|c| c.describe(ctx, &base(ctx)))
                .collect::<Result<_, _>>()?;
            let url = format!("{}/collections", base(ctx));
            let answer = json!({
                "links": [link(&url, "self", JSON, "the collections")],
                "collections": list,
            });
            document(ctx, "Collections", answer)
        }
        ["collections", name] => {
            let collection = Collection::named(name)?;
            let answer = collection.describe(ctx, &base(ctx))?;
            document(ctx, collection.title(), answer)
        }
        ["collections", name, "queryables"] => {
            let collection = Collection::named(name)?;
            let answer = collection.queryables(&base(ctx));
            let page = wants_html(ctx)?;
            let mut reply = document(ctx, collection.title(), answer)?;
            if !page {
                reply.content_type = "application/schema+json".into();
            }
            Ok(reply)
        }
        ["collections", name, "items"] => {
            let collection = Collection::named(name)?;
            items::items(ctx, collection, &base(ctx)).await
        }
        ["collections", name, "items", id] => {
            let collection = Collection::named(name)?;
            items::item(ctx, collection, &base(ctx), id).await
        }
        _ => Err(ApiError::NotFound(format!(
            "no resource at {}",
            shorten(ctx.path)
        ))),
    }
}

/// Where this surface lives: beside `/v1`, at `/ogc`.
fn base(ctx: &Ctx<'_>) -> String {
    let v1 = ctx.state.base_url.as_str();
    format!("{}/ogc", v1.strip_suffix("/v1").unwrap_or(v1))
}

/// The landing page: what a client needs to open the service (QGIS and GDAL follow
/// `service-desc`, `conformance` and `data`).
fn landing(ctx: &Ctx<'_>) -> Value {
    let base = base(ctx);
    json!({
        "title": "Hydro API: OGC API – Features",
        "description": "Hydrological stations, their series and their newest values as features.",
        "links": [
            link(&base, "self", JSON, "this document"),
            link(&format!("{base}/api"), "service-desc", OPENAPI, "the API definition"),
            link(&ctx.url("/openapi.json?format=html"), "service-doc", "text/html", "the API documentation"),
            link(&format!("{base}/conformance"), "conformance", JSON, "the conformance classes implemented"),
            link(&format!("{base}/collections"), "data", JSON, "the collections"),
        ],
    })
}

fn link(href: &str, rel: &str, media_type: &str, title: &str) -> Value {
    json!({ "href": href, "rel": rel, "type": media_type, "title": title })
}

/// A document of this surface after its parameters were checked: as JSON, or as a page titled
/// `title` when the client asks for one.
fn document(ctx: &Ctx<'_>, title: &str, answer: Value) -> Result<Reply, ApiError> {
    check_parameters(ctx, &[], &[])?;
    if wants_html(ctx)? {
        return Ok(html::document_page(title, &answer, &as_json(ctx)));
    }
    Ok(built_as(
        answer.to_string().into_bytes(),
        JSON,
        HeaderMap::new(),
    ))
}

/// Whether the answer is a page: `f=html`, or no `f` and an `Accept` that names `text/html`
/// (a browser's; GIS clients and scripts ask for JSON). `f` must be `json`, `geojson` (where
/// features are answered) or `html`.
fn wants_html(ctx: &Ctx<'_>) -> Result<bool, ApiError> {
    match ctx.query.get("f")? {
        Some("html") => Ok(true),
        Some("json" | "geojson") => Ok(false),
        Some(other) => Err(unsupported_f(other, "json, geojson or html")),
        None => Ok(ctx
            .headers
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("text/html"))),
    }
}

/// The request's URL (relative) with `f=json`: the page's document as data.
fn as_json(ctx: &Ctx<'_>) -> String {
    let mut query: Vec<String> = ctx
        .query
        .pairs
        .iter()
        .filter(|(k, _)| k != "f")
        .map(|(k, v)| {
            let e = |s: &str| {
                percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC)
                    .to_string()
            };
            format!("{}={}", e(k), e(v))
        })
        .collect();
    query.push("f=json".into());
    format!("{}?{}", ctx.path, query.join("&"))
}

fn unsupported_f(given: &str, offered: &str) -> ApiError {
    ApiError::param(
        "f",
        format!("'{}' is not offered here; give {offered}", shorten(given)),
    )
}

/// Every parameter is one the path takes: `f`, `asOf` (a version, as on `/v1`), those
/// `allowed` and the queryable properties `properties` (a 400 names the others, as OGC API –
/// Features recommends).
fn check_parameters(ctx: &Ctx<'_>, allowed: &[&str], properties: &[&str]) -> Result<(), ApiError> {
    for (name, _) in &ctx.query.pairs {
        let known = ["f", "asOf"].contains(&name.as_str())
            || allowed.contains(&name.as_str())
            || properties.contains(&name.as_str());
        if !known {
            let mut takes: Vec<&str> = vec!["f"];
            takes.extend(allowed);
            takes.extend(properties);
            return Err(ApiError::param(
                name,
                format!(
                    "is not a parameter of this resource (it takes {})",
                    takes.join(", ")
                ),
            ));
        }
    }
    Ok(())
}
