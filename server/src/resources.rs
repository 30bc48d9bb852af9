//! Catalog resources as JSON objects in the field order of the standard, and the generic
//! `fields` projection and `sort` over them (dot paths, nesting kept, text case-insensitive).

use crate::params::SortSpec;
use crate::timefmt::TimeFormatter;
use hydro_engine::model::{Characteristic, Parameter, Period, Station};
use serde_json::{Map, Value, json};
use std::cmp::Ordering;

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

/// `location` is an alias of `coordinates` (DESIGN.md).
pub fn canon_station_path(p: &str) -> String {
    match p.strip_prefix("location") {
        Some(rest) if rest.is_empty() || rest.starts_with('.') => format!("coordinates{rest}"),
        _ => p.to_owned(),
    }
}

pub fn station_json(s: &Station, distance_km: Option<f64>) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(s.id.as_str()));
    m.insert("name".into(), json!(s.name));
    m.insert("type".into(), json!(s.kind.as_str()));
    m.insert("state".into(), json!(s.state));
    m.insert("operator".into(), json!(s.operator));
    m.insert("waterBodyId".into(), json!(s.water_body_id));
    m.insert("waterBodyName".into(), json!(s.water_body_name));
    m.insert(
        "coordinates".into(),
        json!({"lat": s.coordinates.lat, "lon": s.coordinates.lon}),
    );
    if let Some(v) = s.river_km {
        m.insert("riverKm".into(), json!(v));
    }
    if let Some(g) = &s.gauge_zero {
        m.insert(
            "gaugeZero".into(),
            json!({"value": g.value, "unit": g.unit, "datum": g.datum}),
        );
    }
    if let Some(v) = s.ground_level {
        m.insert("groundLevel".into(), json!(v));
    }
    if let Some(v) = s.elevation {
        m.insert("elevation".into(), json!(v));
    }
    if let Some(d) = distance_km {
        m.insert("distance".into(), json!((d * 1000.0).round() / 1000.0));
    }
    Value::Object(m)
}

fn period_json(p: &Period, tf: &mut TimeFormatter) -> Value {
    json!({"start": tf.format(p.start), "end": tf.format(p.end)})
}

pub fn parameter_json(p: &Parameter, tf: &mut TimeFormatter) -> Value {
    json!({
        "id": p.id.as_str(),
        "name": p.name,
        "observedProperty": p.observed_property,
        "unit": p.unit,
        "interval": p.interval,
        "availability": p.availability.iter().map(|a| period_json(a, tf)).collect::<Vec<_>>(),
    })
}

pub fn characteristic_json(c: &Characteristic, tf: &mut TimeFormatter) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(c.id.as_str()));
    m.insert("name".into(), json!(c.name));
    m.insert("type".into(), json!(c.kind.as_str()));
    m.insert("parameterId".into(), json!(c.parameter.as_str()));
    m.insert("value".into(), json!(c.value));
    m.insert("unit".into(), json!(c.unit));
    if let Some(p) = &c.period {
        m.insert("period".into(), period_json(p, tf));
    }
    if let Some(d) = &c.description {
        m.insert("description".into(), json!(d));
    }
    Value::Object(m)
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

fn compare(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        // Missing values sort last in both directions of the key.
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(Value::Number(x)), Some(Value::Number(y))) => x
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&y.as_f64().unwrap_or(0.0)),
        (Some(Value::String(x)), Some(Value::String(y))) => x
            .to_lowercase()
            .cmp(&y.to_lowercase())
            .then_with(|| x.cmp(y)),
        (Some(x), Some(y)) => x.to_string().cmp(&y.to_string()),
    }
}

/// Stable sort by the keys; the existing order breaks ties.
pub fn sort_items(items: &mut [Value], keys: &[SortSpec]) {
    if keys.is_empty() {
        return;
    }
    items.sort_by(|a, b| {
        keys.iter()
            .map(|k| {
                let (x, y) = (lookup(a, &k.path), lookup(b, &k.path));
                match (x, y, k.descending) {
                    (Some(_), Some(_), true) => compare(x, y).reverse(),
                    _ => compare(x, y),
                }
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
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
}
