//! The catalog in memory: stations, parameters and characteristics, indexed by id and by
//! position. Small enough to hold whole (100 000 stations is a few tens of MB) and read-only
//! after load, so requests share it without locks.

pub(crate) mod search;
pub(crate) mod spatial;

use crate::catalog::search::TextQuery;
use crate::catalog::spatial::{BBox, Near, SpatialIndex};
use crate::model::ids::{CharacteristicId, ParameterId, StationId};
use crate::model::{Characteristic, Parameter, Period, Station, StationType};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

pub struct Catalog {
    stations: Arc<StationList>,
    /// All parameters, sorted by station and id; station `i`'s are `parameter_runs[i]`.
    parameters: Vec<Parameter>,
    parameter_runs: Vec<Range<usize>>,
    characteristics: Arc<CharacteristicList>,
}

/// The stations with their indexes: unchanged by an append of values, so a version opened
/// beside the one before it holds them once with it ([`Catalog::beside`]).
struct StationList {
    /// In the default list order: name (case-insensitive), then id.
    stations: Vec<Station>,
    by_id: HashMap<StationId, usize>,
    spatial: SpatialIndex,
    /// The stations' bounding box widened by [`NEIGHBOURHOOD_KM`]: where a point or box asked
    /// for is plausibly meant (see [`Catalog::neighbourhood`]).
    neighbourhood: Option<BBox>,
}

/// All characteristics, sorted by station and id; station `i`'s are `runs[i]`. Shared as the
/// stations are: at 200 000 station-years they are most of the catalog.
struct CharacteristicList {
    items: Vec<Characteristic>,
    runs: Vec<Range<usize>>,
}

/// How far around the stations a point or box asked for is taken to be meant as written.
pub const NEIGHBOURHOOD_KM: f64 = 100.0;

/// Filters of `GET /stations`; all given ones must match.
#[derive(Debug, Default, Clone)]
pub struct StationFilter {
    /// Normalised `DE-XX` codes; any of them.
    pub states: Option<Vec<String>>,
    pub water_body_ids: Option<Vec<String>>,
    pub types: Option<Vec<StationType>>,
    pub bbox: Option<BBox>,
    pub near: Option<Near>,
    /// `q`: text in the station's name or its water body's name.
    pub text: Option<TextQuery>,
}

/// Sorts `items` by station and `key` in place and returns where each station's items are:
/// `runs[i]` for the station at position `i`. One vector for every station, sorted where it
/// was decoded: a vector per station (in a map keyed by a copy of its id) cost an allocation
/// per station, and regrouping left the decoded vector behind as memory the allocator kept.
/// Items of a station the catalog does not hold belong to no run.
fn runs_by_station<T, K: Ord>(
    items: &mut [T],
    key: impl Fn(&T) -> (&StationId, &K),
    by_id: &HashMap<StationId, usize>,
    stations: usize,
) -> Vec<Range<usize>> {
    items.sort_unstable_by(|a, b| key(a).cmp(&key(b)));
    let mut runs = vec![0..0; stations];
    let mut start = 0;
    while let Some(first) = items.get(start) {
        let station = key(first).0;
        let len = items[start..]
            .iter()
            .take_while(|x| key(x).0 == station)
            .count();
        if let Some(&i) = by_id.get(station) {
            runs[i] = start..start + len;
        }
        start += len;
    }
    runs
}

/// Copies each station's own texts (id, name) so that they lie in memory in the list's
/// order. Loaded in file order and then sorted, a station's texts lay scattered, and writing
/// a whole list waited on a cache miss for nearly every one of them (100 000 stations as
/// JSON: 38 -> 28 ms). All copies are made before the originals are freed, so that they
/// take fresh memory one after the other.
fn texts_in_list_order(stations: &mut [Station]) {
    let copies: Vec<(StationId, String)> = stations
        .iter()
        .map(|s| (s.id.relocated(), s.name.as_str().to_owned()))
        .collect();
    for (s, (id, name)) in stations.iter_mut().zip(copies) {
        s.id = id;
        s.name = name;
    }
}

/// Points an item's station id at the catalog's copy of that id (see
/// [`texts_in_list_order`]), so that each id is held once.
fn share_station_id(id: &mut StationId, by_id: &HashMap<StationId, usize>) {
    if let Some((shared, _)) = by_id.get_key_value(id) {
        *id = shared.clone();
    }
}

/// Case-insensitive order of station names, without allocating for ASCII names (sorting
/// 100 000 stations lowercased both names in each of ~1.7 million comparisons).
fn name_order(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.bytes()
            .map(|c| c.to_ascii_lowercase())
            .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
    } else {
        a.to_lowercase().cmp(&b.to_lowercase())
    }
}

/// A station that matched, with its distance when the filter had `near`.
#[derive(Debug, Clone, Copy)]
pub struct StationHit<'a> {
    pub station: &'a Station,
    /// Its position in [`Catalog::stations`], for answers that outlive the borrow (streamed).
    pub index: usize,
    pub distance_km: Option<f64>,
}

impl Catalog {
    pub fn new(
        mut stations: Vec<Station>,
        parameters: Vec<Parameter>,
        mut characteristics: Vec<Characteristic>,
    ) -> Self {
        stations
            .sort_unstable_by(|a, b| name_order(&a.name, &b.name).then_with(|| a.id.cmp(&b.id)));
        texts_in_list_order(&mut stations);
        let by_id: HashMap<StationId, usize> = stations
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.clone(), i))
            .collect();
        for c in characteristics.iter_mut() {
            share_station_id(&mut c.station, &by_id);
        }
        let runs = runs_by_station(
            &mut characteristics,
            |c| (&c.station, &c.id),
            &by_id,
            stations.len(),
        );
        let points = || {
            stations
                .iter()
                .map(|s| (s.coordinates.lon, s.coordinates.lat))
        };
        let spatial = SpatialIndex::new(points());
        let neighbourhood = BBox::around(points(), NEIGHBOURHOOD_KM);
        let stations = Arc::new(StationList {
            stations,
            by_id,
            spatial,
            neighbourhood,
        });
        let characteristics = Arc::new(CharacteristicList {
            items: characteristics,
            runs,
        });
        Self::of(stations, parameters, characteristics)
    }

    /// A catalog of `parameters` with this one's stations and characteristics, held once
    /// for both: a new version whose stations and characteristics tables are this version's
    /// (an append of values changes only the parameters table).
    pub fn beside(&self, parameters: Vec<Parameter>) -> Self {
        Self::of(
            Arc::clone(&self.stations),
            parameters,
            Arc::clone(&self.characteristics),
        )
    }

    fn of(
        stations: Arc<StationList>,
        mut parameters: Vec<Parameter>,
        characteristics: Arc<CharacteristicList>,
    ) -> Self {
        for p in parameters.iter_mut() {
            share_station_id(&mut p.station, &stations.by_id);
        }
        let parameter_runs = runs_by_station(
            &mut parameters,
            |p| (&p.station, &p.id),
            &stations.by_id,
            stations.stations.len(),
        );
        Self {
            stations,
            parameters,
            parameter_runs,
            characteristics,
        }
    }

    /// Whether this catalog holds its stations and characteristics once with `other`.
    pub fn shares_stations_with(&self, other: &Catalog) -> bool {
        Arc::ptr_eq(&self.stations, &other.stations)
            && Arc::ptr_eq(&self.characteristics, &other.characteristics)
    }

    /// The stations' bounding box widened by [`NEIGHBOURHOOD_KM`] (`None` without stations).
    /// A `near` point or a `bbox` outside it whose lon and lat the other way round fall
    /// inside was most likely typed lat,lon, as maps show it.
    pub fn neighbourhood(&self) -> Option<BBox> {
        self.stations.neighbourhood
    }

    pub fn stations(&self) -> &[Station] {
        &self.stations.stations
    }

    /// About how many bytes the catalog holds: its lists, their indexes, each station's own
    /// texts (id, name) and each parameter's availability. Texts shared across the catalog
    /// (states, units, water bodies) are few and left out.
    pub fn memory_size(&self) -> usize {
        self.parameters_size() + self.lists_size()
    }

    /// About how many bytes the catalog holds that `other` does not hold too: all of them,
    /// or its parameters alone where it holds the stations and characteristics once with
    /// `other` ([`Catalog::beside`]).
    pub fn memory_size_apart_from(&self, other: &Catalog) -> usize {
        if self.shares_stations_with(other) {
            self.parameters_size()
        } else {
            self.memory_size()
        }
    }

    fn parameters_size(&self) -> usize {
        use std::mem::size_of;
        let parameters: usize = self
            .parameters
            .iter()
            .map(|p| size_of::<Parameter>() + p.availability.len() * size_of::<Period>())
            .sum();
        parameters + self.parameter_runs.len() * size_of::<Range<usize>>()
    }

    /// The stations, characteristics and their indexes (the id map's entries and control
    /// bytes, the R-tree's points, the runs).
    fn lists_size(&self) -> usize {
        use std::mem::size_of;
        let stations: usize = self
            .stations()
            .iter()
            .map(|s| size_of::<Station>() + s.id.as_str().len() + s.name.len())
            .sum();
        let characteristics = self.characteristics.items.len() * size_of::<Characteristic>();
        let indexes = self.stations().len()
            * (2 * (size_of::<StationId>() + size_of::<usize>()) + 48)
            + self.characteristics.runs.len() * size_of::<Range<usize>>();
        stations + characteristics + indexes
    }

    /// The ids nearest `typed` (a station id mistyped: a digit or two off, a letter left
    /// out), nearest first, at most `most` of them; none within reach gives none.
    pub fn ids_near(&self, typed: &str, most: usize) -> Vec<&StationId> {
        let reach = search::typo_reach(typed);
        let mut near: Vec<(usize, &StationId)> = self
            .stations()
            .iter()
            .filter_map(|s| Some((search::edits_within(typed, s.id.as_str(), reach)?, &s.id)))
            .collect();
        near.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        near.into_iter().take(most).map(|(_, id)| id).collect()
    }

    pub fn station(&self, id: &StationId) -> Option<&Station> {
        let list = &self.stations;
        list.by_id.get(id).map(|&i| &list.stations[i])
    }

    pub fn parameters(&self, station: &StationId) -> &[Parameter] {
        self.run(station, &self.parameters, &self.parameter_runs)
    }

    pub fn parameter(&self, station: &StationId, id: &ParameterId) -> Option<&Parameter> {
        self.parameters(station).iter().find(|p| &p.id == id)
    }

    pub fn characteristics(&self, station: &StationId) -> &[Characteristic] {
        let list = &self.characteristics;
        self.run(station, &list.items, &list.runs)
    }

    /// A station's part of `items`; nothing for a station the catalog does not hold.
    fn run<'a, T>(&self, station: &StationId, items: &'a [T], runs: &[Range<usize>]) -> &'a [T] {
        self.stations
            .by_id
            .get(station)
            .and_then(|&i| runs.get(i))
            .and_then(|r| items.get(r.clone()))
            .unwrap_or(&[])
    }

    pub fn characteristic(
        &self,
        station: &StationId,
        id: &CharacteristicId,
    ) -> Option<&Characteristic> {
        self.characteristics(station).iter().find(|c| &c.id == id)
    }

    /// Stations matching every given filter, nearest first when `near` is given, otherwise in
    /// the default order: how many there are, and those at positions `keep` of that order. A
    /// page of a long list is a few hundred of 100 000 stations, and collecting every match
    /// for it was most of its time (200 of 100 000: 2.3 ms before the first byte).
    pub fn find_stations(
        &self,
        filter: &StationFilter,
        keep: Range<usize>,
    ) -> (usize, Vec<StationHit<'_>>) {
        let attributes_match = |s: &Station| {
            filter
                .states
                .as_ref()
                .is_none_or(|v| v.iter().any(|x| **x == *s.state))
                && filter
                    .water_body_ids
                    .as_ref()
                    .is_none_or(|v| v.iter().any(|x| **x == *s.water_body_id))
                && filter.types.as_ref().is_none_or(|v| v.contains(&s.kind))
                && filter.text.as_ref().is_none_or(|q| {
                    q.matches([s.name.as_str(), &*s.water_body_name, s.id.as_str()])
                })
        };
        let in_bbox = |s: &Station| {
            filter
                .bbox
                .is_none_or(|b| b.contains(s.coordinates.lon, s.coordinates.lat))
        };
        if let Some(near) = &filter.near {
            let hits = self
                .stations
                .spatial
                .within_radius(near)
                .into_iter()
                .map(|(index, d)| StationHit {
                    station: &self.stations()[index],
                    index,
                    distance_km: Some(d),
                })
                .filter(|h| attributes_match(h.station) && in_bbox(h.station));
            return count_keeping(hits, keep);
        }
        let hit = |index: usize| StationHit {
            station: &self.stations()[index],
            index,
            distance_km: None,
        };
        let matching = |h: &StationHit<'_>| attributes_match(h.station);
        match &filter.bbox {
            Some(bbox) => {
                let hits = self.stations.spatial.within_bbox(bbox).into_iter().map(hit);
                count_keeping(hits.filter(matching), keep)
            }
            None => count_keeping((0..self.stations().len()).map(hit).filter(matching), keep),
        }
    }
}

/// How many `hits` there are, and those at positions `keep`.
fn count_keeping<'a>(
    hits: impl Iterator<Item = StationHit<'a>>,
    keep: Range<usize>,
) -> (usize, Vec<StationHit<'a>>) {
    let mut kept = Vec::new();
    let mut total = 0;
    for h in hits {
        if keep.contains(&total) {
            kept.push(h);
        }
        total += 1;
    }
    (total, kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Coordinates, Parameter};

    fn station(id: &str, name: &str) -> Station {
        Station {
            id: id.parse().unwrap(),
            name: name.into(),
            kind: StationType::Weather,
            state: "DE-BY".into(),
            operator: "DWD".into(),
            water_body_id: "".into(),
            water_body_name: "".into(),
            coordinates: Coordinates {
                lat: 50.0,
                lon: 10.0,
            },
            river_km: None,
            gauge_zero: None,
            ground_level: None,
            elevation: Some(1.0),
        }
    }

    fn parameter(station: &str, id: &str) -> Parameter {
        Parameter {
            station: station.parse().unwrap(),
            id: id.parse().unwrap(),
            name: id.into(),
            observed_property: "x".into(),
            unit: "m".into(),
            interval: "PT15M".into(),
            availability: Vec::new(),
            latest: None,
        }
    }

    fn ids<'a>(items: impl IntoIterator<Item = &'a Parameter>) -> Vec<&'a str> {
        items.into_iter().map(|p| p.id.as_str()).collect()
    }

    /// Each station finds exactly its own parameters, sorted by id, wherever they were in the
    /// file; a station without any, or one the catalog does not hold, finds none.
    #[test]
    fn parameters_are_found_by_station_in_id_order() {
        let catalog = Catalog::new(
            vec![station("s2", "b"), station("s1", "a"), station("s3", "c")],
            vec![
                parameter("s2", "q"),
                parameter("s1", "z"),
                parameter("gone", "a"),
                parameter("s2", "a"),
                parameter("s1", "b"),
            ],
            Vec::new(),
        );
        let of = |s: &str| ids(catalog.parameters(&s.parse().unwrap()));
        assert_eq!(of("s1"), ["b", "z"]);
        assert_eq!(of("s2"), ["a", "q"]);
        assert!(of("s3").is_empty());
        assert!(of("gone").is_empty());
        let s2 = "s2".parse().unwrap();
        let q = catalog.parameter(&s2, &"q".parse().unwrap());
        assert_eq!(q.map(|p| p.station.as_str()), Some("s2"));
        // The parameter names its station with the station's own copy of the id.
        let station = catalog.station(&s2).map(|s| s.id.as_str());
        assert!(std::ptr::eq(q.unwrap().station.as_str(), station.unwrap()));
        assert!(catalog.characteristics(&s2).is_empty());
    }

    /// Names compare case-insensitively, ASCII or not, then by id.
    #[test]
    fn stations_are_in_name_order() {
        let catalog = Catalog::new(
            vec![
                station("s1", "bonn"),
                station("s2", "Aachen"),
                station("s3", "Übach"),
                station("s4", "äpfel"),
                station("s0", "Bonn"),
                station("s5", "zell"),
            ],
            Vec::new(),
            Vec::new(),
        );
        let order: Vec<&str> = catalog.stations().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(order, ["s2", "s0", "s1", "s5", "s4", "s3"]);
        assert_eq!(name_order("ABC", "abd"), Ordering::Less);
        assert_eq!(name_order("Zoo", "äpfel"), Ordering::Less);
        assert_eq!(name_order("Straße", "STRASSE"), "straße".cmp("strasse"));
    }

    /// A page counts every match and keeps only its own, the same stations as the whole
    /// list's slice at its positions, with and without a filter.
    #[test]
    fn pages_count_every_match_and_keep_their_own() {
        let mut stations: Vec<Station> = (0..50)
            .map(|i| station(&format!("s{i:02}"), &format!("n{i:02}")))
            .collect();
        for s in stations.iter_mut().step_by(3) {
            s.state = "DE-NW".into();
        }
        let catalog = Catalog::new(stations, Vec::new(), Vec::new());
        let nw = StationFilter {
            states: Some(vec!["DE-NW".into()]),
            ..StationFilter::default()
        };
        for filter in [StationFilter::default(), nw] {
            let (total, all) = catalog.find_stations(&filter, 0..usize::MAX);
            assert_eq!(total, all.len());
            for keep in [0..0, 0..5, 3..10, 15..usize::MAX, 40..60, 99..100] {
                let (n, page) = catalog.find_stations(&filter, keep.clone());
                assert_eq!(n, total);
                let want: Vec<usize> = all
                    .iter()
                    .map(|h| h.index)
                    .skip(keep.start)
                    .take(keep.len())
                    .collect();
                let got: Vec<usize> = page.iter().map(|h| h.index).collect();
                assert_eq!(got, want, "{keep:?}");
            }
        }
    }
}
