//! Text encoders of value batches: JSON envelope, NDJSON, CSV, XML. Columns are the requested
//! value fields in order; timestamps use the same RFC 3339 form in every format.

use super::{Fragment, SHORT, csv_field, json_string, number, xml_text};
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

/// Rows per body frame. Frames of tens of KB are recycled by the allocator; one buffer per
/// batch (hundreds of KB) came fresh from the OS each time, and its page faults showed in
/// `perf` (kernel `clear_page`).
const CHUNK_ROWS: usize = 512;

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
    Text(&'a DictionaryArray<Int32Type>, Vec<Fragment>),
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
                .map(|k| Fragment::new(escaped(format, values.value(k))))
                .collect();
            Ok(Col::Text(d, encoded))
        })
        .collect()
}

fn cell(col: &Col<'_>, i: usize, json: bool, time: &mut TimeFormatter, out: &mut Vec<u8>) {
    match col {
        Col::Time(a) => time.write(a.value(i), out),
        Col::Num(a) => {
            if a.is_null(i) {
                out.extend_from_slice(if json { b"null" } else { b"" });
            } else {
                number(a.value(i), out);
            }
        }
        Col::Text(d, encoded) => {
            if d.is_null(i) {
                out.extend_from_slice(if json { b"\"\"" } else { b"" });
            } else if let Some(e) = encoded.get(d.keys().value(i) as usize) {
                e.put(out);
            }
        }
    }
}

impl ValuesText {
    /// The constant bytes of a row: `frags[k]` goes before cell k, the last one after the
    /// last cell. JSON timestamp quotes are folded in, so a cell writes only its value.
    fn fragments(&self, cols: &[Col<'_>]) -> Vec<Fragment> {
        let mut frags: Vec<Vec<u8>> = vec![Vec::new(); cols.len() + 1];
        for (k, (c, name)) in cols.iter().zip(&self.columns).enumerate() {
            let quote = matches!(c, Col::Time(_)) && self.is_json();
            match self.format {
                Format::Csv if k > 0 => frags[k].push(b','),
                Format::Csv => {}
                Format::Xml => {
                    if k == 0 {
                        frags[k].extend_from_slice(b"<measurement>");
                    }
                    frags[k].extend_from_slice(format!("<{name}>").as_bytes());
                    frags[k + 1].extend_from_slice(format!("</{name}>").as_bytes());
                }
                _ => {
                    if k == 0 {
                        if self.format == Format::Json {
                            frags[k].push(JSON_SEPARATOR);
                        }
                        frags[k].push(b'{');
                    } else {
                        frags[k].push(b',');
                    }
                    frags[k].extend_from_slice(&self.json_keys[k]);
                }
            }
            if quote {
                frags[k].push(b'"');
                frags[k + 1].push(b'"');
            }
        }
        let end = &mut frags[cols.len()];
        match self.format {
            Format::Csv => end.extend_from_slice(b"\r\n"),
            Format::Xml => end.extend_from_slice(b"</measurement>"),
            Format::NdJson => end.extend_from_slice(b"}\n"),
            _ => end.push(b'}'),
        }
        frags.into_iter().map(Fragment::new).collect()
    }

    fn is_json(&self) -> bool {
        matches!(self.format, Format::Json | Format::NdJson)
    }

    /// The rows of one batch, in pieces of at most `CHUNK_ROWS` rows.
    pub fn rows(&self, batch: &RecordBatch) -> Result<Vec<Bytes>, String> {
        let cols = columns(batch, &self.columns, self.format)?;
        let frags = self.fragments(&cols);
        let json = self.is_json();
        // Room for the longest row, so a buffer is never copied while it grows.
        let row_max: usize = frags.iter().map(Fragment::len).sum::<usize>()
            + cols
                .iter()
                .map(|c| match c {
                    Col::Time(_) => 40,
                    Col::Num(_) => 24,
                    Col::Text(_, e) => e.iter().map(Fragment::len).max().unwrap_or(2),
                })
                .sum::<usize>();
        let mut time = self.time.clone();
        let (last, cell_frags) = frags.split_last().ok_or("no columns")?;
        let mut chunks = Vec::with_capacity(batch.num_rows().div_ceil(CHUNK_ROWS));
        for start in (0..batch.num_rows()).step_by(CHUNK_ROWS) {
            let end = (start + CHUNK_ROWS).min(batch.num_rows());
            // SHORT more: a short copy writes that much before it truncates.
            let mut out = Vec::with_capacity((end - start) * row_max + SHORT);
            for i in start..end {
                for (c, frag) in cols.iter().zip(cell_frags) {
                    frag.put(&mut out);
                    cell(c, i, json, &mut time, &mut out);
                }
                last.put(&mut out);
            }
            chunks.push(Bytes::from(out));
        }
        Ok(chunks)
    }
}
