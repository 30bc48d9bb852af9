//! Parquet (`application/vnd.apache.parquet`): a file of typed columns, its stored row groups
//! sent as they were read and other rows encoded a row group at a time, so memory stays at one
//! batch or row group. Compressed already (LZ4), so never compressed again. Offered as a file
//! to download.

use super::{Encoder, Format, Schema, Spec};
use crate::render::encode::{BatchEncoder, EncodeError, TableFormat};
use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_writer::ArrowWriterOptions;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use hydro_engine::ParquetAssembly;
use hydro_engine::{AnswerPart, StoredRowGroup};
use std::sync::{Mutex, PoisonError};

pub const PARQUET: Format = Format::of(&Spec {
    short: "parquet",
    media_type: "application/vnd.apache.parquet",
    aliases: &["application/x-parquet"],
    text: false,
    compressible: false,
    attachment: Some("parquet"),
    offered: super::DATA,
    encoder: Encoder::Table(&ParquetFormat),
    schema: Schema::Binary,
});

pub struct ParquetFormat;

impl TableFormat for ParquetFormat {
    fn batches(&self, schema: SchemaRef) -> Box<dyn BatchEncoder> {
        Box::new(Parquet::new(schema))
    }

    fn takes_stored_row_groups(&self) -> bool {
        true
    }
}

/// Rows per encoded Parquet row group in downloads (stored row groups keep their size).
const ROW_GROUP_ROWS: usize = 128 * 1024;

/// A Parquet file assembled from stored row groups, copied as they are, and rows encoded
/// here (months cut by the window, sorted or paged answers). Encoded rows use the storage's
/// settings (LZ4, page statistics and index) so that every row group of the file looks alike.
pub struct Parquet {
    schema: SchemaRef,
    writer: Option<Writer>,
}

struct Writer {
    schema: SchemaRef,
    file: ParquetAssembly,
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
        let (file, head) = ParquetAssembly::new(&empty_file(&schema)?)?;
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
