//! Encoders of catalog responses (stations, parameters, characteristics, landing, health):
//! small, so built whole from JSON values.

use super::{EncodeError, csv_field, number, table, xml_text};
use crate::http::negotiate::Format;
use crate::render::resources::{Cell, flatten, lookup};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::borrow::Borrow;

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

pub fn encode(doc: &Document<'_>, format: Format) -> Result<Vec<u8>, EncodeError> {
    Ok(match (&doc.data, format) {
        (Data::One(item), Format::Json) => {
            let mut m = envelope(&doc.meta, doc.links.as_ref());
            m.insert("data".into(), (*item).clone());
            Value::Object(m).to_string().into_bytes()
        }
        (Data::One(item), Format::GeoJson) => feature(item).to_string().into_bytes(),
        (data, _) => {
            let items = data.items();
            let columns = match &doc.csv_columns {
                Some(c) => c.clone(),
                None => csv_columns(items.iter().copied()),
            };
            if matches!(format, Format::Arrow | Format::Parquet) {
                return table::encode(&items, &columns, format);
            }
            let list = ListEncoder::new(
                format,
                &doc.meta,
                doc.links.as_ref(),
                doc.item_name,
                columns,
            );
            let mut out = list.head();
            for (k, item) in items.into_iter().enumerate() {
                list.item(item, k == 0, &mut out);
            }
            out.extend_from_slice(list.tail());
            out
        }
    })
}

/// `meta` and `links` of a JSON document, in that order; `data` goes after them.
fn envelope(meta: &Value, links: Option<&Value>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("meta".into(), meta.clone());
    if let Some(l) = links {
        m.insert("links".into(), l.clone());
    }
    m
}

/// CSV columns of items when the request named its own `fields`: every flattened key, in the
/// order of first appearance (an item may lack an optional field).
pub fn csv_columns<V: Borrow<Value>>(items: impl IntoIterator<Item = V>) -> Vec<String> {
    let mut columns: Vec<String> = Vec::new();
    let mut cells = Vec::new();
    for item in items {
        cells.clear();
        flatten(item.borrow(), "", &mut cells);
        for (k, _) in cells.drain(..) {
            if !columns.contains(&k) {
                columns.push(k);
            }
        }
    }
    columns
}

/// A list answer made item by item: the bytes before the first item, each item (with its
/// separator), the bytes after the last. Its output is the whole document's serialization
/// byte for byte (JSON and GeoJSON are split around an empty `data`/`features` array), so a
/// list can be streamed without holding its items, or its bytes, all at once.
pub struct ListEncoder {
    format: Format,
    head: Vec<u8>,
    tail: Vec<u8>,
    item_name: String,
    columns: Vec<String>,
}

impl ListEncoder {
    /// A list of `item_name`s after `meta` and `links`; `columns`: the CSV columns (ignored by
    /// other formats).
    pub fn new(
        format: Format,
        meta: &Value,
        links: Option<&Value>,
        item_name: &str,
        columns: Vec<String>,
    ) -> Self {
        let (head, tail) = match format {
            Format::Csv => {
                let mut head = Vec::new();
                for (i, c) in columns.iter().enumerate() {
                    if i > 0 {
                        head.push(b',');
                    }
                    csv_field(c, &mut head);
                }
                head.extend_from_slice(b"\r\n");
                (head, Vec::new())
            }
            Format::NdJson => (Vec::new(), Vec::new()),
            Format::GeoJson => {
                around_empty_array(json!({"type": "FeatureCollection", "features": []}))
            }
            Format::Xml => (xml_head(meta, links), b"</data></response>".to_vec()),
            _ => {
                let mut m = envelope(meta, links);
                m.insert("data".into(), Value::Array(Vec::new()));
                around_empty_array(Value::Object(m))
            }
        };
        Self {
            format,
            head,
            tail,
            item_name: item_name.to_owned(),
            columns,
        }
    }

    pub fn head(&self) -> Vec<u8> {
        self.head.clone()
    }

    pub fn tail(&self) -> &[u8] {
        &self.tail
    }

    /// Appends an item; `first`: it opens the list (no separator before it).
    pub fn item(&self, item: &Value, first: bool, out: &mut Vec<u8>) {
        match self.format {
            Format::Csv => csv_row(item, &self.columns, out),
            Format::Xml => xml_value(&self.item_name, item, out),
            Format::GeoJson => self.json_item(&feature(item), first, out),
            _ => self.json_item(item, first, out),
        }
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// Appends a CSV row whose cells `cell` gives by column path: the row [`Self::item`]
    /// writes for a JSON object with those values, without the object.
    pub fn csv_cells<'c>(&self, cell: impl Fn(&str) -> Option<Cell<'c>>, out: &mut Vec<u8>) {
        csv_line(&self.columns, out, |c, out| match cell(c) {
            Some(Cell::Text(s)) => csv_field(s, out),
            Some(Cell::Number(x)) => number(x, out),
            None => {}
        });
    }

    /// Appends an item already in its JSON shape, anything serde can write: for JSON and
    /// NDJSON the item, for GeoJSON its feature. Not for CSV or XML.
    pub fn json_item(&self, item: &impl Serialize, first: bool, out: &mut Vec<u8>) {
        self.json_item_with(first, out, |out| write_json(item, out));
    }

    /// Appends an item that `write` writes in its JSON shape, as [`Self::json_item`] does.
    pub fn json_item_with(&self, first: bool, out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
        if self.format == Format::NdJson {
            write(out);
            out.push(b'\n');
            return;
        }
        if !first {
            out.push(b',');
        }
        write(out);
    }
}

fn write_json(v: &impl Serialize, out: &mut Vec<u8>) {
    // Writing to a Vec cannot fail, and catalog items always serialize.
    let _ = serde_json::to_writer(out, v);
}

/// The serialization of `doc`, whose last member is an empty array, cut around that array:
/// everything up to its `[`, and its `]` with what follows.
fn around_empty_array(doc: Value) -> (Vec<u8>, Vec<u8>) {
    let text = doc.to_string().into_bytes();
    let cut = text.len().saturating_sub(2);
    (text[..cut].to_vec(), text[cut..].to_vec())
}

/// A row: each column's cell looked up by its dot path (the columns are flattened keys), an
/// array as its JSON text, as [`flatten`] gives it.
fn csv_row(item: &Value, columns: &[String], out: &mut Vec<u8>) {
    csv_line(columns, out, |c, out| match lookup(item, c) {
        Some(Value::String(s)) => csv_field(s, out),
        Some(Value::Number(n)) => number(n.as_f64().unwrap_or(0.0), out),
        Some(Value::Bool(b)) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Some(a @ Value::Array(_)) => csv_field(&a.to_string(), out),
        _ => {}
    });
}

/// A row of `columns`, each cell written by `cell`.
fn csv_line(columns: &[String], out: &mut Vec<u8>, mut cell: impl FnMut(&str, &mut Vec<u8>)) {
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        cell(c, out);
    }
    out.extend_from_slice(b"\r\n");
}

fn feature(item: &Value) -> Value {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn items() -> Vec<Value> {
        vec![
            json!({"id": "a", "name": "Ä \"q\"", "coordinates": {"lat": 1.5, "lon": 2.0}}),
            json!({"id": "b", "riverKm": 3.25}),
            json!({"id": "c", "tags": [1, "x"]}),
        ]
    }

    fn doc(items: &[Value], links: bool) -> Document<'_> {
        Document {
            meta: json!({"title": "t", "pagination": {"total": 3}}),
            links: links.then(|| json!([{"rel": "self", "href": "x"}])),
            data: Data::List(items),
            item_name: "station",
            csv_columns: None,
        }
    }

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    /// A list written item by item is the document serde_json writes whole, byte for byte:
    /// no, one and several items, with and without links.
    #[test]
    fn lists_item_by_item_are_the_whole_document() {
        let all = items();
        for n in 0..=all.len() {
            let some = &all[..n];
            for links in [false, true] {
                let d = doc(some, links);
                let mut whole = envelope(&d.meta, d.links.as_ref());
                whole.insert("data".into(), Value::Array(some.to_vec()));
                assert_eq!(
                    text(encode(&d, Format::Json).unwrap()),
                    Value::Object(whole).to_string()
                );
                let features: Vec<Value> = some.iter().map(feature).collect();
                assert_eq!(
                    text(encode(&d, Format::GeoJson).unwrap()),
                    json!({"type": "FeatureCollection", "features": features}).to_string()
                );
                let lines: String = some.iter().map(|v| format!("{v}\n")).collect();
                assert_eq!(text(encode(&d, Format::NdJson).unwrap()), lines);
                let xml = text(encode(&d, Format::Xml).unwrap());
                assert_eq!(xml.matches("<station>").count(), n);
                assert!(xml.ends_with("</data></response>"), "{xml}");
            }
        }
    }

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

    /// Without named columns, CSV has every flattened key in the order of first appearance,
    /// empty cells where an item lacks one, and an array as its JSON text.
    #[test]
    fn csv_columns_follow_first_appearance() {
        let all = items();
        assert_eq!(
            text(encode(&doc(&all, false), Format::Csv).unwrap()),
            "id,name,coordinates.lat,coordinates.lon,riverKm,tags\r\n\
             a,\"Ä \"\"q\"\"\",1.5,2,,\r\n\
             b,,,,3.25,\r\n\
             c,,,,,\"[1,\"\"x\"\"]\"\r\n"
        );
    }
}
