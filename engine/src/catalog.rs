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
        let mut by_station: HashMap<StationId, Vec<Parameter>> = HashMap::new();
        for p in parameters {
            by_station.entry(p.station.clone()).or_default().push(p);
        }
        by_station
            .values_mut()
            .for_each(|v| v.sort_by(|a, b| a.id.cmp(&b.id)));
        let mut chars: HashMap<StationId, Vec<Characteristic>> = HashMap::new();
        for c in characteristics {
            chars.entry(c.station.clone()).or_default().push(c);
        }
        chars
            .values_mut()
            .for_each(|v| v.sort_by(|a, b| a.id.cmp(&b.id)));
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
