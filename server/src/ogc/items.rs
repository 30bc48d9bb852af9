//! A collection's features: `/ogc/collections/{c}/items`, filtered by `bbox`, `datetime` and
//! properties by name, a page of them (`limit`, `offset`) with `next`/`prev` links and
//! `numberMatched`/`numberReturned`; and one feature, `…/items/{featureId}`.

use super::collections::{Candidate, Collection, utc};
use super::crs::{Crs, Projection};
use super::{GEOJSON, JSON, as_json, check_parameters, html, link, wants_html};
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
    /// The box and the system its corners are in (`bbox-crs`).
    bbox: Option<([f64; 4], Crs)>,
    /// The system of the features' coordinates (`crs`).
    crs: Crs,
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
    let page_asked = wants_html(ctx)?;
    let q = ItemsQuery::parse(ctx, &queryable)?;
    let projection = q.crs.projection()?;
    let bbox = match q.bbox {
        Some((corners, crs)) => Some((corners, crs.projection()?)),
        None => None,
    };
    let catalog = &ctx.version.dataset.catalog;
    let stations = catalog.stations();
    let latest = newest_values(ctx, collection).await?;
    let candidates = collection.candidates(stations, |s| catalog.parameters(&s.id), &latest);
    let mut tf = utc();
    let matched: Vec<&Candidate<'_>> = candidates
        .iter()
        .filter(|c| bbox.as_ref().is_none_or(|(b, p)| inside(b, p, c)))
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
        .map(|c| collection.feature(c, base, ctx, &projection, &mut tf))
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
    if page_asked {
        let title = format!("{}: features", collection.title());
        return Ok(html::document_page(&title, &answer, &as_json(ctx)));
    }
    let mut headers = crs_header(q.crs);
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
    let page_asked = wants_html(ctx)?;
    let crs = Crs::parse("crs", ctx.query.get("crs")?)?;
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
    let feature = collection.feature(&candidate, base, ctx, &crs.projection()?, &mut utc());
    if page_asked {
        let title = format!("{}: {id}", collection.title());
        return Ok(html::document_page(&title, &feature, &as_json(ctx)));
    }
    Ok(built_as(
        feature.to_string().into_bytes(),
        GEOJSON,
        crs_header(crs),
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

/// `Content-Crs` of a feature answer: the system its coordinates are in.
fn crs_header(crs: Crs) -> HeaderMap {
    let mut h = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&format!("<{}>", crs.uri())) {
        h.insert("content-crs", v);
    }
    h
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
        let bbox_crs = Crs::parse("bbox-crs", q.get("bbox-crs")?)?;
        Ok(Self {
            limit: asked.min(MOST_LIMIT),
            clamped: (asked > MOST_LIMIT).then_some(asked),
            offset: count("offset")?.unwrap_or(0),
            bbox: q
                .get("bbox")?
                .map(|v| parse_bbox(v, bbox_crs).map(|corners| (corners, bbox_crs)))
                .transpose()?,
            crs: Crs::parse("crs", q.get("crs")?)?,
            datetime: q.get("datetime")?.map(parse_datetime).transpose()?,
            properties,
        })
    }
}

/// The box's lower and upper corners in the axis order of `crs` (CRS84: `minLon,minLat,
/// maxLon,maxLat`; EPSG:4326: latitude first; UTM: eastings and northings), or with heights
/// (six numbers, the heights ignored: the points have none).
fn parse_bbox(v: &str, crs: Crs) -> Result<[f64; 4], ApiError> {
    let bad = |why: &str| ApiError::param("bbox", format!("'{}' {why}", shorten(v)));
    let numbers: Vec<f64> = v
        .split(',')
        .map(|n| n.trim().parse::<f64>().ok().filter(|x| x.is_finite()))
        .collect::<Option<_>>()
        .ok_or_else(|| bad("is not a list of numbers"))?;
    let corners = match numbers.as_slice() {
        [a, b, c, d] => [*a, *b, *c, *d],
        [a, b, _, d, e, _] => [*a, *b, *d, *e],
        _ => return Err(bad("needs 4 numbers (two corners) or 6 (with heights)")),
    };
    let (lon, lat) = match crs {
        Crs::Crs84 => ([corners[0], corners[2]], [corners[1], corners[3]]),
        Crs::Epsg4326 => ([corners[1], corners[3]], [corners[0], corners[2]]),
        Crs::Utm(_) => {
            if corners[0] > corners[2] || corners[1] > corners[3] {
                return Err(bad("has a lower corner above or right of its upper one"));
            }
            return Ok(corners);
        }
    };
    if lat.iter().any(|l| !(-90.0..=90.0).contains(l)) {
        return Err(bad("has a latitude outside -90..90"));
    }
    if lon.iter().any(|l| !(-180.0..=180.0).contains(l)) {
        return Err(bad("has a longitude outside -180..180"));
    }
    if lat[0] > lat[1] {
        return Err(bad("has its southern edge north of its northern one"));
    }
    Ok(corners)
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

/// Whether the candidate's point lies in the box, both in the box's system (a CRS84 or
/// EPSG:4326 box whose western edge is east of its eastern one crosses the antimeridian).
fn inside(b: &[f64; 4], projection: &Projection, c: &Candidate<'_>) -> bool {
    let Some([x, y]) = projection.position(c.station.coordinates.lon, c.station.coordinates.lat)
    else {
        return false;
    };
    let within = |v: f64, lo: f64, hi: f64, wraps: bool| {
        if lo <= hi {
            (lo..=hi).contains(&v)
        } else {
            wraps && (v >= lo || v <= hi)
        }
    };
    match projection {
        Projection::LonLat => within(x, b[0], b[2], true) && within(y, b[1], b[3], false),
        Projection::LatLon => within(x, b[0], b[2], false) && within(y, b[1], b[3], true),
        Projection::Utm(_) => within(x, b[0], b[2], false) && within(y, b[1], b[3], false),
    }
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
