//! A collection's features: `/ogc/collections/{c}/items`, filtered by `bbox`, `datetime` and
//! properties by name, a page of them (`limit`, `offset`) with `next`/`prev` links and
//! `numberMatched`/`numberReturned`; and one feature, `…/items/{featureId}`.

use super::collections::{CRS84, Candidate, Collection, utc};
use super::{GEOJSON, JSON, check_parameters, link, unsupported_f};
use crate::api::Ctx;
use crate::api::params::shorten;
use crate::http::error::ApiError;
use crate::render::reply::{Reply, built_as};
use http::{HeaderMap, HeaderValue};
use hydro_engine::{Latest, Micros, Series, parse_instant};
use serde_json::{Value, json};

/// Features a page holds when `limit` is not given.
const DEFAULT_LIMIT: usize = 10;
/// The most a page holds; a larger `limit` is cut to it, and the answer says so.
const MOST_LIMIT: usize = 10_000;

/// What `items` was asked for.
struct ItemsQuery {
    limit: usize,
    /// The `limit` asked for, when it was more than [`MOST_LIMIT`].
    clamped: Option<usize>,
    offset: usize,
    bbox: Option<[f64; 4]>,
    datetime: Option<(Micros, Micros)>,
    properties: Vec<(String, String)>,
}

pub async fn items(ctx: &Ctx<'_>, collection: Collection, base: &str) -> Result<Reply, ApiError> {
    let queryable: Vec<&str> = collection.queryable().iter().map(|(n, _)| *n).collect();
    check_parameters(
        ctx,
        &["limit", "offset", "bbox", "datetime", "crs", "bbox-crs"],
        &queryable,
    )?;
    check_f(ctx)?;
    check_crs(ctx, &["crs", "bbox-crs"])?;
    let q = ItemsQuery::parse(ctx, &queryable)?;
    let catalog = &ctx.version.dataset.catalog;
    let stations = catalog.stations();
    let latest = newest_values(ctx, collection).await?;
    let candidates = collection.candidates(stations, |s| catalog.parameters(&s.id), &latest);
    let mut tf = utc();
    let matched: Vec<&Candidate<'_>> = candidates
        .iter()
        .filter(|c| q.bbox.is_none_or(|b| inside(&b, c)))
        .filter(|c| {
            q.datetime.is_none_or(|(from, to)| {
                collection
                    .period(c, catalog.parameters(&c.station.id))
                    .is_some_and(|(start, end)| start <= to && end >= from)
            })
        })
        .filter(|c| {
            q.properties.is_empty() || has_properties(collection, c, &q.properties, &mut tf)
        })
        .collect();
    let page: Vec<Value> = matched
        .iter()
        .skip(q.offset)
        .take(q.limit)
        .map(|c| collection.feature(c, base, ctx, &mut tf))
        .collect();
    let url = format!("{base}/collections/{}/items", collection.id());
    let mut links = vec![
        link(
            &page_url(ctx, &url, q.offset, q.limit),
            "self",
            GEOJSON,
            "this page",
        ),
        link(
            &format!("{base}/collections/{}", collection.id()),
            "collection",
            JSON,
            "the collection",
        ),
    ];
    if q.offset + page.len() < matched.len() {
        let next = page_url(ctx, &url, q.offset + q.limit, q.limit);
        links.push(link(&next, "next", GEOJSON, "the next page"));
    }
    if q.offset > 0 {
        let prev = page_url(ctx, &url, q.offset.saturating_sub(q.limit), q.limit);
        links.push(link(&prev, "prev", GEOJSON, "the page before"));
    }
    let mut answer = json!({
        "type": "FeatureCollection",
        "numberMatched": matched.len(),
        "numberReturned": page.len(),
        "features": page,
        "links": links,
    });
    let mut headers = crs_header();
    if let Some(asked) = q.clamped {
        answer["limitApplied"] = json!(q.limit);
        let note = format!("limit {asked} is more than {MOST_LIMIT}; {MOST_LIMIT} applied");
        if let Ok(v) = HeaderValue::from_str(&note) {
            headers.insert("hydro-limit", v);
        }
    }
    Ok(built_as(answer.to_string().into_bytes(), GEOJSON, headers))
}

pub async fn item(
    ctx: &Ctx<'_>,
    collection: Collection,
    base: &str,
    id: &str,
) -> Result<Reply, ApiError> {
    check_parameters(ctx, &["crs"], &[])?;
    check_f(ctx)?;
    check_crs(ctx, &["crs"])?;
    let not_found = || {
        ApiError::NotFound(format!(
            "no feature '{}' in {}",
            shorten(id),
            collection.id()
        ))
    };
    let catalog = &ctx.version.dataset.catalog;
    let (station_id, parameter_id) = collection.split_id(id);
    let station_id = station_id.parse().map_err(|_| not_found())?;
    let station = catalog.station(&station_id).ok_or_else(not_found)?;
    let parameter = match (collection, parameter_id) {
        (Collection::Stations, _) => None,
        (_, None) => return Err(not_found()),
        (_, Some(pid)) => {
            let pid = pid.parse().map_err(|_| not_found())?;
            Some(catalog.parameter(&station.id, &pid).ok_or_else(not_found)?)
        }
    };
    let latest = match (collection, parameter) {
        (Collection::Latest, Some(p)) => {
            let series: Series = (station.id.clone(), p.id.clone());
            let found = ctx.version.dataset.latest(&[series]).await;
            let found = found.map_err(|e| crate::api::context::fault(ctx.state, e))?;
            Some(found.into_iter().next().flatten().ok_or_else(not_found)?)
        }
        _ => None,
    };
    let candidate = Candidate {
        station,
        parameter,
        latest: latest.as_ref(),
    };
    let feature = collection.feature(&candidate, base, ctx, &mut utc());
    Ok(built_as(
        feature.to_string().into_bytes(),
        GEOJSON,
        HeaderMap::new(),
    ))
}

/// The newest value of every series in the catalog's order, for `latest`; none for the
/// other collections. The publish gives most of them; the rest are found once per version.
async fn newest_values(
    ctx: &Ctx<'_>,
    collection: Collection,
) -> Result<Vec<Option<Latest>>, ApiError> {
    if collection != Collection::Latest {
        return Ok(Vec::new());
    }
    let catalog = &ctx.version.dataset.catalog;
    let series: Vec<Series> = catalog
        .stations()
        .iter()
        .flat_map(|s| {
            catalog
                .parameters(&s.id)
                .iter()
                .map(|p| (s.id.clone(), p.id.clone()))
        })
        .collect();
    let _permit = ctx.heavy_permit()?;
    ctx.version
        .dataset
        .latest(&series)
        .await
        .map_err(|e| crate::api::context::fault(ctx.state, e))
}

/// `crs` and `bbox-crs` (OGC API – Features, Part 2) may name CRS84, the only coordinates
/// offered.
fn check_crs(ctx: &Ctx<'_>, names: &[&str]) -> Result<(), ApiError> {
    for name in names {
        match ctx.query.get(name)? {
            None => {}
            Some(crs) if crs == CRS84 || crs == format!("[{CRS84}]") => {}
            Some(other) => {
                return Err(ApiError::param(
                    name,
                    format!("'{}' is not offered; give {CRS84}", shorten(other)),
                ));
            }
        }
    }
    Ok(())
}

/// `Content-Crs` of every feature answer: CRS84.
fn crs_header() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        "content-crs",
        HeaderValue::from_static("<http://www.opengis.net/def/crs/OGC/1.3/CRS84>"),
    );
    h
}

/// Features are GeoJSON: `f=json` and `f=geojson` name it.
fn check_f(ctx: &Ctx<'_>) -> Result<(), ApiError> {
    match ctx.query.get("f")? {
        None | Some("json" | "geojson") => Ok(()),
        Some(other) => Err(unsupported_f(other, "json or geojson")),
    }
}

impl ItemsQuery {
    fn parse(ctx: &Ctx<'_>, queryable: &[&str]) -> Result<Self, ApiError> {
        let q = ctx.query;
        let count = |name: &str| -> Result<Option<usize>, ApiError> {
            q.get(name)?
                .map(|v| {
                    v.parse::<usize>().map_err(|_| {
                        ApiError::param(name, format!("'{}' is not a whole number ≥ 0", shorten(v)))
                    })
                })
                .transpose()
        };
        let asked = count("limit")?.unwrap_or(DEFAULT_LIMIT);
        if asked == 0 {
            return Err(ApiError::param("limit", "must be at least 1"));
        }
        let properties = q
            .pairs
            .iter()
            .filter(|(k, _)| queryable.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Self {
            limit: asked.min(MOST_LIMIT),
            clamped: (asked > MOST_LIMIT).then_some(asked),
            offset: count("offset")?.unwrap_or(0),
            bbox: q.get("bbox")?.map(parse_bbox).transpose()?,
            datetime: q.get("datetime")?.map(parse_datetime).transpose()?,
            properties,
        })
    }
}

/// `minLon,minLat,maxLon,maxLat` in CRS84, or with heights (`minLon,minLat,minZ,maxLon,
/// maxLat,maxZ`, the heights ignored: the points have none).
fn parse_bbox(v: &str) -> Result<[f64; 4], ApiError> {
    let bad = |why: &str| ApiError::param("bbox", format!("'{}' {why}", shorten(v)));
    let numbers: Vec<f64> = v
        .split(',')
        .map(|n| n.trim().parse::<f64>().ok().filter(|x| x.is_finite()))
        .collect::<Option<_>>()
        .ok_or_else(|| bad("is not a list of numbers"))?;
    let [min_lon, min_lat, max_lon, max_lat] = match numbers.as_slice() {
        [a, b, c, d] => [*a, *b, *c, *d],
        [a, b, _, d, e, _] => [*a, *b, *d, *e],
        _ => return Err(bad("needs 4 numbers (minLon,minLat,maxLon,maxLat) or 6")),
    };
    if !(-90.0..=90.0).contains(&min_lat) || !(-90.0..=90.0).contains(&max_lat) {
        return Err(bad("has a latitude outside -90..90"));
    }
    if !(-180.0..=180.0).contains(&min_lon) || !(-180.0..=180.0).contains(&max_lon) {
        return Err(bad("has a longitude outside -180..180"));
    }
    if min_lat > max_lat {
        return Err(bad("has its southern edge north of its northern one"));
    }
    Ok([min_lon, min_lat, max_lon, max_lat])
}

/// An instant or an interval (`a/b`, open with `..` or nothing on either side), RFC 3339
/// date-times or dates (a date is its day, whole).
fn parse_datetime(v: &str) -> Result<(Micros, Micros), ApiError> {
    let bad = |why: String| ApiError::param("datetime", why);
    let end_of = |t: &str, start: bool| -> Result<Option<Micros>, ApiError> {
        if t.is_empty() || t == ".." {
            return Ok(None);
        }
        if let Some(day) = parse_instant(&format!("{t}T00:00:00Z")).map(|(m, _)| m)
            && t.len() == 10
        {
            const DAY: Micros = 86_400_000_000;
            return Ok(Some(if start { day } else { day + DAY - 1 }));
        }
        parse_instant(t).map(|(m, _)| Some(m)).ok_or_else(|| {
            bad(format!(
                "'{}' is not an RFC 3339 date-time (2024-03-01T00:00:00Z) or date",
                shorten(t)
            ))
        })
    };
    let (from, to) = match v.split_once('/') {
        None => {
            let from = end_of(v, true)?.ok_or_else(|| bad("an instant must be given".into()))?;
            (from, end_of(v, false)?.unwrap_or(from))
        }
        Some((a, b)) => (
            end_of(a, true)?.unwrap_or(Micros::MIN),
            end_of(b, false)?.unwrap_or(Micros::MAX),
        ),
    };
    if from > to {
        return Err(bad(format!("'{}' ends before it starts", shorten(v))));
    }
    Ok((from, to))
}

fn inside(b: &[f64; 4], c: &Candidate<'_>) -> bool {
    let (lon, lat) = (c.station.coordinates.lon, c.station.coordinates.lat);
    let lon_ok = if b[0] <= b[2] {
        (b[0]..=b[2]).contains(&lon)
    } else {
        // Across the antimeridian.
        lon >= b[0] || lon <= b[2]
    };
    lon_ok && (b[1]..=b[3]).contains(&lat)
}

/// Whether every filter `name=value` holds: the property's text equals the value (several
/// filters of one name: any of them).
fn has_properties(
    collection: Collection,
    c: &Candidate<'_>,
    filters: &[(String, String)],
    tf: &mut crate::render::timefmt::TimeFormatter,
) -> bool {
    let props = collection.properties(c, tf);
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut names: Vec<&str> = filters.iter().map(|(k, _)| k.as_str()).collect();
    names.dedup();
    names.iter().all(|name| {
        let value = props.get(*name).map(text);
        filters
            .iter()
            .filter(|(k, _)| k == name)
            .any(|(_, want)| value.as_deref() == Some(want.as_str()))
    })
}

/// The items URL of the page at `offset`, with the request's other parameters.
fn page_url(ctx: &Ctx<'_>, url: &str, offset: usize, limit: usize) -> String {
    let mut pairs: Vec<(String, String)> = ctx
        .query
        .pairs
        .iter()
        .filter(|(k, _)| k != "offset" && k != "limit")
        .cloned()
        .collect();
    pairs.push(("limit".into(), limit.to_string()));
    if offset > 0 {
        pairs.push(("offset".into(), offset.to_string()));
    }
    let query: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    format!("{url}?{}", query.join("&"))
}

fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}
