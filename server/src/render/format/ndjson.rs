//! NDJSON (`application/x-ndjson`): one JSON object a line, rows and resources alike, no
//! envelope, so that a download is read line by line (`jq`, `pandas.read_json(lines=True)`).

use super::{Answer::*, Encoder, Format, Schema, Spec};
use crate::render::encode::catalog::write_json;
use crate::render::encode::{
    BatchEncoder, Cells, EncodeError, Head, ListShape, Rows, TextFormat, json_string,
};
use crate::render::resources::StationDoc;
use bytes::Bytes;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::json::Writer as JsonWriter;
use datafusion::arrow::json::writer::{LineDelimited, WriterBuilder};
use hydro_engine::AnswerPart;
use hydro_engine::Station;
use serde_json::Value;

pub const NDJSON: Format = Format::of(&Spec {
    short: "ndjson",
    media_type: "application/x-ndjson",
    aliases: &["application/ndjson", "application/jsonl"],
    text: true,
    compressible: true,
    attachment: None,
    offered: &[
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
    encoder: Encoder::Text(&NdJson),
    schema: Schema::Text,
});

pub struct NdJson;

impl TextFormat for NdJson {
    fn document(&self, _head: &Head<'_>) -> (Vec<u8>, Vec<u8>) {
        (Vec::new(), Vec::new())
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

    fn json_item(
        &self,
        _first: bool,
        out: &mut Vec<u8>,
        write: &mut dyn FnMut(&mut Vec<u8>),
    ) -> bool {
        write(out);
        out.push(b'\n');
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

    fn sql(&self, _schema: &SchemaRef, _head: &Head<'_>) -> Option<Box<dyn BatchEncoder>> {
        Some(Box::new(SqlLines))
    }
}

impl Rows for NdJson {
    fn cell_before(&self, k: usize, column: &str, out: &mut Vec<u8>) {
        out.push(if k == 0 { b'{' } else { b',' });
        json_string(column, out);
        out.push(b':');
    }

    fn row_end(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"}\n");
    }

    fn cells(&self) -> Cells {
        Cells {
            missing: b"null",
            missing_text: b"\"\"",
            quoted_times: true,
        }
    }
}

/// A SQL answer's rows, a line each, written by Arrow's JSON writer (nulls as `null`).
struct SqlLines;

impl BatchEncoder for SqlLines {
    fn begin(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        Ok(Vec::new())
    }

    fn piece(&mut self, piece: AnswerPart) -> Result<Vec<Bytes>, EncodeError> {
        let AnswerPart::Rows(batch) = piece else {
            return Err(EncodeError::Unexpected(
                "a stored row group in a SQL answer".into(),
            ));
        };
        let mut writer: JsonWriter<Vec<u8>, LineDelimited> = WriterBuilder::new()
            .with_explicit_nulls(true)
            .build(Vec::new());
        writer.write(&batch)?;
        writer.finish()?;
        Ok(vec![Bytes::from(writer.into_inner())])
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        Ok(Vec::new())
    }
}
