//! GeoJSON (`application/geo+json`, RFC 7946): stations and the newest values as a
//! `FeatureCollection` of points, each resource's fields but its coordinates as the feature's
//! `properties`; a station alone is a `Feature`. A map layer for QGIS, Leaflet or GDAL.

use super::{Answer::*, Encoder, Format, Schema, Spec};
use crate::render::encode::catalog::write_json;
use crate::render::encode::{Head, ListShape, TextFormat, json_string};
use crate::render::resources::StationFeature;
use hydro_engine::Station;
use serde_json::{Map, Value, json};

pub const GEOJSON: Format = Format::of(&Spec {
    short: "geojson",
    media_type: "application/geo+json",
    aliases: &[],
    text: true,
    compressible: true,
    attachment: None,
    offered: &[Stations, Latest],
    encoder: Encoder::Text(&GeoJson),
    schema: Schema::Fixed(collection_or_feature),
});

pub struct GeoJson;

/// What the OpenAPI document says of a GeoJSON answer: a collection, or a station alone.
fn collection_or_feature() -> Value {
    json!({"type": "object", "required": ["type"],
           "properties": {"type": {"enum": ["FeatureCollection", "Feature"]}}})
}

impl TextFormat for GeoJson {
    fn document(&self, _head: &Head<'_>) -> (Vec<u8>, Vec<u8>) {
        (
            br#"{"type":"FeatureCollection","features":["#.to_vec(),
            b"]}".to_vec(),
        )
    }

    fn escape(&self, text: &str, out: &mut Vec<u8>) {
        json_string(text, out);
    }

    fn item(&self, item: &Value, _list: &ListShape<'_>, first: bool, out: &mut Vec<u8>) {
        if !first {
            out.push(b',');
        }
        write_json(&feature(item), out);
    }

    fn one(&self, item: &Value, _head: &Head<'_>) -> Option<Vec<u8>> {
        Some(feature(item).to_string().into_bytes())
    }

    fn whole_station(
        &self,
        station: &Station,
        distance_km: Option<f64>,
        _list: &ListShape<'_>,
        first: bool,
        out: &mut Vec<u8>,
    ) -> bool {
        if !first {
            out.push(b',');
        }
        StationFeature::new(station, distance_km).write_json(out);
        true
    }
}

/// A resource as a feature: a point at its `coordinates`, its other fields as properties.
pub fn feature(item: &Value) -> Value {
    let mut properties = item.as_object().cloned().unwrap_or_default();
    // `shift_remove`: the properties keep the item's field order (`remove` moved the last
    // field into the gap).
    let coords = properties.shift_remove("coordinates");
    let geometry = match coords
        .as_ref()
        .and_then(|c| Some((c.get("lon")?.as_f64()?, c.get("lat")?.as_f64()?)))
    {
        Some((lon, lat)) => json!({"type": "Point", "coordinates": [lon, lat]}),
        None => Value::Null,
    };
    let mut f = Map::new();
    f.insert("type".into(), json!("Feature"));
    if let Some(id) = properties.get("id") {
        f.insert("id".into(), id.clone());
    }
    f.insert("geometry".into(), geometry);
    f.insert("properties".into(), Value::Object(properties));
    Value::Object(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A feature's properties are the item's fields but its coordinates, in the item's order.
    #[test]
    fn feature_properties_keep_the_field_order() {
        let item = json!({"id": "a", "coordinates": {"lat": 50.5, "lon": 7.25}, "name": "n",
                          "riverKm": 1.5, "gaugeZero": {"value": 2.0}, "distance": 0.25});
        assert_eq!(
            feature(&item).to_string(),
            r#"{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[7.25,50.5]},"#
                .to_owned()
                + r#""properties":{"id":"a","name":"n","riverKm":1.5,"gaugeZero":{"value":2.0},"#
                + r#""distance":0.25}}"#
        );
    }
}
