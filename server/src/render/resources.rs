//! Catalog resources as JSON objects in the field order of the standard, and the generic
//! `fields` projection and `sort` over them (dot paths, nesting kept, text case-insensitive).

use crate::render::out::json_string;
use crate::render::timefmt::TimeFormatter;
use hydro_engine::{Characteristic, Parameter, Period, Station};
use serde::Serialize;
use serde_json::{Map, Value};
use std::cmp::Ordering;

/// What a station embeds (`include=parameters,characteristics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Includes {
    pub parameters: bool,
    pub characteristics: bool,
}

/// A sort key: a field path and the direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortSpec {
    pub path: String,
    pub descending: bool,
}

pub const STATION_FIELDS: &[&str] = &[
    "id",
    "name",
    "type",
    "state",
    "operator",
    "waterBodyId",
    "waterBodyName",
    "coordinates",
    "coordinates.lat",
    "coordinates.lon",
    "riverKm",
    "gaugeZero",
    "gaugeZero.value",
    "gaugeZero.unit",
    "gaugeZero.datum",
    "groundLevel",
    "elevation",
    "distance",
    "parameters",
    "characteristics",
];
pub const STATION_SORT: &[&str] = &[
    "id",
    "name",
    "type",
    "state",
    "operator",
    "waterBodyId",
    "waterBodyName",
    "coordinates.lat",
    "coordinates.lon",
    "riverKm",
    "gaugeZero.value",
    "groundLevel",
    "elevation",
    "distance",
];
/// CSV columns of `/stations` by the standard.
pub const STATION_CSV: &[&str] = &[
    "id",
    "name",
    "type",
    "state",
    "operator",
    "coordinates.lat",
    "coordinates.lon",
    "waterBodyName",
];
/// Columns a station table (Arrow, Parquet) without `fields` has after [`STATION_CSV`]'s:
/// every other plain field. A table is for joining in pyarrow, polars or DuckDB, where a
/// gauge's datum and river km are what the values are read against; a CSV keeps the
/// standard's columns, and `fields=` adds to either.
pub const STATION_TABLE_MORE: &[&str] = &[
    "waterBodyId",
    "riverKm",
    "gaugeZero.value",
    "gaugeZero.unit",
    "gaugeZero.datum",
    "groundLevel",
    "elevation",
];
pub const PARAMETER_FIELDS: &[&str] = &[
    "id",
    "name",
    "observedProperty",
    "unit",
    "interval",
    "availability",
];
pub const PARAMETER_SORT: &[&str] = &["id", "name", "observedProperty", "unit", "interval"];
pub const CHARACTERISTIC_FIELDS: &[&str] = &[
    "id",
    "name",
    "type",
    "parameterId",
    "value",
    "unit",
    "period",
    "period.start",
    "period.end",
    "description",
];
pub const CHARACTERISTIC_SORT: &[&str] = &[
    "id",
    "name",
    "type",
    "parameterId",
    "value",
    "unit",
    "period.start",
    "period.end",
];
pub const VALUE_FIELDS: &[&str] = &["timestamp", "value", "quality"];
/// `fields` of `/v1/values`: the ids are always there (a row without them is no use).
pub const MANY_VALUE_FIELDS: &[&str] =
    &["stationId", "parameterId", "timestamp", "value", "quality"];

/// `location` is an alias of `coordinates` (DESIGN.md).
pub fn canon_station_path(p: &str) -> String {
    match p.strip_prefix("location") {
        Some(rest) if rest.is_empty() || rest.starts_with('.') => format!("coordinates{rest}"),
        _ => p.to_owned(),
    }
}

/// A station as the API shows it, in the standard's field order: the one definition of that
/// shape (serde's). Written straight to the answer where nothing is projected (a 100 000-
/// station list: no object per station; [`Self::write_json`] writes serde's bytes faster, a
/// test holds it to them), and turned into a [`Value`] where `fields`, CSV or XML work on one.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StationDoc<'a> {
    id: &'a str,
    name: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    state: &'a str,
    /// Optional texts: left out when empty (a cell an import left empty).
    #[serde(skip_serializing_if = "str::is_empty")]
    operator: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    water_body_id: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    water_body_name: &'a str,
    /// None in a GeoJSON feature's properties (the feature's geometry holds them).
    #[serde(skip_serializing_if = "Option::is_none")]
    coordinates: Option<LatLon>,
    #[serde(skip_serializing_if = "Option::is_none")]
    river_km: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gauge_zero: Option<GaugeZeroDoc<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ground_level: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    elevation: Option<f64>,
    /// Kilometres from the `near` point, to the metre.
    #[serde(skip_serializing_if = "Option::is_none")]
    distance: Option<f64>,
}

#[derive(Serialize)]
struct LatLon {
    lat: f64,
    lon: f64,
}

#[derive(Serialize)]
struct GaugeZeroDoc<'a> {
    value: f64,
    unit: &'a str,
    datum: &'a str,
}

impl<'a> StationDoc<'a> {
    pub fn new(s: &'a Station, distance_km: Option<f64>) -> Self {
        Self {
            id: s.id.as_str(),
            name: &s.name,
            kind: s.kind.as_str(),
            state: &s.state,
            operator: &s.operator,
            water_body_id: &s.water_body_id,
            water_body_name: &s.water_body_name,
            coordinates: Some(LatLon {
                lat: s.coordinates.lat,
                lon: s.coordinates.lon,
            }),
            river_km: s.river_km,
            gauge_zero: s.gauge_zero.as_ref().map(|g| GaugeZeroDoc {
                value: g.value,
                unit: &g.unit,
                datum: &g.datum,
            }),
            ground_level: s.ground_level,
            elevation: s.elevation,
            distance: distance_km.map(|d| (d * 1000.0).round() / 1000.0),
        }
    }
}

impl StationDoc<'_> {
    /// The station's JSON object, the bytes serde_json writes for it (a test checks them on
    /// stations with and without their optional fields and with text to escape), with the
    /// keys written as constants: serde_json escapes every key it writes, and escaping was
    /// 45 % of the CPU time of a whole-catalog download.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let texts: [(&[u8], &str); 4] = [
            (b"{\"id\":", self.id),
            (b",\"name\":", self.name),
            (b",\"type\":", self.kind),
            (b",\"state\":", self.state),
        ];
        for (key, text) in texts {
            out.extend_from_slice(key);
            json_string(text, out);
        }
        let optional: [(&[u8], &str); 3] = [
            (b",\"operator\":", self.operator),
            (b",\"waterBodyId\":", self.water_body_id),
            (b",\"waterBodyName\":", self.water_body_name),
        ];
        for (key, text) in optional.into_iter().filter(|(_, t)| !t.is_empty()) {
            out.extend_from_slice(key);
            json_string(text, out);
        }
        if let Some(c) = &self.coordinates {
            out.extend_from_slice(b",\"coordinates\":{\"lat\":");
            json_number(c.lat, out);
            out.extend_from_slice(b",\"lon\":");
            json_number(c.lon, out);
            out.push(b'}');
        }
        json_member(b",\"riverKm\":", self.river_km, out);
        if let Some(g) = &self.gauge_zero {
            out.extend_from_slice(b",\"gaugeZero\":{\"value\":");
            json_number(g.value, out);
            out.extend_from_slice(b",\"unit\":");
            json_string(g.unit, out);
            out.extend_from_slice(b",\"datum\":");
            json_string(g.datum, out);
            out.push(b'}');
        }
        json_member(b",\"groundLevel\":", self.ground_level, out);
        json_member(b",\"elevation\":", self.elevation, out);
        json_member(b",\"distance\":", self.distance, out);
        out.push(b'}');
    }
}

/// `key` and the number after it, when there is a number (serde's `skip_serializing_if`).
fn json_member(key: &[u8], x: Option<f64>, out: &mut Vec<u8>) {
    if let Some(x) = x {
        out.extend_from_slice(key);
        json_number(x, out);
    }
}

/// A number as serde_json writes it (`null` when not finite).
fn json_number(x: f64, out: &mut Vec<u8>) {
    // Writing to a Vec cannot fail.
    let _ = serde_json::to_writer(out, &x);
}

/// A station's value at the path of one of its plain fields (not `coordinates` or
/// `gaugeZero` as a whole), borrowed: what a sort key or a CSV cell needs of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    Text(&'a str),
    Number(f64),
}

impl StationDoc<'_> {
    /// The value at a path of a plain field, as [`lookup`] finds it in the station's JSON
    /// object (a test checks every path against it); None where that finds nothing, or for a
    /// path of no plain field.
    pub fn cell(&self, path: &str) -> Option<Cell<'_>> {
        let text = |s| Some(Cell::Text(s));
        match path {
            "id" => text(self.id),
            "name" => text(self.name),
            "type" => text(self.kind),
            "state" => text(self.state),
            "operator" => Some(self.operator).filter(|t| !t.is_empty()).and_then(text),
            "waterBodyId" => Some(self.water_body_id)
                .filter(|t| !t.is_empty())
                .and_then(text),
            "waterBodyName" => Some(self.water_body_name)
                .filter(|t| !t.is_empty())
                .and_then(text),
            "coordinates.lat" => self.coordinates.as_ref().map(|c| Cell::Number(c.lat)),
            "coordinates.lon" => self.coordinates.as_ref().map(|c| Cell::Number(c.lon)),
            "riverKm" => self.river_km.map(Cell::Number),
            "gaugeZero.value" => self.gauge_zero.as_ref().map(|g| Cell::Number(g.value)),
            "gaugeZero.unit" => self.gauge_zero.as_ref().map(|g| Cell::Text(g.unit)),
            "gaugeZero.datum" => self.gauge_zero.as_ref().map(|g| Cell::Text(g.datum)),
            "groundLevel" => self.ground_level.map(Cell::Number),
            "elevation" => self.elevation.map(Cell::Number),
            "distance" => self.distance.map(Cell::Number),
            _ => None,
        }
    }

    /// The sort key at a path of [`STATION_SORT`], as [`Key::of`] finds it in the station's
    /// JSON object.
    fn sort_key(&self, path: &str) -> Key {
        match self.cell(path) {
            Some(Cell::Text(s)) => Key::text(s),
            Some(Cell::Number(x)) => Key::Number(x),
            None => Key::Missing,
        }
    }
}

/// A station as a GeoJSON feature, the shape the GeoJSON encoder gives a station's item: its
/// coordinates as the point geometry, its other fields as properties.
#[derive(Serialize)]
pub struct StationFeature<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    geometry: Point,
    properties: StationDoc<'a>,
}

#[derive(Serialize)]
struct Point {
    #[serde(rename = "type")]
    kind: &'static str,
    /// Longitude, latitude (RFC 7946).
    coordinates: [f64; 2],
}

impl<'a> StationFeature<'a> {
    pub fn new(s: &'a Station, distance_km: Option<f64>) -> Self {
        Self {
            kind: "Feature",
            id: s.id.as_str(),
            geometry: Point {
                kind: "Point",
                coordinates: [s.coordinates.lon, s.coordinates.lat],
            },
            properties: StationDoc {
                coordinates: None,
                ..StationDoc::new(s, distance_km)
            },
        }
    }

    /// The feature's JSON, the bytes serde_json writes for it, keys written as constants
    /// (see [`StationDoc::write_json`]).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"type\":");
        json_string(self.kind, out);
        out.extend_from_slice(b",\"id\":");
        json_string(self.id, out);
        out.extend_from_slice(b",\"geometry\":{\"type\":");
        json_string(self.geometry.kind, out);
        out.extend_from_slice(b",\"coordinates\":[");
        json_number(self.geometry.coordinates[0], out);
        out.push(b',');
        json_number(self.geometry.coordinates[1], out);
        out.extend_from_slice(b"]},\"properties\":");
        self.properties.write_json(out);
        out.push(b'}');
    }
}

/// A station's JSON object, which tests hold the writers that skip it to.
#[cfg(test)]
pub fn station_json(s: &Station, distance_km: Option<f64>) -> Value {
    // Plain fields and finite or null numbers: serializing them cannot fail.
    serde_json::to_value(StationDoc::new(s, distance_km)).unwrap_or_default()
}

/// A period with data, its instants formatted in the answer's offset.
#[derive(Serialize)]
struct PeriodDoc {
    start: String,
    end: String,
}

impl PeriodDoc {
    fn new(p: &Period, tf: &mut TimeFormatter) -> Self {
        Self {
            start: tf.format(p.start),
            end: tf.format(p.end),
        }
    }
}

/// A parameter as the API shows it, in the standard's field order: the one definition of
/// that shape, written straight into a station list with `include=parameters` and turned
/// into a [`Value`] elsewhere.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParameterDoc<'a> {
    id: &'a str,
    name: &'a str,
    observed_property: &'a str,
    unit: &'a str,
    interval: &'a str,
    availability: Vec<PeriodDoc>,
}

impl<'a> ParameterDoc<'a> {
    pub fn new(p: &'a Parameter, tf: &mut TimeFormatter) -> Self {
        Self {
            id: p.id.as_str(),
            name: &p.name,
            observed_property: &p.observed_property,
            unit: &p.unit,
            interval: &p.interval,
            availability: p
                .availability
                .iter()
                .map(|a| PeriodDoc::new(a, tf))
                .collect(),
        }
    }
}

/// A characteristic value as the API shows it, in the standard's field order: the one
/// definition of that shape (see [`ParameterDoc`]).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CharacteristicDoc<'a> {
    id: &'a str,
    name: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    parameter_id: &'a str,
    value: f64,
    unit: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    period: Option<PeriodDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
}

impl<'a> CharacteristicDoc<'a> {
    pub fn new(c: &'a Characteristic, tf: &mut TimeFormatter) -> Self {
        Self {
            id: c.id.as_str(),
            name: &c.name,
            kind: c.kind.as_str(),
            parameter_id: c.parameter.as_str(),
            value: c.value,
            unit: &c.unit,
            period: c.period.as_ref().map(|p| PeriodDoc::new(p, tf)),
            description: c.description.as_deref(),
        }
    }
}

/// A station with the lists `include` asked for, after its own fields.
#[derive(Serialize)]
pub struct StationWithLists<'a> {
    #[serde(flatten)]
    pub station: StationDoc<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Vec<ParameterDoc<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub characteristics: Option<Vec<CharacteristicDoc<'a>>>,
}

// Plain fields and finite or null numbers: serializing the documents below cannot fail.

pub fn parameter_json(p: &Parameter, tf: &mut TimeFormatter) -> Value {
    serde_json::to_value(ParameterDoc::new(p, tf)).unwrap_or_default()
}

pub fn characteristic_json(c: &Characteristic, tf: &mut TimeFormatter) -> Value {
    serde_json::to_value(CharacteristicDoc::new(c, tf)).unwrap_or_default()
}

/// Keeps only the selected paths, in the object's own field order, nesting kept.
pub fn project(v: &Value, paths: &[String]) -> Value {
    let Value::Object(obj) = v else {
        return v.clone();
    };
    let mut out = Map::new();
    for (key, value) in obj {
        let whole = paths.iter().any(|p| p == key);
        let sub: Vec<String> = paths
            .iter()
            .filter_map(|p| {
                p.strip_prefix(key.as_str())
                    .and_then(|r| r.strip_prefix('.'))
            })
            .map(str::to_owned)
            .collect();
        if whole {
            out.insert(key.clone(), value.clone());
        } else if !sub.is_empty() {
            out.insert(key.clone(), project(value, &sub));
        }
    }
    Value::Object(out)
}

/// The value at a dot path.
pub fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(v, |v, k| v.get(k))
        .filter(|v| !v.is_null())
}

/// One item's value for one sort key, looked up and case-folded once: a comparison then walks
/// no paths and allocates nothing (sorting 100 000 stations by name lowercased both names in
/// every one of its ~1.7 million comparisons).
#[derive(Debug, PartialEq)]
enum Key {
    Missing,
    Number(f64),
    Text {
        folded: String,
        text: String,
    },
    /// Anything else (not a sort field of any list today), compared as its JSON text.
    Other(String),
}

impl Key {
    fn of(v: Option<&Value>) -> Self {
        match v {
            None => Self::Missing,
            Some(Value::Number(n)) => Self::Number(n.as_f64().unwrap_or(0.0)),
            Some(Value::String(s)) => Self::text(s),
            Some(other) => Self::Other(other.to_string()),
        }
    }

    fn text(s: &str) -> Self {
        Self::Text {
            folded: s.to_lowercase(),
            text: s.to_owned(),
        }
    }

    fn json_string(&self) -> String {
        match self {
            Self::Missing => String::new(),
            Self::Number(x) => Value::from(*x).to_string(),
            Self::Text { text, .. } => Value::from(text.as_str()).to_string(),
            Self::Other(s) => s.clone(),
        }
    }

    /// Missing values sort last in both directions of the key.
    fn compare(&self, other: &Self, descending: bool) -> Ordering {
        let order = match (self, other) {
            (Self::Missing, Self::Missing) => return Ordering::Equal,
            (Self::Missing, _) => return Ordering::Greater,
            (_, Self::Missing) => return Ordering::Less,
            (Self::Number(x), Self::Number(y)) => x.total_cmp(y),
            (Self::Text { folded: a, text: x }, Self::Text { folded: b, text: y }) => {
                a.cmp(b).then_with(|| x.cmp(y))
            }
            (x, y) => x.json_string().cmp(&y.json_string()),
        };
        if descending { order.reverse() } else { order }
    }
}

/// An item's values for the sort keys of a request, in the keys' order.
#[derive(Debug, PartialEq)]
pub struct SortKeys(Vec<Key>);

impl SortKeys {
    pub fn of(item: &Value, keys: &[SortSpec]) -> Self {
        Self(
            keys.iter()
                .map(|k| Key::of(lookup(item, &k.path)))
                .collect(),
        )
    }

    /// A station's keys, read from its fields rather than from its JSON object: sorting
    /// 100 000 stations built that object for each first (165 ms before the first byte).
    pub fn of_station(doc: &StationDoc<'_>, keys: &[SortSpec]) -> Self {
        Self(keys.iter().map(|k| doc.sort_key(&k.path)).collect())
    }

    /// The order of two items by the keys they were made with; equal when all keys are.
    pub fn compare(&self, other: &Self, keys: &[SortSpec]) -> Ordering {
        self.0
            .iter()
            .zip(&other.0)
            .zip(keys)
            .map(|((a, b), k)| a.compare(b, k.descending))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }
}

/// Stable sort by the keys; the existing order breaks ties.
pub fn sort_items(items: &mut Vec<Value>, keys: &[SortSpec]) {
    if keys.is_empty() {
        return;
    }
    let mut keyed: Vec<(SortKeys, Value)> = items
        .drain(..)
        .map(|v| (SortKeys::of(&v, keys), v))
        .collect();
    keyed.sort_by(|(a, _), (b, _)| a.compare(b, keys));
    items.extend(keyed.into_iter().map(|(_, v)| v));
}

/// Flattens an object to dotted columns (arrays as JSON text).
pub fn flatten(v: &Value, prefix: &str, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(v, &key, out);
            }
        }
        Value::Array(_) => out.push((prefix.to_owned(), Value::String(v.to_string()))),
        other => out.push((prefix.to_owned(), other.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    #[test]
    fn project_keeps_nesting_and_order() {
        let v = json!({"id": "a", "name": "n", "coordinates": {"lat": 1, "lon": 2}});
        let p = project(&v, &["coordinates.lat".into(), "id".into()]);
        assert_eq!(p.to_string(), r#"{"id":"a","coordinates":{"lat":1}}"#);
    }

    #[test]
    fn sort_is_case_insensitive_and_puts_missing_last() {
        let mut items = vec![
            json!({"n": "b"}),
            json!({"n": "A"}),
            json!({}),
            json!({"n": "a"}),
        ];
        sort_items(
            &mut items,
            &[SortSpec {
                path: "n".into(),
                descending: false,
            }],
        );
        assert_eq!(
            items
                .iter()
                .map(|v| v["n"].as_str().unwrap_or("-"))
                .collect::<String>(),
            "Aab-"
        );
        sort_items(
            &mut items,
            &[SortSpec {
                path: "n".into(),
                descending: true,
            }],
        );
        assert_eq!(
            items
                .iter()
                .map(|v| v["n"].as_str().unwrap_or("-"))
                .collect::<String>(),
            "baA-"
        );
    }

    /// Every sortable path of a station gives the key its JSON object gives, and every field
    /// path the value, for stations with and without their optional fields, with and without
    /// a distance.
    #[test]
    fn station_keys_match_their_json() {
        let (full, bare) = test_stations::two();
        for station in [&full, &bare] {
            for distance in [None, Some(12.345_678)] {
                let doc = StationDoc::new(station, distance);
                let json = station_json(station, distance);
                for path in STATION_SORT {
                    let spec = [SortSpec {
                        path: (*path).into(),
                        descending: false,
                    }];
                    assert_eq!(
                        SortKeys::of_station(&doc, &spec),
                        SortKeys::of(&json, &spec),
                        "{path}"
                    );
                }
                for path in STATION_FIELDS {
                    let want = match lookup(&json, path) {
                        Some(Value::String(s)) => Some(Cell::Text(s)),
                        Some(Value::Number(n)) => n.as_f64().map(Cell::Number),
                        // An object or array is no plain field, and has no cell.
                        _ => None,
                    };
                    assert_eq!(doc.cell(path), want, "{path}");
                }
            }
        }
    }

    /// A station's JSON object and GeoJSON feature written by hand are serde_json's, byte for
    /// byte: optional fields there or not, text to escape (quotes, backslashes, control
    /// characters) or not, numbers integral, tiny, huge, negative zero, or not finite.
    #[test]
    fn station_json_written_by_hand_is_serde_json_s() {
        use hydro_engine::{Coordinates, GaugeZero, StationType};
        let names = [
            "Köln",
            "a \"quoted\" name",
            "back\\slash",
            "tab\tand\u{1}control",
            "del\u{7f}",
            "",
        ];
        let numbers = [688.0, 1e-7, 1e21, -0.0, 0.1 + 0.2, 12_345.678, f64::NAN];
        for (i, name) in names.iter().enumerate() {
            for (j, &x) in numbers.iter().enumerate() {
                let station = Station {
                    id: format!("s{i}-{j}").parse().unwrap(),
                    name: (*name).into(),
                    kind: StationType::ALL[j % 3],
                    state: "DE-NW".into(),
                    operator: (*name).into(),
                    water_body_id: if j % 2 == 0 { "" } else { "rhine" }.into(),
                    water_body_name: (*name).into(),
                    coordinates: Coordinates { lat: x, lon: -x },
                    river_km: (j % 2 == 0).then_some(x),
                    gauge_zero: (j % 3 != 0).then(|| GaugeZero {
                        value: x,
                        unit: "m".into(),
                        datum: (*name).into(),
                    }),
                    ground_level: (j % 2 == 1).then_some(x),
                    elevation: (j % 4 == 0).then_some(x),
                };
                for distance in [None, Some(x), Some(2.5)] {
                    let doc = StationDoc::new(&station, distance);
                    let mut by_hand = Vec::new();
                    doc.write_json(&mut by_hand);
                    let by_serde = serde_json::to_vec(&doc).unwrap();
                    assert_eq!(
                        String::from_utf8(by_hand).unwrap(),
                        String::from_utf8(by_serde).unwrap()
                    );
                    let feature = StationFeature::new(&station, distance);
                    let mut by_hand = Vec::new();
                    feature.write_json(&mut by_hand);
                    let by_serde = serde_json::to_vec(&feature).unwrap();
                    assert_eq!(
                        String::from_utf8(by_hand).unwrap(),
                        String::from_utf8(by_serde).unwrap()
                    );
                }
            }
        }
    }
}

/// Stations for tests: one with every optional field of a surface-water station, and one
/// without them, its text needing CSV quotes.
#[cfg(test)]
pub(crate) mod test_stations {
    use hydro_engine::{Coordinates, GaugeZero, Station, StationType};

    pub fn two() -> (Station, Station) {
        let full = Station {
            id: "b-1".parse().unwrap(),
            name: "Köln, \"Pegel\" Rhein".into(),
            kind: StationType::SurfaceWater,
            state: "DE-NW".into(),
            operator: "WSV".into(),
            water_body_id: "rhine".into(),
            water_body_name: "Rhein".into(),
            coordinates: Coordinates {
                lat: 50.936_7,
                lon: 6.963,
            },
            river_km: Some(688.0),
            gauge_zero: Some(GaugeZero {
                value: 34.97,
                unit: "m".into(),
                datum: "DHHN2016".into(),
            }),
            ground_level: None,
            elevation: None,
        };
        let bare = Station {
            river_km: None,
            gauge_zero: None,
            ground_level: Some(51.5),
            elevation: Some(1e-7),
            water_body_id: "".into(),
            kind: StationType::Groundwater,
            ..full.clone()
        };
        (full, bare)
    }
}
