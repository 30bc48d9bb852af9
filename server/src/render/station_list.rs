//! The body of `GET /stations`: the page's stations in order, encoded a few dozen at a time
//! as the connection takes them.
//!
//! The standard sets no maximum page size, and a catalog of 100 000 stations is a list a
//! research user downloads whole. Built whole, as the short lists are, that answer held every
//! station as a JSON object, a deep copy of them all, and then all its bytes: 1.7 s and 570 MB
//! more RSS for 28 MB of JSON (GeoJSON 2.3 s, 900 MB). Here only the order (a position and a
//! distance per station) is held; objects are built for one frame at a time and dropped.

use crate::http::body::{Body, BoxError, stream};
use crate::render::encode::catalog::{ListEncoder, write_json};
use crate::render::resources::{
    CharacteristicDoc, ParameterDoc, SortKeys, StationDoc, StationWithLists, project,
};
use crate::render::resources::{Includes, SortSpec};
use crate::render::timefmt::TimeFormatter;
use bytes::Bytes;
use futures::StreamExt;
use hydro_engine::Catalog;
use hydro_engine::Dataset;
use hydro_engine::Station;
use hydro_engine::StationHit;
use hydro_engine::Zone;
use serde_json::Value;
use std::ops::Range;
use std::sync::Arc;
use tokio::sync::OwnedSemaphorePermit;

/// Stations per body frame: a few hundred microseconds of work between two polls of the
/// connection, and frames of tens of KB. A page this short is built whole instead.
pub const PER_FRAME: usize = 64;

/// Frames encoded at once ahead of the one being sent: both cores, a few hundred KB.
const PARALLEL_FRAMES: usize = 4;

/// A station of the answer: its position in the catalog and its distance for `near`.
#[derive(Debug, Clone, Copy)]
pub struct Chosen {
    /// Its position in the catalog's stations.
    pub index: usize,
    pub distance_km: Option<f64>,
}

/// How one station becomes an item of the answer.
pub struct Items {
    /// The zone times are written in.
    pub zone: Zone,
    /// The dataset of the version the request answers from.
    pub dataset: Arc<Dataset>,
    /// `include=parameters`, `include=characteristics`.
    pub include: Includes,
    pub fields: Option<Vec<String>>,
}

impl Items {
    fn station(&self, chosen: Chosen) -> &Station {
        &self.dataset.catalog.stations()[chosen.index]
    }

    /// The station's item, included lists added and `fields` applied.
    pub fn item(&self, chosen: Chosen) -> Value {
        let station = self.station(chosen);
        let item = station_item(
            self.zone,
            &self.dataset.catalog,
            station,
            chosen.distance_km,
            self.include,
        );
        match &self.fields {
            Some(f) => project(&item, f),
            None => item,
        }
    }
}

/// A station as the API shows it, with the lists `include` asked for.
pub fn station_item(
    zone: Zone,
    catalog: &Catalog,
    s: &Station,
    distance: Option<f64>,
    include: Includes,
) -> Value {
    let mut tf = TimeFormatter::zoned(zone);
    let doc = with_lists(catalog, s, distance, include, &mut tf);
    // Plain fields and finite or null numbers: serializing them cannot fail.
    serde_json::to_value(doc).unwrap_or_default()
}

/// The document of a station with the lists `include` asked for.
fn with_lists<'a>(
    catalog: &'a Catalog,
    s: &'a Station,
    distance: Option<f64>,
    include: Includes,
    tf: &mut TimeFormatter,
) -> StationWithLists<'a> {
    StationWithLists {
        station: StationDoc::new(s, distance),
        parameters: include.parameters.then(|| {
            catalog
                .parameters(&s.id)
                .iter()
                .map(|p| ParameterDoc::new(p, tf))
                .collect()
        }),
        characteristics: include.characteristics.then(|| {
            catalog
                .characteristics(&s.id)
                .iter()
                .map(|c| CharacteristicDoc::new(c, tf))
                .collect()
        }),
    }
}

/// The stations at positions `keep` of the answer's order: by `sort` (ties keep the order of
/// `hits`, the catalog's or nearest first), else as found. Sort keys are the station's own
/// fields, looked up once per station. Only the stations up to the page's end are sorted,
/// after a selection of them: a page of 100 of 100 000 stations sorted them all before.
pub fn order(hits: &[StationHit<'_>], sort: &[SortSpec], keep: Range<usize>) -> Vec<Chosen> {
    let chosen = |h: &StationHit<'_>| Chosen {
        index: h.index,
        distance_km: h.distance_km,
    };
    let end = keep.end.min(hits.len());
    let start = keep.start.min(end);
    if sort.is_empty() {
        return hits[start..end].iter().map(chosen).collect();
    }
    // The position in `hits` breaks ties: a total order, so the unstable sort and the
    // selection give what a stable sort would.
    let mut keyed: Vec<(SortKeys, usize)> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let keys = SortKeys::of_station(&StationDoc::new(h.station, h.distance_km), sort);
            (keys, i)
        })
        .collect();
    let order =
        |(a, i): &(SortKeys, usize), (b, j): &(SortKeys, usize)| a.compare(b, sort).then(i.cmp(j));
    if end < keyed.len() {
        keyed.select_nth_unstable_by(end, order);
        keyed.truncate(end);
    }
    keyed.sort_unstable_by(order);
    keyed[start..]
        .iter()
        .map(|&(_, i)| chosen(&hits[i]))
        .collect()
}

/// The whole answer in one buffer, for a page of at most [`PER_FRAME`] stations.
pub fn built(list: &ListEncoder, items: &Items, page: &[Chosen]) -> Vec<u8> {
    let mut out = list.head();
    out.extend_from_slice(&frame(list, items, page, true, 0));
    out.extend_from_slice(list.tail());
    out
}

/// The answer streamed: the head, then [`PER_FRAME`] stations a frame, then the tail. The
/// heavy-query slot, if any, is held until the tail is made.
///
/// Frames after the first are encoded on tasks of their own, `PARALLEL_FRAMES` at once, and
/// sent in order: encoding is the whole cost of a long list, and on the connection's task
/// alone it kept one core busy while the other waited (100 000 stations: JSON 69 -> 52 ms,
/// CSV 205 -> 120 ms).
pub fn streamed(
    list: ListEncoder,
    items: Items,
    page: Vec<Chosen>,
    slot: Option<OwnedSemaphorePermit>,
) -> Body {
    let head = Bytes::from(list.head());
    let tail = Bytes::copy_from_slice(list.tail());
    let (list, items, page) = (Arc::new(list), Arc::new(items), Arc::new(page));
    let starts = (0..page.len()).step_by(PER_FRAME);
    // Each frame's buffer starts at about the size of the first, so it rarely grows.
    let mut room = 0;
    let frames = futures::stream::iter(starts)
        .map(move |start| {
            let end = (start + PER_FRAME).min(page.len());
            if start == 0 {
                let bytes = frame(&list, &items, &page[..end], true, 0);
                room = bytes.len() + bytes.len() / 8;
                return futures::future::Either::Left(futures::future::ready(Ok(bytes)));
            }
            let (list, items, page) = (Arc::clone(&list), Arc::clone(&items), Arc::clone(&page));
            let task =
                tokio::spawn(async move { frame(&list, &items, &page[start..end], false, room) });
            futures::future::Either::Right(async move { task.await.map_err(BoxError::from) })
        })
        .buffered(PARALLEL_FRAMES);
    let all = futures::stream::once(async { Ok(head) })
        .chain(frames)
        .chain(futures::stream::once(async move {
            drop(slot);
            Ok(tail)
        }))
        .filter(|f| futures::future::ready(!matches!(f, Ok(b) if b.is_empty())));
    stream(all)
}

/// `stations` encoded; `first`: they open the list; `room`: bytes to reserve.
///
/// Whole stations, the bulk downloads of a catalog, are written straight from the catalog in
/// the formats that have a way to (`TextFormat::whole_station`: JSON, NDJSON, GeoJSON, CSV),
/// and stations with their included lists in those whose items are JSON objects
/// ([`StationWithLists`]); building a JSON object per station first made a JSON list take
/// 16 × nginx's time for the same bytes.
fn frame(
    list: &ListEncoder,
    items: &Items,
    stations: &[Chosen],
    first: bool,
    room: usize,
) -> Bytes {
    let mut out = Vec::with_capacity(room);
    let whole = items.fields.is_none() && items.include == Includes::default();
    let mut tf = TimeFormatter::zoned(items.zone);
    for (k, &c) in stations.iter().enumerate() {
        let first = first && k == 0;
        let station = items.station(c);
        if whole && list.whole_station(station, c.distance_km, first, &mut out) {
            continue;
        }
        let catalog = &items.dataset.catalog;
        let mut station_with_lists = |out: &mut Vec<u8>| {
            let doc = with_lists(catalog, station, c.distance_km, items.include, &mut tf);
            write_json(&doc, out);
        };
        if items.fields.is_none() && list.json_item(first, &mut out, &mut station_with_lists) {
            continue;
        }
        list.item(&items.item(c), first, &mut out);
    }
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::format::csv::Csv;
    use crate::render::resources::station_json;
    use hydro_engine::{Catalog, StationFilter};
    use hydro_engine::{Coordinates, StationType};

    /// A sorted page is the whole sorted list's slice at its positions, ties (equal keys,
    /// missing values) in the catalog's order, ascending and descending.
    #[test]
    fn sorted_pages_are_slices_of_the_sorted_list() {
        let stations = (0..40)
            .map(|i| Station {
                id: format!("s{i:02}").parse().unwrap(),
                name: format!("Name {}", i % 7),
                kind: StationType::SurfaceWater,
                state: "DE-BY".into(),
                operator: if i % 2 == 0 { "A" } else { "b" }.into(),
                water_body_id: "".into(),
                water_body_name: "".into(),
                coordinates: Coordinates {
                    lat: 48.0 + f64::from(i % 5),
                    lon: 11.0,
                },
                river_km: (i % 3 != 0).then(|| f64::from(i % 4)),
                gauge_zero: None,
                ground_level: None,
                elevation: None,
            })
            .collect();
        let catalog = Catalog::new(stations, Vec::new(), Vec::new());
        let (_, hits) = catalog.find_stations(&StationFilter::default(), 0..usize::MAX);
        let spec = |path: &str, descending| SortSpec {
            path: path.into(),
            descending,
        };
        let index = |c: &[Chosen]| c.iter().map(|c| c.index).collect::<Vec<_>>();
        for sort in [
            vec![spec("riverKm", false)],
            vec![spec("riverKm", true), spec("name", false)],
            vec![spec("operator", true)],
            vec![spec("coordinates.lat", false), spec("id", true)],
        ] {
            let all = index(&order(&hits, &sort, 0..usize::MAX));
            assert_eq!(all.len(), hits.len());
            // What a stable sort of the stations' JSON objects gives.
            let mut stable: Vec<(SortKeys, usize)> = hits
                .iter()
                .map(|h| (SortKeys::of(&station_json(h.station, None), &sort), h.index))
                .collect();
            stable.sort_by(|(a, _), (b, _)| a.compare(b, &sort));
            assert_eq!(all, stable.iter().map(|(_, i)| *i).collect::<Vec<_>>());
            for keep in [0..1, 0..10, 5..17, 39..40, 30..100, 50..60] {
                let page = index(&order(&hits, &sort, keep.clone()));
                let end = keep.end.min(all.len());
                assert_eq!(page, all[keep.start.min(end)..end], "{keep:?}");
            }
        }
    }

    /// A whole station's CSV row written from its fields is the row of its JSON object:
    /// text needing quotes, missing optional values, a distance, every field as a column.
    #[test]
    fn csv_rows_from_fields_match_rows_from_json() {
        use crate::render::resources::{STATION_CSV, STATION_FIELDS, test_stations};
        let (full, bare) = test_stations::two();
        let mut columns: Vec<String> = STATION_CSV.iter().map(|c| c.to_string()).collect();
        columns.push("distance".into());
        let all_fields = STATION_FIELDS
            .iter()
            .filter(|f| {
                !matches!(
                    **f,
                    "coordinates" | "gaugeZero" | "parameters" | "characteristics"
                )
            })
            .map(|f| f.to_string())
            .collect();
        for columns in [columns, all_fields] {
            let meta = serde_json::json!({});
            let envelope = crate::render::encode::Given {
                meta: &meta,
                links: None,
            };
            let list = ListEncoder::new(&Csv, &envelope, "station", columns);
            for station in [&full, &bare] {
                for distance in [None, Some(3.25)] {
                    let (mut direct, mut via_json) = (Vec::new(), Vec::new());
                    assert!(list.whole_station(station, distance, false, &mut direct));
                    list.item(&station_json(station, distance), false, &mut via_json);
                    assert_eq!(String::from_utf8(direct), String::from_utf8(via_json));
                }
            }
        }
    }
}
