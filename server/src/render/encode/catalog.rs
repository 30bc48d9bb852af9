//! Catalog answers (stations, parameters, characteristics, versions, latest, landing): small,
//! so built whole from JSON values, or streamed item by item ([`ListEncoder`]) where a list
//! is long (`render::station_list`). What an item looks like is its format's.

use super::{EncodeError, Envelope, Given, Head, ListShape, TableFormat, TextFormat, table};
use crate::render::resources::flatten;
use hydro_engine::Station;
use serde::Serialize;
use serde_json::Value;
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

impl Document<'_> {
    fn items(&self) -> Vec<&Value> {
        match &self.data {
            Data::List(v) => v.iter().collect(),
            Data::One(v) => vec![*v],
        }
    }

    /// The columns of a table of the items: those named, else every flattened key.
    fn columns(&self, items: &[&Value]) -> Vec<String> {
        match &self.csv_columns {
            Some(c) => c.clone(),
            None => csv_columns(items.iter().copied()),
        }
    }

    /// The document in the text format `format`.
    pub fn text(&self, format: &'static dyn TextFormat) -> Vec<u8> {
        let envelope = Given {
            meta: &self.meta,
            links: self.links.as_ref(),
        };
        if let Data::One(item) = self.data {
            let head = Head {
                envelope: &envelope,
                columns: &[],
            };
            if let Some(bytes) = format.one(item, &head) {
                return bytes;
            }
        }
        let items = self.items();
        let list = ListEncoder::new(format, &envelope, self.item_name, self.columns(&items));
        let mut out = list.head();
        for (k, item) in items.into_iter().enumerate() {
            list.item(item, k == 0, &mut out);
        }
        out.extend_from_slice(list.tail());
        out
    }

    /// The document's items as a table in `format`.
    pub fn table(&self, format: &dyn TableFormat) -> Result<Vec<u8>, EncodeError> {
        let items = self.items();
        table::encode(&items, &self.columns(&items), format)
    }
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
/// byte for byte, so a list can be streamed without holding its items, or its bytes, all at
/// once.
pub struct ListEncoder {
    format: &'static dyn TextFormat,
    head: Vec<u8>,
    tail: Vec<u8>,
    item_name: String,
    columns: Vec<String>,
}

impl ListEncoder {
    /// A list of `item_name`s after the envelope; `columns`: those of a table of the items
    /// (CSV; ignored by the other formats).
    pub fn new(
        format: &'static dyn TextFormat,
        envelope: &dyn Envelope,
        item_name: &str,
        columns: Vec<String>,
    ) -> Self {
        let (head, tail) = format.document(&Head {
            envelope,
            columns: &columns,
        });
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

    fn shape(&self) -> ListShape<'_> {
        ListShape {
            item_name: &self.item_name,
            columns: &self.columns,
        }
    }

    /// Appends an item; `first`: it opens the list (no separator before it).
    pub fn item(&self, item: &Value, first: bool, out: &mut Vec<u8>) {
        self.format.item(item, &self.shape(), first, out);
    }

    /// Appends an item that `write` writes in its JSON shape, if the format's items are JSON
    /// objects; false if not, and `write` not called.
    pub fn json_item(
        &self,
        first: bool,
        out: &mut Vec<u8>,
        write: &mut dyn FnMut(&mut Vec<u8>),
    ) -> bool {
        self.format.json_item(first, out, write)
    }

    /// Appends a whole station written from its fields, if the format has a way to; false if
    /// not.
    pub fn whole_station(
        &self,
        station: &Station,
        distance_km: Option<f64>,
        first: bool,
        out: &mut Vec<u8>,
    ) -> bool {
        self.format
            .whole_station(station, distance_km, &self.shape(), first, out)
    }
}

/// Appends `v` as JSON.
pub fn write_json(v: &impl Serialize, out: &mut Vec<u8>) {
    // Writing to a Vec cannot fail, and catalog items always serialize.
    let _ = serde_json::to_writer(out, v);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::format::{Format, geojson, ndjson, xml};
    use serde_json::{Map, json};

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
                let mut whole = Map::new();
                whole.insert("meta".into(), d.meta.clone());
                if let Some(l) = &d.links {
                    whole.insert("links".into(), l.clone());
                }
                whole.insert("data".into(), Value::Array(some.to_vec()));
                assert_eq!(
                    text(Format::JSON.document(&d).unwrap()),
                    Value::Object(whole).to_string()
                );
                let features: Vec<Value> = some.iter().map(geojson::feature).collect();
                assert_eq!(
                    text(geojson::GEOJSON.document(&d).unwrap()),
                    json!({"type": "FeatureCollection", "features": features}).to_string()
                );
                let lines: String = some.iter().map(|v| format!("{v}\n")).collect();
                assert_eq!(text(ndjson::NDJSON.document(&d).unwrap()), lines);
                let xml = text(xml::XML.document(&d).unwrap());
                assert_eq!(xml.matches("<station>").count(), n);
                assert!(xml.ends_with("</data></response>"), "{xml}");
            }
        }
    }

    /// Without named columns, CSV has every flattened key in the order of first appearance,
    /// empty cells where an item lacks one, and an array as its JSON text.
    #[test]
    fn csv_columns_follow_first_appearance() {
        let all = items();
        assert_eq!(
            text(Format::CSV.document(&doc(&all, false)).unwrap()),
            "id,name,coordinates.lat,coordinates.lon,riverKm,tags\r\n\
             a,\"Ä \"\"q\"\"\",1.5,2,,\r\n\
             b,,,,3.25,\r\n\
             c,,,,,\"[1,\"\"x\"\"]\"\r\n"
        );
    }
}
