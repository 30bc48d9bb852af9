//! Text encoders of value batches: JSON envelope, NDJSON, CSV, XML. Columns are the requested
//! value fields in order; timestamps use the same RFC 3339 form in every format.

use super::{Appender, Fragment, Out, SHORT, csv_field, json_string, number, xml_text};
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

/// The most a cell of a column can take: a timestamp at most 32 bytes, a number at most 24
/// (ryu), text its longest dictionary value, `null` or `""`.
fn cell_max(col: &Col<'_>) -> usize {
    match col {
        Col::Time(_) => 32,
        Col::Num(_) => 24,
        Col::Text(_, e) => e.iter().map(Fragment::len).max().unwrap_or(0).max(2),
    }
}

#[inline(always)]
fn cell(col: &Col<'_>, i: usize, json: bool, time: &mut TimeFormatter, out: &mut Appender<'_>) {
    match col {
        Col::Time(a) => time.write(a.value(i), out),
        Col::Num(a) => {
            if a.is_null(i) {
                out.put(if json { b"null" } else { b"" });
            } else {
                number(a.value(i), out);
            }
        }
        Col::Text(d, encoded) => {
            if d.is_null(i) {
                out.put(if json { b"\"\"" } else { b"" });
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
        let row_max = frags.iter().map(Fragment::len).sum::<usize>()
            + cols.iter().map(cell_max).sum::<usize>();
        // SHORT more at the end: a fixed-size copy writes up to that much beyond what it keeps.
        let row_room = row_max + SHORT;
        let mut time = self.time.clone();
        let (last, cell_frags) = frags.split_last().ok_or("no columns")?;
        let rows = batch.num_rows();
        let mut chunks = Vec::with_capacity(rows.div_ceil(CHUNK_ROWS));
        // Rows are written here and copied out at their exact length, one copy a frame from a
        // buffer that stays in the cache.
        let mut scratch = vec![0u8; CHUNK_ROWS.min(rows) * row_max + SHORT];
        let mut i = 0;
        while i < rows {
            let end = (i + CHUNK_ROWS).min(rows);
            let mut out = Appender::new(&mut scratch);
            // Every row checks its room: the frame ends early rather than index past it.
            while i < end && out.room() >= row_room {
                for (c, frag) in cols.iter().zip(cell_frags) {
                    frag.put(&mut out);
                    cell(c, i, json, &mut time, &mut out);
                }
                last.put(&mut out);
                i += 1;
            }
            if out.appended().is_empty() {
                // Cannot happen (the buffer holds at least one row), and must not loop.
                return Err("a row larger than its buffer".into());
            }
            chunks.push(Bytes::copy_from_slice(out.appended()));
        }
        Ok(chunks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::FixedOffset;
    use datafusion::arrow::array::{ArrayRef, Float64Array, TimestampMicrosecondArray};
    use std::sync::Arc;

    /// Rows through the frame buffer match the same cells appended to a `Vec` one by one, over
    /// several frames, with the longest cells there are: sub-second timestamps, numbers in
    /// exponent form, nulls, and a dictionary value longer than a short fragment.
    #[test]
    fn frames_hold_the_same_rows_as_cell_by_cell_appends() {
        let n = 3 * CHUNK_ROWS + 7;
        let long = "checked, with a note longer than thirty-two bytes \"quoted\"";
        let times: TimestampMicrosecondArray = (0..n as i64)
            .map(|i| 1_420_070_400_000_000 + i * 900_000_123)
            .collect::<Vec<_>>()
            .into();
        let values: Float64Array = (0..n)
            .map(|i| match i % 4 {
                0 => None,
                1 => Some(-1.234_567_890_123e-300),
                2 => Some(466.16),
                _ => Some(i as f64 * 1e20),
            })
            .collect();
        let keys = (0..n as i32).map(|i| i % 3).collect::<Vec<_>>();
        let quality = DictionaryArray::<Int32Type>::try_new(
            keys.into(),
            Arc::new(StringArray::from(vec!["good", long, ""])),
        )
        .unwrap();
        let batch = RecordBatch::try_from_iter([
            (
                "timestamp",
                Arc::new(times.clone().with_timezone("+00:00")) as ArrayRef,
            ),
            ("value", Arc::new(values.clone()) as ArrayRef),
            ("quality", Arc::new(quality) as ArrayRef),
        ])
        .unwrap();
        let offset = FixedOffset::east_opt(5 * 3600 + 1800).unwrap();
        let columns = ["timestamp", "value", "quality"].map(String::from).to_vec();
        let csv = ValuesText::new(
            Format::Csv,
            columns,
            Vec::new(),
            Vec::new(),
            TimeFormatter::new(offset),
        );
        let chunks = csv.rows(&batch).unwrap();
        assert!(chunks.len() >= 4, "{} frames", chunks.len());
        let got: Vec<u8> = chunks.concat();

        let mut want = Vec::new();
        let mut time = TimeFormatter::new(offset);
        let mut quoted = Vec::new();
        csv_field(long, &mut quoted);
        for i in 0..n {
            time.write(times.value(i), &mut want);
            want.push(b',');
            if values.is_valid(i) {
                number(values.value(i), &mut want);
            }
            want.push(b',');
            want.extend_from_slice(match i % 3 {
                0 => b"good",
                1 => &quoted,
                _ => b"",
            });
            want.extend_from_slice(b"\r\n");
        }
        assert_eq!(
            String::from_utf8(got).unwrap(),
            String::from_utf8(want).unwrap()
        );
    }
}
