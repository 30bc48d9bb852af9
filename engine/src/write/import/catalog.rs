//! The catalog files of an import (stations, parameters, characteristic values): small, so
//! read whole, checked row by row and kept in memory.

use super::Problems;
use super::source::{Inputs, NOT_UTF8, line_of};
use crate::model::coords::gauss_krueger_to_wgs84;
use crate::model::ids::{CharacteristicId, ParameterId, StationId};
use crate::model::states;
use crate::model::{
    Characteristic, Coordinates, GaugeZero, Latest, Micros, Parameter, Period, Station,
    StationType, Text, instant, normalize_state,
};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;

type Row = HashMap<String, String>;

/// Reads a CSV file with a header row into (line number, row) pairs.
fn read_rows(
    path: &Path,
    required: &[&str],
    inputs: &Inputs<'_>,
    problems: &mut Problems,
) -> Vec<(u64, Row)> {
    // Read whole (a catalog file is small), so that line numbers can be told from the bytes
    // (see `rows::line_of`).
    let mut text = Vec::new();
    let read = inputs.open_text(path).and_then(|mut r| {
        r.read_to_end(&mut text)
            .map_err(|e| format!("cannot read: {e}"))
    });
    if let Err(reason) = read {
        problems.add(path, 0, reason);
        return Vec::new();
    }
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_slice());
    let headers: Vec<String> = match reader.headers() {
        Ok(h) => h.iter().map(str::to_owned).collect(),
        Err(e) => {
            problems.add(path, 1, format!("bad header: {e}"));
            return Vec::new();
        }
    };
    let missing: Vec<&&str> = required
        .iter()
        .filter(|r| !headers.iter().any(|h| h == **r))
        .collect();
    if !missing.is_empty() {
        problems.add(path, 1, format!("missing column(s) {missing:?}"));
        return Vec::new();
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        match record {
            Ok(r) => {
                let line = r.position().map_or(0, |p| line_of(p, &text));
                rows.push((
                    line,
                    headers
                        .iter()
                        .cloned()
                        .zip(r.iter().map(str::to_owned))
                        .collect(),
                ));
            }
            Err(e) => {
                let line = e.position().map_or(0, |p| line_of(p, &text));
                match e.kind() {
                    csv::ErrorKind::Utf8 { .. } => problems.add(path, line, NOT_UTF8),
                    _ => problems.add(path, line, format!("malformed CSV: {e}")),
                }
            }
        }
    }
    rows
}

fn get<'a>(row: &'a Row, key: &str) -> &'a str {
    row.get(key).map_or("", String::as_str)
}

fn opt_f64(row: &Row, key: &str) -> Result<Option<f64>, String> {
    match get(row, key) {
        "" => Ok(None),
        s => s
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(Some)
            .ok_or_else(|| format!("{key}: '{s}' is not a number")),
    }
}

fn req<'a>(row: &'a Row, key: &str) -> Result<&'a str, String> {
    match get(row, key) {
        "" => Err(format!("{key} is required")),
        s => Ok(s),
    }
}

/// A time with an offset as the API's `from` and `to` take it ([`instant`]), as UTC
/// microseconds and the offset it was written with (None for `Z`).
pub(super) fn parse_time(s: &str) -> Result<(Micros, Option<i32>), String> {
    instant::parse(s).ok_or_else(|| {
        format!(
            "'{s}' is not a time with an offset; write ISO 8601 such as {} \
             (a time without an offset is ambiguous)",
            instant::FORMS
        )
    })
}

/// A station row as a station, and what looks wrong with it (warnings).
fn station_from(row: &Row) -> Result<(Station, Vec<String>), String> {
    let id: StationId = req(row, "id")?.parse().map_err(|e| format!("{e}"))?;
    let kind: StationType = req(row, "type")?
        .parse()
        .map_err(|e| format!("type: '{}': {e}", get(row, "type")))?;
    let state = normalize_state(req(row, "state")?).ok_or_else(|| {
        format!(
            "state: '{}' is not a state code like DE-NW or NW",
            get(row, "state")
        )
    })?;
    let mut warnings = Vec::new();
    let grid = ["easting", "northing", "epsg"]
        .map(|k| !get(row, k).is_empty())
        .contains(&true);
    let coordinates = match (opt_f64(row, "lat")?, opt_f64(row, "lon")?) {
        (Some(lat), Some(lon)) => {
            if !(-90.0..=90.0).contains(&lat) {
                return Err(format!(
                    "lat: '{}' is not between -90 and 90",
                    get(row, "lat")
                ));
            }
            if !(-180.0..=180.0).contains(&lon) {
                return Err(format!(
                    "lon: '{}' is not between -180 and 180",
                    get(row, "lon")
                ));
            }
            if grid {
                warnings
                    .push("both lat/lon and easting/northing/epsg given: lat/lon used".to_owned());
            }
            Coordinates { lat, lon }
        }
        (None, None) if !grid => {
            return Err("no coordinates: give lat and lon, or easting, northing and epsg".into());
        }
        (None, None) => {
            let epsg = req(row, "epsg")?;
            let epsg: u16 = epsg
                .parse()
                .map_err(|_| format!("epsg: '{epsg}' is not one of 31466–31469"))?;
            let e = opt_f64(row, "easting")?.ok_or("easting is required without lat/lon")?;
            let n = opt_f64(row, "northing")?.ok_or("northing is required without lat/lon")?;
            let (lat, lon) = gauss_krueger_to_wgs84(epsg, e, n)?;
            Coordinates {
                lat: (lat * 1e7).round() / 1e7,
                lon: (lon * 1e7).round() / 1e7,
            }
        }
        _ => return Err("give both lat and lon, or easting, northing and epsg".into()),
    };
    warnings.extend(states::implausible(&state, coordinates));
    let surface = kind == StationType::SurfaceWater;
    let station = Station {
        id,
        name: req(row, "name")?.to_owned(),
        kind,
        state: state.into(),
        operator: get(row, "operator").into(),
        water_body_id: get(row, "waterBodyId").into(),
        water_body_name: get(row, "waterBodyName").into(),
        coordinates,
        river_km: opt_f64(row, "riverKm")?.filter(|_| surface),
        gauge_zero: opt_f64(row, "gaugeZero")?
            .filter(|_| surface)
            .map(|value| GaugeZero {
                value,
                unit: "m".into(),
                datum: get(row, "gaugeZeroDatum").into(),
            }),
        ground_level: opt_f64(row, "groundLevel")?.filter(|_| kind == StationType::Groundwater),
        elevation: opt_f64(row, "elevation")?.filter(|_| kind == StationType::Weather),
    };
    Ok((station, warnings))
}

fn parameter_from(row: &Row) -> Result<Parameter, String> {
    let interval = req(row, "interval")?;
    interval
        .parse::<crate::model::duration::IsoDuration>()
        .map_err(|e| format!("interval: {e}"))?;
    Ok(Parameter {
        station: req(row, "stationId")?.parse().map_err(|e| format!("{e}"))?,
        id: req(row, "id")?.parse().map_err(|e| format!("{e}"))?,
        name: req(row, "name")?.into(),
        observed_property: req(row, "observedProperty")?.into(),
        unit: req(row, "unit")?.into(),
        interval: interval.into(),
        availability: Vec::new(),
        latest: None,
    })
}

fn characteristic_from(row: &Row) -> Result<Characteristic, String> {
    let period = match (get(row, "periodStart"), get(row, "periodEnd")) {
        ("", "") => None,
        (s, e) => {
            let ((start, _), (end, _)) = (parse_time(s)?, parse_time(e)?);
            if start > end {
                return Err(format!("periodStart '{s}' is after periodEnd '{e}'"));
            }
            Some(Period { start, end })
        }
    };
    Ok(Characteristic {
        station: req(row, "stationId")?.parse().map_err(|e| format!("{e}"))?,
        id: req(row, "id")?
            .parse::<CharacteristicId>()
            .map_err(|e| format!("{e}"))?,
        name: req(row, "name")?.into(),
        kind: req(row, "type")?.parse()?,
        parameter: req(row, "parameterId")?
            .parse()
            .map_err(|e| format!("{e}"))?,
        value: opt_f64(row, "value")?.ok_or("value is required")?,
        unit: req(row, "unit")?.into(),
        period,
        description: Some(get(row, "description"))
            .filter(|d| !d.is_empty())
            .map(Text::from),
    })
}

/// What the catalog files of an import hold, checked.
#[derive(Default)]
pub(super) struct CatalogInput {
    pub(super) stations: Vec<Station>,
    pub(super) parameters: Vec<Parameter>,
    pub(super) characteristics: Vec<Characteristic>,
}

impl CatalogInput {
    /// `self` with `newer`'s entries added; an entry with the id of one already there
    /// replaces it (an append that brings a station again updates it). A parameter brought
    /// again keeps what the values it had say of it (availability, newest value): those are
    /// derived at publish, from the months written and those carried over with them.
    pub(super) fn updated_by(self, mut newer: CatalogInput) -> CatalogInput {
        let mut derived: HashMap<(StationId, ParameterId), (Vec<Period>, Option<Latest>)> = self
            .parameters
            .iter()
            .map(|p| {
                let key = (p.station.clone(), p.id.clone());
                (key, (p.availability.clone(), p.latest.clone()))
            })
            .collect();
        for p in &mut newer.parameters {
            if let Some((availability, latest)) = derived.remove(&(p.station.clone(), p.id.clone()))
            {
                p.availability = availability;
                p.latest = latest;
            }
        }
        fn merge<T, K: Eq + std::hash::Hash>(
            old: Vec<T>,
            new: Vec<T>,
            key: impl Fn(&T) -> K,
        ) -> Vec<T> {
            let replaced: HashSet<K> = new.iter().map(&key).collect();
            let mut out: Vec<T> = old
                .into_iter()
                .filter(|t| !replaced.contains(&key(t)))
                .collect();
            out.extend(new);
            out
        }
        CatalogInput {
            stations: merge(self.stations, newer.stations, |s| s.id.clone()),
            parameters: merge(self.parameters, newer.parameters, |p| {
                (p.station.clone(), p.id.clone())
            }),
            characteristics: merge(self.characteristics, newer.characteristics, |c| {
                (c.station.clone(), c.id.clone())
            }),
        }
    }
}

/// The catalog files of an import (any of them may be left out when appending).
pub(super) struct CatalogPaths<'a> {
    pub(super) stations: Option<&'a Path>,
    pub(super) parameters: Option<&'a Path>,
    pub(super) characteristics: Option<&'a Path>,
}

/// Reads and checks the catalog files; bad rows go to `problems`. Parameters may name
/// stations of `existing` (what the dataset holds, when appending) as well as new ones, and
/// characteristics their parameters.
pub(super) fn read_catalog(
    paths: &CatalogPaths<'_>,
    existing: &CatalogInput,
    inputs: &Inputs<'_>,
    problems: &mut Problems,
) -> CatalogInput {
    let mut stations = Vec::new();
    let mut station_ids = HashSet::new();
    // Ids of rows rejected: what refers to them is not reported again.
    let mut rejected_stations: HashSet<String> = HashSet::new();
    let mut rejected_parameters: HashSet<(String, String)> = HashSet::new();
    let text = |row: &Row, name: &str| row.get(name).cloned().unwrap_or_default();
    if let Some(path) = paths.stations {
        for (line, row) in read_rows(path, &["id", "name", "type", "state"], inputs, problems) {
            match station_from(&row) {
                Ok((s, _)) if !station_ids.insert(s.id.clone()) => {
                    problems.add(path, line, format!("duplicate station id {}", s.id))
                }
                Ok((s, warnings)) => {
                    for w in warnings {
                        problems.warn(path, line, format_args!("station {}: {w}", s.id));
                    }
                    stations.push(s)
                }
                Err(e) => {
                    rejected_stations.insert(text(&row, "id"));
                    problems.add(path, line, e)
                }
            }
        }
    }
    station_ids.extend(existing.stations.iter().map(|s| s.id.clone()));
    let mut parameters = Vec::new();
    let mut seen: HashSet<(StationId, ParameterId)> = HashSet::new();
    if let Some(path) = paths.parameters {
        let required = [
            "stationId",
            "id",
            "name",
            "observedProperty",
            "unit",
            "interval",
        ];
        for (line, row) in read_rows(path, &required, inputs, problems) {
            match parameter_from(&row) {
                Ok(p) if rejected_stations.contains(p.station.as_str()) => problems.follow_up(),
                Ok(p) if !station_ids.contains(&p.station) => problems.add(
                    path,
                    line,
                    format!("stationId: '{}' is not a station of the catalog", p.station),
                ),
                Ok(p) if !seen.insert((p.station.clone(), p.id.clone())) => {
                    problems.add(path, line, format!("duplicate parameter {}", p.id))
                }
                Ok(p) => parameters.push(p),
                Err(e) => {
                    rejected_parameters.insert((text(&row, "stationId"), text(&row, "id")));
                    problems.add(path, line, e)
                }
            }
        }
    }
    let mut parameter_ids = seen;
    parameter_ids.extend(
        existing
            .parameters
            .iter()
            .map(|p| (p.station.clone(), p.id.clone())),
    );
    let mut characteristics = Vec::new();
    if let Some(path) = paths.characteristics {
        let mut seen = HashSet::new();
        let required = [
            "stationId",
            "id",
            "name",
            "type",
            "parameterId",
            "value",
            "unit",
        ];
        for (line, row) in read_rows(path, &required, inputs, problems) {
            match characteristic_from(&row) {
                Ok(c)
                    if rejected_stations.contains(c.station.as_str())
                        || rejected_parameters
                            .contains(&(c.station.to_string(), c.parameter.to_string())) =>
                {
                    problems.follow_up()
                }
                Ok(c) if !station_ids.contains(&c.station) => problems.add(
                    path,
                    line,
                    format!("stationId: '{}' is not a station of the catalog", c.station),
                ),
                Ok(c) if !parameter_ids.contains(&(c.station.clone(), c.parameter.clone())) => {
                    problems.add(
                        path,
                        line,
                        format!(
                            "parameterId: '{}' is not a parameter of station '{}'",
                            c.parameter, c.station
                        ),
                    )
                }
                Ok(c) if !seen.insert((c.station.clone(), c.id.clone())) => {
                    problems.add(path, line, format!("duplicate characteristic {}", c.id))
                }
                Ok(c) => characteristics.push(c),
                Err(e) => problems.add(path, line, e),
            }
        }
    }
    CatalogInput {
        stations,
        parameters,
        characteristics,
    }
}
