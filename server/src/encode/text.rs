//! Text encoders of value batches: JSON envelope, NDJSON, CSV, XML. Columns are the requested
//! value fields in order; timestamps use the same RFC 3339 form in every format.

use super::{BatchEncoder, csv_field, json_string, number, xml_text};
use crate::negotiate::Format;
use crate::timefmt::TimeFormatter;
use bytes::Bytes;
use datafusion::arrow::array::{Array, AsArray, DictionaryArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{Float64Type, Int32Type, TimestampMicrosecondType};

pub struct ValuesText {
    format: Format,
    columns: Vec<String>,
    head: Option<Vec<u8>>,
    tail: Vec<u8>,
    time: TimeFormatter,
    rows: u64,
}

impl ValuesText {
    /// `head`/`tail` wrap the rows (the JSON/XML envelope); CSV and NDJSON have none.
    pub fn new(
        format: Format,
        columns: Vec<String>,
        head: Vec<u8>,
        tail: Vec<u8>,
        time: TimeFormatter,
    ) -> Self {
        Self {
            format,
            columns,
            head: Some(head),
            tail,
            time,
            rows: 0,
        }
    }
}

enum Col<'a> {
    Time(&'a datafusion::arrow::array::PrimitiveArray<TimestampMicrosecondType>),
    Num(&'a datafusion::arrow::array::PrimitiveArray<Float64Type>),
    Text(&'a DictionaryArray<Int32Type>, &'a StringArray),
}

fn columns<'a>(batch: &'a RecordBatch, names: &[String]) -> Result<Vec<Col<'a>>, String> {
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
            let values = d
                .values()
                .as_string_opt::<i32>()
                .ok_or_else(|| format!("column {n} is not text"))?;
            Ok(Col::Text(d, values))
        })
        .collect()
}

impl ValuesText {
    fn cell(&mut self, col: &Col<'_>, i: usize, quoted: bool, out: &mut Vec<u8>) {
        match col {
            Col::Time(a) => {
                if quoted {
                    out.push(b'"');
                }
                self.time.write(a.value(i), out);
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
            Col::Text(d, values) => {
                let s = if d.is_null(i) {
                    ""
                } else {
                    values.value(d.keys().value(i) as usize)
                };
                match self.format {
                    Format::Csv => csv_field(s, out),
                    Format::Xml => xml_text(s, out),
                    _ => json_string(s, out),
                }
            }
        }
    }
}

impl BatchEncoder for ValuesText {
    fn begin(&mut self) -> Result<Bytes, String> {
        let mut out = self.head.take().unwrap_or_default();
        if self.format == Format::Csv {
            out.extend_from_slice(self.columns.join(",").as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        Ok(Bytes::from(out))
    }

    fn batch(&mut self, batch: &RecordBatch) -> Result<Bytes, String> {
        let cols = columns(batch, &self.columns)?;
        let names: Vec<String> = self.columns.clone();
        let mut out = Vec::with_capacity(batch.num_rows() * 64);
        for i in 0..batch.num_rows() {
            match self.format {
                Format::Csv => {
                    for (k, c) in cols.iter().enumerate() {
                        if k > 0 {
                            out.push(b',');
                        }
                        self.cell(c, i, false, &mut out);
                    }
                    out.extend_from_slice(b"\r\n");
                }
                Format::Xml => {
                    out.extend_from_slice(b"<measurement>");
                    for (c, name) in cols.iter().zip(&names) {
                        out.push(b'<');
                        out.extend_from_slice(name.as_bytes());
                        out.push(b'>');
                        self.cell(c, i, false, &mut out);
                        out.extend_from_slice(b"</");
                        out.extend_from_slice(name.as_bytes());
                        out.push(b'>');
                    }
                    out.extend_from_slice(b"</measurement>");
                }
                _ => {
                    if self.format == Format::Json && self.rows > 0 {
                        out.push(b',');
                    }
                    out.push(b'{');
                    for (k, (c, name)) in cols.iter().zip(&names).enumerate() {
                        if k > 0 {
                            out.push(b',');
                        }
                        json_string(name, &mut out);
                        out.push(b':');
                        self.cell(c, i, true, &mut out);
                    }
                    out.push(b'}');
                    if self.format == Format::NdJson {
                        out.push(b'\n');
                    }
                }
            }
            self.rows += 1;
        }
        Ok(Bytes::from(out))
    }

    fn finish(&mut self) -> Result<Bytes, String> {
        Ok(Bytes::from(std::mem::take(&mut self.tail)))
    }
}
