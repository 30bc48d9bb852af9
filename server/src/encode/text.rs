//! Text encoders of value batches: JSON envelope, NDJSON, CSV, XML. Columns are the requested
//! value fields in order; timestamps use the same RFC 3339 form in every format.

use super::{csv_field, json_string, number, xml_text};
use crate::negotiate::Format;
use crate::timefmt::TimeFormatter;
use bytes::Bytes;
use datafusion::arrow::array::{Array, AsArray, DictionaryArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{Float64Type, Int32Type, TimestampMicrosecondType};

/// Encodes value batches as rows of text. It holds no state between batches, so batches can be
/// encoded on several cores at once and sent in order (see `handlers::encode_stream`).
pub struct ValuesText {
    format: Format,
    columns: Vec<String>,
    /// `"name":` for each column, escaped once.
    json_keys: Vec<Vec<u8>>,
    head: Bytes,
    tail: Bytes,
    time: TimeFormatter,
}

/// What separates JSON rows. Every row of a batch starts with it, since a batch does not know
/// whether rows came before it; the stream drops the first one (`leading_separator`).
const JSON_SEPARATOR: u8 = b',';

impl ValuesText {
    /// `head`/`tail` wrap the rows (the JSON/XML envelope); CSV and NDJSON have none.
    pub fn new(
        format: Format,
        columns: Vec<String>,
        mut head: Vec<u8>,
        tail: Vec<u8>,
        time: TimeFormatter,
    ) -> Self {
        if format == Format::Csv {
            head.extend_from_slice(columns.join(",").as_bytes());
            head.extend_from_slice(b"\r\n");
        }
        let json_keys = columns
            .iter()
            .map(|n| {
                let mut k = escaped(Format::Json, n);
                k.push(b':');
                k
            })
            .collect();
        Self {
            format,
            columns,
            json_keys,
            head: Bytes::from(head),
            tail: Bytes::from(tail),
            time,
        }
    }

    /// Bytes before the first row.
    pub fn head(&self) -> Bytes {
        self.head.clone()
    }

    /// Bytes after the last row.
    pub fn tail(&self) -> Bytes {
        self.tail.clone()
    }

    /// Whether each batch's bytes start with a row separator that the first non-empty batch
    /// of the answer must drop.
    pub fn leading_separator(&self) -> bool {
        self.format == Format::Json
    }
}

enum Col<'a> {
    Time(&'a datafusion::arrow::array::PrimitiveArray<TimestampMicrosecondType>),
    Num(&'a datafusion::arrow::array::PrimitiveArray<Float64Type>),
    /// Keys, and each dictionary value already escaped for the output format.
    Text(&'a DictionaryArray<Int32Type>, Vec<Vec<u8>>),
}

fn escaped(format: Format, s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    match format {
        Format::Csv => csv_field(s, &mut out),
        Format::Xml => xml_text(s, &mut out),
        _ => json_string(s, &mut out),
    }
    out
}

fn columns<'a>(
    batch: &'a RecordBatch,
    names: &[String],
    format: Format,
) -> Result<Vec<Col<'a>>, String> {
    names
        .iter()
        .map(|n| {
            let c = batch
                .column_by_name(n)
                .ok_or_else(|| format!("column {n} missing"))?;
            if let Some(t) = c.as_primitive_opt::<TimestampMicrosecondType>() {
                return Ok(Col::Time(t));
            }
            if let Some(f) = c.as_primitive_opt::<Float64Type>() {
                return Ok(Col::Num(f));
            }
            let d = c
                .as_dictionary_opt::<Int32Type>()
                .ok_or_else(|| format!("column {n} has an unexpected type"))?;
            let values: &StringArray = d
                .values()
                .as_string_opt::<i32>()
                .ok_or_else(|| format!("column {n} is not text"))?;
            let encoded = (0..values.len())
                .map(|k| escaped(format, values.value(k)))
                .collect();
            Ok(Col::Text(d, encoded))
        })
        .collect()
}

fn cell(col: &Col<'_>, i: usize, quoted: bool, time: &mut TimeFormatter, out: &mut Vec<u8>) {
    match col {
        Col::Time(a) => {
            if quoted {
                out.push(b'"');
            }
            time.write(a.value(i), out);
            if quoted {
                out.push(b'"');
            }
        }
        Col::Num(a) => {
            if a.is_null(i) {
                out.extend_from_slice(if quoted { b"null" } else { b"" });
            } else {
                number(a.value(i), out);
            }
        }
        Col::Text(d, encoded) => {
            if d.is_null(i) {
                out.extend_from_slice(if quoted { b"\"\"" } else { b"" });
            } else if let Some(e) = encoded.get(d.keys().value(i) as usize) {
                out.extend_from_slice(e);
            }
        }
    }
}

impl ValuesText {
    /// The rows of one batch.
    pub fn rows(&self, batch: &RecordBatch) -> Result<Bytes, String> {
        let cols = columns(batch, &self.columns, self.format)?;
        let mut time = self.time.clone();
        let mut out = Vec::with_capacity(batch.num_rows() * 64);
        for i in 0..batch.num_rows() {
            match self.format {
                Format::Csv => {
                    for (k, c) in cols.iter().enumerate() {
                        if k > 0 {
                            out.push(b',');
                        }
                        cell(c, i, false, &mut time, &mut out);
                    }
                    out.extend_from_slice(b"\r\n");
                }
                Format::Xml => {
                    out.extend_from_slice(b"<measurement>");
                    for (c, name) in cols.iter().zip(&self.columns) {
                        out.push(b'<');
                        out.extend_from_slice(name.as_bytes());
                        out.push(b'>');
                        cell(c, i, false, &mut time, &mut out);
                        out.extend_from_slice(b"</");
                        out.extend_from_slice(name.as_bytes());
                        out.push(b'>');
                    }
                    out.extend_from_slice(b"</measurement>");
                }
                _ => {
                    if self.format == Format::Json {
                        out.push(JSON_SEPARATOR);
                    }
                    out.push(b'{');
                    for (k, (c, key)) in cols.iter().zip(&self.json_keys).enumerate() {
                        if k > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(key);
                        cell(c, i, true, &mut time, &mut out);
                    }
                    out.push(b'}');
                    if self.format == Format::NdJson {
                        out.push(b'\n');
                    }
                }
            }
        }
        Ok(Bytes::from(out))
    }
}
