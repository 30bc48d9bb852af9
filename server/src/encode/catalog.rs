//! Encoders of catalog responses (stations, parameters, characteristics, landing, health):
//! small, so built whole from JSON values.

use super::{csv_field, number, xml_text};
use crate::negotiate::Format;
use crate::resources::flatten;
use serde_json::{Map, Value, json};

/// What a catalog response holds besides the items.
pub struct Document<'a> {
    pub meta: Value,
    /// None in the basic variant.
    pub links: Option<Value>,
    pub data: Data<'a>,
    /// XML element name of one item (`station`, `parameter`, ...).
    pub item_name: &'a str,
    /// Default CSV columns when no `fields` were given.
    pub csv_columns: Option<Vec<String>>,
}

pub enum Data<'a> {
    List(&'a [Value]),
    One(&'a Value),
}

impl Data<'_> {
    fn items(&self) -> Vec<&Value> {
        match self {
            Data::List(v) => v.iter().collect(),
            Data::One(v) => vec![*v],
        }
    }
}

pub fn encode(doc: &Document<'_>, format: Format) -> Vec<u8> {
    match format {
        Format::Csv => csv(doc),
        Format::NdJson => {
            let mut out = Vec::new();
            for item in doc.data.items() {
                out.extend_from_slice(item.to_string().as_bytes());
                out.push(b'\n');
            }
            out
        }
        Format::GeoJson => geojson(doc).to_string().into_bytes(),
        Format::Xml => xml(doc),
        _ => {
            let mut m = Map::new();
            m.insert("meta".into(), doc.meta.clone());
            if let Some(l) = &doc.links {
                m.insert("links".into(), l.clone());
            }
            m.insert(
                "data".into(),
                match &doc.data {
                    Data::List(v) => Value::Array(v.to_vec()),
                    Data::One(v) => (*v).clone(),
                },
            );
            Value::Object(m).to_string().into_bytes()
        }
    }
}

fn csv(doc: &Document<'_>) -> Vec<u8> {
    let rows: Vec<Vec<(String, Value)>> = doc
        .data
        .items()
        .into_iter()
        .map(|item| {
            let mut cells = Vec::new();
            flatten(item, "", &mut cells);
            cells
        })
        .collect();
    let columns: Vec<String> = match &doc.csv_columns {
        Some(c) => c.clone(),
        None => {
            let mut cols: Vec<String> = Vec::new();
            for row in &rows {
                for (k, _) in row {
                    if !cols.contains(k) {
                        cols.push(k.clone());
                    }
                }
            }
            cols
        }
    };
    let mut out = Vec::new();
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        csv_field(c, &mut out);
    }
    out.extend_from_slice(b"\r\n");
    for row in rows {
        for (i, c) in columns.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match row.iter().find(|(k, _)| k == c).map(|(_, v)| v) {
                Some(Value::String(s)) => csv_field(s, &mut out),
                Some(Value::Number(n)) => number(n.as_f64().unwrap_or(0.0), &mut out),
                Some(Value::Bool(b)) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
                _ => {}
            }
        }
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn feature(item: &Value) -> Value {
    let mut properties = item.as_object().cloned().unwrap_or_default();
    let coords = properties.remove("coordinates");
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

fn geojson(doc: &Document<'_>) -> Value {
    match &doc.data {
        Data::One(v) => feature(v),
        Data::List(items) => json!({
            "type": "FeatureCollection",
            "features": items.iter().map(feature).collect::<Vec<_>>(),
        }),
    }
}

fn xml_value(name: &str, v: &Value, out: &mut Vec<u8>) {
    out.push(b'<');
    out.extend_from_slice(name.as_bytes());
    out.push(b'>');
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                xml_value(k, v, out);
            }
        }
        Value::Array(items) => {
            let item_name = match name {
                "availability" => "period",
                "parameters" => "parameter",
                "characteristics" => "characteristic",
                "links" => "link",
                _ => "item",
            };
            for v in items {
                xml_value(item_name, v, out);
            }
        }
        Value::String(s) => xml_text(s, out),
        Value::Number(n) => number(n.as_f64().unwrap_or(0.0), out),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Null => {}
    }
    out.extend_from_slice(b"</");
    out.extend_from_slice(name.as_bytes());
    out.push(b'>');
}

/// `<response><meta/><links><link/></links><data><station/>…</data></response>`: the JSON
/// envelope with one element per field, arrays as repeated elements.
fn xml(doc: &Document<'_>) -> Vec<u8> {
    let mut out = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><response>".to_vec();
    xml_value("meta", &doc.meta, &mut out);
    if let Some(l) = &doc.links {
        xml_value("links", l, &mut out);
    }
    out.extend_from_slice(b"<data>");
    for item in doc.data.items() {
        xml_value(doc.item_name, item, &mut out);
    }
    out.extend_from_slice(b"</data></response>");
    out
}

/// XML head for streamed values: everything up to the first row.
pub fn xml_head(meta: &Value, links: Option<&Value>) -> Vec<u8> {
    let mut out = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><response>".to_vec();
    xml_value("meta", meta, &mut out);
    if let Some(l) = links {
        xml_value("links", l, &mut out);
    }
    out.extend_from_slice(b"<data>");
    out
}
