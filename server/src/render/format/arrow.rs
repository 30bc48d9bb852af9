//! Arrow IPC stream (`application/vnd.apache.arrow.stream`): typed columns, UTC timestamps,
//! no envelope; what pyarrow, polars and DuckDB read without parsing. Each batch's columns are
//! sent as the frames they already are. Offered as a file to download.

use super::{Encoder, Format, Schema, Spec};
use crate::render::encode::{BatchEncoder, EncodeError, TableFormat};
use bytes::Bytes;
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::writer::StreamEncoder;
use hydro_engine::{AnswerPart, ReadAhead};

pub const ARROW: Format = Format::of(&Spec {
    short: "arrow",
    media_type: "application/vnd.apache.arrow.stream",
    aliases: &[],
    text: false,
    compressible: true,
    attachment: Some("arrows"),
    offered: super::DATA,
    encoder: Encoder::Table(&Arrow),
    schema: Schema::Binary,
});

pub struct Arrow;

impl TableFormat for Arrow {
    fn batches(&self, schema: SchemaRef) -> Box<dyn BatchEncoder> {
        Box::new(ArrowIpc::new(schema))
    }

    /// Arrow IPC sends each batch's columns as they are, on the answer's own task, so decoding
    /// is the work and months are read in groups.
    fn read_ahead(&self) -> ReadAhead {
        ReadAhead::Grouped
    }
}

pub struct ArrowIpc {
    schema: SchemaRef,
    encoder: Option<StreamEncoder>,
}

/// Buffers at least this large go out as frames of their own, sharing the column's memory;
/// smaller ones (message headers, padding, dictionaries) are copied together into one frame,
/// so that a batch is a handful of frames rather than a dozen tiny writes.
const SHARED_BUFFER_BYTES: usize = 4 * 1024;

/// An Arrow buffer as the owner of a body frame's bytes.
struct Shared(Buffer);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

/// The encoder's buffers as body frames, in order: large ones shared, runs of small ones
/// copied into one frame.
fn frames(buffers: Vec<Buffer>) -> Vec<Bytes> {
    let mut frames = Vec::with_capacity(buffers.len());
    let mut small = Vec::new();
    for buffer in buffers {
        if buffer.len() < SHARED_BUFFER_BYTES {
            small.extend_from_slice(buffer.as_slice());
            continue;
        }
        if !small.is_empty() {
            frames.push(Bytes::from(std::mem::take(&mut small)));
        }
        frames.push(Bytes::from_owner(Shared(buffer)));
    }
    if !small.is_empty() {
        frames.push(Bytes::from(small));
    }
    frames
}

impl ArrowIpc {
    pub fn new(schema: SchemaRef) -> Self {
        Self {
            schema,
            encoder: None,
        }
    }
}

/// The columns of each batch go out as they are rather than copied through a writer: the
/// stream writer copied every buffer twice (into a message body, then into its output), and
/// those copies were the largest user-space item of an Arrow download after decoding.
impl BatchEncoder for ArrowIpc {
    /// Nothing yet: the schema message goes out with the first batch (or the end of stream).
    fn begin(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        self.encoder = Some(StreamEncoder::try_new(&self.schema)?);
        Ok(Vec::new())
    }

    fn piece(&mut self, piece: AnswerPart) -> Result<Vec<Bytes>, EncodeError> {
        let AnswerPart::Rows(batch) = piece else {
            return Err(EncodeError::Unexpected(
                "a stored row group cannot be sent as Arrow IPC".into(),
            ));
        };
        let encoder = self.encoder.as_mut().ok_or(EncodeError::NotStarted)?;
        Ok(frames(encoder.encode(&batch)?))
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        let encoder = self.encoder.take().ok_or(EncodeError::NotStarted)?;
        Ok(frames(encoder.finish()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::RecordBatch;
    use datafusion::arrow::array::{
        Array, ArrayRef, DictionaryArray, Float64Array, TimestampMicrosecondArray,
    };
    use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Schema, TimeUnit};
    use datafusion::arrow::ipc::reader::StreamReader;
    use std::sync::Arc;

    fn schema() -> SchemaRef {
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        Arc::new(Schema::new(vec![
            Field::new(
                "timestamp",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                false,
            ),
            Field::new("value", DataType::Float64, true),
            Field::new("quality", dict, false),
        ]))
    }

    fn batch(rows: usize, first: i64, quality: &[&str]) -> RecordBatch {
        let times = TimestampMicrosecondArray::from_iter_values(
            (0..rows as i64).map(|i| first + i * 900_000_000),
        )
        .with_timezone("UTC");
        let values = Float64Array::from_iter((0..rows).map(|i| (i % 7 != 3).then_some(i as f64)));
        let qualities: DictionaryArray<Int32Type> =
            (0..rows).map(|i| quality[i % quality.len()]).collect();
        let columns: Vec<ArrayRef> = vec![Arc::new(times), Arc::new(values), Arc::new(qualities)];
        RecordBatch::try_new(schema(), columns).unwrap()
    }

    fn stream(batches: &[RecordBatch]) -> (Vec<Bytes>, Vec<RecordBatch>) {
        let mut enc = ArrowIpc::new(schema());
        let mut frames = enc.begin().unwrap();
        for b in batches {
            frames.extend(enc.piece(AnswerPart::Rows(b.clone())).unwrap());
        }
        frames.extend(enc.finish().unwrap());
        let bytes: Vec<u8> = frames.iter().flat_map(|f| f.iter().copied()).collect();
        let read = StreamReader::try_new(bytes.as_slice(), None)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        (frames, read)
    }

    /// Batches come back as they went in, whether the dictionary stays or changes, and a
    /// stream without batches is still a stream (the schema and its end).
    #[test]
    fn arrow_streams_read_back() {
        let sent = vec![
            batch(3_000, 0, &["good"]),
            batch(2_900, 1 << 40, &["good"]),
            batch(10, 1 << 41, &["good", "suspect", "missing"]),
            batch(0, 0, &["good"]),
        ];
        let (_, read) = stream(&sent);
        assert_eq!(read, sent);
        let (frames, read) = stream(&[]);
        assert!(read.is_empty());
        assert!(!frames.is_empty());
    }

    /// The large columns are sent from the batch's own memory, not copied.
    #[test]
    fn large_columns_go_out_uncopied() {
        let sent = batch(3_000, 0, &["good"]);
        let times = sent.column(0).to_data().buffers()[0].as_ptr();
        let values = sent.column(1).to_data().buffers()[0].as_ptr();
        let (frames, _) = stream(std::slice::from_ref(&sent));
        let starts: Vec<*const u8> = frames.iter().map(|f| f.as_ptr()).collect();
        assert!(starts.contains(&times), "timestamps were copied");
        assert!(starts.contains(&values), "values were copied");
        // Headers and padding are gathered, not a frame each.
        assert!(frames.len() <= 8, "{} frames", frames.len());
    }
}
