//! Arrow IPC stream and Parquet encoders: typed UTC timestamps, no envelope. Arrow IPC sends a
//! batch's columns as the frames they already are; Parquet sends stored row groups as they were
//! read and encoded rows a row group at a time, so memory stays at one batch or row group.

use super::{BatchEncoder, EncodeError};
use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::writer::StreamEncoder;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_writer::ArrowWriterOptions;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use hydro_engine::parquet::assembly::Assembly;
use hydro_engine::query::{AnswerPart, StoredRowGroup};
use std::sync::{Mutex, PoisonError};

/// Rows per encoded Parquet row group in downloads (stored row groups keep their size).
const ROW_GROUP_ROWS: usize = 128 * 1024;

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

/// A Parquet file assembled from stored row groups, copied as they are, and rows encoded
/// here (months cut by the window, sorted or paged answers). Encoded rows use the storage's
/// settings (LZ4, page statistics and index) so that every row group of the file looks alike.
pub struct Parquet {
    schema: SchemaRef,
    writer: Option<Writer>,
}

struct Writer {
    schema: SchemaRef,
    file: Assembly,
    /// Rows encoded here, as a file of their own until they make a row group, which is then
    /// copied in like a stored one.
    open: Option<ArrowWriter<Vec<u8>>>,
}

/// Empty files of the schemas answers had, at most this many (a few column orders in practice).
const EMPTY_FILES: usize = 32;

/// A Parquet file of `schema` with no rows: written once per schema, since making it (the
/// Arrow schema encoded into its footer) was 7 % of a `recent=96` Parquet answer's CPU time.
fn empty_file(schema: &SchemaRef) -> Result<Bytes, EncodeError> {
    static MADE: Mutex<Vec<(SchemaRef, Bytes)>> = Mutex::new(Vec::new());
    let made = || MADE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, file)) = made().iter().find(|(s, _)| s == schema) {
        return Ok(file.clone());
    }
    let file = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(properties()))
        .and_then(|w| w.into_inner())
        .map(Bytes::from)?;
    let mut made = made();
    if made.len() < EMPTY_FILES {
        made.push((schema.clone(), file.clone()));
    }
    Ok(file)
}

fn properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::LZ4_RAW)
        .set_dictionary_enabled(false)
        .set_column_dictionary_enabled("quality".into(), true)
        .set_statistics_enabled(EnabledStatistics::Page)
        .build()
}

impl Writer {
    /// The writer and the file's first bytes. The file's footer is made from that of a file
    /// of the same schema with no rows, written by the parquet crate.
    fn new(schema: SchemaRef) -> Result<(Self, Vec<Bytes>), EncodeError> {
        let (file, head) = Assembly::new(&empty_file(&schema)?)?;
        let writer = Self {
            schema,
            file,
            open: None,
        };
        Ok((writer, vec![head]))
    }

    fn stored(&mut self, stored: StoredRowGroup) -> Result<Vec<Bytes>, EncodeError> {
        let mut frames = self.close_open()?;
        let copied = stored.copy_into(&mut self.file)?;
        if frames.is_empty() {
            // The usual case: no rows encoded before it, and no second list to make.
            return Ok(copied);
        }
        frames.extend(copied);
        Ok(frames)
    }

    fn rows(&mut self, batch: &RecordBatch) -> Result<Vec<Bytes>, EncodeError> {
        let open = match &mut self.open {
            Some(open) => open,
            None => {
                // The file's own footer is not sent: no Arrow schema in it to encode.
                let options = ArrowWriterOptions::new()
                    .with_properties(properties())
                    .with_skip_arrow_metadata(true);
                let writer =
                    ArrowWriter::try_new_with_options(Vec::new(), self.schema.clone(), options);
                self.open.insert(writer?)
            }
        };
        open.write(batch)?;
        if open.in_progress_rows() >= ROW_GROUP_ROWS {
            return self.close_open();
        }
        Ok(Vec::new())
    }

    /// Ends the rows being encoded, if any: their row group copied into the file.
    fn close_open(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        let Some(open) = self.open.take() else {
            return Ok(Vec::new());
        };
        let encoded = open.into_inner()?;
        Ok(self.file.copy_file(Bytes::from(encoded))?)
    }
}

impl Parquet {
    pub fn new(schema: SchemaRef) -> Self {
        Self {
            schema,
            writer: None,
        }
    }

    fn writer(&mut self) -> Result<&mut Writer, EncodeError> {
        self.writer.as_mut().ok_or(EncodeError::NotStarted)
    }
}

impl BatchEncoder for Parquet {
    fn begin(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        let (writer, head) = Writer::new(self.schema.clone())?;
        self.writer = Some(writer);
        Ok(head)
    }

    fn piece(&mut self, piece: AnswerPart) -> Result<Vec<Bytes>, EncodeError> {
        let w = self.writer()?;
        match piece {
            AnswerPart::Rows(batch) => w.rows(&batch),
            AnswerPart::Stored(stored) => w.stored(stored),
        }
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        let mut w = self.writer.take().ok_or(EncodeError::NotStarted)?;
        let mut frames = w.close_open()?;
        frames.push(w.file.finish()?);
        Ok(frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
