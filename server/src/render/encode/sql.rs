//! SQL answers as text: CSV, NDJSON and the JSON envelope, for whatever columns a statement
//! makes. Arrow's own CSV and JSON writers write the cells (every Arrow type a query can give,
//! nulls as empty cells or `null`); times are written first as every answer of the API writes
//! them (RFC 3339 in the server's offset, `+00:00` rather than `Z`), times without a zone as
//! they are (`2024-01-01T00:00:00`). Arrow IPC and Parquet answers take the batches as they
//! are (`binary`).

use super::{BatchEncoder, EncodeError};
use crate::http::negotiate::Format;
use crate::render::timefmt::TimeFormatter;
use bytes::Bytes;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::csv::writer::{Terminator, WriterBuilder as CsvBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::json::Writer as JsonWriter;
use datafusion::arrow::json::writer::{JsonArray, LineDelimited, WriterBuilder as JsonBuilder};
use hydro_engine::query::AnswerPart;
use std::sync::Arc;

pub struct SqlText {
    format: Format,
    /// The answer's columns, times as text (what the writers see).
    schema: SchemaRef,
    /// The JSON envelope's beginning (`{"meta":…,"data":`), before the rows' array.
    head: Vec<u8>,
    time: TimeFormatter,
    /// CSV: whether the header line went out.
    header_sent: bool,
    /// JSON: the array of rows, written batch by batch.
    array: Option<JsonWriter<Vec<u8>, JsonArray>>,
}

impl SqlText {
    /// `meta`: the envelope's `meta` (JSON only).
    pub fn new(
        format: Format,
        schema: &SchemaRef,
        meta: &serde_json::Value,
        time: TimeFormatter,
    ) -> Self {
        let mut head = Vec::new();
        if format == Format::Json {
            head.extend_from_slice(b"{\"meta\":");
            head.extend_from_slice(meta.to_string().as_bytes());
            head.extend_from_slice(b",\"data\":");
        }
        Self {
            format,
            schema: times_as_text_schema(schema),
            head,
            time,
            header_sent: false,
            array: None,
        }
    }

    fn csv(&mut self, batch: &RecordBatch) -> Result<Vec<u8>, EncodeError> {
        let mut writer = CsvBuilder::new()
            .with_header(!self.header_sent)
            .with_line_terminator(Terminator::CRLF)
            .build(Vec::new());
        writer.write(batch)?;
        self.header_sent = true;
        Ok(writer.into_inner())
    }
}

impl BatchEncoder for SqlText {
    fn begin(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        if self.format == Format::Json {
            self.array = Some(
                JsonBuilder::new()
                    .with_explicit_nulls(true)
                    .build(Vec::new()),
            );
        }
        Ok(vec![Bytes::from(std::mem::take(&mut self.head))])
    }

    fn piece(&mut self, piece: AnswerPart) -> Result<Vec<Bytes>, EncodeError> {
        let AnswerPart::Rows(batch) = piece else {
            return Err(EncodeError::Unexpected(
                "a stored row group in a SQL answer".into(),
            ));
        };
        let batch = times_as_text(&batch, &self.schema, &mut self.time)?;
        let bytes = match self.format {
            Format::Csv => self.csv(&batch)?,
            Format::NdJson => {
                let mut writer: JsonWriter<Vec<u8>, LineDelimited> = JsonBuilder::new()
                    .with_explicit_nulls(true)
                    .build(Vec::new());
                writer.write(&batch)?;
                writer.finish()?;
                writer.into_inner()
            }
            _ => {
                let array = self.array.as_mut().ok_or(EncodeError::NotStarted)?;
                array.write(&batch)?;
                std::mem::take(array.get_mut())
            }
        };
        Ok(vec![Bytes::from(bytes)])
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        let bytes = match self.format {
            // An answer without rows still names its columns.
            Format::Csv if !self.header_sent => {
                self.csv(&RecordBatch::new_empty(Arc::clone(&self.schema)))?
            }
            Format::Json => {
                let mut array = self.array.take().ok_or(EncodeError::NotStarted)?;
                array.finish()?;
                let mut bytes = array.into_inner();
                bytes.push(b'}');
                bytes
            }
            _ => Vec::new(),
        };
        Ok(vec![Bytes::from(bytes)])
    }
}

fn is_time(t: &DataType) -> bool {
    matches!(t, DataType::Timestamp(..))
}

/// `schema` with its times as text.
fn times_as_text_schema(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            t if is_time(t) => Field::new(f.name(), DataType::Utf8, f.is_nullable()),
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// `batch` with its time columns written as text, as `schema` (from
/// [`times_as_text_schema`]) says.
fn times_as_text(
    batch: &RecordBatch,
    schema: &SchemaRef,
    time: &mut TimeFormatter,
) -> Result<RecordBatch, EncodeError> {
    let columns: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .map(|c| match c.data_type() {
            DataType::Timestamp(_, zone) => time_texts(c, zone.is_some(), time),
            _ => Ok(Arc::clone(c)),
        })
        .collect::<Result<_, EncodeError>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

fn time_texts(
    c: &ArrayRef,
    zoned: bool,
    time: &mut TimeFormatter,
) -> Result<ArrayRef, EncodeError> {
    let micros = cast(c, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
    let micros = micros.as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>();
    let mut out = StringBuilder::with_capacity(micros.len(), micros.len() * 25);
    for i in 0..micros.len() {
        if micros.is_null(i) {
            out.append_null();
        } else if zoned {
            out.append_value(time.format(micros.value(i)));
        } else {
            let naive = chrono::DateTime::from_timestamp_micros(micros.value(i))
                .map(|t| t.naive_utc().format("%Y-%m-%dT%H:%M:%S%.f").to_string())
                .unwrap_or_default();
            out.append_value(naive);
        }
    }
    Ok(Arc::new(out.finish()))
}
