//! Arrow IPC stream and Parquet encoders: typed UTC timestamps, no envelope. Arrow IPC sends a
//! batch's columns as the frames they already are; Parquet sends stored row groups as they were
//! read and frames its own bytes (encoded rows, footer) at 64 KB, so memory stays at one batch
//! or row group.

use super::BatchEncoder;
use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::writer::StreamEncoder;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_writer::{
    ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves,
};
use datafusion::parquet::basic::Compression;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::parquet::file::writer::SerializedFileWriter;
use hydro_engine::stored::{Piece, StoredRowGroup};

/// Rows per encoded Parquet row group in downloads (stored row groups keep their size).
const ROW_GROUP_ROWS: usize = 128 * 1024;

/// Parquet output is sent in frames of about this size: a stored month is ~15 KB, and a frame
/// per month meant a buffer grown from small for each (page faults in `perf`).
const PARQUET_FRAME_BYTES: usize = 64 * 1024;

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
    fn begin(&mut self) -> Result<Vec<Bytes>, String> {
        self.encoder = Some(StreamEncoder::try_new(&self.schema).map_err(|e| e.to_string())?);
        Ok(Vec::new())
    }

    fn piece(&mut self, piece: Piece) -> Result<Vec<Bytes>, String> {
        let Piece::Rows(batch) = piece else {
            return Err("a stored row group cannot be sent as Arrow IPC".into());
        };
        let encoder = self.encoder.as_mut().ok_or("Arrow encoder not started")?;
        Ok(frames(encoder.encode(&batch).map_err(|e| e.to_string())?))
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, String> {
        let encoder = self.encoder.take().ok_or("Arrow encoder not started")?;
        Ok(frames(encoder.finish().map_err(|e| e.to_string())?))
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
    file: SerializedFileWriter<Sink>,
    columns: ArrowRowGroupWriterFactory,
    /// The row group being encoded, and its rows so far.
    open: Option<(Vec<ArrowColumnWriter>, usize)>,
}

/// The bytes of a frame, leaving a buffer as large as the last one: a buffer grown from empty
/// for every frame is copied at each doubling and faulted in fresh (both showed in `perf`).
fn take_sized(buf: &mut Vec<u8>) -> Bytes {
    let next = Vec::with_capacity(buf.capacity());
    Bytes::from(std::mem::replace(buf, next))
}

/// Where the Parquet writer writes: its own bytes, framed, with stored column chunks sent as
/// they were read in place of the placeholder bytes the writer counts for them. Copying the
/// chunks through the writer was the largest user-space item of a Parquet download in `perf`
/// (`memmove`, 7 %).
struct Sink {
    /// The writer's bytes not framed yet.
    buf: Vec<u8>,
    /// Frames ready to send, in order.
    frames: Vec<Bytes>,
    /// Placeholder bytes still to come from the writer, to be dropped.
    skip: u64,
}

impl Sink {
    fn new() -> Self {
        Self {
            buf: Vec::with_capacity(2 * PARQUET_FRAME_BYTES),
            frames: Vec::new(),
            skip: 0,
        }
    }

    /// Queues stored chunks after everything written so far; as many bytes as they hold,
    /// written next, are their placeholders.
    fn place(&mut self, chunks: Vec<Bytes>) -> Result<(), ParquetError> {
        self.expect_no_placeholders()?;
        self.frame_written();
        self.skip = chunks.iter().map(|c| c.len() as u64).sum();
        self.frames.extend(chunks);
        Ok(())
    }

    /// Moves the writer's bytes so far into a frame of their own.
    fn frame_written(&mut self) {
        if !self.buf.is_empty() {
            self.frames.push(take_sized(&mut self.buf));
        }
    }

    /// A writer that produced fewer placeholder bytes than a chunk holds would shift every
    /// offset after it: an error rather than a corrupt file.
    fn expect_no_placeholders(&self) -> Result<(), ParquetError> {
        if self.skip == 0 {
            Ok(())
        } else {
            Err(ParquetError::General(format!(
                "{} placeholder bytes of a stored chunk never written",
                self.skip
            )))
        }
    }
}

impl std::io::Write for Sink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let dropped = self.skip.min(data.len() as u64);
        self.skip -= dropped;
        self.buf.extend_from_slice(&data[dropped as usize..]);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Writer {
    fn new(schema: SchemaRef) -> Result<Self, ParquetError> {
        let props = WriterProperties::builder()
            .set_compression(Compression::LZ4_RAW)
            .set_dictionary_enabled(false)
            .set_column_dictionary_enabled("quality".into(), true)
            .set_statistics_enabled(EnabledStatistics::Page)
            .build();
        let (file, columns) =
            ArrowWriter::try_new(Sink::new(), schema, Some(props))?.into_serialized_writer()?;
        Ok(Self {
            file,
            columns,
            open: None,
        })
    }

    /// Every frame, including the writer's last bytes.
    fn drain(&mut self) -> Result<Vec<Bytes>, ParquetError> {
        self.file.flush()?;
        let sink = self.file.inner_mut();
        sink.expect_no_placeholders()?;
        sink.frame_written();
        Ok(std::mem::take(&mut sink.frames))
    }

    /// The frames ready, the writer's own bytes once they make a frame of their own.
    fn frames(&mut self) -> Vec<Bytes> {
        let sink = self.file.inner_mut();
        if sink.buf.len() >= PARQUET_FRAME_BYTES {
            sink.frame_written();
        }
        std::mem::take(&mut sink.frames)
    }

    /// A stored row group, its chunks sent as they were read.
    fn stored(&mut self, stored: StoredRowGroup) -> Result<(), ParquetError> {
        self.close_open()?;
        // Everything the writer buffered goes before the chunks.
        self.file.flush()?;
        self.file.inner_mut().place(stored.bytes()?)?;
        let mut group = self.file.next_row_group()?;
        stored.append_to(&mut group)?;
        group.close()?;
        Ok(())
    }

    fn rows(&mut self, batch: &RecordBatch) -> Result<(), ParquetError> {
        let open = match &mut self.open {
            Some(open) => open,
            None => {
                let index = self.file.flushed_row_groups().len();
                self.open
                    .insert((self.columns.create_column_writers(index)?, 0))
            }
        };
        let mut writers = open.0.iter_mut();
        for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
            for leaf in compute_leaves(field, column)? {
                writers
                    .next()
                    .ok_or_else(|| ParquetError::General("more columns than the schema".into()))?
                    .write(&leaf)?;
            }
        }
        open.1 += batch.num_rows();
        if open.1 >= ROW_GROUP_ROWS {
            self.close_open()?;
        }
        Ok(())
    }

    /// Ends the row group being encoded, if any.
    fn close_open(&mut self) -> Result<(), ParquetError> {
        let Some((writers, _)) = self.open.take() else {
            return Ok(());
        };
        let mut group = self.file.next_row_group()?;
        for w in writers {
            w.close()?.append_to_row_group(&mut group)?;
        }
        group.close()?;
        Ok(())
    }
}

impl Parquet {
    pub fn new(schema: SchemaRef) -> Self {
        Self {
            schema,
            writer: None,
        }
    }

    fn writer(&mut self) -> Result<&mut Writer, String> {
        self.writer
            .as_mut()
            .ok_or_else(|| "Parquet writer not started".to_owned())
    }
}

impl BatchEncoder for Parquet {
    fn begin(&mut self) -> Result<Vec<Bytes>, String> {
        let writer = self
            .writer
            .insert(Writer::new(self.schema.clone()).map_err(|e| e.to_string())?);
        writer.drain().map_err(|e| e.to_string())
    }

    fn piece(&mut self, piece: Piece) -> Result<Vec<Bytes>, String> {
        let w = self.writer()?;
        match piece {
            Piece::Rows(batch) => w.rows(&batch),
            Piece::Stored(stored) => w.stored(stored),
        }
        .map_err(|e| e.to_string())?;
        Ok(w.frames())
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, String> {
        let w = self.writer()?;
        w.close_open().map_err(|e| e.to_string())?;
        w.file.finish().map_err(|e| e.to_string())?;
        w.drain().map_err(|e| e.to_string())
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
            frames.extend(enc.piece(Piece::Rows(b.clone())).unwrap());
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
