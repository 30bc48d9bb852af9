//! SQL answers as text, for whatever columns a statement makes: the format writes the cells
//! (Arrow's own CSV and JSON writers in CSV, NDJSON and JSON: every Arrow type a query can
//! give, nulls as empty cells or `null`); times are written first as every answer of the API
//! writes them (RFC 3339 in the server's offset, `+00:00` rather than `Z`), times without a
//! zone as they are (`2024-01-01T00:00:00`). Arrow IPC and Parquet answers take the batches as
//! they are (their `TableFormat`).

use super::{BatchEncoder, EncodeError, Envelope, Head, TextFormat};
use crate::render::timefmt::TimeFormatter;
use bytes::Bytes;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use hydro_engine::AnswerPart;
use std::sync::Arc;

/// A SQL answer in a text format: its times written as text, then the format's writer.
pub struct SqlText {
    /// The format's writer of rows.
    rows: Box<dyn BatchEncoder>,
    /// The answer's columns, times as text (what the writer sees).
    schema: SchemaRef,
    time: TimeFormatter,
}

impl SqlText {
    /// `envelope`: the answer's `meta` (for the formats that show it).
    pub fn new(
        format: &'static dyn TextFormat,
        schema: &SchemaRef,
        envelope: &dyn Envelope,
        time: TimeFormatter,
    ) -> Result<Self, EncodeError> {
        let schema = times_as_text_schema(schema);
        let head = Head {
            envelope,
            columns: &[],
        };
        let rows = format
            .sql(&schema, &head)
            .ok_or_else(|| EncodeError::Unexpected("a format without SQL rows".into()))?;
        Ok(Self { rows, schema, time })
    }
}

impl BatchEncoder for SqlText {
    fn begin(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        self.rows.begin()
    }

    fn piece(&mut self, piece: AnswerPart) -> Result<Vec<Bytes>, EncodeError> {
        let AnswerPart::Rows(batch) = piece else {
            return Err(EncodeError::Unexpected(
                "a stored row group in a SQL answer".into(),
            ));
        };
        let batch = times_as_text(&batch, &self.schema, &mut self.time)?;
        self.rows.piece(AnswerPart::Rows(batch))
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        self.rows.finish()
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
