//! The catalog files of an import (stations, parameters, characteristic values): small, so
//! read whole, checked row by row and kept in memory.

use super::Problems;
use super::dialect::{self, CsvDialect, NOT_UTF8, NumberReader, TimeReader};
use super::mapping::{Mapping, TableMapping};
use super::source::{Inputs, line_of};
use crate::model::coords::gauss_krueger_to_wgs84;
use crate::model::ids::{CharacteristicId, ParameterId, StationId};
use crate::model::property::{property, vocabulary};
use crate::model::states;
use crate::model::{
    Characteristic, Coordinates, GaugeZero, Latest, Parameter, Period, Station, StationType, Text,
    normalize_state,
};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// A catalog row: its cells by our column names, and how its file writes numbers and times.
struct Row {
    cells: HashMap<String, String>,
    numbers: NumberReader,
    times: Arc<TimeReader>,
}

/// How a catalog file is read: the dialect of the import and the file's part of the mapping.
pub(super) struct CatalogReading<'a> {
    pub(super) dialect: &'a CsvDialect,
    pub(super) mapping: &'a TableMapping,
}

/// Reads a CSV file with a header row into (line number, row) pairs: lines skipped and `#`
/// lines before the header left out, columns renamed and constants added as the mapping
/// says, in the dialect's encoding and separator.
fn read_rows(
    path: &Path,
    required: &[&str],
    how: &CatalogReading<'_>,
    inputs: &Inputs<'_>,
    problems: &mut Problems,
) -> Vec<(u64, Row)> {
    // Read whole (a catalog file is small), so that line numbers can be told from the bytes
    // (see `rows::line_of`).
    let mut text = Vec::new();
    let read = inputs.open_text(path).and_then(|r| {
        dialect::decoded(r, how.dialect.encoding)
            .read_to_end(&mut text)
            .map_err(|e| format!("cannot read: {e}"))
    });
    if let Err(reason) = read {
        problems.add(path, 0, reason);
        return Vec::new();
    }
    if text.starts_with(b"\xEF\xBB\xBF") {
        text.drain(..3);
    }
    // The lines before the header: skipped ones, then `#` and blank ones.
    let mut start = 0;
    let mut skipped = 0u64;
    for i in 0.. {
        let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |e| start + e + 1);
        let line = &text[start..end];
        let before_header = i < how.dialect.skip_lines
            || line.first() == Some(&b'#')
            || line.iter().all(u8::is_ascii_whitespace) && end < text.len();
        if !before_header || end == start {
            break;
        }
        start = end;
        skipped += 1;
    }
    let body = &text[start..];
    let header_end = memchr::memchr(b'\n', body).map_or(body.len(), |e| e + 1);
    let delimiter = how
        .dialect
        .delimiter
        .unwrap_or_else(|| dialect::sniff_delimiter(&body[..header_end]));
    let numbers = NumberReader::new(how.dialect.decimal, delimiter);
    let times = Arc::new(TimeReader::new(how.dialect));
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .trim(csv::Trim::All)
        .from_reader(body);
    let line_of = |p: &csv::Position| skipped + line_of(p, body);
    let headers: Vec<String> = match reader.headers() {
        Ok(h) => h
            .iter()
            .map(|name| {
                // The file's column named in the mapping is ours.
                how.mapping
                    .columns
                    .iter()
                    .find(|(_, theirs)| theirs.as_str() == name)
                    .map_or(name, |(ours, _)| ours.as_str())
                    .to_owned()
            })
            .collect(),
        Err(e) if matches!(e.kind(), csv::ErrorKind::Utf8 { .. }) => {
            problems.add(path, skipped + 1, NOT_UTF8);
            return Vec::new();
        }
        Err(e) => {
            problems.add(path, skipped + 1, format!("bad header: {e}"));
            return Vec::new();
        }
    };
    let has =
        |name: &str| headers.iter().any(|h| h == name) || how.mapping.constants.contains_key(name);
    let missing: Vec<&&str> = required.iter().filter(|r| !has(r)).collect();
    if !missing.is_empty() {
        let mut problem = format!("missing column(s) {missing:?}");
        let named: Vec<&String> = how
            .mapping
            .columns
            .iter()
            .filter(|(ours, _)| missing.iter().any(|m| **m == ours.as_str()))
            .map(|(_, theirs)| theirs)
            .collect();
        if !named.is_empty() {
            problem.push_str(&format!(
                " (the mapping names {named:?}, which the header lacks)"
            ));
        }
        problems.add(path, skipped + 1, problem);
        return Vec::new();
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        match record {
            Ok(r) => {
                let line = r.position().map_or(0, line_of);
                let mut cells: HashMap<String, String> = headers
                    .iter()
                    .cloned()
                    .zip(r.iter().map(str::to_owned))
                    .collect();
                for (ours, value) in &how.mapping.constants {
                    let cell = cells.entry(ours.clone()).or_default();
                    if cell.is_empty() {
                        cell.clone_from(value);
                    }
                }
                rows.push((
                    line,
                    Row {
                        cells,
                        numbers,
                        times: Arc::clone(&times),
                    },
                ));
            }
            Err(e) => {
                let line = e.position().map_or(0, line_of);
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
    row.cells.get(key).map_or("", String::as_str)
}

fn opt_f64(row: &Row, key: &str) -> Result<Option<f64>, String> {
    match get(row, key) {
        "" => Ok(None),
        s => row
            .numbers
            .read(s)
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
            let e = opt_f64(row, "easting")?.ok_or("easting is required without lat/lon")?;
            let n = opt_f64(row, "northing")?.ok_or("northing is required without lat/lon")?;
            let epsg: u16 = match get(row, "epsg") {
                // The zone is the easting's first digit (zone · 10⁶ + 500 000 m).
                "" => gauss_krueger_epsg(e).ok_or_else(|| {
                    format!(
                        "epsg is required: easting {e} is not of a Gauss-Krüger zone 2-5 \
                         (2 500 000 … 5 999 999 m)"
                    )
                })?,
                epsg => epsg
                    .parse()
                    .map_err(|_| format!("epsg: '{epsg}' is not one of 31466–31469"))?,
            };
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

/// The EPSG code of the Gauss-Krüger zone an easting with its zone number is in (2-5:
/// 31466-31469), or None.
fn gauss_krueger_epsg(easting: f64) -> Option<u16> {
    let zone = (easting / 1_000_000.0).floor();
    (2.0..=5.0).contains(&zone).then(|| 31464 + zone as u16)
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
            let read = |t: &str| row.times.read(t.as_bytes(), None).map(|t| t.micros);
            let (start, end) = (read(s)?, read(e)?);
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
    (dialect, mapping): (&CsvDialect, &Mapping),
    inputs: &Inputs<'_>,
    problems: &mut Problems,
) -> CatalogInput {
    let how = |mapping| CatalogReading { dialect, mapping };
    let mut stations = Vec::new();
    let mut station_ids = HashSet::new();
    // Ids of rows rejected: what refers to them is not reported again.
    let mut rejected_stations: HashSet<String> = HashSet::new();
    let mut rejected_parameters: HashSet<(String, String)> = HashSet::new();
    let text = |row: &Row, name: &str| get(row, name).to_owned();
    if let Some(path) = paths.stations {
        let required = ["id", "name", "type", "state"];
        let how = how(&mapping.stations);
        for (line, row) in read_rows(path, &required, &how, inputs, problems) {
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
        let how = how(&mapping.parameters);
        for (line, row) in read_rows(path, &required, &how, inputs, problems) {
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
                Ok(p) => {
                    if property(&p.observed_property).is_none() {
                        problems.warn(
                            path,
                            line,
                            format_args!(
                                "parameter {}/{}: observedProperty '{}' is not one of the \
                                 vocabulary ({}): it gets no derived values and a line chart \
                                 (data/README.md)",
                                p.station,
                                p.id,
                                p.observed_property,
                                vocabulary()
                            ),
                        );
                    }
                    parameters.push(p)
                }
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
        let how = how(&mapping.characteristics);
        for (line, row) in read_rows(path, &required, &how, inputs, problems) {
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
