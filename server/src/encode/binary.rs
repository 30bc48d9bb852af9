//! Arrow IPC stream and Parquet encoders: typed UTC timestamps, no envelope. Both write into
//! an in-memory buffer that is drained into a body frame after every piece (Parquet: after
//! every row group), so memory stays at one batch or row group.

use super::BatchEncoder;
use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_writer::{
    ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves,
};
use datafusion::parquet::basic::Compression;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::parquet::file::writer::SerializedFileWriter;
use hydro_engine::stored::Piece;

/// Rows per encoded Parquet row group in downloads (stored row groups keep their size).
const ROW_GROUP_ROWS: usize = 128 * 1024;

/// Parquet output is sent in frames of about this size: a stored month is ~15 KB, and a frame
/// per month meant a buffer grown from small for each (page faults in `perf`).
const PARQUET_FRAME_BYTES: usize = 64 * 1024;

pub struct ArrowIpc {
    schema: SchemaRef,
    writer: Option<StreamWriter<Vec<u8>>>,
}

/// The bytes of a frame, leaving a buffer as large as the last one: a buffer grown from empty
/// for every frame is copied at each doubling and faulted in fresh (both showed in `perf`).
fn take_sized(buf: &mut Vec<u8>) -> Bytes {
    let next = Vec::with_capacity(buf.capacity());
    Bytes::from(std::mem::replace(buf, next))
}

impl ArrowIpc {
    pub fn new(schema: SchemaRef) -> Self {
        Self {
            schema,
            writer: None,
        }
    }

    fn drain(&mut self) -> Bytes {
        self.writer
            .as_mut()
            .map(|w| take_sized(w.get_mut()))
            .unwrap_or_default()
    }
}

impl BatchEncoder for ArrowIpc {
    fn begin(&mut self) -> Result<Bytes, String> {
        self.writer =
            Some(StreamWriter::try_new(Vec::new(), &self.schema).map_err(|e| e.to_string())?);
        Ok(self.drain())
    }

    fn piece(&mut self, piece: Piece) -> Result<Bytes, String> {
        let Piece::Rows(batch) = piece else {
            return Err("a stored row group cannot be sent as Arrow IPC".into());
        };
        if let Some(w) = self.writer.as_mut() {
            w.write(&batch).map_err(|e| e.to_string())?;
        }
        Ok(self.drain())
    }

    fn finish(&mut self) -> Result<Bytes, String> {
        if let Some(w) = self.writer.as_mut() {
            w.finish().map_err(|e| e.to_string())?;
        }
        Ok(self.drain())
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
    file: SerializedFileWriter<Vec<u8>>,
    columns: ArrowRowGroupWriterFactory,
    /// The row group being encoded, and its rows so far.
    open: Option<(Vec<ArrowColumnWriter>, usize)>,
}

impl Writer {
    fn new(schema: SchemaRef) -> Result<Self, ParquetError> {
        let props = WriterProperties::builder()
            .set_compression(Compression::LZ4_RAW)
            .set_dictionary_enabled(false)
            .set_column_dictionary_enabled("quality".into(), true)
            .set_statistics_enabled(EnabledStatistics::Page)
            .build();
        let buffer = Vec::with_capacity(2 * PARQUET_FRAME_BYTES);
        let (file, columns) =
            ArrowWriter::try_new(buffer, schema, Some(props))?.into_serialized_writer()?;
        Ok(Self {
            file,
            columns,
            open: None,
        })
    }

    fn drain(&mut self) -> Bytes {
        take_sized(self.file.inner_mut())
    }

    /// The bytes written so far once they make a frame; nothing before.
    fn frame(&mut self) -> Bytes {
        if self.file.inner_mut().len() >= PARQUET_FRAME_BYTES {
            self.drain()
        } else {
            Bytes::new()
        }
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
    fn begin(&mut self) -> Result<Bytes, String> {
        let writer = self
            .writer
            .insert(Writer::new(self.schema.clone()).map_err(|e| e.to_string())?);
        Ok(writer.drain())
    }

    fn piece(&mut self, piece: Piece) -> Result<Bytes, String> {
        let w = self.writer()?;
        let done = match piece {
            Piece::Rows(batch) => w.rows(&batch),
            Piece::Stored(stored) => w.close_open().and_then(|()| {
                let mut group = w.file.next_row_group()?;
                stored.append_to(&mut group)?;
                group.close().map(|_| ())
            }),
        };
        done.map_err(|e| e.to_string())?;
        Ok(w.frame())
    }

    fn finish(&mut self) -> Result<Bytes, String> {
        let w = self.writer()?;
        w.close_open().map_err(|e| e.to_string())?;
        w.file.finish().map_err(|e| e.to_string())?;
        Ok(w.drain())
    }
}
