//! The hint for coordinates typed the other way round. `near` and `bbox` take lon,lat (as
//! GeoJSON); people often type lat,lon, as maps show it, and Bonn becomes a point in the
//! Indian Ocean. When a `near` point or a `bbox` lies outside the stations' neighbourhood
//! (their bounding box plus [`NEIGHBOURHOOD_KM`]) and the same numbers swapped lie inside it,
//! the answer carries a `rel="alternate"` link (envelope and `Link` header) to the same query
//! with them swapped, whatever the answer holds: without a radius `near` orders every station
//! and finds some either way. The answer itself stays what was asked for.
//!
//! [`NEIGHBOURHOOD_KM`]: hydro_engine::NEIGHBOURHOOD_KM

use crate::api::Ctx;
use crate::api::query_parameters::{BBOX, NEAR};
use http::HeaderValue;
use hydro_engine::BBox;
use hydro_engine::StationFilter;

/// The query as it was most likely meant.
#[derive(Debug, Clone)]
pub(crate) struct Alternate {
    pub href: String,
    /// Why, for the `Link` header's `title`.
    pub title: &'static str,
}

impl Alternate {
    /// The `Link` header of this link (`None` only for a URL a header cannot carry).
    pub fn header(&self) -> Option<HeaderValue> {
        HeaderValue::from_str(&format!(
            "<{}>; rel=\"alternate\"; title=\"{}\"",
            self.href, self.title
        ))
        .ok()
    }
}

/// The link to the query with `near` and `bbox` swapped where they were typed lat,lon (see the
/// module doc), or `None` when neither was.
pub(crate) fn swapped_coordinates(ctx: &Ctx<'_>, filter: &StationFilter) -> Option<Alternate> {
    let around = ctx.version.dataset.catalog.neighbourhood()?;
    let near = filter.near.and_then(|given| {
        let written = ctx.query.get(NEAR.name).ok().flatten()?;
        let swapped_text = swap_pairs(written);
        let swapped = NEAR.parse(&swapped_text).ok()?;
        let meant =
            !around.contains(given.lon, given.lat) && around.contains(swapped.lon, swapped.lat);
        meant.then_some(swapped_text)
    });
    let bbox = filter.bbox.and_then(|given| {
        let written = ctx.query.get(BBOX.name).ok().flatten()?;
        let swapped_text = swap_pairs(written);
        let swapped: BBox = BBOX.parse(&swapped_text).ok()?;
        let meant = !around.intersects(&given) && around.intersects(&swapped);
        meant.then_some(swapped_text)
    });
    let title = match (&near, &bbox) {
        (None, None) => return None,
        (Some(_), None) => "near takes lon,lat",
        (None, Some(_)) => "bbox takes minLon,minLat,maxLon,maxLat",
        (Some(_), Some(_)) => "near and bbox take lon,lat",
    };
    let mut drop = vec!["offset"];
    let mut add = Vec::new();
    for (name, value) in [("near", &near), ("bbox", &bbox)] {
        if let Some(v) = value {
            drop.push(name);
            add.push((name, v.as_str()));
        }
    }
    Some(Alternate {
        href: ctx.paging_url().rewritten(&drop, &add),
        title,
    })
}

/// `a,b,c,d` as `b,a,d,c`: each lon,lat pair the other way round (a radius, a lone last
/// number, stays where it is).
fn swap_pairs(written: &str) -> String {
    let mut parts: Vec<&str> = written.split(',').collect();
    for pair in parts.chunks_exact_mut(2) {
        pair.swap(0, 1);
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::swap_pairs;

    #[test]
    fn pairs_swap_and_a_radius_stays() {
        assert_eq!(swap_pairs("50.94,6.96"), "6.96,50.94");
        assert_eq!(swap_pairs("50.94,6.96,20"), "6.96,50.94,20");
        assert_eq!(swap_pairs("50,6,52,8"), "6,50,8,52");
    }
}
