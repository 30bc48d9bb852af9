//! The catalog in memory: stations, parameters and characteristics, indexed by id and by
//! position. Small enough to hold whole (100 000 stations is a few tens of MB) and read-only
//! after load, so requests share it without locks.

use crate::ids::{CharacteristicId, ParameterId, StationId};
use crate::model::{Characteristic, Parameter, Station, StationType};
use crate::spatial::{BBox, Near, SpatialIndex};
use std::collections::HashMap;

pub struct Catalog {
    /// In the default list order: name (case-insensitive), then id.
    stations: Vec<Station>,
    by_id: HashMap<StationId, usize>,
    /// Per station, sorted by id.
    parameters: HashMap<StationId, Vec<Parameter>>,
    /// Per station, sorted by id.
    characteristics: HashMap<StationId, Vec<Characteristic>>,
    spatial: SpatialIndex,
}

/// Filters of `GET /stations`; all given ones must match.
#[derive(Debug, Default, Clone)]
pub struct StationFilter {
    /// Normalised `DE-XX` codes; any of them.
    pub states: Option<Vec<String>>,
    pub water_body_ids: Option<Vec<String>>,
    pub types: Option<Vec<StationType>>,
    pub bbox: Option<BBox>,
    pub near: Option<Near>,
}

/// Items grouped by station, each group sorted by `key` and allocated at its exact length: a
/// `Vec` grown by pushes holds room for four, twice the parameters a station usually has, and
/// with 100 000 stations that room was tens of MB.
fn group_by_station<T, K: Ord>(
    mut items: Vec<T>,
    key: impl Fn(&T) -> (&StationId, &K),
) -> HashMap<StationId, Vec<T>> {
    items.sort_by(|a, b| key(a).cmp(&key(b)));
    let mut lengths: Vec<usize> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match lengths.last_mut() {
            Some(n) if i > 0 && key(&items[i - 1]).0 == key(item).0 => *n += 1,
            _ => lengths.push(1),
        }
    }
    let mut groups = HashMap::with_capacity(lengths.len());
    let mut rest = items.into_iter();
    for len in lengths {
        let mut group = Vec::with_capacity(len);
        group.extend(rest.by_ref().take(len));
        if let Some(first) = group.first() {
            groups.insert(key(first).0.clone(), group);
        }
    }
    groups
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
        characteristics: Vec<Characteristic>,
    ) -> Self {
        stations.sort_by(|a, b| {
            a.name
                .to_lowercase()
                .cmp(&b.name.to_lowercase())
                .then_with(|| a.id.cmp(&b.id))
        });
        let by_id = stations
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.clone(), i))
            .collect();
        let by_station = group_by_station(parameters, |p| (&p.station, &p.id));
        let chars = group_by_station(characteristics, |c| (&c.station, &c.id));
        let spatial = SpatialIndex::new(
            stations
                .iter()
                .map(|s| (s.coordinates.lon, s.coordinates.lat)),
        );
        Self {
            stations,
            by_id,
            parameters: by_station,
            characteristics: chars,
            spatial,
        }
    }

    pub fn stations(&self) -> &[Station] {
        &self.stations
    }

    pub fn station(&self, id: &StationId) -> Option<&Station> {
        self.by_id.get(id).map(|&i| &self.stations[i])
    }

    pub fn parameters(&self, station: &StationId) -> &[Parameter] {
        self.parameters.get(station).map_or(&[], Vec::as_slice)
    }

    pub fn parameter(&self, station: &StationId, id: &ParameterId) -> Option<&Parameter> {
        self.parameters(station).iter().find(|p| &p.id == id)
    }

    pub fn characteristics(&self, station: &StationId) -> &[Characteristic] {
        self.characteristics.get(station).map_or(&[], Vec::as_slice)
    }

    pub fn characteristic(
        &self,
        station: &StationId,
        id: &CharacteristicId,
    ) -> Option<&Characteristic> {
        self.characteristics(station).iter().find(|c| &c.id == id)
    }

    /// Stations matching every given filter: nearest first when `near` is given, otherwise in
    /// the default order.
    pub fn find_stations(&self, filter: &StationFilter) -> Vec<StationHit<'_>> {
        let attributes_match = |s: &Station| {
            filter.states.as_ref().is_none_or(|v| v.contains(&s.state))
                && filter
                    .water_body_ids
                    .as_ref()
                    .is_none_or(|v| v.contains(&s.water_body_id))
                && filter.types.as_ref().is_none_or(|v| v.contains(&s.kind))
        };
        let in_bbox = |s: &Station| {
            filter
                .bbox
                .is_none_or(|b| b.contains(s.coordinates.lon, s.coordinates.lat))
        };
        if let Some(near) = &filter.near {
            return self
                .spatial
                .within_radius(near)
                .into_iter()
                .map(|(index, d)| StationHit {
                    station: &self.stations[index],
                    index,
                    distance_km: Some(d),
                })
                .filter(|h| attributes_match(h.station) && in_bbox(h.station))
                .collect();
        }
        let hit = |index: usize| StationHit {
            station: &self.stations[index],
            index,
            distance_km: None,
        };
        let matching = |h: &StationHit<'_>| attributes_match(h.station);
        match &filter.bbox {
            Some(bbox) => self
                .spatial
                .within_bbox(bbox)
                .into_iter()
                .map(hit)
                .filter(matching)
                .collect(),
            None => (0..self.stations.len()).map(hit).filter(matching).collect(),
        }
    }
}
