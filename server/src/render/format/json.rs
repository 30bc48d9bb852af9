//! JSON (`application/json`), the default: the standard's envelope (`meta`, `links`, `data`)
//! around rows as objects and resources as they are; a resource alone is the envelope's
//! `data`. Missing cells are `null`, times strings.

use super::{Answer::*, Encoder, Format, Schema, Spec};
use crate::render::encode::catalog::write_json;
use crate::render::encode::{
    BatchEncoder, Cells, EncodeError, Head, ListShape, Rows, TextFormat, json_string,
};
use crate::render::resources::StationDoc;
use bytes::Bytes;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::json::Writer as JsonWriter;
use datafusion::arrow::json::writer::{JsonArray, WriterBuilder};
use hydro_engine::AnswerPart;
use hydro_engine::Station;
use serde_json::{Map, Value};

pub const JSON: Format = Format::of(&Spec {
    short: "json",
    media_type: "application/json",
    aliases: &[],
    text: true,
    compressible: true,
    attachment: None,
    offered: &[
        Landing,
        Stations,
        Catalog,
        Values,
        ManyValues,
        PostedValues,
        Statistics,
        ManyStatistics,
        PostedStatistics,
        Latest,
        Sql,
    ],
    encoder: Encoder::Text(&Json),
    schema: Schema::Answer,
});

pub struct Json;

/// What separates JSON rows. Every row of a batch starts with it, since a batch does not know
/// whether rows came before it; the stream drops the first one.
const SEPARATOR: u8 = b',';

/// `{"meta":…,"links":…,"data":`: the envelope up to its data.
fn envelope_head(head: &Head<'_>) -> Vec<u8> {
    let mut out = b"{\"meta\":".to_vec();
    out.extend_from_slice(head.envelope.meta_json().as_bytes());
    if let Some(links) = head.envelope.links() {
        out.extend_from_slice(b",\"links\":");
        out.extend_from_slice(links.to_string().as_bytes());
    }
    out.extend_from_slice(b",\"data\":");
    out
}

impl TextFormat for Json {
    fn document(&self, head: &Head<'_>) -> (Vec<u8>, Vec<u8>) {
        let mut out = envelope_head(head);
        out.push(b'[');
        (out, b"]}".to_vec())
    }

    fn escape(&self, text: &str, out: &mut Vec<u8>) {
        json_string(text, out);
    }

    fn rows(&self) -> Option<&dyn Rows> {
        Some(self)
    }

    fn item(&self, item: &Value, _list: &ListShape<'_>, first: bool, out: &mut Vec<u8>) {
        self.json_item(first, out, &mut |out| write_json(item, out));
    }

    fn one(&self, item: &Value, head: &Head<'_>) -> Option<Vec<u8>> {
        let mut m = Map::new();
        m.insert("meta".into(), head.envelope.meta());
        if let Some(links) = head.envelope.links() {
            m.insert("links".into(), links);
        }
        m.insert("data".into(), item.clone());
        Some(Value::Object(m).to_string().into_bytes())
    }

    fn json_item(
        &self,
        first: bool,
        out: &mut Vec<u8>,
        write: &mut dyn FnMut(&mut Vec<u8>),
    ) -> bool {
        if !first {
            out.push(SEPARATOR);
        }
        write(out);
        true
    }

    fn whole_station(
        &self,
        station: &Station,
        distance_km: Option<f64>,
        _list: &ListShape<'_>,
        first: bool,
        out: &mut Vec<u8>,
    ) -> bool {
        let doc = StationDoc::new(station, distance_km);
        self.json_item(first, out, &mut |out| doc.write_json(out))
    }

    fn sql(&self, _schema: &SchemaRef, head: &Head<'_>) -> Option<Box<dyn BatchEncoder>> {
        Some(Box::new(SqlRows {
            head: envelope_head(head),
            array: None,
        }))
    }
}

impl Rows for Json {
    fn cell_before(&self, k: usize, column: &str, out: &mut Vec<u8>) {
        if k == 0 {
            out.push(SEPARATOR);
            out.push(b'{');
        } else {
            out.push(b',');
        }
        json_string(column, out);
        out.push(b':');
    }

    fn row_end(&self, out: &mut Vec<u8>) {
        out.push(b'}');
    }

    fn cells(&self) -> Cells {
        Cells {
            missing: b"null",
            missing_text: b"\"\"",
            quoted_times: true,
        }
    }

    fn leading_separator(&self) -> bool {
        true
    }
}

/// A SQL answer's rows as the envelope's `data` array, written by Arrow's JSON writer (nulls
/// written as `null`).
struct SqlRows {
    /// The envelope up to its `data`.
    head: Vec<u8>,
    /// The array of rows, written batch by batch.
    array: Option<JsonWriter<Vec<u8>, JsonArray>>,
}

impl BatchEncoder for SqlRows {
    fn begin(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        self.array = Some(
            WriterBuilder::new()
                .with_explicit_nulls(true)
                .build(Vec::new()),
        );
        Ok(vec![Bytes::from(std::mem::take(&mut self.head))])
    }

    fn piece(&mut self, piece: AnswerPart) -> Result<Vec<Bytes>, EncodeError> {
        let AnswerPart::Rows(batch) = piece else {
            return Err(EncodeError::Unexpected(
                "a stored row group in a SQL answer".into(),
            ));
        };
        let array = self.array.as_mut().ok_or(EncodeError::NotStarted)?;
        array.write(&batch)?;
        Ok(vec![Bytes::from(std::mem::take(array.get_mut()))])
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        let mut array = self.array.take().ok_or(EncodeError::NotStarted)?;
        array.finish()?;
        let mut bytes = array.into_inner();
        bytes.push(b'}');
        Ok(vec![Bytes::from(bytes)])
    }
}
