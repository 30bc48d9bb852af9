//! CSV (`text/csv`, RFC 4180): a header line of the columns, then a row per value or
//! resource, lines ending in CRLF; fields quoted where they hold a comma, a quote or a line
//! break. Resources are flattened to dotted columns (`coordinates.lat`); missing cells are
//! empty. Offered as a file to download.

use super::{Answer::*, Encoder, Format, Schema, Spec};
use crate::render::encode::{
    BatchEncoder, Cells, EncodeError, Head, ListShape, Rows, TextFormat, number,
};
use crate::render::resources::{Cell, StationDoc, lookup};
use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::csv::writer::{Terminator, WriterBuilder};
use datafusion::arrow::datatypes::SchemaRef;
use hydro_engine::AnswerPart;
use hydro_engine::Station;
use serde_json::Value;
use std::sync::Arc;

pub const CSV: Format = Format::of(&Spec {
    short: "csv",
    media_type: "text/csv",
    aliases: &[],
    text: true,
    compressible: true,
    attachment: Some("csv"),
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
    encoder: Encoder::Text(&Csv),
    schema: Schema::Text,
});

pub struct Csv;

impl TextFormat for Csv {
    fn document(&self, head: &Head<'_>) -> (Vec<u8>, Vec<u8>) {
        let mut header = Vec::new();
        line(head.columns, &mut header, csv_field);
        (header, Vec::new())
    }

    fn escape(&self, text: &str, out: &mut Vec<u8>) {
        csv_field(text, out);
    }

    fn names_columns(&self) -> bool {
        true
    }

    fn rows(&self) -> Option<&dyn Rows> {
        Some(self)
    }

    /// A row: each column's cell looked up by its dot path (the columns are flattened keys),
    /// an array as its JSON text, as `flatten` gives it.
    fn item(&self, item: &Value, list: &ListShape<'_>, _first: bool, out: &mut Vec<u8>) {
        line(list.columns, out, |c, out| match lookup(item, c) {
            Some(Value::String(s)) => csv_field(s, out),
            Some(Value::Number(n)) => number(n.as_f64().unwrap_or(0.0), out),
            Some(Value::Bool(b)) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Some(a @ Value::Array(_)) => csv_field(&a.to_string(), out),
            _ => {}
        });
    }

    /// The row [`Self::item`] writes for the station's JSON object, without the object.
    fn whole_station(
        &self,
        station: &Station,
        distance_km: Option<f64>,
        list: &ListShape<'_>,
        _first: bool,
        out: &mut Vec<u8>,
    ) -> bool {
        let doc = StationDoc::new(station, distance_km);
        line(list.columns, out, |c, out| match doc.cell(c) {
            Some(Cell::Text(s)) => csv_field(s, out),
            Some(Cell::Number(x)) => number(x, out),
            None => {}
        });
        true
    }

    fn sql(&self, schema: &SchemaRef, _head: &Head<'_>) -> Option<Box<dyn BatchEncoder>> {
        Some(Box::new(SqlRows {
            schema: Arc::clone(schema),
            header_sent: false,
        }))
    }
}

impl Rows for Csv {
    fn cell_before(&self, k: usize, _column: &str, out: &mut Vec<u8>) {
        if k > 0 {
            out.push(b',');
        }
    }

    fn row_end(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"\r\n");
    }

    fn cells(&self) -> Cells {
        Cells {
            missing: b"",
            missing_text: b"",
            quoted_times: false,
        }
    }
}

/// A CSV field per RFC 4180: quoted when it holds a comma, quote or line break.
pub fn csv_field(s: &str, out: &mut Vec<u8>) {
    if s.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        out.push(b'"');
        out.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

/// A line of `columns`, each cell written by `cell`.
fn line(columns: &[String], out: &mut Vec<u8>, mut cell: impl FnMut(&str, &mut Vec<u8>)) {
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        cell(c, out);
    }
    out.extend_from_slice(b"\r\n");
}

/// A SQL answer's rows, written by Arrow's CSV writer (nulls as empty cells).
struct SqlRows {
    /// The answer's columns, times as text: an answer without rows still names them.
    schema: SchemaRef,
    header_sent: bool,
}

impl SqlRows {
    fn csv(&mut self, batch: &RecordBatch) -> Result<Vec<Bytes>, EncodeError> {
        let mut writer = WriterBuilder::new()
            .with_header(!self.header_sent)
            .with_line_terminator(Terminator::CRLF)
            .build(Vec::new());
        writer.write(batch)?;
        self.header_sent = true;
        Ok(vec![Bytes::from(writer.into_inner())])
    }
}

impl BatchEncoder for SqlRows {
    fn begin(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        Ok(Vec::new())
    }

    fn piece(&mut self, piece: AnswerPart) -> Result<Vec<Bytes>, EncodeError> {
        let AnswerPart::Rows(batch) = piece else {
            return Err(EncodeError::Unexpected(
                "a stored row group in a SQL answer".into(),
            ));
        };
        self.csv(&batch)
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        if self.header_sent {
            return Ok(Vec::new());
        }
        self.csv(&RecordBatch::new_empty(Arc::clone(&self.schema)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_where_they_must_be() {
        let mut o = Vec::new();
        csv_field("a,\"b\"", &mut o);
        assert_eq!(String::from_utf8(o).unwrap(), r#""a,""b""""#);
    }
}
